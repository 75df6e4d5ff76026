/* SPDX-License-Identifier: ISC */
/*
 * check_keys.c: unit tests for workers/keys.c, the dedupe key of a source
 * and the header / JSON key lookups it shares with the ordering lanes.
 *
 * The sources come from conf_parse, so the dedupe presets resolve to
 * their keys as they do in the daemon.  Hashed keys are checked against
 * SHA-256 computed elsewhere (python3 hashlib, noted at each constant).
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
#include "testutil.h"

#define CASE_TIMEOUT	10
#define MAXHDRS		8

static struct conf	*test_conf(void);
static int		 dedupe(const struct conf *, const char *,
			    const char *, const char *, size_t, char *);

static const char test_yaml[] =
    "node:\n"
    "  data_dir: /tmp/ankusa-check-keys\n"
    "sources:\n"
    "  gh:\n"
    "    dedupe: github\n"
    "    sinks: [{type: log}]\n"
    "  sw:\n"
    "    dedupe: {preset: standard_webhooks}\n"
    "    sinks: [{type: log}]\n"
    "  svix:\n"
    "    dedupe: svix\n"
    "    sinks: [{type: log}]\n"
    "  shopify:\n"
    "    dedupe: shopify\n"
    "    sinks: [{type: log}]\n"
    "  stripe:\n"
    "    dedupe: stripe\n"
    "    sinks: [{type: log}]\n"
    "  hdr:\n"
    "    dedupe: {header: X-Event-Id, ttl_seconds: 60}\n"
    "    sinks: [{type: log}]\n"
    "  json:\n"
    "    dedupe: {json: data.object.id}\n"
    "    sinks: [{type: log}]\n"
    "  off:\n"
    "    sinks: [{type: log}]\n";

struct kcase {
	const char	*source;
	const char	*headers;	/* "Name: value" lines */
	const char	*body;
	const char	*want;		/* "" for no key */
};

#define STRIPE(id)	"{\"object\":\"event\",\"id\":" id "}"
#define NESTED(id)	"{\"data\":{\"object\":{\"id\":" id "}}}"

