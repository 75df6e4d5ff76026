/* SPDX-License-Identifier: ISC */
/*
 * ankusad.c: the master.
 *
 * Owns the config, the store, the ingest and claim gateway listeners and
 * the control socket, runs the writer and the dispatch scheduler, and
 * supervises the children (edges, deliver processes, claim gateways).
 * One libevent loop; signals arrive as libevent events.
 *
 *   ankusad [-c FILE] [-d] [-n] [-v]
 *   ankusad -M		(writes ankusa.yml(5) from the key table)
 *   ankusad -h | --help | -V | --version
 *
 * Exit codes: 0 after an orderly stop, 1 on a fatal error, 78 (EX_CONFIG)
 * on a bad configuration.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>

#include <netinet/in.h>

#include <linux/filter.h>

#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <inttypes.h>
#include <limits.h>
#include <netdb.h>
#include <pwd.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "admin/admin_api.h"
#include "admin/admin_archive.h"
#include "admin/admin_attempts.h"
#include "admin/admin_audit.h"
#include "admin/admin_backup.h"
#include "admin/admin_control.h"
#include "admin/admin_dlq.h"
#include "admin/admin_gauges.h"
#include "admin/admin_ops.h"
#include "admin/admin_replay.h"
#include "admin/admin_sinks.h"
#include "clock.h"
#include "conf.h"
#include "lameduck.h"
#include "log.h"
#include "master.h"
#include "msg.h"
#include "notice.h"
#include "notify.h"
#include "pipeline/pipeline.h"
#include "privsep.h"
#include "quarantine.h"
#include "reexec.h"
#include "repl.h"
#include "router.h"
#include "signals.h"
#include "store/store.h"
#include "store/store_group.h"
#include "supervisor.h"
#include "writer.h"

/* The configured paths (configure, Makefile.am). */
#if !defined(ANKUSA_LIBEXECDIR) || !defined(ANKUSA_SYSCONFDIR) || \
    !defined(ANKUSA_CONTROLSOCKET)
#error "ANKUSA_LIBEXECDIR, ANKUSA_SYSCONFDIR, ANKUSA_CONTROLSOCKET: from make"
#endif

#define EX_CONFIG		78
#define CHECKPOINT_MS		60000	/* ANKUSA_CHECKPOINT_MS for tests */
#define SHUTDOWN_GRACE_MS	10000	/* for edges to write their answers */
#define LISTEN_RETRY_MS		2000	/* a port in use at start-up */
#define LOCK_RETRY_MS		2000	/* a dead instance's lock, the same */
#define LISTEN_STEP_MS		100	/* between tries */


static struct master	 ankusad_env;
static struct event	*ev_maint;
static struct event	*ev_shutdown;
static uint64_t		 shutdown_started;
static int		 status_stopping;	/* a stop began: ankusad_status */
static int		 lock_fd = -1;
static char		 lock_path[PATH_MAX];

static int	admin_fd = -1;

static void	usage(FILE *, int) __attribute__((noreturn));
static struct conf *load_config(const char *, char **, size_t *,
		    struct conf_errors *);
static void	print_errors(FILE *, const struct conf_errors *);
static int	open_listener(const char *, const char *, uint16_t);
static void	lock_data_dir(const char *);
static void	signal_cb(int);
static void	maint_cb(evutil_socket_t, short, void *);
static void	shutdown_edges(void);
static void	shutdown_cb(evutil_socket_t, short, void *);
static void	report_restart_key(const char *, void *);
static uint64_t	checkpoint_ms(void);
static int	ankusad_reload(char *, size_t);
static int	reload_conf(char *, size_t);
static int	ankusad_ready(void);
static void	ankusad_status(char *, size_t);
static void	ankusad_shutdown(const char *);
static void	ankusad_store_check(void);
static void	ankusad_reexec(const char *) __attribute__((noreturn));
static int	ankusad_close(void);
static void	listener_refuse(int);
static int	listener_filter(int);
static int	ankusad_role_texts(const char *, size_t, const struct conf *,
		    char **, size_t *,
		    char *, size_t);
static void	ankusad_wire(void);

/* The usage: on standard output and exit 0 for -h, on standard error and
 * exit 2 for a usage error. */
static void
usage(FILE *fp, int status)
{
	fprintf(fp, "usage: ankusad [-dnv] [-c file]\n"
	    "       ankusad -M\n"
	    "       ankusad -h | --help | -V | --version\n");
	if (status != 0)
		exit(status);
	fprintf(fp, "\n"
	    "  -c file        the configuration (default: ANKUSA_CONFIG, else\n"
	    "                 %s if it exists,\n"
	    "                 else the embedded default)\n"
	    "  -d             stay in the foreground, log to standard error\n"
	    "  -n             check the configuration and exit (78: bad)\n"
	    "  -v             log at debug level\n"
	    "  -M             write ankusa.yml(5) from the key table and exit\n"
	    "  -h, --help     print this help and exit\n"
	    "  -V, --version  print the version and exit\n"
	    "\n"
	    "control socket:  %s (control.socket)\n"
	    "children:        %s (ANKUSA_LIBEXECDIR)\n"
	    "See ankusad(8) and ankusa.yml(5).\n",
	    ANKUSA_SYSCONFDIR "/ankusa.yml", ANKUSA_CONTROLSOCKET,
	    ANKUSA_LIBEXECDIR);
	exit(0);
}

