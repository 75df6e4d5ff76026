/* SPDX-License-Identifier: ISC */
/*
 * edge.c: ankusa-edge, the process that speaks HTTP to webhook providers.
 *
 * The master forks and execs N of these.  Each finds its channel to the
 * master on fd 3, the ingest listener (shared by every edge) on fd 4 and
 * the config text the master parsed on fd 5.  It accepts connections,
 * parses and checks each request with httpreq.c in the order of the ingest
 * contract, sends the hook to the master (MSG_HOOK_SUBMIT) and writes the
 * HTTP answer that the master's MSG_HOOK_RESULT calls for.  It never opens
 * the store: untrusted bytes are parsed here and only here.
 *
 * This file is glue: the process, its listeners and its connections (the
 * accept, TLS, a trusted proxy's PROXY header, the request head's
 * reading, timers, writing the answer).  A request whose head is in is
 * edge_request.c's: the contract's checks, the body, the submit and the
 * master's answers.  Every decision about a request is made in
 * httpreq.c; what a client may hold (connections per address, body
 * bytes, the body's rate) is counted in edge_limits.c.
 *
 * Timers, one per connection: a request head has http.header_timeout_ms
 * in all from its first byte (a connection's first request from the
 * accept), then 408; a body keeps http.min_body_rate after a grace and
 * never stalls EDGE_BODY_TIMEOUT (edge_request.c), else 408; a keep-alive
 * connection idles EDGE_IDLE_TIMEOUT between requests; none runs while
 * the master has the request.
 *
 * Lifecycle: exit at once when the master's channel closes (a child never
 * outlives its parent); on MSG_CHILD_RETIRE stop accepting, close idle
 * connections, finish the requests in hand and exit, at most
 * EDGE_RETIRE_CAP seconds later.  A frame from the master that makes no
 * sense is fatal: it is our own protocol.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sysexits.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/bufferevent_ssl.h>
#include <event2/event.h>

#include <openssl/err.h>
#include <openssl/ssl.h>

#include "clock.h"
#include "conf.h"
#include "edge_int.h"
#include "edge_limits.h"
#include "edge_tls.h"
#include "filter.h"
#include "sandbox.h"
#include "httpreq.h"
#include "log.h"
#include "msg.h"
#include "netaddr.h"
#include "proc.h"
#include "proxyproto.h"
#include "tlsmat.h"
#include "verify.h"

#define EDGE_MAX_CONNS		4096
/* Connections refused at accept, logged a second (each is counted). */
#define EDGE_REFUSE_LOG_PER_SEC	1
/* How long refusals are counted before the count goes to the master. */
#define EDGE_REFUSE_FLUSH_MS	1000
#define EDGE_IDLE_TIMEOUT	60	/* s between keep-alive requests */
#define EDGE_WRITE_TIMEOUT	60	/* s without the client taking a byte */
#define EDGE_LINGER_TIMEOUT	2	/* s to drain input before a close */
#define EDGE_RETIRE_CAP		30	/* s from MSG_CHILD_RETIRE to exit */
#define EDGE_ACCEPT_BACKOFF	1	/* s off the listener after EMFILE */
/* Input buffered beyond what is being parsed (pipelined requests, body
 * bytes not yet taken): past this the connection stops reading. */
#define EDGE_READ_HIGH		(256 * 1024)

/* Connections an edge closes without an answer, counted for the master's
 * ankusa_ingest_refused_total in batches (refuse_count). */
enum refuse_reason {
	REFUSE_CONNS_PER_IP = 0,
	REFUSE_PROXY_UNTRUSTED,	/* a PROXY header from another address */
	REFUSE_PROXY_MISSING,	/* a trusted proxy's, without a good one */
	REFUSE_TLS_HANDSHAKE,	/* a TLS handshake that failed */
	REFUSE_MAX
};

static const char *const refuse_names[REFUSE_MAX] = {
	[REFUSE_CONNS_PER_IP] = "conns_per_ip",
	[REFUSE_PROXY_UNTRUSTED] = "proxy_untrusted",
	[REFUSE_PROXY_MISSING] = "proxy_missing",
	[REFUSE_TLS_HANDSHAKE] = "tls_handshake",
};

TAILQ_HEAD(connq, conn);

struct conf			*edge_conf;
struct chan			*edge_master;
const char			*edge_node_role;
static struct event_base	*base;
/* The listeners: plain (PROC_FD_LISTEN) and, with http.tls, TLS
 * (PROC_FD_LISTEN_TLS); NULL once retired or absent. */
