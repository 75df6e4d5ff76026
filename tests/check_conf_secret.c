/* SPDX-License-Identifier: ISC */
/*
 * check_conf_secret.c: unit tests of the values read from files,
 * ${file:PATH} and ${credential:NAME} (common/conf_secret.c), in a parse
 * of the master (conf_yaml.c) and in the children's parts of the text
 * (conf_role.c), and of the note of a secret written in the file itself
 * (struct conf's secret_inline).
 */
#include "config.h"

#include <sys/stat.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>

#include "conf.h"
#include "conf_secret.h"

#define TIMEOUT	10

static char dir[] = "/tmp/check_conf_secret.XXXXXX";

static void
setup(void)
{
	ck_assert_ptr_nonnull(mkdtemp(dir));
}

static void
teardown(void)
{
	char cmd[128];

	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	ck_assert_int_eq(system(cmd), 0);
	memcpy(dir + strlen(dir) - 6, "XXXXXX", 6);
}

/* dir/name holding len bytes of data, mode 0600; its path. */
static const char *
put(const char *name, const void *data, size_t len)
{
	static char path[256];
	FILE *fp;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	ck_assert_ptr_nonnull(fp = fopen(path, "w"));
	ck_assert_uint_eq(fwrite(data, 1, len, fp), len);
	ck_assert_int_eq(fclose(fp), 0);
	ck_assert_int_eq(chmod(path, 0600), 0);
	return path;
}

/* What ${ref} reads, or NULL with err. */
static char *
read_ref(const char *ref, char *err, size_t errlen)
{
	return conf_secret_read(ref, strlen(ref), err, errlen);
}

START_TEST(test_file_newline_stripped)
{
	static const struct {
		const char	*bytes;
		const char	*want;
	} cases[] = {
		{ "s3cret\n", "s3cret" },
		{ "s3cret\r\n", "s3cret" },
		{ "s3cret", "s3cret" },
		{ "s3cret\n\n", "s3cret\n" },	/* one newline only */
		{ "two words \n", "two words " },
		{ "\n", "" },
	};
	char ref[300], err[512], *v;
	size_t i;

	for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		snprintf(ref, sizeof(ref), "file:%s", put("s",
		    cases[i].bytes, strlen(cases[i].bytes)));
		v = read_ref(ref, err, sizeof(err));
		ck_assert_msg(v != NULL, "%s: %s", ref, err);
		ck_assert_str_eq(v, cases[i].want);
		free(v);
	}
}
END_TEST

START_TEST(test_file_errors)
{
	char ref[300], err[512], *big;

	snprintf(ref, sizeof(ref), "file:%s/missing", dir);
	ck_assert_ptr_null(read_ref(ref, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "missing"));
	ck_assert_ptr_nonnull(strstr(err, "No such file"));

	ck_assert_ptr_null(read_ref("file:relative/path", err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "absolute"));

	snprintf(ref, sizeof(ref), "file:%s", put("nul", "a\0b", 3));
	ck_assert_ptr_null(read_ref(ref, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "NUL"));

	ck_assert_ptr_nonnull(big = calloc(1, CONF_SECRET_MAX + 2));
	memset(big, 'x', CONF_SECRET_MAX + 1);
	snprintf(ref, sizeof(ref), "file:%s", put("big", big,
	    CONF_SECRET_MAX + 1));
	free(big);
	ck_assert_ptr_null(read_ref(ref, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "larger"));

	snprintf(ref, sizeof(ref), "file:%s", dir);
	ck_assert_ptr_null(read_ref(ref, err, sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "not a regular file"));
}
END_TEST

START_TEST(test_credential)
{
	char err[512], *v;

	put("gh_secret", "from-credential\n", 16);
	unsetenv("CREDENTIALS_DIRECTORY");
	ck_assert_ptr_null(read_ref("credential:gh_secret", err,
	    sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "CREDENTIALS_DIRECTORY"));
	setenv("CREDENTIALS_DIRECTORY", dir, 1);
	v = read_ref("credential:gh_secret", err, sizeof(err));
	ck_assert_msg(v != NULL, "%s", err);
	ck_assert_str_eq(v, "from-credential");
	free(v);
	ck_assert_ptr_null(read_ref("credential:../etc/passwd", err,
	    sizeof(err)));
	ck_assert_ptr_null(read_ref("credential:..", err, sizeof(err)));
	ck_assert_ptr_null(read_ref("credential:", err, sizeof(err)));
	unsetenv("CREDENTIALS_DIRECTORY");
}
END_TEST

