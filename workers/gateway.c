/* SPDX-License-Identifier: ISC */
/*
 * gateway.c: ankusa-gateway, the read-only claim gateway.
 *
 * The master forks and execs a small pool of these when claim_check is
 * configured.  Each finds its channel to the master on fd 3, the claim
 * listener (claim_check.ip:claim_check.port, opened by the master and
 * shared by the pool) on fd 4 and the config text the master parsed on
 * fd 5.  It serves, with libevent's evhttp (nothing but headers comes in):
 *
 *   GET|HEAD /v1/claims/{ref}
 *     ref a claim reference whole (common/claimref.h), its colons as
 *     they are or percent-encoded:
 *     urn:ankusa:claim:v2:<tenant>:<claim_id>:<exp_unix>:<signature>,
 *     or a v1 one with claim_check.accept_v1
 *   GET|HEAD /v1/claims/{tenant}/{claim_id}
 *     the v1 form, only with claim_check.accept_v1 and a v1 claim id
 *
 *     200 application/octet-stream, the claim's bytes
 *     206 for one satisfiable "Range: bytes=a-b | a- | -n", with
 *         Content-Range: bytes a-b/size
 *     416 for an unsatisfiable one, with "Content-Range: bytes *" and
 *         the size after a slash
 *     400 {"error":"invalid_tenant"} | {"error":"invalid_id"}
 *     400 {"error":"bad_signature"}: a v2 reference not signed with
 *         claim_check.signing_key, or a v1 one without accept_v1
 *     410 {"error":"ref_expired"}: a good v2 reference past its expiry
 *     401 {"error":"unauthenticated"}, WWW-Authenticate: Bearer: with
 *         claim_check.auth.tokens, a request that presents none of them
 *         (common/bearer.h), before anything else of it is read
 *     404 {"error":"not_found"}: no such pack, position or claim (and
 *         any other path)
 *     503 {"error":"store_unavailable"}, Retry-After: 1: the store failed
 *     503 {"error":"overload"}, Retry-After: 1, Connection: close: the
 *         connection is one past GATEWAY_MAX_CONNS (gateway_conn.c)
 *   other methods: 405 {"error":"method_not_allowed"}, Allow: GET, HEAD
 *
 * A Range header with several ranges, another unit or bad syntax is
 * ignored (RFC 9110 allows it): the answer is a 200 with the whole claim.
 *
 * The reference is checked first (its signature, then its expiry), so a
 * stranger's guess costs no read of the store.  The claim id names its
 * pack (common/pack.h): its locator's time gives the day, its bits the
 * pack id and the position, and the whole id must be the entry's name
 * (a v2 id's own 128 random bits with it), so a lookup is pack_locate()'s
 * two or three small reads of the pack, then one read of the bytes asked
 * for.  A pack that is not what we write (a bad header, an index entry
 * pointing nowhere, a claim named otherwise) is logged and answered 404:
 * trying again cannot help.
 *
 * Reads are synchronous: a slow store holds this process's loop, which
 * is why a pool serves the listener.  A claim's bytes are streamed, never
 * held whole: read GATEWAY_CHUNK bytes at a time from the store (a pread
 * of the local pack, a ranged GET of the S3 object) and handed to evhttp
 * as one piece of the answer (evhttp_send_reply_start, _chunk, _end; the
 * body is sent with its Content-Length, not chunked), the next read only
 * when the connection's output has drained below GATEWAY_LOW_WATER (its
 * write low-water mark, whose write callback evhttp calls).  A
 * connection so holds at most GATEWAY_LOW_WATER + GATEWAY_CHUNK bytes of
 * a claim, however large.  A store that fails after the head was sent
 * ends the answer short and closes the connection, so the client sees a
 * body shorter than its Content-Length; a client that reads nothing is
 * dropped after GATEWAY_WRITE_TIMEOUT (gateway_conn.c, which also caps
 * the connections at GATEWAY_MAX_CONNS: one more is answered 503
 * {"error":"overload"} with Retry-After: 1 and closed).
 *
 * Lifecycle as the edge's: exit at once when the master's channel closes;
 * on MSG_CHILD_RETIRE stop accepting, finish the answers in hand, exit, at
 * most GATEWAY_RETIRE_CAP seconds later.  A frame from the master that
 * makes no sense is fatal.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sysexits.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "bearer.h"
#include "blob.h"
#include "claimref.h"
#include "clock.h"
#include "conf.h"
#include "egress.h"
#include "gateway_conn.h"
#include "sandbox.h"
#include "ids.h"
#include "job.h"
#include "log.h"
#include "msg.h"
#include "pack.h"
#include "proc.h"

#define GATEWAY_PREFIX		"/v1/claims/"
#define GATEWAY_CHUNK		262144	/* bytes of a claim read at a time */
#define GATEWAY_LOW_WATER	65536	/* output below this: read more */
#define GATEWAY_STORE_TIMEOUT	10000	/* ms per store request */
#define GATEWAY_RETIRE_CAP	30	/* s from MSG_CHILD_RETIRE to exit */
#define GATEWAY_MAX_HEADERS	16384	/* bytes of a request head */