static struct event		*ev_listen[2];
static SSL_CTX			*tls_ctx;	/* NULL: no TLS listener */
static struct event		*ev_accept_pause;
static struct event		*ev_retire_cap;
static struct event		*ev_refuse_flush;
static uint32_t			 refused[REFUSE_MAX]; /* not told yet */
static struct connq		 conns = TAILQ_HEAD_INITIALIZER(conns);
static int			 nconns;
static int			 listen_paused;
static int			 retiring;
static uint32_t			 gen;
static struct log_limit		 refuse_log = LOG_LIMIT_INIT("accept: "
				    "connections refused",
				    EDGE_REFUSE_LOG_PER_SEC);
static struct log_limit		 proxy_log = LOG_LIMIT_INIT("proxy: "
				    "connections refused",
				    EDGE_REFUSE_LOG_PER_SEC);
static struct log_limit		 tls_log = LOG_LIMIT_INIT("tls: "
				    "handshakes failed",
				    EDGE_REFUSE_LOG_PER_SEC);
/* http.trusted_proxies, parsed. */
static struct netaddr_cidr	*trusted;
static int			 ntrusted;

static void	usage(void) __attribute__((noreturn));
static void	master_msg(struct chan *, struct msg *, void *);
static void	master_err(struct chan *, int, void *);
static void	edge_retire(void);
static void	edge_maybe_exit(void);
static void	retire_cap_cb(evutil_socket_t, short, void *);
static void	listen_resume(void);
static void	accept_cb(evutil_socket_t, short, void *);
static void	accept_pause_cb(evutil_socket_t, short, void *);
static int	conn_admit(int, const struct sockaddr *, socklen_t,
		    struct edge_addr *);
static void	refuse_count(enum refuse_reason);
static void	refuse_flush_cb(evutil_socket_t, short, void *);
static void	conn_new(int, const struct edge_addr *, int, int);
static void	listeners_add(void);
static void	listeners_del(void);
static void	tls_init(void);
static int	conn_read_proxy(struct conn *);
static void	conn_proxy_refuse(struct conn *, enum refuse_reason,
		    const char *);
static void	conn_timer_cb(evutil_socket_t, short, void *);
static void	conn_read_cb(struct bufferevent *, void *);
static void	conn_write_cb(struct bufferevent *, void *);
static void	conn_event_cb(struct bufferevent *, short, void *);
static void	conn_process(struct conn *);
static int	conn_read_head(struct conn *);
static void	ingest_event(const char *, const struct source_conf *, int,
		    uint32_t);
static void	conn_next(struct conn *);
static int	conn_idle(struct conn *);

static void
usage(void)
{
	fprintf(stderr, "usage: ankusa-edge -g gen -i index [-djv]\n");
	exit(EX_USAGE);
}

int
main(int argc, char *argv[])
{
	uint32_t idx = 0, sandbox;
	int vflag, bad;

	if (proc_child_start(argc, argv, "ankusa-edge", "edge", &gen, &idx,
	    &vflag) == -1)
		usage();

	edge_conf = proc_child_conf(CONF_ROLE_EDGE, vflag);
	/* The master's role in its replication group, which its process
	 * keeps for life (daemon/repl.c), and so do its children. */
	if ((edge_node_role = getenv("ANKUSA_NODE_ROLE")) == NULL ||
	    *edge_node_role == '\0')
		edge_node_role = "single";
	/* The master parsed these already: a failure here is a bug. */
	if (netaddr_allow_load(edge_conf->http.trusted_proxies,
	    edge_conf->http.ntrusted_proxies, &trusted, &bad) == -1)
		fatalx("http.trusted_proxies[%d]: not an address", bad);
	ntrusted = edge_conf->http.ntrusted_proxies;

	/* The jq filters, compiled once for this configuration, and their
	 * evaluators' supervisor forked (workers/jqeval.c): before the TLS
	 * key is loaded and the event base made, so that it holds neither. */
	if (filter_load(edge_conf) == -1)
		fatalx("the jq filters cannot be loaded");

	/* A client gone mid-write is an error value, not a signal. */
	signal(SIGPIPE, SIG_IGN);

	if ((base = event_base_new()) == NULL)
		fatalx("event_base_new");
	if (fcntl(PROC_FD_LISTEN, F_SETFL,
	    fcntl(PROC_FD_LISTEN, F_GETFL) | O_NONBLOCK) == -1)
		fatal("listener fd %d", PROC_FD_LISTEN);
	ev_listen[0] = event_new(base, PROC_FD_LISTEN, EV_READ | EV_PERSIST,
	    accept_cb, NULL);
	tls_init();
	ev_accept_pause = evtimer_new(base, accept_pause_cb, NULL);
	ev_retire_cap = evtimer_new(base, retire_cap_cb, NULL);
	ev_refuse_flush = evtimer_new(base, refuse_flush_cb, NULL);
	if (ev_listen[0] == NULL || ev_accept_pause == NULL ||
	    ev_retire_cap == NULL || ev_refuse_flush == NULL)
		fatalx("event_new");

	/* Everything is loaded: from here on the sandbox's rules hold. */
	sandbox_protect_fd(PROC_FD_LISTEN);
	if (ev_listen[1] != NULL)
		sandbox_protect_fd(PROC_FD_LISTEN_TLS);
	sandbox = sandbox_enter(SANDBOX_EDGE, NULL);
	edge_master = chan_new(base, PROC_FD_CHAN, master_msg, master_err,
	    NULL);
	proc_child_hello(edge_master, "edge", gen, sandbox);

	listeners_add();
	log_debug("started, max body %" PRIu64 " bytes",
	    edge_conf->http.max_body_bytes);
	event_base_dispatch(base);

	/* Only edge_maybe_exit ends the loop: retired and nothing in hand. */
	refuse_flush_cb(-1, 0, NULL);
	chan_flush_blocking(edge_master);
	chan_free(edge_master);
	conf_free(edge_conf);
	free(trusted);
	SSL_CTX_free(tls_ctx);
	log_info("retired");
	return 0;
}

