/* SPDX-License-Identifier: ISC */
/*
 * check_breaker.c: the circuit breaker of one sink key
 * (daemon/dispatch/breaker.c) with a fake clock, as scripts of calls and what
 * each must answer.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>

#include "breaker.h"

#define TIMEOUT	10
#define MAXSTEP	24

/*
 * Ops: 'f' breaker_fail (ret: opened), 'o' breaker_ok (ret: closed), 'p'
 * breaker_permanent, each of an attempt that is not the probe (one that
 * started while the breaker was closed); 'F', 'O', 'P' the same of the
 * probe; 's' breaker_may_start (ret: verdict, until when PARK), 'k'
 * breaker_parks (ret: 0/1, until when 1), 'l' breaker_probe_lost.
 * After each step the state, and open_until when not closed, must match.
 */
struct step {
	char			op;
	uint64_t		at;
	int			ret;
	uint64_t		until;
	enum breaker_state	state;
	uint64_t		open_until;
};

static const struct {
	const char		*name;
	struct breaker_conf	 conf;
	struct step		 s[MAXSTEP];
} cases[] = {
	{ "three failures open", { 3, 1000, 8000 }, {
		{ 'f', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'f', 5, 0, 0, BREAKER_CLOSED, 0 },
		{ 'f', 10, 1, 0, BREAKER_OPEN, 1010 },
		{ 's', 11, BREAKER_PARK, 1010, BREAKER_OPEN, 1010 },
		{ 'k', 1009, 1, 1010, BREAKER_OPEN, 1010 },
	} },
	{ "permanent does not count", { 3, 1000, 8000 }, {
		{ 'f', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'f', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'p', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'p', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'p', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'p', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 's', 0, BREAKER_START, 0, BREAKER_CLOSED, 0 },
		{ 'f', 7, 1, 0, BREAKER_OPEN, 1007 },
	} },
	{ "success resets the count", { 3, 1000, 8000 }, {
		{ 'f', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'f', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'o', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'f', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'f', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'f', 0, 1, 0, BREAKER_OPEN, 1000 },
	} },
	{ "one probe after open_until", { 1, 1000, 8000 }, {
		{ 'f', 0, 1, 0, BREAKER_OPEN, 1000 },
		{ 'k', 999, 1, 1000, BREAKER_OPEN, 1000 },
		{ 's', 999, BREAKER_PARK, 1000, BREAKER_OPEN, 1000 },
		{ 'k', 1000, 0, 0, BREAKER_OPEN, 1000 },
		{ 's', 1000, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 1000 },
		/* meanwhile: parked for open_ms */
		{ 's', 1000, BREAKER_PARK, 2000, BREAKER_HALF_OPEN, 1000 },
		{ 'k', 1500, 1, 2500, BREAKER_HALF_OPEN, 1000 },
		{ 'O', 1600, 1, 0, BREAKER_CLOSED, 0 },
		{ 's', 1600, BREAKER_START, 0, BREAKER_CLOSED, 0 },
		{ 'k', 1600, 0, 0, BREAKER_CLOSED, 0 },
	} },
	{ "probe failure doubles up to the max", { 1, 1000, 8000 }, {
		{ 'f', 0, 1, 0, BREAKER_OPEN, 1000 },
		{ 's', 1000, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 1000 },
		{ 'F', 1000, 1, 0, BREAKER_OPEN, 3000 },
		{ 's', 2999, BREAKER_PARK, 3000, BREAKER_OPEN, 3000 },
		{ 's', 3000, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 3000 },
		{ 'F', 3000, 1, 0, BREAKER_OPEN, 7000 },
		{ 's', 7000, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 7000 },
		{ 'F', 7000, 1, 0, BREAKER_OPEN, 15000 },
		{ 's', 15000, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 15000 },
		{ 'F', 15000, 1, 0, BREAKER_OPEN, 23000 },
		{ 's', 23000, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 23000 },
		{ 'F', 23000, 1, 0, BREAKER_OPEN, 31000 },
		/* success resets the doubling */
		{ 's', 31000, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 31000 },
		{ 'O', 31000, 1, 0, BREAKER_CLOSED, 0 },
		{ 'f', 40000, 1, 0, BREAKER_OPEN, 41000 },
	} },
	{ "max equal to open", { 2, 500, 500 }, {
		{ 'f', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'f', 0, 1, 0, BREAKER_OPEN, 500 },
		{ 's', 500, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 500 },
		{ 'F', 500, 1, 0, BREAKER_OPEN, 1000 },
		{ 's', 1000, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 1000 },
		{ 'F', 1000, 1, 0, BREAKER_OPEN, 1500 },
	} },
	{ "a late failure while open changes nothing", { 2, 1000, 8000 }, {
		{ 'f', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'f', 0, 1, 0, BREAKER_OPEN, 1000 },
		{ 'f', 500, 0, 0, BREAKER_OPEN, 1000 },
		{ 'p', 600, 0, 0, BREAKER_OPEN, 1000 },
		{ 's', 1000, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 1000 },
	} },
	{ "a permanent probe lets another probe", { 1, 1000, 8000 }, {
		{ 'f', 0, 1, 0, BREAKER_OPEN, 1000 },
		{ 's', 1000, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 1000 },
		{ 'P', 1001, 0, 0, BREAKER_HALF_OPEN, 1000 },
		{ 'k', 1001, 0, 0, BREAKER_HALF_OPEN, 1000 },
		{ 's', 1001, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 1000 },
	} },
	{ "a lost probe lets another probe", { 1, 1000, 8000 }, {
		{ 'f', 0, 1, 0, BREAKER_OPEN, 1000 },
		{ 's', 1000, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 1000 },
		{ 'l', 1000, 0, 0, BREAKER_HALF_OPEN, 1000 },
		{ 's', 1000, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 1000 },
		{ 's', 1000, BREAKER_PARK, 2000, BREAKER_HALF_OPEN, 1000 },
	} },
	/* Only the probe moves a breaker out of open or half-open: an
	 * attempt that started before the open and ends after it is not
	 * the sink's answer to the probe. */
	{ "a late success while open does not close it", { 2, 1000, 8000 }, {
		{ 'f', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'f', 0, 1, 0, BREAKER_OPEN, 1000 },
		{ 'o', 500, 0, 0, BREAKER_OPEN, 1000 },
		{ 'k', 500, 1, 1000, BREAKER_OPEN, 1000 },
		{ 's', 1000, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 1000 },
		{ 'o', 1001, 0, 0, BREAKER_HALF_OPEN, 1000 },
		{ 's', 1001, BREAKER_PARK, 2001, BREAKER_HALF_OPEN, 1000 },
		{ 'O', 1002, 1, 0, BREAKER_CLOSED, 0 },
	} },
	{ "a late failure in half-open does not reopen it", { 1, 1000, 8000 }, {
		{ 'f', 0, 1, 0, BREAKER_OPEN, 1000 },
		{ 's', 1000, BREAKER_PROBE, 0, BREAKER_HALF_OPEN, 1000 },
		{ 'f', 1001, 0, 0, BREAKER_HALF_OPEN, 1000 },
		{ 'p', 1002, 0, 0, BREAKER_HALF_OPEN, 1000 },
		/* still one probe, the first */
		{ 's', 1003, BREAKER_PARK, 2003, BREAKER_HALF_OPEN, 1000 },
		/* and its failure is the second open: 2000 ms, not 4000 */
		{ 'F', 1500, 1, 0, BREAKER_OPEN, 3500 },
	} },
	{ "breaker_failures 0: off", { 0, 1000, 8000 }, {
		{ 'f', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'f', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'f', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 'f', 0, 0, 0, BREAKER_CLOSED, 0 },
		{ 's', 0, BREAKER_START, 0, BREAKER_CLOSED, 0 },
		{ 'k', 0, 0, 0, BREAKER_CLOSED, 0 },
	} },
};