static const struct kcase kcases[] = {
	/* Header presets, names without case. */
	{ "gh", "X-GitHub-Delivery: 72d3162e-cc78-11e3-81ab-4c9367dc0958",
	    "{}", "72d3162e-cc78-11e3-81ab-4c9367dc0958" },
	{ "gh", "x-github-delivery: d1", "", "d1" },
	{ "gh", "X-GITHUB-DELIVERY: d2\nX-GitHub-Delivery: d3", "", "d2" },
	{ "gh", "X-GitHub-Event: push", "{\"id\":1}", "" },
	{ "gh", "X-GitHub-Delivery:", "", "" },
	{ "gh", "X-GitHub-Deliver: d1\nX-GitHub-Delivery-2: d2", "", "" },
	{ "sw", "webhook-id: msg_1", "", "msg_1" },
	{ "sw", "Webhook-ID: msg_1\nsvix-id: msg_2", "", "msg_1" },
	{ "sw", "svix-id: msg_2", "", "" },
	{ "svix", "Svix-Id: msg_2\nwebhook-id: msg_1", "", "msg_2" },
	{ "svix", "webhook-id: msg_1", "", "" },
	{ "shopify", "X-Shopify-Webhook-Id: b54557e4-bdd9-4b37-8a5f-"
	    "bf7d70bcd043", "", "b54557e4-bdd9-4b37-8a5f-bf7d70bcd043" },
	{ "shopify", "X-Shopify-Event-Id: e1", "", "" },
	{ "hdr", "x-event-id: E-1", "", "E-1" },
	{ "hdr", "X-Event: E-1", "", "" },

	/* The stripe preset: the JSON field "id". */
	{ "stripe", "", STRIPE("\"evt_1\""), "evt_1" },
	{ "stripe", "Id: hdr", STRIPE("\"evt_1\""), "evt_1" },
	{ "stripe", "", STRIPE("42"), "42" },
	{ "stripe", "", STRIPE("-7"), "-7" },
	{ "stripe", "", STRIPE("0"), "0" },
	{ "stripe", "", STRIPE("-0"), "0" },
	{ "stripe", "", STRIPE("9223372036854775807"), "9223372036854775807" },
	{ "stripe", "", STRIPE("-9223372036854775808"),
	    "-9223372036854775808" },
	{ "stripe", "", STRIPE("99999999999999999999"), "" },
	{ "stripe", "", STRIPE("1.5"), "" },
	{ "stripe", "", STRIPE("1e3"), "" },
	{ "stripe", "", STRIPE("1.0"), "" },
	{ "stripe", "", STRIPE("true"), "" },
	{ "stripe", "", STRIPE("false"), "" },
	{ "stripe", "", STRIPE("null"), "" },
	{ "stripe", "", STRIPE("[\"evt_1\"]"), "" },
	{ "stripe", "", STRIPE("{\"id\":\"evt_1\"}"), "" },
	{ "stripe", "", STRIPE("\"\""), "" },
	{ "stripe", "", STRIPE("\"\\u00e9v\\\"t\""), "\xc3\xa9v\"t" },
	{ "stripe", "", STRIPE("\"a\\u0000b\""), "" },
	{ "stripe", "", "{\"object\":\"event\"}", "" },
	{ "stripe", "", "{\"ID\":\"evt_1\"}", "" },
	{ "stripe", "", "[{\"id\":\"evt_1\"}]", "" },
	{ "stripe", "", "\"evt_1\"", "" },
	{ "stripe", "", "42", "" },
	{ "stripe", "", "{\"id\":\"evt_1\"", "" },
	{ "stripe", "", "{\"id\":\"evt_1\"} trailing", "" },
	{ "stripe", "", "id=evt_1", "" },
	{ "stripe", "", "", "" },
	{ "stripe", "", "{\"id\":\"evt_1\",\"id\":\"evt_2\"}", "evt_2" },
	{ "stripe", "", " \n{\"id\": \"evt_1\"}\n ", "evt_1" },
	{ "stripe", "", "{\"\\u0069d\":\"evt_1\"}", "evt_1" },
	{ "stripe", "", "{\"id\":\"evt_1\",\"x\":01}", "" },
	{ "stripe", "", "{\"id\":\"evt_1\",\"x\":\"\xff\"}", "" },
	{ "stripe", "", "{\"id\":\"evt_1\",\"x\":\"\\ud800\"}", "" },
	{ "stripe", "", "{\"id\":\"evt_1\",\"x\":2e308}", "" },
	{ "stripe", "", "{\"id\":\"evt_1\",\"id\":null}", "" },
	{ "stripe", "", "{\"id\":\"\\ud83d\\ude00\\/\"}",
	    "\xf0\x9f\x98\x80/" },

	/* A dot path through objects. */
	{ "json", "", NESTED("\"in_1\""), "in_1" },
	{ "json", "", NESTED("12345678901"), "12345678901" },
	{ "json", "", NESTED("-3"), "-3" },
	{ "json", "", NESTED("3.25"), "" },
	{ "json", "", NESTED("null"), "" },
	{ "json", "", NESTED("{}"), "" },
	{ "json", "", "{\"data\":{\"object\":{}}}", "" },
	{ "json", "", "{\"data\":{\"object\":\"in_1\"}}", "" },
	{ "json", "", "{\"data\":{\"object\":[{\"id\":\"in_1\"}]}}", "" },
	{ "json", "", "{\"data\":[]}", "" },
	{ "json", "", "{\"data\":null}", "" },
	{ "json", "", "{\"data.object.id\":\"flat\"}", "" },
	{ "json", "", "{\"id\":\"in_1\"}", "" },
	{ "json", "", "[]", "" },
	/* Of duplicates the last wins, whole, at each step. */
	{ "json", "", "{\"data\":{\"object\":{\"id\":\"a\"}},"
	    "\"data\":{\"object\":{}}}", "" },
	{ "json", "", "{\"data\":{\"object\":{\"id\":\"a\"}},\"data\":5}",
	    "" },
	{ "json", "", "{\"data\":5,\"data\":{\"object\":{\"id\":\"b\"}}}",
	    "b" },
	{ "json", "", "{\"data\":{\"object\":{\"id\":\"a\",\"id\":\"c\"},"
	    "\"object\":{\"id\":\"d\"}}}", "d" },

	/* No dedupe: no key, whatever the request holds. */
	{ "off", "X-GitHub-Delivery: d1\nwebhook-id: m", STRIPE("\"evt_1\""),
	    "" },
};

static struct conf *
test_conf(void)
{
	return test_conf_parse(test_yaml, sizeof(test_yaml) - 1);
}

/* The dedupe key of a request to source, into out (KEYS_DEDUPE_MAX + 1). */
static int
dedupe(const struct conf *cf, const char *source, const char *headers,
    const char *body, size_t len, char *out)
{
	const struct source_conf *src = conf_source(cf, source);
	struct header_kv kv[MAXHDRS];
	struct keys_hdrs h;
	struct keys_ctx k;
	char *buf;
	int n;

	ck_assert_msg(src != NULL, "no source %s", source);
	n = test_headers(headers, kv, MAXHDRS, &buf);
	keys_hdrs_pairs(&h, kv, n);
	keys_init(&k, &h, body, len);
	n = keys_dedupe(src, &k, out, KEYS_DEDUPE_MAX + 1);
	keys_free(&k);
	free(buf);
	return n;
}