/* What a Range header asks for. */
enum gateway_range {
	RANGE_NONE = 0,		/* none, or ignored: the whole claim */
	RANGE_ONE,		/* one satisfiable range */
	RANGE_UNSATISFIABLE,	/* 416 */
};

/* An answer being streamed, from its head to its end or its close. */
struct gateway_stream {
	struct evhttp_request	*req;
	struct evbuffer		*buf;		/* the piece being handed */
	struct pack_claim	 claim;
	uint64_t		 off;		/* in the pack, of the next byte */
	uint64_t		 left;		/* bytes still to send */
};

/* A reader of one pack for pack_locate(). */
struct gateway_read {
	const char	*key;
	char		 err[BLOB_ERR_MAX];
};

static struct event_base		*base;
static struct chan			*master;
static struct conf			*conf;
static struct claim_store		 store_conf;
static struct claimref_key		 refkey;	/* signing_key */
static struct blob_store		*store;
static struct evhttp			*http;
static struct evhttp_bound_socket	*listener;	/* NULL once retired */
static struct event			*ev_retire_cap;
static int				 inflight;	/* answers not yet sent */
static int				 retiring;
static uint32_t				 gen;

static void	usage(void) __attribute__((noreturn));
static void	gateway_master_msg(struct chan *, struct msg *, void *);
static void	gateway_master_err(struct chan *, int, void *);
static void	gateway_retire(void);
static void	gateway_maybe_exit(void);
static void	gateway_retire_cap_cb(evutil_socket_t, short, void *);
static void	gateway_request(struct evhttp_request *, void *);
static void	gateway_complete(struct evhttp_request *, void *);
static void	gateway_error(struct evhttp_request *, int, const char *);
static int	gateway_claim(struct evhttp_request *, const char *,
		    struct pack_claim *);
static struct blob_store *gateway_store(char *, size_t);
static enum pack_status gateway_pack_read(void *, uint64_t, size_t, void *);
static enum gateway_range gateway_range_parse(const char *, uint64_t,
		    uint64_t *, uint64_t *);
static void	gateway_stream_start(struct evhttp_request *, int,
		    const char *, const struct pack_claim *, uint64_t,
		    uint64_t);
static enum blob_status gateway_stream_read(struct gateway_stream *);
static void	gateway_stream_more(struct evhttp_connection *, void *);
static void	gateway_stream_end(struct gateway_stream *, int);
static void	gateway_stream_closed(void *);

static void
usage(void)
{
	fprintf(stderr, "usage: ankusa-gateway -g gen -i index [-djv]\n");
	exit(EX_USAGE);
}