static void
print_errors(FILE *fp, const struct conf_errors *errs)
{
	int i;

	for (i = 0; i < errs->n; i++)
		fprintf(fp, "%s\n", errs->msgs[i]);
}

/*
 * Load path, or (path NULL) the installed config if there is one, else the
 * embedded default.  The text parsed is returned for the children.
 */
static struct conf *
load_config(const char *path, char **textp, size_t *lenp,
    struct conf_errors *errs)
{
	const char *installed = ANKUSA_SYSCONFDIR "/ankusa.yml";
	const char *text;

	if (path != NULL)
		return conf_load(path, textp, lenp, errs);
	if (access(installed, F_OK) == 0) {
		env->conf_path = installed;
		return conf_load(installed, textp, lenp, errs);
	}
	text = conf_default_text();
	*lenp = strlen(text);
	if ((*textp = strdup(text)) == NULL)
		fatal("strdup");
	return conf_parse(*textp, *lenp, "(embedded default)", errs);
}

static int
open_listener(const char *what, const char *ip, uint16_t port)
{
	struct addrinfo hints, *res;
	char portstr[8];
	int fd, on = 1, rc, tries;

	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	hints.ai_flags = AI_NUMERICHOST | AI_PASSIVE | AI_NUMERICSERV;
	/* Handed down by an exec of ankusad (reexec.h). */
	if ((fd = reexec_take(what)) != -1)
		return fd;
	snprintf(portstr, sizeof(portstr), "%u", port);
	if ((rc = getaddrinfo(ip, portstr, &hints, &res)) != 0)
		fatalx("%s %s: %s", what, ip, gai_strerror(rc));
	fd = socket(res->ai_family, res->ai_socktype | SOCK_CLOEXEC |
	    SOCK_NONBLOCK, 0);
	if (fd == -1)
		fatal("%s listener: socket", what);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	/* In use: after a crash the last instance's edges may still be on
	 * their way out with the listener; give them LISTEN_RETRY_MS. */
	for (tries = 0; bind(fd, res->ai_addr, res->ai_addrlen) == -1;
	    tries++) {
		if (errno != EADDRINUSE ||
		    tries * LISTEN_STEP_MS >= LISTEN_RETRY_MS)
			fatal("%s listener: bind %s port %u", what, ip, port);
		if (tries == 0)
			log_warnx("%s listener: port %u in use; retrying for "
			    "%d ms", what, port, LISTEN_RETRY_MS);
		usleep(LISTEN_STEP_MS * 1000);
	}
	if (listen(fd, 1024) == -1)
		fatal("%s listener: listen", what);
	freeaddrinfo(res);
	return fd;
}

/* One daemon per data directory: hold a lock on a file in it. */
static void
lock_data_dir(const char *dir)
{
	char buf[32];
	ssize_t n;
	pid_t pid;
	int tries;

	if (mkdir(dir, 0700) == -1 && errno != EEXIST)
		fatal("node.data_dir %s: mkdir", dir);
	snprintf(lock_path, sizeof(lock_path), "%s/" STORE_LOCK_FILE, dir);
	if ((lock_fd = open(lock_path, O_RDWR | O_CREAT | O_CLOEXEC, 0600)) ==
	    -1)
		fatal("%s", lock_path);
	/* The lock is the open file's (flock), which a child shares from
	 * its fork to its exec: after a kill -9 a child of the dead master
	 * not yet executed holds it a moment longer.  While the pid written
	 * in it is gone, that is waited for (LOCK_RETRY_MS). */
	for (tries = 0; flock(lock_fd, LOCK_EX | LOCK_NB) == -1; tries++) {
		n = pread(lock_fd, buf, sizeof(buf) - 1, 0);
		buf[n > 0 ? n : 0] = '\0';
		buf[strcspn(buf, "\n")] = '\0';
		pid = (pid_t)strtol(buf, NULL, 10);
		if (tries * 50 >= LOCK_RETRY_MS || pid <= 0 ||
		    kill(pid, 0) == 0 || errno != ESRCH)
			fatalx("node.data_dir %s is in use by ankusad pid %s",
			    dir, buf[0] ? buf : "(unknown)");
		usleep(50 * 1000);
	}
	if (ftruncate(lock_fd, 0) == -1)
		fatal("%s", lock_path);
	n = snprintf(buf, sizeof(buf), "%d\n", (int)getpid());
	if (pwrite(lock_fd, buf, n, 0) != n)
		fatal("%s", lock_path);
}

/*
 * The part of the config text each kind of child gets (conf_role.c),
 * each parsed here as the child will, so that a text a child would
 * refuse never reaches it; a token_file as the digest tokens read from
 * it (NULL: as written).  0, or -1 with err set and nothing kept.
 */