/* The master. */

static void
master_msg(struct chan *c, struct msg *m, void *arg)
{
	switch (m->type) {
	case MSG_CHILD_RETIRE:
		if (msg_end(m) == -1)
			fatalx("bad %s from the master",
			    msg_type_name(m->type));
		edge_retire();
		break;
	case MSG_HOOK_RESULT:
		edge_request_hook_result(m);
		break;
	case MSG_READY_RESULT:
		edge_request_ready_result(m);
		break;
	case MSG_QUARANTINE_CHECK:
		edge_request_quarantine_check(m);
		break;
	default:
		fatalx("unexpected %s from the master",
		    msg_type_name(m->type));
	}
}

/* The master is gone: nobody can commit what we would accept.  Exit at
 * once; the clients in hand see their connection close, not a lie.  The
 * answers the master sent before it went (a 503 from a master that stops
 * on a failed sync) are written first, as far as the sockets take them
 * without waiting. */
static void
master_err(struct chan *c, int err, void *arg)
{
	struct conn *k;

	/* Plain connections only: TLS bytes go through OpenSSL. */
	TAILQ_FOREACH(k, &conns, entry)
		if (!k->tls)
			(void)evbuffer_write(bufferevent_get_output(k->bev),
			    bufferevent_getfd(k->bev));
	proc_child_orphaned(err);
}


void
edge_retire_stuck(void)
{
	if (!retiring)
		log_warnx("retiring: the jq evaluators' supervisor is gone");
	edge_retire();
}

/* Stop taking work; finish what is in hand. */
static void
edge_retire(void)
{
	struct conn *c;
	struct timeval tv = { EDGE_RETIRE_CAP, 0 };

	if (retiring)
		return;
	retiring = 1;
	log_info("retiring: %d connections open", nconns);
	/* The clients the kernel has taken already are ours to answer: a
	 * close of the listener would reset them.  At a stop the master has
	 * made it take no new one first (ankusad.c), so this empties it. */
	if (!listen_paused) {
		accept_cb(PROC_FD_LISTEN, EV_READ, NULL);
		if (ev_listen[1] != NULL)
			accept_cb(PROC_FD_LISTEN_TLS, EV_READ, tls_ctx);
	}
	/* An idle connection may have a request on its way (a new one its
	 * first, a kept-alive one its next): a moment to send it, which is
	 * answered, and the connection closed after the answer. */
	TAILQ_FOREACH(c, &conns, entry)
		if (conn_idle(c))
			conn_timer(c, EDGE_LINGER_TIMEOUT);
	event_free(ev_listen[0]);
	ev_listen[0] = NULL;
	close(PROC_FD_LISTEN);
	if (ev_listen[1] != NULL) {
		event_free(ev_listen[1]);
		ev_listen[1] = NULL;
		close(PROC_FD_LISTEN_TLS);
	}
	event_del(ev_accept_pause);
	evtimer_add(ev_retire_cap, &tv);
	edge_maybe_exit();
}

