/* SPDX-License-Identifier: ISC */
/*
 * sink_rabbitmq.c: the rabbitmq sink, batched: AMQP 0-9-1 with publisher
 * confirms, over librabbitmq.
 *
 * The connection: one per deliver process, kept across jobs for the
 * url it was opened for (another url closes it first).  Its host is
 * resolved here and each address checked by the egress guard
 * (workers/egress.h) before the connect, which goes to that checked
 * address; amqp:// counts as plain (as http:// does).  amqps:// verifies
 * the broker's certificate against the system's CAs and the url's host
 * name (set on the TLS context: librabbitmq is given the address, so its
 * own name check is off and the SNI it sends is the address).  Then the
 * login (PLAIN, the url's user and password, its vhost), channel 1 and
 * confirm.select.  No heartbeats: an idle connection is tested before each
 * batch (a broker that went away, or sent connection.close, is noticed
 * there and the batch opens a new one), so a dropped connection costs
 * only the publishes in flight on it.
 *
 * The exchange: never declared.  The first batch to it on a connection
 * checks it: a passive exchange.declare (404: permanent, "exchange X does
 * not exist in vhost V": a sink that cannot route anything is the
 * operator's to fix, as a JetStream subject without a stream is, and
 * retrying would only hold the rows; the dead letters are retried from
 * the DLQ once it exists), then a declare with exchange_type, durable,
 * whose 406 "inequivalent arg 'type'" is permanent too, naming the
 * exchange and both types (any other refusal of that declare, a durable
 * or auto_delete that differs, no configure permission, is ignored: only
 * the type was asked).
 *
 * A batch: every entry's v1 message (workers/qmsg.h) published in entry
 * order, mandatory, persistent (delivery_mode 2), content_type
 * application/json, message_id the hook id, timestamp received_at in
 * seconds, app_id "ankusa", and the message's attributes (the hook id,
 * tenant, source, idempotency key, trace context ...) as the headers,
 * long strings; routing key the option, else <tenant>.<source>.  At most
 * max_inflight publishes await their confirm at once; then the confirms
 * are read until every entry has its own.  Results, per entry: ok on its
 * basic.ack, unless the broker returned it (basic.return: no queue
 * bound, 312 NO_ROUTE) first: transient, naming the exchange and routing
 * key; basic.nack: transient.  A channel or connection closed by the
 * broker: the entries not yet confirmed get its reply (permanent for a
 * 404, an exchange deleted meanwhile; else transient), its reply code as
 * the outcome's status (so disable_on may name one, 403 or 404), and the
 * connection is closed.  No confirm within timeout_ms of the batch's
 * start (connect included): transient for those left, the connection
 * closed (its late confirms would belong to nobody).  The waits for
 * confirms call the deliver process's watch every second (it exits when
 * the master is gone).  A write that
 * blocks (a broker holding its publishers under a memory alarm) is
 * bounded by dispatch.attempt_timeout_ms, the master's kill.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <netdb.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/time.h>

#include <amqp.h>
#include <amqp_ssl_socket.h>
#include <amqp_tcp_socket.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include "amqpurl.h"
#include "clock.h"
#include "egress.h"
#include "job.h"
#include "log.h"
#include "qmsg.h"
#include "sink.h"

#define RMQ_CHANNEL		1
#define RMQ_FRAME_MAX		131072
#define RMQ_MAX_EXCHANGES	16	/* checked ones kept per connection */
#define RMQ_CONTENT_TYPE	"application/json"
#define RMQ_WATCH_MS		1000	/* the watch's period in a wait */

static sink_abort_fn	rmq_watch;	/* deliver.c's: is the master there? */

/* The process's connection. */
static struct {
	amqp_connection_state_t	 conn;		/* NULL: none */
	char			*url;		/* what it was opened for */
	char			*vhost;
	uint64_t		 next_tag;	/* the next publish's tag */
	char			*exchanges[RMQ_MAX_EXCHANGES];	/* checked */
	int			 nexchanges;
} rmq;

/* One entry as it goes out. */
struct rmq_msg {
	struct qmsg	 q;
	uint64_t	 tag;		/* 0: not published */
	int		 settled;
	int		 returned;	/* basic.return seen */
	char		 why[JOB_DETAIL_MAX];	/* the return's reply */
};

