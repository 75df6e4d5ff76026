/* SPDX-License-Identifier: ISC */
/*
 * check_httpreq.c: unit tests for workers/httpreq.c, the edge's request
 * logic: head parsing, chunked decoding, routing, header checks, the
 * forward filter, lane keys and the HTTP answers.
 *
 * Each rule of the ingest contract that httpreq.c owns is a row in a table
 * below; parsers are also fed every split of their input, since the network
 * may cut anywhere.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "httpreq.h"
#include "keys.h"
#include "msg.h"

#define CASE_TIMEOUT	10

static struct conf	*test_conf(enum routing, const char *prefix);
static void		 test_conf_free(struct conf *);
static enum httpreq_status feed_all(struct httpreq *, const char *, size_t,
			    size_t *);
static char		*chunked_run(const char *, size_t, uint64_t,
			    enum httpreq_status *, int *, size_t *);

/*
 * The sources every test sees:
 *   github  shared (no tenant); sinks: log, ordered KEY_NONE, ordered on
 *           header X-Order, ordered on JSON data.id, ordered on JSON n
 *   stripe  bound to tenant acme
 *   shared  tenant "default"
 *   narrow  forward_headers: X-Keep, Authorization, Content-Type,
 *           Connection, X-Ankusa-Trace
 *   signed  hmac on Authorization over {header:Cookie} and {ts} (header
 *           X-Ts), dedupe on header X-Api-Key, a lane on header Host
 *   swh     standard_webhooks
 */
static const char test_yaml[] =
    "node:\n"
    "  data_dir: /tmp/ankusa-check-httpreq\n"
    "http:\n"
    "  routing: %s\n"
    "  prefix: \"%s\"\n"
    "  max_body_bytes: 1000\n"
    "sources:\n"
    "  github:\n"
    "    verify: {type: none}\n"
    "    trust_url_tenant: true\n"
    "    sinks:\n"
    "      - type: log\n"
    "      - type: log\n"
    "        ordered: true\n"
    "      - type: log\n"
    "        ordered: true\n"
    "        order_key: {header: X-Order}\n"
    "      - type: log\n"
    "        ordered: true\n"
    "        order_key: {json: data.id}\n"
    "      - type: log\n"
    "        ordered: true\n"
    "        order_key: {json: n}\n"
    "  stripe:\n"
    "    tenant: acme\n"
    "    sinks:\n"
    "      - type: log\n"
    "  shared:\n"
    "    tenant: default\n"
    "    trust_url_tenant: true\n"
    "    sinks:\n"
    "      - type: log\n"
    "  narrow:\n"
    "    trust_url_tenant: true\n"
    "    forward_headers: [X-Keep, Authorization, Content-Type, Connection,"
    " X-Ankusa-Trace]\n"
    "    sinks:\n"
    "      - type: log\n"
    "  signed:\n"
    "    trust_url_tenant: true\n"
    "    verify: {type: hmac, secret: s, signature_header: Authorization,\n"
    "      signed: \"{header:Cookie}.{ts}.{body}\", timestamp_header: X-Ts}\n"
    "    dedupe: {header: X-Api-Key}\n"
    "    sinks:\n"
    "      - type: log\n"
    "        ordered: true\n"
    "        order_key: {header: Host}\n"
    "  swh:\n"
    "    trust_url_tenant: true\n"
    "    verify: {type: standard_webhooks, secret: \"whsec_c2VjcmV0\"}\n"
    "    sinks:\n"
    "      - type: log\n";

static struct conf *
test_conf(enum routing routing, const char *prefix)
{
	struct conf_errors errs = { NULL, 0 };
	struct conf *cf;
	char text[4096];
	int i, n;

	/* The config writes "no prefix" as "/" and stores it as "". */
	n = snprintf(text, sizeof(text), test_yaml,
	    routing == ROUTING_TENANT_PATH ? "tenant_path" : "path",
	    prefix[0] != '\0' ? prefix : "/");
	ck_assert_int_lt(n, (int)sizeof(text));
	cf = conf_parse(text, n, "test", &errs);
	for (i = 0; i < errs.n; i++)
		fprintf(stderr, "test config: %s\n", errs.msgs[i]);
	conf_errors_free(&errs);
	ck_assert_ptr_nonnull(cf);
	if (strcmp(prefix, "/") == 0 || prefix[0] == '\0')
		ck_assert_str_eq(cf->http.prefix, "");
	return cf;
}

static void
test_conf_free(struct conf *cf)
{
	conf_free(cf);
}

/* Feed in one go. */
static enum httpreq_status
feed_all(struct httpreq *r, const char *s, size_t len, size_t *used)
{
	return httpreq_feed(r, s, len, used);
}

/* Request heads. */

struct head_case {
	const char	*in;
	enum httpreq_status st;
	int		 error;
	const char	*method;
	const char	*target;
	int		 nheaders;
	int		 keep_alive;
	int		 has_length;
	uint64_t	 length;
	int		 chunked;
	int		 expect;
	size_t		 rest;		/* bytes after the head */
};

#define HEAD_BAD(s)	{ .in = (s), .st = HTTPREQ_ERROR, .error = 400 }