START_TEST(test_dedupe)
{
	const struct kcase *tc = &kcases[_i];
	struct conf *cf = test_conf();
	char out[KEYS_DEDUPE_MAX + 1];
	int n;

	n = dedupe(cf, tc->source, tc->headers, tc->body, strlen(tc->body),
	    out);
	ck_assert_msg(strcmp(out, tc->want) == 0,
	    "case %d (%s, %s): got \"%s\", want \"%s\"", _i, tc->source,
	    tc->body, out, tc->want);
	ck_assert_int_eq(n, (int)strlen(tc->want));
	conf_free(cf);
}
END_TEST

/*
 * The 200-byte boundary, for a header and a JSON key alike:
 *   python3 -c "import hashlib; print(hashlib.sha256(b'a'*201).hexdigest())"
 *   python3 -c "import hashlib; print(hashlib.sha256(b'k'*300).hexdigest())"
 */
#define H_A201	\
    "sha256:a92efd82109373e58f9a2056dee01e807e216ce6075f7051207c0a9f7d666e50"
#define H_K300	\
    "sha256:17b16d8ef494060fefa36a6a41567b8c32d213a17e02b7eeae86158cc4495461"

struct long_case {
	const char	*source;
	char		 c;
	size_t		 len;
	const char	*want;		/* NULL: the key itself */
};

static const struct long_case long_cases[] = {
	{ "gh", 'a', 199, NULL },
	{ "gh", 'a', 200, NULL },
	{ "gh", 'a', 201, H_A201 },
	{ "stripe", 'a', 200, NULL },
	{ "stripe", 'a', 201, H_A201 },
	{ "hdr", 'k', 300, H_K300 },
	{ "json", 'k', 300, H_K300 },
};

START_TEST(test_long)
{
	const struct long_case *tc = &long_cases[_i];
	struct conf *cf = test_conf();
	char out[KEYS_DEDUPE_MAX + 1], *key, *text;
	const char *src = tc->source;
	int n;

	ck_assert_ptr_nonnull(key = calloc(1, tc->len + 1));
	memset(key, tc->c, tc->len);
	ck_assert_ptr_nonnull(text = malloc(tc->len + 64));
	if (strcmp(src, "stripe") == 0) {
		snprintf(text, tc->len + 64, "{\"id\":\"%s\"}", key);
		n = dedupe(cf, src, "", text, strlen(text), out);
	} else if (strcmp(src, "json") == 0) {
		snprintf(text, tc->len + 64, NESTED("\"%s\""), key);
		n = dedupe(cf, src, "", text, strlen(text), out);
	} else {
		snprintf(text, tc->len + 64, "%s: %s", strcmp(src, "gh") == 0 ?
		    "X-GitHub-Delivery" : "X-Event-Id", key);
		n = dedupe(cf, src, text, "", 0, out);
	}
	if (tc->want == NULL) {
		ck_assert_str_eq(out, key);
		ck_assert_int_eq(n, (int)tc->len);
	} else {
		ck_assert_str_eq(out, tc->want);
		ck_assert_int_eq(n, 71);
	}
	free(text);
	free(key);
	conf_free(cf);
}
END_TEST

/* A key holding a NUL (only from headers the check has not seen) is hashed,
 * so the result is always a C string: SHA-256 of "a\0b". */
START_TEST(test_nul_key)
{
	struct conf *cf = test_conf();
	struct httpreq r;
	struct keys_hdrs h;
	struct keys_ctx k;
	char out[KEYS_DEDUPE_MAX + 1];
	static const char req[] = "POST /webhooks/gh HTTP/1.1\r\n"
	    "X-GitHub-Delivery: a\0b\r\n\r\n";
	size_t used;

	httpreq_init(&r);
	ck_assert_int_eq(httpreq_feed(&r, req, sizeof(req) - 1, &used),
	    HTTPREQ_DONE);
	keys_hdrs_request(&h, &r);
	keys_init(&k, &h, NULL, 0);
	ck_assert_int_eq(keys_dedupe(conf_source(cf, "gh"), &k, out,
	    sizeof(out)), 71);
	/* python3: hashlib.sha256(b'a\x00b').hexdigest() */
	ck_assert_str_eq(out, "sha256:"
	    "59b271ae1bbcb1d31d41929817f4b16fb439eb4f31520b5ad1d5ce98920a7138");
	keys_free(&k);
	httpreq_free(&r);
	conf_free(cf);
}
END_TEST

