/* SPDX-License-Identifier: ISC */
/*
 * supervisor.c: the master's children.
 *
 * Two pools: edges (ankusa-edge, http.workers slots, the ingest listener on
 * fd 4) and deliver processes (ankusa-deliver, conf_deliver_pool()).  Every
 * child is fork+exec'd from env->libexecdir with its socketpair on fd 3
 * and its part of the config text (conf_role.c) on fd 5, a deliver process
 * its on-deck page (common/deck.h) on fd 6 (see proc.h), and the
 * environment of its kind (childenv.c) for the config in force; it says
 * MSG_CHILD_HELLO with the protocol version, and exits when its channel
 * closes.  A child of the current generation that dies is respawned: at
 * once if it had lived SUPERVISOR_STABLE_MS, else after a delay that
 * doubles from 1 s to 60 s (crash-loop throttle).  A child that sends a
 * frame we cannot read is logged and recycled (killed; the respawn
 * follows).  Children of an old generation (after a reload) are sent
 * MSG_CHILD_RETIRE and are not replaced; deliver processes get a new
 * generation only when their part of the config or their environment
 * changes.
 *
 * What the children say after their hello, and the lives of the deliver
 * processes, go where main's struct supervisor_ops says (router.c, the
 * pipeline): this file moves frames, and knows no handler.
 *
 * Fatal: a part of the config that no longer parses for a kind's
 * environment (ankusad parsed it before it was in force), out of memory,
 * and a deliver pool over CONF_DELIVER_MAX (the config check refuses it);
 * a child that cannot be spawned is retried.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/resource.h>
#include <sys/select.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "childenv.h"
#include "clock.h"
#include "conf.h"
#include "deck.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "msg.h"
#include "privsep.h"
#include "proc.h"
#include "supervisor.h"

#define SUPERVISOR_STABLE_MS	10000	/* lived this long: not a crash loop */
#define SUPERVISOR_DELAY_MIN_MS	1000
#define SUPERVISOR_DELAY_MAX_MS	60000

enum child_state {
	CHILD_STARTING,		/* spawned, no hello yet */
	CHILD_READY,
	CHILD_RETIRING,		/* sent MSG_CHILD_RETIRE */
	CHILD_DEAD,		/* channel gone, waiting for SIGCHLD */
};

struct child {
	uint32_t	 serial;	/* unique in this run */
	enum child_kind	 kind;
	pid_t		 pid;
	uint32_t	 gen;
	uint32_t	 index;		/* slot within its generation */
	enum child_state state;
	struct chan	*chan;
	uint64_t	 started;	/* mono ms */
	int		 killed;	/* by us, at an attempt's deadline:
					 * not a crash, no throttle */
	struct deck	*deck;		/* deliver: its on-deck page */
	uint32_t	 sandbox;	/* its hello's SANDBOX_F_* */
};

/* A slot of a pool: who fills it and its throttle. */
struct slot {
	enum child_kind	 kind;
	int		 index;
	uint32_t	 serial;	/* 0: empty */
	uint64_t	 delay_ms;	/* next respawn delay after a quick death */
	struct event	*ev_respawn;
};

struct pool {
	const char	*binary;
	const char	*name;
	enum conf_role	 role;		/* its part of the config */
	struct slot	**slots;	/* [0..nslots) */
	int		 nslots, capslots;
	uint32_t	 gen;
	char		**env;		/* its children's (childenv.h) */
};

/* Every child, NULL where free: as many as the pools' slots, and those of
 * an old generation that finish what they hold; grown as needed. */
static struct child	**children;
static int		 nchildren;
static struct pool	 pools[KIND_MAX] = {
	[KIND_EDGE] = { "ankusa-edge", "edge", CONF_ROLE_EDGE, NULL, 0, 0,
	    0 },
	[KIND_DELIVER] = { "ankusa-deliver", "deliver", CONF_ROLE_DELIVER,
	    NULL, 0, 0, 0 },
	[KIND_GATEWAY] = { "ankusa-gateway", "gateway", CONF_ROLE_GATEWAY,
	    NULL, 0, 0, 0 },
};

#define SUPERVISOR_GATEWAYS	2
static uint32_t		 next_serial = 1;
static struct event	*ev_sigchld;
static struct supervisor_ops ops;