static int
ankusad_role_texts(const char *text, size_t len, const struct conf *tokens,
    char **out, size_t *lens, char *err, size_t errlen)
{
	static const char *const names[CONF_ROLE_MAX] = {
		"edges", "deliver processes", "claim gateways"
	};
	struct conf_errors errs = { NULL, 0 };
	struct conf *cf;
	int r, k;

	for (r = 0; r < CONF_ROLE_MAX; r++) {
		out[r] = conf_role_text_tokens(text, len, r, tokens, &lens[r],
		    &errs);
		cf = out[r] != NULL ? conf_parse_role(out[r], lens[r], r,
		    &errs) : NULL;
		if (cf == NULL) {
			snprintf(err, errlen, "config: the part for the %s: "
			    "%s", names[r], errs.n > 0 ? errs.msgs[0] :
			    "refused");
			conf_errors_free(&errs);
			for (k = 0; k <= r; k++) {
				free(out[k]);
				out[k] = NULL;
			}
			return -1;
		}
		conf_free(cf);
	}
	return 0;
}

/*
 * A config file whose text holds a secret (not a ${file:...},
 * ${credential:...} or ${VAR} reference) and that others may read, or a
 * group other than root's and node.user's (which reads it at a reload):
 * a warning at the start, naming the file, its mode and the first such
 * key.
 */
static void
conf_mode_warn(void)
{
	struct passwd *pw;
	struct stat st;
	gid_t g = (gid_t)-1;

	if (env->conf_path == NULL || env->conf->secret_inline == NULL ||
	    stat(env->conf_path, &st) == -1)
		return;
	if ((pw = getpwnam(privsep_user())) != NULL)
		g = pw->pw_gid;
	if (!(st.st_mode & S_IROTH) && (!(st.st_mode & S_IRGRP) ||
	    st.st_gid == 0 || st.st_gid == g))
		return;
	log_warnx("config: %s holds secrets (%s, and maybe more) and %s can "
	    "read it (mode %04o): chmod o-r, g-r unless its group is %s's, "
	    "or take them from files (${file:/path}, ${credential:NAME})",
	    env->conf_path, env->conf->secret_inline,
	    (st.st_mode & S_IROTH) ? "every user" : "its group",
	    (unsigned int)(st.st_mode & 07777), privsep_user());
}

/* A local claim store's root, the children's (privsep_child_dirs). */
static void
claim_dirs(const struct conf *cf)
{
	if (cf->claim_check.enabled && cf->claim_check.store_type != NULL &&
	    strcmp(cf->claim_check.store_type, "local") == 0)
		privsep_child_dirs(cf->data_dir, cf->claim_check.root);
}

/* arg: set when the claim_check section is one of them, which the
 * deliver processes' and the gateways' parts of the config are made of. */
static void
report_restart_key(const char *key, void *arg)
{
	int *claims = arg;

	log_warnx("reload: %s changed; it needs a restart and keeps its old "
	    "value until then", key);
	if (strncmp(key, "claim_check", 11) == 0)
		*claims = 1;
}

/* A reload, told to the service manager: RELOADING=1, then READY=1 with
 * the config in force (the new one, or the old one kept). */
static int
ankusad_reload(char *err, size_t errlen)
{
	char status[256];
	int rc;

	notify_reloading();
	rc = reload_conf(err, errlen);
	ankusad_status(status, sizeof(status));
	notify_reloaded(status);
	return rc;
}

static int
reload_conf(char *err, size_t errlen)
{
	struct conf_errors errs = { NULL, 0 };
	struct conf *nc;
	enum log_level lvl;
	struct tlsmat tls = { NULL, 0, NULL, 0, NULL, 0 };
	char *text = NULL, *roles[CONF_ROLE_MAX], tlserr[1024];
	size_t len = 0, rlens[CONF_ROLE_MAX];
	int i, claims_kept = 0;

	if (env->draining) {
		snprintf(err, errlen, "the daemon is stopping");
		return -1;
	}
	if (env->conf_path != NULL)
		nc = conf_load(env->conf_path, &text, &len, &errs);
	else {
		text = strdup(conf_default_text());
		len = strlen(text);
		nc = conf_parse(text, len, "(embedded default)", &errs);
	}
	if (nc == NULL) {
		snprintf(err, errlen, "%s: %d error%s, old config kept%s%s",
		    env->conf_path != NULL ? env->conf_path : "config",
		    errs.n, errs.n == 1 ? "" : "s", errs.n > 0 ? ": " : "",
		    errs.n > 0 ? errs.msgs[0] : "");
		for (i = 0; i < errs.n; i++)
			log_warnx("reload: %s", errs.msgs[i]);
		log_warnx("reload: old config kept");
		conf_errors_free(&errs);
		free(text);
		return -1;
	}
	/* The tokens stay those read at start (conf_reload_keep). */
	if (ankusad_role_texts(text, len, env->conf, roles, rlens, err,
	    errlen) == -1) {
		log_warnx("reload: %s; old config kept", err);
		conf_free(nc);
		free(text);
		return -1;
	}
	if (conf_reload_keep(env->conf, nc, report_restart_key,
	    &claims_kept) == -1) {
		for (i = 0; i < CONF_ROLE_MAX; i++)
			free(roles[i]);
		snprintf(err, errlen, "out of memory, old config kept");
		log_warnx("reload: %s", err);
		conf_free(nc);
		free(text);
		return -1;
	}
	/* http.tls's files, read again as node.user: the new edges put a
	 * renewed certificate in force.  No listener: nothing to read. */
	if (env->tls_fd != -1 &&
	    tlsmat_load(nc, &tls, tlserr, sizeof(tlserr)) == -1) {
		for (i = 0; i < CONF_ROLE_MAX; i++)
			free(roles[i]);
		snprintf(err, errlen, "%s, old config kept", tlserr);
		log_warnx("reload: %s", err);
		conf_free(nc);
		free(text);
		return -1;
	}
	tlsmat_free(&env->tls);
	env->tls = tls;
	conf_free(env->conf);
	free(env->conf_text);
	env->conf = nc;
	repl_reload(nc);
	env->conf_text = text;
	env->conf_len = len;
	for (i = 0; i < CONF_ROLE_MAX; i++) {
		/* A claim_check kept until the restart: the children that
		 * serve it keep their part as it was too, so that a deliver
		 * process's sandbox still lets it write the claim store the
		 * master's jobs name. */
		if (claims_kept && i != CONF_ROLE_EDGE) {
			free(roles[i]);
			continue;
		}
		free(env->role_text[i]);
		env->role_text[i] = roles[i];
		env->role_len[i] = rlens[i];
	}
	if (!env->verbose && log_level_parse(nc->log_level, &lvl) == 0)
		log_setlevel(lvl);
	/* A claim store's root moved: made for the children. */
	if (!claims_kept)
		claim_dirs(nc);
	supervisor_new_generation();
	pipeline_reconfigure();
	log_info("reload: config %s in force: %d sources, %d sinks",
	    env->conf_path != NULL ? env->conf_path : "(embedded default)",
	    nc->nsources, nc->nsinks);
	return 0;
}

