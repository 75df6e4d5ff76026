/* SPDX-License-Identifier: ISC */
/*
 * test_sink.c: the HTTP sink the end-to-end tests and the benchmarks
 * deliver to.
 *
 *   test_sink -p PORT [-a ADDR] [-s SECRET]... [-o RECORD_FILE]
 *
 * Listens on ADDR (127.0.0.1) and PORT (0: any; the port is printed as
 * "test_sink: listening on ADDR:PORT" on stdout either way).  Every
 * request outside /_ctl/ is counted and, with -o, recorded as one JSON
 * line, written out at the end of the loop pass that read the request
 * (before its answer leaves: one write for all the requests of a pass) and
 * before any /_ctl/ request is answered:
 *
 *   {"seq":N,"t":<wall ms.us>,"method":"POST","path":"/hook-a","status":200,
 *    "x-ankusa-id":..,"x-ankusa-idempotency-key":..,"x-ankusa-tenant":..,
 *    "x-ankusa-source":..,"x-ankusa-dedupe-key":..,"x-ankusa-replay-id":..,
 *    "x-order":..,"content-type":..,"webhook-id":..,
 *    "x-ankusa-received-at":..,"x-ankusa-body-sha256":..,
 *    "x-ankusa-verification":..,"x-ankusa-verification-flagged":..,
 *    "traceparent":..,"tracestate":..,"n-traceparent":N,"n-tracestate":N,
 *    "sha256":"<hex of the body>","size":N,"sig":"ok"|"bad"|"none"}
 *
 * (a header that is absent is null; "status" is the answer chosen; "t" is
 * the time the request was read, in ms with three decimals: the
 * benchmarks take latencies of well under a millisecond from it).  "sig"
 * is the Standard Webhooks check of webhook-id, webhook-timestamp and
 * webhook-signature against every -s secret (whsec_ + base64, else the raw
 * bytes): "ok" if any v1 token matches any secret, "none" without a
 * webhook-signature header, else "bad" (also with no -s at all).  The
 * timestamp's age is not checked: a retry signs anew, but a record is
 * about what was sent.
 *
 * Control, on the same port:
 *   POST /_ctl/mode   {"path": "/hook-a" | "*", "status": 200,
 *                      "delay_ms": 0, "hang": false, "fail_first": 0,
 *                      "fail_status": 503, "retry_after": null | N | "date"}
 *                     how requests to that path are answered from now on
 *                     (a path's own mode, else "*", else 200 at once);
 *                     fail_first N: the next N requests to it get
 *                     fail_status, then status; retry_after is sent as
 *                     Retry-After on every non-2xx answer of the mode;
 *                     hang: never answer, hold the connection until the
 *                     client goes; delay_ms: answer after a timer (the
 *                     loop goes on serving others meanwhile).
 *   GET  /_ctl/stats  {"received": N, "by_path": {"/hook-a": N, ...}}
 *   POST /_ctl/reset  forget modes and counts, truncate the record file.
 *
 * One event loop, any number of keep-alive connections (the listen
 * backlog is 4096 and the descriptor limit is raised to its hard limit).
 * SIGINT or SIGTERM ends it.  Exits 1 on a setup error.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/sha.h>

#include "b64.h"
#include "clock.h"

#define TS_MAX_SECRETS	16
#define TS_BACKLOG	4096
#define TS_TIMEOUT_S	300	/* evhttp's idle and I/O timeout */
#define TS_WB_CHUNK	(1 << 20)	/* records between write-backs */

/* How one path (or "*") is answered. */
struct ts_mode {
	TAILQ_ENTRY(ts_mode)	 entry;
	char			*path;
	int			 status;
	int			 delay_ms;
	int			 hang;
	long			 fail_first;
	int			 fail_status;
	char			*retry_after;	/* NULL: none */
	long			 seen;		/* requests since set */
};

/* A request not answered yet: delayed or hung. */
struct ts_pending {
	TAILQ_ENTRY(ts_pending)	 entry;
	struct evhttp_request	*req;
	struct evhttp_connection *evcon;
	struct event		*timer;		/* NULL: hung */
	struct event		*watch;		/* EV_CLOSED on the socket */
	int			 status;
	char			*retry_after;
};

