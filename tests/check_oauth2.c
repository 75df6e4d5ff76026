/* SPDX-License-Identifier: ISC */
/*
 * check_oauth2.c: the OAuth2 client credentials tokens (workers/oauth2.c):
 * a token endpoint's answer read strictly, hostile ones refused with a
 * reason that quotes none of their bytes; how long a token is used; the
 * basic credentials.  The fetch, the cache and the 401 are e2e's
 * (tests/e2e/test_sink_auth.py).
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "oauth2.h"

#define TIMEOUT	10

static const struct {
	const char	*json;
	const char	*token;		/* NULL: refused */
	uint64_t	 ttl;
	const char	*why;		/* the reason's start */
} answers[] = {
	{ "{\"access_token\":\"abc.DEF-_~+/=\",\"token_type\":\"Bearer\","
	  "\"expires_in\":3600}", "abc.DEF-_~+/=", 3600, NULL },
	{ "{\"access_token\":\"t\",\"token_type\":\"bearer\"}", "t", 300,
	  NULL },
	{ "{\"access_token\":\"t\",\"expires_in\":\"3599\"}", "t", 3599, NULL },
	{ "{\"access_token\":\"t\",\"expires_in\":0}", "t", 0, NULL },
	{ "{\"access_token\":\"t\",\"expires_in\":null}", "t", 300, NULL },
	{ "{\"access_token\":\"t\",\"expires_in\":99999999999999}", "t", 86400,
	  NULL },
	{ "{\"access_token\":\"t\",\"expires_in\":\""
	  "99999999999999999999999999\"}", "t", 86400, NULL },
	/* hostile or wrong */
	{ "", NULL, 0, "the answer is not a JSON object" },
	{ "[\"access_token\"]", NULL, 0, "the answer is not a JSON object" },
	{ "{\"access_token\":\"a\",\"access_token\":\"b\"}", NULL, 0,
	  "the answer is not a JSON object" },
	{ "{\"token\":\"t\"}", NULL, 0, "no access_token" },
	{ "{\"access_token\":\"\"}", NULL, 0, "no access_token" },
	{ "{\"access_token\":42}", NULL, 0, "no access_token" },
	/* jansson refuses a NUL unless asked (JSON_ALLOW_NUL) */
	{ "{\"access_token\":\"a\\u0000b\"}", NULL, 0,
	  "the answer is not a JSON object" },
	{ "{\"access_token\":\"a\\r\\nX-Evil: 1\"}", NULL, 0,
	  "the access_token holds a byte" },
	{ "{\"access_token\":\"a b\"}", NULL, 0,
	  "the access_token holds a byte" },
	{ "{\"access_token\":\"\\u00e9\"}", NULL, 0,
	  "the access_token holds a byte" },
	{ "{\"access_token\":\"t\",\"token_type\":\"mac\"}", NULL, 0,
	  "token_type is not bearer" },
	{ "{\"access_token\":\"t\",\"token_type\":1}", NULL, 0,
	  "token_type is not bearer" },
	{ "{\"access_token\":\"t\",\"expires_in\":-5}", NULL, 0,
	  "expires_in is not" },
	{ "{\"access_token\":\"t\",\"expires_in\":1.5}", NULL, 0,
	  "expires_in is not" },
	{ "{\"access_token\":\"t\",\"expires_in\":\"12s\"}", NULL, 0,
	  "expires_in is not" },
	{ "{\"access_token\":\"t\",\"expires_in\":\"\"}", NULL, 0,
	  "expires_in is not" },
	{ "{\"access_token\":\"t\"", NULL, 0,
	  "the answer is not a JSON object" },
};

START_TEST(test_parse)
{
	char err[128], *tok = (char *)"unset";
	uint64_t ttl = 0;
	int rc;

	err[0] = '\0';
	rc = oauth2_parse(answers[_i].json, strlen(answers[_i].json), &tok,
	    &ttl, err, sizeof(err));
	if (answers[_i].token != NULL) {
		ck_assert_msg(rc == 0, "%s: %s", answers[_i].json, err);
		ck_assert_str_eq(tok, answers[_i].token);
		ck_assert_uint_eq(ttl, answers[_i].ttl);
		free(tok);
	} else {
		ck_assert_msg(rc == -1, "%s accepted", answers[_i].json);
		ck_assert_ptr_null(tok);
		ck_assert_msg(strncmp(err, answers[_i].why,
		    strlen(answers[_i].why)) == 0, "%s: %s", answers[_i].json,
		    err);
		/* The reason never quotes the answer. */
		ck_assert_ptr_null(strstr(err, "Evil"));
	}
}
END_TEST

/* A long token, and one past the bound. */
START_TEST(test_parse_long)
{
	char *json, *tok, err[128];
	uint64_t ttl;
	size_t n = _i == 0 ? 16384 : 16385;

	json = malloc(n + 32);
	ck_assert_ptr_nonnull(json);
	memcpy(json, "{\"access_token\":\"", 17);
	memset(json + 17, 'a', n);
	memcpy(json + 17 + n, "\"}", 3);
	ck_assert_int_eq(oauth2_parse(json, strlen(json), &tok, &ttl, err,
	    sizeof(err)), _i == 0 ? 0 : -1);
	if (_i == 0) {
		ck_assert_uint_eq(strlen(tok), n);
		free(tok);
	}
	free(json);
}
END_TEST

START_TEST(test_life)
{
	ck_assert_uint_eq(oauth2_life_ms(3600), 3570000);
	ck_assert_uint_eq(oauth2_life_ms(60), 30000);
	ck_assert_uint_eq(oauth2_life_ms(10), 5000);
	ck_assert_uint_eq(oauth2_life_ms(1), 1000);
	ck_assert_uint_eq(oauth2_life_ms(0), 0);
}
END_TEST

START_TEST(test_basic)
{
	char *v = oauth2_basic("Aladdin", "open sesame");

	ck_assert_str_eq(v, "Basic QWxhZGRpbjpvcGVuIHNlc2FtZQ==");
	free(v);
}
END_TEST

static Suite *
oauth2_suite(void)
{
	Suite *s = suite_create("oauth2");
	TCase *tc = tcase_create("oauth2");

	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_loop_test(tc, test_parse, 0,
	    (int)(sizeof(answers) / sizeof(answers[0])));
	tcase_add_loop_test(tc, test_parse_long, 0, 2);
	tcase_add_test(tc, test_life);
	tcase_add_test(tc, test_basic);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(oauth2_suite());
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