/* Ingest accepts: an edge of the generation in force and a deliver
 * process (when there are any) have said hello. */
static int
ankusad_ready(void)
{
	return supervisor_ready(KIND_EDGE) > 0 &&
	    (supervisor_ready(KIND_DELIVER) > 0 ||
	    supervisor_children(KIND_DELIVER) == 0);
}

/*
 * The service manager's STATUS= line: the state and the counts.  A
 * client's counts are a read of its store, which waits out Berkeley DB's
 * lockout (5 s) while the group elects or synchronises the client: once
 * it stops (status_stopping) the line leaves them out there, or the stop,
 * its drain's bound included, would wait for that read.
 */
static void
ankusad_status(char *buf, size_t len)
{
	struct store_counts sc;

	if (status_stopping && !repl_writable()) {
		snprintf(buf, len, "stopping: %d children left",
		    supervisor_children(KIND_MAX));
		return;
	}
	if (store_counts(env->store, &sc) == -1)
		memset(&sc, 0, sizeof(sc));
	if (env->draining)
		snprintf(buf, len, "draining: %d children left, %s; %" PRIu64
		    " hooks stored, %" PRIu64 " deliveries pending",
		    supervisor_children(KIND_MAX), pipeline_busy() ?
		    "attempts running" : "no attempt running", sc.hooks,
		    sc.rows);
	else
		snprintf(buf, len, "accepting: %d edges, %d delivers; %"
		    PRIu64 " hooks stored, %" PRIu64 " deliveries pending, %"
		    PRIu64 " dead", supervisor_ready(KIND_EDGE),
		    supervisor_ready(KIND_DELIVER), sc.hooks, sc.rows,
		    sc.dead);
}

static void
ankusad_shutdown(const char *why)
{
	struct timeval tv = { 0, 50000 };
	char status[256];

	if (env->draining)
		return;
	log_info("stopping: %s", why);
	env->draining = 1;
	status_stopping = 1;
	ankusad_status(status, sizeof(status));
	notify_stopping(status);
	/* Hooks already queued were promised a commit: keep it. */
	writer_flush_all();
	/* Claim nothing more; attempts running finish (each within its
	 * timeout) and their outcomes are written.  A backup stops at its
	 * next write and removes what it wrote. */
	pipeline_stop();
	replay_stop();
	backup_stop();
	/* Behind a load balancer the edges answer 503 until its health
	 * check has seen /ready say so (lameduck.h); else they go now. */
	if (!lameduck_begin(env->base, shutdown_edges))
		shutdown_edges();
	shutdown_started = time_mono_ms();
	ev_shutdown = event_new(env->base, -1, EV_PERSIST, shutdown_cb, NULL);
	event_add(ev_shutdown, &tv);
}

/*
 * At a stop: the ingest listener takes no new connection, while the edges,
 * retired next, accept those the kernel has queued already and answer
 * them (a close of the listener would reset those).  A socket filter
 * drops every segment to it that is a SYN without an ACK (the TCP flags
 * are byte 13 of the header a TCP socket's filter sees at offset 0): new
 * clients go unanswered, a handshake under way completes.  The connections
 * accepted inherit the filter, which never drops their segments.  Once
 * the edges are gone the master closes its copy and new clients are
 * refused at once.
 */
