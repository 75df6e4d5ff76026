/* SPDX-License-Identifier: ISC */
/*
 * fuzz_edge.c: a libFuzzer target for the edge's request path.
 *
 * The input is one byte of framing choices and then the bytes of an HTTP
 * request as a client sends them: head, then body.  The first byte's low 6
 * bits are the size of the pieces the bytes are fed in (0: all at once),
 * since the network may cut anywhere; bit 6 picks tenant_path routing.
 * The request goes the way workers/edge.c and workers/edge_request.c
 * take it, minus the sockets:
 * httpreq_feed, routing, the Content-Length cap, the source, the header
 * check, the body (chunked decoding when the head says so, else
 * Content-Length bytes), verification, the dedupe key, the lanes, the
 * forward filter and the answer.  Verification, the dedupe key and the
 * providers' handshakes (workers/handshake.c, the POST's and the GET's)
 * are then also run against every source of the configuration, so the
 * signature and handshake parsers see every input without the fuzzer
 * having to find the URL.
 *
 * The configuration (conf_parse of the YAML below, once) has a source for
 * each verify preset, the hmac descriptor in each parse mode, hash and
 * encoding, and each dedupe kind, with ordered sinks keyed both ways.
 *
 * Build (see Makefile.am, --enable-fuzz), or by hand from the tree:
 *   clang -g -O1 -fsanitize=fuzzer,address,undefined -Ibuild -Icommon
 *     -Iworkers tests/fuzz_edge.c workers/httpreq.c workers/keys.c
 *     workers/verify.c workers/evtype.c workers/handshake.c common/conf.c
 *     common/conf_check.c common/conf_filter.c common/conf_keys.c
 *     common/conf_man.c common/conf_yaml.c common/b64.c common/log.c
 *     common/sha256.c common/utf8.c
 *     $(pkg-config --cflags --libs libcrypto jansson yaml-0.1) -ljq
 * Run: ./fuzz_edge -max_total_time=240 NEW_DIR tests/fuzz-corpus
 * With -DFUZZ_TRACE each source's verdict and dedupe key go to stderr, to
 * check that the seeds verify: ./fuzz_edge tests/fuzz-corpus/stripe_ok
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "evtype.h"
#include "handshake.h"
#include "httpreq.h"
#include "keys.h"
#include "log.h"
#include "msg.h"
#include "verify.h"

/* The time every request is judged at: the seeds' timestamps are near. */
#define FUZZ_NOW	1700000000
#define FUZZ_MAX_BODY	65536

int	LLVMFuzzerInitialize(int *, char ***);
int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

static struct conf	*load(const char *routing);
static void		 run_source(const struct source_conf *,
			    const struct httpreq *, const void *, size_t);
static void		 answer(struct httpreq_answer *, int);

static struct conf	*conf_path, *conf_tenant;

static const char fuzz_yaml[] =
    "node:\n"
    "  data_dir: /tmp/ankusa-fuzz\n"
    "http:\n"
    "  routing: %s\n"
    "  max_body_bytes: 65536\n"
    "sources:\n"
    "  stripe:\n"
    "    tenant: acme\n"
    "    verify: {type: stripe, secret: [whsec_new, whsec_stripe_secret]}\n"
    "    dedupe: stripe\n"
    "    sinks:\n"
    "      - {type: log, ordered: true, order_key: {json: data.object.id}}\n"
    "  github:\n"
    "    verify: {type: github, secret: \"It's a Secret to Everybody\"}\n"
    "    dedupe: github\n"
    "    sinks:\n"
    "      - {type: log, ordered: true}\n"
    "      - {type: log, ordered: true, order_key: {header: X-Order}}\n"
    "  sw:\n"
    "    verify: {type: standard_webhooks, "
    "secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}\n"
    "    dedupe: standard_webhooks\n"
    "    on_verify_failure: quarantine\n"
    "    sinks: [{type: log}]\n"
    "  shopify:\n"
    "    verify: {type: shopify, secret: hush}\n"
    "    dedupe: shopify\n"
    "    sinks: [{type: log}]\n"
    "  slack:\n"
    "    verify: {type: slack, secret: 8f742231b10e8888abcd99yyyzzz85a5}\n"
    "    dedupe: {header: X-Slack-Request-Id}\n"
    "    on_verify_failure: accept_flag\n"
    "    sinks: [{type: log}]\n"
    "  meta:\n"
    "    verify: {type: meta, secret: metasecret, verify_token: tok}\n"
    "    sinks: [{type: log}]\n"
    "  zoom:\n"
    "    verify: {type: zoom, secret: zoomsecret}\n"
    "    sinks: [{type: log}]\n"
    "  h512:\n"
    "    verify:\n"
    "      type: hmac\n"
    "      secret: k512\n"
    "      signature_header: X-Sig\n"
    "      signed: \"{ts}:{header:X-Id}:{body}\"\n"
    "      hash: sha512\n"
    "      encoding: base64\n"
    "      sig_prefix: \"sha512=\"\n"
    "      timestamp_header: X-Ts\n"
    "    dedupe: {json: a.b.c}\n"
    "    sinks: [{type: log, ordered: true, order_key: {json: n}}]\n"
    "  hsha1:\n"
    "    verify:\n"
    "      type: hmac\n"
    "      secret: [k0, k1]\n"
    "      signature_header: X-Sig\n"
    "      signed: \"{ts}.{body}\"\n"
    "      hash: sha1\n"
    "      parse: csv_pairs\n"
    "      sig_key: s\n"
    "    dedupe: svix\n"
    "    sinks: [{type: log}]\n"
    "  hspace:\n"
    "    verify:\n"
    "      type: hmac\n"
    "      secret: whsec_aGk=\n"
    "      secret_decode: whsec_base64\n"
    "      signature_header: X-Sig\n"
    "      signed: \"{header:X-Id}.{x}{body}\"\n"
    "      encoding: base64\n"
    "      parse: space_versions\n"
    "      version: \"v2,\"\n"
    "      timestamp_header: X-Ts\n"
    "    dedupe: {header: X-Id}\n"
    "    sinks: [{type: log}]\n"
    "  open:\n"
    "    trust_url_tenant: true\n"
    "    dedupe: {json: id}\n"
    "    forward_headers: [X-Keep, Authorization]\n"
    "    sinks: [{type: log}]\n";