int
main(int argc, char *argv[])
{
	char err[BLOB_ERR_MAX];
	uint32_t idx = 0, sandbox;
	int vflag;

	if (proc_child_start(argc, argv, "ankusa-gateway", "gateway", &gen, &idx,
	    &vflag) == -1)
		usage();

	conf = proc_child_conf(CONF_ROLE_GATEWAY, vflag);
	egress_configure(conf);	/* the s3 store's connections */
	if (!conf->claim_check.enabled) {
		log_warnx("config: no claim_check section, nothing to serve");
		exit(EX_CONFIG);
	}
	claim_store_from_conf(&store_conf, conf);
	if (conf->claim_check.signing_key == NULL)
		fatalx("config: no claim_check.signing_key");
	refkey.key = (const unsigned char *)conf->claim_check.signing_key;
	refkey.keylen = strlen(conf->claim_check.signing_key);
	refkey.ttl_s = conf->claim_check.ref_ttl_s;

	/* A client gone mid-write is an error value, not a signal. */
	signal(SIGPIPE, SIG_IGN);
	if (curl_global_init(CURL_GLOBAL_DEFAULT) != CURLE_OK)
		fatalx("curl_global_init failed");
	/* A store that cannot be opened now is a 503 until it can. */
	if (gateway_store(err, sizeof(err)) == NULL)
		log_warnx("%s", err);

	if ((base = event_base_new()) == NULL)
		fatalx("event_base_new");
	if ((http = evhttp_new(base)) == NULL)
		fatalx("evhttp_new");
	/* Every method reaches us, so that the others get a 405, not
	 * evhttp's 501; none may bring a body. */
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_HEAD |
	    EVHTTP_REQ_POST | EVHTTP_REQ_PUT | EVHTTP_REQ_DELETE |
	    EVHTTP_REQ_OPTIONS | EVHTTP_REQ_TRACE | EVHTTP_REQ_CONNECT |
	    EVHTTP_REQ_PATCH);
	evhttp_set_timeout(http, GATEWAY_TIMEOUT);
	evhttp_set_max_headers_size(http, GATEWAY_MAX_HEADERS);
	evhttp_set_max_body_size(http, 0);
	evhttp_set_gencb(http, gateway_request, NULL);
	if (fcntl(PROC_FD_LISTEN, F_SETFL,
	    fcntl(PROC_FD_LISTEN, F_GETFL) | O_NONBLOCK) == -1)
		fatal("listener fd %d", PROC_FD_LISTEN);
	if ((listener = evhttp_accept_socket_with_handle(http,
	    PROC_FD_LISTEN)) == NULL)
		fatalx("listener fd %d: cannot accept on it", PROC_FD_LISTEN);
	gateway_conn_init(base, http, listener, PROC_FD_LISTEN);
	if ((ev_retire_cap = evtimer_new(base, gateway_retire_cap_cb,
	    NULL)) == NULL)
		fatalx("event_new");

	/* Everything is loaded: from here on the sandbox's rules hold. */
	sandbox = sandbox_enter(SANDBOX_GATEWAY,
	    strcmp(store_conf.type, "local") == 0 ? store_conf.root : NULL);
	master = chan_new(base, PROC_FD_CHAN, gateway_master_msg,
	    gateway_master_err, NULL);
	proc_child_hello(master, "gateway", gen, sandbox);

	log_debug("started, store %s", store_conf.type);
	event_base_dispatch(base);

	/* Only a retire ends the loop. */
	chan_flush_blocking(master);
	chan_free(master);
	evhttp_free(http);
	event_free(ev_retire_cap);
	event_base_free(base);
	blob_close(store);
	conf_free(conf);
	curl_global_cleanup();
	log_info("retired");
	return 0;
}

/* The master. */

static void
gateway_master_msg(struct chan *c, struct msg *m, void *arg)
{
	switch (m->type) {
	case MSG_CHILD_RETIRE:
		if (msg_end(m) == -1)
			fatalx("bad %s from the master",
			    msg_type_name(m->type));
		gateway_retire();
		break;
	default:
		fatalx("unexpected %s from the master",
		    msg_type_name(m->type));
	}
}

/* The master is gone: a child never outlives it. */
static void
gateway_master_err(struct chan *c, int err, void *arg)
{
	proc_child_orphaned(err);
}

static void
gateway_retire(void)
{
	struct timeval tv = { GATEWAY_RETIRE_CAP, 0 };

	if (retiring)
		return;
	retiring = 1;
	log_info("retiring: %d answers in hand", inflight);
	gateway_conn_stop();
	evhttp_del_accept_socket(http, listener);	/* closes fd 4 */
	listener = NULL;
	evtimer_add(ev_retire_cap, &tv);
	gateway_maybe_exit();
}

/* Idle keep-alive connections are not waited for: they hold no answer. */
static void
gateway_maybe_exit(void)
{
	if (retiring && inflight == 0)
		event_base_loopbreak(base);
}

