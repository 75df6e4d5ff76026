/* SPDX-License-Identifier: ISC */
/*
 * check_sink_http.c: the http sink (workers/sink_http.c).
 *
 * The pure parts, table-driven: status classes, Retry-After (seconds and
 * the three HTTP-date forms, strictly), the Standard Webhooks signature
 * against the specification's published example, and the header list.
 * Then whole attempts against a small evhttp server forked for each test:
 * what arrives (method, body, headers, no Expect), ok / permanent /
 * transient with Retry-After, no redirect followed, the response cap, the
 * timeout and a refused connection.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <check.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <curl/curl.h>
#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#include "b64.h"
#include "conf.h"
#include "egress.h"
#include "job.h"
#include "msg.h"
#include "http1.h"
#include "sha256.h"
#include "sink.h"

#define SW_SECRET	"MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"	/* whsec_ stripped */
#define SW_ID		"msg_p5jXN8AQM9LWM0D4loKWxJek"
#define SW_TS		"1614265330"
#define SW_BODY		"{\"test\": 2432232314}"
#define SW_SIG		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE="
#define SW_BODY_SHA256	"ae858931f67887e8150d6f96c9fe03062c1df36b4464c4d" \
			"dc8e002c084d5d198"	/* sha256sum of SW_BODY */
#define RFC_DATE_T	784111777	/* Sun, 06 Nov 1994 08:49:37 GMT */

static const struct {
	long	status;
	int	result;
	int	honour;
} classify_cases[] = {
	{ 200, JOB_OK, 0 }, { 201, JOB_OK, 0 }, { 204, JOB_OK, 0 },
	{ 299, JOB_OK, 0 },
	{ 400, JOB_PERMANENT, 0 }, { 401, JOB_PERMANENT, 0 },
	{ 403, JOB_PERMANENT, 0 }, { 404, JOB_PERMANENT, 0 },
	{ 410, JOB_PERMANENT, 0 }, { 413, JOB_PERMANENT, 0 },
	{ 422, JOB_PERMANENT, 0 },
	{ 408, JOB_ERROR, 1 }, { 429, JOB_ERROR, 1 }, { 500, JOB_ERROR, 1 },
	{ 502, JOB_ERROR, 1 }, { 503, JOB_ERROR, 1 }, { 599, JOB_ERROR, 1 },
	{ 301, JOB_ERROR, 0 }, { 302, JOB_ERROR, 0 }, { 304, JOB_ERROR, 0 },
	{ 402, JOB_ERROR, 0 }, { 405, JOB_ERROR, 0 }, { 409, JOB_ERROR, 0 },
	{ 415, JOB_ERROR, 0 }, { 451, JOB_ERROR, 0 }, { 100, JOB_ERROR, 0 },
	{ 600, JOB_ERROR, 0 },
};

START_TEST(test_classify)
{
	int honour = -1;

	ck_assert_int_eq(sink_http_classify(classify_cases[_i].status,
	    &honour), classify_cases[_i].result);
	ck_assert_int_eq(honour, classify_cases[_i].honour);
}
END_TEST

static const struct {
	const char	*value;
	time_t		 now;
	int		 rc;
	uint64_t	 ms;
} ra_cases[] = {
	{ "0", 0, 0, 0 },
	{ "1", 0, 0, 1000 },
	{ "120", 0, 0, 120000 },
	{ "3600", 0, 0, 3600000 },
	{ "3601", 0, 0, 3600000 },
	{ "000000000000000000000000000000000000000007", 0, 0, 7000 },
	{ "99999999999999999999999999999", 0, 0, 3600000 },
	{ "", 0, -1, 0 },
	{ " 5", 0, -1, 0 },
	{ "5 ", 0, -1, 0 },
	{ "-5", 0, -1, 0 },
	{ "+5", 0, -1, 0 },
	{ "1.5", 0, -1, 0 },
	{ "5s", 0, -1, 0 },
	{ "0x10", 0, -1, 0 },
	/* the three date forms, 90 s ahead of now */
	{ "Sun, 06 Nov 1994 08:49:37 GMT", RFC_DATE_T - 90, 0, 90000 },
	{ "Sunday, 06-Nov-94 08:49:37 GMT", RFC_DATE_T - 90, 0, 90000 },
	{ "Sun Nov  6 08:49:37 1994", RFC_DATE_T - 90, 0, 90000 },
	{ "Thu, 01 Jan 1970 00:00:00 GMT", 0, 0, 0 },
	/* past: no floor; far: clamped */
	{ "Sun, 06 Nov 1994 08:49:37 GMT", RFC_DATE_T + 5, 0, 0 },
	{ "Sun, 06 Nov 1994 08:49:37 GMT", RFC_DATE_T - 86400, 0, 3600000 },
	{ "Tue, 29 Feb 2000 12:00:00 GMT", 0, 0, 3600000 },
	/* not quite */
	{ "Sun, 6 Nov 1994 08:49:37 GMT", 0, -1, 0 },
	{ "sun, 06 Nov 1994 08:49:37 GMT", 0, -1, 0 },
	{ "Sun, 06 nov 1994 08:49:37 GMT", 0, -1, 0 },
	{ "Sun, 06 Nov 1994 08:49:37 UTC", 0, -1, 0 },
	{ "Sun, 06 Nov 1994 08:49:37 GMT ", 0, -1, 0 },
	{ "Sun,  06 Nov 1994 08:49:37 GMT", 0, -1, 0 },
	{ "Sun, 06 Nov 94 08:49:37 GMT", 0, -1, 0 },
	{ "Sun, 31 Feb 1994 08:49:37 GMT", 0, -1, 0 },
	{ "Mon, 29 Feb 1900 08:49:37 GMT", 0, -1, 0 },
	{ "Sun, 00 Nov 1994 08:49:37 GMT", 0, -1, 0 },
	{ "Sun, 06 Nov 1994 24:00:00 GMT", 0, -1, 0 },
	{ "Sun, 06 Nov 1994 08:60:00 GMT", 0, -1, 0 },
	{ "Sun, 06 Nov 1994 08:49 GMT", 0, -1, 0 },
	{ "Sunday, 06 Nov 1994 08:49:37 GMT", 0, -1, 0 },
	{ "Sun, 06-Nov-94 08:49:37 GMT", 0, -1, 0 },
	{ "Sun Nov 6 08:49:37 1994", 0, -1, 0 },
	{ "Sun Nov  6 08:49:37 1994 GMT", 0, -1, 0 },
	{ "Funday, 06-Nov-94 08:49:37 GMT", 0, -1, 0 },
	{ "soon", 0, -1, 0 },
};