START_TEST(test_inline)
{
	char in[600], want[600], err[512], *v;
	int changed;

	put("tok", "a${b}c\n", 7);
	snprintf(in, sizeof(in), "x-${file:%s/tok}-${KEEP}-$${lit}", dir);
	v = conf_secret_inline(in, &changed, err, sizeof(err));
	ck_assert_msg(v != NULL, "%s", err);
	ck_assert_int_eq(changed, 1);
	/* The file's "${" is escaped; the other references stay. */
	snprintf(want, sizeof(want), "x-a$${b}c-${KEEP}-$${lit}");
	ck_assert_str_eq(v, want);
	free(v);
	v = conf_secret_inline("plain ${VAR}", &changed, err, sizeof(err));
	ck_assert_ptr_nonnull(v);
	ck_assert_int_eq(changed, 0);
	ck_assert_str_eq(v, "plain ${VAR}");
	free(v);
	snprintf(in, sizeof(in), "${file:%s/none}", dir);
	ck_assert_ptr_null(conf_secret_inline(in, &changed, err,
	    sizeof(err)));
	ck_assert_ptr_nonnull(strstr(err, "none"));
}
END_TEST

/* A config whose source's secret is in a file. */
static char *
yaml_with(const char *secret)
{
	char *y;

	ck_assert_int_ne(asprintf(&y,
	    "sources:\n"
	    "  gh:\n"
	    "    verify: {type: github, secret: \"%s\"}\n"
	    "    sinks:\n"
	    "      - type: http\n"
	    "        url: \"http://hooks.example.com/x\"\n", secret), -1);
	return y;
}

/* The edge's part of config y: written without a ${file:} reference,
 * parsed. */
static struct conf *
edge_part(const char *y)
{
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	char *t;
	size_t len;

	t = conf_role_text(y, strlen(y), CONF_ROLE_EDGE, &len, &e);
	ck_assert_msg(t != NULL, "%s", e.n > 0 ? e.msgs[0] : "?");
	ck_assert_ptr_null(strstr(t, "${file:"));
	cf = conf_parse_role(t, len, CONF_ROLE_EDGE, &e);
	ck_assert_msg(cf != NULL, "%s", e.n > 0 ? e.msgs[0] : "?");
	free(t);
	conf_errors_free(&e);
	return cf;
}

START_TEST(test_parse_and_parts)
{
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	char ref[300], *y;

	snprintf(ref, sizeof(ref), "${file:%s}", put("gh", "gh-${x}-key\n",
	    12));
	y = yaml_with(ref);
	cf = conf_parse(y, strlen(y), "t", &e);
	ck_assert_msg(cf != NULL, "%s", e.n > 0 ? e.msgs[0] : "?");
	ck_assert_int_eq(cf->sources[0].verify.nsecrets, 1);
	ck_assert_uint_eq(cf->sources[0].verify.secrets[0].len, 11);
	ck_assert_int_eq(memcmp(cf->sources[0].verify.secrets[0].data,
	    "gh-${x}-key", 11), 0);
	/* From a file: not a secret written in the file itself. */
	ck_assert_ptr_null(cf->secret_inline);
	conf_free(cf);
	/* The edge's part holds the secret, not the reference, and parses
	 * to the same bytes (its "${" escaped, not interpolated). */
	cf = edge_part(y);
	ck_assert_uint_eq(cf->sources[0].verify.secrets[0].len, 11);
	ck_assert_int_eq(memcmp(cf->sources[0].verify.secrets[0].data,
	    "gh-${x}-key", 11), 0);
	conf_free(cf);
	free(y);
	conf_errors_free(&e);
}
END_TEST

/* A meta source's verify_token from a file: the edge's part holds it
 * (the edge answers the hub.challenge handshake with it). */