/* One batch. */
struct rmq_ctx {
	const struct batch	*b;
	struct batch_outcome	*o;
	struct rmq_msg		*m;
	uint64_t		 deadline;	/* mono ms */
	uint32_t		 outstanding;
};

static void	rmq_close(int);
static int	rmq_open(const struct sink_conf *, uint64_t, char *, size_t,
		    enum job_result *);
static amqp_connection_state_t rmq_connect(const struct amqpurl *,
		    uint64_t, char *, size_t, enum job_result *);
static int	rmq_channel(char *, size_t);
static int	rmq_idle_ok(void);
static int	rmq_declare(const char *, const char *, int, char *, size_t,
		    uint32_t *);
static int	rmq_exchange(const struct sink_conf *, char *, size_t,
		    enum job_result *, uint32_t *);
static void	rmq_reply(amqp_rpc_reply_t, const char *, char *, size_t,
		    uint32_t *);
static void	rmq_tv(uint64_t, struct timeval *);
static int	rmq_publish(struct rmq_ctx *, uint32_t);
static int	rmq_wait(struct rmq_ctx *);
static void	rmq_settle(struct rmq_ctx *, uint64_t, int, int);
static void	rmq_returned(struct rmq_ctx *, const amqp_basic_return_t *);
static void	rmq_fail_open(struct rmq_ctx *, enum job_result, const char *);

int
sink_rabbitmq_run(const struct job *j, struct job_outcome *o)
{
	return sink_batch_of_one(j, o, sink_rabbitmq_batch);
}

void
sink_rabbitmq_set_abort(sink_abort_fn fn)
{
	rmq_watch = fn;
}

void
sink_rabbitmq_cleanup(void)
{
	rmq_close(1);
}

/* Drop the connection (politely when asked: a clean close). */
static void
rmq_close(int polite)
{
	int i;

	if (rmq.conn != NULL) {
		if (polite)
			(void)amqp_connection_close(rmq.conn,
			    AMQP_REPLY_SUCCESS);
		amqp_destroy_connection(rmq.conn);
		rmq.conn = NULL;
	}
	if (rmq.url != NULL)
		explicit_bzero(rmq.url, strlen(rmq.url));
	free(rmq.url);
	free(rmq.vhost);
	rmq.url = rmq.vhost = NULL;
	for (i = 0; i < rmq.nexchanges; i++)
		free(rmq.exchanges[i]);
	rmq.nexchanges = 0;
	rmq.next_tag = 0;
}

static void
rmq_tv(uint64_t deadline, struct timeval *tv)
{
	uint64_t now = time_mono_ms(), left;

	left = deadline > now ? deadline - now : 1;
	tv->tv_sec = left / 1000;
	tv->tv_usec = (left % 1000) * 1000;
}

/* What a failed RPC says, into err; *code the broker's reply code, if it
 * closed the channel or the connection (answered with its close-ok). */
static void
rmq_reply(amqp_rpc_reply_t r, const char *what, char *err, size_t errlen,
    uint32_t *code)
{
	amqp_channel_close_t *cc;
	amqp_connection_close_t *xc;
	amqp_channel_close_ok_t cok;
	amqp_connection_close_ok_t xok;

	switch (r.reply_type) {
	case AMQP_RESPONSE_NORMAL:
		snprintf(err, errlen, "%s: ok", what);
		break;
	case AMQP_RESPONSE_NONE:
		snprintf(err, errlen, "%s: no reply", what);
		break;
	case AMQP_RESPONSE_LIBRARY_EXCEPTION:
		snprintf(err, errlen, "%s: %s", what,
		    amqp_error_string2(r.library_error));
		break;
	case AMQP_RESPONSE_SERVER_EXCEPTION:
		if (r.reply.id == AMQP_CHANNEL_CLOSE_METHOD) {
			cc = r.reply.decoded;
			*code = cc->reply_code;
			snprintf(err, errlen, "%s, channel closed %u: %.*s",
			    what, cc->reply_code,
			    (int)cc->reply_text.len,
			    (const char *)cc->reply_text.bytes);
			memset(&cok, 0, sizeof(cok));
			(void)amqp_send_method(rmq.conn, RMQ_CHANNEL,
			    AMQP_CHANNEL_CLOSE_OK_METHOD, &cok);
		} else if (r.reply.id == AMQP_CONNECTION_CLOSE_METHOD) {
			xc = r.reply.decoded;
			*code = xc->reply_code;
			snprintf(err, errlen, "%s, connection closed %u: "
			    "%.*s", what, xc->reply_code, (int)xc->reply_text.len,
			    (const char *)xc->reply_text.bytes);
			memset(&xok, 0, sizeof(xok));
			(void)amqp_send_method(rmq.conn, 0,
			    AMQP_CONNECTION_CLOSE_OK_METHOD, &xok);
		} else
			snprintf(err, errlen, "%s: server method %08x", what,
			    r.reply.id);
		break;
	}
}