static void
listener_refuse(int fd)
{
	/* A kernel may refuse the filter to node.user: the privsep helper,
	 * left root for this alone, attaches it then. */
	if (fd != -1 && listener_filter(fd) == -1 &&
	    (errno != EPERM || privsep_helper_act(fd) == -1))
		log_warn("stopping: ingest listener: SO_ATTACH_FILTER");
}

/* 0, or -1 with errno. */
static int
listener_filter(int fd)
{
	struct sock_filter syn_drop[] = {
		BPF_STMT(BPF_LD | BPF_B | BPF_ABS, 13),
		BPF_STMT(BPF_ALU | BPF_AND | BPF_K, 0x12),	/* SYN, ACK */
		BPF_JUMP(BPF_JMP | BPF_JEQ | BPF_K, 0x02, 0, 1),
		BPF_STMT(BPF_RET | BPF_K, 0),			/* drop */
		BPF_STMT(BPF_RET | BPF_K, 0xffffffff),		/* keep */
	};
	struct sock_fprog prog = { sizeof(syn_drop) / sizeof(syn_drop[0]),
	    syn_drop };

	return setsockopt(fd, SOL_SOCKET, SO_ATTACH_FILTER, &prog,
	    sizeof(prog));
}

/*
 * The edges go: the listener takes no new connection (listener_refuse),
 * the edges answer what they hold and exit, and shutdown_cb closes the
 * master's copy once they are gone.  Behind a load balancer this waits
 * until it has seen /ready answer 503 (lameduck.h).
 */
static void
shutdown_edges(void)
{
	listener_refuse(env->listen_fd);
	listener_refuse(env->tls_fd);
	supervisor_retire(KIND_EDGE);
}

static void
shutdown_cb(evutil_socket_t fd, short ev, void *arg)
{
	static int delivers_retired;
	uint64_t elapsed = time_mono_ms() - shutdown_started;

	if (lameduck_active())
		return;
	if (env->listen_fd != -1 && supervisor_children(KIND_EDGE) == 0) {
		close(env->listen_fd);
		env->listen_fd = -1;
		if (env->tls_fd != -1)
			close(env->tls_fd);
		env->tls_fd = -1;
	}
	if (!delivers_retired) {
		if (pipeline_busy() && elapsed <
		    env->conf->dispatch.attempt_timeout_ms + SHUTDOWN_GRACE_MS)
			return;
		supervisor_retire(KIND_DELIVER);
		supervisor_retire(KIND_GATEWAY);
		delivers_retired = 1;
		shutdown_started = time_mono_ms();
		return;
	}
	/* An answer given in the stop's last turns (a backup it cancelled)
	 * is written before the loop ends. */
	if ((supervisor_children(KIND_MAX) > 0 || backup_busy() ||
	    control_unsent() > 0) && elapsed < SHUTDOWN_GRACE_MS)
		return;
	if (supervisor_children(KIND_MAX) > 0) {
		log_warnx("stopping: %d children did not exit; killing them",
		    supervisor_children(KIND_MAX));
		supervisor_kill_all();
	}
	event_base_loopexit(env->base, NULL);
}

static void
signal_cb(int sig)
{
	char err[1024];

	switch (sig) {
	case SIGHUP:
		log_info("SIGHUP: reloading the config");
		(void)ankusad_reload(err, sizeof(err));
		break;
	case SIGTERM:
	case SIGINT:
		ankusad_shutdown(sig == SIGTERM ? "SIGTERM" : "SIGINT");
		break;
	}
}

static void
ankusad_store_check(void)
{
	if (!store_lost(env->store))
		return;
	/* The edges' 503s first: the batch that failed is answered, and
	 * so is every hook still queued for a commit that cannot come. */
	writer_refuse_all();
	supervisor_flush(KIND_EDGE);
	fatalx("stopping: the store must be recovered, which a restart does "
	    "(%s)", store_strerror(env->store));
}

/*
 * A site of a replication group whose role changed (repl.c): the queued
 * hooks answered 503, the children killed (an attempt in flight is made
 * again by whichever node is master: at-least-once), the store closed,
 * and ankusad executed again with its listeners.
 */
static void
ankusad_reexec(const char *why)
{
	char status[256];
	int fd;
	const char *sig;

	/* A signal from now on stays pending across the exec, for the new
	 * process (signals.h).  One that came before, or a stop under way,
	 * ends here: the process asked to stop must not start again, maybe
	 * as the group's master. */
	signals_hold();
	if ((sig = signals_stop()) != NULL || env->draining) {
		if (!env->draining) {
			log_info("stopping: %s", sig);
			status_stopping = 1;
			ankusad_status(status, sizeof(status));
			notify_stopping(status);
		}
		log_warnx("stopping: ends here, with no new exec of ankusad "
		    "(%s): the attempts running are cut (the group's master "
		    "makes them again), the hooks queued answered 503", why);
		writer_refuse_all();
		supervisor_flush(KIND_EDGE);
		supervisor_kill_all();
		exit(ankusad_close());
	}
	writer_refuse_all();
	supervisor_flush(KIND_EDGE);
	supervisor_kill_all();
	backup_join();
	audit_flush();
	notify_reexec_keep();
	privsep_reexec_keep();
	if (store_close(env->store) == -1)
		log_warnx("the store was not closed cleanly: the recovery at "
		    "the exec replays its log");
	env->store = NULL;
	reexec_keep("http", env->listen_fd);
	reexec_keep("https", env->tls_fd);
	reexec_keep("claim_check", env->claim_fd);
	reexec_keep("admin", admin_fd);
	reexec_keep("control", control_fd());
	if ((fd = conf_tokens_save(env->conf)) != -1)
		reexec_keep("tokens", fd);
	reexec_now(why);
	fatalx("cannot execute ankusad again (%s): stopping, for init to "
	    "restart it", why);
}

