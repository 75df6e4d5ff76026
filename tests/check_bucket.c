/* SPDX-License-Identifier: ISC */
/*
 * check_bucket.c: the token buckets' arithmetic (daemon/dispatch/bucket.c)
 * on a fake clock: refill, burst, fractional rates, the next token's time,
 * holds, a new rate in force, and the table.
 */
#include "config.h"

#include <check.h>
#include <stdlib.h>
#include <string.h>

#include "bucket.h"

#define T0	1000000ULL

static void
mkb(struct bucket *b, double ps, uint32_t burst)
{
	memset(b, 0, sizeof(*b));
	b->at = T0;
	bucket_set_rate(b, ps, burst, T0);
}

START_TEST(test_default_burst)
{
	ck_assert_uint_eq(bucket_default_burst(0.5), 1);
	ck_assert_uint_eq(bucket_default_burst(1), 1);
	ck_assert_uint_eq(bucket_default_burst(1.2), 2);
	ck_assert_uint_eq(bucket_default_burst(20), 20);
	ck_assert_uint_eq(bucket_default_burst(1e9), 1000000);
}
END_TEST

/* A full bucket gives burst at once, then one token each 1/rate s. */
START_TEST(test_burst_then_rate)
{
	struct bucket b;
	int i;

	mkb(&b, 20, 5);
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(bucket_take(&b, T0), 1);
	ck_assert_int_eq(bucket_take(&b, T0), 0);
	ck_assert_uint_eq(bucket_next(&b, T0), T0 + 50);
	ck_assert_int_eq(bucket_take(&b, T0 + 49), 0);
	ck_assert_int_eq(bucket_take(&b, T0 + 50), 1);
	ck_assert_int_eq(bucket_take(&b, T0 + 50), 0);
	/* A second: 20 tokens, but the bucket holds 5. */
	for (i = 0; i < 5; i++)
		ck_assert_int_eq(bucket_take(&b, T0 + 1050), 1);
	ck_assert_int_eq(bucket_take(&b, T0 + 1050), 0);
}
END_TEST

/* 0.5 a second: one every 2 s; 100 takes over 10 s at 20/s. */
START_TEST(test_fractional)
{
	struct bucket b;
	uint64_t t;
	int n = 0;

	mkb(&b, 0.5, 1);
	ck_assert_int_eq(bucket_take(&b, T0), 1);
	ck_assert_int_eq(bucket_take(&b, T0 + 1999), 0);
	ck_assert_uint_eq(bucket_next(&b, T0 + 1999), T0 + 2000);
	ck_assert_int_eq(bucket_take(&b, T0 + 2000), 1);

	mkb(&b, 20, 1);
	for (t = T0; t < T0 + 10000; t++)
		n += bucket_take(&b, t);
	ck_assert_int_eq(n, 200);
	/* Asking at each next time wastes no token. */
	mkb(&b, 3, 1);
	t = T0;
	for (n = 0; n < 30; n++) {
		t = bucket_next(&b, t);
		ck_assert_int_eq(bucket_take(&b, t), 1);
	}
	ck_assert_uint_le(t, T0 + 9700);
	ck_assert_uint_ge(t, T0 + 9600);
}
END_TEST

START_TEST(test_hold)
{
	struct bucket b;

	mkb(&b, 10, 10);
	bucket_hold(&b, T0 + 2000);
	bucket_hold(&b, T0 + 1000);	/* a shorter one does not cut it */
	ck_assert_int_eq(bucket_take(&b, T0 + 1999), 0);
	ck_assert_uint_eq(bucket_next(&b, T0 + 500), T0 + 2000);
	ck_assert_int_eq(bucket_take(&b, T0 + 2000), 1);
	/* Without a rate, a hold alone. */
	mkb(&b, 0, 0);
	ck_assert_int_eq(bucket_take(&b, T0), 1);
	bucket_hold(&b, T0 + 100);
	ck_assert_int_eq(bucket_take(&b, T0 + 99), 0);
	ck_assert_uint_eq(bucket_next(&b, T0), T0 + 100);
	ck_assert_int_eq(bucket_take(&b, T0 + 100), 1);
}
END_TEST

START_TEST(test_set_rate)
{
	struct bucket b;
	struct bucket_info bi;

	mkb(&b, 10, 10);
	ck_assert_int_eq(bucket_take(&b, T0), 1);
	bucket_set_rate(&b, 2, 3, T0);		/* tokens cut to the burst */
	bucket_info(&b, T0, &bi);
	ck_assert(bi.tokens == 3);
	ck_assert(bi.per_second == 2);
	ck_assert_uint_eq(bi.burst, 3);
	/* A clock stepped back gains nothing. */
	bucket_info(&b, T0 - 5000, &bi);
	ck_assert(bi.tokens == 3);
	bucket_info(&b, T0 - 4500, &bi);
	ck_assert(bi.tokens == 3);
}
END_TEST

START_TEST(test_table)
{
	struct buckets bs;
	struct bucket *a, *b;

	memset(&bs, 0, sizeof(bs));
	ck_assert_ptr_null(buckets_find(&bs, "t", "s", 0));
	a = buckets_get(&bs, "t", "s", 0);
	b = buckets_get(&bs, "t", "s", 1);
	ck_assert_ptr_ne(a, b);
	ck_assert_ptr_eq(buckets_get(&bs, "t", "s", 0), a);
	ck_assert_ptr_null(buckets_find(&bs, "u", "s", 0));
	ck_assert_uint_eq(bs.n, 2);
	buckets_remove(&bs, a);
	ck_assert_ptr_null(buckets_find(&bs, "t", "s", 0));
	ck_assert_ptr_eq(buckets_find(&bs, "t", "s", 1), b);
	buckets_clear(&bs);
	ck_assert_uint_eq(bs.n, 0);
}
END_TEST

int
main(void)
{
	Suite *s = suite_create("bucket");
	TCase *tc = tcase_create("bucket");
	SRunner *sr;
	int failed;

	tcase_add_test(tc, test_default_burst);
	tcase_add_test(tc, test_burst_then_rate);
	tcase_add_test(tc, test_fractional);
	tcase_add_test(tc, test_hold);
	tcase_add_test(tc, test_set_rate);
	tcase_add_test(tc, test_table);
	suite_add_tcase(s, tc);
	sr = srunner_create(s);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
