/*
 * supervisor.c: the master's children.
 *
 * Every child is fork+exec'd from env->libexecdir with its socketpair on
 * fd 3 (see proc.h), says MSG_CHILD_HELLO with the protocol version, and
 * exits when its channel closes.  A child of the current generation that
 * dies is respawned: at once if it had lived SUPERVISOR_STABLE_MS, else
 * after a delay that doubles from 1 s to 60 s (crash-loop throttle).  A
 * child that sends a frame we cannot read is logged and recycled (killed;
 * the respawn follows).  Children of an old generation (after a reload)
 * are sent MSG_CHILD_RETIRE and are not replaced.
 *
 * Fatal: nothing here; a child that cannot be spawned is retried.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "ankusad.h"
#include "conf.h"
#include "ids.h"
#include "log.h"
#include "msg.h"
#include "metrics.h"
#include "proc.h"
#include "quarantine.h"
#include "supervisor.h"
#include "writer.h"

#define SUPERVISOR_STABLE_MS	10000	/* lived this long: not a crash loop */
#define SUPERVISOR_DELAY_MIN_MS	1000
#define SUPERVISOR_DELAY_MAX_MS	60000
#define SUPERVISOR_MAX_CHILDREN	256

enum child_state {
	CHILD_STARTING,		/* spawned, no hello yet */
	CHILD_READY,
	CHILD_RETIRING,		/* sent MSG_CHILD_RETIRE */
	CHILD_DEAD,		/* channel gone, waiting for SIGCHLD */
};

struct child {
	uint32_t	 serial;	/* unique in this run */
	pid_t		 pid;
	uint32_t	 gen;
	uint32_t	 index;		/* slot within its generation */
	enum child_state state;
	struct chan	*chan;
	uint64_t	 started;	/* mono ms */
};

/* A slot of the current generation: who fills it and its throttle. */
struct slot {
	uint32_t	 serial;	/* 0: empty */
	uint64_t	 delay_ms;	/* next respawn delay after a quick death */
	struct event	*ev_respawn;
};

static struct child	*children[SUPERVISOR_MAX_CHILDREN];
static struct slot	 slots[64];
static int		 nslots;
static uint32_t		 cur_gen;
static uint32_t		 next_serial = 1;
static struct event	*ev_sigchld;

static struct child	*child_find(uint32_t);
static struct child	*child_by_pid(pid_t);
static void		 child_spawn_slot(int);
static void		 child_msg(struct chan *, struct msg *, void *);
static void		 child_err(struct chan *, int, void *);
static void		 child_recycle(struct child *, const char *);
static void		 child_reap(struct child *, int status);
static void		 sigchld_cb(evutil_socket_t, short, void *);
static void		 respawn_cb(evutil_socket_t, short, void *);

void
supervisor_init(void)
{
	ev_sigchld = evsignal_new(env->base, SIGCHLD, sigchld_cb, NULL);
	if (ev_sigchld == NULL || evsignal_add(ev_sigchld, NULL) == -1)
		fatalx("supervisor: cannot watch SIGCHLD");
}

static struct child *
child_find(uint32_t serial)
{
	int i;

	for (i = 0; i < SUPERVISOR_MAX_CHILDREN; i++)
		if (children[i] != NULL && children[i]->serial == serial)
			return children[i];
	return NULL;
}

static struct child *
child_by_pid(pid_t pid)
{
	int i;

	for (i = 0; i < SUPERVISOR_MAX_CHILDREN; i++)
		if (children[i] != NULL && children[i]->pid == pid)
			return children[i];
	return NULL;
}

int
supervisor_children(void)
{
	int i, n = 0;

	for (i = 0; i < SUPERVISOR_MAX_CHILDREN; i++)
		if (children[i] != NULL)
			n++;
	return n;
}

