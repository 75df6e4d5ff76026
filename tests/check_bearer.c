/* SPDX-License-Identifier: ISC */
/*
 * check_bearer.c: Authorization: Bearer against a list of tokens
 * (common/bearer.c): the right token gives its name, whatever the
 * scheme's case and the spaces around it; another token, a prefix or an
 * extension of one, another scheme, an empty token, one too long or no
 * header give none; an entry without its digest (a token_file not read)
 * matches nothing; a list of none admits nobody.
 */
#include "config.h"

#include <check.h>
#include <string.h>

#include <openssl/sha.h>

#include "bearer.h"
#include "conf.h"

static struct conf_token toks[2];

static void
setup(void)
{
	memset(toks, 0, sizeof(toks));
	toks[0].name = "alpha";
	SHA256((const unsigned char *)"alpha-token-0123456789", 22,
	    toks[0].digest);
	toks[0].has_digest = 1;
	toks[1].name = "beta";
	SHA256((const unsigned char *)"beta-token-0123456789", 21,
	    toks[1].digest);
	toks[1].has_digest = 1;
}

START_TEST(test_match)
{
	const struct conf_token *n;

	setup();
	n = bearer_check(toks, 2, "Bearer alpha-token-0123456789");
	ck_assert_ptr_nonnull(n);
	ck_assert_str_eq(n->name, "alpha");
	n = bearer_check(toks, 2, "bearer   beta-token-0123456789 ");
	ck_assert_ptr_nonnull(n);
	ck_assert_str_eq(n->name, "beta");
	n = bearer_check(toks, 2, "BEARER\tbeta-token-0123456789");
	ck_assert_ptr_nonnull(n);
	ck_assert_str_eq(n->name, "beta");
}
END_TEST

START_TEST(test_refused)
{
	char big[4200];

	setup();
	ck_assert_ptr_null(bearer_check(toks, 2, NULL));
	ck_assert_ptr_null(bearer_check(toks, 2, ""));
	ck_assert_ptr_null(bearer_check(toks, 2, "Bearer"));
	ck_assert_ptr_null(bearer_check(toks, 2, "Bearer "));
	ck_assert_ptr_null(bearer_check(toks, 2, "Bearer gamma-token-0"));
	ck_assert_ptr_null(bearer_check(toks, 2,
	    "Bearer alpha-token-012345678"));
	ck_assert_ptr_null(bearer_check(toks, 2,
	    "Bearer alpha-token-0123456789x"));
	ck_assert_ptr_null(bearer_check(toks, 2,
	    "Basic alpha-token-0123456789"));
	ck_assert_ptr_null(bearer_check(toks, 2,
	    "Beareralpha-token-0123456789"));
	/* Longer than 4096 bytes: no token, whatever it is. */
	memset(big, 'a', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	memcpy(big, "Bearer ", 7);
	ck_assert_ptr_null(bearer_check(toks, 2, big));
	/* Without its digest, an entry matches nothing, even zeros. */
	memset(toks[1].digest, 0, sizeof(toks[1].digest));
	toks[1].has_digest = 0;
	ck_assert_ptr_null(bearer_check(toks, 2,
	    "Bearer beta-token-0123456789"));
	/* A list of none admits nobody. */
	ck_assert_ptr_null(bearer_check(toks, 0,
	    "Bearer alpha-token-0123456789"));
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("bearer");
	TCase *tc = tcase_create("core");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_match);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