TAILQ_HEAD(ts_modes, ts_mode);
TAILQ_HEAD(ts_pendings, ts_pending);

static struct event_base	*ts_base;
static struct ts_modes		 ts_modes = TAILQ_HEAD_INITIALIZER(ts_modes);
static struct ts_pendings	 ts_pending = TAILQ_HEAD_INITIALIZER(ts_pending);
static struct {
	unsigned char	*data;
	size_t		 len;
} ts_secrets[TS_MAX_SECRETS];
static int			 ts_nsecrets;
static FILE			*ts_record;
static struct event		*ts_flush_ev;	/* writes ts_record out */
static int			 ts_flush_armed;
static off_t			 ts_wb_off;	/* write-back started to */
static unsigned long long	 ts_received;
static json_t			*ts_by_path;
static const char		 ts_hexd[] = "0123456789abcdef";

static void	ts_usage(void) __attribute__((noreturn));
static void	ts_request_cb(struct evhttp_request *, void *);
static void	ts_ctl(struct evhttp_request *, const char *);
static void	ts_ctl_mode(struct evhttp_request *);
static void	ts_reply_json(struct evhttp_request *, int, json_t *);
static void	ts_reply(struct evhttp_request *, int, const char *);
static struct ts_mode *ts_mode_find(const char *);
static void	ts_mode_free(struct ts_mode *);
static void	ts_pending_free(struct ts_pending *);
static void	ts_timer_cb(evutil_socket_t, short, void *);
static void	ts_close_cb(struct evhttp_connection *, void *);
static void	ts_watch_cb(evutil_socket_t, short, void *);
static void	ts_signal_cb(evutil_socket_t, short, void *);
static void	ts_flush_cb(evutil_socket_t, short, void *);
static void	ts_flush(void);
static const char *ts_sig(struct evkeyvalq *, const unsigned char *, size_t);
static void	ts_json_str(FILE *, const char *);
static void	ts_record_line(struct evhttp_request *, const char *, int,
		    const unsigned char *, size_t, const char *);

static void
ts_usage(void)
{
	fprintf(stderr, "usage: test_sink -p port [-a addr] [-s secret]... "
	    "[-o record_file]\n");
	exit(1);
}

