/* SPDX-License-Identifier: ISC */
/*
 * check_conf_json.c: unit tests of conf_json() (common/conf_json.c), the
 * redacted configuration of GET /v1/config.
 *
 * A file plants a distinct secret in every key and URL part that can hold
 * one; the dump must hold none of them, in any form (the text, its base64,
 * the bytes a whsec_ secret decodes to), and must show what is no secret.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <jansson.h>

#include "conf.h"
#include "conf_json.h"

#define TIMEOUT	10

/* "whsec_" + base64 of PLANT-wh-verify and PLANT-wh-sink: what the dump
 * must not show. */
#define WHSEC_VERIFY	"whsec_UExBTlQtd2gtdmVyaWZ5"
#define WHSEC_SINK	"whsec_UExBTlQtd2gtc2luaw=="

static const char planted_yaml[] =
    "claim_check:\n"
    "  store:\n"
    "    type: s3\n"
    "    s3:\n"
    "      bucket: claims-bucket\n"
    "      region: eu-west-1\n"
    "      endpoint: \"https://PLANT-s3-user:PLANT-s3-pass@s3.local:9000/"
    "base?X-Amz-Security-Token=PLANT-s3-query\"\n"
    "      access_key_id: PLANT-s3-akid\n"
    "      secret_access_key: PLANT-s3-secret\n"
    "      session_token: PLANT-s3-session\n"
    "  signing_key: PLANT-signing-0123456789abcdef0123456789\n"
    "sources:\n"
    "  stripe:\n"
    "    verify: {type: stripe, secret: [PLANT-stripe-new, "
    "PLANT-stripe-old]}\n"
    "    sinks:\n"
    "      - type: http\n"
    "        url: \"http://PLANT-url-user:PLANT-url-pass@sink.test:9/"
    "in/hooks?api_key=PLANT-url-query&x=PLANT-url-query2#PLANT-frag\"\n"
    "        headers:\n"
    "          authorization: \"Bearer PLANT-hdr-auth\"\n"
    "          x-api-key: PLANT-hdr-key\n"
    "        secret: [\"" WHSEC_SINK "\"]\n"
    "      - type: http\n"
    "        url: \"https://hooks.slack.com/services/T0PLANT01/B0PLANT02/"
    "PLANTxxxAbCdEfGh12345678\"\n"
    "      - type: http\n"
    "        url: \"https://api.example.com/api/v2/production-events/12345/"
    "ABCDEFGHijklmnop/abcdefghijklmnopqrstuvwxyzabcdefgh/zz\"\n"
    "  std:\n"
    "    verify:\n"
    "      type: standard_webhooks\n"
    "      secret: \"" WHSEC_VERIFY "\"\n"
    "    sinks:\n"
    "      - type: sqs\n"
    "        queue_url: \"https://PLANT-q-user@sqs.local/1/q?"
    "sig=PLANT-q-query\"\n"
    "        endpoint: \"http://sqs.test:4566/?token=PLANT-sqs-ep-query\"\n"
    "        region: us-east-1\n"
    "        access_key_id: PLANT-sqs-akid\n"
    "        secret_access_key: PLANT-sqs-secret\n"
    "        session_token: PLANT-sqs-session\n"
    "  fb:\n"
    "    verify: {type: meta, secret: PLANT-meta, "
    "verify_token: PLANT-meta-token}\n"
    "    sinks: [{type: log}]\n"
    "  gh:\n"
    "    verify:\n"
    "      type: hmac\n"
    "      secret: PLANT-hmac\n"
    "      signature_header: X-Sig\n"
    "      signed: \"{body}\"\n"
    "    sinks:\n"
    "      - type: google_pubsub\n"
    "        project: my-project\n"
    "        topic: my-topic\n"
    "        endpoint: \"http://PLANT-ps-user:PLANT-ps-pass@pubsub.test:4588\"\n"
    "        auth: token\n"
    "        token: PLANT-pubsub-token\n"
    "      - type: redis\n"
    "        url: \"rediss://PLANT-r-user:PLANT-r-pass@redis.test/2\"\n"
    "        stream: my-stream\n"
    "      - type: redis\n"
    "        url: \"redis://redis.test\"\n"
    "        channel: my-channel\n"
    "      - type: nats\n"
    "        servers: [\"nats.test:4333\"]\n"
    "        subject: hooks.gh\n"
    "        auth: {username: u, password: PLANT-nats-pass}\n"
    "      - type: nats\n"
    "        servers: [\"tls://nats.test\"]\n"
    "        subject: hooks.gh\n"
    "        auth: {token: PLANT-nats-token}\n";