/* The checkpoint's interval: a minute, or ANKUSA_CHECKPOINT_MS (100 to an
 * hour), which the tests set to reach a checkpoint in seconds. */
static uint64_t
checkpoint_ms(void)
{
	const char *s = getenv("ANKUSA_CHECKPOINT_MS");
	unsigned long long v;
	char *end;

	if (s == NULL || *s == '\0')
		return CHECKPOINT_MS;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno != 0 || *end != '\0' || v < 100 || v > 3600000) {
		log_warnx("ANKUSA_CHECKPOINT_MS=%s: not 100 to 3600000; "
		    "checkpoints every %d ms", s, CHECKPOINT_MS);
		return CHECKPOINT_MS;
	}
	return v;
}

/* The store's upkeep (store_maint): the checkpoint in steps, the cache
 * kept clean; after a checkpoint, the dedupe sweep and the audit trail's
 * and the attempt log's prunes. */
static void
maint_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct timeval tv;
	uint64_t ms, t0;
	int did;

	ms = store_maint(env->store, time_mono_ms(), &did);
	ankusad_store_check();
	if (did & STORE_MAINT_CHECKPOINTED) {
		t0 = time_mono_us();
		writer_sweep();
		log_debug("the dedupe sweep after the checkpoint in %" PRIu64
		    " us", time_mono_us() - t0);
		audit_prune();
		attempts_prune();
	}
	tv.tv_sec = ms / 1000;
	tv.tv_usec = ms % 1000 * 1000;
	event_add(ev_maint, &tv);
}

/*
 * The end of a stop, once the loop is done with: what is still open goes,
 * the store last.  The exit status: 0, or 1 when the store's close failed.
 */
static int
ankusad_close(void)
{
	/* A backup's handle on the environment goes before the store. */
	backup_join();
	audit_flush();
	notify_close();
	admin_close();
	control_close();
	signals_close();
	/* A close whose checkpoint or syncs failed is no orderly stop: the
	 * restart's recovery replays the log, all of which is kept. */
	if (store_close(env->store) == -1) {
		log_warnx("stopped, but the store was not closed cleanly: the "
		    "next start's recovery replays its log");
		return 1;
	}
	log_info("stopped");
	return 0;
}

/* dlq_ops over the pipeline. */
static int
wire_claimed(const unsigned char *key, void *arg)
{
	return pipeline_claimed(key);
}

static void
wire_released(void *arg)
{
	pipeline_lanes_released();
}

/*
 * The modules, started and wired: each is told here who handles what it
 * only announces, so that none calls upward (docs/ARCHITECTURE).  The
 * admin API's requests go to the route tables of the modules that serve
 * it; a child's frames go to their handlers by type (router.h), the
 * deliver processes' lives to the pipeline; the pipeline's stop ends the
 * manual operations' jobs, its settles are heard by the lane gauges and
 * the replays; the dead letters' purges ask it what is claimed and tell
 * it the lanes they released.
 */
static void
ankusad_wire(void)
{
	static const struct router_route routes[] = {
		{ MSG_HOOK_SUBMIT, KIND_EDGE, writer_submit,
		    "malformed hook_submit" },
		{ MSG_READY_QUERY, KIND_MAX, router_ready_query,
		    "malformed ready_query" },
		{ MSG_INGEST_EVENT, KIND_MAX, router_ingest_event,
		    "malformed ingest_event" },
		{ MSG_QUARANTINE_VERDICT, KIND_EDGE, quarantine_verdict,
		    "malformed quarantine_verdict" },
		{ MSG_DELIVER_OUTCOME, KIND_DELIVER, pipeline_outcome,
		    "malformed deliver_outcome" },
		{ MSG_BATCH_OUTCOME, KIND_DELIVER, pipeline_outcome,
		    "malformed deliver_outcome" },
		{ MSG_CLAIM_OUTCOME, KIND_DELIVER, pipeline_outcome,
		    "malformed deliver_outcome" },
	};
	static const struct supervisor_ops children = {
		.msg = router_msg,
		.deliver_ready = pipeline_worker_ready,
		.deliver_retiring = pipeline_worker_retiring,
		.deliver_gone = pipeline_worker_gone,
	};
	static const struct dlq_ops dlq = {
		.claimed = wire_claimed,
		.changed = wire_released,
	};
	/* Every module that serves the admin API, by its table. */
	static const struct admin_route *const api[] = {
		admin_routes_core,
		admin_routes_config,
		admin_routes_dlq,
		admin_routes_metrics,
		admin_routes_ops,
		admin_routes_replay,
		admin_routes_audit,
		admin_routes_attempts,
		admin_routes_sinks,
		admin_routes_archive,
	};
	char err[4096];

	admin_routes(api, sizeof(api) / sizeof(api[0]));
	router_init(routes, sizeof(routes) / sizeof(routes[0]));
	supervisor_init(&children);
	if (ops_init(err, sizeof(err)) == -1)
		fatalx("%s", err);
	writer_init();
	pipeline_on_stop(ops_stop);
	pipeline_on_disable(ops_disable);
	notice_on_post(writer_notice);
	pipeline_on_settle(gauges_settled, NULL);
	pipeline_on_settle(replay_settled, NULL);
	pipeline_init();
	dlq_init(&dlq);
	archive_init(&dlq);
	gauges_init();
	sinks_init();
	replay_init();
}