int
main(int argc, char *argv[])
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	struct rlimit rl;
	struct evhttp *http;
	struct event *ev_int, *ev_term;
	const char *addr = "127.0.0.1", *rec = NULL, *p;
	char *end;
	long port = -1;
	size_t n;
	int ch, fd, one = 1;

	while ((ch = getopt(argc, argv, "a:o:p:s:")) != -1) {
		switch (ch) {
		case 'a':
			addr = optarg;
			break;
		case 'o':
			rec = optarg;
			break;
		case 'p':
			errno = 0;
			port = strtol(optarg, &end, 10);
			if (errno != 0 || *optarg == '\0' || *end != '\0' ||
			    port < 0 || port > 65535)
				ts_usage();
			break;
		case 's':
			if (ts_nsecrets == TS_MAX_SECRETS)
				ts_usage();
			p = optarg;
			if (strncmp(p, "whsec_", 6) == 0) {
				p += 6;
				n = strlen(p);
				if ((ts_secrets[ts_nsecrets].data =
				    malloc(B64_DECODED_MAX(n))) == NULL)
					return 1;
				if (b64_decode(p, n,
				    ts_secrets[ts_nsecrets].data,
				    &ts_secrets[ts_nsecrets].len) == -1) {
					fprintf(stderr, "test_sink: -s %s: not "
					    "whsec_ + base64\n", optarg);
					return 1;
				}
			} else {
				ts_secrets[ts_nsecrets].data =
				    (unsigned char *)optarg;
				ts_secrets[ts_nsecrets].len = strlen(optarg);
			}
			ts_nsecrets++;
			break;
		default:
			ts_usage();
		}
	}
	if (optind != argc || port == -1)
		ts_usage();

	signal(SIGPIPE, SIG_IGN);
	if (getrlimit(RLIMIT_NOFILE, &rl) == 0 && rl.rlim_cur < rl.rlim_max) {
		rl.rlim_cur = rl.rlim_max;
		(void)setrlimit(RLIMIT_NOFILE, &rl);
	}
	if (rec != NULL && (ts_record = fopen(rec, "a")) == NULL) {
		fprintf(stderr, "test_sink: %s: %s\n", rec, strerror(errno));
		return 1;
	}
	if ((ts_by_path = json_object()) == NULL)
		return 1;

	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	if (inet_pton(AF_INET, addr, &sin.sin_addr) != 1) {
		fprintf(stderr, "test_sink: bad address %s\n", addr);
		return 1;
	}
	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
	    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one)) ==
	    -1 || bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, TS_BACKLOG) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &sl) == -1 ||
	    evutil_make_socket_nonblocking(fd) == -1) {
		fprintf(stderr, "test_sink: %s:%ld: %s\n", addr, port,
		    strerror(errno));
		return 1;
	}

	if ((ts_base = event_base_new()) == NULL ||
	    (http = evhttp_new(ts_base)) == NULL)
		return 1;
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH | EVHTTP_REQ_DELETE |
	    EVHTTP_REQ_HEAD);
	evhttp_set_timeout(http, TS_TIMEOUT_S);
	evhttp_set_gencb(http, ts_request_cb, NULL);
	if (ts_record != NULL && (setvbuf(ts_record, NULL, _IOFBF, 1 << 20) ||
	    (ts_flush_ev = event_new(ts_base, -1, 0, ts_flush_cb, NULL)) ==
	    NULL))
		return 1;
	if (evhttp_accept_socket(http, fd) == -1)
		return 1;
	ev_int = evsignal_new(ts_base, SIGINT, ts_signal_cb, NULL);
	ev_term = evsignal_new(ts_base, SIGTERM, ts_signal_cb, NULL);
	if (ev_int == NULL || ev_term == NULL)
		return 1;
	event_add(ev_int, NULL);
	event_add(ev_term, NULL);

	printf("test_sink: listening on %s:%d\n", addr, ntohs(sin.sin_port));
	fflush(stdout);
	event_base_dispatch(ts_base);

	evhttp_free(http);
	event_free(ev_int);
	event_free(ev_term);
	if (ts_record != NULL) {
		event_free(ts_flush_ev);
		fclose(ts_record);
	}
	event_base_free(ts_base);
	json_decref(ts_by_path);
	return 0;
}

static void
ts_signal_cb(evutil_socket_t sig, short ev, void *arg)
{
	event_base_loopbreak(ts_base);
}

/*
 * Activated by the first record of a loop pass, it runs after the pass's
 * other active events, so the records of one pass go out in one write.
 * An answer leaves from its connection's write event, in a later pass.
 */
static void
ts_flush_cb(evutil_socket_t fd, short ev, void *arg)
{
	ts_flush_armed = 0;
	ts_flush();
}

/*
 * The records so far into the file.  Their write-back starts a megabyte
 * at a time: left to the kernel, they stayed dirty until its 30 s expiry
 * and then went out in one burst (75 MB at bench (b)'s rate) that held
 * the machine, and the log syncs of the daemon under test, for 100 ms.
 */
static void
ts_flush(void)
{
	off_t end;

	if (ts_record == NULL)
		return;
	if (fflush(ts_record) == EOF) {
		fprintf(stderr, "test_sink: record: %s\n", strerror(errno));
		return;
	}
	if ((end = ftello(ts_record)) - ts_wb_off >= TS_WB_CHUNK) {
		(void)sync_file_range(fileno(ts_record), ts_wb_off,
		    end - ts_wb_off, SYNC_FILE_RANGE_WRITE);
		ts_wb_off = end;
	}
}