static struct child	*child_find(uint32_t);
static struct child	*child_by_pid(pid_t);
static void		 child_spawn_slot(struct slot *);
static void		 child_msg(struct chan *, struct msg *, void *);
static void		 child_err(struct chan *, int, void *);
static void		 child_recycle(struct child *, const char *);
static void		 child_reap(struct child *, int status);
static int		 child_unexecutable(const struct pool *, char *,
			    size_t);
static void		 child_retire(struct child *);
static void		 sigchld_cb(evutil_socket_t, short, void *);
static void		 respawn_cb(evutil_socket_t, short, void *);
static void		 pool_resize(enum child_kind, int);
static void		 slot_retry(struct slot *);
static char		**pool_env(enum child_kind);
static int		 child_free_index(void);
static int		 fd_high(int);
static void		 nofile_check(int);

/*
 * Each child holds one descriptor of the master's, its channel, and a
 * reload may hold two generations of them: a deliver pool of a thousand
 * processes passes the soft limit of a shell (1024), so it goes to the hard
 * one (LimitNOFILE of the unit).
 */
void
supervisor_init(const struct supervisor_ops *o)
{
	struct rlimit rl;

	ops = *o;
	ev_sigchld = evsignal_new(env->base, SIGCHLD, sigchld_cb, NULL);
	if (ev_sigchld == NULL || evsignal_add(ev_sigchld, NULL) == -1)
		fatalx("supervisor: cannot watch SIGCHLD");
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		if (setrlimit(RLIMIT_NOFILE, &rl) == -1)
			log_warn("supervisor: raising the open-file limit");
	}
}

/* A free index of children[], which grows when it has none. */
static int
child_free_index(void)
{
	struct child **nc;
	int k, n;

	for (k = 0; k < nchildren; k++)
		if (children[k] == NULL)
			return k;
	n = nchildren > 0 ? nchildren * 2 : 64;
	if ((nc = reallocarray(children, n, sizeof(*nc))) == NULL)
		fatal("supervisor");
	memset(nc + nchildren, 0, (n - nchildren) * sizeof(*nc));
	children = nc;
	k = nchildren;
	nchildren = n;
	return k;
}

/*
 * The master's end of a child's channel, moved above FD_SETSIZE when the
 * limit allows: a large pool would otherwise take every descriptor below
 * it, and Berkeley DB's replication manager watches its sockets with
 * select(), which cannot take one above.  Where it cannot move, it stays.
 */
static int
fd_high(int fd)
{
	int hi;

	if ((hi = fcntl(fd, F_DUPFD_CLOEXEC, FD_SETSIZE)) == -1)
		return fd;
	close(fd);
	return hi;
}

/* Warn when the open-file limit cannot hold n children's channels twice
 * (a reload's two generations) above FD_SETSIZE. */
static void
nofile_check(int n)
{
	struct rlimit rl;
	uint64_t need = FD_SETSIZE + 2 * (uint64_t)n;

	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY &&
	    rl.rlim_cur < need)
		log_warnx("supervisor: the open-file limit, %llu, is below the "
		    "%llu descriptors %d children may need (%d, and as many "
		    "again during a reload, above %d); raise it (LimitNOFILE)",
		    (unsigned long long)rl.rlim_cur, (unsigned long long)need,
		    n, n, FD_SETSIZE);
}

static struct child *
child_find(uint32_t serial)
{
	int i;

	for (i = 0; i < nchildren; i++)
		if (children[i] != NULL && children[i]->serial == serial)
			return children[i];
	return NULL;
}

static struct child *
child_by_pid(pid_t pid)
{
	int i;

	for (i = 0; i < nchildren; i++)
		if (children[i] != NULL && children[i]->pid == pid)
			return children[i];
	return NULL;
}

int
supervisor_children(enum child_kind kind)
{
	int i, n = 0;

	for (i = 0; i < nchildren; i++)
		if (children[i] != NULL &&
		    (kind == KIND_MAX || children[i]->kind == kind))
			n++;
	return n;
}

int
supervisor_ready(enum child_kind kind)
{
	int i, n = 0;

	for (i = 0; i < nchildren; i++)
		if (children[i] != NULL && children[i]->kind == kind &&
		    children[i]->gen == pools[kind].gen &&
		    children[i]->state == CHILD_READY)
			n++;
	return n;
}

