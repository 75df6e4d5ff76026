/* SPDX-License-Identifier: ISC */
/*
 * check_b64.c: strict base64 decoding and the canonical form a whsec_
 * secret must have.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "b64.h"

static const struct {
	const char	*s;
	const char	*why;	/* b64_noncanonical's, NULL: canonical */
	int		 decodes;	/* b64_decode's answer: 0 or -1 */
} cases[] = {
	{ "dGVzdA==", NULL, 0 },		/* "test" */
	{ "aGk=", NULL, 0 },			/* "hi" */
	{ "aGVsbG8gd29ybGQ=", NULL, 0 },
	{ "MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", NULL, 0 },
	{ "+/+/", NULL, 0 },
	{ "dGVzdA", "unpadded", 0 },		/* what the SDKs refuse */
	{ "aGk", "unpadded", 0 },
	{ "dGVzdB==", "not canonical (non-zero trailing bits)", 0 },
	{ "aGl=", "not canonical (non-zero trailing bits)", 0 },
	{ "dGVzdB", "unpadded", 0 },		/* unpadded is said first */
	{ "", "not base64", -1 },
	{ "====", "not base64", -1 },
	{ "a===", "not base64", -1 },
	{ "aGk==", "not base64", -1 },		/* padding past 4 */
	{ "dGVzdA=", "not base64", -1 },
	{ "a", "not base64", -1 },
	{ "dGV zdA==", "not base64", -1 },	/* whitespace */
	{ "dGVz-A==", "not base64", -1 },	/* the URL alphabet */
	{ "dG=zdA==", "not base64", -1 },	/* padding inside */
};

START_TEST(test_canonical)
{
	const char *s = cases[_i].s, *why = b64_noncanonical(s, strlen(s));
	unsigned char out[64];
	size_t n;

	if (cases[_i].why == NULL)
		ck_assert_msg(why == NULL, "\"%s\": %s", s, why);
	else {
		ck_assert_msg(why != NULL, "\"%s\" taken", s);
		ck_assert_str_eq(why, cases[_i].why);
	}
	ck_assert_int_eq(b64_decode(s, strlen(s), out, &n), cases[_i].decodes);
}
END_TEST

/* Every canonical spelling of 0 to 5 bytes decodes back to them. */
START_TEST(test_round)
{
	static const char *const enc[] = { "AA==", "AAE=", "AAEC", "AAECAw==",
	    "AAECAwQ=" };
	unsigned char out[8];
	size_t n, i, k;

	for (k = 0; k < sizeof(enc) / sizeof(enc[0]); k++) {
		ck_assert_ptr_null(b64_noncanonical(enc[k], strlen(enc[k])));
		ck_assert_int_eq(b64_decode(enc[k], strlen(enc[k]), out, &n),
		    0);
		ck_assert_uint_eq(n, k + 1);
		for (i = 0; i < n; i++)
			ck_assert_uint_eq(out[i], i);
	}
}
END_TEST

static Suite *
b64_suite(void)
{
	Suite *s = suite_create("b64");
	TCase *tc = tcase_create("b64");

	tcase_set_timeout(tc, 10);
	tcase_add_loop_test(tc, test_canonical, 0,
	    sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, test_round);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(b64_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