int
main(int argc, char *argv[])
{
	struct conf_errors errs = { NULL, 0 };
	struct timeval tv;
	const char *path = NULL, *lx, *sig;
	enum log_level lvl;
	enum log_format fmt;
	char err[4096];
	struct store_group group;
	int ch, checkonly = 0, i, fd;

	static const struct master_ops ops = {
		.reload = ankusad_reload,
		.shutdown = ankusad_shutdown,
		.store_check = ankusad_store_check,
		.reexec = ankusad_reexec,
	};
	static const struct option longopts[] = {
		{ "help", no_argument, NULL, 'h' },
		{ "version", no_argument, NULL, 'V' },
		{ NULL, 0, NULL, 0 }
	};

	reexec_init(argc, argv);
	/* Before the config (its secrets) is read. */
	privsep_nodump();
	master_init(&ankusad_env, &ops);
	env->listen_fd = -1;
	env->claim_fd = -1;
	env->tls_fd = -1;
	env->store_ok = 1;
	while ((ch = getopt_long(argc, argv, "c:dhMnvV", longopts, NULL)) !=
	    -1) {
		switch (ch) {
		case 'M':
			/* The ankusa.yml(5) page, from the key table. */
			conf_write_manpage(stdout);
			return 0;
		case 'c':
			path = optarg;
			env->conf_path = optarg;
			break;
		case 'd':
			env->foreground = 1;
			break;
		case 'n':
			checkonly = 1;
			break;
		case 'v':
			env->verbose = 1;
			break;
		case 'h':
			usage(stdout, 0);
		case 'V':
			printf("ankusad (%s) %s\n", PACKAGE_NAME,
			    PACKAGE_VERSION);
			return 0;
		default:
			usage(stderr, 2);
		}
	}
	if (optind != argc)
		usage(stderr, 2);
	/* The Elixir image's way to name the file; -c wins. */
	if (path == NULL && (path = getenv("ANKUSA_CONFIG")) != NULL &&
	    path[0] == '\0')
		path = NULL;
	if (path != NULL)
		env->conf_path = path;

	log_init("ankusad", env->foreground || checkonly);
	env->conf = load_config(path, &env->conf_text, &env->conf_len, &errs);
	if (env->conf == NULL) {
		/* -n prints the errors as they are; -d logs them, each line
		 * with its date and level like every other. */
		if (checkonly || !env->foreground)
			print_errors(stderr, &errs);
		if (!checkonly)
			for (i = 0; i < errs.n; i++)
				log_warnx("%s", errs.msgs[i]);
		conf_errors_free(&errs);
		free(env->conf_text);
		return EX_CONFIG;
	}
	if (ankusad_role_texts(env->conf_text, env->conf_len, NULL,
	    env->role_text, env->role_len, err, sizeof(err)) == -1) {
		fprintf(stderr, "%s\n", err);
		return EX_CONFIG;
	}
	if (repl_check_network(env->conf, err, sizeof(err)) == -1) {
		if (checkonly || !env->foreground)
			fprintf(stderr, "%s\n", err);
		if (!checkonly)
			log_warnx("%s", err);
		return EX_CONFIG;
	}
	if (!checkonly && log_format_parse(env->conf->log_format, &fmt) == 0)
		log_setformat(fmt);
	if (checkonly) {
		printf("config OK: sources=%d sinks=%d\n", env->conf->nsources,
		    env->conf->nsinks);
		return 0;
	}
	/* Caught from here on, the store's open included (signals.h). */
	signals_init();
	if (env->verbose)
		log_setlevel(LOG_LEVEL_DEBUG);
	else if (log_level_parse(env->conf->log_level, &lvl) == 0)
		log_setlevel(lvl);

	if ((lx = getenv("ANKUSA_LIBEXECDIR")) == NULL || *lx == '\0')
		lx = ANKUSA_LIBEXECDIR;
	snprintf(env->libexecdir, sizeof(env->libexecdir), "%s", lx);

	/* node.user first: an unknown one is refused before anything is
	 * opened. */
	privsep_init(env->conf->user, env->conf->child_user);
	conf_mode_warn();
	/* Before any child: they must not inherit NOTIFY_SOCKET. */
	if (notify_init() && !env->foreground)
		log_warnx("NOTIFY_SOCKET is set but -d is not: the service "
		    "manager may refuse the notifications of the forked "
		    "daemon");
	/* An exec of ankusad by itself is in place: no second fork. */
	if (!env->foreground && !reexec_inherited() && daemon(1, 0) == -1)
		fatal("daemon");
	signal(SIGPIPE, SIG_IGN);
	env->started_ms = time_wall_ms();

	/* The data directory's lock is made with the user's ids, so that
	 * it is the user's, as an exec of ankusad by itself opens it. */
	privsep_data_dir(env->conf->data_dir);
	privsep_as_user();
	lock_data_dir(env->conf->data_dir);
	privsep_as_root();
	env->listen_fd = open_listener("http", env->conf->http.ip,
	    env->conf->http.port);
	/* The TLS listener and its files, read while root: the edges get
	 * their bytes (tlsmat.h). */
	if (env->conf->http.tls.cert_file != NULL) {
		env->tls_fd = open_listener("https", env->conf->http.tls.ip,
		    env->conf->http.tls.port);
		if (tlsmat_load(env->conf, &env->tls, err, sizeof(err)) ==
		    -1) {
			log_warnx("%s", err);
			exit(78);
		}
	}
	/* The claim gateway's listener, served by ankusa-gateway children
	 * (the master reads no blob store). */
	if (env->conf->claim_check.enabled)
		env->claim_fd = open_listener("claim_check",
		    env->conf->claim_check.ip, env->conf->claim_check.port);

	/* The token files, while root may still read them; after an exec
	 * of ankusad by itself, as the image before read them.  The
	 * children's parts then carry their digests. */
	if ((fd = reexec_take("tokens")) != -1) {
		conf_tokens_restore(env->conf, fd);
		close(fd);
	}
	if (conf_tokens_read(env->conf, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		exit(EX_CONFIG);
	}
	for (i = 0; i < CONF_ROLE_MAX; i++)
		free(env->role_text[i]);
	if (ankusad_role_texts(env->conf_text, env->conf_len, env->conf,
	    env->role_text, env->role_len, err, sizeof(err)) == -1) {
		log_warnx("%s", err);
		exit(EX_CONFIG);
	}

	if (env->conf->admin.enabled) {
		if (env->conf->admin.ntokens == 0)
			log_warnx("admin: admin.tokens is empty: the admin API "
			    "on %s:%u is open to every process of this host",
			    env->conf->admin.ip, env->conf->admin.port);
		admin_fd = open_listener("admin", env->conf->admin.ip,
		    env->conf->admin.port);
	}

	if ((env->base = event_base_new()) == NULL)
		fatalx("event_base_new");
	if (admin_fd != -1 && admin_init(admin_fd, err, sizeof(err)) == -1)
		fatalx("%s", err);
	if (control_init(env->conf->control.socket, env->conf->control.mode,
	    env->conf->control.group, err, sizeof(err)) == -1)
		fatalx("%s", err);
	/* The helper that stays root; after an exec of ankusad by itself,
	 * the one the first image forked, taken back. */
	privsep_helper(listener_filter);
	/* The local claim store is the children's (node.child_user). */
	claim_dirs(env->conf);
	/* Everything that needs root is open: from here on, and in every
	 * child, the daemon is node.user.  The store is opened after it:
	 * every file it makes is the user's, and so is every thread of the
	 * replication manager (a file one made while the process was root
	 * again, between a store opened as the user and this drop, was
	 * root's and unreadable after it). */
	privsep_drop();
	privsep_nodump();
	/* Again as the user, a member of the children's group now (a start
	 * with capabilities could not give the root to that group before). */
	claim_dirs(env->conf);
	store_set_batch(env->conf->batcher.max_batch);
	if (repl_group_from_conf(env->conf, &group)) {
		log_info("replication: %s:%u joining its group (%zu peers)",
		    group.local_host, group.local_port, group.npeers);
		store_group_stop_check(signals_stop);
		env->store = store_open_group(env->conf->data_dir, &group,
		    err, sizeof(err));
	} else
		env->store = store_open(env->conf->data_dir, err, sizeof(err));
	if (env->store == NULL && (sig = signals_stop()) != NULL &&
	    strstr(err, STORE_GROUP_STOPPED) != NULL) {
		/* Nothing was served: no drain to run. */
		log_info("stopping: %s " STORE_GROUP_STOPPED, sig);
		admin_close();
		control_close();
		log_info("stopped");
		return 0;
	}
	if (env->store == NULL)
		fatalx("store: %s", err);
	log_info("store: %s", store_checksums(env->store));
	repl_init(env->base, env->store);
	signals_start(env->base, signal_cb);
	store_maint_start(env->store, checkpoint_ms(), time_mono_ms());
	ev_maint = event_new(env->base, -1, 0, maint_cb, NULL);
	tv.tv_sec = 0;
	tv.tv_usec = 0;
	event_add(ev_maint, &tv);

	ankusad_wire();
	supervisor_new_generation();
	notify_start(env->base, ankusad_ready, ankusad_status);
	log_info("ankusad %s started: ingest on %s:%u, data in %s, config %s",
	    PACKAGE_VERSION, env->conf->http.ip, env->conf->http.port,
	    env->conf->data_dir, env->conf_path != NULL ? env->conf_path :
	    "(embedded default)");

	event_base_dispatch(env->base);
	return ankusad_close();
}
