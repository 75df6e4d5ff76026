/* SPDX-License-Identifier: ISC */
/*
 * check_conf_role.c: unit tests of conf_role_text() (common/conf_role.c),
 * the part of the configuration each kind of child gets.
 *
 * A file plants a distinct secret in every secret-bearing key: the verify
 * secrets of the sources (SRC-*), the sinks' credentials, URLs, headers
 * and signing secrets (SINK-*), the claim check's credentials, signing
 * key and tokens (CLAIM-*).
 * The edge's text must hold every SRC-* and no SINK-* or CLAIM-*, the
 * deliver process's and the gateway's no SRC-* nor SINK-*; each text must
 * parse as its child parses it, with what the child needs in it.  A parse
 * names the variables it read: a child's, those of its part only.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
    "  signing_key: CLAIM-signing-key-0123456789abcdef0123\n"
    "  auth:\n"
    "    tokens: [{name: c, token: CLAIM-gateway-token-0123456789}]\n"
    "sources:\n"
    "  stripe:\n"
    "    tenant: acme\n"
    "    verify: {type: stripe, secret: [SRC-stripe-new, "
    "SRC-stripe-old]}\n"
    "    dedupe: stripe\n"
    "    event_type: {json: meta.kind}\n"
    "    retry: {max_attempts: 3}\n"
    "    sinks:\n"
    "      - type: http\n"
    "        filter: {event_types: [invoice.*]}\n"
    "        url: \"http://SINK-url-user:SINK-url-pass@127.0.0.1:9/"
    "in?api_key=SINK-url-query\"\n"
    "        headers:\n"
    "          authorization: \"Bearer SINK-hdr-auth\"\n"
    "        secret: [\"whsec_U0lOSy13aA==\"]\n"
    "      - type: log\n"
    "        ordered: true\n"
    "        order_key: {header: x-order}\n"
    "        filter: {jq: '.amount > 1'}\n"
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
	/* The sinks keep their indexes, lane options and filters, nothing
	 * else. */
	ck_assert_int_eq(s->nsinks, 2);
	ck_assert_int_eq(s->sinks[0].type, SINK_LOG);
	ck_assert_int_eq(s->sinks[0].ordered, 0);
	ck_assert_int_eq(s->sinks[1].ordered, 1);
	ck_assert_int_eq(s->sinks[1].order_key.kind, KEY_HEADER);
	ck_assert_str_eq(s->sinks[1].order_key.name, "x-order");
	/* And their filters, which the edge runs, with the event type. */
	ck_assert_int_eq(s->event_type.kind, KEY_JSON);
	ck_assert_str_eq(s->event_type.name, "meta.kind");
	ck_assert_int_eq(s->sinks[0].nfilter_types, 1);
	ck_assert_str_eq(s->sinks[0].filter_types[0], "invoice.*");
	ck_assert_str_eq(s->sinks[1].filter_jq, ".amount > 1");
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
	/* The key that signs (deliver) and checks (gateway) references. */
	ck_assert_str_eq(cf->claim_check.signing_key,
	    "CLAIM-signing-key-0123456789abcdef0123");
	ck_assert_int_eq(cf->claim_check.ntokens, 1);
	ck_assert_str_eq(cf->claim_check.tokens[0].name, "c");
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

/*
 * A gateway token's token_file becomes, in the deliver processes' and the
 * gateways' texts, the digest the master read (conf_role_text_tokens),
 * so that the file may be root's alone; without the master's
 * configuration, or for a token it has no digest of, it stays as
 * written.
 */