static void
ts_request_cb(struct evhttp_request *req, void *arg)
{
	const struct evhttp_uri *u = evhttp_request_get_evhttp_uri(req);
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	struct ts_pending *pd;
	struct ts_mode *m;
	struct timeval tv;
	json_t *cnt;
	const unsigned char *body;
	const char *path, *sig;
	size_t len;
	int status = 200;

	path = u != NULL ? evhttp_uri_get_path(u) : NULL;
	if (path == NULL || *path == '\0')
		path = "/";
	if (strncmp(path, "/_ctl/", 6) == 0) {
		ts_ctl(req, path + 6);
		return;
	}

	ts_received++;
	cnt = json_object_get(ts_by_path, path);
	json_object_set_new(ts_by_path, path,
	    json_integer(cnt != NULL ? json_integer_value(cnt) + 1 : 1));

	len = evbuffer_get_length(in);
	body = len > 0 ? evbuffer_pullup(in, -1) : (const unsigned char *)"";
	sig = ts_sig(evhttp_request_get_input_headers(req), body, len);

	if ((m = ts_mode_find(path)) != NULL) {
		m->seen++;
		status = m->seen <= m->fail_first ? m->fail_status : m->status;
	}
	ts_record_line(req, path, m != NULL && m->hang ? 0 : status, body,
	    len, sig);

	if (m == NULL || (!m->hang && m->delay_ms <= 0)) {
		ts_reply(req, status, m != NULL ? m->retry_after : NULL);
		return;
	}
	/* Delayed or hung: answered from a timer, or never.  The
	 * connection's close callback forgets it if the client goes. */
	if ((pd = calloc(1, sizeof(*pd))) == NULL)
		abort();
	pd->req = req;
	pd->evcon = evhttp_request_get_connection(req);
	pd->status = status;
	if (m->retry_after != NULL &&
	    (pd->retry_after = strdup(m->retry_after)) == NULL)
		abort();
	if (!m->hang) {
		if ((pd->timer = evtimer_new(ts_base, ts_timer_cb, pd)) == NULL)
			abort();
		tv.tv_sec = m->delay_ms / 1000;
		tv.tv_usec = (m->delay_ms % 1000) * 1000;
		evtimer_add(pd->timer, &tv);
	}
	TAILQ_INSERT_TAIL(&ts_pending, pd, entry);
	if (pd->evcon == NULL)
		return;
	evhttp_connection_set_closecb(pd->evcon, ts_close_cb, NULL);
	/* evhttp does not read a connection whose request is in our hands,
	 * so it would never see the client go: watch for that ourselves. */
	pd->watch = event_new(ts_base, bufferevent_getfd(
	    evhttp_connection_get_bufferevent(pd->evcon)), EV_CLOSED,
	    ts_watch_cb, pd);
	if (pd->watch != NULL)
		event_add(pd->watch, NULL);
}

/* The client of a delayed or hung request went: close our side. */
static void
ts_watch_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct ts_pending *pd = arg;
	struct evhttp_connection *evcon = pd->evcon;

	TAILQ_REMOVE(&ts_pending, pd, entry);
	ts_pending_free(pd);
	evhttp_connection_free(evcon);
}

static void
ts_timer_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct ts_pending *pd = arg;

	TAILQ_REMOVE(&ts_pending, pd, entry);
	ts_reply(pd->req, pd->status, pd->retry_after);
	ts_pending_free(pd);
}

/* The client went: its requests in hand are freed by evhttp; forget
 * them. */
static void
ts_close_cb(struct evhttp_connection *evcon, void *arg)
{
	struct ts_pending *pd, *next;

	for (pd = TAILQ_FIRST(&ts_pending); pd != NULL; pd = next) {
		next = TAILQ_NEXT(pd, entry);
		if (pd->evcon != evcon)
			continue;
		TAILQ_REMOVE(&ts_pending, pd, entry);
		ts_pending_free(pd);
	}
}

static void
ts_pending_free(struct ts_pending *pd)
{
	if (pd->timer != NULL)
		event_free(pd->timer);
	if (pd->watch != NULL)
		event_free(pd->watch);
	free(pd->retry_after);
	free(pd);
}

