/* SPDX-License-Identifier: ISC */
/*
 * check_conf_role.c: unit tests of conf_role_text() (common/conf_role.c),
 * the part of the configuration each kind of child gets.
 *
 * A file plants a distinct secret in every secret-bearing key: the verify
 * secrets of the sources (SRC-*), the sinks' credentials, URLs, headers
 * and signing secrets (SINK-*), the claim store's credentials (CLAIM-*).
 * The edge's text must hold every SRC-* and no SINK-* or CLAIM-*, the
 * deliver process's and the gateway's no SRC-* nor SINK-*; each text must
 * parse as its child parses it, with what the child needs in it.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "conf.h"

#define TIMEOUT	10

static const char planted_yaml[] =
    "node:\n"
    "  data_dir: /var/lib/ankusa-test\n"
    "log:\n"
    "  level: debug\n"
    "http:\n"
    "  port: 4100\n"
    "  prefix: /in\n"
    "admin:\n"
    "  port: 4102\n"
    "dispatch:\n"
    "  concurrency: 4\n"
    "rate_limits:\n"
    "  default: {rate: 10, burst: 20}\n"
    "claim_check:\n"
    "  store:\n"
    "    type: s3\n"
    "    s3:\n"
    "      bucket: claims-bucket\n"
    "      region: eu-west-1\n"
    "      endpoint: \"https://s3.local:9000\"\n"
    "      access_key_id: CLAIM-akid\n"
    "      secret_access_key: CLAIM-secret\n"
    "      session_token: CLAIM-session\n"
    "sources:\n"
    "  stripe:\n"
    "    tenant: acme\n"
    "    verify: {type: stripe, secret: [SRC-stripe-new, "
    "SRC-stripe-old]}\n"
    "    dedupe: stripe\n"
    "    retry: {max_attempts: 3}\n"
    "    sinks:\n"
    "      - type: http\n"
    "        url: \"http://SINK-url-user:SINK-url-pass@127.0.0.1:9/"
    "in?api_key=SINK-url-query\"\n"
    "        headers:\n"
    "          authorization: \"Bearer SINK-hdr-auth\"\n"
    "        secret: [\"whsec_U0lOSy13aA==\"]\n"
    "      - type: log\n"
    "        ordered: true\n"
    "        order_key: {header: x-order}\n"
    "  std:\n"
    "    verify:\n"
    "      type: standard_webhooks\n"
    "      secret: \"whsec_U1JDLXdo\"\n"
    "    sinks:\n"
    "      - type: sqs\n"
    "        queue_url: \"https://sqs.local/1/q?sig=SINK-q-query\"\n"
    "        endpoint: \"http://127.0.0.1:4566\"\n"
    "        region: us-east-1\n"
    "        access_key_id: SINK-sqs-akid\n"
    "        secret_access_key: SINK-sqs-secret\n"
    "        session_token: SINK-sqs-session\n"
    "  gh:\n"
    "    verify:\n"
    "      type: hmac\n"
    "      secret: SRC-hmac\n"
    "      signature_header: X-Sig\n"
    "      signed: \"{body}\"\n"
    "    forward_headers: [x-sig, x-github-event]\n"
    "    sinks:\n"
    "      - type: google_pubsub\n"
    "        project: my-project\n"
    "        topic: my-topic\n"
    "        auth: token\n"
    "        token: SINK-pubsub-token\n";

/* base64 of SINK-wh and SRC-wh, as planted in the whsec_ secrets. */
#define B64_SINK	"U0lOSy13aA"
#define B64_SRC		"U1JDLXdo"

static char *
role_text(enum conf_role role, size_t *lenp)
{
	struct conf_errors e = { NULL, 0 };
	char *t;
	int i;

	t = conf_role_text(planted_yaml, strlen(planted_yaml), role, lenp, &e);
	for (i = 0; i < e.n; i++)
		fprintf(stderr, "  error: %s\n", e.msgs[i]);
	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(strlen(t), *lenp);
	conf_errors_free(&e);
	return t;
}