/* Channel 1 in confirm mode on the connection; -1 with err. */
static int
rmq_channel(char *err, size_t errlen)
{
	amqp_rpc_reply_t r;
	uint32_t code = 0;

	(void)amqp_channel_open(rmq.conn, RMQ_CHANNEL);
	r = amqp_get_rpc_reply(rmq.conn);
	if (r.reply_type != AMQP_RESPONSE_NORMAL) {
		rmq_reply(r, "rabbitmq channel.open", err, errlen, &code);
		return -1;
	}
	(void)amqp_confirm_select(rmq.conn, RMQ_CHANNEL);
	r = amqp_get_rpc_reply(rmq.conn);
	if (r.reply_type != AMQP_RESPONSE_NORMAL) {
		rmq_reply(r, "rabbitmq confirm.select", err, errlen, &code);
		return -1;
	}
	rmq.next_tag = 1;
	return 0;
}

/* A new connection to the first address of u's host that the egress
 * guard lets through and that answers; NULL with err and *res (permanent
 * when the guard refused every address). */
static amqp_connection_state_t
rmq_connect(const struct amqpurl *u, uint64_t deadline, char *err,
    size_t errlen, enum job_result *res)
{
	struct addrinfo hints, *ai0, *ai;
	struct egress_watch ew;
	amqp_connection_state_t c = NULL;
	amqp_socket_t *s;
	struct timeval tv;
	char host[256], addr[NI_MAXHOST], port[8];
	void *ctx;
	int rc;

	*res = JOB_ERROR;
	amqpurl_bare_host(u, host, sizeof(host));
	snprintf(port, sizeof(port), "%u", (unsigned)u->port);
	memset(&hints, 0, sizeof(hints));
	hints.ai_family = AF_UNSPEC;
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(host, port, &hints, &ai0)) != 0) {
		snprintf(err, errlen, "rabbitmq cannot resolve %s: %s", host,
		    gai_strerror(rc));
		return NULL;
	}
	egress_watch_init(&ew, NULL, 0);
	ew.plain = !u->tls;
	snprintf(err, errlen, "rabbitmq cannot connect to %s port %s", host,
	    port);
	for (ai = ai0; ai != NULL; ai = ai->ai_next) {
		if (egress_check(&ew, ai->ai_addr, ai->ai_addrlen) == -1)
			continue;
		if (getnameinfo(ai->ai_addr, ai->ai_addrlen, addr,
		    sizeof(addr), NULL, 0, NI_NUMERICHOST) != 0)
			continue;
		if ((c = amqp_new_connection()) == NULL)
			fatalx("rabbitmq: amqp_new_connection");
		if (u->tls) {
			if ((s = amqp_ssl_socket_new(c)) == NULL)
				fatalx("rabbitmq: amqp_ssl_socket_new");
			amqp_ssl_socket_set_verify_peer(s, 1);
			amqp_ssl_socket_set_verify_hostname(s, 0);
			ctx = amqp_ssl_socket_get_context(s);
			if (SSL_CTX_set_default_verify_paths(ctx) != 1 ||
			    X509_VERIFY_PARAM_set1_host(SSL_CTX_get0_param(ctx),
			    host, 0) != 1)
				fatalx("rabbitmq: TLS context");
		} else if ((s = amqp_tcp_socket_new(c)) == NULL)
			fatalx("rabbitmq: amqp_tcp_socket_new");
		rmq_tv(deadline, &tv);
		if ((rc = amqp_socket_open_noblock(s, addr, u->port,
		    &tv)) == AMQP_STATUS_OK)
			break;
		snprintf(err, errlen, "rabbitmq cannot connect to %s (%s) "
		    "port %s: %s", host, addr, port, amqp_error_string2(rc));
		amqp_destroy_connection(c);
		c = NULL;
	}
	freeaddrinfo(ai0);
	if (c == NULL && EGRESS_REFUSED(&ew)) {
		snprintf(err, errlen, "%s", ew.denied);
		*res = JOB_PERMANENT;
	}
	return c;
}