static const struct head_case head_cases[] = {
	{ "GET /health HTTP/1.1\r\nHost: x\r\n\r\n", HTTPREQ_DONE, 0,
	    "GET", "/health", 1, 1, 0, 0, 0, 0, 0 },
	{ "POST /webhooks/a?x=1 HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
	    HTTPREQ_DONE, 0, "POST", "/webhooks/a?x=1", 1, 1, 1, 5, 0, 0, 5 },
	{ "GET / HTTP/1.0\r\n\r\n", HTTPREQ_DONE, 0,
	    "GET", "/", 0, 0, 0, 0, 0, 0, 0 },
	{ "GET / HTTP/1.0\r\nConnection: Keep-Alive\r\n\r\n", HTTPREQ_DONE, 0,
	    "GET", "/", 1, 1, 0, 0, 0, 0, 0 },
	{ "GET / HTTP/1.1\r\nConnection: foo, close\r\n\r\n", HTTPREQ_DONE, 0,
	    "GET", "/", 1, 0, 0, 0, 0, 0, 0 },
	{ "GET / HTTP/1.1\nA: b\n\n", HTTPREQ_DONE, 0,
	    "GET", "/", 1, 1, 0, 0, 0, 0, 0 },
	{ "\r\n\r\nGET / HTTP/1.1\r\n\r\n", HTTPREQ_DONE, 0,
	    "GET", "/", 0, 1, 0, 0, 0, 0, 0 },
	{ "POST /a HTTP/1.1\r\nTransfer-Encoding: Chunked\r\n\r\n0\r\n\r\n",
	    HTTPREQ_DONE, 0, "POST", "/a", 1, 1, 0, 0, 1, 0, 5 },
	{ "POST /a HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 1\r\n"
	    "\r\n", HTTPREQ_DONE, 0, "POST", "/a", 2, 1, 1, 1, 0, 1, 0 },
	{ "POST /a HTTP/1.1\r\nContent-Length: 7\r\ncontent-length: 7\r\n\r\n",
	    HTTPREQ_DONE, 0, "POST", "/a", 2, 1, 1, 7, 0, 0, 0 },
	{ "GET / HTTP/1.1\r\nX:  a b \t\r\nY:\r\n\r\n", HTTPREQ_DONE, 0,
	    "GET", "/", 2, 1, 0, 0, 0, 0, 0 },
	{ .in = "GET / HTTP/1.1\r\nHost: x\r\n", .st = HTTPREQ_MORE },
	{ .in = "GET / HTTP/1.1\r\nHost: x\r\n\r", .st = HTTPREQ_MORE },
	/* bad request lines */
	HEAD_BAD("GET  / HTTP/1.1\r\n\r\n"),
	HEAD_BAD("GET / HTTP/1.1 \r\n\r\n"),
	HEAD_BAD("GET / HTTP/2.0\r\n\r\n"),
	HEAD_BAD("GET / http/1.1\r\n\r\n"),
	HEAD_BAD("GET /\r\n\r\n"),
	HEAD_BAD("G@T / HTTP/1.1\r\n\r\n"),
	HEAD_BAD("GET /a\x01" "b HTTP/1.1\r\n\r\n"),
	HEAD_BAD(" / HTTP/1.1\r\n\r\n"),
	HEAD_BAD("GET / HTTP/1.1\rX: y\r\n\r\n"),
	/* framing */
	HEAD_BAD("POST / HTTP/1.1\r\nContent-Length: 3\r\nTransfer-Encoding: "
	    "chunked\r\n\r\n"),
	HEAD_BAD("POST / HTTP/1.1\r\nContent-Length: abc\r\n\r\n"),
	HEAD_BAD("POST / HTTP/1.1\r\nContent-Length: -1\r\n\r\n"),
	HEAD_BAD("POST / HTTP/1.1\r\nContent-Length: +1\r\n\r\n"),
	HEAD_BAD("POST / HTTP/1.1\r\nContent-Length: 5, 5\r\n\r\n"),
	HEAD_BAD("POST / HTTP/1.1\r\nContent-Length:\r\n\r\n"),
	HEAD_BAD("POST / HTTP/1.1\r\nContent-Length: 99999999999999999999\r\n"
	    "\r\n"),
	HEAD_BAD("POST / HTTP/1.1\r\nContent-Length: 5\r\nContent-Length: 6\r\n"
	    "\r\n"),
	HEAD_BAD("POST / HTTP/1.1\r\nTransfer-Encoding: gzip\r\n\r\n"),
	HEAD_BAD("POST / HTTP/1.1\r\nTransfer-Encoding: gzip, chunked\r\n"
	    "\r\n"),
	HEAD_BAD("POST / HTTP/1.1\r\nTransfer-Encoding: chunked\r\n"
	    "Transfer-Encoding: chunked\r\n\r\n"),
	/* header syntax */
	HEAD_BAD("GET / HTTP/1.1\r\nX: a\r\n b\r\n\r\n"),
	HEAD_BAD("GET / HTTP/1.1\r\n\tX: a\r\n\r\n"),
	HEAD_BAD("GET / HTTP/1.1\r\nNoColon\r\n\r\n"),
	HEAD_BAD("GET / HTTP/1.1\r\n: empty\r\n\r\n"),
	HEAD_BAD("GET / HTTP/1.1\r\nX: a\rb\r\n\r\n"),
};

START_TEST(test_head)
{
	const struct head_case *tc = &head_cases[_i];
	struct httpreq r;
	enum httpreq_status st;
	size_t len = strlen(tc->in), used;

	httpreq_init(&r);
	st = feed_all(&r, tc->in, len, &used);
	ck_assert_msg(st == tc->st, "case %d: status %d, want %d", _i, st,
	    tc->st);
	if (st == HTTPREQ_ERROR)
		ck_assert_int_eq(r.error, tc->error);
	if (st == HTTPREQ_MORE)
		ck_assert_uint_eq(used, len);
	if (st == HTTPREQ_DONE) {
		ck_assert_str_eq(r.method, tc->method);
		ck_assert_str_eq(r.target, tc->target);
		ck_assert_int_eq(r.nheaders, tc->nheaders);
		ck_assert_int_eq(r.keep_alive, tc->keep_alive);
		ck_assert_int_eq(r.has_length, tc->has_length);
		ck_assert_uint_eq(r.content_length, tc->length);
		ck_assert_int_eq(r.chunked, tc->chunked);
		ck_assert_int_eq(r.expect_continue, tc->expect);
		ck_assert_uint_eq(len - used, tc->rest);
	}
	httpreq_free(&r);
}
END_TEST

START_TEST(test_head_values)
{
	const char *in = "GET / HTTP/1.1\r\nX:  a b \t\r\nY:\r\n"
	    "Content-TYPE: text/plain\r\n\r\n";
	const struct httpreq_header *h;
	struct httpreq r;
	size_t used;

	httpreq_init(&r);
	ck_assert_int_eq(httpreq_feed(&r, in, strlen(in), &used),
	    HTTPREQ_DONE);
	ck_assert_str_eq(r.headers[0].name, "X");
	ck_assert_str_eq(r.headers[0].value, "a b");
	ck_assert_uint_eq(r.headers[0].valuelen, 3);
	ck_assert_str_eq(r.headers[1].value, "");
	ck_assert_ptr_nonnull(h = httpreq_header(&r, "content-type"));
	ck_assert_str_eq(h->value, "text/plain");
	ck_assert_ptr_null(httpreq_header(&r, "content-typ"));
	ck_assert_int_eq(r.minor, 1);
	httpreq_free(&r);
}
END_TEST

/* Two requests in one buffer: the first ends where its head ends. */
START_TEST(test_head_pipelined)
{
	const char *in = "GET /health HTTP/1.1\r\n\r\n"
	    "POST /webhooks/github HTTP/1.1\r\nContent-Length: 2\r\n\r\nhi"
	    "GET /ready HTTP/1.1\r\n\r\n";
	struct httpreq r;
	size_t len = strlen(in), off = 0, used;

	httpreq_init(&r);
	ck_assert_int_eq(httpreq_feed(&r, in, len, &used), HTTPREQ_DONE);
	ck_assert_str_eq(r.target, "/health");
	off += used;
	httpreq_reset(&r);
	ck_assert_int_eq(httpreq_feed(&r, in + off, len - off, &used),
	    HTTPREQ_DONE);
	ck_assert_str_eq(r.target, "/webhooks/github");
	ck_assert_uint_eq(r.content_length, 2);
	off += used;
	ck_assert(memcmp(in + off, "hi", 2) == 0);
	off += 2;
	httpreq_reset(&r);
	ck_assert_int_eq(httpreq_feed(&r, in + off, len - off, &used),
	    HTTPREQ_DONE);
	ck_assert_str_eq(r.target, "/ready");
	ck_assert_uint_eq(off + used, len);
	httpreq_free(&r);
}
END_TEST