static void
edge_maybe_exit(void)
{
	if (retiring && nconns == 0)
		event_base_loopbreak(base);
}

static void
retire_cap_cb(evutil_socket_t fd, short ev, void *arg)
{
	log_warnx("retiring: %d connections still open after %d s, leaving "
	    "them", nconns, EDGE_RETIRE_CAP);
	event_base_loopbreak(base);
}

/* Accepting. */

static void
listeners_add(void)
{
	int i;

	for (i = 0; i < 2; i++)
		if (ev_listen[i] != NULL)
			event_add(ev_listen[i], NULL);
}

static void
listeners_del(void)
{
	int i;

	for (i = 0; i < 2; i++)
		if (ev_listen[i] != NULL)
			event_del(ev_listen[i]);
}

/*
 * http.tls: the listener on PROC_FD_LISTEN_TLS and the material on
 * PROC_FD_TLS, both passed by the master when cert_file is set.  Before
 * the sandbox: OpenSSL reads its configuration as it starts.
 */
static void
tls_init(void)
{
	struct tlsmat m;
	char err[512];

	if (edge_conf->http.tls.cert_file == NULL ||
	    fcntl(PROC_FD_LISTEN_TLS, F_GETFD) == -1)
		return;
	if (OPENSSL_init_ssl(0, NULL) != 1)
		fatalx("tls: OPENSSL_init_ssl");
	if (tlsmat_read(PROC_FD_TLS, &m) == -1)
		fatal("tls: the material on fd %d", PROC_FD_TLS);
	close(PROC_FD_TLS);
	if ((tls_ctx = edge_tls_ctx(edge_conf, &m, err, sizeof(err))) == NULL) {
		/* The files are the operator's: say which, and stop. */
		log_warnx("tls: %s", err);
		exit(EX_CONFIG);
	}
	tlsmat_free(&m);
	if (fcntl(PROC_FD_LISTEN_TLS, F_SETFL,
	    fcntl(PROC_FD_LISTEN_TLS, F_GETFL) | O_NONBLOCK) == -1)
		fatal("listener fd %d", PROC_FD_LISTEN_TLS);
	if ((ev_listen[1] = event_new(base, PROC_FD_LISTEN_TLS,
	    EV_READ | EV_PERSIST, accept_cb, tls_ctx)) == NULL)
		fatalx("event_new");
}

static void
listen_resume(void)
{
	if (listen_paused && !retiring && nconns < EDGE_MAX_CONNS &&
	    !evtimer_pending(ev_accept_pause, NULL)) {
		listen_paused = 0;
		listeners_add();
	}
}

static void
accept_cb(evutil_socket_t lfd, short ev, void *arg)
{
	struct timeval tv = { EDGE_ACCEPT_BACKOFF, 0 };
	struct sockaddr_storage ss;
	struct edge_addr ad;
	socklen_t sslen;
	int fd;

	/* Every edge accepts on the one listener; losing a race is EAGAIN. */
	while (nconns < EDGE_MAX_CONNS) {
		sslen = sizeof(ss);
		fd = accept4(lfd, (struct sockaddr *)&ss, &sslen,
		    SOCK_NONBLOCK | SOCK_CLOEXEC);
		if (fd == -1) {
			switch (errno) {
			case EAGAIN:
			case EINTR:
			case ECONNABORTED:
				return;
			case EMFILE:
			case ENFILE:
			case ENOBUFS:
			case ENOMEM:
				/* Out of descriptors: stop for a while
				 * rather than spin on a ready listener. */
				log_warn("accept");
				listeners_del();
				listen_paused = 1;
				evtimer_add(ev_accept_pause, &tv);
				return;
			default:
				fatal("accept");
			}
		}
		/* A trusted proxy's connection is counted for the client
		 * its header names, once it is read. */
		if (arg == NULL && ntrusted > 0 && proxyproto_trusted(trusted,
		    ntrusted, (struct sockaddr *)&ss, sslen)) {
			memset(&ad, 0, sizeof(ad));
			conn_new(fd, &ad, 1, 0);
		} else if (conn_admit(fd, (struct sockaddr *)&ss, sslen,
		    &ad) == 0)
			conn_new(fd, &ad, 0, arg != NULL);
		else
			close(fd);
	}
	/* At the cap: the kernel's backlog (and the other edges) hold the
	 * next clients until a connection closes. */
	listeners_del();
	listen_paused = 1;
}

static void
accept_pause_cb(evutil_socket_t fd, short ev, void *arg)
{
	listen_resume();
}