static struct conf *
load(const char *routing)
{
	struct conf_errors errs = { NULL, 0 };
	struct conf *cf;
	char text[sizeof(fuzz_yaml) + 32];
	int i, n;

	n = snprintf(text, sizeof(text), fuzz_yaml, routing);
	if ((cf = conf_parse(text, n, "fuzz", &errs)) == NULL) {
		for (i = 0; i < errs.n; i++)
			fprintf(stderr, "fuzz config: %s\n", errs.msgs[i]);
		abort();
	}
	conf_errors_free(&errs);
	return cf;
}

int
LLVMFuzzerInitialize(int *argc, char ***argv)
{
	conf_path = load("path");
	conf_tenant = load("tenant_path");
	return 0;
}

/* Verification, the dedupe key and the handshakes, as the edge will run
 * them (a handshake's POST only once verified, which the fuzzer cannot
 * sign: it is run whatever the verdict). */
static void
run_source(const struct source_conf *src, const struct httpreq *r,
    const void *body, size_t len)
{
	const struct httpreq_header *ct;
	struct httpreq_answer a;
	struct keys_hdrs h;
	struct keys_ctx k;
	enum verify_reason vr;
	char key[KEYS_DEDUPE_MAX + 1], evtype[EVTYPE_MAX + 1];
	int n;

	keys_hdrs_request(&h, r);
	vr = verify_request(&src->verify, &h, body, len, FUZZ_NOW);
	if (strcmp(verify_reason_name(vr), "unknown") == 0)
		abort();
	keys_init(&k, &h, body, len);
	n = keys_dedupe(src, &k, key, sizeof(key));
	if (n < 0 || (size_t)n != strlen(key) || n > KEYS_DEDUPE_MAX)
		abort();
	if (evtype_get(src, &k, evtype) != strlen(evtype) ||
	    strlen(evtype) > EVTYPE_MAX)
		abort();
	keys_free(&k);
	ct = httpreq_header(r, "content-type");
	if (handshake_post(src, ct != NULL ? ct->value : NULL, body, len, &a)
	    != HANDSHAKE_NONE)
		answer(&a, 0);
	if (handshake_get(src, r->target, &a) != HANDSHAKE_NONE)
		answer(&a, 0);
#ifdef FUZZ_TRACE
	fprintf(stderr, "%s: %s, dedupe \"%s\"\n", src->id,
	    verify_reason_name(vr), key);
#endif
}