/* Every split of every case gives the one-shot result. */
START_TEST(test_head_split)
{
	const struct head_case *tc = &head_cases[_i];
	struct httpreq whole, r;
	enum httpreq_status st0, st;
	size_t len = strlen(tc->in), used0, used, k, tot;
	int j;

	httpreq_init(&whole);
	st0 = httpreq_feed(&whole, tc->in, len, &used0);
	for (k = 0; k <= len; k++) {
		httpreq_init(&r);
		st = httpreq_feed(&r, tc->in, k, &used);
		tot = used;
		if (st == HTTPREQ_MORE) {
			ck_assert_uint_eq(used, k);
			st = httpreq_feed(&r, tc->in + k, len - k, &used);
			tot += used;
		}
		ck_assert_msg(st == st0, "case %d split %zu: %d != %d", _i, k,
		    st, st0);
		if (st == HTTPREQ_DONE) {
			ck_assert_uint_eq(tot, used0);
			ck_assert_str_eq(r.method, whole.method);
			ck_assert_str_eq(r.target, whole.target);
			ck_assert_int_eq(r.nheaders, whole.nheaders);
			for (j = 0; j < r.nheaders; j++) {
				ck_assert_str_eq(r.headers[j].name,
				    whole.headers[j].name);
				ck_assert_str_eq(r.headers[j].value,
				    whole.headers[j].value);
			}
		} else if (st == HTTPREQ_ERROR)
			ck_assert_int_eq(r.error, whole.error);
		httpreq_free(&r);
	}
	/* And byte by byte. */
	httpreq_init(&r);
	st = HTTPREQ_MORE;
	for (k = 0, tot = 0; k < len && st == HTTPREQ_MORE; k++) {
		st = httpreq_feed(&r, tc->in + k, 1, &used);
		tot += used;
	}
	ck_assert_int_eq(st, st0);
	if (st == HTTPREQ_DONE)
		ck_assert_uint_eq(tot, used0);
	httpreq_free(&r);
	httpreq_free(&whole);
}
END_TEST

/* Limits: 100 headers pass, 101 do not; 64 KiB passes, one more not. */
struct limit_case {
	int	nheaders;
	size_t	size;		/* total head size, 0: as it comes */
	enum httpreq_status st;
	int	error;
};

static const struct limit_case limit_cases[] = {
	{ 100, 0, HTTPREQ_DONE, 0 },
	{ 101, 0, HTTPREQ_ERROR, 431 },
	{ 1000, 0, HTTPREQ_ERROR, 431 },
	{ 1, HTTPREQ_HEAD_MAX, HTTPREQ_DONE, 0 },
	{ 1, HTTPREQ_HEAD_MAX + 1, HTTPREQ_ERROR, 431 },
	{ 1, 4 * HTTPREQ_HEAD_MAX, HTTPREQ_ERROR, 431 },
};

START_TEST(test_head_limits)
{
	const struct limit_case *tc = &limit_cases[_i];
	struct httpreq r;
	char *buf;
	size_t len = 0, cap, pad, used;
	int j;

	cap = 64 * 1024 * 5 + tc->nheaders * 32;
	if ((buf = malloc(cap)) == NULL)
		abort();
	len += sprintf(buf, "POST /webhooks/github HTTP/1.1\r\n");
	for (j = 0; j < tc->nheaders; j++)
		len += sprintf(buf + len, "X-H%d: v\r\n", j);
	if (tc->size > 0) {
		/* One header padded so that the head is exactly tc->size. */
		pad = tc->size - len - strlen("X-Pad: \r\n\r\n");
		len += sprintf(buf + len, "X-Pad: ");
		memset(buf + len, 'p', pad);
		len += pad;
		len += sprintf(buf + len, "\r\n");
	}
	len += sprintf(buf + len, "\r\n");
	if (tc->size > 0)
		ck_assert_uint_eq(len, tc->size);

	httpreq_init(&r);
	ck_assert_int_eq(httpreq_feed(&r, buf, len, &used), tc->st);
	if (tc->st == HTTPREQ_ERROR)
		ck_assert_int_eq(r.error, tc->error);
	httpreq_free(&r);

	/* The limit holds however the bytes come. */
	httpreq_init(&r);
	{
		enum httpreq_status st = HTTPREQ_MORE;
		size_t off = 0, n;

		while (off < len && st == HTTPREQ_MORE) {
			n = len - off < 1000 ? len - off : 1000;
			st = httpreq_feed(&r, buf + off, n, &used);
			off += used;
		}
		ck_assert_int_eq(st, tc->st);
		if (st == HTTPREQ_ERROR)
			ck_assert_int_eq(r.error, tc->error);
	}
	httpreq_free(&r);
	free(buf);
}
END_TEST

/* Chunked bodies. */

struct chunk_case {
	const char	*in;
	uint64_t	 max;
	enum httpreq_status st;
	int		 error;
	const char	*body;
	size_t		 rest;		/* bytes after the body */
};

#define CHUNK_BAD(s, m, e) \
	{ .in = (s), .max = (m), .st = HTTPREQ_ERROR, .error = (e) }

static const struct chunk_case chunk_cases[] = {
	{ "5\r\nhello\r\n0\r\n\r\n", 100, HTTPREQ_DONE, 0, "hello", 0 },
	{ "5\r\nhello\r\n6\r\n world\r\n0\r\n\r\nGET", 100, HTTPREQ_DONE, 0,
	    "hello world", 3 },
	{ "A\r\n0123456789\r\n0\r\n\r\n", 100, HTTPREQ_DONE, 0, "0123456789",
	    0 },
	{ "a\r\n0123456789\r\n000\r\n\r\n", 100, HTTPREQ_DONE, 0,
	    "0123456789", 0 },
	{ "5;name=value;x\r\nhello\r\n0;end\r\n\r\n", 100, HTTPREQ_DONE, 0,
	    "hello", 0 },
	{ "5 ;x\r\nhello\r\n0\r\n\r\n", 100, HTTPREQ_DONE, 0, "hello", 0 },
	{ "5\r\nhello\r\n0\r\nX-Trailer: 1\r\nY: 2\r\n\r\nxx", 100,
	    HTTPREQ_DONE, 0, "hello", 2 },
	{ "5\nhello\n0\n\n", 100, HTTPREQ_DONE, 0, "hello", 0 },
	{ "0\r\n\r\n", 100, HTTPREQ_DONE, 0, "", 0 },
	{ "5\r\nhello\r\n5\r\nworld\r\n0\r\n\r\n", 10, HTTPREQ_DONE, 0,
	    "helloworld", 0 },
	{ .in = "5\r\nhello\r\n", .max = 100, .st = HTTPREQ_MORE },
	/* cap */
	CHUNK_BAD("b\r\nhello world\r\n0\r\n\r\n", 10, 413),
	CHUNK_BAD("5\r\nhello\r\n6\r\n world\r\n0\r\n\r\n", 10, 413),
	CHUNK_BAD("ffffffffffffffff\r\n", 10, 413),
	/* syntax */
	CHUNK_BAD("x\r\nhello\r\n0\r\n\r\n", 100, 400),
	CHUNK_BAD("\r\nhello\r\n0\r\n\r\n", 100, 400),
	CHUNK_BAD(";x\r\n", 100, 400),
	CHUNK_BAD("-5\r\n", 100, 400),
	CHUNK_BAD("5 5\r\nhello\r\n", 100, 400),
	CHUNK_BAD("10000000000000000\r\n", 100, 400),
	CHUNK_BAD("5\r\nhelloX\r\n0\r\n\r\n", 100, 400),
	CHUNK_BAD("5\r\nhello\rX", 100, 400),
	CHUNK_BAD("5\rX", 100, 400),
	CHUNK_BAD("5;a\x01\r\nhello\r\n0\r\n\r\n", 100, 400),
	CHUNK_BAD("0\r\n\rX", 100, 400),
};