int
supervisor_edges_ready(void)
{
	int i, n = 0;

	for (i = 0; i < SUPERVISOR_MAX_CHILDREN; i++)
		if (children[i] != NULL && children[i]->gen == cur_gen &&
		    children[i]->state == CHILD_READY)
			n++;
	return n;
}

uint32_t
supervisor_pick_edge(void)
{
	static int last;
	int i, k;

	for (i = 1; i <= SUPERVISOR_MAX_CHILDREN; i++) {
		k = (last + i) % SUPERVISOR_MAX_CHILDREN;
		if (children[k] != NULL && children[k]->gen == cur_gen &&
		    children[k]->state == CHILD_READY) {
			last = k;
			return children[k]->serial;
		}
	}
	return 0;
}

int
supervisor_send(uint32_t serial, struct msg *m)
{
	struct child *c = child_find(serial);

	if (c == NULL || c->chan == NULL || c->state == CHILD_DEAD) {
		msg_set_fd(m, -1);
		return -1;
	}
	return chan_send(c->chan, m);
}

static void
child_spawn_slot(int i)
{
	struct child *c;
	char path[4200], gen[16], idx[16];
	char *argv[8];
	int sv[2], fds[3], conffd, argc = 0, k;

	snprintf(path, sizeof(path), "%s/ankusa-edge", env->libexecdir);
	snprintf(gen, sizeof(gen), "%u", cur_gen);
	snprintf(idx, sizeof(idx), "%d", i);
	argv[argc++] = "ankusa-edge";
	argv[argc++] = "-g";
	argv[argc++] = gen;
	argv[argc++] = "-i";
	argv[argc++] = idx;
	if (env->foreground)
		argv[argc++] = "-d";
	if (env->verbose)
		argv[argc++] = "-v";
	argv[argc] = NULL;

	for (k = 0; k < SUPERVISOR_MAX_CHILDREN; k++)
		if (children[k] == NULL)
			break;
	if (k == SUPERVISOR_MAX_CHILDREN) {
		log_warnx("supervisor: too many children, edge %u.%d not "
		    "started", cur_gen, i);
		return;
	}
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		log_warn("supervisor: socketpair");
		goto retry;
	}
	if ((conffd = proc_memfd("ankusa-conf", env->conf_text,
	    env->conf_len)) == -1) {
		log_warn("supervisor: memfd");
		close(sv[0]);
		close(sv[1]);
		goto retry;
	}
	fds[0] = sv[1];
	fds[1] = env->listen_fd;
	fds[2] = conffd;
	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("supervisor");
	c->pid = proc_spawn(path, argv, fds, 3);
	close(sv[1]);
	close(conffd);
	if (c->pid == -1) {
		log_warn("supervisor: cannot spawn %s", path);
		close(sv[0]);
		free(c);
		goto retry;
	}
	c->serial = next_serial++;
	c->gen = cur_gen;
	c->index = i;
	c->state = CHILD_STARTING;
	c->started = time_mono_ms();
	c->chan = chan_new(env->base, sv[0], child_msg, child_err, c);
	children[k] = c;
	slots[i].serial = c->serial;
	log_debug("supervisor: edge %u.%d started, pid %d", cur_gen, i,
	    (int)c->pid);
	return;
retry:
	slots[i].serial = 0;
	if (slots[i].delay_ms < SUPERVISOR_DELAY_MIN_MS)
		slots[i].delay_ms = SUPERVISOR_DELAY_MIN_MS;
	{
		struct timeval tv = { slots[i].delay_ms / 1000,
		    (slots[i].delay_ms % 1000) * 1000 };
		evtimer_add(slots[i].ev_respawn, &tv);
	}
}

static void
respawn_cb(evutil_socket_t fd, short ev, void *arg)
{
	int i = (int)(intptr_t)arg;

	if (env->draining || i >= nslots || slots[i].serial != 0)
		return;
	child_spawn_slot(i);
}