static void
answer(struct httpreq_answer *a, int keep_alive)
{
	char *out;
	size_t len;

	out = httpreq_answer_format(a, keep_alive, 0, &len);
	free(out);
	httpreq_answer_free(a);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct keys_hdrs hdrs;
	struct keys_ctx keys;
	const struct conf *cf;
	const struct source_conf *src;
	struct httpreq r;
	struct httpreq_route rt;
	struct httpreq_answer a;
	struct httpreq_chunked ch;
	struct httpreq_lane *lanes;
	enum httpreq_status st = HTTPREQ_MORE;
	const unsigned char *p, *body = NULL;
	size_t piece, n, used, off = 0, left, bodylen = 0;
	char *lname;
	int i, bad, chunked_body = 0;

	if (size < 1)
		return 0;
	piece = data[0] & 0x3f;
	cf = (data[0] & 0x40) ? conf_tenant : conf_path;
	p = data + 1;
	left = size - 1;

	/* The head, fed in pieces. */
	httpreq_init(&r);
	while (off < left && st == HTTPREQ_MORE) {
		n = piece == 0 || piece > left - off ? left - off : piece;
		st = httpreq_feed(&r, p + off, n, &used);
		if (used > n)
			abort();
		off += used;
		if (st == HTTPREQ_MORE && used != n)
			abort();
	}
	if (st != HTTPREQ_DONE) {
		if (st == HTTPREQ_ERROR) {
			httpreq_answer_error(&a, r.error, "bad_request");
			answer(&a, 0);
		}
		httpreq_free(&r);
		return 0;
	}

	/* The checks before the body, in the contract's order. */
	switch (httpreq_route(cf, r.method, r.target, &rt)) {
	case HTTPREQ_ROUTE_HEALTH:
		httpreq_answer_health(&a, NULL);
		answer(&a, r.keep_alive);
		goto others;
	case HTTPREQ_ROUTE_READY:
		httpreq_answer_ready(&a, 0, "starting");
		answer(&a, r.keep_alive);
		goto others;
	case HTTPREQ_ROUTE_HOOK:
		break;
	default:
		httpreq_answer_route(&a, rt.kind);
		answer(&a, r.keep_alive);
		goto others;
	}
	if (r.has_length && r.content_length > cf->http.max_body_bytes) {
		httpreq_answer_too_large(&a, cf->http.max_body_bytes);
		answer(&a, r.keep_alive);
		goto others;
	}
	if ((src = httpreq_source(cf, &rt)) == NULL) {
		httpreq_answer_route(&a, HTTPREQ_ROUTE_UNKNOWN_SOURCE);
		answer(&a, r.keep_alive);
		goto others;
	}
	if ((bad = httpreq_check_headers(&r)) != -1) {
		if (bad >= r.nheaders)
			abort();
		httpreq_answer_invalid_header(&a, &r.headers[bad]);
		answer(&a, r.keep_alive);
		goto others;
	}

	/* The body. */
	if (r.chunked) {
		httpreq_chunked_init(&ch, cf->http.max_body_bytes);
		chunked_body = 1;
		st = HTTPREQ_MORE;
		while (off < left && st == HTTPREQ_MORE) {
			n = piece == 0 || piece > left - off ? left - off :
			    piece;
			st = httpreq_chunked_feed(&ch, p + off, n, &used);
			if (used > n)
				abort();
			off += used;
		}
		if (st != HTTPREQ_DONE) {
			if (st == HTTPREQ_ERROR && ch.error == 413) {
				httpreq_answer_too_large(&a,
				    cf->http.max_body_bytes);
				answer(&a, 0);
			}
			goto out;
		}
		if (ch.outlen > cf->http.max_body_bytes)
			abort();
		body = ch.out;
		bodylen = ch.outlen;
	} else if (r.has_length) {
		if (r.content_length > left - off)
			goto out;	/* the client would still be sending */
		body = p + off;
		bodylen = r.content_length;
	}

	/* Verification, keys, lanes, forwarded headers, the answer. */
	run_source(src, &r, body, bodylen);
	if ((lanes = calloc(src->nsinks + 1, sizeof(*lanes))) == NULL)
		abort();
	keys_hdrs_request(&hdrs, &r);
	keys_init(&keys, &hdrs, body, bodylen);
	n = httpreq_lanes(src, &keys, lanes);
	keys_free(&keys);
	for (i = 0; i < (int)n; i++)
		if (lanes[i].sink >= (uint32_t)src->nsinks ||
		    (lanes[i].hash == 0 &&
		    src->sinks[lanes[i].sink].order_key.kind != KEY_NONE))
			abort();
	free(lanes);
	for (i = 0; i < r.nheaders; i++) {
		if ((lname = strdup(r.headers[i].name)) == NULL)
			abort();
		httpreq_lower(lname);
		(void)httpreq_forwarded(src, lname);
		free(lname);
	}
	(void)httpreq_tenant(&rt, src);
	if (httpreq_answer_result(&a, HOOK_ACCEPTED,
	    "0190a5f0-0000-7000-8000-000000000000", 0) != 0)
		abort();
	answer(&a, r.keep_alive);

	/* Every other source's verification and keys over the same bytes. */
	for (i = 0; i < cf->nsources; i++)
		if (&cf->sources[i] != src)
			run_source(&cf->sources[i], &r, body, bodylen);
	goto out;
 others:
	/* Not routed to a source: every source, the rest as the body. */
	for (i = 0; i < cf->nsources; i++)
		run_source(&cf->sources[i], &r, p + off, left - off);
 out:
	if (chunked_body)
		httpreq_chunked_free(&ch);
	httpreq_free(&r);
	return 0;
}