/* Feed s split at k; returns the decoded body (malloc'd) on DONE. */
static char *
chunked_run(const char *s, size_t k, uint64_t max, enum httpreq_status *stp,
    int *errp, size_t *usedp)
{
	struct httpreq_chunked c;
	enum httpreq_status st;
	size_t len = strlen(s), used, tot;
	char *out = NULL;

	httpreq_chunked_init(&c, max);
	st = httpreq_chunked_feed(&c, s, k, &used);
	tot = used;
	if (st == HTTPREQ_MORE) {
		ck_assert_uint_eq(used, k);
		st = httpreq_chunked_feed(&c, s + k, len - k, &used);
		tot += used;
	}
	*stp = st;
	*errp = c.error;
	*usedp = tot;
	if (st == HTTPREQ_DONE) {
		ck_assert_ptr_nonnull(out = malloc(c.outlen + 1));
		if (c.outlen > 0)
			memcpy(out, c.out, c.outlen);
		out[c.outlen] = '\0';
		ck_assert_uint_le(c.outlen, max);
	}
	httpreq_chunked_free(&c);
	return out;
}

START_TEST(test_chunked)
{
	const struct chunk_case *tc = &chunk_cases[_i];
	enum httpreq_status st;
	size_t len = strlen(tc->in), used, k;
	char *body;
	int err;

	for (k = 0; k <= len; k++) {
		body = chunked_run(tc->in, k, tc->max, &st, &err, &used);
		ck_assert_msg(st == tc->st, "case %d split %zu: %d != %d", _i,
		    k, st, tc->st);
		if (st == HTTPREQ_ERROR)
			ck_assert_int_eq(err, tc->error);
		if (st == HTTPREQ_DONE) {
			ck_assert_str_eq(body, tc->body);
			ck_assert_uint_eq(len - used, tc->rest);
		}
		if (st == HTTPREQ_MORE)
			ck_assert_uint_eq(used, len);
		free(body);
	}
}
END_TEST

/*
 * Chunk extensions and trailers are read and ignored, so they are bounded
 * on their own: extensions per size line and in all a body's size lines,
 * trailer fields and trailer bytes.  Each row builds a body of n units
 * and says whether n is still within the bound.
 */
enum chunk_unit {
	CU_EXTS,	/* one size line with n extensions ";e" */
	CU_EXT_BYTES,	/* n chunks, each with a 1000-byte extension */
	CU_TRAILERS,	/* n trailer fields "t: v" */
	CU_TRAILER_BYTES,/* n trailer fields of 1024 bytes with their CRLF */
};

struct bound_case {
	enum chunk_unit	 unit;
	int		 n;
	int		 error;		/* 0: DONE, with the body */
};

static const struct bound_case bound_cases[] = {
	{ CU_EXTS, HTTPREQ_CHUNK_EXTS_MAX, 0 },
	{ CU_EXTS, HTTPREQ_CHUNK_EXTS_MAX + 1, 400 },
	{ CU_EXT_BYTES, HTTPREQ_CHUNK_EXT_TOTAL / 1000, 0 },
	{ CU_EXT_BYTES, HTTPREQ_CHUNK_EXT_TOTAL / 1000 + 1, 400 },
	{ CU_TRAILERS, HTTPREQ_TRAILERS_MAX, 0 },
	{ CU_TRAILERS, HTTPREQ_TRAILERS_MAX + 1, 431 },
	{ CU_TRAILER_BYTES, HTTPREQ_TRAILER_MAX / 1024, 0 },
	{ CU_TRAILER_BYTES, HTTPREQ_TRAILER_MAX / 1024 + 1, 431 },
};

START_TEST(test_chunked_bounds)
{
	const struct bound_case *tc = &bound_cases[_i];
	enum httpreq_status st;
	char *s, *p, *body, *want;
	size_t used, len, k;
	int i, err, nbody = 0;

	ck_assert_ptr_nonnull(s = malloc(64 * 1024));
	ck_assert_ptr_nonnull(want = malloc(tc->n + 2));
	p = s;
	switch (tc->unit) {
	case CU_EXTS:
		p += sprintf(p, "1");
		for (i = 0; i < tc->n; i++)
			p += sprintf(p, ";e");
		p += sprintf(p, "\r\nx\r\n0\r\n\r\n");
		want[nbody++] = 'x';
		break;
	case CU_EXT_BYTES:
		for (i = 0; i < tc->n; i++) {
			/* ";" and 999 bytes: 1000 extension bytes. */
			p += sprintf(p, "1;%0999d\r\ny\r\n", 0);
			want[nbody++] = 'y';
		}
		p += sprintf(p, "0\r\n\r\n");
		break;
	case CU_TRAILERS:
		p += sprintf(p, "1\r\nz\r\n0\r\n");
		for (i = 0; i < tc->n; i++)
			p += sprintf(p, "t: v\r\n");
		p += sprintf(p, "\r\n");
		want[nbody++] = 'z';
		break;
	case CU_TRAILER_BYTES:
		p += sprintf(p, "1\r\nz\r\n0\r\n");
		for (i = 0; i < tc->n; i++) {
			p += sprintf(p, "t: ");
			memset(p, 'v', 1024 - 5);
			p += 1024 - 5;
			p += sprintf(p, "\r\n");
		}
		p += sprintf(p, "\r\n");
		want[nbody++] = 'z';
		break;
	}
	want[nbody] = '\0';
	len = (size_t)(p - s);
	/* Whole, split in the middle, and cut one byte before the end. */
	for (k = 0; k < 3; k++) {
		body = chunked_run(s, k == 0 ? len : k == 1 ? len / 2 : len - 1,
		    100, &st, &err, &used);
		if (tc->error == 0) {
			ck_assert_msg(st == HTTPREQ_DONE, "case %d: %d", _i, st);
			ck_assert_str_eq(body, want);
			ck_assert_uint_eq(used, len);
		} else {
			ck_assert_msg(st == HTTPREQ_ERROR, "case %d: %d", _i,
			    st);
			ck_assert_int_eq(err, tc->error);
		}
		free(body);
	}
	free(want);
	free(s);
}
END_TEST

/* Routing. */

struct route_case {
	enum routing	 routing;
	const char	*prefix;
	const char	*method;
	const char	*target;
	enum httpreq_route_kind kind;
	const char	*tenant;
	const char	*source;
};

#define ROUTE_TO(r, p, m, t, k) \
	{ (r), (p), (m), (t), (k), NULL, NULL }