/* Every planted secret, and the forms it could take. */
static const char *const planted[] = {
	"PLANT", "UExBTlQ", "whsec_",
};

static char *
dump(const char *yaml)
{
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	json_t *o;
	char *s;
	int i;

	cf = conf_parse(yaml, strlen(yaml), "test.yml", &e);
	for (i = 0; i < e.n; i++)
		fprintf(stderr, "  error: %s\n", e.msgs[i]);
	ck_assert_ptr_nonnull(cf);
	o = conf_json(cf);
	ck_assert_ptr_nonnull(o);
	s = json_dumps(o, JSON_SORT_KEYS | JSON_COMPACT);
	ck_assert_ptr_nonnull(s);
	json_decref(o);
	conf_free(cf);
	return s;
}

START_TEST(test_no_secret_shown)
{
	char *s = dump(planted_yaml);
	size_t i;

	for (i = 0; i < sizeof(planted) / sizeof(planted[0]); i++)
		ck_assert_msg(strstr(s, planted[i]) == NULL,
		    "%s shown in %s", planted[i], s);
	free(s);
}
END_TEST

/* What is no secret is shown, and the shape of a redacted URL. */
START_TEST(test_shown)
{
	static const char *const want[] = {
		"\"url\":\"http://<redacted>@sink.test:9/in/hooks?<redacted>\"",
		/* Tokens in a path: Slack's, one of mixed-case letters, one
		 * of 32 lower-case letters; words, versions and numbers
		 * shown. */
		"\"url\":\"https://hooks.slack.com/services/<redacted>/"
		    "<redacted>/<redacted>\"",
		"\"url\":\"https://api.example.com/api/v2/production-events/"
		    "12345/<redacted>/<redacted>/zz\"",
		"\"queue_url\":\"https://<redacted>@sqs.local/1/q?<redacted>\"",
		"\"endpoint\":\"http://sqs.test:4566/?<redacted>\"",
		"\"endpoint\":\"http://<redacted>@pubsub.test:4588\"",
		"\"endpoint\":\"https://<redacted>@s3.local:9000/base?"
		    "<redacted>\"",
		"\"headers\":{\"authorization\":\"<redacted>\","
		    "\"x-api-key\":\"<redacted>\"}",
		"\"secret\":\"<redacted>\"",
		"\"access_key_id\":\"<redacted>\"",
		"\"secret_access_key\":\"<redacted>\"",
		"\"token\":\"<redacted>\"",
		"\"bucket\":\"claims-bucket\"",
		"\"project\":\"my-project\"",
		"\"topic\":\"my-topic\"",
		"\"stream\":\"my-stream\"",
		"\"channel\":\"my-channel\"",
		"\"servers\":[\"nats.test:4333\"]",
		"\"subject\":\"hooks.gh\"",
		"\"password\":\"<redacted>\"",
		"\"signature_header\":\"X-Sig\"",
		"\"port\":4000",
		"\"routing\":\"path\"",
		"\"type\":\"standard_webhooks\"",
		"\"type\":\"google_pubsub\"",
		"\"mode\":\"0660\"",
		"\"rate\":20.0",
		"\"enabled\":false",
		"\"roles\":[\"edge\",\"dispatch\",\"storage\"]",
		"\"default\":null",
	};
	char *s = dump(planted_yaml);
	size_t i;

	for (i = 0; i < sizeof(want) / sizeof(want[0]); i++)
		ck_assert_msg(strstr(s, want[i]) != NULL, "%s not in %s",
		    want[i], s);
	free(s);
}
END_TEST