START_TEST(test_script)
{
	const struct breaker_conf *c = &cases[_i].conf;
	const struct step *st;
	struct breaker b;
	uint64_t until;
	int i, ret;

	breaker_init(&b);
	ck_assert(breaker_is_idle(&b));
	for (i = 0; i < MAXSTEP && cases[_i].s[i].op != 0; i++) {
		st = &cases[_i].s[i];
		ret = 0;
		until = 0;
		switch (st->op) {
		case 'f':
		case 'F':
			ret = breaker_fail(&b, c, st->at, st->op == 'F');
			break;
		case 'o':
		case 'O':
			ret = breaker_ok(&b, st->op == 'O');
			break;
		case 'p':
		case 'P':
			breaker_permanent(&b, st->op == 'P');
			break;
		case 'l':
			breaker_probe_lost(&b);
			break;
		case 's':
			ret = breaker_may_start(&b, c, st->at, &until);
			if (ret != BREAKER_PARK)
				until = 0;
			break;
		case 'k':
			ret = breaker_parks(&b, c, st->at, &until);
			if (!ret)
				until = 0;
			break;
		default:
			ck_abort_msg("bad op");
		}
		ck_assert_msg(ret == st->ret, "%s: step %d (%c at %llu): "
		    "returned %d, want %d", cases[_i].name, i, st->op,
		    (unsigned long long)st->at, ret, st->ret);
		ck_assert_msg(until == st->until, "%s: step %d: until %llu, "
		    "want %llu", cases[_i].name, i, (unsigned long long)until,
		    (unsigned long long)st->until);
		ck_assert_msg(b.state == st->state, "%s: step %d: state %s, "
		    "want %s", cases[_i].name, i, breaker_state_name(b.state),
		    breaker_state_name(st->state));
		if (st->state != BREAKER_CLOSED)
			ck_assert_msg(b.open_until == st->open_until,
			    "%s: step %d: open_until %llu, want %llu",
			    cases[_i].name, i,
			    (unsigned long long)b.open_until,
			    (unsigned long long)st->open_until);
	}
}
END_TEST