/* The connection for s, opened (and logged in, confirms on) if it is not
 * already; 0, or -1 with err and *res. */
static int
rmq_open(const struct sink_conf *s, uint64_t deadline, char *err,
    size_t errlen, enum job_result *res)
{
	struct amqpurl u;
	amqp_rpc_reply_t r;
	struct timeval tv;
	uint32_t code = 0;

	*res = JOB_ERROR;
	if (rmq.conn != NULL && strcmp(rmq.url, s->u.rabbitmq.url) == 0 &&
	    rmq_idle_ok())
		return 0;
	rmq_close(rmq.conn != NULL && rmq.url != NULL &&
	    strcmp(rmq.url, s->u.rabbitmq.url) != 0);
	if (amqpurl_parse(s->u.rabbitmq.url, &u, err, errlen) == -1) {
		*res = JOB_PERMANENT;
		return -1;
	}
	if ((rmq.conn = rmq_connect(&u, deadline, err, errlen, res)) ==
	    NULL) {
		amqpurl_free(&u);
		return -1;
	}
	rmq_tv(deadline, &tv);
	(void)amqp_set_handshake_timeout(rmq.conn, &tv);
	(void)amqp_set_rpc_timeout(rmq.conn, &tv);
	r = amqp_login(rmq.conn, u.vhost, 0, RMQ_FRAME_MAX, 0,
	    AMQP_SASL_METHOD_PLAIN, u.user, u.password);
	if (r.reply_type != AMQP_RESPONSE_NORMAL) {
		rmq_reply(r, "rabbitmq login", err, errlen, &code);
		amqpurl_free(&u);
		rmq_close(0);
		return -1;
	}
	if ((rmq.url = strdup(s->u.rabbitmq.url)) == NULL ||
	    (rmq.vhost = strdup(u.vhost)) == NULL)
		fatal("sink_rabbitmq");
	amqpurl_free(&u);
	if (rmq_channel(err, errlen) == -1) {
		rmq_close(0);
		return -1;
	}
	log_debug("rabbitmq: connected to vhost %s", rmq.vhost);
	return 0;
}

/* Whether the kept connection is still there: nothing to read on it (a
 * broker that left sent connection.close, or closed the socket). */
static int
rmq_idle_ok(void)
{
	struct pollfd pfd;

	if (amqp_frames_enqueued(rmq.conn) || amqp_data_in_buffer(rmq.conn))
		return 0;
	pfd.fd = amqp_get_sockfd(rmq.conn);
	pfd.events = POLLIN;
	pfd.revents = 0;
	if (pfd.fd < 0 || poll(&pfd, 1, 0) != 0) {
		log_debug("rabbitmq: the kept connection is gone, reopening");
		return 0;
	}
	return 1;
}

/* exchange.declare of ex, passive or of type and durable: 0 ok; 1
 * refused, with why and *code the broker's reply, the channel open again;
 * -1 the connection is unusable (closed here), why says why. */
static int
rmq_declare(const char *ex, const char *type, int passive, char *why,
    size_t whylen, uint32_t *code)
{
	amqp_rpc_reply_t r;
	char again[JOB_DETAIL_MAX];

	*code = 0;
	(void)amqp_exchange_declare(rmq.conn, RMQ_CHANNEL,
	    amqp_cstring_bytes(ex), amqp_cstring_bytes(type), passive,
	    !passive, 0, 0, amqp_empty_table);
	r = amqp_get_rpc_reply(rmq.conn);
	if (r.reply_type == AMQP_RESPONSE_NORMAL)
		return 0;
	rmq_reply(r, "rabbitmq exchange.declare", why, whylen, code);
	if (r.reply_type == AMQP_RESPONSE_SERVER_EXCEPTION &&
	    r.reply.id == AMQP_CHANNEL_CLOSE_METHOD &&
	    rmq_channel(again, sizeof(again)) == 0)
		return 1;
	rmq_close(0);
	return -1;
}

/* The exchange checked on this connection (once); 0, or -1 with err,
 * *res and *code. */