/* Every key of the table has its member (defaults included). */
START_TEST(test_shape)
{
	static const char yaml[] =
	    "sources:\n  demo:\n    dedupe: github\n    sinks:\n"
	    "      - type: log\n";
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	json_t *o, *src, *sk;

	cf = conf_parse(yaml, strlen(yaml), "test.yml", &e);
	ck_assert_ptr_nonnull(cf);
	o = conf_json(cf);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o,
	    "http"), "port")), 4000);
	/* The ingest limits are no secrets: shown. */
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o,
	    "http"), "header_timeout_ms")), 10000);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o,
	    "http"), "min_body_rate")), 1024);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o,
	    "http"), "max_conns_per_ip")), 256);
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(o,
	    "http"), "max_buffered_bytes")), 268435456);
	ck_assert(json_is_null(json_object_get(o, "claim_check")));
	ck_assert_int_eq(json_integer_value(json_object_get(json_object_get(
	    json_object_get(o, "dispatch"), "retry"), "max_attempts")), 84);
	src = json_object_get(json_object_get(o, "sources"), "demo");
	ck_assert_ptr_nonnull(src);
	ck_assert_str_eq(json_string_value(json_object_get(json_object_get(
	    src, "dedupe"), "header")), "x-github-delivery");
	sk = json_array_get(json_object_get(src, "sinks"), 0);
	ck_assert_str_eq(json_string_value(json_object_get(sk, "type")), "log");
	/* A log sink has none of the other types' keys. */
	ck_assert_ptr_null(json_object_get(sk, "url"));
	ck_assert_ptr_nonnull(json_object_get(json_object_get(o, "dispatch"),
	    "tenants"));
	/* No secret set: null, not "<redacted>". */
	ck_assert(json_is_null(json_object_get(json_object_get(src, "verify"),
	    "secret")));
	json_decref(o);
	conf_free(cf);
}
END_TEST

/* The replication section: every key shown, sites as host:port; absent:
 * null, as claim_check is. */
START_TEST(test_replication)
{
	static const char yaml[] =
	    "replication:\n"
	    "  local: 127.0.0.1:7001\n"
	    "  peers: [127.0.0.2:7002, \"[::1]:7003\", node3.test:7004]\n"
	    "  priority: 5\n"
	    "  ack_policy: all\n"
	    "  ack_timeout_ms: 900\n"
	    "  heartbeat_ms: 0\n"
	    "sources:\n  demo:\n    sinks:\n      - type: log\n";
	static const char want[] =
	    "{\"ack_policy\":\"all\",\"ack_timeout_ms\":900,\"create\":false,"
	    "\"heartbeat_ms\":0,\"heartbeat_timeout_ms\":2000,"
	    "\"insecure_public\":false,"
	    "\"local\":\"127.0.0.1:7001\",\"peers\":[\"127.0.0.2:7002\","
	    "\"[::1]:7003\",\"node3.test:7004\"],\"priority\":5}";
	static const char single[] =
	    "sources:\n  demo:\n    sinks:\n      - type: log\n";
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	json_t *o;
	char *s;

	cf = conf_parse(yaml, strlen(yaml), "test.yml", &e);
	ck_assert_ptr_nonnull(cf);
	o = conf_json(cf);
	s = json_dumps(json_object_get(o, "replication"),
	    JSON_SORT_KEYS | JSON_COMPACT);
	ck_assert_ptr_nonnull(s);
	ck_assert_str_eq(s, want);
	free(s);
	json_decref(o);
	conf_free(cf);

	cf = conf_parse(single, strlen(single), "test.yml", &e);
	ck_assert_ptr_nonnull(cf);
	o = conf_json(cf);
	ck_assert_ptr_nonnull(json_object_get(o, "replication"));
	ck_assert(json_is_null(json_object_get(o, "replication")));
	json_decref(o);
	conf_free(cf);
}
END_TEST

static Suite *
conf_json_suite(void)
{
	Suite *s = suite_create("conf_json");
	TCase *tc;

	tc = tcase_create("redaction");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_no_secret_shown);
	tcase_add_test(tc, test_shown);
	tcase_add_test(tc, test_shape);
	tcase_add_test(tc, test_replication);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(conf_json_suite());
	srunner_set_fork_status(sr, CK_FORK_GETENV);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