static void
gateway_retire_cap_cb(evutil_socket_t fd, short ev, void *arg)
{
	log_warnx("retiring: %d answers still in hand after %d s, leaving "
	    "them", inflight, GATEWAY_RETIRE_CAP);
	event_base_loopbreak(base);
}

/* The store. */

static struct blob_store *
gateway_store(char *err, size_t errlen)
{
	if (store == NULL &&
	    (store = blob_open(&store_conf, err, errlen)) != NULL)
		store->timeout_ms = GATEWAY_STORE_TIMEOUT;
	return store;
}

static enum pack_status
gateway_pack_read(void *arg, uint64_t off, size_t len, void *buf)
{
	struct gateway_read *r = arg;

	switch (blob_get(store, r->key, off, len, buf, r->err,
	    sizeof(r->err))) {
	case BLOB_OK:
		return PACK_OK;
	case BLOB_NOTFOUND:
		return PACK_NOTFOUND;
	case BLOB_RANGE:
		return PACK_DAMAGED;
	default:
		return PACK_IOERR;
	}
}

/* Requests. */

/*
 * Range (RFC 9110 14.1.2), one range of unit bytes: "a-b", "a-" or "-n"
 * over a claim of size bytes.  Anything else is RANGE_NONE (ignored).
 */
static enum gateway_range
gateway_range_parse(const char *h, uint64_t size, uint64_t *ap, uint64_t *bp)
{
	uint64_t a = 0, b = 0, n;
	const char *p;
	int have_a = 0, have_b = 0, digits;

	if (h == NULL || strncasecmp(h, "bytes=", 6) != 0)
		return RANGE_NONE;
	p = h + 6;
	while (*p == ' ' || *p == '\t')
		p++;
	if (strchr(p, ',') != NULL)
		return RANGE_NONE;	/* several ranges: the whole claim */
	for (digits = 0; isdigit((unsigned char)*p); p++, digits++) {
		if (digits == 19)
			return RANGE_NONE;
		a = a * 10 + (*p - '0');
		have_a = 1;
	}
	if (*p++ != '-')
		return RANGE_NONE;
	for (digits = 0; isdigit((unsigned char)*p); p++, digits++) {
		if (digits == 19)
			return RANGE_NONE;
		b = b * 10 + (*p - '0');
		have_b = 1;
	}
	while (*p == ' ' || *p == '\t')
		p++;
	if (*p != '\0' || (!have_a && !have_b))
		return RANGE_NONE;
	if (!have_a) {
		/* A suffix: the last b bytes. */
		n = b;
		if (n == 0 || size == 0)
			return RANGE_UNSATISFIABLE;
		*ap = n >= size ? 0 : size - n;
		*bp = size - 1;
		return RANGE_ONE;
	}
	if (have_b && b < a)
		return RANGE_NONE;	/* invalid: ignored */
	if (a >= size)
		return RANGE_UNSATISFIABLE;
	*ap = a;
	*bp = !have_b || b >= size ? size - 1 : b;
	return RANGE_ONE;
}

static void
gateway_complete(struct evhttp_request *req, void *arg)
{
	inflight--;
	gateway_maybe_exit();
}

static void
gateway_error(struct evhttp_request *req, int status, const char *error)
{
	struct evkeyvalq *oh = evhttp_request_get_output_headers(req);
	struct evbuffer *b;
	const char *reason;

	switch (status) {
	case 400:
		reason = "Bad Request";
		break;
	case 401:
		reason = "Unauthorized";
		evhttp_add_header(oh, "WWW-Authenticate", "Bearer");
		break;
	case 404:
		reason = "Not Found";
		break;
	case 410:
		reason = "Gone";
		break;
	case 405:
		reason = "Method Not Allowed";
		evhttp_add_header(oh, "Allow", "GET, HEAD");
		break;
	default:
		reason = "Service Unavailable";
		evhttp_add_header(oh, "Retry-After", "1");
		break;
	}
	if ((b = evbuffer_new()) == NULL)
		fatalx("evbuffer_new");
	evbuffer_add_printf(b, "{\"error\":\"%s\"}", error);
	evhttp_add_header(oh, "Content-Type", "application/json");
	if (evhttp_request_get_command(req) == EVHTTP_REQ_HEAD) {
		char cl[32];

		snprintf(cl, sizeof(cl), "%zu", evbuffer_get_length(b));
		evhttp_add_header(oh, "Content-Length", cl);
	}
	evhttp_send_reply(req, status, reason, b);
	evbuffer_free(b);
}