static int
rmq_exchange(const struct sink_conf *s, char *err, size_t errlen,
    enum job_result *res, uint32_t *code)
{
	const char *ex = s->u.rabbitmq.exchange;
	const char *type = s->u.rabbitmq.exchange_type != NULL ?
	    s->u.rabbitmq.exchange_type : "topic";
	char why[JOB_DETAIL_MAX];
	int i;

	*res = JOB_ERROR;
	for (i = 0; i < rmq.nexchanges; i++)
		if (strcmp(rmq.exchanges[i], ex) == 0)
			return 0;
	if (rmq_declare(ex, type, 1, why, sizeof(why), code) != 0) {
		if (*code == AMQP_NOT_FOUND) {
			snprintf(err, errlen, "rabbitmq exchange %s does not "
			    "exist in vhost %s", ex, rmq.vhost);
			*res = JOB_PERMANENT;
		} else
			snprintf(err, errlen, "%s", why);
		return -1;
	}
	/* Its type: a declare that is refused only for another type. */
	switch (rmq_declare(ex, type, 0, why, sizeof(why), code)) {
	case -1:
		snprintf(err, errlen, "%s", why);
		return -1;
	case 1:
		if (*code == AMQP_PRECONDITION_FAILED &&
		    strstr(why, "inequivalent arg 'type'") != NULL) {
			snprintf(err, errlen, "rabbitmq exchange %s in vhost "
			    "%s is not of type %s: %s", ex, rmq.vhost, type,
			    why);
			*res = JOB_PERMANENT;
			return -1;
		}
		log_debug("rabbitmq: exchange %s: %s (not its type: "
		    "ignored)", ex, why);
		*code = 0;
		break;
	}
	if (rmq.nexchanges == RMQ_MAX_EXCHANGES) {
		free(rmq.exchanges[0]);
		memmove(rmq.exchanges, rmq.exchanges + 1,
		    (RMQ_MAX_EXCHANGES - 1) * sizeof(rmq.exchanges[0]));
		rmq.nexchanges--;
	}
	if ((rmq.exchanges[rmq.nexchanges++] = strdup(ex)) == NULL)
		fatal("sink_rabbitmq");
	return 0;
}

/* Every entry not yet settled gets res and why. */
static void
rmq_fail_open(struct rmq_ctx *c, enum job_result res, const char *why)
{
	uint32_t i;

	for (i = 0; i < c->b->nentries; i++)
		if (!c->m[i].settled) {
			c->m[i].settled = 1;
			batch_outcome_set(&c->o->r[i], res, "%s", why);
		}
}

int
sink_rabbitmq_batch(const struct batch *b, struct batch_outcome *o)
{
	struct rmq_ctx c;
	const struct sink_conf *s = &b->sink;
	char err[JOB_DETAIL_MAX];
	enum job_result res;
	uint32_t i, code = 0, window;

	memset(&c, 0, sizeof(c));
	c.b = b;
	c.o = o;
	c.deadline = time_mono_ms() + (s->timeout_ms > 0 ? s->timeout_ms :
	    5000);
	if ((c.m = calloc(b->nentries, sizeof(*c.m))) == NULL)
		fatal("sink_rabbitmq");
	window = s->u.rabbitmq.max_inflight > 0 ? s->u.rabbitmq.max_inflight :
	    256;

	/* Each entry's message; one that cannot be built is settled. */
	for (i = 0; i < b->nentries; i++)
		if (qmsg_build(&c.m[i].q, &b->entries[i], s->inline_max_bytes,
		    err, sizeof(err)) == -1) {
			c.m[i].settled = 1;
			batch_outcome_set(&o->r[i], JOB_ERROR, "%s", err);
		}

	if (s->u.rabbitmq.url == NULL || s->u.rabbitmq.exchange == NULL) {
		rmq_fail_open(&c, JOB_PERMANENT, "rabbitmq sink has no url or "
		    "exchange");
		goto done;
	}
	if (rmq_open(s, c.deadline, err, sizeof(err), &res) == -1 ||
	    rmq_exchange(s, err, sizeof(err), &res, &code) == -1) {
		o->http_status = code;
		rmq_fail_open(&c, res, err);
		goto done;
	}

	/* Publish in order, at most window awaiting their confirm.  A
	 * failed wait or publish has settled every entry left, those not
	 * yet published too, and closed the connection. */
	for (i = 0; i < b->nentries; i++) {
		if (c.m[i].settled)
			continue;
		while (c.outstanding >= window)
			if (rmq_wait(&c) != 0)
				goto done;
		if (rmq_publish(&c, i) == -1)
			goto done;
	}
	while (c.outstanding > 0)
		if (rmq_wait(&c) != 0)
			goto done;
	amqp_maybe_release_buffers(rmq.conn);
done:
	for (i = 0; i < b->nentries; i++)
		qmsg_free(&c.m[i].q);
	free(c.m);
	return o->n > 0 ? o->r[0].result : JOB_OK;
}

