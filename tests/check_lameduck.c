/* SPDX-License-Identifier: ISC */
/*
 * check_lameduck.c: how long a drain keeps its edges accepting for a load
 * balancer (daemon/lameduck.c): not at all when nothing polls /ready;
 * until /ready has answered three times when something does; about one
 * second and three polling intervals when the polls stop.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#include <event2/event.h>

#include "clock.h"
#include "lameduck.h"

#define TIMEOUT	10

static int	done_calls;

static void
done(void)
{
	done_calls++;
}

static void
spin(struct event_base *b)
{
	event_base_loop(b, EVLOOP_NONBLOCK);
}

START_TEST(test_nobody_polls)
{
	struct event_base *b = event_base_new();

	ck_assert_int_eq(lameduck_begin(b, done), 0);
	ck_assert_int_eq(lameduck_active(), 0);
	spin(b);
	ck_assert_int_eq(done_calls, 0);
	event_base_free(b);
}
END_TEST

START_TEST(test_one_poll_is_not_a_balancer)
{
	struct event_base *b = event_base_new();

	lameduck_ready_asked();
	ck_assert_int_eq(lameduck_begin(b, done), 0);
	ck_assert_int_eq(lameduck_active(), 0);
	event_base_free(b);
}
END_TEST

START_TEST(test_three_answers)
{
	struct event_base *b = event_base_new();

	lameduck_ready_asked();
	lameduck_ready_asked();
	ck_assert_int_eq(lameduck_begin(b, done), 1);
	ck_assert_int_eq(lameduck_active(), 1);
	/* A second drain while one waits: still waiting, done once. */
	ck_assert_int_eq(lameduck_begin(b, done), 1);
	lameduck_ready_asked();
	lameduck_ready_asked();
	spin(b);
	ck_assert_int_eq(done_calls, 0);
	ck_assert_int_eq(lameduck_active(), 1);
	lameduck_ready_asked();
	spin(b);
	ck_assert_int_eq(done_calls, 1);
	ck_assert_int_eq(lameduck_active(), 0);
	/* Polls after the end change nothing. */
	lameduck_ready_asked();
	lameduck_ready_asked();
	spin(b);
	ck_assert_int_eq(done_calls, 1);
	event_base_free(b);
}
END_TEST

/* Two polls a few ms apart, then none: the wait ends by its timer, after
 * the slack (1 s) and three such intervals. */
START_TEST(test_polls_stop)
{
	struct event_base *b = event_base_new();
	struct timespec ts = { 0, 20 * 1000 * 1000 };
	uint64_t t0, dt;

	lameduck_ready_asked();
	nanosleep(&ts, NULL);
	lameduck_ready_asked();
	t0 = time_mono_ms();
	ck_assert_int_eq(lameduck_begin(b, done), 1);
	while (done_calls == 0 && time_mono_ms() - t0 < 5000)
		event_base_loop(b, EVLOOP_ONCE);
	dt = time_mono_ms() - t0;
	ck_assert_int_eq(done_calls, 1);
	ck_assert_uint_ge(dt, 1000 + 3 * 20 - 5);
	ck_assert_uint_lt(dt, 1000 + 3 * 20 + 1000);
	ck_assert_int_eq(lameduck_active(), 0);
	event_base_free(b);
}
END_TEST

static Suite *
lameduck_suite(void)
{
	Suite *s = suite_create("lameduck");
	TCase *tc = tcase_create("drain");

	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_nobody_polls);
	tcase_add_test(tc, test_one_poll_is_not_a_balancer);
	tcase_add_test(tc, test_three_answers);
	tcase_add_test(tc, test_polls_stop);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(lameduck_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