static void
gateway_request(struct evhttp_request *req, void *arg)
{
	struct evkeyvalq *oh = evhttp_request_get_output_headers(req);
	struct gateway_read rd;
	struct pack_claim claim;
	char hdr[128], err[BLOB_ERR_MAX];
	enum gateway_range range;
	enum pack_status ps;
	uint64_t off, a = 0, b_end = 0;
	uint32_t len;
	size_t n;
	int head = evhttp_request_get_command(req) == EVHTTP_REQ_HEAD;

	inflight++;
	evhttp_request_set_on_complete_cb(req, gateway_complete, NULL);
	if (!gateway_conn_admit(req)) {
		evhttp_add_header(oh, "Connection", "close");
		gateway_error(req, 503, "overload");
		return;
	}
	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET && !head) {
		gateway_error(req, 405, "method_not_allowed");
		return;
	}
	if (conf->claim_check.ntokens > 0 &&
	    bearer_check(conf->claim_check.tokens, conf->claim_check.ntokens,
	    evhttp_find_header(evhttp_request_get_input_headers(req),
	    "Authorization")) == NULL) {
		gateway_error(req, 401, "unauthenticated");
		return;
	}

	if (gateway_claim(req, evhttp_uri_get_path(
	    evhttp_request_get_evhttp_uri(req)), &claim) == -1)
		return;

	if (gateway_store(err, sizeof(err)) == NULL) {
		log_warnx("claim %s/%s: %s", claim.tenant, claim.id, err);
		gateway_error(req, 503, "store_unavailable");
		return;
	}
	memset(&rd, 0, sizeof(rd));
	rd.key = claim.key;
	ps = pack_locate(gateway_pack_read, &rd, &claim, &off, &len);
	switch (ps) {
	case PACK_OK:
		break;
	case PACK_NOTFOUND:
		log_debug("claim %s/%s: not found (%s)", claim.tenant, claim.id,
		    rd.err[0] != '\0' ? rd.err : "not in its pack");
		gateway_error(req, 404, "not_found");
		return;
	case PACK_DAMAGED:
		log_warnx("claim %s/%s: pack %s is damaged%s%s", claim.tenant,
		    claim.id, claim.key, rd.err[0] != '\0' ? ": " : "",
		    rd.err);
		gateway_error(req, 404, "not_found");
		return;
	default:
		log_warnx("claim %s/%s: %s", claim.tenant, claim.id, rd.err);
		gateway_error(req, 503, "store_unavailable");
		return;
	}

	range = gateway_range_parse(evhttp_find_header(
	    evhttp_request_get_input_headers(req), "Range"), len, &a, &b_end);
	evhttp_add_header(oh, "Accept-Ranges", "bytes");
	if (range == RANGE_UNSATISFIABLE) {
		snprintf(hdr, sizeof(hdr), "bytes */%" PRIu32, len);
		evhttp_add_header(oh, "Content-Range", hdr);
		evhttp_add_header(oh, "Content-Length", "0");
		evhttp_send_reply(req, 416, "Range Not Satisfiable", NULL);
		return;
	}
	if (range == RANGE_NONE) {
		a = 0;
		b_end = len > 0 ? len - 1 : 0;
	}
	n = len == 0 ? 0 : b_end - a + 1;

	snprintf(hdr, sizeof(hdr), "\"%s\"", claim.id);
	evhttp_add_header(oh, "ETag", hdr);
	evhttp_add_header(oh, "Content-Type", "application/octet-stream");
	snprintf(hdr, sizeof(hdr), "%zu", n);
	evhttp_add_header(oh, "Content-Length", hdr);
	if (range == RANGE_ONE) {
		snprintf(hdr, sizeof(hdr), "bytes %" PRIu64 "-%" PRIu64 "/%"
		    PRIu32, a, b_end, len);
		evhttp_add_header(oh, "Content-Range", hdr);
	}
	if (head || n == 0) {
		evhttp_send_reply(req, range == RANGE_ONE ? 206 : 200,
		    range == RANGE_ONE ? "Partial Content" : "OK", NULL);
		return;
	}

	log_debug("claim %s/%s: %s %zu bytes", claim.tenant, claim.id,
	    range == RANGE_ONE ? "206" : "200", n);
	gateway_stream_start(req, range == RANGE_ONE ? 206 : 200,
	    range == RANGE_ONE ? "Partial Content" : "OK", &claim, off + a, n);
}