START_TEST(test_verify_token_file)
{
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	char y[600];
	int n;

	n = snprintf(y, sizeof(y), "sources:\n  fb:\n    verify: {type: "
	    "meta, secret: s, verify_token: \"${file:%s}\"}\n"
	    "    sinks: [{type: log}]\n", put("vt", "tok-${y}\n", 9));
	ck_assert(n > 0 && (size_t)n < sizeof(y));
	cf = conf_parse(y, strlen(y), "t", &e);
	ck_assert_msg(cf != NULL, "%s", e.n > 0 ? e.msgs[0] : "?");
	ck_assert_str_eq(cf->sources[0].verify.verify_token, "tok-${y}");
	conf_free(cf);
	cf = edge_part(y);
	ck_assert_str_eq(cf->sources[0].verify.verify_token, "tok-${y}");
	conf_free(cf);
	conf_errors_free(&e);
}
END_TEST

START_TEST(test_parse_error_names_key_and_path)
{
	struct conf_errors e = { NULL, 0 };
	char ref[300], want[300], *y;

	snprintf(ref, sizeof(ref), "${file:%s/absent}", dir);
	y = yaml_with(ref);
	ck_assert_ptr_null(conf_parse(y, strlen(y), "t", &e));
	ck_assert_int_ge(e.n, 1);
	snprintf(want, sizeof(want), "%s/absent", dir);
	ck_assert_msg(strstr(e.msgs[0], "sources.gh.verify.secret") != NULL &&
	    strstr(e.msgs[0], want) != NULL, "%s", e.msgs[0]);
	conf_errors_free(&e);
	free(y);
}
END_TEST

START_TEST(test_secret_inline_noted)
{
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	char *y;

	y = yaml_with("written-here");
	cf = conf_parse(y, strlen(y), "t", &e);
	ck_assert_ptr_nonnull(cf);
	ck_assert_ptr_nonnull(cf->secret_inline);
	ck_assert_str_eq(cf->secret_inline, "sources.gh.verify.secret");
	conf_free(cf);
	free(y);
	setenv("CHECK_SECRET_ENV", "from-env", 1);
	y = yaml_with("${CHECK_SECRET_ENV}");
	cf = conf_parse(y, strlen(y), "t", &e);
	ck_assert_ptr_nonnull(cf);
	ck_assert_ptr_null(cf->secret_inline);
	conf_free(cf);
	free(y);
}
END_TEST

/* A redis url is a secret only with a password in it: one without holds
 * nothing to warn of. */
START_TEST(test_secret_inline_url)
{
	static const char *const yaml[] = {
	    "sources:\n  r:\n    sinks:\n      - type: redis\n"
	    "        url: \"redis://r.test:6379/1\"\n        stream: s\n",
	    "sources:\n  r:\n    sinks:\n      - type: redis\n"
	    "        url: \"redis://app:pw@r.test\"\n        stream: s\n",
	    "sources:\n  r:\n    sinks:\n      - type: redis\n"
	    "        url: \"redis://:${CHECK_SECRET_ENV}@r.test\"\n"
	    "        stream: s\n",
	};
	struct conf_errors e = { NULL, 0 };
	struct conf *cf;
	size_t i;

	setenv("CHECK_SECRET_ENV", "from-env", 1);
	for (i = 0; i < sizeof(yaml) / sizeof(yaml[0]); i++) {
		cf = conf_parse(yaml[i], strlen(yaml[i]), "t", &e);
		ck_assert_ptr_nonnull(cf);
		if (i == 1) {
			ck_assert_ptr_nonnull(cf->secret_inline);
			ck_assert_str_eq(cf->secret_inline,
			    "sources.r.sinks[0].url");
		} else
			ck_assert_msg(cf->secret_inline == NULL, "%s: %s",
			    yaml[i], cf->secret_inline);
		conf_free(cf);
	}
}
END_TEST

static Suite *
secret_suite(void)
{
	Suite *s = suite_create("conf_secret");
	TCase *tc = tcase_create("files");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_file_newline_stripped);
	tcase_add_test(tc, test_file_errors);
	tcase_add_test(tc, test_credential);
	tcase_add_test(tc, test_inline);
	tcase_add_test(tc, test_parse_and_parts);
	tcase_add_test(tc, test_verify_token_file);
	tcase_add_test(tc, test_parse_error_names_key_and_path);
	tcase_add_test(tc, test_secret_inline_noted);
	tcase_add_test(tc, test_secret_inline_url);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(secret_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