/*
 * http.max_conns_per_ip: 0 if the client's address holds fewer than its
 * share of this edge, else -1 and the caller closes fd.  A refused
 * connection is reset (no TIME_WAIT left here for a flood to fill),
 * counted for the master in batches and logged at most
 * EDGE_REFUSE_LOG_PER_SEC a second.
 */
static int
conn_admit(int fd, const struct sockaddr *sa, socklen_t len,
    struct edge_addr *ad)
{
	struct linger lg = { 1, 0 };
	char a[INET6_ADDRSTRLEN];

	if (edge_limits_conn_open(sa, len, edge_conf->http.max_conns_per_ip,
	    (int)edge_conf->http.ipv6_prefix, ad) != -1)
		return 0;
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	refuse_count(REFUSE_CONNS_PER_IP);
	if (log_limit_take(&refuse_log, LOG_LEVEL_INFO)) {
		edge_limits_addr_str(ad, a, sizeof(a));
		log_info("accept: connection from %s refused: it has %u open "
		    "here (http.max_conns_per_ip)", a,
		    edge_limits_conns(ad));
	}
	return -1;
}

/* One connection refused without an answer; told the master within
 * EDGE_REFUSE_FLUSH_MS. */
static void
refuse_count(enum refuse_reason r)
{
	struct timeval tv = { EDGE_REFUSE_FLUSH_MS / 1000,
	    (EDGE_REFUSE_FLUSH_MS % 1000) * 1000 };

	if (refused[r]++ == 0 && !evtimer_pending(ev_refuse_flush, NULL))
		evtimer_add(ev_refuse_flush, &tv);
}

/* The connections refused since the last flush, to the master's
 * ankusa_ingest_refused_total in one frame a reason. */
static void
refuse_flush_cb(evutil_socket_t fd, short ev, void *arg)
{
	int r;

	for (r = 0; r < REFUSE_MAX; r++) {
		if (refused[r] == 0)
			continue;
		ingest_event(refuse_names[r], NULL, 0, refused[r]);
		refused[r] = 0;
	}
	evtimer_del(ev_refuse_flush);
}

/* Connections. */

static void
conn_new(int fd, const struct edge_addr *ad, int proxied, int tls)
{
	struct timeval wt = { EDGE_WRITE_TIMEOUT, 0 };
	struct conn *c;
	SSL *ssl;
	int one = 1;

	/* Fails harmlessly on a non-TCP listener. */
	(void)setsockopt(fd, IPPROTO_TCP, TCP_NODELAY, &one, sizeof(one));
	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("conn_new");
	/* TLS: the handshake runs in the bufferevent, under the head's
	 * deadline, which runs from the accept: a client that stalls it
	 * holds one connection of its address's share for that long. */
	if (tls) {
		if ((ssl = SSL_new(tls_ctx)) == NULL)
			fatalx("conn_new: SSL_new");
		c->bev = bufferevent_openssl_socket_new(base, fd, ssl,
		    BUFFEREVENT_SSL_ACCEPTING, BEV_OPT_CLOSE_ON_FREE);
		if (c->bev != NULL)
			bufferevent_openssl_set_allow_dirty_shutdown(c->bev, 1);
		c->tls = 1;
	} else
		c->bev = bufferevent_socket_new(base, fd,
		    BEV_OPT_CLOSE_ON_FREE);
	c->timer = evtimer_new(base, conn_timer_cb, c);
	if (c->bev == NULL || c->timer == NULL)
		fatalx("conn_new: libevent");
	httpreq_init(&c->req);
	bufferevent_setcb(c->bev, conn_read_cb, conn_write_cb, conn_event_cb,
	    c);
	bufferevent_setwatermark(c->bev, EV_READ, 0, EDGE_READ_HIGH);
	bufferevent_set_timeouts(c->bev, NULL, &wt);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
	TAILQ_INSERT_TAIL(&conns, c, entry);
	nconns++;
	c->addr = *ad;
	c->state = proxied ? CS_PROXY : CS_HEAD;
	/* Inside TLS, a PROXY header is just a bad request. */
	c->sniffed = proxied || tls;
	/* The first request's head is timed from the accept. */
	c->head_timed = 1;
	conn_timer_ms(c, edge_conf->http.header_timeout_ms);
}

