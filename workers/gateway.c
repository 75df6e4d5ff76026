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
 *   GET|HEAD /v1/claims/{tenant}/{claim_id}
 *     200 application/octet-stream, the claim's bytes
 *     206 for one satisfiable "Range: bytes=a-b | a- | -n", with
 *         Content-Range: bytes a-b/size
 *     416 for an unsatisfiable one, with "Content-Range: bytes *" and
 *         the size after a slash
 *     400 {"error":"invalid_tenant"} | {"error":"invalid_id"}
 *     404 {"error":"not_found"}: no such pack, position or claim (and
 *         any other path)
 *     503 {"error":"store_unavailable"}, Retry-After: 1: the store failed
 *   other methods: 405 {"error":"method_not_allowed"}, Allow: GET, HEAD
 *
 * A Range header with several ranges, another unit or bad syntax is
 * ignored (RFC 9110 allows it): the answer is a 200 with the whole claim.
 *
 * The claim id names its pack (common/pack.h): its time gives the day,
 * its bits the pack id and the position, so a lookup is pack_locate()'s
 * two or three small reads of the pack, then one read of the bytes asked
 * for.  A pack that is not what we write (a bad header, an index entry
 * pointing nowhere, a claim named otherwise) is logged and answered 404:
 * trying again cannot help.
 *
 * Reads are synchronous: a slow store holds this process's loop, which
 * is why a pool serves the listener.  The claim's bytes are held in
 * memory while they are sent (a claim is at most a pack,
 * claim_check.pack_max_bytes).
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
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "blob.h"
#include "conf.h"
#include "egress.h"
#include "ids.h"
#include "job.h"
#include "log.h"
#include "msg.h"
#include "pack.h"
#include "proc.h"

#define GATEWAY_PREFIX		"/v1/claims/"
#define GATEWAY_TIMEOUT		60	/* s: evhttp's read/write timeout */
#define GATEWAY_STORE_TIMEOUT	10000	/* ms per store request */
#define GATEWAY_RETIRE_CAP	30	/* s from MSG_CHILD_RETIRE to exit */
#define GATEWAY_MAX_HEADERS	16384	/* bytes of a request head */

/* What a Range header asks for. */
enum gateway_range {
	RANGE_NONE = 0,		/* none, or ignored: the whole claim */
	RANGE_ONE,		/* one satisfiable range */
	RANGE_UNSATISFIABLE,	/* 416 */
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
static struct blob_store *gateway_store(char *, size_t);
static enum pack_status gateway_pack_read(void *, uint64_t, size_t, void *);
static enum gateway_range gateway_range_parse(const char *, uint64_t,
		    uint64_t *, uint64_t *);
static void	gateway_free_cb(const void *, size_t, void *);

static void
usage(void)
{
	fprintf(stderr, "usage: ankusa-gateway -g gen -i index [-dv]\n");
	exit(EX_USAGE);
}

int
main(int argc, char *argv[])
{
	struct msg m;
	char err[BLOB_ERR_MAX];
	uint32_t idx = 0;
	int vflag;

	if (proc_child_start(argc, argv, "ankusa-gateway", "gateway", &gen, &idx,
	    &vflag) == -1)
		usage();

	conf = proc_child_conf(vflag);
	egress_configure(conf);	/* the s3 store's connections */
	if (!conf->claim_check.enabled) {
		log_warnx("config: no claim_check section, nothing to serve");
		exit(EX_CONFIG);
	}
	claim_store_from_conf(&store_conf, conf);

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
	if ((ev_retire_cap = evtimer_new(base, gateway_retire_cap_cb,
	    NULL)) == NULL)
		fatalx("event_new");

	master = chan_new(base, PROC_FD_CHAN, gateway_master_msg,
	    gateway_master_err, NULL);
	msg_init(&m, MSG_CHILD_HELLO, 0);
	msg_add_u32(&m, MSG_PROTO_VERSION);
	msg_add_str(&m, "gateway");
	msg_add_u32(&m, gen);
	msg_add_u32(&m, (uint32_t)getpid());
	if (chan_send(master, &m) == -1)
		fatalx("cannot greet the master");
	msg_free(&m);

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
gateway_free_cb(const void *data, size_t len, void *arg)
{
	free(arg);
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
	case 404:
		reason = "Not Found";
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
	struct evbuffer *b;
	const char *path, *tenant_end;
	char tenant[CONF_ID_MAX + 2], cid[ULID_STRLEN + 2], hdr[96];
	char err[BLOB_ERR_MAX];
	enum gateway_range range;
	enum pack_status ps;
	enum blob_status bst;
	unsigned char *data;
	uint64_t off, a = 0, b_end = 0;
	uint32_t len;
	size_t n;
	int head = evhttp_request_get_command(req) == EVHTTP_REQ_HEAD;

	inflight++;
	evhttp_request_set_on_complete_cb(req, gateway_complete, NULL);
	if (evhttp_request_get_command(req) != EVHTTP_REQ_GET && !head) {
		gateway_error(req, 405, "method_not_allowed");
		return;
	}

	/* /v1/claims/{tenant}/{claim_id}, nothing more, nothing less. */
	path = evhttp_uri_get_path(evhttp_request_get_evhttp_uri(req));
	if (path == NULL ||
	    strncmp(path, GATEWAY_PREFIX, strlen(GATEWAY_PREFIX)) != 0 ||
	    (tenant_end = strchr(path + strlen(GATEWAY_PREFIX), '/')) ==
	    NULL || strchr(tenant_end + 1, '/') != NULL) {
		gateway_error(req, 404, "not_found");
		return;
	}
	n = tenant_end - (path + strlen(GATEWAY_PREFIX));
	if (n == 0 || n > CONF_ID_MAX) {
		gateway_error(req, 400, "invalid_tenant");
		return;
	}
	memcpy(tenant, path + strlen(GATEWAY_PREFIX), n);
	tenant[n] = '\0';
	/* One character too many is enough to refuse a long id. */
	snprintf(cid, sizeof(cid), "%s", tenant_end + 1);
	switch (pack_claim_parse(tenant, cid, &claim)) {
	case 0:
		break;
	case -1:
		gateway_error(req, 400, "invalid_tenant");
		return;
	default:
		gateway_error(req, 400, "invalid_id");
		return;
	}

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

	if ((data = malloc(n)) == NULL) {
		log_warn("claim %s/%s: %zu bytes", claim.tenant, claim.id, n);
		evhttp_clear_headers(oh);
		gateway_error(req, 503, "store_unavailable");
		return;
	}
	bst = blob_get(store, claim.key, off + a, n, data, err, sizeof(err));
	if (bst != BLOB_OK) {
		free(data);
		evhttp_clear_headers(oh);
		if (bst == BLOB_ERROR) {
			log_warnx("claim %s/%s: %s", claim.tenant, claim.id,
			    err);
			gateway_error(req, 503, "store_unavailable");
		} else {
			log_warnx("claim %s/%s: pack %s is damaged: %s",
			    claim.tenant, claim.id, claim.key, err);
			gateway_error(req, 404, "not_found");
		}
		return;
	}
	if ((b = evbuffer_new()) == NULL ||
	    evbuffer_add_reference(b, data, n, gateway_free_cb, data) == -1)
		fatalx("evbuffer");
	log_debug("claim %s/%s: %s %zu bytes", claim.tenant, claim.id,
	    range == RANGE_ONE ? "206" : "200", n);
	evhttp_send_reply(req, range == RANGE_ONE ? 206 : 200,
	    range == RANGE_ONE ? "Partial Content" : "OK", b);
	evbuffer_free(b);
}