static void
ts_reply(struct evhttp_request *req, int status, const char *retry_after)
{
	struct evbuffer *b = evbuffer_new();

	if (b == NULL)
		abort();
	if (retry_after != NULL && (status < 200 || status > 299))
		evhttp_add_header(evhttp_request_get_output_headers(req),
		    "Retry-After", retry_after);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	evbuffer_add_printf(b, "{\"status\":%d}\n", status);
	evhttp_send_reply(req, status, status >= 200 && status <= 299 ?
	    "OK" : "Test", b);
	evbuffer_free(b);
}

static void
ts_reply_json(struct evhttp_request *req, int status, json_t *o)
{
	struct evbuffer *b = evbuffer_new();
	char *s;

	if (b == NULL || (s = json_dumps(o, JSON_COMPACT)) == NULL)
		abort();
	evbuffer_add_printf(b, "%s\n", s);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	evhttp_send_reply(req, status, status == 200 ? "OK" : "Bad", b);
	evbuffer_free(b);
	free(s);
	json_decref(o);
}

static struct ts_mode *
ts_mode_find(const char *path)
{
	struct ts_mode *m, *star = NULL;

	TAILQ_FOREACH(m, &ts_modes, entry) {
		if (strcmp(m->path, path) == 0)
			return m;
		if (strcmp(m->path, "*") == 0)
			star = m;
	}
	return star;
}

static void
ts_mode_free(struct ts_mode *m)
{
	free(m->path);
	free(m->retry_after);
	free(m);
}

static void
ts_ctl(struct evhttp_request *req, const char *what)
{
	enum evhttp_cmd_type cmd = evhttp_request_get_command(req);
	struct ts_mode *m;

	ts_flush();	/* whoever asks sees every request recorded so far */
	if (strcmp(what, "mode") == 0 && cmd == EVHTTP_REQ_POST)
		ts_ctl_mode(req);
	else if (strcmp(what, "stats") == 0 && cmd == EVHTTP_REQ_GET)
		ts_reply_json(req, 200, json_pack("{s:I, s:O}", "received",
		    (json_int_t)ts_received, "by_path", ts_by_path));
	else if (strcmp(what, "reset") == 0 && cmd == EVHTTP_REQ_POST) {
		while ((m = TAILQ_FIRST(&ts_modes)) != NULL) {
			TAILQ_REMOVE(&ts_modes, m, entry);
			ts_mode_free(m);
		}
		ts_received = 0;
		json_object_clear(ts_by_path);
		if (ts_record != NULL &&
		    ftruncate(fileno(ts_record), 0) == -1)
			fprintf(stderr, "test_sink: truncate: %s\n",
			    strerror(errno));
		ts_reply_json(req, 200, json_pack("{s:b}", "ok", 1));
	} else
		ts_reply_json(req, 404, json_pack("{s:s}", "error",
		    "unknown control"));
}

