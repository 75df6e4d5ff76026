/* SPDX-License-Identifier: ISC */
/*
 * check_evtype.c: unit tests for workers/evtype.c, a hook's event type
 * per verify preset and per a source's own event_type.
 *
 * The sources come from conf_parse (their secrets are never used: no
 * request is verified here).
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "evtype.h"
#include "keys.h"
#include "testutil.h"

#define CASE_TIMEOUT	10
#define MAXHDRS		8
#define NELEM(a)	((int)(sizeof(a) / sizeof((a)[0])))

static const char test_yaml[] =
    "node:\n"
    "  data_dir: /tmp/ankusa-check-evtype\n"
    "sources:\n"
    "  stripe:\n"
    "    verify: {type: stripe, secret: s}\n"
    "    sinks: [{type: log}]\n"
    "  gh:\n"
    "    verify: {type: github, secret: s}\n"
    "    sinks: [{type: log}]\n"
    "  shopify:\n"
    "    verify: {type: shopify, secret: s}\n"
    "    sinks: [{type: log}]\n"
    "  slack:\n"
    "    verify: {type: slack, secret: s}\n"
    "    sinks: [{type: log}]\n"
    "  sw:\n"
    "    verify: {type: standard_webhooks,\n"
    "      secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}\n"
    "    sinks: [{type: log}]\n"
    "  zoom:\n"
    "    verify: {type: zoom, secret: s}\n"
    "    sinks: [{type: log}]\n"
    "  meta:\n"
    "    verify: {type: meta, secret: s}\n"
    "    sinks: [{type: log}]\n"
    "  none:\n"
    "    verify: {type: none}\n"
    "    sinks: [{type: log}]\n"
    "  hdr:\n"
    "    verify: {type: none}\n"
    "    event_type: {header: X-Kind}\n"
    "    sinks: [{type: log}]\n"
    "  json:\n"
    "    verify: {type: stripe, secret: s}\n"
    "    event_type: {json: meta.kind}\n"
    "    sinks: [{type: log}]\n";

struct ecase {
	const char	*source;
	const char	*headers;	/* "Name: value" lines */
	const char	*body;
	const char	*want;		/* "" for none */
};

static const struct ecase ecases[] = {
	{ "stripe", "", "{\"type\":\"invoice.paid\",\"id\":\"evt_1\"}",
	    "invoice.paid" },
	{ "stripe", "", "{\"type\":42}", "42" },
	{ "stripe", "", "{\"type\":\"\"}", "" },
	{ "stripe", "", "{\"type\":[\"a\"]}", "" },
	{ "stripe", "", "{\"type\":\"a\\u0001b\"}", "" },
	{ "stripe", "", "not json", "" },
	{ "stripe", "", "", "" },
	{ "stripe", "Type: header.wins", "{\"kind\":1}", "" },
	{ "gh", "X-GitHub-Event: issues",
	    "{\"action\":\"opened\",\"issue\":{}}", "issues.opened" },
	{ "gh", "X-GitHub-Event: push", "{\"ref\":\"refs/heads/main\"}",
	    "push" },
	{ "gh", "X-GitHub-Event: push", "not json", "push" },
	{ "gh", "X-GitHub-Event: issues", "{\"action\":7}", "issues.7" },
	{ "gh", "X-GitHub-Event: issues", "{\"action\":{}}", "issues" },
	{ "gh", "", "{\"action\":\"opened\"}", "" },
	{ "shopify", "X-Shopify-Topic: orders/create", "{\"type\":\"x\"}",
	    "orders/create" },
	{ "shopify", "", "{\"type\":\"x\"}", "" },
	{ "slack", "", "{\"type\":\"event_callback\",\"event\":"
	    "{\"type\":\"app_mention\"}}", "app_mention" },
	{ "slack", "", "{\"type\":\"url_verification\",\"challenge\":\"c\"}",
	    "url_verification" },
	{ "slack", "", "payload=%7B%7D", "" },
	{ "sw", "", "{\"type\":\"user.created\",\"data\":{}}",
	    "user.created" },
	{ "zoom", "", "{\"event\":\"meeting.started\",\"payload\":{}}",
	    "meeting.started" },
	{ "zoom", "", "{\"type\":\"meeting.started\"}", "" },
	{ "meta", "", "{\"object\":\"page\",\"entry\":[]}", "" },
	{ "none", "X-GitHub-Event: push", "{\"type\":\"a.b\"}", "" },
	{ "hdr", "x-kind: thing.made", "{\"type\":\"a.b\"}", "thing.made" },
	{ "hdr", "", "{\"type\":\"a.b\"}", "" },
	{ "json", "", "{\"type\":\"a\",\"meta\":{\"kind\":\"k.1\"}}", "k.1" },
	{ "json", "", "{\"type\":\"a\"}", "" },
};

static const char *
evtype_of(const struct conf *cf, const char *source, const char *headers,
    const char *body, char *out)
{
	const struct source_conf *src = conf_source(cf, source);
	struct header_kv kv[MAXHDRS];
	struct keys_hdrs h;
	struct keys_ctx k;
	char *buf;
	size_t n;
	int nh;

	ck_assert_msg(src != NULL, "no source %s", source);
	nh = test_headers(headers, kv, MAXHDRS, &buf);
	keys_hdrs_pairs(&h, kv, nh);
	keys_init(&k, &h, body, strlen(body));
	n = evtype_get(src, &k, out);
	ck_assert_uint_eq(n, strlen(out));
	keys_free(&k);
	free(buf);
	return out;
}

START_TEST(test_evtype)
{
	const struct ecase *c = &ecases[_i];
	struct conf *cf = test_conf_parse(test_yaml, sizeof(test_yaml) - 1);
	char out[EVTYPE_MAX + 1];

	ck_assert_str_eq(evtype_of(cf, c->source, c->headers, c->body, out),
	    c->want);
	conf_free(cf);
}
END_TEST

/* EVTYPE_MAX bytes are a type, one more is none; GitHub's EVENT.ACTION
 * that would pass it is the event alone. */
START_TEST(test_evtype_long)
{
	struct conf *cf = test_conf_parse(test_yaml, sizeof(test_yaml) - 1);
	char out[EVTYPE_MAX + 1], body[EVTYPE_MAX + 64], hdr[EVTYPE_MAX + 32];
	char t[EVTYPE_MAX + 2];

	memset(t, 'a', sizeof(t) - 1);
	t[EVTYPE_MAX] = '\0';
	snprintf(body, sizeof(body), "{\"type\":\"%s\"}", t);
	ck_assert_str_eq(evtype_of(cf, "stripe", "", body, out), t);
	t[EVTYPE_MAX] = 'a';
	t[EVTYPE_MAX + 1] = '\0';
	snprintf(body, sizeof(body), "{\"type\":\"%s\"}", t);
	ck_assert_str_eq(evtype_of(cf, "stripe", "", body, out), "");
	t[EVTYPE_MAX - 3] = '\0';
	snprintf(hdr, sizeof(hdr), "X-GitHub-Event: %s", t);
	ck_assert_str_eq(evtype_of(cf, "gh", hdr, "{\"action\":\"opened\"}",
	    out), t);
	conf_free(cf);
}
END_TEST

static Suite *
evtype_suite(void)
{
	Suite *s = suite_create("evtype");
	TCase *tc;

	tc = tcase_create("evtype");
	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_evtype, 0, NELEM(ecases));
	tcase_add_test(tc, test_evtype_long);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(evtype_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