void
conn_free(struct conn *c)
{
	edge_request_unwait(c);
	TAILQ_REMOVE(&conns, c, entry);
	nconns--;
	edge_limits_release(&c->addr, &c->held);
	edge_limits_conn_close(&c->addr);
	event_free(c->timer);
	bufferevent_free(c->bev);
	httpreq_free(&c->req);
	httpreq_chunked_free(&c->chunked);
	free(c->body);
	verify_peer_free(c->peer);
	free(c);
	listen_resume();
	edge_maybe_exit();
}

/* Arm the connection's one timer; 0 disarms it. */
void
conn_timer(struct conn *c, int seconds)
{
	conn_timer_ms(c, (uint64_t)seconds * 1000);
}

void
conn_timer_ms(struct conn *c, uint64_t ms)
{
	struct timeval tv = { (time_t)(ms / 1000),
	    (suseconds_t)(ms % 1000) * 1000 };

	if (ms == 0)
		evtimer_del(c->timer);
	else
		evtimer_add(c->timer, &tv);
}

/*
 * A head not finished in time, or a body too slow: 408 and close.  A
 * connection that sent nothing of a request (idle between keep-alive
 * requests, or silent since the accept), or the end of lingering: just
 * close.  A body's timer is checked lazily: bytes that came since it was
 * armed push its deadline on, and it is armed again.
 */
static void
conn_timer_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct conn *c = arg;

	switch (c->state) {
	case CS_PROXY:
		/* A proxy's connection that never named its client:
		 * closed, as a silent client's is. */
		break;
	case CS_HEAD:
		/* A TLS handshake not done in time: failed, as one that
		 * ended in an error. */
		if (c->tls && !c->tls_up) {
			refuse_count(REFUSE_TLS_HANDSHAKE);
			break;
		}
		if (!httpreq_started(&c->req) && evbuffer_get_length(
		    bufferevent_get_input(c->bev)) == 0)
			break;
		log_debug("refusing a request: its head took over %" PRIu64
		    " ms (http.header_timeout_ms)",
		    edge_conf->http.header_timeout_ms);
		conn_refuse(c, 408, "request_timeout");
		return;
	case CS_BODY:
		edge_request_body_timer(c);
		return;
	default:
		break;
	}
	conn_free(c);
}


static int
conn_idle(struct conn *c)
{
	return (c->state == CS_HEAD || c->state == CS_PROXY) &&
	    !httpreq_started(&c->req) &&
	    evbuffer_get_length(bufferevent_get_input(c->bev)) == 0;
}

static void
conn_read_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);

	if (c->state == CS_LINGER) {
		evbuffer_drain(in, evbuffer_get_length(in));
		return;
	}
	conn_process(c);
}

static void
conn_write_cb(struct bufferevent *bev, void *arg)
{
	struct conn *c = arg;

	if (c->state != CS_WRITE)
		return;		/* a 100 Continue went out */
	/* A client that shut its side after pipelining still gets the
	 * answers to the requests it sent. */
	if (c->keep_alive && !(c->eof &&
	    evbuffer_get_length(bufferevent_get_input(bev)) == 0)) {
		conn_next(c);
		return;
	}
	if (c->eof) {
		conn_free(c);
		return;
	}
	/*
	 * Close gracefully: a close with unread input makes the kernel send
	 * a reset, which can destroy the answer (a 413 above all) before the
	 * client reads it.  So shut our side and drain for a moment.
	 */
	c->state = CS_LINGER;
	shutdown(bufferevent_getfd(bev), SHUT_WR);
	evbuffer_drain(bufferevent_get_input(bev),
	    evbuffer_get_length(bufferevent_get_input(bev)));
	bufferevent_setwatermark(bev, EV_READ, 0, 0);
	bufferevent_enable(bev, EV_READ);
	conn_timer(c, EDGE_LINGER_TIMEOUT);
}

static void
conn_event_cb(struct bufferevent *bev, short what, void *arg)
{
	struct conn *c = arg;
	char e[256];

	if (what & BEV_EVENT_CONNECTED) {
		c->tls_up = 1;		/* the handshake is done */
		c->peer = edge_tls_peer(bufferevent_openssl_get_ssl(bev));
		return;
	}
	if (c->tls && !c->tls_up) {
		/* Counted; it cost its client a connection, no one else. */
		refuse_count(REFUSE_TLS_HANDSHAKE);
		if (log_limit_take(&tls_log, LOG_LEVEL_INFO)) {
			unsigned long err = bufferevent_get_openssl_error(bev);

			if (err != 0)
				ERR_error_string_n(err, e, sizeof(e));
			else
				snprintf(e, sizeof(e), "%s",
				    what & BEV_EVENT_EOF ? "closed" : "reset");
			log_info("tls: a handshake failed: %s", e);
		}
		conn_free(c);
		return;
	}
	if ((what & BEV_EVENT_EOF) && !(what & BEV_EVENT_ERROR)) {
		/*
		 * The client shut its side.  It may still read: a request
		 * in hand is answered and the connection closed after.
		 * Anything else is a client that left.
		 */
		c->eof = 1;
		if (c->state == CS_WAIT || c->state == CS_WRITE)
			return;
	}
	conn_free(c);
}