/* Publish entry i; -1 when the connection failed (its unsettled entries
 * settled, the connection closed). */
static int
rmq_publish(struct rmq_ctx *c, uint32_t i)
{
	const struct batch_entry *e = &c->b->entries[i];
	const struct sink_conf *s = &c->b->sink;
	struct rmq_msg *m = &c->m[i];
	amqp_basic_properties_t p;
	amqp_table_entry_t h[QMSG_MAX_ATTRS];
	amqp_bytes_t body;
	char *rkey = NULL, err[JOB_DETAIL_MAX];
	int a, rc;

	memset(&p, 0, sizeof(p));
	p._flags = AMQP_BASIC_CONTENT_TYPE_FLAG | AMQP_BASIC_DELIVERY_MODE_FLAG |
	    AMQP_BASIC_MESSAGE_ID_FLAG | AMQP_BASIC_TIMESTAMP_FLAG |
	    AMQP_BASIC_APP_ID_FLAG | AMQP_BASIC_HEADERS_FLAG;
	p.content_type = amqp_cstring_bytes(RMQ_CONTENT_TYPE);
	p.delivery_mode = AMQP_DELIVERY_PERSISTENT;
	p.message_id = amqp_cstring_bytes(e->hook_id);
	p.timestamp = e->received_at / 1000;
	p.app_id = amqp_cstring_bytes("ankusa");
	for (a = 0; a < m->q.nattrs; a++) {
		h[a].key = amqp_cstring_bytes(m->q.attrs[a].name);
		h[a].value.kind = AMQP_FIELD_KIND_UTF8;
		h[a].value.value.bytes = amqp_cstring_bytes(
		    m->q.attrs[a].value);
	}
	p.headers.num_entries = m->q.nattrs;
	p.headers.entries = h;
	if (s->u.rabbitmq.routing_key == NULL &&
	    asprintf(&rkey, "%s.%s", e->tenant, e->source) == -1)
		fatal("sink_rabbitmq");
	body.bytes = m->q.json;
	body.len = m->q.jsonlen;
	rc = amqp_basic_publish(rmq.conn, RMQ_CHANNEL,
	    amqp_cstring_bytes(s->u.rabbitmq.exchange),
	    amqp_cstring_bytes(rkey != NULL ? rkey : s->u.rabbitmq.routing_key),
	    1, 0, &p, body);
	free(rkey);
	if (rc != AMQP_STATUS_OK) {
		snprintf(err, sizeof(err), "rabbitmq publish failed: %s",
		    amqp_error_string2(rc));
		rmq_fail_open(c, JOB_ERROR, err);
		rmq_close(0);
		return -1;
	}
	m->tag = rmq.next_tag++;
	c->outstanding++;
	return 0;
}

/* Entries confirmed by tag (and those before it, when multiple): ok, or
 * an error on a nack or after a return. */
static void
rmq_settle(struct rmq_ctx *c, uint64_t tag, int multiple, int ack)
{
	struct rmq_msg *m;
	uint32_t i;

	for (i = 0; i < c->b->nentries; i++) {
		m = &c->m[i];
		if (m->settled || m->tag == 0 ||
		    (multiple ? m->tag > tag : m->tag != tag))
			continue;
		m->settled = 1;
		c->outstanding--;
		if (!ack)
			batch_outcome_set(&c->o->r[i], JOB_ERROR,
			    "rabbitmq basic.nack (the broker did not take it)");
		else if (m->returned)
			batch_outcome_set(&c->o->r[i], JOB_ERROR, "%s", m->why);
		else
			batch_outcome_set(&c->o->r[i], JOB_OK,
			    "rabbitmq confirmed");
	}
}

/* A basic.return: the first published entry of its message id not yet
 * settled nor returned (returns come in publish order). */
