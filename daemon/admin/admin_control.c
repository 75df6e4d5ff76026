/* SPDX-License-Identifier: ISC */
/*
 * admin_control.c: the control socket; see admin_control.h for the protocol.
 *
 * Commands (control_cmds[]): status, queue, reload, drain, stats,
 * quarantine, tick, pressure, breakers, dlq, dead-letter-source, backup,
 * api (a call of the admin API's routes, daemon/admin/admin_api.h).
 * Each change (reload, drain, backup, the quarantine's release and purge,
 * dead-letter-source) is an entry of the audit trail (admin_audit.h),
 * its actor "uid:N" from the peer's credentials; an api call's entry is
 * the API's, with the same actor.  Requests come from local operators
 * only: the socket is root's and control.group's, and each connection's
 * peer is checked by its credentials (admin_peer.h) before a byte is
 * read; a refused one is answered an error line and closed.  Requests
 * are still read with
 * bounds: a line over CONTROL_MAX_LINE closes the connection.
 *
 * The socket has its mode from the moment it exists: it is bound under a
 * umask that leaves exactly control.mode, so there is no window between
 * bind and a chmod in which anyone else could connect.  At most
 * CONTROL_MAX_CONNS connections are served at once; one more is answered
 * with an error object (end, ok false) and closed at once.  An accept that
 * fails for want of descriptors or memory (EMFILE, ENFILE, ENOBUFS,
 * ENOMEM) would fail again at once on the same waiting connection, so the
 * listener is disabled for CONTROL_ACCEPT_PAUSE_MS and then tried again,
 * instead of spinning the master's loop; the connections wait in the
 * kernel's backlog meanwhile.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>

#include <errno.h>
#include <limits.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/listener.h>
#include <jansson.h>

#include "admin_api.h"
#include "admin_audit.h"
#include "admin_backup.h"
#include "admin_control.h"
#include "admin_gauges.h"
#include "admin_peer.h"
#include "clock.h"
#include "conf.h"
#include "dispatch/dispatch.h"
#include "ids.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "pipeline/pipeline.h"
#include "pipeline/pipeline_dlsource.h"
#include "privsep.h"
#include "quarantine.h"
#include "reexec.h"
#include "repl.h"
#include "store/store.h"
#include "supervisor.h"
#include "utf8.h"
#include "writer.h"

#define CONTROL_MAX_LINE	65536
#define CONTROL_LIST_CHUNK	512	/* hooks listed per write */
#define CONTROL_LOW_WATER	16384
#define CONTROL_TEXT_MAX	1024	/* an error answer's text, bytes */
#define CONTROL_MAX_CONNS	64	/* connections served at once */
#define CONTROL_ACCEPT_PAUSE_MS	1000	/* no accepting after EMFILE & co */
#define CONTROL_BACKLOG		16

struct ctl_conn {
	struct bufferevent	*bev;
	/* a listing in progress: 1 hooks, 2 the quarantine pen */
	int			 listing;
	char			 id[40];	/* listing filter by hook id */
	uint64_t		 after_seq;
	uint64_t		 left;		/* 0: no limit */
	uint64_t		 count;
	uint64_t		 skipped;	/* walked past, not listed */
	char			 source[CONF_ID_MAX + 1];
	int			 closing;	/* free once the output drains */
	int			 busy;		/* a release, tick,
						 * dead-letter-source or backup
						 * answers later */
	int			 held;		/* drain: open until the exit */
	struct admin_req	*api;		/* an api call answering later */
	char			 actor[ADMIN_ACTOR_MAX + 1];	/* the peer,
						 * ctl_admit's */
	/* A change answering later (busy): its audit entry, made when it
	 * ends; action "" when there is none. */
	char			 au_action[STORE_AUDIT_ACTION_MAX + 1];
	char			 au_target[STORE_AUDIT_TARGET_MAX + 1];
	char			 au_source[CONF_ID_MAX + 1];
	TAILQ_ENTRY(ctl_conn)	 entry;		/* in conns */
};

struct ctl_cmd {
	const char	*name;
	void		(*fn)(struct ctl_conn *, json_t *);
};

static struct evconnlistener	*listener;
static struct peer_policy	 peers;		/* who is admitted */
static struct event		*ev_accept_pause;
static int			 nconns;	/* struct ctl_conn alive */
static TAILQ_HEAD(, ctl_conn)	 conns = TAILQ_HEAD_INITIALIZER(conns);
static struct log_limit		 refuse_log =
				    LOG_LIMIT_INIT("control refusals", 1);
static char			 sock_path[sizeof(((struct sockaddr_un *)0)->sun_path)];

static void	ctl_accept(struct evconnlistener *, evutil_socket_t,
		    struct sockaddr *, int, void *);