START_TEST(test_retry_after)
{
	uint64_t ms = 12345;
	int rc;

	rc = sink_http_retry_after(ra_cases[_i].value, ra_cases[_i].now, &ms);
	ck_assert_msg(rc == ra_cases[_i].rc, "\"%s\": rc %d",
	    ra_cases[_i].value, rc);
	if (rc == 0)
		ck_assert_msg(ms == ra_cases[_i].ms, "\"%s\": %llu ms",
		    ra_cases[_i].value, (unsigned long long)ms);
}
END_TEST

static struct blob
secret(const char *b64)
{
	struct blob b;

	b.data = malloc(B64_DECODED_MAX(strlen(b64)));
	ck_assert_ptr_nonnull(b.data);
	ck_assert_int_eq(b64_decode(b64, strlen(b64), b.data, &b.len), 0);
	return b;
}

START_TEST(test_sign_example)
{
	struct blob s[2];
	char *sig;

	s[0] = secret(SW_SECRET);
	sig = sink_http_sign(s, 1, SW_ID, SW_TS, SW_BODY, strlen(SW_BODY));
	ck_assert_str_eq(sig, SW_SIG);
	free(sig);

	/* Rotation: one token per secret, space-separated, in order. */
	s[1] = s[0];
	s[0].data = (unsigned char *)"another key";
	s[0].len = 11;
	sig = sink_http_sign(s, 2, SW_ID, SW_TS, SW_BODY, strlen(SW_BODY));
	ck_assert_uint_eq(strlen(sig), 2 * 47 + 1);
	ck_assert_int_eq(strncmp(sig, "v1,", 3), 0);
	ck_assert_str_eq(sig + 48, SW_SIG);
	ck_assert_int_eq(sig[47], ' ');
	free(sig);
	free(s[1].data);
}
END_TEST

/* --- the header list --- */

static struct header_kv fwd[] = {
	{ "x-github-event", "push" },
	{ "user-agent", "GitHub-Hookshot/1" },
	{ "content-length", "999" },
	{ "host", "evil.example" },
	{ "transfer-encoding", "chunked" },
	{ "x-ankusa-id", "forged" },
	{ "authorization", "from-provider" },
	{ "webhook-signature", "v1,old" },
	{ "webhook-id", "old-id" },
	{ "x-empty", "" },
	{ "bad name", "x" },
	{ "traceparent",
	    "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" },
	{ "tracestate", "forged=1" },
	{ "x-ankusa-verification", "ok" },
};
static struct header_kv cfg[] = {
	{ "Authorization", "Bearer sink-token" },
	{ "X-Ankusa-Source", "forged-too" },
	{ "X-Team", "payments" },
	{ "TraceParent", "configured" },
};

static void
http_job(struct job *j, int signing, const char *url)
{
	static struct blob s;

	memset(j, 0, sizeof(*j));
	j->id = 1;
	j->hook_id = SW_ID;
	j->tenant = "acme";
	j->source = "github";
	j->content_type = "application/json";
	j->headers = fwd;
	j->nheaders = sizeof(fwd) / sizeof(fwd[0]);
	j->dedupe_key = "dk\r\nInjected: yes";
	j->replay_id = "";
	j->claim_ref = "";
	j->attempt = 1;
	j->received_at = 1614265330123ULL;
	j->verification = VERIFICATION_SKIPPED;
	memcpy(j->trace, "\x4b\xf9\x2f\x35\x77\xb3\x4d\xa6\xa3\xce\x92\x9d"
	    "\x0e\x0e\x47\x36\x00\xf0\x67\xaa\x0b\xa9\x02\xb7\x01",
	    TRACE_CTX_LEN);
	memcpy(j->span, "\x01\x02\x03\x04\x05\x06\x07\x08", TRACE_SPAN_LEN);
	j->tracestate = "";
	sha256(SW_BODY, strlen(SW_BODY), j->sha256);
	j->body = (unsigned char *)SW_BODY;
	j->bodylen = strlen(SW_BODY);
	j->sink.type = SINK_HTTP;
	j->sink.timeout_ms = 5000;
	j->sink.u.http.url = (char *)url;
	j->sink.u.http.method = "post";
	j->sink.u.http.headers = cfg;
	j->sink.u.http.nheaders = sizeof(cfg) / sizeof(cfg[0]);
	j->sink.u.http.max_response_bytes = 65536;
	if (signing) {
		if (s.data == NULL)
			s = secret(SW_SECRET);
		j->sink.u.http.secrets[0] = s;
		j->sink.u.http.nsecrets = 1;
	}
}

/* The lines of a list, NULL-terminated, and how many have a prefix. */
static int
count(const struct curl_slist *l, const char *prefix)
{
	int n = 0;

	for (; l != NULL; l = l->next)
		if (strncasecmp(l->data, prefix, strlen(prefix)) == 0)
			n++;
	return n;
}

static int
has(const struct curl_slist *l, const char *line)
{
	for (; l != NULL; l = l->next)
		if (strcmp(l->data, line) == 0)
			return 1;
	return 0;
}