/* Run the request state machine over the buffered input. */
static void
conn_process(struct conn *c)
{
	for (;;) {
		switch (c->state) {
		case CS_PROXY:
			if (conn_read_proxy(c) == 0)
				return;
			break;
		case CS_HEAD:
			if (conn_read_head(c) == 0)
				return;
			break;
		case CS_BODY:
			if (edge_request_body(c) == 0)
				return;
			break;
		default:
			/* Pipelined bytes wait for the answer in hand. */
			return;
		}
	}
}

/*
 * A trusted proxy's connection: its PROXY header (workers/proxyproto.c)
 * names the client, which is counted under http.max_conns_per_ip as a
 * connection accepted from it would be.  1 if the state moved on, 0 if
 * more input is needed or the connection is gone.
 */
static int
conn_read_proxy(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct sockaddr_storage ss;
	struct proxyproto pp;
	struct edge_addr ad;
	socklen_t sslen = sizeof(ss);
	int fd = bufferevent_getfd(c->bev);
	size_t n = evbuffer_get_length(in);
	char client[NETADDR_STRLEN + 8];

	if (n == 0)
		return 0;
	if (n > PROXYPROTO_V2_MAX)
		n = PROXYPROTO_V2_MAX;
	switch (proxyproto_parse(evbuffer_pullup(in, (ssize_t)n), n, &pp)) {
	case PROXYPROTO_MORE:
		if (c->eof)
			conn_free(c);
		return 0;
	case PROXYPROTO_ERROR:
		conn_proxy_refuse(c, REFUSE_PROXY_MISSING, pp.error);
		return 0;
	case PROXYPROTO_DONE:
		break;
	}
	evbuffer_drain(in, pp.len);
	if (pp.has_src) {
		memcpy(&ss, &pp.src, sizeof(ss));
		sslen = pp.srclen;
	} else if (getpeername(fd, (struct sockaddr *)&ss, &sslen) == -1) {
		conn_free(c);
		return 0;
	}
	if (conn_admit(fd, (struct sockaddr *)&ss, sslen, &ad) == -1) {
		conn_free(c);
		return 0;
	}
	c->addr = ad;
	c->state = CS_HEAD;
	edge_limits_addr_str(&ad, client, sizeof(client));
	log_debug("proxy: PROXY v%d header, client %s%s", pp.version, client,
	    pp.has_src ? "" : " (the proxy itself)");
	return 1;
}

/* A connection whose PROXY header is refused: closed without a word (it
 * may not even speak HTTP), reset, counted, logged at most
 * EDGE_REFUSE_LOG_PER_SEC a second. */
static void
conn_proxy_refuse(struct conn *c, enum refuse_reason r, const char *why)
{
	struct sockaddr_storage ss;
	struct netaddr na;
	struct linger lg = { 1, 0 };
	socklen_t sslen = sizeof(ss);
	int fd = bufferevent_getfd(c->bev);
	char a[NETADDR_STRLEN] = "?";

	if (log_limit_take(&proxy_log, LOG_LEVEL_WARN)) {
		if (getpeername(fd, (struct sockaddr *)&ss, &sslen) == 0 &&
		    netaddr_from_sockaddr((struct sockaddr *)&ss, sslen,
		    &na) == 0)
			netaddr_format(&na, a, sizeof(a));
		if (r == REFUSE_PROXY_UNTRUSTED)
			log_warnx("proxy: connection from %s refused: a PROXY "
			    "header from an address not in "
			    "http.trusted_proxies", a);
		else
			log_warnx("proxy: connection from %s refused: it is in "
			    "http.trusted_proxies but sent no valid PROXY "
			    "header (%s)", a, why);
	}
	(void)setsockopt(fd, SOL_SOCKET, SO_LINGER, &lg, sizeof(lg));
	refuse_count(r);
	conn_free(c);
}