static const struct route_case route_cases[] = {
	ROUTE_TO(ROUTING_PATH, "/webhooks", "GET", "/health",
	    HTTPREQ_ROUTE_HEALTH),
	ROUTE_TO(ROUTING_PATH, "/webhooks", "GET", "/health?x",
	    HTTPREQ_ROUTE_HEALTH),
	ROUTE_TO(ROUTING_PATH, "/webhooks", "GET", "/ready",
	    HTTPREQ_ROUTE_READY),
	ROUTE_TO(ROUTING_PATH, "/webhooks", "POST", "/health",
	    HTTPREQ_ROUTE_NOT_FOUND),
	{ ROUTING_PATH, "/webhooks", "POST", "/webhooks/github",
	    HTTPREQ_ROUTE_HOOK, "", "github" },
	{ ROUTING_PATH, "/webhooks", "POST", "/webhooks/github?a=b/c",
	    HTTPREQ_ROUTE_HOOK, "", "github" },
	{ ROUTING_PATH, "/webhooks", "POST",
	    "http://example.com/webhooks/github", HTTPREQ_ROUTE_HOOK, "",
	    "github" },
	{ ROUTING_PATH, "/webhooks", "POST", "/webhooks/no-such_src",
	    HTTPREQ_ROUTE_HOOK, "", "no-such_src" },
	ROUTE_TO(ROUTING_PATH, "/webhooks", "GET", "/webhooks/github",
	    HTTPREQ_ROUTE_METHOD),
	ROUTE_TO(ROUTING_PATH, "/webhooks", "post", "/webhooks/github",
	    HTTPREQ_ROUTE_METHOD),
	ROUTE_TO(ROUTING_PATH, "/webhooks", "POST", "/webhooks/github/",
	    HTTPREQ_ROUTE_UNKNOWN_SOURCE),
	ROUTE_TO(ROUTING_PATH, "/webhooks", "POST", "/webhooks/a/b",
	    HTTPREQ_ROUTE_UNKNOWN_SOURCE),
	ROUTE_TO(ROUTING_PATH, "/webhooks", "POST", "/webhooks",
	    HTTPREQ_ROUTE_UNKNOWN_SOURCE),
	ROUTE_TO(ROUTING_PATH, "/webhooks", "POST", "/webhooks/",
	    HTTPREQ_ROUTE_UNKNOWN_SOURCE),
	ROUTE_TO(ROUTING_PATH, "/webhooks", "GET", "/webhooks/bad.id",
	    HTTPREQ_ROUTE_UNKNOWN_SOURCE),
	ROUTE_TO(ROUTING_PATH, "/webhooks", "POST", "/webhooks/gith%75b",
	    HTTPREQ_ROUTE_UNKNOWN_SOURCE),
	{ ROUTING_PATH, "/webhooks", "POST", "/webhooks/"
	    "a123456789012345678901234567890123456789012345678901234567890123",
	    HTTPREQ_ROUTE_HOOK, "", "a12345678901234567890123456789012"
	    "3456789012345678901234567890123" },
	ROUTE_TO(ROUTING_PATH, "/webhooks", "POST", "/webhooks/"
	    "a1234567890123456789012345678901234567890123456789012345678901234",
	    HTTPREQ_ROUTE_UNKNOWN_SOURCE),
	ROUTE_TO(ROUTING_PATH, "/webhooks", "POST", "/webhooksx/github",
	    HTTPREQ_ROUTE_NOT_FOUND),
	ROUTE_TO(ROUTING_PATH, "/webhooks", "POST", "/other/github",
	    HTTPREQ_ROUTE_NOT_FOUND),
	ROUTE_TO(ROUTING_PATH, "/webhooks", "POST", "/",
	    HTTPREQ_ROUTE_NOT_FOUND),
	ROUTE_TO(ROUTING_PATH, "/webhooks", "POST", "*",
	    HTTPREQ_ROUTE_NOT_FOUND),
	{ ROUTING_PATH, "/hooks/in", "POST", "/hooks/in/github",
	    HTTPREQ_ROUTE_HOOK, "", "github" },
	ROUTE_TO(ROUTING_PATH, "/hooks/in", "POST", "/hooks/github",
	    HTTPREQ_ROUTE_NOT_FOUND),
	/* no prefix: "/" in the file, "" in struct conf */
	{ ROUTING_PATH, "/", "POST", "/github", HTTPREQ_ROUTE_HOOK, "",
	    "github" },
	{ ROUTING_PATH, "", "POST", "/github", HTTPREQ_ROUTE_HOOK, "",
	    "github" },
	ROUTE_TO(ROUTING_PATH, "", "GET", "/health", HTTPREQ_ROUTE_HEALTH),
	{ ROUTING_PATH, "", "POST", "/health", HTTPREQ_ROUTE_HOOK, "",
	    "health" },
	ROUTE_TO(ROUTING_PATH, "", "POST", "/", HTTPREQ_ROUTE_UNKNOWN_SOURCE),
	ROUTE_TO(ROUTING_PATH, "", "POST", "/webhooks/github",
	    HTTPREQ_ROUTE_UNKNOWN_SOURCE),
	/* tenant_path */
	{ ROUTING_TENANT_PATH, "/webhooks", "POST", "/webhooks/acme/stripe",
	    HTTPREQ_ROUTE_HOOK, "acme", "stripe" },
	ROUTE_TO(ROUTING_TENANT_PATH, "/webhooks", "PUT",
	    "/webhooks/acme/stripe",
	    HTTPREQ_ROUTE_METHOD),
	ROUTE_TO(ROUTING_TENANT_PATH, "/webhooks", "POST", "/webhooks/stripe",
	    HTTPREQ_ROUTE_UNKNOWN_SOURCE),
	ROUTE_TO(ROUTING_TENANT_PATH, "/webhooks", "POST", "/webhooks/a/b/c",
	    HTTPREQ_ROUTE_UNKNOWN_SOURCE),
	ROUTE_TO(ROUTING_TENANT_PATH, "/webhooks", "POST", "/webhooks//stripe",
	    HTTPREQ_ROUTE_UNKNOWN_SOURCE),
	ROUTE_TO(ROUTING_TENANT_PATH, "/webhooks", "POST",
	    "/webhooks/a+b/stripe",
	    HTTPREQ_ROUTE_UNKNOWN_SOURCE),
	/* The notices' tenant is no user's. */
	ROUTE_TO(ROUTING_TENANT_PATH, "/webhooks", "POST",
	    "/webhooks/_ankusa/stripe",
	    HTTPREQ_ROUTE_UNKNOWN_SOURCE),
	{ ROUTING_TENANT_PATH, "/webhooks", "POST", "/webhooks/_ankus/stripe",
	    HTTPREQ_ROUTE_HOOK, "_ankus", "stripe" },
	{ ROUTING_TENANT_PATH, "/", "POST", "/acme/stripe",
	    HTTPREQ_ROUTE_HOOK, "acme", "stripe" },
	{ ROUTING_TENANT_PATH, "", "POST", "/acme/stripe?x=/y",
	    HTTPREQ_ROUTE_HOOK, "acme", "stripe" },
};