void
supervisor_new_generation(void)
{
	int i, n = env->conf->http.workers;

	/* Old generation: finish what is in hand, then exit. */
	for (i = 0; i < SUPERVISOR_MAX_CHILDREN; i++) {
		struct child *c = children[i];
		struct msg m;

		if (c == NULL || c->state == CHILD_DEAD ||
		    c->state == CHILD_RETIRING)
			continue;
		msg_init(&m, MSG_CHILD_RETIRE, 0);
		chan_send(c->chan, &m);
		msg_free(&m);
		c->state = CHILD_RETIRING;
	}
	for (i = 0; i < nslots; i++) {
		evtimer_del(slots[i].ev_respawn);
		event_free(slots[i].ev_respawn);
	}
	cur_gen++;
	nslots = n > 64 ? 64 : n;
	for (i = 0; i < nslots; i++) {
		slots[i].serial = 0;
		slots[i].delay_ms = 0;
		slots[i].ev_respawn = evtimer_new(env->base, respawn_cb,
		    (void *)(intptr_t)i);
		child_spawn_slot(i);
	}
	log_info("supervisor: generation %u: %d edges", cur_gen, nslots);
}

void
supervisor_retire_all(void)
{
	int i;

	for (i = 0; i < nslots; i++)
		evtimer_del(slots[i].ev_respawn);
	for (i = 0; i < SUPERVISOR_MAX_CHILDREN; i++) {
		struct child *c = children[i];
		struct msg m;

		if (c == NULL || c->state == CHILD_DEAD ||
		    c->state == CHILD_RETIRING)
			continue;
		msg_init(&m, MSG_CHILD_RETIRE, 0);
		chan_send(c->chan, &m);
		msg_free(&m);
		c->state = CHILD_RETIRING;
	}
}

void
supervisor_kill_all(void)
{
	int i;

	for (i = 0; i < SUPERVISOR_MAX_CHILDREN; i++)
		if (children[i] != NULL)
			kill(children[i]->pid, SIGKILL);
}

static void
child_recycle(struct child *c, const char *why)
{
	log_warnx("supervisor: edge %u.%u pid %d: %s; recycling it", c->gen,
	    c->index, (int)c->pid, why);
	kill(c->pid, SIGKILL);
	if (c->chan != NULL) {
		chan_free(c->chan);
		c->chan = NULL;
	}
	c->state = CHILD_DEAD;
}

static void
child_msg(struct chan *ch, struct msg *m, void *arg)
{
	struct child *c = arg;

	if (c->state == CHILD_STARTING && m->type != MSG_CHILD_HELLO) {
		child_recycle(c, "message before hello");
		return;
	}
	switch (m->type) {
	case MSG_CHILD_HELLO: {
		uint32_t proto, gen, pid;
		const char *kind;

		if (msg_get_u32(m, &proto) == -1 ||
		    msg_get_str(m, &kind) == -1 ||
		    msg_get_u32(m, &gen) == -1 ||
		    msg_get_u32(m, &pid) == -1 || msg_end(m) == -1) {
			child_recycle(c, "malformed hello");
			return;
		}
		if (proto != MSG_PROTO_VERSION) {
			child_recycle(c, "protocol version mismatch (binaries "
			    "from another build?)");
			return;
		}
		if (c->state == CHILD_STARTING)
			c->state = CHILD_READY;
		log_debug("supervisor: %s %u.%u pid %d ready", kind, c->gen,
		    c->index, (int)c->pid);
		break;
	}
	case MSG_HOOK_SUBMIT:
		if (writer_submit(c->serial, m) == -1)
			child_recycle(c, "malformed hook_submit");
		break;
	case MSG_READY_QUERY: {
		struct msg r;
		const char *reason = "";
		int ready = 1;

		if (msg_end(m) == -1) {
			child_recycle(c, "malformed ready_query");
			return;
		}
		if (env->draining) {
			ready = 0;
			reason = "draining";
		} else if (!env->store_ok) {
			ready = 0;
			reason = "store_unavailable";
		}
		msg_init(&r, MSG_READY_RESULT, m->id);
		msg_add_u8(&r, ready);
		msg_add_str(&r, reason);
		chan_send(ch, &r);
		msg_free(&r);
		break;
	}
	case MSG_INGEST_EVENT: {
		const char *reason, *source, *scheme;

		if (msg_get_str(m, &reason) == -1 ||
		    msg_get_str(m, &source) == -1 ||
		    msg_get_str(m, &scheme) == -1 || msg_end(m) == -1) {
			child_recycle(c, "malformed ingest_event");
			return;
		}
		metrics_refused(reason);
		/* Labelled by source only when the config knows it. */
		if (scheme[0] != '\0' && conf_source(env->conf, source) != NULL)
			metrics_verify_failure(source, scheme);
		break;
	}
	case MSG_QUARANTINE_VERDICT:
		if (quarantine_verdict(m) == -1)
			child_recycle(c, "malformed quarantine_verdict");
		break;
	default:
		child_recycle(c, "unexpected message");
		break;
	}
}