static struct conf *
role_parse(const char *t, size_t len, enum conf_role role)
{
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	int i;

	cf = conf_parse_role(t, len, role, &e);
	for (i = 0; i < e.n; i++)
		fprintf(stderr, "  error: %s\n  in:\n%s\n", e.msgs[i], t);
	ck_assert_ptr_nonnull(cf);
	conf_errors_free(&e);
	return cf;
}

START_TEST(test_edge)
{
	const struct source_conf *s;
	struct conf *cf;
	size_t len;
	char *t;

	t = role_text(CONF_ROLE_EDGE, &len);
	ck_assert_ptr_null(strstr(t, "SINK"));
	ck_assert_ptr_null(strstr(t, B64_SINK));
	ck_assert_ptr_null(strstr(t, "CLAIM"));
	ck_assert_ptr_null(strstr(t, "127.0.0.1"));
	ck_assert_ptr_null(strstr(t, "my-topic"));
	ck_assert_ptr_nonnull(strstr(t, "SRC-stripe-new"));
	ck_assert_ptr_nonnull(strstr(t, "SRC-stripe-old"));
	ck_assert_ptr_nonnull(strstr(t, "SRC-hmac"));
	ck_assert_ptr_nonnull(strstr(t, B64_SRC));

	cf = role_parse(t, len, CONF_ROLE_EDGE);
	ck_assert_uint_eq(cf->http.port, 4100);
	ck_assert_str_eq(cf->http.prefix, "/in");
	ck_assert_str_eq(cf->log_level, "debug");
	ck_assert_int_eq(cf->nsources, 3);
	ck_assert_int_eq(cf->claim_check.enabled, 0);
	s = conf_source(cf, "stripe");
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s->tenant, "acme");
	ck_assert_int_eq(s->verify.nsecrets, 2);
	ck_assert_int_eq(s->dedupe.enabled, 1);
	/* The sinks keep their indexes and lane options, nothing else. */
	ck_assert_int_eq(s->nsinks, 2);
	ck_assert_int_eq(s->sinks[0].type, SINK_LOG);
	ck_assert_int_eq(s->sinks[0].ordered, 0);
	ck_assert_int_eq(s->sinks[1].ordered, 1);
	ck_assert_int_eq(s->sinks[1].order_key.kind, KEY_HEADER);
	ck_assert_str_eq(s->sinks[1].order_key.name, "x-order");
	s = conf_source(cf, "gh");
	ck_assert_ptr_nonnull(s);
	ck_assert_int_eq(s->nforward_headers, 2);
	ck_assert_int_eq(s->verify.nsecrets, 1);
	ck_assert_int_eq(s->sinks[0].type, SINK_LOG);
	conf_free(cf);
	free(t);
}
END_TEST

/* A deliver process and a gateway: the claim store, no source's or
 * sink's secret. */
START_TEST(test_claims_roles)
{
	enum conf_role role = _i == 0 ? CONF_ROLE_DELIVER : CONF_ROLE_GATEWAY;
	struct conf *cf;
	size_t len;
	char *t;

	t = role_text(role, &len);
	ck_assert_ptr_null(strstr(t, "SRC"));
	ck_assert_ptr_null(strstr(t, B64_SRC));
	ck_assert_ptr_null(strstr(t, "SINK"));
	ck_assert_ptr_null(strstr(t, B64_SINK));
	ck_assert_ptr_null(strstr(t, "sources"));
	cf = role_parse(t, len, role);
	ck_assert_str_eq(cf->log_level, "debug");
	ck_assert_str_eq(cf->data_dir, "/var/lib/ankusa-test");
	ck_assert_int_eq(cf->nsources, 0);
	ck_assert_int_eq(cf->claim_check.enabled, 1);
	ck_assert_str_eq(cf->claim_check.store_type, "s3");
	ck_assert_str_eq(cf->claim_check.s3_bucket, "claims-bucket");
	ck_assert_str_eq(cf->claim_check.s3_secret_access_key, "CLAIM-secret");
	conf_free(cf);
	free(t);
}
END_TEST