/*
 * The claim a request's path names, its reference checked: 0, or -1 once
 * the refusal is answered.  /v1/claims/{ref}, or /v1/claims/{tenant}/{id}
 * (v1); nothing more, nothing less.
 */
static int
gateway_claim(struct evhttp_request *req, const char *path,
    struct pack_claim *claim)
{
	struct claimref ref;
	enum claimref_status st;
	const char *rest, *slash;
	char *dec = NULL, buf[CLAIMREF_MAX + 1];
	size_t n;

	if (path == NULL ||
	    strncmp(path, GATEWAY_PREFIX, strlen(GATEWAY_PREFIX)) != 0) {
		gateway_error(req, 404, "not_found");
		return -1;
	}
	rest = path + strlen(GATEWAY_PREFIX);
	if ((slash = strchr(rest, '/')) != NULL) {
		/* The v1 form: a tenant, a slash, an id. */
		n = slash - rest;
		if (strchr(slash + 1, '/') != NULL) {
			gateway_error(req, 404, "not_found");
			return -1;
		}
		if (n == 0 || n > CONF_ID_MAX) {
			gateway_error(req, 400, "invalid_tenant");
			return -1;
		}
		/* One character too many is enough to refuse a long id. */
		snprintf(buf, sizeof(buf), CLAIMREF_V1_PREFIX "%.*s:%.*s",
		    (int)n, rest, PACK_ID_MAX + 1, slash + 1);
	} else {
		if (strchr(rest, '%') != NULL &&
		    (dec = evhttp_uridecode(rest, 0, NULL)) != NULL)
			rest = dec;
		snprintf(buf, sizeof(buf), "%s", rest);
		free(dec);
		/* Not a reference at all: no such path. */
		if (strncmp(buf, "urn:", 4) != 0) {
			gateway_error(req, 404, "not_found");
			return -1;
		}
	}
	st = claimref_check(&refkey, conf->claim_check.accept_v1, buf,
	    time_wall_ms() / 1000, &ref);
	if (st == CLAIMREF_BAD_SIGNATURE || st == CLAIMREF_EXPIRED)
		log_debug("claim reference refused: %s", claimref_error(st));
	switch (st) {
	case CLAIMREF_OK:
		break;
	case CLAIMREF_EXPIRED:
		gateway_error(req, 410, claimref_error(st));
		return -1;
	default:
		gateway_error(req, 400, claimref_error(st));
		return -1;
	}
	switch (pack_claim_parse(ref.tenant, ref.id, claim)) {
	case 0:
		break;
	case -1:
		gateway_error(req, 400, "invalid_tenant");
		return -1;
	default:
		gateway_error(req, 400, "invalid_id");
		return -1;
	}
	/*
	 * A v1 reference reads only a v1 id: a v2 claim's own bits are
	 * never optional.  A v2 one reads either: a v1 id in a signed
	 * reference is a claim checked in before references were signed,
	 * whose stored reference its delivery signed (claimref_renew).
	 */
	if (ref.version == 1 && claim->idlen != PACK_ID_V1_LEN) {
		gateway_error(req, 400, "bad_signature");
		return -1;
	}
	return 0;
}

/*
 * The first piece is read before the head is sent, so that a store
 * failing then is still a clean 503 (or 404); then the head, and the
 * rest as the connection takes it.  On its close (the client gone, or
 * dropped by the write timeout) evhttp frees the connection without
 * completing the request: gateway_stream_closed.
 */