START_TEST(test_headers_signed)
{
	struct curl_slist *l, *last;
	struct job j;

	http_job(&j, 1, "http://127.0.0.1:1/");
	l = sink_http_headers(&j, 1614265330);
	ck_assert(has(l, "Content-Type: application/json"));
	ck_assert(has(l, "x-github-event: push"));
	ck_assert(has(l, "x-empty;"));
	ck_assert_int_eq(count(l, "content-length"), 0);
	ck_assert_int_eq(count(l, "host"), 0);
	ck_assert_int_eq(count(l, "transfer-encoding"), 0);
	ck_assert_int_eq(count(l, "bad name"), 0);
	/* configured replaces forwarded; x-ankusa-* are ours alone */
	ck_assert(has(l, "Authorization: Bearer sink-token"));
	ck_assert_int_eq(count(l, "authorization:"), 1);
	ck_assert(has(l, "X-Team: payments"));
	ck_assert(has(l, "x-ankusa-id: " SW_ID));
	ck_assert_int_eq(count(l, "x-ankusa-id:"), 1);
	ck_assert(has(l, "x-ankusa-source: github"));
	ck_assert_int_eq(count(l, "x-ankusa-source:"), 1);
	ck_assert(has(l, "x-ankusa-tenant: acme"));
	/* a control byte cannot split a header */
	ck_assert(has(l, "x-ankusa-dedupe-key: dk%0D%0AInjected: yes"));
	ck_assert(has(l,
	    "x-ankusa-idempotency-key: acme:github:dk%0D%0AInjected: yes"));
	ck_assert_int_eq(count(l, "Injected"), 0);
	ck_assert_int_eq(count(l, "x-ankusa-replay-id"), 0);
	/* Standard Webhooks, replacing the forwarded ones */
	ck_assert(has(l, "webhook-id: " SW_ID));
	ck_assert_int_eq(count(l, "webhook-id:"), 1);
	ck_assert(has(l, "webhook-timestamp: " SW_TS));
	ck_assert(has(l, "webhook-signature: " SW_SIG));
	ck_assert_int_eq(count(l, "webhook-signature:"), 1);
	for (last = l; last->next != NULL; last = last->next)
		;
	ck_assert_str_eq(last->data, "Expect:");
	curl_slist_free_all(l);
}
END_TEST

START_TEST(test_headers_plain)
{
	struct curl_slist *l;
	struct job j;
	char longv[700], longl[720];

	/* A line too long for sink_http_add's stack buffer. */
	memset(longv, 'v', sizeof(longv) - 1);
	longv[sizeof(longv) - 1] = '\0';
	snprintf(longl, sizeof(longl), "x-ankusa-replay-id: %s", longv);
	http_job(&j, 0, "http://127.0.0.1:1/");
	j.dedupe_key = "";
	j.replay_id = longv;
	j.content_type = "";
	l = sink_http_headers(&j, 1614265330);
	ck_assert(has(l, "Content-Type: application/octet-stream"));
	ck_assert(has(l, "x-ankusa-idempotency-key: " SW_ID));
	ck_assert_int_eq(count(l, "x-ankusa-dedupe-key"), 0);
	ck_assert(has(l, longl));
	curl_slist_free_all(l);
	j.replay_id = "rp-1";
	l = sink_http_headers(&j, 1614265330);
	ck_assert(has(l, "x-ankusa-replay-id: rp-1"));
	/* unsigned: the provider's own webhook-* headers pass */
	ck_assert(has(l, "webhook-signature: v1,old"));
	ck_assert(has(l, "webhook-id: old-id"));
	ck_assert_int_eq(count(l, "webhook-timestamp"), 0);
	curl_slist_free_all(l);
}
END_TEST

/* What the SDKs read beside the ids, and the trace context: ours alone,
 * whatever was forwarded or configured under those names. */
START_TEST(test_headers_hook)
{
	static const struct {
		uint8_t		 v;
		const char	*status, *flagged;
	} vs[] = {
		{ VERIFICATION_OK, "ok", "false" },
		{ VERIFICATION_FAILED, "failed", "false" },
		{ VERIFICATION_FLAGGED, "failed", "true" },
		{ VERIFICATION_SKIPPED, "skipped", "false" },
	};
	struct curl_slist *l;
	struct job j;
	char line[128];

	http_job(&j, _i % 2, "http://127.0.0.1:1/");
	j.verification = vs[_i].v;
	j.tracestate = _i == 0 ? "" : "rojo=00f067aa0ba902b7";
	l = sink_http_headers(&j, 1614265330);
	ck_assert(has(l, "x-ankusa-received-at: 1614265330123"));
	ck_assert(has(l, "x-ankusa-body-sha256: " SW_BODY_SHA256));
	snprintf(line, sizeof(line), "x-ankusa-verification: %s",
	    vs[_i].status);
	ck_assert_msg(has(l, line), "%s", line);
	ck_assert_int_eq(count(l, "x-ankusa-verification:"), 1);
	snprintf(line, sizeof(line), "x-ankusa-verification-flagged: %s",
	    vs[_i].flagged);
	ck_assert_msg(has(l, line), "%s", line);
	ck_assert_int_eq(count(l, "x-ankusa-verification-flagged:"), 1);
	curl_slist_free_all(l);
	/* The digest is the edge's, stored with the hook, not one of the
	 * bytes in hand: a body changed since shows as a mismatch. */
	j.bodylen--;
	l = sink_http_headers(&j, 1614265330);
	ck_assert(has(l, "x-ankusa-body-sha256: " SW_BODY_SHA256));
	j.bodylen++;
	/* The hook's trace id and flags, the attempt's span id. */
	ck_assert(has(l, "traceparent: "
	    "00-4bf92f3577b34da6a3ce929d0e0e4736-0102030405060708-01"));
	ck_assert_int_eq(count(l, "traceparent:"), 1);
	if (_i == 0)
		ck_assert_int_eq(count(l, "tracestate"), 0);
	else {
		ck_assert(has(l, "tracestate: rojo=00f067aa0ba902b7"));
		ck_assert_int_eq(count(l, "tracestate:"), 1);
	}
	curl_slist_free_all(l);
}
END_TEST

/* --- whole attempts against a forked server --- */

static pid_t server_pid = -1;
static int server_port;

/* What the server saw of the last /check request, or the answer chosen
 * by the path. */