/* Idle: closed and no failures counted; what the dispatch frees by. */
START_TEST(test_idle)
{
	struct breaker_conf c = { 2, 1000, 1000 };
	struct breaker b;

	breaker_init(&b);
	ck_assert(breaker_is_idle(&b));
	breaker_fail(&b, &c, 0, 0);
	ck_assert(!breaker_is_idle(&b));
	ck_assert_int_eq(breaker_ok(&b, 0), 0);
	ck_assert(breaker_is_idle(&b));
	breaker_fail(&b, &c, 0, 0);
	breaker_fail(&b, &c, 0, 0);
	ck_assert(!breaker_is_idle(&b));
	ck_assert_str_eq(breaker_state_name(b.state), "open");
	ck_assert_str_eq(breaker_state_name(BREAKER_HALF_OPEN), "half_open");
	ck_assert_str_eq(breaker_state_name(BREAKER_CLOSED), "closed");
}
END_TEST

/* The longest opens do not overflow: a day's open doubled many times. */
START_TEST(test_no_overflow)
{
	struct breaker_conf c = { 1, 86400000, 86400000 };
	struct breaker b;
	uint64_t now = 0;
	int i;

	breaker_init(&b);
	ck_assert_int_eq(breaker_fail(&b, &c, now, 0), 1);
	for (i = 0; i < 100; i++) {
		now = b.open_until;
		ck_assert_int_eq(breaker_may_start(&b, &c, now, &now),
		    BREAKER_PROBE);
		ck_assert_int_eq(breaker_fail(&b, &c, now, 1), 1);
		ck_assert_uint_eq(b.open_ms, 86400000);
		ck_assert_uint_eq(b.open_until, now + 86400000);
	}
}
END_TEST

static Suite *
breaker_suite(void)
{
	Suite *s = suite_create("breaker");
	TCase *tc = tcase_create("breaker");

	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_loop_test(tc, test_script, 0,
	    sizeof(cases) / sizeof(cases[0]));
	tcase_add_test(tc, test_idle);
	tcase_add_test(tc, test_no_overflow);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(breaker_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