START_TEST(test_token_file_digest)
{
	static const char tok[] = "gateway-token-0123456789";
	char path[] = "/tmp/check_conf_role_tok.XXXXXX", y[1024], err[256];
	struct conf_errors e = { NULL, 0 };
	struct conf *cf, *child;
	size_t len;
	FILE *f;
	char *t;
	int fd;

	ck_assert_int_ne(fd = mkstemp(path), -1);
	ck_assert_ptr_nonnull(f = fdopen(fd, "w"));
	fprintf(f, "%s\n", tok);
	fclose(f);
	snprintf(y, sizeof(y), "claim_check:\n"
	    "  store: {type: local}\n"
	    "  signing_key: signing-key-0123456789abcdef0123456789\n"
	    "  auth:\n"
	    "    tokens:\n"
	    "      - {name: filed, token_file: %s}\n"
	    "      - {name: inline, token: inline-token-0123456789}\n"
	    "sources:\n"
	    "  a:\n"
	    "    sinks: [{type: log}]\n", path);
	cf = conf_parse(y, strlen(y), "test", &e);
	ck_assert_ptr_nonnull(cf);
	ck_assert_int_eq(conf_tokens_read(cf, err, sizeof(err)), 0);
	unlink(path);

	t = conf_role_text_tokens(y, strlen(y), CONF_ROLE_GATEWAY, cf, &len,
	    &e);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_null(strstr(t, "token_file"));
	ck_assert_ptr_null(strstr(t, path));
	ck_assert_ptr_nonnull(strstr(t, "token_sha256"));
	child = role_parse(t, len, CONF_ROLE_GATEWAY);
	ck_assert_int_eq(child->claim_check.ntokens, 2);
	ck_assert_str_eq(child->claim_check.tokens[0].name, "filed");
	ck_assert(child->claim_check.tokens[0].has_digest);
	ck_assert_mem_eq(child->claim_check.tokens[0].digest,
	    cf->claim_check.tokens[0].digest, 32);
	ck_assert_mem_eq(child->claim_check.tokens[1].digest,
	    cf->claim_check.tokens[1].digest, 32);
	conf_free(child);
	free(t);

	/* Without the master's configuration: as written. */
	t = conf_role_text(y, strlen(y), CONF_ROLE_GATEWAY, &len, &e);
	ck_assert_ptr_nonnull(t);
	ck_assert_ptr_nonnull(strstr(t, path));
	ck_assert_ptr_null(strstr(t, "token_sha256"));
	free(t);
	conf_free(cf);
	conf_errors_free(&e);
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

/* The notification sinks stay with the master: no child knows the reserved
 * source (an edge answers 404 for it), nor its sinks' URLs or secrets. */
START_TEST(test_notifications_master_only)
{
	static const char yaml[] =
	    "notifications:\n  sinks:\n"
	    "    - {type: http, url: \"https://notice-host.test/n\", "
	    "secret: whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw}\n"
	    "claim_check: {signing_key: 0123456789abcdef0123456789abcdef}\n"
	    "sources:\n  demo:\n    sinks:\n      - type: log\n";
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	size_t len;
	char *t;
	int r;

	for (r = 0; r < CONF_ROLE_MAX; r++) {
		t = conf_role_text(yaml, strlen(yaml), r, &len, &e);
		ck_assert_ptr_nonnull(t);
		ck_assert_ptr_null(strstr(t, "notifications"));
		ck_assert_ptr_null(strstr(t, "notice-host"));
		ck_assert_ptr_null(strstr(t, "MfKQ9r8"));
		cf = role_parse(t, len, r);
		ck_assert_int_eq(cf->notify.nsinks, 0);
		ck_assert_ptr_null(conf_source(cf, CONF_NOTIFY_SOURCE));
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
	    "claim_check: {signing_key: 0123456789abcdef0123456789abcdef}\n"
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

/* Whether name is one of the NULL-terminated names. */
static int
has_name(char *const *names, const char *name)
{
	for (; *names != NULL; names++)
		if (strcmp(*names, name) == 0)
			return 1;
	return 0;
}

static int
count_names(char *const *names)
{
	int n = 0;

	while (names[n] != NULL)
		n++;
	return n;
}

/*
 * The variables a parse read that are set (conf.h, env_read): the ${VAR}
 * of the text and the ANKUSA_* overrides; a child's parse reads those of
 * its part only, which are all its environment needs to parse it as the
 * master did (daemon/childenv.c).
 */
START_TEST(test_env_read)
{
	static const char y[] =
	    "node:\n"
	    "  data_dir: \"${ENVR_DATA}\"\n"
	    "log:\n"
	    "  level: \"${ENVR_UNSET:-info}\"\n"
	    "claim_check:\n"
	    "  store: {type: local, root: \"${ENVR_CLAIMS}/packs\"}\n"
	    "  signing_key: 0123456789abcdef0123456789abcdef\n"
	    "sources:\n"
	    "  a:\n"
	    "    verify: {type: github, secret: \"${ENVR_GH}\"}\n"
	    "    sinks:\n"
	    "      - type: http\n"
	    "        url: \"https://sink.example/${ENVR_SINK}\"\n";
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	size_t len;
	char *t;
	int r;

	/* The overrides of the children's keys: those set below only. */
	unsetenv("ANKUSA_CLAIM_CHECK_PORT");
	unsetenv("ANKUSA_CLAIM_CHECK_IP");
	unsetenv("ENVR_UNSET");
	setenv("ENVR_DATA", "/var/lib/envr", 1);
	setenv("ENVR_CLAIMS", "/var/lib/envr-claims", 1);
	setenv("ENVR_GH", "gh-secret", 1);
	setenv("ENVR_SINK", "path", 1);
	setenv("ENVR_NOT_NAMED", "never-read", 1);
	setenv("ANKUSA_LOG_LEVEL", "debug", 1);
	setenv("ANKUSA_HTTP_PORT", "4111", 1);
	setenv("PORT", "4222", 1);
	setenv("ANKUSA_DATA_DIR", "/var/lib/envr-over", 1);

	/* The master's parse reads every reference and override. */
	cf = conf_parse(y, strlen(y), "t", &e);
	ck_assert_ptr_nonnull(cf);
	ck_assert_ptr_nonnull(cf->env_read);
	ck_assert(has_name(cf->env_read, "ENVR_SINK"));
	ck_assert(has_name(cf->env_read, "ENVR_GH"));
	ck_assert(has_name(cf->env_read, "ENVR_DATA"));
	ck_assert(has_name(cf->env_read, "PORT"));
	ck_assert(has_name(cf->env_read, "ANKUSA_DATA_DIR"));
	ck_assert(!has_name(cf->env_read, "ENVR_UNSET"));
	ck_assert(!has_name(cf->env_read, "ENVR_NOT_NAMED"));
	conf_free(cf);

	for (r = 0; r < CONF_ROLE_MAX; r++) {
		t = conf_role_text(y, strlen(y), r, &len, &e);
		ck_assert_ptr_nonnull(t);
		cf = role_parse(t, len, r);
		ck_assert(!has_name(cf->env_read, "ENVR_SINK"));
		ck_assert(!has_name(cf->env_read, "ENVR_UNSET"));
		ck_assert(!has_name(cf->env_read, "ENVR_NOT_NAMED"));
		ck_assert(has_name(cf->env_read, "ANKUSA_LOG_LEVEL"));
		ck_assert_str_eq(cf->log_level, "debug");
		if (r == CONF_ROLE_EDGE) {
			/* PORT is read, and yields to ANKUSA_HTTP_PORT. */
			ck_assert_int_eq(count_names(cf->env_read), 4);
			ck_assert(has_name(cf->env_read, "ENVR_GH"));
			ck_assert(has_name(cf->env_read, "ANKUSA_HTTP_PORT"));
			ck_assert(has_name(cf->env_read, "PORT"));
			ck_assert_uint_eq(cf->http.port, 4111);
		} else {
			ck_assert_int_eq(count_names(cf->env_read), 4);
			ck_assert(has_name(cf->env_read, "ENVR_DATA"));
			ck_assert(has_name(cf->env_read, "ENVR_CLAIMS"));
			ck_assert(has_name(cf->env_read, "ANKUSA_DATA_DIR"));
			ck_assert_str_eq(cf->data_dir, "/var/lib/envr-over");
			/* Not its key: the override is not applied. */
			ck_assert_uint_eq(cf->http.port, 4000);
		}
		conf_free(cf);
		free(t);
	}
	unsetenv("ANKUSA_LOG_LEVEL");
	unsetenv("ANKUSA_HTTP_PORT");
	unsetenv("PORT");
	unsetenv("ANKUSA_DATA_DIR");
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
	tcase_add_test(tc, test_token_file_digest);
	tcase_add_test(tc, test_sources_needed_by_edge_only);
	tcase_add_test(tc, test_default_config);
	tcase_add_test(tc, test_notifications_master_only);
	tcase_add_test(tc, test_replication_master_only);
	tcase_add_test(tc, test_env_read);
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
