/* SPDX-License-Identifier: ISC */
/*
 * check_childenv.c: unit tests of childenv_make() (daemon/childenv.c), the
 * environment each kind of child is executed with.
 *
 * The process's environment stands in for the master's: each case sets
 * the variables of a master (the service manager's, secrets named and not
 * named by the config, AWS_*, proxies) and checks, for a config and a kind
 * of child, which of them the child gets, with their values.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>

#include "childenv.h"
#include "conf.h"

#define TIMEOUT	10

/* The master's environment of every case. */
static const char *const master_env[][2] = {
	{ "NOTIFY_SOCKET", "/run/systemd/notify" },
	{ "WATCHDOG_USEC", "30000000" },
	{ "LISTEN_FDS", "2" },
	{ "ANKUSA_INHERIT_FDS", "http=3" },
	{ "LD_PRELOAD", "" },
	{ "PATH", "/usr/bin:/bin" },
	{ "HOME", "/root" },
	{ "TZ", "UTC0" },
	{ "CE_GH_SECRET", "gh-secret" },
	{ "CE_SINK_TOKEN", "sink-token" },
	{ "CE_CLAIMS", "/var/lib/ce-claims" },
	{ "CE_UNNAMED", "nobody-names-it" },
	{ "AWS_ACCESS_KEY_ID", "AKIACE" },
	{ "AWS_SECRET_ACCESS_KEY", "aws-secret" },
	{ "AWS_REGION", "eu-west-1" },
	{ "https_proxy", "http://proxy.example:3128" },
	{ "GCE_METADATA_HOST", "metadata.example" },
	{ "ANKUSA_NODE_ROLE", "single" },
	{ "ANKUSA_LOG_LEVEL", "info" },
	{ NULL, NULL }
};

/* What each kind gets of it whatever the config says. */
#define EVERY	"TZ", "ANKUSA_LOG_LEVEL"
#define AWS	"AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_REGION"

/* The source, named secret and claim store of every case; %s: its sinks,
 * then its claim store. */
static const char conf_fmt[] =
    "sources:\n"
    "  gh:\n"
    "    verify: {type: github, secret: \"${CE_GH_SECRET}\"}\n"
    "    sinks:\n"
    "%s"
    "claim_check:\n"
    "  signing_key: 0123456789abcdef0123456789abcdef\n"
    "  store:\n"
    "%s";

static const char sink_http[] =
    "      - type: http\n"
    "        url: https://sink.example/in\n"
    "        headers: {authorization: \"Bearer ${CE_SINK_TOKEN}\"}\n";
static const char sink_sqs_env[] =
    "      - type: sqs\n"
    "        queue_url: https://sqs.eu-west-1.amazonaws.com/1/q\n";
static const char sink_sqs_keys[] =
    "      - type: sqs\n"
    "        queue_url: https://sqs.eu-west-1.amazonaws.com/1/q\n"
    "        access_key_id: AKIAFILE\n"
    "        secret_access_key: file-secret\n";
static const char sink_pubsub_meta[] =
    "      - type: google_pubsub\n"
    "        project: p\n"
    "        topic: t\n";
static const char sink_pubsub_token[] =
    "      - type: google_pubsub\n"
    "        project: p\n"
    "        topic: t\n"
    "        auth: token\n"
    "        token: file-token\n";
static const char store_local[] =
    "    type: local\n"
    "    root: \"${CE_CLAIMS}\"\n";
static const char store_s3_env[] =
    "    type: s3\n"
    "    s3: {bucket: b}\n";
static const char store_s3_keys[] =
    "    type: s3\n"
    "    s3: {bucket: b, region: eu-west-1, access_key_id: AKIAFILE,\n"
    "      secret_access_key: file-secret}\n";

struct ccase {
	const char		*sinks;
	const char		*store;
	enum conf_role		 role;
	const char *const	 want[12];	/* NULL-terminated names */
};

static const struct ccase cases[] = {
	/* The edges: their source's secret, their role; never AWS_*. */
	{ sink_sqs_env, store_s3_env, CONF_ROLE_EDGE,
	  { EVERY, "CE_GH_SECRET", "ANKUSA_NODE_ROLE", NULL } },
	/* Deliver processes: the claim store's variable, the proxies; a
	 * sink's own variable is the master's (the job brings its value). */
	{ sink_http, store_local, CONF_ROLE_DELIVER,
	  { EVERY, "CE_CLAIMS", "https_proxy", NULL } },
	{ sink_sqs_env, store_local, CONF_ROLE_DELIVER,
	  { EVERY, "CE_CLAIMS", "https_proxy", AWS, NULL } },
	{ sink_sqs_keys, store_local, CONF_ROLE_DELIVER,
	  { EVERY, "CE_CLAIMS", "https_proxy", NULL } },
	{ sink_pubsub_meta, store_local, CONF_ROLE_DELIVER,
	  { EVERY, "CE_CLAIMS", "https_proxy", "GCE_METADATA_HOST", NULL } },
	{ sink_pubsub_token, store_local, CONF_ROLE_DELIVER,
	  { EVERY, "CE_CLAIMS", "https_proxy", NULL } },
	{ sink_http, store_s3_env, CONF_ROLE_DELIVER,
	  { EVERY, "https_proxy", AWS, NULL } },
	{ sink_http, store_s3_keys, CONF_ROLE_DELIVER,
	  { EVERY, "https_proxy", NULL } },
	/* Gateways: the claim store's; out of the host only to S3. */
	{ sink_sqs_env, store_local, CONF_ROLE_GATEWAY,
	  { EVERY, "CE_CLAIMS", NULL } },
	{ sink_sqs_env, store_s3_env, CONF_ROLE_GATEWAY,
	  { EVERY, "https_proxy", AWS, NULL } },
	{ sink_sqs_env, store_s3_keys, CONF_ROLE_GATEWAY,
	  { EVERY, "https_proxy", NULL } },
};