static void
ts_ctl_mode(struct evhttp_request *req)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	struct ts_mode *m, *old;
	json_error_t jerr;
	json_t *o, *v;
	size_t len = evbuffer_get_length(in);

	o = json_loadb(len > 0 ? (const char *)evbuffer_pullup(in, -1) : "",
	    len, 0, &jerr);
	if (o == NULL || !json_is_object(o)) {
		json_decref(o);
		ts_reply_json(req, 400, json_pack("{s:s}", "error",
		    "body must be a JSON object"));
		return;
	}
	if ((m = calloc(1, sizeof(*m))) == NULL)
		abort();
	m->status = 200;
	m->fail_status = 503;
	v = json_object_get(o, "path");
	if ((m->path = strdup(json_is_string(v) ? json_string_value(v) :
	    "*")) == NULL)
		abort();
	if (json_is_integer(v = json_object_get(o, "status")))
		m->status = json_integer_value(v);
	if (json_is_integer(v = json_object_get(o, "delay_ms")))
		m->delay_ms = json_integer_value(v);
	m->hang = json_is_true(json_object_get(o, "hang"));
	if (json_is_integer(v = json_object_get(o, "fail_first")))
		m->fail_first = json_integer_value(v);
	if (json_is_integer(v = json_object_get(o, "fail_status")))
		m->fail_status = json_integer_value(v);
	v = json_object_get(o, "retry_after");
	if (json_is_integer(v)) {
		if (asprintf(&m->retry_after, "%lld",
		    (long long)json_integer_value(v)) == -1)
			abort();
	} else if (json_is_string(v) &&
	    (m->retry_after = strdup(json_string_value(v))) == NULL)
		abort();
	json_decref(o);
	if (m->status < 100 || m->status > 999 || m->fail_status < 100 ||
	    m->fail_status > 999 || m->delay_ms < 0 || m->fail_first < 0) {
		ts_mode_free(m);
		ts_reply_json(req, 400, json_pack("{s:s}", "error",
		    "status out of range"));
		return;
	}
	TAILQ_FOREACH(old, &ts_modes, entry)
		if (strcmp(old->path, m->path) == 0)
			break;
	if (old != NULL) {
		TAILQ_REMOVE(&ts_modes, old, entry);
		ts_mode_free(old);
	}
	TAILQ_INSERT_TAIL(&ts_modes, m, entry);
	ts_reply_json(req, 200, json_pack("{s:b}", "ok", 1));
}

/* The Standard Webhooks verdict on a request. */
static const char *
ts_sig(struct evkeyvalq *h, const unsigned char *body, size_t len)
{
	const char *id, *ts, *sig, *tok, *end;
	unsigned char md[EVP_MAX_MD_SIZE], *msg;
	char b64[EVP_MAX_MD_SIZE * 2];
	unsigned int mdlen;
	size_t n, tl;
	int i, ok = 0;

	if ((sig = evhttp_find_header(h, "webhook-signature")) == NULL)
		return "none";
	id = evhttp_find_header(h, "webhook-id");
	ts = evhttp_find_header(h, "webhook-timestamp");
	if (id == NULL || ts == NULL || ts_nsecrets == 0)
		return "bad";
	n = strlen(id) + strlen(ts) + 2 + len;
	if ((msg = malloc(n + 1)) == NULL)
		abort();
	snprintf((char *)msg, n + 1, "%s.%s.", id, ts);
	memcpy(msg + strlen(id) + strlen(ts) + 2, body, len);
	for (i = 0; i < ts_nsecrets && !ok; i++) {
		if (HMAC(EVP_sha256(), ts_secrets[i].data,
		    (int)ts_secrets[i].len, msg, n, md, &mdlen) == NULL)
			abort();
		EVP_EncodeBlock((unsigned char *)b64, md, mdlen);
		tl = strlen(b64);
		/* space-separated "v1,<base64>" tokens */
		for (tok = sig; *tok != '\0' && !ok; tok = end) {
			while (*tok == ' ')
				tok++;
			for (end = tok; *end != '\0' && *end != ' '; end++)
				;
			if ((size_t)(end - tok) == tl + 3 &&
			    strncmp(tok, "v1,", 3) == 0 &&
			    CRYPTO_memcmp(tok + 3, b64, tl) == 0)
				ok = 1;
		}
	}
	free(msg);
	return ok ? "ok" : "bad";
}

/* s as a JSON string, or null when it is NULL or not UTF-8 (as jansson's
 * json_string refuses it). */