static void
server_cb(struct evhttp_request *req, void *arg)
{
	struct evkeyvalq *in = evhttp_request_get_input_headers(req);
	struct evkeyvalq *out = evhttp_request_get_output_headers(req);
	struct evbuffer *body = evhttp_request_get_input_buffer(req);
	struct evbuffer *ans = evbuffer_new();
	struct evkeyval *kv;
	const char *uri = evhttp_request_get_uri(req), *h;
	size_t n = evbuffer_get_length(body);
	char buf[256];
	int code = 200, i;

	if (strcmp(uri, "/check-patch") == 0 || strcmp(uri, "/check") == 0) {
		/* 200 only if the request is exactly what the contract says;
		 * else 418 and the reason in the body. */
		const char *why = NULL;

		if (n != strlen(SW_BODY) || n >= sizeof(buf))
			why = "body length";
		else {
			evbuffer_copyout(body, buf, n);
			buf[n] = '\0';
			if (strcmp(buf, SW_BODY) != 0)
				why = "body";
		}
		if (evhttp_request_get_command(req) !=
		    (strcmp(uri, "/check") == 0 ? EVHTTP_REQ_POST :
		    EVHTTP_REQ_PATCH))
			why = "method";
		if ((h = evhttp_find_header(in, "Content-Type")) == NULL ||
		    strcmp(h, "application/json") != 0)
			why = "content-type";
		if (evhttp_find_header(in, "Expect") != NULL)
			why = "expect";
		if ((h = evhttp_find_header(in, "webhook-signature")) == NULL ||
		    strncmp(h, "v1,", 3) != 0)
			why = "signature";
		if ((h = evhttp_find_header(in, "x-ankusa-id")) == NULL ||
		    strcmp(h, SW_ID) != 0)
			why = "x-ankusa-id";
		if ((h = evhttp_find_header(in, "X-Team")) == NULL ||
		    strcmp(h, "payments") != 0)
			why = "x-team";
		/* The provider's User-Agent, forwarded, replaces ours: one
		 * header, not two. */
		i = 0;
		TAILQ_FOREACH(kv, in, next)
			if (strcasecmp(kv->key, "User-Agent") == 0)
				i++;
		if (i != 1 || (h = evhttp_find_header(in, "User-Agent")) ==
		    NULL || strcmp(h, "GitHub-Hookshot/1") != 0)
			why = "user-agent";
		if (why != NULL) {
			code = 418;
			evbuffer_add_printf(ans, "%s", why);
		}
	} else if (strcmp(uri, "/gone") == 0)
		code = 410;
	else if (strcmp(uri, "/busy") == 0) {
		code = 503;
		evhttp_add_header(out, "Retry-After", "7");
	} else if (strcmp(uri, "/busy-date") == 0) {
		code = 429;
		evhttp_add_header(out, "Retry-After", "Thu, 01 Jan 1970 "
		    "00:00:00 GMT");
	} else if (strcmp(uri, "/conflict") == 0) {
		code = 409;
		evhttp_add_header(out, "Retry-After", "7");
	} else if (strcmp(uri, "/redirect") == 0) {
		code = 302;
		evhttp_add_header(out, "Location", "/gone");
	} else if (strcmp(uri, "/big") == 0) {
		for (i = 0; i < 4096; i++)
			evbuffer_add(ans, "0123456789abcdef0123456789abcdef"
			    "0123456789abcdef0123456789abcdef", 64);
	} else if (strcmp(uri, "/slow") == 0) {
		sleep(3);	/* the client has given up by then */
	}
	evhttp_send_reply(req, code, "X", ans);
	evbuffer_free(ans);
}

/* A socket listening on a free loopback port, which goes to server_port. */
static int
listen_loopback(int backlog)
{
	struct sockaddr_in sin;
	socklen_t sl = sizeof(sin);
	int fd, one = 1;

	fd = socket(AF_INET, SOCK_STREAM, 0);
	ck_assert_int_ne(fd, -1);
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sin, sizeof(sin)), 0);
	ck_assert_int_eq(listen(fd, backlog), 0);
	ck_assert_int_eq(getsockname(fd, (struct sockaddr *)&sin, &sl), 0);
	server_port = ntohs(sin.sin_port);
	return fd;
}

/* The egress guard of this process: loopback allowed, as the e2e
 * harness's configs do, or (allow NULL) the defaults. */
static void
egress_allow(char *allow, int plain)
{
	static char *entries[1];
	struct conf cf;

	memset(&cf, 0, sizeof(cf));
	entries[0] = allow;
	cf.egress.allow = entries;
	cf.egress.nallow = allow != NULL;
	cf.egress.allow_plain_http = plain;
	egress_configure(&cf);
}

static void
server_start(void)
{
	struct event_base *b;
	struct evhttp *http;
	int fd;

	egress_allow("127.0.0.0/8", 1);
	fd = listen_loopback(64);
	ck_assert_int_eq(evutil_make_socket_nonblocking(fd), 0);
	if ((server_pid = fork()) == 0) {
		b = event_base_new();
		http = evhttp_new(b);
		evhttp_set_allowed_methods(http, EVHTTP_REQ_POST |
		    EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH | EVHTTP_REQ_GET);
		evhttp_set_gencb(http, server_cb, NULL);
		evhttp_accept_socket(http, fd);
		event_base_dispatch(b);
		_exit(0);
	}
	ck_assert_int_gt(server_pid, 0);
	close(fd);
}

static void
server_stop(void)
{
	if (server_pid > 0) {
		kill(server_pid, SIGKILL);
		waitpid(server_pid, NULL, 0);
	}
	server_pid = -1;
	sink_http_cleanup();
}

/* The run tests go through both transports: _i 0 the plain-http client
 * (http1.c), 1 libcurl, which a proxy setting makes take the request and
 * no_proxy then sends direct. */
static void
transport(int i)
{
	char url[64];

	if (i == 0) {
		unsetenv("http_proxy");
		unsetenv("no_proxy");
	} else {
		setenv("http_proxy", "http://127.0.0.1:9", 1);
		setenv("no_proxy", "*", 1);
	}
	sink_http_cleanup();
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/", server_port);
	ck_assert_int_eq(http1_usable(url), i == 0);
}

static void
attempt(const char *path, const char *method, uint64_t cap,
    struct job_outcome *o)
{
	struct job j;
	char url[128];