START_TEST(test_route)
{
	const struct route_case *tc = &route_cases[_i];
	struct httpreq_route rt;
	struct conf *cf;
	enum httpreq_route_kind k;

	cf = test_conf(tc->routing, tc->prefix);
	k = httpreq_route(cf, tc->method, tc->target, &rt);
	ck_assert_msg(k == tc->kind, "case %d (%s %s): kind %d, want %d", _i,
	    tc->method, tc->target, k, tc->kind);
	ck_assert_int_eq(rt.kind, k);
	if (k == HTTPREQ_ROUTE_HOOK) {
		ck_assert_str_eq(rt.tenant, tc->tenant);
		ck_assert_str_eq(rt.source, tc->source);
	}
	test_conf_free(cf);
}
END_TEST

/* Check 3 (source) and the hook's tenant. */
struct source_case {
	enum routing	 routing;
	const char	*target;
	int		 found;
	const char	*tenant;
};

static const struct source_case source_cases[] = {
	{ ROUTING_PATH, "/webhooks/github", 1, "default" },
	{ ROUTING_PATH, "/webhooks/stripe", 1, "acme" },
	{ ROUTING_PATH, "/webhooks/shared", 1, "default" },
	{ ROUTING_PATH, "/webhooks/nosuch", 0, NULL },
	{ ROUTING_TENANT_PATH, "/webhooks/acme/stripe", 1, "acme" },
	{ ROUTING_TENANT_PATH, "/webhooks/other/stripe", 0, NULL },
	{ ROUTING_TENANT_PATH, "/webhooks/other/github", 1, "other" },
	{ ROUTING_TENANT_PATH, "/webhooks/t1/shared", 1, "t1" },
	{ ROUTING_TENANT_PATH, "/webhooks/acme/nosuch", 0, NULL },
};

START_TEST(test_source)
{
	const struct source_case *tc = &source_cases[_i];
	const struct source_conf *src;
	struct httpreq_route rt;
	struct conf *cf;

	cf = test_conf(tc->routing, "/webhooks");
	ck_assert_int_eq(httpreq_route(cf, "POST", tc->target, &rt),
	    HTTPREQ_ROUTE_HOOK);
	src = httpreq_source(cf, &rt);
	ck_assert_int_eq(src != NULL, tc->found);
	if (src != NULL)
		ck_assert_str_eq(httpreq_tenant(&rt, src), tc->tenant);
	test_conf_free(cf);
}
END_TEST

/* Check 4: header bytes. */
struct hdr_case {
	const char	*line;		/* one header line, CRLF added */
	int		 bad;
	const char	*json;		/* the answer body when bad */
};

static const struct hdr_case hdr_cases[] = {
	{ "X-Ok: printable ~!@#$%^&*()", 0, NULL },
	{ "X-Tab: a\tb", 0, NULL },
	{ "X-Tab-Edge:\ta\t", 0, NULL },
	{ "X-Ctl: a\x01" "b", 1,
	    "{\"error\":\"invalid_header\",\"header\":\"X-Ctl\"}" },
	{ "X-Del: a\x7f", 1,
	    "{\"error\":\"invalid_header\",\"header\":\"X-Del\"}" },
	{ "X-High: caf\xc3\xa9", 1,
	    "{\"error\":\"invalid_header\",\"header\":\"X-High\"}" },
	{ "X-Esc: a\x1b[0m", 1,
	    "{\"error\":\"invalid_header\",\"header\":\"X-Esc\"}" },
	{ "X Space: v", 1,
	    "{\"error\":\"invalid_header\",\"header\":\"X Space\"}" },
	{ "X-Name\x01: v", 1,
	    "{\"error\":\"invalid_header\",\"header\":\"X-Name\\u0001\"}" },
	{ "X-\xff: v", 1,
	    "{\"error\":\"invalid_header\",\"header\":\"X-\\u00ff\"}" },
	{ "X\"q\\: v", 0, NULL },
	{ "Host : v", 1,
	    "{\"error\":\"invalid_header\",\"header\":\"Host \"}" },
	{ "X-Nul: a\0b", 1, NULL },	/* strlen stops at NUL: see below */
};

START_TEST(test_header_bytes)
{
	const struct hdr_case *tc = &hdr_cases[_i];
	struct httpreq_answer a;
	struct httpreq r;
	char buf[512];
	size_t len, used;
	int bad;

	len = snprintf(buf, sizeof(buf), "GET / HTTP/1.1\r\nA: b\r\n%s",
	    tc->line);
	if (_i == (int)(sizeof(hdr_cases) / sizeof(hdr_cases[0])) - 1) {
		/* "X-Nul: a\0b": the NUL is part of the value. */
		memcpy(buf + len, "\0b", 2);
		len += 2;
	}
	len += snprintf(buf + len, sizeof(buf) - len, "\r\nZ: z\r\n\r\n");
	httpreq_init(&r);
	ck_assert_int_eq(httpreq_feed(&r, buf, len, &used), HTTPREQ_DONE);
	ck_assert_int_eq(r.nheaders, 3);
	bad = httpreq_check_headers(&r);
	ck_assert_int_eq(bad, tc->bad ? 1 : -1);
	if (tc->bad && tc->json != NULL) {
		httpreq_answer_invalid_header(&a, &r.headers[bad]);
		ck_assert_int_eq(a.status, 400);
		ck_assert_str_eq(a.body, tc->json);
		httpreq_answer_free(&a);
	}
	httpreq_free(&r);
}
END_TEST

/* Forwarded headers. */
struct fwd_case {
	const char	*source;
	const char	*name;
	int		 forwarded;
};

static const struct fwd_case fwd_cases[] = {
	{ "github", "x-github-event", 1 },
	{ "github", "user-agent", 1 },
	{ "github", "date", 1 },
	{ "github", "authorization", 0 },
	{ "github", "proxy-authorization", 0 },
	{ "github", "cookie", 0 },
	{ "github", "x-api-key", 0 },
	{ "github", "host", 0 },
	{ "github", "content-length", 0 },
	{ "github", "content-type", 0 },
	{ "github", "connection", 0 },
	{ "github", "keep-alive", 0 },
	{ "github", "transfer-encoding", 0 },
	{ "github", "te", 0 },
	{ "github", "trailer", 0 },
	{ "github", "upgrade", 0 },
	{ "github", "expect", 0 },
	{ "github", "x-ankusa-id", 0 },
	{ "github", "x-ankusa-", 0 },
	{ "github", "x-ankusa", 1 },
	{ "narrow", "x-keep", 1 },
	{ "narrow", "authorization", 1 },
	{ "narrow", "x-ankusa-trace", 1 },
	{ "narrow", "x-other", 0 },
	{ "narrow", "user-agent", 0 },
	{ "narrow", "content-type", 0 },
	{ "narrow", "connection", 0 },
};

/* What a hook held in the quarantine pen keeps: every header but the
 * excluded ones, which only when its processing reads them. */