static void
gateway_stream_start(struct evhttp_request *req, int code,
    const char *reason, const struct pack_claim *claim, uint64_t off,
    uint64_t len)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(req);
	struct gateway_stream *s;
	enum blob_status bst;

	if ((s = calloc(1, sizeof(*s))) == NULL ||
	    (s->buf = evbuffer_new()) == NULL)
		fatal("gateway: stream");
	s->req = req;
	s->claim = *claim;
	s->off = off;
	s->left = len;
	if ((bst = gateway_stream_read(s)) != BLOB_OK) {
		evbuffer_free(s->buf);
		free(s);
		evhttp_clear_headers(evhttp_request_get_output_headers(req));
		if (bst == BLOB_ERROR)
			gateway_error(req, 503, "store_unavailable");
		else
			gateway_error(req, 404, "not_found");
		return;
	}
	if (gateway_conn_on_close(req, gateway_stream_closed, s) == -1)
		fatalx("gateway: a request without its connection");
	bufferevent_setwatermark(evhttp_connection_get_bufferevent(evcon),
	    EV_WRITE, GATEWAY_LOW_WATER, 0);
	evhttp_send_reply_start(req, code, reason);
	evhttp_send_reply_chunk_with_cb(req, s->buf, gateway_stream_more, s);
}

/* The next piece (GATEWAY_CHUNK bytes at most) into s->buf; a failure is
 * logged. */
static enum blob_status
gateway_stream_read(struct gateway_stream *s)
{
	struct evbuffer_iovec v;
	char err[BLOB_ERR_MAX];
	enum blob_status bst;
	size_t n;

	n = s->left < GATEWAY_CHUNK ? s->left : GATEWAY_CHUNK;
	if (evbuffer_reserve_space(s->buf, n, &v, 1) != 1 || v.iov_len < n)
		fatalx("gateway: evbuffer_reserve_space");
	bst = blob_get(store, s->claim.key, s->off, n, v.iov_base, err,
	    sizeof(err));
	if (bst == BLOB_ERROR) {
		log_warnx("claim %s/%s: %s", s->claim.tenant, s->claim.id, err);
		return bst;
	}
	if (bst != BLOB_OK) {
		log_warnx("claim %s/%s: pack %s is damaged: %s",
		    s->claim.tenant, s->claim.id, s->claim.key, err);
		return bst;
	}
	v.iov_len = n;
	if (evbuffer_commit_space(s->buf, &v, 1) == -1)
		fatalx("gateway: evbuffer_commit_space");
	s->off += n;
	s->left -= n;
	return BLOB_OK;
}

/* The output is below its low-water mark: the next piece, or the end. */
static void
gateway_stream_more(struct evhttp_connection *evcon, void *arg)
{
	struct gateway_stream *s = arg;

	if (s->left == 0) {
		gateway_stream_end(s, 0);
		return;
	}
	if (gateway_stream_read(s) != BLOB_OK) {
		log_warnx("claim %s/%s: answer cut short, %" PRIu64 " bytes "
		    "unsent", s->claim.tenant, s->claim.id, s->left);
		gateway_stream_end(s, 1);
		return;
	}
	evhttp_send_reply_chunk_with_cb(s->req, s->buf, gateway_stream_more, s);
}

/*
 * The answer is whole (or cut: the connection closes after it).  The
 * output drains to empty before evhttp completes the request, so its
 * low-water mark goes back to 0 for the answers after this one.
 */
static void
gateway_stream_end(struct gateway_stream *s, int cut)
{
	struct evhttp_connection *evcon = evhttp_request_get_connection(s->req);

	(void)gateway_conn_on_close(s->req, NULL, NULL);
	bufferevent_setwatermark(evhttp_connection_get_bufferevent(evcon),
	    EV_WRITE, 0, 0);
	if (cut)
		evhttp_add_header(evhttp_request_get_output_headers(s->req),
		    "Connection", "close");
	evhttp_send_reply_end(s->req);
	evbuffer_free(s->buf);
	free(s);
}

/*
 * The connection is freed mid-answer.  evhttp has let go of the request
 * if the connection failed (then it is ours to free) but not if the
 * whole server is being freed (then it frees it).  Either way the answer
 * is over.
 */
static void
gateway_stream_closed(void *arg)
{
	struct gateway_stream *s = arg;

	log_info("claim %s/%s: connection closed with %" PRIu64 " bytes "
	    "unsent", s->claim.tenant, s->claim.id, s->left);
	if (evhttp_request_get_connection(s->req) == NULL)
		evhttp_request_free(s->req);
	evbuffer_free(s->buf);
	free(s);
	inflight--;
	gateway_maybe_exit();
}