/* The master's environment, and nothing of this process's. */
static void
set_master_env(void)
{
	int i;

	ck_assert_int_eq(clearenv(), 0);
	for (i = 0; master_env[i][0] != NULL; i++)
		ck_assert_int_eq(setenv(master_env[i][0], master_env[i][1], 1),
		    0);
}

/* The master's value of name. */
static const char *
master_value(const char *name)
{
	int i;

	for (i = 0; master_env[i][0] != NULL; i++)
		if (strcmp(master_env[i][0], name) == 0)
			return master_env[i][1];
	return NULL;
}

START_TEST(test_kinds)
{
	const struct ccase *c = &cases[_i];
	struct conf_errors errs = { NULL, 0 };
	struct conf *cf;
	char text[2048], err[256], *part, **env, **e, *eq;
	size_t len, plen;
	int i, n, found;

	set_master_env();
	snprintf(text, sizeof(text), conf_fmt, c->sinks, c->store);
	cf = conf_parse(text, strlen(text), "test", &errs);
	for (i = 0; i < errs.n; i++)
		fprintf(stderr, "  error: %s\n", errs.msgs[i]);
	ck_assert_ptr_nonnull(cf);
	part = conf_role_text(text, strlen(text), c->role, &plen, &errs);
	ck_assert_ptr_nonnull(part);
	env = childenv_make(c->role, part, plen, cf, err, sizeof(err));
	ck_assert_msg(env != NULL, "%s", err);

	/* Every name wanted, with the master's value, and nothing else. */
	for (n = 0; c->want[n] != NULL; n++) {
		len = strlen(c->want[n]);
		for (found = 0, e = env; *e != NULL; e++)
			if (strncmp(*e, c->want[n], len) == 0 &&
			    (*e)[len] == '=') {
				ck_assert_str_eq(*e + len + 1,
				    master_value(c->want[n]));
				found++;
			}
		ck_assert_msg(found == 1, "case %d: %s %d times", _i,
		    c->want[n], found);
	}
	for (i = 0; env[i] != NULL; i++) {
		eq = strchr(env[i], '=');
		ck_assert_ptr_nonnull(eq);
	}
	ck_assert_msg(i == n, "case %d: %d variables, want %d (first: %s)",
	    _i, i, n, env[0] != NULL ? env[0] : "none");
	childenv_free(env);
	free(part);
	conf_free(cf);
}
END_TEST

/* Only the variables the master has: an unset one is not made up. */
START_TEST(test_unset_left_out)
{
	static const char text[] =
	    "sources:\n  demo:\n    sinks:\n      - type: log\n";
	struct conf_errors errs = { NULL, 0 };
	struct conf *cf;
	char err[256], *part, **env;
	size_t plen;

	set_master_env();
	unsetenv("TZ");
	unsetenv("ANKUSA_LOG_LEVEL");
	unsetenv("https_proxy");
	cf = conf_parse(text, strlen(text), "test", &errs);
	ck_assert_ptr_nonnull(cf);
	part = conf_role_text(text, strlen(text), CONF_ROLE_DELIVER, &plen,
	    &errs);
	ck_assert_ptr_nonnull(part);
	env = childenv_make(CONF_ROLE_DELIVER, part, plen, cf, err,
	    sizeof(err));
	ck_assert_ptr_nonnull(env);
	ck_assert_ptr_null(env[0]);
	childenv_free(env);
	free(part);
	conf_free(cf);
}
END_TEST

/* A part that does not parse: NULL and why. */
START_TEST(test_bad_part)
{
	static const char text[] =
	    "sources:\n  demo:\n    sinks:\n      - type: log\n";
	static const char bad[] = "log: [\n";
	struct conf_errors errs = { NULL, 0 };
	struct conf *cf;
	char err[256] = "";

	cf = conf_parse(text, strlen(text), "test", &errs);
	ck_assert_ptr_nonnull(cf);
	ck_assert_ptr_null(childenv_make(CONF_ROLE_EDGE, bad, strlen(bad), cf,
	    err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "its part of the config"));
	conf_free(cf);
}
END_TEST

START_TEST(test_same)
{
	char a0[] = "A=1", a1[] = "B=2", b1[] = "B=3";
	char *a[] = { a0, a1, NULL }, *b[] = { a0, b1, NULL };
	char *c[] = { a0, NULL }, *none[] = { NULL };

	ck_assert_int_eq(childenv_same(a, a), 1);
	ck_assert_int_eq(childenv_same(a, b), 0);
	ck_assert_int_eq(childenv_same(a, c), 0);
	ck_assert_int_eq(childenv_same(c, a), 0);
	ck_assert_int_eq(childenv_same(none, none), 1);
	ck_assert_int_eq(childenv_same(none, c), 0);
}
END_TEST

static Suite *
childenv_suite(void)
{
	Suite *s = suite_create("childenv");
	TCase *tc;

	tc = tcase_create("childenv");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_loop_test(tc, test_kinds, 0,
	    sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, test_unset_left_out);
	tcase_add_test(tc, test_bad_part);
	tcase_add_test(tc, test_same);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(childenv_suite());
	srunner_set_fork_status(sr, CK_FORK_GETENV);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
