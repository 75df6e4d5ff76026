/* SPDX-License-Identifier: ISC */
/*
 * check_failstreak.c: the sink keys' streaks of failures
 * (daemon/dispatch/failstreak.c), disable_after_s's clock, with a fake
 * clock: scripts of failures and successes and what each must answer.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "failstreak.h"

#define TIMEOUT	10
#define MAXSTEP	12

/* Ops: 'f' failstreak_fail of (src, sink) at at with after (ret: disable),
 * 'o' failstreak_ok; after each step, count keys have a streak. */
struct step {
	char		 op;
	const char	*src;
	uint32_t	 sink;
	uint64_t	 at;
	uint64_t	 after;
	int		 ret;
	int		 count;
};

static const struct {
	const char	*name;
	struct step	 s[MAXSTEP];
} cases[] = {
	{ "failing for after_ms disables", {
		{ 'f', "a", 0, 1000, 3000, 0, 1 },
		{ 'f', "a", 0, 2000, 3000, 0, 1 },
		{ 'f', "a", 0, 3999, 3000, 0, 1 },
		{ 'f', "a", 0, 4000, 3000, 1, 0 },
		/* Forgotten once reported: a new streak. */
		{ 'f', "a", 0, 4001, 3000, 0, 1 },
	} },
	{ "a success ends the streak", {
		{ 'f', "a", 0, 1000, 3000, 0, 1 },
		{ 'o', "a", 0, 3500, 0, 0, 0 },
		{ 'f', "a", 0, 3600, 3000, 0, 1 },
		{ 'f', "a", 0, 5000, 3000, 0, 1 },
		{ 'f', "a", 0, 6600, 3000, 1, 0 },
	} },
	{ "keys apart: source and sink index", {
		{ 'f', "a", 0, 0, 1000, 0, 1 },
		{ 'f', "a", 1, 500, 1000, 0, 2 },
		{ 'f', "b", 0, 900, 1000, 0, 3 },
		{ 'o', "a", 1, 950, 0, 0, 2 },
		{ 'f', "a", 0, 1000, 1000, 1, 1 },
		{ 'f', "b", 0, 1800, 1000, 0, 1 },
		{ 'f', "b", 0, 1900, 1000, 1, 0 },
	} },
	{ "after 0 is never", {
		{ 'f', "a", 0, 0, 0, 0, 0 },
		{ 'f', "a", 0, 99999999, 0, 0, 0 },
	} },
	{ "a clock stepped back restarts the streak", {
		{ 'f', "a", 0, 10000, 3000, 0, 1 },
		{ 'f', "a", 0, 5000, 3000, 0, 1 },
		{ 'f', "a", 0, 7999, 3000, 0, 1 },
		{ 'f', "a", 0, 8000, 3000, 1, 0 },
	} },
};

START_TEST(test_script)
{
	const struct step *st;
	int i, ret;

	failstreak_clear();
	for (i = 0; i < MAXSTEP && cases[_i].s[i].op != 0; i++) {
		st = &cases[_i].s[i];
		ret = 0;
		if (st->op == 'f')
			ret = failstreak_fail(st->src, st->sink, st->at,
			    st->after);
		else
			failstreak_ok(st->src, st->sink);
		ck_assert_msg(ret == st->ret, "%s step %d: %d, want %d",
		    cases[_i].name, i, ret, st->ret);
		ck_assert_msg(failstreak_count() == st->count,
		    "%s step %d: %d keys, want %d", cases[_i].name, i,
		    failstreak_count(), st->count);
	}
	failstreak_clear();
}
END_TEST

static Suite *
failstreak_suite(void)
{
	Suite *s = suite_create("failstreak");
	TCase *tc = tcase_create("script");

	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_loop_test(tc, test_script, 0,
	    sizeof(cases) / sizeof(cases[0]));
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(failstreak_suite());
	int nf;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	nf = srunner_ntests_failed(sr);
	srunner_free(sr);
	return nf == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