static void	ctl_accept_error(struct evconnlistener *, void *);
static void	ctl_accept_resume(evutil_socket_t, short, void *);
static void	ctl_refuse(evutil_socket_t);
static int	ctl_admit(evutil_socket_t, char *, size_t);
static void	ctl_read(struct bufferevent *, void *);
static void	ctl_write(struct bufferevent *, void *);
static void	ctl_event(struct bufferevent *, short, void *);
static void	ctl_free(struct ctl_conn *);
static void	ctl_send(struct ctl_conn *, json_t *);
static void	ctl_end(struct ctl_conn *, json_t *);
static void	ctl_error(struct ctl_conn *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static void	ctl_list_more(struct ctl_conn *);
static void	ctl_audit_start(struct ctl_conn *, const char *, const char *,
		    const char *);
static void	ctl_audit_end(struct ctl_conn *, const char *);

static void	cmd_status(struct ctl_conn *, json_t *);
static void	cmd_queue(struct ctl_conn *, json_t *);
static void	cmd_reload(struct ctl_conn *, json_t *);
static void	cmd_drain(struct ctl_conn *, json_t *);
static void	cmd_stats(struct ctl_conn *, json_t *);
static void	cmd_tick(struct ctl_conn *, json_t *);
static void	cmd_pressure(struct ctl_conn *, json_t *);
static void	cmd_breakers(struct ctl_conn *, json_t *);
static void	cmd_dlq(struct ctl_conn *, json_t *);
static void	cmd_dead_letter_source(struct ctl_conn *, json_t *);
static void	cmd_quarantine(struct ctl_conn *, json_t *);
static void	cmd_backup(struct ctl_conn *, json_t *);
static void	cmd_api(struct ctl_conn *, json_t *);

static const struct ctl_cmd control_cmds[] = {
	{ "status", cmd_status },
	{ "queue", cmd_queue },
	{ "reload", cmd_reload },
	{ "drain", cmd_drain },
	{ "stats", cmd_stats },
	{ "tick", cmd_tick },
	{ "pressure", cmd_pressure },
	{ "breakers", cmd_breakers },
	{ "dlq", cmd_dlq },
	{ "dead-letter-source", cmd_dead_letter_source },
	{ "quarantine", cmd_quarantine },
	{ "backup", cmd_backup },
	{ "api", cmd_api },
};

int
control_init(const char *path, mode_t mode, const char *group, char *err,
    size_t errlen)
{
	struct sockaddr_un sun;
	char dir[sizeof(sun.sun_path)], *slash, ch;
	mode_t omask;
	int fd, probe, r, save;

	memset(&sun, 0, sizeof(sun));
	sun.sun_family = AF_UNIX;
	if (strlen(path) >= sizeof(sun.sun_path)) {
		snprintf(err, errlen, "control.socket %s: path too long", path);
		return -1;
	}
	snprintf(sun.sun_path, sizeof(sun.sun_path), "%s", path);
	if (peer_policy_init(&peers, group, privsep_uid(), privsep_root(), err,
	    errlen) == -1)
		return -1;
	/* Handed down by an exec of ankusad (reexec.h): listening
	 * already, at path. */
	if ((fd = reexec_take("control")) != -1)
		goto listening;
	/* Make its directory, and the missing ones above it. */
	snprintf(dir, sizeof(dir), "%s", path);
	if ((slash = strrchr(dir, '/')) != NULL && slash != dir) {
		char *p;

		*slash = '\0';
		for (p = dir + 1; ; p++) {
			if (*p != '/' && *p != '\0')
				continue;
			ch = *p;
			*p = '\0';
			if (mkdir(dir, 0755) == -1 && errno != EEXIST) {
				snprintf(err, errlen, "control.socket %s: "
				    "mkdir %s: %s", path, dir,
				    strerror(errno));
				return -1;
			}
			*p = ch;
			if (ch == '\0')
				break;
		}
	}
	/* A live socket means another daemon: refuse.  A dead one is stale. */
	if ((probe = socket(AF_UNIX, SOCK_STREAM, 0)) != -1) {
		if (connect(probe, (struct sockaddr *)&sun, sizeof(sun)) == 0) {
			close(probe);
			snprintf(err, errlen, "control.socket %s is in use by "
			    "another ankusad", path);
			return -1;
		}
		close(probe);
	}
	unlink(path);
	if ((fd = socket(AF_UNIX, SOCK_STREAM | SOCK_NONBLOCK | SOCK_CLOEXEC,
	    0)) == -1) {
		snprintf(err, errlen, "control.socket %s: %s", path,
		    strerror(errno));
		return -1;
	}
	/* The socket is made with 0777 & ~umask: exactly mode, at once. */
	omask = umask(~mode & 0777);
	r = bind(fd, (struct sockaddr *)&sun, sizeof(sun));
	save = errno;
	umask(omask);
	if (r == -1 || listen(fd, CONTROL_BACKLOG) == -1) {
		snprintf(err, errlen, "control.socket %s: %s", path,
		    strerror(r == -1 ? save : errno));
		close(fd);
		return -1;
	}
	/* Root's and control.group's, before it listens to anyone: node.user
	 * (the children's user) gets no access by the file. */
	if (privsep_root() && chown(path, 0, peers.has_group ? peers.gid : 0)
	    == -1) {
		snprintf(err, errlen, "control.socket %s: chown: %s", path,
		    strerror(errno));
		close(fd);
		return -1;
	}
 listening:
	listener = evconnlistener_new(env->base, ctl_accept, NULL,
	    LEV_OPT_CLOSE_ON_FREE | LEV_OPT_CLOSE_ON_EXEC, -1, fd);
	if (listener == NULL) {
		snprintf(err, errlen, "control.socket %s: cannot listen", path);
		close(fd);
		return -1;
	}
	evconnlistener_set_error_cb(listener, ctl_accept_error);
	if ((ev_accept_pause = evtimer_new(env->base, ctl_accept_resume,
	    NULL)) == NULL)
		fatalx("control: evtimer_new");
	snprintf(sock_path, sizeof(sock_path), "%s", path);
	return 0;
}

int
control_fd(void)
{
	return listener != NULL ? evconnlistener_get_fd(listener) : -1;
}

/*
 * The connections whose last answer is given (an end, a drain's) but not
 * all written to the socket yet: the loop writes it when the socket is
 * writable, so one that ends before would drop it.  A stop waits for them
 * (ankusad.c shutdown_cb): a backup the stop cancels answers its caller
 * in the stop's last turns.
 */
int
control_unsent(void)
{
	struct ctl_conn *c;
	int n = 0;

	TAILQ_FOREACH(c, &conns, entry)
		if ((c->closing || c->held) &&
		    evbuffer_get_length(bufferevent_get_output(c->bev)) > 0)
			n++;
	return n;
}

void
control_close(void)
{
	if (listener == NULL)
		return;
	evconnlistener_free(listener);
	listener = NULL;
	event_free(ev_accept_pause);
	ev_accept_pause = NULL;
	unlink(sock_path);
}

/*
 * accept(2) failed with something other than EAGAIN, EINTR or
 * ECONNABORTED (libevent retries those): most likely EMFILE or ENFILE.
 * The connection that made the listener readable is still waiting, so
 * the listener would be readable again at once: stop listening for a
 * while.  Logged once a pause.
 */
static void
ctl_accept_error(struct evconnlistener *l, void *arg)
{
	struct timeval tv = { CONTROL_ACCEPT_PAUSE_MS / 1000,
	    (CONTROL_ACCEPT_PAUSE_MS % 1000) * 1000 };
	int e = EVUTIL_SOCKET_ERROR();

	errno = e;
	log_warn("control: accept; not accepting for %d ms",
	    CONTROL_ACCEPT_PAUSE_MS);
	evconnlistener_disable(l);
	evtimer_add(ev_accept_pause, &tv);
}

static void
ctl_accept_resume(evutil_socket_t fd, short ev, void *arg)
{
	if (listener != NULL)
		evconnlistener_enable(listener);
}

/*
 * One connection too many: say so and close.  A fresh unix socket's
 * buffer takes the line whole; if it does not, the close says enough.
 */
static void
ctl_refuse(evutil_socket_t fd)
{
	char line[160];
	int n;

	n = snprintf(line, sizeof(line), "{\"ok\":false,\"end\":true,"
	    "\"error\":\"too many control connections (%d): try again\"}\n",
	    CONTROL_MAX_CONNS);
	(void)send(fd, line, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	close(fd);
}

/*
 * The peer's credentials against the policy (admin_peer.h): 1 admitted,
 * with actor filled; else 0, after answering the refusal's error line
 * and closing fd.
 */
static int
ctl_admit(evutil_socket_t fd, char *actor, size_t len)
{
	gid_t groups[PEER_MAX_GROUPS];
	uid_t uid;
	gid_t gid;
	char why[256], line[400];
	int ng, n, i;

	if (peer_creds(fd, &uid, &gid, groups, PEER_MAX_GROUPS, &ng) == -1) {
		log_warn("control: SO_PEERCRED");
		snprintf(why, sizeof(why), "the peer's credentials cannot be "
		    "read");
	} else if (peer_admit(&peers, uid, gid, groups, ng, why,
	    sizeof(why))) {
		snprintf(actor, len, "uid:%u", (unsigned)uid);
		return 1;
	}
	if (log_limit_take(&refuse_log, LOG_LEVEL_WARN))
		log_warnx("control: refused: %s", why);
	n = snprintf(line, sizeof(line), "{\"ok\":false,\"end\":true,"
	    "\"error\":\"not allowed: %s\"}\n", why);
	(void)send(fd, line, n, MSG_DONTWAIT | MSG_NOSIGNAL);
	/* A request already sent is dropped unread: a unix socket closed
	 * with unread bytes makes its peer's next read ECONNRESET, which
	 * could hide the line from a client that reads late. */
	for (i = 0; i < 16 && recv(fd, line, sizeof(line), MSG_DONTWAIT) > 0;
	    i++)
		;
	close(fd);
	return 0;
}

static void
ctl_accept(struct evconnlistener *l, evutil_socket_t fd, struct sockaddr *sa,
    int salen, void *arg)
{
	struct ctl_conn *c;
	char actor[24];

	if (!ctl_admit(fd, actor, sizeof(actor)))
		return;
	if (nconns >= CONTROL_MAX_CONNS) {
		if (log_limit_take(&refuse_log, LOG_LEVEL_WARN))
			log_warnx("control: %d connections open, refusing "
			    "one more", nconns);
		ctl_refuse(fd);
		return;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("control");
	c->bev = bufferevent_socket_new(env->base, fd, BEV_OPT_CLOSE_ON_FREE);
	if (c->bev == NULL) {
		close(fd);
		free(c);
		return;
	}
	nconns++;
	snprintf(c->actor, sizeof(c->actor), "%s", actor);
	TAILQ_INSERT_TAIL(&conns, c, entry);
	bufferevent_setcb(c->bev, ctl_read, ctl_write, ctl_event, c);
	bufferevent_setwatermark(c->bev, EV_WRITE, CONTROL_LOW_WATER, 0);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

/* A change asked for: what its entry names, made by ctl_audit_end when
 * the change ends (at once, or later for one that answers later). */
static void
ctl_audit_start(struct ctl_conn *c, const char *action, const char *target,
    const char *source)
{
	snprintf(c->au_action, sizeof(c->au_action), "%s", action);
	snprintf(c->au_target, sizeof(c->au_target), "%s",
	    target != NULL ? target : "");
	snprintf(c->au_source, sizeof(c->au_source), "%s",
	    source != NULL ? source : "");
}

/* The entry of the change ctl_audit_start named, with its outcome (NULL:
 * ok); once. */
static void
ctl_audit_end(struct ctl_conn *c, const char *err)
{
	if (c->au_action[0] == '\0')
		return;
	audit_record(c->actor, c->au_action, c->au_target,
	    audit_tenant_of(c->au_source[0] != '\0' ? c->au_source : NULL),
	    err != NULL ? err : "ok");
	c->au_action[0] = '\0';
}

static void
ctl_free(struct ctl_conn *c)
{
	TAILQ_REMOVE(&conns, c, entry);
	bufferevent_free(c->bev);
	free(c);
	nconns--;
}

static void
ctl_event(struct bufferevent *bev, short what, void *arg)
{
	struct ctl_conn *c = arg;

	/* A release or tick in progress finishes without telling anyone; a
	 * dead-letter-source stops; a backup is cancelled. */
	if (c->busy) {
		ctl_audit_end(c, "gone: the client went away before the "
		    "answer");
		quarantine_release_detach(c);
		pipeline_tick_detach(c);
		dlsource_detach(c);
		backup_detach(c);
		if (c->api != NULL)
			admin_call_detach(c->api);
	}
	ctl_free(c);
}

/*
 * One JSON object, one line.  An answer that could not be built (o is
 * NULL: json_pack refused a string) or encoded is replaced by an error
 * object: text from outside must never stop the master.
 */
static void
ctl_send(struct ctl_conn *c, json_t *o)
{
	char *s = o != NULL ? json_dumps(o, JSON_COMPACT) : NULL;

	if (s == NULL) {
		log_warnx("control: an answer could not be encoded");
		evbuffer_add_printf(bufferevent_get_output(c->bev),
		    "{\"ok\":false,\"error\":\"an answer could not be "
		    "encoded\"}\n");
	} else
		evbuffer_add_printf(bufferevent_get_output(c->bev), "%s\n",
		    s);
	free(s);
	json_decref(o);
}

/* The last object of an answer; the connection closes once it is sent. */
static void
ctl_end(struct ctl_conn *c, json_t *o)
{
	/* An answer that could not be built ends as an error that says so. */
	if (o == NULL) {
		log_warnx("control: an answer could not be encoded");
		o = json_pack("{s:b, s:s}", "ok", 0, "error",
		    "an answer could not be encoded");
	}
	json_object_set_new(o, "end", json_true());
	if (json_object_get(o, "ok") == NULL)
		json_object_set_new(o, "ok", json_true());
	ctl_send(c, o);
	c->closing = 1;
}

/* An error answer; arguments quoted in it are cut between characters. */
static void
ctl_error(struct ctl_conn *c, const char *fmt, ...)
{
	char text[CONTROL_TEXT_MAX];
	va_list ap;

	va_start(ap, fmt);
	(void)utf8_format(text, sizeof(text), fmt, ap);
	va_end(ap);
	ctl_end(c, json_pack("{s:b, s:s}", "ok", 0, "error", text));
}

static void
ctl_write(struct bufferevent *bev, void *arg)
{
	struct ctl_conn *c = arg;

	if (c->listing) {
		ctl_list_more(c);
		return;
	}
	if (c->closing &&
	    evbuffer_get_length(bufferevent_get_output(bev)) == 0)
		ctl_free(c);
}

static void
ctl_read(struct bufferevent *bev, void *arg)
{
	struct ctl_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	json_error_t jerr;
	json_t *req;
	const char *name;
	char *line;
	size_t len, i;

	/* One request per connection: another, while the first is still
	 * answering (a listing, a drain, or a call answered later), is
	 * ignored; ending it would free the connection the first answers
	 * on. */
	if (c->closing || c->listing || c->held || c->busy)
		return;
	if ((line = evbuffer_readln(in, &len, EVBUFFER_EOL_LF)) == NULL) {
		if (evbuffer_get_length(in) > CONTROL_MAX_LINE)
			ctl_free(c);
		return;
	}
	req = json_loadb(line, len, 0, &jerr);
	free(line);
	if (req == NULL || !json_is_object(req)) {
		ctl_error(c, "request is not a JSON object");
		json_decref(req);
		return;
	}
	name = json_string_value(json_object_get(req, "cmd"));
	for (i = 0; name != NULL &&
	    i < sizeof(control_cmds) / sizeof(control_cmds[0]); i++)
		if (strcmp(name, control_cmds[i].name) == 0) {
			control_cmds[i].fn(c, req);
			json_decref(req);
			return;
		}
	ctl_error(c, "unknown command %s", name != NULL ? name : "(none)");
	json_decref(req);
}

static void
cmd_status(struct ctl_conn *c, json_t *req)
{
	struct dispatch_stats ds;
	struct store_counts sc;
	json_t *o, *g;
	int idle, busy;

	pipeline_stats(&ds, &idle, &busy);
	if (store_counts(env->store, &sc) == -1) {
		ctl_error(c, "store: %s", store_strerror(env->store));
		return;
	}
	o = json_object();
	json_object_set_new(o, "version", json_string(PACKAGE_VERSION));
	json_object_set_new(o, "pid", json_integer(getpid()));
	json_object_set_new(o, "uptime_s", json_integer(
	    (json_int_t)((time_wall_ms() - env->started_ms) / 1000)));
	json_object_set_new(o, "hooks", json_integer(sc.hooks));
	json_object_set_new(o, "pending", json_integer(sc.rows - sc.dead));
	json_object_set_new(o, "inflight", json_integer(ds.claimed));
	json_object_set_new(o, "running", json_integer(ds.running));
	json_object_set_new(o, "decked", json_integer(ds.decked));
	json_object_set_new(o, "dead", json_integer(sc.dead));
	json_object_set_new(o, "kept", json_integer(sc.ahooks));
	json_object_set_new(o, "kept_bytes", json_integer(sc.abytes));
	json_object_set_new(o, "commit_queue", json_integer(writer_queued()));
	json_object_set_new(o, "edges", json_integer(supervisor_ready(
	    KIND_EDGE)));
	json_object_set_new(o, "delivers", json_integer(supervisor_ready(
	    KIND_DELIVER)));
	json_object_set_new(o, "delivers_busy", json_integer(busy));
	json_object_set_new(o, "sandbox", gauges_sandbox_json());
	json_object_set_new(o, "breakers_open", json_integer(
	    ds.breakers_open));
	json_object_set_new(o, "paused", admin_ops_pauses());
	json_object_set_new(o, "rates", pipeline_rates());
	json_object_set_new(o, "draining", json_boolean(env->draining));
	json_object_set_new(o, "store_ok", json_boolean(env->store_ok));
	json_object_set_new(o, "role", json_string(repl_role()));
	json_object_set_new(o, "master", admin_str(repl_master()));
	if ((g = repl_status_json()) != NULL)
		json_object_set_new(o, "replication", g);
	json_object_set_new(o, "config", json_string(env->conf_path != NULL ?
	    env->conf_path : "(embedded default)"));
	ctl_end(c, o);
}

static int
ctl_list_dead(const struct store_dead_info *di, void *arg)
{
	struct ctl_conn *c = arg;

	ctl_send(c, json_pack("{s:s, s:o, s:o, s:i, s:s, s:o, s:i, s:I, "
	    "s:o, s:I}", "hook_id", di->hook_id, "tenant", admin_str(di->tenant),
	    "source", admin_str(di->source), "sink", (int)di->sink_index,
	    "module", dispatch_module_name(di->module), "reason",
	    admin_str(di->reason), "attempts", (int)di->attempts, "dead_at",
	    (json_int_t)di->dead_at, "last_error", admin_str(di->last_error),
	    "seq", (json_int_t)di->seq));
	c->count++;
	return 0;
}

static int
ctl_list_pen(const struct store_quarantine_info *q, void *arg)
{
	struct ctl_conn *c = arg;

	c->after_seq = q->seq;
	c->count++;
	if (c->id[0] != '\0' && strcmp(c->id, q->id) != 0) {
		c->count--;
		c->skipped++;
		return 0;
	}
	ctl_send(c, json_pack("{s:s, s:I, s:o, s:o, s:I, s:I, s:o}",
	    "id", q->id, "seq", (json_int_t)q->seq, "tenant",
	    admin_str(q->tenant), "source", admin_str(q->source), "received_at",
	    (json_int_t)q->received_at, "size", (json_int_t)q->size, "reason",
	    admin_str(q->reason)));
	return 0;
}

static int
ctl_list_one(const struct store_hook_info *h, void *arg)
{
	struct ctl_conn *c = arg;

	/* A delivered hook kept by retention.delivered_s is no part of the
	 * queue (ankusactl hooks --state delivered lists those). */
	if (h->kept) {
		c->after_seq = h->seq;
		c->skipped++;
		return 0;
	}
	ctl_send(c, json_pack("{s:s, s:I, s:o, s:o, s:I, s:I, s:i, s:b}",
	    "id", h->id, "seq", (json_int_t)h->seq, "tenant",
	    admin_str(h->tenant), "source", admin_str(h->source), "received_at",
	    (json_int_t)h->received_at,
	    "size", (json_int_t)h->size, "rows", (int)h->rows,
	    "flagged", h->flagged));
	c->after_seq = h->seq;
	c->count++;
	return 0;
}

/* List the next chunk; end the answer when the store has no more. */
static void
ctl_list_more(struct ctl_conn *c)
{
	uint64_t before = c->count + c->skipped, n = CONTROL_LIST_CHUNK;
	int rc;

	if (c->left != 0 && c->left - c->count < n)
		n = c->left - c->count;
	if (c->listing == 1)
		rc = store_hooks_list(env->store, c->source[0] ? c->source :
		    NULL, c->after_seq, n, ctl_list_one, c);
	else if (c->listing == 3) {
		/* Dead letters: one page (their key is not a seq). */
		rc = store_dead_list(env->store, c->source[0] ? c->source :
		    NULL, c->left, ctl_list_dead, c);
		if (rc == 0) {
			c->listing = 0;
			ctl_end(c, json_pack("{s:I}", "count",
			    (json_int_t)c->count));
			return;
		}
	}
	else
		rc = store_quarantine_list(env->store, c->source[0] ?
		    c->source : NULL, c->after_seq, n, ctl_list_pen, c);
	if (rc == -1) {
		c->listing = 0;
		ctl_error(c, "store: %s", store_strerror(env->store));
		return;
	}
	if (c->count + c->skipped - before < n ||
	    (c->left != 0 && c->count >= c->left)) {
		c->listing = 0;
		ctl_end(c, json_pack("{s:I}", "count", (json_int_t)c->count));
	}
}

/* source and limit arguments of a listing; -1 after answering an error */
static int
ctl_list_args(struct ctl_conn *c, json_t *req)
{
	const char *src = json_string_value(json_object_get(req, "source"));
	const char *id = json_string_value(json_object_get(req, "id"));
	json_t *lim = json_object_get(req, "limit");

	if (src != NULL) {
		if (!conf_valid_id(src)) {
			ctl_error(c, "source %s is not a valid source id", src);
			return -1;
		}
		snprintf(c->source, sizeof(c->source), "%s", src);
	}
	if (id != NULL) {
		unsigned char u[UUID_LEN];

		if (strlen(id) != UUID_STRLEN || uuid_parse(id, u) == -1) {
			ctl_error(c, "id %s is not a hook id", id);
			return -1;
		}
		snprintf(c->id, sizeof(c->id), "%s", id);
	}
	if (lim != NULL && (!json_is_integer(lim) ||
	    json_integer_value(lim) < 0)) {
		ctl_error(c, "limit must be a whole number >= 0");
		return -1;
	}
	c->left = lim != NULL ? json_integer_value(lim) : 0;
	return 0;
}

static void
cmd_queue(struct ctl_conn *c, json_t *req)
{
	if (ctl_list_args(c, req) == -1)
		return;
	c->listing = 1;
	ctl_list_more(c);
}

static void
cmd_reload(struct ctl_conn *c, json_t *req)
{
	char err[4096];
	int rc;

	rc = master_reload(err, sizeof(err));
	ctl_audit_start(c, "reload", env->conf_path, NULL);
	ctl_audit_end(c, rc == -1 ? err : NULL);
	if (rc == -1) {
		ctl_error(c, "%s", err);
		return;
	}
	ctl_end(c, json_pack("{s:s}", "result", "reloaded"));
}

/*
 * The answer, then the connection stays open until the process exits:
 * its end tells the client (ankusactl drain TIMEOUT_S) that the daemon
 * has stopped.  A second drain while one runs waits the same way.
 */
static void
cmd_drain(struct ctl_conn *c, json_t *req)
{
	ctl_audit_start(c, "drain", NULL, NULL);
	ctl_audit_end(c, env->draining ? "ok: already draining" : NULL);
	ctl_end(c, json_pack("{s:s}", "result", "draining"));
	c->closing = 0;
	c->held = 1;
	master_shutdown("drain requested");
}

/*
 * The numbers of GET /metrics: "counters", "gauges" and "histograms"
 * (count and sum) keyed by series; and, as before them, the store's
 * counts at the top level.
 */
static void
cmd_stats(struct ctl_conn *c, json_t *req)
{
	struct store_counts sc;
	json_t *o = json_object();

	gauges_update();
	json_object_set_new(o, "counters", metrics_json(METRICS_COUNTER));
	json_object_set_new(o, "gauges", metrics_json(METRICS_GAUGE));
	json_object_set_new(o, "histograms", metrics_json(METRICS_HISTOGRAM));
	if (store_counts(env->store, &sc) == 0) {
		json_object_set_new(o, "ankusa_store_hooks",
		    json_integer(sc.hooks));
		json_object_set_new(o, "ankusa_store_deliveries",
		    json_integer(sc.rows));
		json_object_set_new(o, "ankusa_queue_dead",
		    json_integer(sc.dead));
		json_object_set_new(o, "quarantine_hooks",
		    json_integer(sc.qhooks));
		json_object_set_new(o, "quarantine_bytes",
		    json_integer(sc.qbytes));
	}
	json_object_set_new(o, "commit_queue", json_integer(writer_queued()));
	ctl_end(c, o);
}

static void
release_done(void *arg, json_t *result)
{
	struct ctl_conn *c = arg;

	c->busy = 0;
	ctl_audit_end(c, json_string_value(json_object_get(result, "error")));
	ctl_end(c, result);
}

/* The target of a quarantine release or purge: what it was asked for. */
static const char *
qtarget(const char *src, const char *id, int all)
{
	static char t[STORE_AUDIT_TARGET_MAX + 1];

	snprintf(t, sizeof(t), "%s%s%s%s%s", src != NULL ? "source_id=" : "",
	    src != NULL ? src : "", src != NULL && id != NULL ? "&" : "",
	    id != NULL ? "id=" : "", id != NULL ? id : "");
	if (src == NULL && id == NULL)
		snprintf(t, sizeof(t), "%s", all ? "all" : "");
	return t;
}

static void
cmd_quarantine(struct ctl_conn *c, json_t *req)
{
	const char *op = json_string_value(json_object_get(req, "op"));
	const char *src, *id;
	char err[256];
	int64_t n;

	if (op == NULL) {
		ctl_error(c, "quarantine needs list, release or purge");
		return;
	}
	if (ctl_list_args(c, req) == -1)
		return;
	src = c->source[0] ? c->source : NULL;
	id = c->id[0] ? c->id : NULL;
	if (strcmp(op, "list") == 0) {
		c->listing = 2;
		ctl_list_more(c);
	} else if (strcmp(op, "release") == 0) {
		c->busy = 1;
		ctl_audit_start(c, "quarantine.release", qtarget(src, id, 0),
		    src);
		if (quarantine_release(src, id, release_done, c, err,
		    sizeof(err)) == -1) {
			c->busy = 0;
			ctl_audit_end(c, err);
			ctl_error(c, "%s", err);
		}
	} else if (strcmp(op, "purge") == 0) {
		/* The whole pen only when asked for by name. */
		if (src == NULL && id == NULL &&
		    !json_is_true(json_object_get(req, "all"))) {
			ctl_error(c, "quarantine purge needs a source (-S), a "
			    "hook id (--id) or --all");
			return;
		}
		n = quarantine_purge(src, id, err, sizeof(err));
		ctl_audit_start(c, "quarantine.purge", qtarget(src, id,
		    json_is_true(json_object_get(req, "all"))), src);
		ctl_audit_end(c, n == -1 ? err : NULL);
		if (n == -1)
			ctl_error(c, "%s", err);
		else
			ctl_end(c, json_pack("{s:I}", "purged",
			    (json_int_t)n));
	} else
		ctl_error(c, "quarantine %s: unknown; list, release or purge",
		    op);
}

static void
tick_done(void *arg, uint64_t settled, const char *err)
{
	struct ctl_conn *c = arg;

	c->busy = 0;
	if (err != NULL)
		ctl_end(c, json_pack("{s:b, s:s, s:I}", "ok", 0, "error",
		    err, "settled", (json_int_t)settled));
	else
		ctl_end(c, json_pack("{s:s, s:I}", "result", "settled",
		    "settled", (json_int_t)settled));
}

/* A request's "timeout_s" in ms (60 s when absent): 0, or -1 answered. */
static int
ctl_timeout(struct ctl_conn *c, json_t *req, uint64_t *ms)
{
	json_t *t = json_object_get(req, "timeout_s");

	*ms = 60000;
	if (t == NULL)
		return 0;
	if (!json_is_integer(t) || json_integer_value(t) < 0) {
		ctl_error(c, "timeout must be a whole number of seconds");
		return -1;
	}
	*ms = (uint64_t)json_integer_value(t) * 1000;
	return 0;
}

/* tick [timeout_s]: answers once nothing is claimed, running or due. */
static void
cmd_tick(struct ctl_conn *c, json_t *req)
{
	uint64_t ms;

	if (ctl_timeout(c, req, &ms) == -1)
		return;
	c->busy = 1;
	pipeline_tick(ms, tick_done, c);
}

static void
cmd_pressure(struct ctl_conn *c, json_t *req)
{
	char why[PIPELINE_WHY_MAX];
	uint64_t lag;
	int full;

	if (pipeline_pressure(&lag, &full, why, sizeof(why)) == -1) {
		ctl_error(c, "unavailable: %s", why);
		return;
	}
	ctl_end(c, json_pack("{s:I, s:b}", "lag_ms", (json_int_t)lag,
	    "window_full", full));
}

static void
cmd_breakers(struct ctl_conn *c, json_t *req)
{
	json_t *a = pipeline_breakers(), *v;
	size_t i;

	json_array_foreach(a, i, v)
		ctl_send(c, json_incref(v));
	json_decref(a);
	ctl_end(c, json_pack("{s:I}", "count", (json_int_t)i));
}

static void
cmd_dlq(struct ctl_conn *c, json_t *req)
{
	const char *op = json_string_value(json_object_get(req, "op"));

	if (op == NULL || strcmp(op, "list") != 0) {
		ctl_error(c, "dlq %s: unknown; list", op != NULL ? op : "");
		return;
	}
	if (ctl_list_args(c, req) == -1)
		return;
	if (c->left == 0)
		c->left = 1000;	/* one page; -n asks for more */
	c->listing = 3;
	ctl_list_more(c);
}

static void
dls_done(void *arg, uint64_t n, const char *err)
{
	struct ctl_conn *c = arg;

	c->busy = 0;
	ctl_audit_end(c, err);
	if (err != NULL)
		ctl_error(c, "%s", err);
	else
		ctl_end(c, json_pack("{s:s, s:I}", "result", "dead_lettered",
		    "dead_lettered", (json_int_t)n));
}

/* dead-letter-source source [timeout_s]: answers once every pending row of
 * the source is dead-lettered, or unavailable past the timeout. */
static void
cmd_dead_letter_source(struct ctl_conn *c, json_t *req)
{
	const char *src = json_string_value(json_object_get(req, "source"));
	uint64_t ms;

	if (src == NULL || !conf_valid_id(src)) {
		ctl_error(c, "dead-letter-source needs a source id");
		return;
	}
	if (ctl_timeout(c, req, &ms) == -1)
		return;
	c->busy = 1;
	ctl_audit_start(c, "source.dead_letter", src, src);
	dlsource_start(src, ms, dls_done, c);
}

static const char *
backup_phase(enum store_backup_phase ph)
{
	switch (ph) {
	case STORE_BACKUP_START:
		return "start";
	case STORE_BACKUP_TABLES:
		return "tables";
	case STORE_BACKUP_LOGS:
		return "logs";
	case STORE_BACKUP_RECOVERY:
		return "recovery";
	case STORE_BACKUP_SYNC:
		return "sync";
	case STORE_BACKUP_DONE:
		break;
	}
	return "done";
}

static void
backup_progress(void *arg, const struct store_backup_progress *p)
{
	struct ctl_conn *c = arg;

	ctl_send(c, json_pack("{s:s, s:I, s:I}", "phase",
	    backup_phase(p->phase), "bytes", (json_int_t)p->bytes, "files",
	    (json_int_t)p->files));
}

static void
backup_done(void *arg, const struct store_backup_progress *p,
    const char *err)
{
	struct ctl_conn *c = arg;

	c->busy = 0;
	ctl_audit_end(c, err);
	if (err != NULL)
		ctl_error(c, "%s", err);
	else
		ctl_end(c, json_pack("{s:s, s:I, s:I}", "result", "backed_up",
		    "bytes", (json_int_t)p->bytes, "files",
		    (json_int_t)p->files));
}

/*
 * backup dir: a copy of the store into dir, taken while the daemon runs;
 * progress objects ({"phase", "bytes", "files"}) while it is made, then the
 * end, with the copy's size.  The connection going away cancels it.
 */
static void
cmd_backup(struct ctl_conn *c, json_t *req)
{
	static const struct backup_cbs cbs = { backup_progress, backup_done };
	json_t *d = json_object_get(req, "dir");
	const char *dir = json_string_value(d);
	char err[CONTROL_TEXT_MAX];

	if (dir == NULL || strlen(dir) != json_string_length(d) ||
	    strlen(dir) >= PATH_MAX || dir[0] != '/') {
		ctl_error(c, "backup needs the absolute path of a directory "
		    "that does not exist or is empty");
		return;
	}
	ctl_audit_start(c, "backup", dir, NULL);
	if (backup_start(dir, &cbs, c, err, sizeof(err)) == -1) {
		ctl_audit_end(c, err);
		ctl_error(c, "%s", err);
		return;
	}
	c->busy = 1;
}

static void
api_done(void *arg, int status, const char *body, size_t len)
{
	struct ctl_conn *c = arg;
	const char *code, *msg, *field;
	json_t *doc, *o;

	c->busy = 0;
	c->api = NULL;
	doc = json_loadb(body, len, 0, NULL);
	if (status < 400) {
		ctl_end(c, json_pack("{s:i, s:o}", "status", status, "body",
		    doc != NULL ? doc : json_null()));
		return;
	}
	code = json_string_value(json_object_get(doc, "error"));
	msg = json_string_value(json_object_get(doc, "message"));
	field = json_string_value(json_object_get(doc, "field"));
	o = json_pack("{s:b, s:i}", "ok", 0, "status", status);
	json_object_set_new(o, "error", json_sprintf("%s%s%s%s%s",
	    code != NULL ? code : "error", field != NULL ? ": " : "",
	    field != NULL ? field : "", msg != NULL ? ": " : "",
	    msg != NULL ? msg : ""));
	json_object_set_new(o, "body", doc != NULL ? doc : json_null());
	ctl_end(c, o);
}

/*
 * api method path [body]: the admin API's route for path, as if asked
 * over HTTP; the answer is {"status", "body"} (ok false, with the error
 * code, field and message in "error", from 400 on).
 */
static void
cmd_api(struct ctl_conn *c, json_t *req)
{
	static const struct {
		const char		*name;
		enum admin_method	 m;
	} methods[] = {
		{ "GET", ADMIN_GET }, { "POST", ADMIN_POST },
		{ "PUT", ADMIN_PUT }, { "PATCH", ADMIN_PATCH },
		{ "DELETE", ADMIN_DELETE },
	};
	const char *mname = json_string_value(json_object_get(req, "method"));
	const char *path = json_string_value(json_object_get(req, "path"));
	json_t *b = json_object_get(req, "body");
	char *body = NULL;
	size_t i;

	for (i = 0; mname != NULL && i < sizeof(methods) / sizeof(methods[0]);
	    i++)
		if (strcmp(mname, methods[i].name) == 0)
			break;
	if (mname == NULL || i == sizeof(methods) / sizeof(methods[0])) {
		ctl_error(c, "api needs a method: GET, POST, PUT, PATCH or "
		    "DELETE");
		return;
	}
	if (path == NULL || path[0] != '/') {
		ctl_error(c, "api needs a path starting with /");
		return;
	}
	if (b != NULL && (body = json_dumps(b, JSON_COMPACT |
	    JSON_ENCODE_ANY)) == NULL) {
		ctl_error(c, "api: the body could not be encoded");
		return;
	}
	c->busy = 1;
	c->api = admin_call(c->actor, methods[i].m, path, body, body != NULL ?
	    strlen(body) : 0, api_done, c);
	free(body);
}