/* ${VAR} references go to the child as written; $${ stays escaped. */
START_TEST(test_references_kept)
{
	static const char y[] =
	    "sources:\n"
	    "  a:\n"
	    "    verify: {type: github, secret: \"${ROLE_TEST_SECRET}\"}\n"
	    "    sinks:\n"
	    "      - type: http\n"
	    "        url: \"http://127.0.0.1:9/$${literal}\"\n";
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	size_t len;
	char *t;

	setenv("ROLE_TEST_SECRET", "from-env", 1);
	t = conf_role_text(y, strlen(y), CONF_ROLE_EDGE, &len, &e);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(strstr(t, "${ROLE_TEST_SECRET}"));
	ck_assert_ptr_null(strstr(t, "from-env"));
	ck_assert_ptr_null(strstr(t, "literal"));
	cf = role_parse(t, len, CONF_ROLE_EDGE);
	ck_assert_int_eq(cf->sources[0].verify.nsecrets, 1);
	ck_assert_uint_eq(cf->sources[0].verify.secrets[0].len, 8);
	ck_assert_int_eq(memcmp(cf->sources[0].verify.secrets[0].data,
	    "from-env", 8), 0);
	conf_free(cf);
	free(t);
}
END_TEST

/* Without sources, only an edge's text is refused. */
START_TEST(test_sources_needed_by_edge_only)
{
	static const char y[] = "log:\n  level: info\n";
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;

	cf = conf_parse_role(y, strlen(y), CONF_ROLE_EDGE, &e);
	ck_assert_ptr_null(cf);
	ck_assert_int_gt(e.n, 0);
	conf_errors_free(&e);
	cf = conf_parse_role(y, strlen(y), CONF_ROLE_DELIVER, &e);
	ck_assert_ptr_nonnull(cf);
	conf_free(cf);
	cf = conf_parse(y, strlen(y), "t", &e);
	ck_assert_ptr_null(cf);
	conf_errors_free(&e);
}
END_TEST

/* The embedded default goes to every child. */
START_TEST(test_default_config)
{
	const char *d = conf_default_text();
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	size_t len;
	char *t;
	int r;

	for (r = 0; r < CONF_ROLE_MAX; r++) {
		t = conf_role_text(d, strlen(d), r, &len, &e);
		ck_assert_ptr_nonnull(t);
		cf = role_parse(t, len, r);
		conf_free(cf);
		free(t);
	}
}
END_TEST

/* No child needs the replication section: none gets it. */
START_TEST(test_replication_master_only)
{
	static const char yaml[] =
	    "replication:\n"
	    "  local: repl-local.test:7001\n"
	    "  peers: [repl-peer.test:7002]\n"
	    "  priority: 7\n"
	    "claim_check: {}\n"
	    "sources:\n  demo:\n    sinks:\n      - type: log\n";
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	size_t len;
	char *t;
	int r;

	cf = conf_parse(yaml, strlen(yaml), "test.yml", &e);
	ck_assert_ptr_nonnull(cf);
	ck_assert_int_eq(cf->repl.enabled, 1);
	conf_free(cf);
	for (r = 0; r < CONF_ROLE_MAX; r++) {
		t = conf_role_text(yaml, strlen(yaml), r, &len, &e);
		ck_assert_ptr_nonnull(t);
		ck_assert_ptr_null(strstr(t, "replication"));
		ck_assert_ptr_null(strstr(t, "repl-"));
		ck_assert_ptr_null(strstr(t, "7001"));
		cf = role_parse(t, len, r);
		ck_assert_int_eq(cf->repl.enabled, 0);
		ck_assert_ptr_null(cf->repl.local_host);
		ck_assert_uint_eq(cf->repl.npeers, 0);
		conf_free(cf);
		free(t);
	}
}
END_TEST

static Suite *
conf_role_suite(void)
{
	Suite *s = suite_create("conf_role");
	TCase *tc;

	tc = tcase_create("roles");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_edge);
	tcase_add_loop_test(tc, test_claims_roles, 0, 2);
	tcase_add_test(tc, test_references_kept);
	tcase_add_test(tc, test_sources_needed_by_edge_only);
	tcase_add_test(tc, test_default_config);
	tcase_add_test(tc, test_replication_master_only);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(conf_role_suite());
	srunner_set_fork_status(sr, CK_FORK_GETENV);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
