/* SPDX-License-Identifier: ISC */
/*
 * check_nkey.c: NATS user NKeys, against a vector computed apart (RFC
 * 8032's first Ed25519 key, its seed and public key encoded by a
 * separate base32 and CRC-16 written in Python).
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "nkey.h"

static const uint8_t rfc8032_sk[NKEY_SEED_RAW] = {
	0x9d, 0x61, 0xb1, 0x9d, 0xef, 0xfd, 0x5a, 0x60, 0xba, 0x84, 0x4a,
	0xf4, 0x92, 0xec, 0x2c, 0xc4, 0x44, 0x49, 0xc5, 0x69, 0x7b, 0x32,
	0x69, 0x19, 0x70, 0x3b, 0xac, 0x03, 0x1c, 0xae, 0x7f, 0x60,
};
#define SEED	"SUAJ2YNRTXX72WTAXKCEV5ES5QWMIRCJYVUXWMTJDFYDXLADDSXH6YALCA"
#define PUB	"UDLVVGABQKYQVN6VJP7NHSLEA45A5YLS6PNKMIZFV4BBU2HXA5IRUVAL"

START_TEST(test_vector)
{
	char seed[NKEY_SEED_LEN + 1], pub[NKEY_PUB_LEN + 1];

	nkey_user_seed(rfc8032_sk, seed);
	ck_assert_str_eq(seed, SEED);
	ck_assert_int_eq(nkey_user_public(SEED, pub), 0);
	ck_assert_str_eq(pub, PUB);
}
END_TEST

START_TEST(test_refused)
{
	char pub[NKEY_PUB_LEN + 1], bad[NKEY_SEED_LEN + 2];

	/* A character changed: the CRC. */
	snprintf(bad, sizeof(bad), "%s", SEED);
	bad[20] = bad[20] == 'A' ? 'B' : 'A';
	ck_assert_int_eq(nkey_user_public(bad, pub), -1);
	/* Short, long, lower case, not base32. */
	ck_assert_int_eq(nkey_user_public("SUAJ2YNR", pub), -1);
	snprintf(bad, sizeof(bad), "%sA", SEED);
	ck_assert_int_eq(nkey_user_public(bad, pub), -1);
	snprintf(bad, sizeof(bad), "%s", SEED);
	bad[5] = 'x';
	ck_assert_int_eq(nkey_user_public(bad, pub), -1);
	bad[5] = '1';
	ck_assert_int_eq(nkey_user_public(bad, pub), -1);
	/* An account's seed (SA...) is no user's. */
	ck_assert_int_eq(nkey_user_public(
	    "SAAJ2YNRTXX72WTAXKCEV5ES5QWMIRCJYVUXWMTJDFYDXLADDSXH6YALCA", pub),
	    -1);
}
END_TEST

static Suite *
nkey_suite(void)
{
	Suite *s = suite_create("nkey");
	TCase *tc = tcase_create("nkey");

	tcase_add_test(tc, test_vector);
	tcase_add_test(tc, test_refused);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(nkey_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