static const struct fwd_case held_cases[] = {
	{ "github", "x-github-event", 1 },
	{ "github", "authorization", 0 },
	{ "github", "cookie", 0 },
	{ "github", "proxy-authorization", 0 },
	{ "github", "x-api-key", 0 },
	{ "github", "host", 0 },
	{ "github", "content-length", 0 },
	{ "github", "x-ankusa-id", 0 },
	{ "narrow", "x-other", 1 },
	{ "narrow", "cookie", 0 },
	{ "signed", "authorization", 1 },
	{ "signed", "cookie", 1 },
	{ "signed", "x-ts", 1 },
	{ "signed", "x-api-key", 1 },
	{ "signed", "host", 1 },
	{ "signed", "proxy-authorization", 0 },
	{ "signed", "connection", 0 },
	{ "swh", "webhook-signature", 1 },
	{ "swh", "webhook-id", 1 },
	{ "swh", "authorization", 0 },
	{ "swh", "cookie", 0 },
};

START_TEST(test_held)
{
	const struct fwd_case *tc = &held_cases[_i];
	struct conf *cf = test_conf(ROUTING_PATH, "/webhooks");
	const struct source_conf *src = conf_source(cf, tc->source);

	ck_assert_ptr_nonnull(src);
	ck_assert_msg(httpreq_held(src, tc->name) == tc->forwarded,
	    "%s: %s", tc->source, tc->name);
	test_conf_free(cf);
}
END_TEST

START_TEST(test_forward)
{
	const struct fwd_case *tc = &fwd_cases[_i];
	struct conf *cf = test_conf(ROUTING_PATH, "/webhooks");
	const struct source_conf *src = conf_source(cf, tc->source);

	ck_assert_ptr_nonnull(src);
	ck_assert_msg(httpreq_forwarded(src, tc->name) == tc->forwarded,
	    "%s: %s", tc->source, tc->name);
	test_conf_free(cf);
}
END_TEST

/* Lane keys: sinks 1..4 of github are ordered (none, header X-Order, JSON
 * data.id, JSON n); sink 0 is not. */
struct lane_case {
	const char	*header;	/* X-Order value, NULL: absent */
	const char	*body;
	const char	*key_header;	/* expected keys */
	const char	*key_dataid;
	const char	*key_n;
};

static const struct lane_case lane_cases[] = {
	{ "k-1", "{\"data\":{\"id\":\"evt_1\"},\"n\":42}", "k-1", "evt_1",
	    "42" },
	{ NULL, "{\"data\":{\"id\":7},\"n\":-3}", "", "7", "-3" },
	{ "  spaced  ", "{\"data\":{},\"n\":1.5}", "spaced", "", "" },
	{ "x", "{\"data\":\"str\",\"n\":true}", "x", "", "" },
	{ "x", "[1,2]", "x", "", "" },
	{ "x", "\"just a string\"", "x", "", "" },
	{ "x", "not json", "x", "", "" },
	{ "x", "", "x", "", "" },
	{ "x", "{\"data\":{\"id\":null},\"n\":{\"a\":1}}", "x", "", "" },
	{ "x", "{\"data\":{\"id\":\"\"},\"n\":\"\"}", "x", "", "" },
};

START_TEST(test_lanes)
{
	const struct lane_case *tc = &lane_cases[_i];
	struct conf *cf = test_conf(ROUTING_PATH, "/webhooks");
	const struct source_conf *src = conf_source(cf, "github");
	struct httpreq_lane lanes[8];
	struct keys_hdrs hdrs;
	struct keys_ctx keys;
	struct httpreq r;
	char buf[512];
	size_t len, used;
	int n;

	ck_assert_ptr_nonnull(src);
	ck_assert_int_eq(src->nsinks, 5);
	len = snprintf(buf, sizeof(buf), "POST /webhooks/github HTTP/1.1\r\n"
	    "%s%s%s\r\n", tc->header ? "x-order: " : "",
	    tc->header ? tc->header : "", tc->header ? "\r\n" : "");
	httpreq_init(&r);
	ck_assert_int_eq(httpreq_feed(&r, buf, len, &used), HTTPREQ_DONE);
	keys_hdrs_request(&hdrs, &r);
	keys_init(&keys, &hdrs, tc->body, strlen(tc->body));
	n = httpreq_lanes(src, &keys, lanes);
	keys_free(&keys);
	ck_assert_int_eq(n, 4);
	ck_assert_uint_eq(lanes[0].sink, 1);
	ck_assert_uint_eq(lanes[0].hash, 0);
	ck_assert_uint_eq(lanes[1].sink, 2);
	ck_assert_uint_eq(lanes[1].hash,
	    httpreq_key_hash(tc->key_header, strlen(tc->key_header)));
	ck_assert_uint_eq(lanes[2].sink, 3);
	ck_assert_uint_eq(lanes[2].hash,
	    httpreq_key_hash(tc->key_dataid, strlen(tc->key_dataid)));
	ck_assert_uint_eq(lanes[3].sink, 4);
	ck_assert_uint_eq(lanes[3].hash,
	    httpreq_key_hash(tc->key_n, strlen(tc->key_n)));
	httpreq_free(&r);
	test_conf_free(cf);
}
END_TEST

/* The hash itself: the first 8 bytes of SHA-256, big-endian. */
START_TEST(test_key_hash)
{
	ck_assert_uint_eq(httpreq_key_hash("", 0), 0xe3b0c44298fc1c14ULL);
	ck_assert_uint_eq(httpreq_key_hash("abc", 3), 0xba7816bf8f01cfeaULL);
	ck_assert_uint_eq(httpreq_key_hash("42", 2), 0x73475cb40a568e8dULL);
	ck_assert_uint_eq(httpreq_key_hash("k-1", 3), 0x7c35c5a1785d2070ULL);
}
END_TEST

/* Answers to the master's results. */
struct result_case {
	unsigned	 result;
	uint32_t	 retry;
	int		 status;
	const char	*body;
	uint32_t	 retry_after;
};

static const struct result_case result_cases[] = {
	{ HOOK_ACCEPTED, 0, 201,
	    "{\"status\":\"accepted\",\"id\":\"ID\"}", 0 },
	{ HOOK_DUPLICATE, 0, 201,
	    "{\"status\":\"accepted\",\"id\":\"ID\",\"duplicate\":true}", 0 },
	{ HOOK_OVERLOAD, 1, 503, "{\"error\":\"overload\"}", 1 },
	{ HOOK_OVERLOAD, 0, 503, "{\"error\":\"overload\"}", 1 },
	{ HOOK_STORE_UNAVAILABLE, 1, 503,
	    "{\"error\":\"store_unavailable\"}", 1 },
	{ HOOK_DRAINING, 5, 503, "{\"error\":\"draining\"}", 5 },
	{ HOOK_RATE_LIMITED, 3, 429, "{\"error\":\"rate_limited\"}", 3 },
	{ HOOK_QUARANTINED, 0, 202,
	    "{\"status\":\"quarantined\",\"id\":\"ID\"}", 0 },
	{ HOOK_FILTERED, 0, 200,
	    "{\"status\":\"filtered\",\"id\":\"ID\"}", 0 },
	{ HOOK_QUARANTINE_LIMITED, 2, 429,
	    "{\"error\":\"quarantine_rate_limited\"}", 2 },
	{ HOOK_QUARANTINE_FULL, 1, 503, "{\"error\":\"quarantine_full\"}",
	    1 },
	{ HOOK_UNKNOWN_SOURCE, 0, 404, "{\"error\":\"unknown_source\"}", 0 },
};