	snprintf(url, sizeof(url), "http://127.0.0.1:%d%s", server_port, path);
	http_job(&j, 1, url);
	j.sink.u.http.method = (char *)method;
	j.sink.u.http.max_response_bytes = cap;
	j.sink.timeout_ms = 1000;
	memset(o, 0, sizeof(*o));
	sink_http_run(&j, o);
}

/*
 * The egress guard, through both transports, against a socket that
 * listens and never accepts: a refused attempt is permanent,
 * egress_denied:127.0.0.1, and no connection reaches the socket.
 */
static void
egress_case(int i, char *allow, int plain, const char *url,
    enum job_result want, const char *detail, int connects)
{
	struct job_outcome o;
	struct job j;
	char u[128];
	int fd, c;

	fd = listen_loopback(8);
	ck_assert_int_eq(evutil_make_socket_nonblocking(fd), 0);
	transport(i);
	egress_allow(allow, plain);
	snprintf(u, sizeof(u), url, server_port);
	http_job(&j, 1, u);
	j.sink.timeout_ms = 300;
	memset(&o, 0, sizeof(o));
	sink_http_run(&j, &o);
	ck_assert_msg(o.result == want, "%s: %d %s", u, o.result, o.detail);
	if (detail != NULL)
		ck_assert_str_eq(o.detail, detail);
	c = accept(fd, NULL, NULL);
	ck_assert_msg((c != -1) == connects, "%s: connected %d", u, c != -1);
	if (c != -1)
		close(c);
	close(fd);
	sink_http_cleanup();
}

START_TEST(test_egress_default)
{
	/* Nothing allowed: refused before any connect. */
	egress_case(_i, NULL, 1, "http://127.0.0.1:%d/", JOB_PERMANENT,
	    "egress_denied:127.0.0.1", 0);
	/* A name resolves, then the address is checked. */
	egress_case(_i, NULL, 1, "http://localhost:%d/", JOB_PERMANENT,
	    NULL, 0);
}
END_TEST

START_TEST(test_egress_allowed)
{
	/* Allowed: it connects (the socket never answers: a timeout). */
	egress_case(_i, "127.0.0.0/8", 1, "http://127.0.0.1:%d/", JOB_ERROR,
	    NULL, 1);
	/* Plain http off: loopback still goes. */
	egress_case(_i, "127.0.0.1/32", 0, "http://127.0.0.1:%d/", JOB_ERROR,
	    NULL, 1);
	/* Another port than the entry's: refused. */
	egress_case(_i, "127.0.0.1/32:1", 1, "http://127.0.0.1:%d/",
	    JOB_PERMANENT, "egress_denied:127.0.0.1", 0);
	/* Another address than the entry's. */
	egress_case(_i, "127.0.0.2/32", 1, "http://127.0.0.1:%d/",
	    JOB_PERMANENT, "egress_denied:127.0.0.1", 0);
}
END_TEST

/* egress_check on addresses built in memory (no traffic): the policy
 * (allow NULL: the defaults), the URL, secret (the metadata token on
 * board), the address and port, and the reason wanted ("" for go). */
static const struct {
	char		*allow;
	int		 plain;
	const char	*url;
	int		 secret;
	const char	*addr;
	uint16_t	 port;
	const char	*denied;
} check_cases[] = {
	{ "10.0.0.0/8", 1, "http://x/", 0, "10.0.0.1", 80, "" },
	{ "10.0.0.0/8", 1, "http://x/", 0, "192.168.0.1", 80,
	  "egress_denied:192.168.0.1" },
	/* The metadata token: plain http to loopback only. */
	{ "10.0.0.0/8", 1, "http://x/", 1, "10.0.0.1", 80,
	  "egress_denied:10.0.0.1" },
	{ "10.0.0.0/8", 1, "https://x/", 1, "10.0.0.1", 443, "" },
	{ "10.0.0.0/8", 1, "http://x/", 1, "8.8.8.8", 80,
	  "egress_denied:8.8.8.8" },
	{ "127.0.0.0/8", 1, "http://x/", 1, "127.0.0.1", 80, "" },
	/* allow_plain_http false. */
	{ "10.0.0.0/8", 0, "HTTP://x/", 0, "10.0.0.1", 80,
	  "egress_denied:10.0.0.1" },
	{ "10.0.0.0/8", 0, "https://x/", 0, "10.0.0.1", 443, "" },
	{ "10.0.0.0/8", 0, "http://x/", 0, "8.8.8.8", 80,
	  "egress_denied:8.8.8.8" },
	{ "127.0.0.0/8", 0, "http://x/", 0, "127.0.0.1", 80, "" },
	/* The defaults: nothing allowed, plain http allowed. */
	{ NULL, 1, "http://x/", 0, "8.8.8.8", 80, "" },
	{ NULL, 1, "http://x/", 0, "10.0.0.1", 80, "egress_denied:10.0.0.1" },
	{ NULL, 1, "http://x/", 0, "169.254.169.254", 80,
	  "egress_denied:169.254.169.254" },
};

START_TEST(test_egress_check)
{
	struct egress_watch w;
	struct sockaddr_in sin;
	int r;

	if (check_cases[_i].allow == NULL)
		egress_configure(NULL);
	else
		egress_allow(check_cases[_i].allow, check_cases[_i].plain);
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(check_cases[_i].port);
	ck_assert_int_eq(inet_pton(AF_INET, check_cases[_i].addr,
	    &sin.sin_addr), 1);
	egress_watch_init(&w, check_cases[_i].url, check_cases[_i].secret);
	r = egress_check(&w, (struct sockaddr *)&sin, sizeof(sin));
	ck_assert_str_eq(w.denied, check_cases[_i].denied);
	ck_assert_int_eq(r, check_cases[_i].denied[0] != '\0' ? -1 : 0);
	ck_assert_int_eq(w.passed, r == 0);
}
END_TEST

START_TEST(test_egress_non_ip)
{
	struct egress_watch w;
	struct sockaddr sa;

	memset(&sa, 0, sizeof(sa));
	sa.sa_family = AF_UNIX;
	egress_watch_init(&w, "http://x/", 0);
	ck_assert_int_eq(egress_check(&w, &sa, sizeof(sa)), -1);
	ck_assert_str_eq(w.denied, "egress_denied:non-ip");
	ck_assert(EGRESS_REFUSED(&w));
}
END_TEST