static void
ts_json_str(FILE *f, const char *s)
{
	const unsigned char *p, *q;
	int n, i;

	if (s == NULL)
		goto null;
	/* UTF-8: no overlong forms, surrogates or code points past
	 * U+10FFFF. */
	for (p = (const unsigned char *)s; *p != '\0'; p += n) {
		unsigned int c = *p;

		if (c < 0x80) {
			n = 1;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf)
			n = 2;
		else if (c >= 0xe0 && c <= 0xef)
			n = 3;
		else if (c >= 0xf0 && c <= 0xf4)
			n = 4;
		else
			goto null;
		for (i = 1; i < n; i++)
			if ((p[i] & 0xc0) != 0x80)
				goto null;
		if ((c == 0xe0 && p[1] < 0xa0) || (c == 0xed && p[1] > 0x9f) ||
		    (c == 0xf0 && p[1] < 0x90) || (c == 0xf4 && p[1] > 0x8f))
			goto null;
	}
	putc('"', f);
	for (p = q = (const unsigned char *)s; *p != '\0'; p++) {
		if (*p >= 0x20 && *p != '"' && *p != '\\')
			continue;
		fwrite(q, 1, p - q, f);
		q = p + 1;
		if (*p == '"' || *p == '\\') {
			putc('\\', f);
			putc(*p, f);
		} else {
			/* a control character: the same string parsed */
			fputs("\\u00", f);
			putc(ts_hexd[*p >> 4], f);
			putc(ts_hexd[*p & 15], f);
		}
	}
	fwrite(q, 1, p - q, f);
	putc('"', f);
	return;
 null:
	fputs("null", f);
}

/* One JSON object a line, written by hand: building it with jansson
 * cost the sink about a fifth of its CPU per request at bench (b)'s
 * rate, on the machine the benchmark shares with the daemon. */
static void
ts_record_line(struct evhttp_request *req, const char *path, int status,
    const unsigned char *body, size_t len, const char *sig)
{
	static const char *const names[] = {
		"x-ankusa-id", "x-ankusa-idempotency-key", "x-ankusa-tenant",
		"x-ankusa-source", "x-ankusa-dedupe-key", "x-ankusa-replay-id",
		"x-order", "content-type", "webhook-id",
		"x-ankusa-received-at", "x-ankusa-body-sha256",
		"x-ankusa-verification", "x-ankusa-verification-flagged",
		"traceparent", "tracestate", NULL
	};
	struct evkeyval *kv;
	int ntp = 0, nts = 0;
	static unsigned long long seq;
	struct evkeyvalq *h = evhttp_request_get_input_headers(req);
	unsigned char md[SHA256_DIGEST_LENGTH];
	char hex[SHA256_DIGEST_LENGTH * 2 + 1];
	const char *method;
	uint64_t t;
	int i;

	seq++;
	if (ts_record == NULL)
		return;
	t = time_wall_us();
	switch (evhttp_request_get_command(req)) {
	case EVHTTP_REQ_POST:
		method = "POST";
		break;
	case EVHTTP_REQ_PUT:
		method = "PUT";
		break;
	case EVHTTP_REQ_PATCH:
		method = "PATCH";
		break;
	case EVHTTP_REQ_GET:
		method = "GET";
		break;
	default:
		method = "OTHER";
		break;
	}
	SHA256(body, len, md);
	for (i = 0; i < SHA256_DIGEST_LENGTH; i++) {
		hex[2 * i] = ts_hexd[md[i] >> 4];
		hex[2 * i + 1] = ts_hexd[md[i] & 15];
	}
	hex[2 * i] = '\0';
	fprintf(ts_record, "{\"seq\":%llu,\"t\":%llu.%03u,\"method\":\"%s\","
	    "\"path\":", seq, (unsigned long long)(t / 1000),
	    (unsigned)(t % 1000), method);
	ts_json_str(ts_record, path);
	fprintf(ts_record, ",\"status\":%d,\"sha256\":\"%s\",\"size\":%zu,"
	    "\"sig\":\"%s\"", status, hex, len, sig);
	for (i = 0; names[i] != NULL; i++) {
		fprintf(ts_record, ",\"%s\":", names[i]);
		ts_json_str(ts_record, evhttp_find_header(h, names[i]));
	}
	TAILQ_FOREACH(kv, h, next) {
		if (strcasecmp(kv->key, "traceparent") == 0)
			ntp++;
		else if (strcasecmp(kv->key, "tracestate") == 0)
			nts++;
	}
	fprintf(ts_record, ",\"n-traceparent\":%d,\"n-tracestate\":%d", ntp,
	    nts);
	fputs("}\n", ts_record);
	if (!ts_flush_armed) {
		ts_flush_armed = 1;
		event_active(ts_flush_ev, EV_TIMEOUT, 1);
	}
}