START_TEST(test_result)
{
	const struct result_case *tc = &result_cases[_i];
	struct httpreq_answer a;

	ck_assert_int_eq(httpreq_answer_result(&a, tc->result, "ID",
	    tc->retry), 0);
	ck_assert_int_eq(a.status, tc->status);
	ck_assert_str_eq(a.body, tc->body);
	ck_assert_uint_eq(a.retry_after, tc->retry_after);
	httpreq_answer_free(&a);
}
END_TEST

START_TEST(test_result_unknown)
{
	struct httpreq_answer a;

	ck_assert_int_eq(httpreq_answer_result(&a, HOOK_RESULT_MAX, "x", 0),
	    -1);
}
END_TEST

/* Other answers and the formatted response. */
START_TEST(test_answers)
{
	struct httpreq_answer a;
	char *s;
	size_t len;

	httpreq_answer_route(&a, HTTPREQ_ROUTE_METHOD);
	ck_assert_int_eq(a.status, 405);
	ck_assert_str_eq(a.body, "{\"error\":\"method_not_allowed\"}");
	s = httpreq_answer_format(&a, 1, 0, &len);
	ck_assert_str_eq(s, "HTTP/1.1 405 Method Not Allowed\r\n"
	    "Content-Type: application/json\r\nContent-Length: 30\r\n"
	    "Allow: POST\r\nConnection: keep-alive\r\n\r\n"
	    "{\"error\":\"method_not_allowed\"}");
	ck_assert_uint_eq(len, strlen(s));
	free(s);
	httpreq_answer_free(&a);

	/* An echo of a provider's bytes: its type, never sniffed. */
	httpreq_answer_echo(&a, "text/plain", strdup("3eZbrw1a"));
	s = httpreq_answer_format(&a, 1, 0, &len);
	ck_assert_str_eq(s, "HTTP/1.1 200 OK\r\n"
	    "Content-Type: text/plain\r\nContent-Length: 8\r\n"
	    "X-Content-Type-Options: nosniff\r\nConnection: keep-alive\r\n"
	    "\r\n3eZbrw1a");
	free(s);
	httpreq_answer_free(&a);
	httpreq_answer_reason(&a, 403, "verify_token_mismatch", "x\"");
	ck_assert_str_eq(a.body, "{\"error\":\"verify_token_mismatch\","
	    "\"reason\":\"x\\\"\"}");
	ck_assert_str_eq(a.refused, "verify_token_mismatch");
	s = httpreq_answer_format(&a, 0, 0, &len);
	ck_assert_ptr_nonnull(strstr(s, "HTTP/1.1 403 Forbidden\r\n"));
	ck_assert_ptr_null(strstr(s, "nosniff"));
	free(s);
	httpreq_answer_free(&a);

	httpreq_answer_route(&a, HTTPREQ_ROUTE_NOT_FOUND);
	ck_assert_int_eq(a.status, 404);
	ck_assert_str_eq(a.body, "{\"error\":\"not_found\"}");
	httpreq_answer_free(&a);
	httpreq_answer_route(&a, HTTPREQ_ROUTE_UNKNOWN_SOURCE);
	ck_assert_int_eq(a.status, 404);
	ck_assert_str_eq(a.body, "{\"error\":\"unknown_source\"}");
	httpreq_answer_free(&a);

	httpreq_answer_too_large(&a, 8000000);
	ck_assert_int_eq(a.status, 413);
	ck_assert_int_eq(a.close, 1);
	ck_assert_str_eq(a.body,
	    "{\"error\":\"payload_too_large\",\"limit\":8000000}");
	s = httpreq_answer_format(&a, 1, 0, &len);
	ck_assert_ptr_nonnull(strstr(s, "\r\nConnection: close\r\n"));
	free(s);
	httpreq_answer_free(&a);

	httpreq_answer_health(&a, "client");
	ck_assert_int_eq(a.status, 200);
	ck_assert_str_eq(a.body, "{\"status\":\"ok\",\"role\":\"client\"}");
	httpreq_answer_free(&a);

	httpreq_answer_health(&a, NULL);
	ck_assert_int_eq(a.status, 200);
	ck_assert_str_eq(a.body, "{\"status\":\"ok\"}");
	s = httpreq_answer_format(&a, 0, 1, &len);	/* HEAD */
	ck_assert_str_eq(s, "HTTP/1.1 200 OK\r\n"
	    "Content-Type: application/json\r\nContent-Length: 15\r\n"
	    "Connection: close\r\n\r\n");
	free(s);
	httpreq_answer_free(&a);

	httpreq_answer_ready(&a, 1, "");
	ck_assert_int_eq(a.status, 200);
	ck_assert_str_eq(a.body, "{\"status\":\"ready\"}");
	httpreq_answer_free(&a);
	httpreq_answer_ready(&a, 0, "store \"closed\"");
	ck_assert_int_eq(a.status, 503);
	ck_assert_uint_eq(a.retry_after, 1);
	ck_assert_str_eq(a.body,
	    "{\"status\":\"not_ready\",\"reason\":\"store \\\"closed\\\"\"}");
	s = httpreq_answer_format(&a, 1, 0, &len);
	ck_assert_ptr_nonnull(strstr(s, "\r\nRetry-After: 1\r\n"));
	free(s);
	httpreq_answer_free(&a);

	httpreq_answer_error(&a, 431, "headers_too_large");
	s = httpreq_answer_format(&a, 1, 0, &len);
	ck_assert(strncmp(s, "HTTP/1.1 431 ", 13) == 0);
	free(s);
	httpreq_answer_free(&a);
}
END_TEST

static Suite *
httpreq_suite(void)
{
	Suite *s = suite_create("httpreq");
	TCase *tc;

#define NELEM(a)	((int)(sizeof(a) / sizeof((a)[0])))
	tc = tcase_create("head");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_head, 0, NELEM(head_cases));
	tcase_add_test(tc, test_head_values);
	tcase_add_test(tc, test_head_pipelined);
	tcase_add_loop_test(tc, test_head_split, 0, NELEM(head_cases));
	tcase_add_loop_test(tc, test_head_limits, 0, NELEM(limit_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("chunked");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_chunked, 0, NELEM(chunk_cases));
	tcase_add_loop_test(tc, test_chunked_bounds, 0, NELEM(bound_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("route");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_route, 0, NELEM(route_cases));
	tcase_add_loop_test(tc, test_source, 0, NELEM(source_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("headers");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_header_bytes, 0, NELEM(hdr_cases));
	tcase_add_loop_test(tc, test_forward, 0, NELEM(fwd_cases));
	tcase_add_loop_test(tc, test_held, 0, NELEM(held_cases));
	suite_add_tcase(s, tc);

	tc = tcase_create("lanes");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_lanes, 0, NELEM(lane_cases));
	tcase_add_test(tc, test_key_hash);
	suite_add_tcase(s, tc);

	tc = tcase_create("answers");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_result, 0, NELEM(result_cases));
	tcase_add_test(tc, test_result_unknown);
	tcase_add_test(tc, test_answers);
	suite_add_tcase(s, tc);
#undef NELEM
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(httpreq_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