START_TEST(test_run_check)
{
	struct job_outcome o;

	transport(_i);

	attempt("/check", "post", 65536, &o);
	ck_assert_msg(o.result == JOB_OK, "%s", o.detail);
	ck_assert_uint_eq(o.http_status, 200);
	ck_assert_str_eq(o.detail, "http 200");
	attempt("/check-patch", "patch", 65536, &o);
	ck_assert_msg(o.result == JOB_OK, "%s", o.detail);
}
END_TEST

START_TEST(test_run_classes)
{
	struct job_outcome o;

	transport(_i);

	attempt("/gone", "post", 65536, &o);
	ck_assert_int_eq(o.result, JOB_PERMANENT);
	ck_assert_str_eq(o.detail, "http 410");
	ck_assert(o.retry_after_ms == 0);

	attempt("/busy", "put", 65536, &o);
	ck_assert_int_eq(o.result, JOB_ERROR);
	ck_assert_uint_eq(o.http_status, 503);
	ck_assert(o.retry_after_ms == 7000);

	attempt("/busy-date", "post", 65536, &o);
	ck_assert_int_eq(o.result, JOB_ERROR);
	ck_assert_uint_eq(o.http_status, 429);
	ck_assert(o.retry_after_ms == 0);	/* a date long past */

	/* 409 is transient, and its Retry-After is not honoured */
	attempt("/conflict", "post", 65536, &o);
	ck_assert_int_eq(o.result, JOB_ERROR);
	ck_assert(o.retry_after_ms == 0);

	/* never follows: the 302 itself is the (transient) answer */
	attempt("/redirect", "post", 65536, &o);
	ck_assert_int_eq(o.result, JOB_ERROR);
	ck_assert_str_eq(o.detail, "http 302");
}
END_TEST

START_TEST(test_run_cap)
{
	struct job_outcome o;

	transport(_i);

	/* 256 KiB answer, 1 KiB cap: cut, and the 200 stands */
	attempt("/big", "post", 1024, &o);
	ck_assert_msg(o.result == JOB_OK, "%s", o.detail);
	ck_assert_uint_eq(o.http_status, 200);
	attempt("/big", "post", 1024 * 1024, &o);
	ck_assert_msg(o.result == JOB_OK, "%s", o.detail);
}
END_TEST

START_TEST(test_run_timeout)
{
	struct job_outcome o;
	time_t t0 = time(NULL);

	transport(_i);

	attempt("/slow", "post", 65536, &o);
	ck_assert_int_eq(o.result, JOB_ERROR);
	ck_assert_uint_eq(o.http_status, 0);
	ck_assert_msg(strstr(o.detail, "imed out") != NULL, "%s", o.detail);
	ck_assert_int_le(time(NULL) - t0, 2);
}
END_TEST

/* Read one request (head, then Content-Length bytes); 0, or -1 at EOF. */
static int
read_request(int fd)
{
	char buf[16384];
	size_t len = 0, need = 0;
	ssize_t n;
	char *e, *cl;

	for (;;) {
		if ((n = read(fd, buf + len, sizeof(buf) - 1 - len)) <= 0)
			return -1;
		len += n;
		buf[len] = '\0';
		if ((e = strstr(buf, "\r\n\r\n")) == NULL)
			continue;
		if (need == 0) {
			need = e + 4 - buf;
			if ((cl = strcasestr(buf, "content-length:")) != NULL &&
			    cl < e)
				need += strtoul(cl + 15, NULL, 10);
		}
		if (len >= need)
			return 0;
	}
}

/*
 * A server on lfd that answers one request on its first connection and
 * then closes it: at once (close_now), else when the next request comes,
 * unanswered; then answers on a second connection.  The client runs two
 * attempts, idle_ms apart, with transport t: both succeed, the second on
 * a new connection.
 */