static void
rmq_returned(struct rmq_ctx *c, const amqp_basic_return_t *r)
{
	amqp_message_t msg;
	amqp_rpc_reply_t rr;
	const amqp_bytes_t *id;
	struct rmq_msg *m;
	uint32_t i;

	rr = amqp_read_message(rmq.conn, RMQ_CHANNEL, &msg, 0);
	if (rr.reply_type != AMQP_RESPONSE_NORMAL)
		return;		/* the next wait sees the broken connection */
	id = (msg.properties._flags & AMQP_BASIC_MESSAGE_ID_FLAG) ?
	    &msg.properties.message_id : NULL;
	for (i = 0; id != NULL && i < c->b->nentries; i++) {
		m = &c->m[i];
		if (m->settled || m->tag == 0 || m->returned ||
		    strlen(c->b->entries[i].hook_id) != id->len ||
		    memcmp(c->b->entries[i].hook_id, id->bytes, id->len) != 0)
			continue;
		m->returned = 1;
		snprintf(m->why, sizeof(m->why), "rabbitmq returned %u: %.*s "
		    "(exchange %.*s, routing key %.*s)", r->reply_code,
		    (int)r->reply_text.len, (const char *)r->reply_text.bytes,
		    (int)r->exchange.len, (const char *)r->exchange.bytes,
		    (int)r->routing_key.len,
		    (const char *)r->routing_key.bytes);
		break;
	}
	amqp_destroy_message(&msg);
}

/* Read one frame of confirms: 0, or -1 when the connection (or the
 * channel) is gone or the deadline passed, the entries awaiting their
 * confirm settled and the connection closed. */
static int
rmq_wait(struct rmq_ctx *c)
{
	amqp_frame_t f;
	amqp_rpc_reply_t r;
	struct timeval tv;
	char err[JOB_DETAIL_MAX];
	uint32_t code = 0;
	int rc;

	/* In slices of a second, the watch called between them. */
	for (;;) {
		rmq_tv(c->deadline, &tv);
		if (tv.tv_sec >= RMQ_WATCH_MS / 1000) {
			tv.tv_sec = RMQ_WATCH_MS / 1000;
			tv.tv_usec = 0;
		}
		rc = amqp_simple_wait_frame_noblock(rmq.conn, &f, &tv);
		if (rc != AMQP_STATUS_TIMEOUT || time_mono_ms() >= c->deadline)
			break;
		if (rmq_watch != NULL)
			(void)rmq_watch();
	}
	if (rc == AMQP_STATUS_TIMEOUT) {
		snprintf(err, sizeof(err), "rabbitmq no confirm within %llu "
		    "ms", (unsigned long long)c->b->sink.timeout_ms);
		goto fail;
	}
	if (rc != AMQP_STATUS_OK) {
		snprintf(err, sizeof(err), "rabbitmq connection lost: %s",
		    amqp_error_string2(rc));
		goto fail;
	}
	if (f.frame_type != AMQP_FRAME_METHOD)
		return 0;	/* a stray content frame: not ours */
	switch (f.payload.method.id) {
	case AMQP_BASIC_ACK_METHOD: {
		amqp_basic_ack_t *a = f.payload.method.decoded;

		rmq_settle(c, a->delivery_tag, a->multiple, 1);
		return 0;
	}
	case AMQP_BASIC_NACK_METHOD: {
		amqp_basic_nack_t *n = f.payload.method.decoded;

		rmq_settle(c, n->delivery_tag, n->multiple, 0);
		return 0;
	}
	case AMQP_BASIC_RETURN_METHOD:
		rmq_returned(c, f.payload.method.decoded);
		return 0;
	case AMQP_CHANNEL_CLOSE_METHOD:
	case AMQP_CONNECTION_CLOSE_METHOD:
		memset(&r, 0, sizeof(r));
		r.reply_type = AMQP_RESPONSE_SERVER_EXCEPTION;
		r.reply = f.payload.method;
		rmq_reply(r, "rabbitmq", err, sizeof(err), &code);
		c->o->http_status = code;
		rmq_fail_open(c, code == AMQP_NOT_FOUND ? JOB_PERMANENT :
		    JOB_ERROR, err);
		rmq_close(0);
		return -1;
	default:
		log_debug("rabbitmq: method %08x ignored",
		    f.payload.method.id);
		return 0;
	}
fail:
	rmq_fail_open(c, JOB_ERROR, err);
	rmq_close(0);
	return -1;
}
