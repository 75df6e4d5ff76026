/* SPDX-License-Identifier: ISC */
/*
 * check_ratelimit.c: GCRA arithmetic with a fake clock.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "ratelimit.h"

/* burst cells pass at once, the next waits one emission interval. */
static const struct {
	double		rate;
	uint32_t	burst;
	uint64_t	first_wait_ms;	/* after the burst */
} burst_cases[] = {
	{ 1, 1, 1000 },
	{ 10, 5, 100 },
	{ 100, 200, 10 },
	{ 0.5, 3, 2000 },
	{ 1000, 1, 1 },
};

START_TEST(test_burst)
{
	struct ratelimit *rl = ratelimit_new();
	uint64_t now = 1000000;
	uint32_t i;

	for (i = 0; i < burst_cases[_i].burst; i++)
		ck_assert_uint_eq(ratelimit_charge(rl, "t", burst_cases[_i].rate,
		    burst_cases[_i].burst, now), 0);
	ck_assert_uint_eq(ratelimit_charge(rl, "t", burst_cases[_i].rate,
	    burst_cases[_i].burst, now), burst_cases[_i].first_wait_ms);
	/* A refusal charges nothing: the same wait again. */
	ck_assert_uint_eq(ratelimit_charge(rl, "t", burst_cases[_i].rate,
	    burst_cases[_i].burst, now), burst_cases[_i].first_wait_ms);
	/* After that wait exactly one passes. */
	now += burst_cases[_i].first_wait_ms;
	ck_assert_uint_eq(ratelimit_charge(rl, "t", burst_cases[_i].rate,
	    burst_cases[_i].burst, now), 0);
	ck_assert_uint_ne(ratelimit_charge(rl, "t", burst_cases[_i].rate,
	    burst_cases[_i].burst, now), 0);
	ratelimit_free(rl);
}
END_TEST

/* A steady stream at the rate passes forever; at twice the rate, half. */
START_TEST(test_steady)
{
	struct ratelimit *rl = ratelimit_new();
	uint64_t now = 5000;
	int i, ok = 0;

	for (i = 0; i < 1000; i++, now += 100)
		ck_assert_uint_eq(ratelimit_charge(rl, "a", 10, 1, now), 0);
	for (i = 0; i < 1000; i++, now += 50)
		if (ratelimit_charge(rl, "b", 10, 1, now) == 0)
			ok++;
	ck_assert_int_eq(ok, 500);
	ratelimit_free(rl);
}
END_TEST

/* Keys are independent: one tenant over its limit, another not. */
START_TEST(test_keys)
{
	struct ratelimit *rl = ratelimit_new();
	char key[32];
	int i;

	ck_assert_uint_eq(ratelimit_charge(rl, "acme", 1, 1, 0), 0);
	ck_assert_uint_ne(ratelimit_charge(rl, "acme", 1, 1, 0), 0);
	ck_assert_uint_eq(ratelimit_charge(rl, "globex", 1, 1, 0), 0);
	/* Many keys: the table grows and keeps them apart. */
	for (i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "t%d", i);
		ck_assert_uint_eq(ratelimit_charge(rl, key, 1, 1, 0), 0);
	}
	for (i = 0; i < 5000; i++) {
		snprintf(key, sizeof(key), "t%d", i);
		ck_assert_uint_eq(ratelimit_charge(rl, key, 1, 1, 0), 1000);
	}
	ck_assert_uint_eq(ratelimit_size(rl), 5002);
	ratelimit_free(rl);
}
END_TEST

/* A limiter back at full burst is dropped by the sweep; one still
 * recovering is kept and keeps its state. */
START_TEST(test_sweep)
{
	struct ratelimit *rl = ratelimit_new();

	ck_assert_uint_eq(ratelimit_charge(rl, "a", 1, 2, 0), 0);
	ck_assert_uint_eq(ratelimit_charge(rl, "b", 1, 2, 0), 0);
	ck_assert_uint_eq(ratelimit_charge(rl, "b", 1, 2, 0), 0);
	ck_assert_uint_eq(ratelimit_sweep(rl, 1000), 1);	/* a recovered */
	ck_assert_uint_eq(ratelimit_charge(rl, "b", 1, 2, 1000), 0);
	ck_assert_uint_eq(ratelimit_charge(rl, "b", 1, 2, 1000), 1000);
	ck_assert_uint_eq(ratelimit_sweep(rl, 1000000), 0);
	ratelimit_free(rl);
}
END_TEST

START_TEST(test_retry_after)
{
	ck_assert_uint_eq(ratelimit_retry_after_s(0), 1);
	ck_assert_uint_eq(ratelimit_retry_after_s(1), 1);
	ck_assert_uint_eq(ratelimit_retry_after_s(1000), 1);
	ck_assert_uint_eq(ratelimit_retry_after_s(1001), 2);
	ck_assert_uint_eq(ratelimit_retry_after_s(59999), 60);
}
END_TEST

static Suite *
ratelimit_suite(void)
{
	Suite *s = suite_create("ratelimit");
	TCase *tc = tcase_create("gcra");

	tcase_set_timeout(tc, 10);
	tcase_add_loop_test(tc, test_burst, 0,
	    sizeof(burst_cases) / sizeof(burst_cases[0]));
	tcase_add_test(tc, test_steady);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_sweep);
	tcase_add_test(tc, test_retry_after);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(ratelimit_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