static void
closed_conn_run(int t, int close_now, int idle_ms)
{
	static const char ok[] =
	    "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok";
	struct job_outcome o;
	struct job j;
	char url[128];
	pid_t pid;
	int lfd, c1, c2;

	lfd = listen_loopback(8);
	if ((pid = fork()) == 0) {
		if ((c1 = accept(lfd, NULL, NULL)) == -1 ||
		    read_request(c1) == -1 ||
		    write(c1, ok, sizeof(ok) - 1) != sizeof(ok) - 1 ||
		    (!close_now && read_request(c1) == -1))
			_exit(1);
		close(c1);
		if ((c2 = accept(lfd, NULL, NULL)) == -1 ||
		    read_request(c2) == -1 ||
		    write(c2, ok, sizeof(ok) - 1) != sizeof(ok) - 1)
			_exit(1);
		(void)read_request(c2);	/* until the client goes */
		_exit(0);
	}
	ck_assert_int_gt(pid, 0);
	close(lfd);
	transport(t);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d/stale", server_port);
	http_job(&j, 0, url);
	memset(&o, 0, sizeof(o));
	sink_http_run(&j, &o);
	ck_assert_msg(o.result == JOB_OK, "first: %s", o.detail);
	if (idle_ms > 0)
		usleep(idle_ms * 1000);
	memset(&o, 0, sizeof(o));
	sink_http_run(&j, &o);
	ck_assert_msg(o.result == JOB_OK, "second, on a new connection: %s",
	    o.detail);
	sink_http_cleanup();
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* A kept-alive connection that the server closes on the next request
 * without answering: the client sends it once more on a new connection
 * (both transports), and the attempt succeeds. */
START_TEST(test_run_stale)
{
	closed_conn_run(_i, 0, 0);
}
END_TEST

/* A server that closes a kept-alive connection right after its answer
 * (without saying so): the next request, sent at once (not checked
 * first) or after the connection sat idle (checked), goes out on a new
 * connection (both transports). */
START_TEST(test_run_closed_after_answer)
{
	closed_conn_run(_i % 2, 1, _i >= 2 ? HTTP1_FRESH_MS + 20 : 0);
}
END_TEST

START_TEST(test_run_refused)
{
	struct job_outcome o;

	transport(_i);

	server_stop();		/* nobody listens on the port now */
	attempt("/check", "post", 65536, &o);
	ck_assert_int_eq(o.result, JOB_ERROR);
	ck_assert_uint_eq(o.http_status, 0);
	ck_assert_msg(o.detail[0] != '\0', "empty detail");
}
END_TEST

START_TEST(test_run_bad_options)
{
	struct job_outcome o;

	transport(_i);

	attempt("/check", "delete", 65536, &o);
	ck_assert_int_eq(o.result, JOB_PERMANENT);
}
END_TEST


/*
 * The plain-http client's answer parser (http1.c).
 */

/* Parse text fed n bytes at a time (0: all at once); the state after the
 * last byte, with *used the bytes of the last piece taken. */
static enum http1_state
parse_in(struct http1_parser *p, struct http1_answer *a, const char *text,
    size_t step, uint64_t cap, size_t *left)
{
	size_t len = strlen(text), off = 0, k, used = 0;
	enum http1_state st = HTTP1_MORE;

	http1_answer_init(a);
	http1_parse_init(p, a, cap);
	while (off < len && st == HTTP1_MORE) {
		k = step == 0 || len - off < step ? len - off : step;
		st = http1_parse(p, text + off, k, &used);
		off += used;
		ck_assert_uint_le(used, k);
	}
	*left = len - off;
	return st;
}

static const struct {
	const char	*text;
	long		 status;
	int		 keep_alive;
	const char	*keep;		/* the body as kept (its first 5
					 * bytes, raw) */
	const char	*retry_after;
	size_t		 left;		/* bytes past the answer */
} h1_cases[] = {
	{ "HTTP/1.1 200 OK\r\nContent-Length: 5\r\n\r\nhello", 200, 1,
	  "hello", "", 0 },
	{ "HTTP/1.1 201 Created\r\ncontent-length:  2 \r\nConnection: "
	  "close\r\n\r\nok", 201, 0, "ok", "", 0 },
	{ "HTTP/1.0 200 OK\r\nContent-Length: 0\r\n\r\n", 200, 0, "", "", 0 },
	{ "HTTP/1.0 200 OK\r\nConnection: Keep-Alive\r\nContent-Length: 1"
	  "\r\n\r\nx", 200, 1, "x", "", 0 },
	{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n"
	  "5;ext=1\r\nhel\x01o\r\n1\r\n!\r\n0\r\nX-Trailer: t\r\n\r\n", 200, 1,
	  "hel\x01o", "", 0 },
	{ "HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 503 Busy\r\nRetry-After: "
	  "  120 \r\nContent-Length: 3\r\n\r\nno\n", 503, 1, "no\n", "120", 0 },
	{ "HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1", 204, 1, "", "", 8 },
	{ "HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nabEXTRA", 200, 1,
	  "ab", "", 5 },
	{ "HTTP/1.1 410 Gone\n\n", 410, 0, "", "", 0 },	/* to EOF */
};

START_TEST(test_h1_answers)
{
	static const size_t steps[] = { 0, 1, 2, 7 };
	struct http1_parser *p = malloc(sizeof(*p));
	struct http1_answer a;
	enum http1_state st;
	size_t i, left;

	ck_assert_ptr_nonnull(p);
	http1_set_keep(5);
	for (i = 0; i < sizeof(steps) / sizeof(steps[0]); i++) {
		st = parse_in(p, &a, h1_cases[_i].text, steps[i], 1 << 20,
		    &left);
		if (st == HTTP1_MORE && left == 0)
			st = http1_parse_eof(p);	/* ends with the link */
		ck_assert_msg(st == HTTP1_DONE, "case %d step %zu: %s", _i,
		    steps[i], http1_parse_error(p));
		ck_assert_int_eq(a.status, h1_cases[_i].status);
		ck_assert_int_eq(http1_parse_keep_alive(p),
		    h1_cases[_i].keep_alive);
		ck_assert_uint_eq(a.keeplen, strlen(h1_cases[_i].keep));
		ck_assert_int_eq(memcmp(a.keep, h1_cases[_i].keep, a.keeplen),
		    0);
		ck_assert_str_eq(a.retry_after, h1_cases[_i].retry_after);
		ck_assert_uint_eq(left, h1_cases[_i].left);
		ck_assert_int_eq(a.capped, 0);
	}
	free(p);
}
END_TEST

static const struct {
	const char	*text;
	const char	*why;		/* part of the error */
} h1_bad[] = {
	{ "HTTP/2 200 OK\r\n\r\n", "status line" },
	{ "HTTP/1.1 20 OK\r\n\r\n", "status line" },
	{ "HTTP/1.1 200 OK\r\nContent-Length: 1x\r\n\r\n", "Content-Length" },
	{ "HTTP/1.1 200 OK\r\nContent-Length: 1\r\nContent-Length: 2\r\n\r\n",
	  "conflicting" },
	{ "HTTP/1.1 200 OK\r\nno colon here\r\n\r\n", "header" },
	{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
	  "chunk size" },
	{ "HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n1\r\nab\r\n",
	  "CRLF" },
	{ "HTTP/1.1 101 Switching\r\n\r\n", "switch" },
};

START_TEST(test_h1_bad)
{
	struct http1_parser *p = malloc(sizeof(*p));
	struct http1_answer a;
	size_t left;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(parse_in(p, &a, h1_bad[_i].text, 0, 1 << 20, &left),
	    HTTP1_BAD);
	ck_assert_msg(strstr(http1_parse_error(p), h1_bad[_i].why) != NULL,
	    "case %d: %s", _i, http1_parse_error(p));
	free(p);
}
END_TEST

/* Cut short by the connection; too long a head; the body cap. */
START_TEST(test_h1_limits)
{
	struct http1_parser *p = malloc(sizeof(*p));
	struct http1_answer a;
	char *big;
	size_t left;

	ck_assert_ptr_nonnull(p);
	ck_assert_int_eq(parse_in(p, &a, "HTTP/1.1 200 OK\r\nContent-Length: "
	    "9\r\n\r\nabc", 0, 1 << 20, &left), HTTP1_MORE);
	ck_assert_int_eq(http1_parse_eof(p), HTTP1_BAD);
	ck_assert_ptr_nonnull(strstr(http1_parse_error(p), "closed"));
	ck_assert_int_eq(parse_in(p, &a, "", 0, 1 << 20, &left), HTTP1_MORE);
	ck_assert_int_eq(http1_parse_eof(p), HTTP1_BAD);
	ck_assert_str_eq(http1_parse_error(p), "Empty reply from server");

	ck_assert_ptr_nonnull(big = malloc(HTTP1_HEAD_MAX + 64));
	memset(big, 'a', HTTP1_HEAD_MAX + 63);
	big[HTTP1_HEAD_MAX + 63] = '\0';
	memcpy(big, "HTTP/1.1 200 OK\r\nX: ", 20);
	ck_assert_int_eq(parse_in(p, &a, big, 1000, 1 << 20, &left),
	    HTTP1_BAD);
	ck_assert_ptr_nonnull(strstr(http1_parse_error(p), "too long"));
	free(big);

	/* 10 body bytes, cap 4: done at the cut, connection not kept */
	ck_assert_int_eq(parse_in(p, &a, "HTTP/1.1 500 X\r\nContent-Length: "
	    "10\r\n\r\n0123456789", 3, 4, &left), HTTP1_DONE);
	ck_assert_int_eq(a.status, 500);
	ck_assert_int_eq(a.capped, 1);
	ck_assert_int_eq(http1_parse_keep_alive(p), 0);
	/* a Retry-After too long to be a valid one is dropped */
	ck_assert_int_eq(parse_in(p, &a, "HTTP/1.1 503 X\r\nRetry-After: "
	    "1111111111111111111111111111111111111111111111111111111111111111"
	    "1111111111111111111111111111111111111111111111111111111111111111"
	    "1\r\nContent-Length: 0\r\n\r\n", 0, 4, &left), HTTP1_DONE);
	ck_assert_str_eq(a.retry_after, "");
	free(p);
}
END_TEST

START_TEST(test_h1_usable)
{
	unsetenv("http_proxy");
	unsetenv("HTTP_PROXY");
	unsetenv("all_proxy");
	unsetenv("ALL_PROXY");
	http1_forget_env();
	ck_assert_int_eq(http1_usable("http://127.0.0.1:8080/x"), 1);
	ck_assert_int_eq(http1_usable("HTTP://example.com/"), 1);
	ck_assert_int_eq(http1_usable("https://example.com/"), 0);
	ck_assert_int_eq(http1_usable("http://u:p@example.com/"), 0);
	ck_assert_int_eq(http1_usable("http://example.com/a@b"), 1);
	setenv("ALL_PROXY", "socks5://127.0.0.1:1080", 1);
	http1_forget_env();
	ck_assert_int_eq(http1_usable("http://example.com/"), 0);
	setenv("ALL_PROXY", "", 1);
	http1_forget_env();
	ck_assert_int_eq(http1_usable("http://example.com/"), 1);
	setenv("http_proxy", "http://proxy:3128", 1);
	http1_forget_env();
	ck_assert_int_eq(http1_usable("http://example.com/"), 0);
	/* Read once: a change shows only after http1_forget_env. */
	unsetenv("http_proxy");
	ck_assert_int_eq(http1_usable("http://example.com/"), 0);
	http1_forget_env();
	ck_assert_int_eq(http1_usable("http://example.com/"), 1);
	unsetenv("ALL_PROXY");
	http1_forget_env();
}
END_TEST

static Suite *
sink_http_suite(void)
{
	Suite *s = suite_create("sink_http");
	TCase *tc;

	tc = tcase_create("pure");
	tcase_set_timeout(tc, 10);
	tcase_add_loop_test(tc, test_classify, 0,
	    sizeof(classify_cases) / sizeof(classify_cases[0]));
	tcase_add_loop_test(tc, test_retry_after, 0,
	    sizeof(ra_cases) / sizeof(ra_cases[0]));
	tcase_add_test(tc, test_sign_example);
	tcase_add_test(tc, test_headers_signed);
	tcase_add_test(tc, test_headers_plain);
	tcase_add_loop_test(tc, test_headers_hook, 0, 4);
	suite_add_tcase(s, tc);

	tc = tcase_create("http1");
	tcase_set_timeout(tc, 10);
	tcase_add_loop_test(tc, test_h1_answers, 0,
	    sizeof(h1_cases) / sizeof(h1_cases[0]));
	tcase_add_loop_test(tc, test_h1_bad, 0,
	    sizeof(h1_bad) / sizeof(h1_bad[0]));
	tcase_add_test(tc, test_h1_limits);
	tcase_add_test(tc, test_h1_usable);
	tcase_add_loop_test(tc, test_egress_check, 0,
	    sizeof(check_cases) / sizeof(check_cases[0]));
	tcase_add_test(tc, test_egress_non_ip);
	suite_add_tcase(s, tc);

	tc = tcase_create("run");
	tcase_set_timeout(tc, 20);
	tcase_add_checked_fixture(tc, server_start, server_stop);
	tcase_add_loop_test(tc, test_run_check, 0, 2);
	tcase_add_loop_test(tc, test_egress_default, 0, 2);
	tcase_add_loop_test(tc, test_egress_allowed, 0, 2);
	tcase_add_loop_test(tc, test_run_classes, 0, 2);
	tcase_add_loop_test(tc, test_run_cap, 0, 2);
	tcase_add_loop_test(tc, test_run_timeout, 0, 2);
	tcase_add_loop_test(tc, test_run_refused, 0, 2);
	tcase_add_loop_test(tc, test_run_stale, 0, 2);
	tcase_add_loop_test(tc, test_run_closed_after_answer, 0, 4);
	tcase_add_loop_test(tc, test_run_bad_options, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	curl_global_init(CURL_GLOBAL_DEFAULT);
	signal(SIGPIPE, SIG_IGN);
	sr = srunner_create(sink_http_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	curl_global_cleanup();
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