int
supervisor_sandbox(enum child_kind kind, uint32_t *have)
{
	int i, n = 0;

	*have = ~0U;
	for (i = 0; i < nchildren; i++)
		if (children[i] != NULL && children[i]->kind == kind &&
		    children[i]->gen == pools[kind].gen &&
		    children[i]->state == CHILD_READY) {
			*have &= children[i]->sandbox;
			n++;
		}
	if (n == 0)
		*have = 0;
	return n;
}

const char *
supervisor_kind_name(enum child_kind kind)
{
	return kind >= 0 && kind < KIND_MAX ? pools[kind].name : NULL;
}

uint32_t
supervisor_pick_edge(void)
{
	static int last;
	struct child *c;
	int i, k;

	for (i = 1; i <= nchildren; i++) {
		k = (last + i) % nchildren;
		c = children[k];
		if (c != NULL && c->kind == KIND_EDGE &&
		    c->gen == pools[KIND_EDGE].gen && c->state == CHILD_READY) {
			last = k;
			return c->serial;
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

void
supervisor_kill(uint32_t serial)
{
	struct child *c = child_find(serial);

	if (c != NULL) {
		c->killed = 1;
		privsep_kill(c->pid, SIGKILL);
	}
}

static void
slot_retry(struct slot *sl)
{
	struct timeval tv;

	sl->serial = 0;
	if (sl->delay_ms < SUPERVISOR_DELAY_MIN_MS)
		sl->delay_ms = SUPERVISOR_DELAY_MIN_MS;
	tv.tv_sec = sl->delay_ms / 1000;
	tv.tv_usec = (sl->delay_ms % 1000) * 1000;
	evtimer_add(sl->ev_respawn, &tv);
}

static void
child_spawn_slot(struct slot *sl)
{
	struct pool *p = &pools[sl->kind];
	struct child *c;
	char path[4200], gen[16], idx[16];
	char *argv[10];
	struct deck *deck = NULL;
	int sv[2], fds[5], conffd, deckfd = -1, argc = 0, k;

	snprintf(path, sizeof(path), "%s/%s", env->libexecdir, p->binary);
	snprintf(gen, sizeof(gen), "%u", p->gen);
	snprintf(idx, sizeof(idx), "%d", sl->index);
	argv[argc++] = (char *)p->binary;
	argv[argc++] = "-g";
	argv[argc++] = gen;
	argv[argc++] = "-i";
	argv[argc++] = idx;
	if (env->foreground)
		argv[argc++] = "-d";
	if (env->verbose)
		argv[argc++] = "-v";
	if (log_json())
		argv[argc++] = "-j";
	argv[argc] = NULL;

	k = child_free_index();
	if (socketpair(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0, sv) == -1) {
		log_warn("supervisor: socketpair");
		slot_retry(sl);
		return;
	}
	sv[0] = fd_high(sv[0]);
	if ((conffd = proc_memfd("ankusa-conf", env->role_text[p->role],
	    env->role_len[p->role])) == -1) {
		log_warn("supervisor: memfd");
		close(sv[0]);
		close(sv[1]);
		slot_retry(sl);
		return;
	}
	/* A deliver process without its page runs no job on deck. */
	if (sl->kind == KIND_DELIVER && (deckfd = deck_create(&deck)) == -1)
		log_warn("supervisor: on-deck page");
	fds[0] = sv[1];
	fds[1] = sl->kind == KIND_EDGE ? env->listen_fd :
	    sl->kind == KIND_GATEWAY ? env->claim_fd : -1;
	fds[2] = conffd;
	fds[3] = deckfd;
	fds[4] = -1;
	/* An edge: the TLS listener on 6 and its files' bytes on 7. */
	if (sl->kind == KIND_EDGE && env->tls_fd != -1) {
		fds[3] = env->tls_fd;
		if ((fds[4] = tlsmat_memfd(&env->tls)) == -1) {
			log_warn("supervisor: TLS memfd");
			close(sv[0]);
			close(sv[1]);
			close(conffd);
			slot_retry(sl);
			return;
		}
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("supervisor");
	c->pid = privsep_spawn(path, argv, p->env, fds, 5);
	close(sv[1]);
	close(conffd);
	if (fds[4] != -1)
		close(fds[4]);
	if (deckfd != -1)
		close(deckfd);
	if (c->pid == -1) {
		log_warn("supervisor: cannot execute %s as %s", path,
		    privsep_child_user());
		close(sv[0]);
		deck_unmap(deck);
		free(c);
		slot_retry(sl);
		return;
	}
	c->serial = next_serial++;
	c->kind = sl->kind;
	c->gen = p->gen;
	c->index = sl->index;
	c->state = CHILD_STARTING;
	c->started = time_mono_ms();
	c->deck = deck;
	c->chan = chan_new(env->base, sv[0], child_msg, child_err, c);
	children[k] = c;
	sl->serial = c->serial;
	log_debug("supervisor: %s %u.%d started, pid %d", p->name, p->gen,
	    sl->index, (int)c->pid);
}

static void
respawn_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct slot *sl = arg;

	if (env->draining || sl->serial != 0)
		return;
	child_spawn_slot(sl);
}

static void
child_retire(struct child *c)
{
	struct msg m;

	if (c->state == CHILD_DEAD || c->state == CHILD_RETIRING)
		return;
	msg_init(&m, MSG_CHILD_RETIRE, 0);
	chan_send(c->chan, &m);
	msg_free(&m);
	c->state = CHILD_RETIRING;
	if (c->kind == KIND_DELIVER)
		ops.deliver_retiring(c->serial);
}

/* Bring a pool to n slots: new slots spawn, surplus slots retire their
 * child (a deliver process finishes its job first). */
static void
pool_resize(enum child_kind kind, int n)
{
	struct pool *p = &pools[kind];
	struct slot *sl, **ns;
	struct child *c;

	if (n > p->capslots) {
		if ((ns = reallocarray(p->slots, n, sizeof(*ns))) == NULL)
			fatal("supervisor");
		p->slots = ns;
		p->capslots = n;
	}
	while (p->nslots > n) {
		sl = p->slots[--p->nslots];
		evtimer_del(sl->ev_respawn);
		event_free(sl->ev_respawn);
		if ((c = child_find(sl->serial)) != NULL)
			child_retire(c);
		free(sl);
	}
	while (p->nslots < n) {
		if ((sl = calloc(1, sizeof(*sl))) == NULL)
			fatal("supervisor");
		sl->kind = kind;
		sl->index = p->nslots;
		sl->ev_respawn = evtimer_new(env->base, respawn_cb, sl);
		p->slots[p->nslots++] = sl;
		child_spawn_slot(sl);
	}
}

/* Whether the deliver processes' text differs from the one the last call
 * saw (which it then keeps). */
static int
deliver_text_changed(void)
{
	static char *last;
	static size_t lastlen;
	const char *t = env->role_text[CONF_ROLE_DELIVER];
	size_t len = env->role_len[CONF_ROLE_DELIVER];

	if (last != NULL && lastlen == len && memcmp(last, t, len) == 0)
		return 0;
	free(last);
	if ((last = malloc(len)) == NULL)
		fatal("supervisor");
	memcpy(last, t, len);
	lastlen = len;
	return 1;
}

/* The environment of a kind's children on the config in force. */
static char **
pool_env(enum child_kind kind)
{
	struct pool *p = &pools[kind];
	char err[512], **e;

	if ((e = childenv_make(p->role, env->role_text[p->role],
	    env->role_len[p->role], env->conf, err, sizeof(err))) == NULL)
		fatalx("supervisor: the environment of the %s processes: %s",
		    p->name, err);
	return e;
}

void
supervisor_new_generation(void)
{
	struct pool *p = &pools[KIND_EDGE];
	char **nenv[KIND_MAX];
	uint64_t n;
	int i, k;

	for (k = 0; k < KIND_MAX; k++)
		nenv[k] = pool_env(k);

	/* Old edges and gateways: finish what is in hand, then exit; the
	 * new generation reads the new config. */
	for (k = KIND_EDGE; k <= KIND_GATEWAY; k++) {
		if (k == KIND_DELIVER)
			continue;
		for (i = 0; i < nchildren; i++)
			if (children[i] != NULL && children[i]->kind ==
			    (enum child_kind)k)
				child_retire(children[i]);
		pool_resize(k, 0);
		pools[k].gen++;
		childenv_free(pools[k].env);
		pools[k].env = nenv[k];
	}
	pool_resize(KIND_EDGE, env->conf->http.workers);
	if (env->claim_fd != -1 && env->conf->claim_check.enabled)
		pool_resize(KIND_GATEWAY, SUPERVISOR_GATEWAYS);
	/* Deliver processes carry no config of their own (each job brings
	 * its sink's options): the pool only follows the concurrency, but
	 * for the claim store, whose local root their sandbox lets them
	 * write (sandbox.c), and their environment (AWS_* comes with an sqs
	 * sink): a change of either is a new generation. */
	if (pools[KIND_DELIVER].gen == 0)
		pools[KIND_DELIVER].gen = 1;
	else if (deliver_text_changed() ||
	    !childenv_same(pools[KIND_DELIVER].env, nenv[KIND_DELIVER])) {
		for (i = 0; i < nchildren; i++)
			if (children[i] != NULL &&
			    children[i]->kind == KIND_DELIVER)
				child_retire(children[i]);
		pool_resize(KIND_DELIVER, 0);
		pools[KIND_DELIVER].gen++;
	}
	(void)deliver_text_changed();
	childenv_free(pools[KIND_DELIVER].env);
	pools[KIND_DELIVER].env = nenv[KIND_DELIVER];
	/* The config check bounds it (CONF_DELIVER_MAX). */
	if ((n = conf_deliver_pool(env->conf)) > CONF_DELIVER_MAX)
		fatalx("supervisor: a deliver pool of %llu processes",
		    (unsigned long long)n);
	pool_resize(KIND_DELIVER, (int)n);
	nofile_check(pools[KIND_EDGE].nslots + pools[KIND_DELIVER].nslots +
	    pools[KIND_GATEWAY].nslots);
	log_info("supervisor: generation %u: %d edges, %d deliver processes",
	    p->gen, pools[KIND_EDGE].nslots, pools[KIND_DELIVER].nslots);
}

void
supervisor_retire(enum child_kind kind)
{
	int i, k;

	for (k = 0; k < KIND_MAX; k++) {
		if (kind != KIND_MAX && kind != (enum child_kind)k)
			continue;
		for (i = 0; i < pools[k].nslots; i++)
			evtimer_del(pools[k].slots[i]->ev_respawn);
	}
	for (i = 0; i < nchildren; i++)
		if (children[i] != NULL &&
		    (kind == KIND_MAX || children[i]->kind == kind))
			child_retire(children[i]);
}

/* Run fn on the channel of every child of a kind that has one. */
static void
kind_chans(enum child_kind kind, void (*fn)(struct chan *))
{
	int i;

	for (i = 0; i < nchildren; i++)
		if (children[i] != NULL && children[i]->kind == kind &&
		    children[i]->chan != NULL)
			fn(children[i]->chan);
}

void
supervisor_flush(enum child_kind kind)
{
	kind_chans(kind, chan_flush_blocking);
}

void
supervisor_poll(uint32_t serial)
{
	struct child *c = child_find(serial);

	if (c != NULL && c->chan != NULL && c->state != CHILD_DEAD)
		chan_poll(c->chan);
}

void
supervisor_flush_now(enum child_kind kind)
{
	kind_chans(kind, chan_flush_now);
}

void
supervisor_kill_all(void)
{
	int i;

	for (i = 0; i < nchildren; i++)
		if (children[i] != NULL)
			privsep_kill(children[i]->pid, SIGKILL);
}

static void
child_recycle(struct child *c, const char *why)
{
	log_warnx("supervisor: %s %u.%u pid %d: %s; recycling it",
	    pools[c->kind].name, c->gen, c->index, (int)c->pid, why);
	privsep_kill(c->pid, SIGKILL);
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
	const char *why;

	if (c->state == CHILD_STARTING && m->type != MSG_CHILD_HELLO) {
		child_recycle(c, "message before hello");
		return;
	}
	switch (m->type) {
	case MSG_CHILD_HELLO: {
		uint32_t proto, gen, pid, sandbox;
		const char *kind;

		if (proc_hello_decode(m, &proto, &kind, &gen, &pid,
		    &sandbox) == -1) {
			child_recycle(c, "malformed hello");
			return;
		}
		if (proto != MSG_PROTO_VERSION) {
			child_recycle(c, "protocol version mismatch (binaries "
			    "from another build?)");
			return;
		}
		if (strcmp(kind, pools[c->kind].name) != 0) {
			child_recycle(c, "hello from the wrong kind of child");
			return;
		}
		c->sandbox = sandbox;
		if (c->state == CHILD_STARTING) {
			c->state = CHILD_READY;
			if (c->kind == KIND_DELIVER)
				ops.deliver_ready(c->serial, c->deck);
		}
		log_debug("supervisor: %s %u.%u pid %d ready", kind, c->gen,
		    c->index, (int)c->pid);
		break;
	}
	default:
		if ((why = ops.msg(c->serial, c->kind, m)) != NULL)
			child_recycle(c, why);
		break;
	}
}

static void
child_err(struct chan *ch, int err, void *arg)
{
	struct child *c = arg;

	if (err != 0 && c->state != CHILD_DEAD)
		log_warnx("supervisor: %s %u.%u pid %d: channel: %s",
		    pools[c->kind].name, c->gen, c->index, (int)c->pid,
		    strerror(err));
	/* A clean EOF: the process is exiting and SIGCHLD reaps it.  A
	 * broken channel: make sure it is gone. */
	if (err != 0)
		privsep_kill(c->pid, SIGKILL);
	chan_free(c->chan);
	c->chan = NULL;
	c->state = CHILD_DEAD;
}

/*
 * Why a child that exited PROC_EXEC_FAILED could not execute its program,
 * when the master, which is the children's user, cannot either (the
 * libexec directory out of its reach: a build tree in a 0700 home): 1 and
 * the reason in why, else 0.  Children of node.child_user are spawned by
 * the helper, which says why at once (privsep_spawn's errno).
 */
static int
child_unexecutable(const struct pool *p, char *why, size_t len)
{
	char path[4200];

	snprintf(path, sizeof(path), "%s/%s", env->libexecdir, p->binary);
	if (access(path, X_OK) == 0)
		return 0;
	snprintf(why, len, "cannot execute %s as %s: %s", path,
	    privsep_child_user(), strerror(errno));
	return 1;
}

static void
child_reap(struct child *c, int status)
{
	struct pool *p = &pools[c->kind];
	struct slot *sl = NULL;
	uint64_t lived = time_mono_ms() - c->started;
	char why[4400];
	int i, k, killed;

	for (i = 0; i < p->nslots; i++)
		if (p->slots[i]->serial == c->serial)
			sl = p->slots[i];
	if (c->killed)
		log_debug("supervisor: %s %u.%u pid %d killed at its "
		    "attempt's deadline", p->name, c->gen, c->index,
		    (int)c->pid);
	else if (WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS)
		log_warnx("supervisor: %s %u.%u pid %d killed by signal %d "
		    "(SIGSYS: a system call its seccomp filter forbids)",
		    p->name, c->gen, c->index, (int)c->pid, WTERMSIG(status));
	else if (WIFSIGNALED(status))
		log_warnx("supervisor: %s %u.%u pid %d killed by signal %d",
		    p->name, c->gen, c->index, (int)c->pid, WTERMSIG(status));
	else if (WEXITSTATUS(status) == PROC_EXEC_FAILED &&
	    child_unexecutable(p, why, sizeof(why)))
		log_warnx("supervisor: %s %u.%u pid %d exited %d: %s", p->name,
		    c->gen, c->index, (int)c->pid, WEXITSTATUS(status), why);
	else if (WEXITSTATUS(status) != 0)
		log_warnx("supervisor: %s %u.%u pid %d exited %d", p->name,
		    c->gen, c->index, (int)c->pid, WEXITSTATUS(status));
	else
		log_debug("supervisor: %s %u.%u pid %d exited", p->name,
		    c->gen, c->index, (int)c->pid);

	killed = c->killed;
	if (c->kind == KIND_DELIVER)
		ops.deliver_gone(c->serial);
	if (c->chan != NULL)
		chan_free(c->chan);
	for (k = 0; k < nchildren; k++)
		if (children[k] == c)
			children[k] = NULL;
	deck_unmap(c->deck);
	free(c);

	if (sl == NULL || env->draining)
		return;
	sl->serial = 0;
	if (!killed)
		metrics_add("ankusa_child_restarts_total", 1, "child", p->name,
		    NULL);
	if (lived >= SUPERVISOR_STABLE_MS || killed) {
		sl->delay_ms = 0;
		child_spawn_slot(sl);
		return;
	}
	/* Died young: wait, doubling from 1 s to 60 s. */
	if (sl->delay_ms < SUPERVISOR_DELAY_MIN_MS)
		sl->delay_ms = SUPERVISOR_DELAY_MIN_MS;
	else if ((sl->delay_ms *= 2) > SUPERVISOR_DELAY_MAX_MS)
		sl->delay_ms = SUPERVISOR_DELAY_MAX_MS;
	log_info("supervisor: %s slot %d restarts in %llu ms", p->name,
	    sl->index, (unsigned long long)sl->delay_ms);
	slot_retry(sl);
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