static void
child_err(struct chan *ch, int err, void *arg)
{
	struct child *c = arg;

	if (err != 0 && c->state != CHILD_DEAD)
		log_warnx("supervisor: edge %u.%u pid %d: channel: %s", c->gen,
		    c->index, (int)c->pid, strerror(err));
	/* A clean EOF: the process is exiting and SIGCHLD reaps it.  A
	 * broken channel: make sure it is gone. */
	if (err != 0)
		kill(c->pid, SIGKILL);
	chan_free(c->chan);
	c->chan = NULL;
	c->state = CHILD_DEAD;
}

static void
child_reap(struct child *c, int status)
{
	uint64_t lived = time_mono_ms() - c->started;
	int i, k, slot = -1;

	for (i = 0; i < nslots; i++)
		if (slots[i].serial == c->serial)
			slot = i;
	if (WIFSIGNALED(status))
		log_warnx("supervisor: edge %u.%u pid %d killed by signal %d",
		    c->gen, c->index, (int)c->pid, WTERMSIG(status));
	else if (WEXITSTATUS(status) != 0)
		log_warnx("supervisor: edge %u.%u pid %d exited %d", c->gen,
		    c->index, (int)c->pid, WEXITSTATUS(status));
	else
		log_debug("supervisor: edge %u.%u pid %d exited", c->gen,
		    c->index, (int)c->pid);

	if (c->chan != NULL)
		chan_free(c->chan);
	for (k = 0; k < SUPERVISOR_MAX_CHILDREN; k++)
		if (children[k] == c)
			children[k] = NULL;
	free(c);

	if (slot == -1 || env->draining)
		return;
	slots[slot].serial = 0;
	if (lived >= SUPERVISOR_STABLE_MS) {
		slots[slot].delay_ms = 0;
		child_spawn_slot(slot);
		return;
	}
	/* Died young: wait, doubling from 1 s to 60 s. */
	if (slots[slot].delay_ms < SUPERVISOR_DELAY_MIN_MS)
		slots[slot].delay_ms = SUPERVISOR_DELAY_MIN_MS;
	else if ((slots[slot].delay_ms *= 2) > SUPERVISOR_DELAY_MAX_MS)
		slots[slot].delay_ms = SUPERVISOR_DELAY_MAX_MS;
	log_info("supervisor: edge slot %d restarts in %llu ms", slot,
	    (unsigned long long)slots[slot].delay_ms);
	{
		struct timeval tv = { slots[slot].delay_ms / 1000,
		    (slots[slot].delay_ms % 1000) * 1000 };
		evtimer_add(slots[slot].ev_respawn, &tv);
	}
}

static void
sigchld_cb(evutil_socket_t sig, short ev, void *arg)
{
	struct child *c;
	int status;
	pid_t pid;

	while ((pid = waitpid(-1, &status, WNOHANG)) > 0) {
		if ((c = child_by_pid(pid)) != NULL)
			child_reap(c, status);
	}
}