/* 1 if the state moved on, 0 if more input is needed. */
static int
conn_read_head(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct evbuffer_iovec v;
	enum httpreq_status st = HTTPREQ_MORE;
	size_t used, n;
	int started = httpreq_started(&c->req);

	/* A PROXY header from a client not in http.trusted_proxies: it
	 * would pass for someone else. */
	if (!c->sniffed) {
		if ((n = evbuffer_get_length(in)) == 0)
			return 0;
		if (n > 12)
			n = 12;
		switch (proxyproto_sniff(evbuffer_pullup(in, (ssize_t)n), n)) {
		case -1:
			if (c->eof)
				conn_free(c);
			return 0;
		case 1:
			conn_proxy_refuse(c, REFUSE_PROXY_UNTRUSTED, NULL);
			return 0;
		default:
			c->sniffed = 1;
			break;
		}
	}

	while (evbuffer_get_length(in) > 0) {
		if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
			break;
		st = httpreq_feed(&c->req, v.iov_base, v.iov_len, &used);
		evbuffer_drain(in, used);
		if (c->received_at == 0 &&
		    (st == HTTPREQ_DONE || c->req.nlines > 0))
			c->received_at = time_wall_ms();
		if (st != HTTPREQ_MORE)
			break;
	}
	/* A later request of the connection: timed from its first byte. */
	if (!started && httpreq_started(&c->req) && !c->head_timed) {
		c->head_timed = 1;
		conn_timer_ms(c, edge_conf->http.header_timeout_ms);
	}
	switch (st) {
	case HTTPREQ_MORE:
		if (c->eof)
			conn_free(c);	/* no more is coming */
		return 0;
	case HTTPREQ_ERROR:
		log_debug("refusing a request head: %d", c->req.error);
		if (c->req.error == 431)
			conn_refuse(c, 431, "headers_too_large");
		else
			conn_refuse(c, 400, "bad_request");
		return 1;
	case HTTPREQ_DONE:
		edge_request_head(c);
		return 1;
	}
	return 0;
}

/* Refuse a request whose framing we cannot trust: answer and close. */
void
conn_refuse(struct conn *c, int status, const char *error)
{
	struct httpreq_answer a;

	httpreq_answer_error(&a, status, error);
	a.close = 1;
	conn_answer(c, &a);
}

/* Tell the master of a request refused here, or a provider's handshake
 * answered here, for its counters.  The source is named only for
 * verification failures and handshakes (a known source). */
static void
ingest_event(const char *reason, const struct source_conf *src, int named,
    uint32_t n)
{
	struct msg m;

	msg_init(&m, MSG_INGEST_EVENT, 0);
	msg_add_str(&m, reason);
	msg_add_str(&m, named && src != NULL ? src->id : "");
	msg_add_str(&m, named && src != NULL ?
	    conf_verify_type_name(src->verify.type) : "");
	msg_add_u32(&m, n);
	chan_send(edge_master, &m);
	msg_free(&m);
}

/* Write an answer; the write callback goes on from there. */
void
conn_answer(struct conn *c, struct httpreq_answer *a)
{
	char *buf;
	size_t len;

	if (a->refused != NULL)
		ingest_event(a->refused, c->src,
		    strcmp(a->refused, "verification_failed") == 0, 1);
	else if (a->handshake)
		ingest_event("handshake", c->src, 1, 1);

	edge_request_unwait(c);
	/* Read, or answered by the master: the body is held no more. */
	edge_limits_release(&c->addr, &c->held);
	/* After a client's EOF, only its requests already buffered go on. */
	c->keep_alive = c->req.error == 0 && c->req.keep_alive && !a->close &&
	    !retiring && !(c->eof &&
	    evbuffer_get_length(bufferevent_get_input(c->bev)) == 0);
	buf = httpreq_answer_format(a, c->keep_alive, c->head, &len);
	httpreq_answer_free(a);
	c->state = CS_WRITE;
	conn_timer(c, 0);
	if (bufferevent_write(c->bev, buf, len) == -1)
		fatalx("bufferevent_write");
	free(buf);
}

/* The answer is out and the connection stays: on to the next request,
 * which may already be buffered (pipelining). */
static void
conn_next(struct conn *c)
{
	httpreq_reset(&c->req);
	httpreq_chunked_free(&c->chunked);
	memset(&c->route, 0, sizeof(c->route));
	c->src = NULL;
	c->in_chunked = 0;
	c->remaining = 0;
	c->received_at = 0;
	c->head = 0;
	c->head_timed = 0;
	c->state = CS_HEAD;
	if (retiring && conn_idle(c)) {
		conn_free(c);
		return;
	}
	conn_timer(c, EDGE_IDLE_TIMEOUT);
	conn_process(c);
}