/* Headers from a parsed request: OWS trimmed, names without case. */
START_TEST(test_request_headers)
{
	struct conf *cf = test_conf();
	struct httpreq r;
	struct keys_hdrs h;
	struct keys_ctx k;
	char out[KEYS_DEDUPE_MAX + 1];
	static const char req[] = "POST /webhooks/sw HTTP/1.1\r\n"
	    "Host: x\r\nWEBHOOK-ID: \t msg_9  \r\n\r\n";
	const char *key, *v;
	size_t used, len;
	struct keyspec ks = { KEY_NONE, "webhook-id" };

	httpreq_init(&r);
	ck_assert_int_eq(httpreq_feed(&r, req, sizeof(req) - 1, &used),
	    HTTPREQ_DONE);
	keys_hdrs_request(&h, &r);
	ck_assert_ptr_nonnull(v = keys_header(&h, "host", &len));
	ck_assert_uint_eq(len, 1);
	ck_assert_ptr_null(keys_header(&h, "hos", &len));
	ck_assert_uint_eq(len, 0);
	keys_init(&k, &h, "{\"id\":1}", 8);
	ck_assert_int_eq(keys_dedupe(conf_source(cf, "sw"), &k, out,
	    sizeof(out)), 5);
	ck_assert_str_eq(out, "msg_9");
	/* KEY_NONE names nothing, even with a name. */
	ck_assert_int_eq(keys_get(&k, &ks, &key, &len), 0);
	ck_assert_ptr_null(key);
	ks.kind = KEY_HEADER;
	ck_assert_int_eq(keys_get(&k, &ks, &key, &len), 1);
	ck_assert_uint_eq(len, 5);
	ck_assert(memcmp(key, "msg_9", 5) == 0);
	/* Every JSON lookup reads the body, again and again. */
	ks.kind = KEY_JSON;
	ks.name = "id";
	ck_assert_int_eq(keys_get(&k, &ks, &key, &len), 1);
	ck_assert(len == 1 && key[0] == '1');
	ck_assert_int_eq(keys_get(&k, &ks, &key, &len), 1);
	keys_free(&k);
	/* Too small an output buffer is refused. */
	keys_init(&k, &h, NULL, 0);
	ck_assert_int_eq(keys_dedupe(conf_source(cf, "sw"), &k, out,
	    KEYS_DEDUPE_MAX), -1);
	keys_free(&k);
	httpreq_free(&r);
	conf_free(cf);
}
END_TEST

/* Strings with escapes come decoded, each lookup's valid until the next;
 * one without is read as it stands. */
START_TEST(test_escaped)
{
	static const char body[] = "{\"a\":\"x\\ty\",\"b\":\"\\u00e9\\u00e9"
	    "\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\\u00e9\",\"c\":\"plain\"}";
	struct keyspec ka = { KEY_JSON, "a" }, kb = { KEY_JSON, "b" };
	struct keyspec kc = { KEY_JSON, "c" };
	struct keys_hdrs h;
	struct keys_ctx k;
	const char *key;
	size_t len;

	keys_hdrs_pairs(&h, NULL, 0);
	keys_init(&k, &h, body, sizeof(body) - 1);
	ck_assert_int_eq(keys_get(&k, &ka, &key, &len), 1);
	ck_assert(len == 3 && memcmp(key, "x\ty", 3) == 0);
	ck_assert_int_eq(keys_get(&k, &kb, &key, &len), 1);
	ck_assert(len == 16 && memcmp(key, "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9"
	    "\xc3\xa9\xc3\xa9\xc3\xa9\xc3\xa9", 16) == 0);
	ck_assert_int_eq(keys_get(&k, &ka, &key, &len), 1);
	ck_assert(len == 3 && memcmp(key, "x\ty", 3) == 0);
	ck_assert_int_eq(keys_get(&k, &kc, &key, &len), 1);
	ck_assert(len == 5 && memcmp(key, "plain", 5) == 0);
	keys_free(&k);
}
END_TEST

static Suite *
keys_suite(void)
{
	Suite *s = suite_create("keys");
	TCase *tc;

#define NELEM(a)	((int)(sizeof(a) / sizeof((a)[0])))
	tc = tcase_create("dedupe");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_dedupe, 0, NELEM(kcases));
	tcase_add_loop_test(tc, test_long, 0, NELEM(long_cases));
	tcase_add_test(tc, test_nul_key);
	tcase_add_test(tc, test_escaped);
	suite_add_tcase(s, tc);

	tc = tcase_create("lookup");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_test(tc, test_request_headers);
	suite_add_tcase(s, tc);
#undef NELEM
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(keys_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
