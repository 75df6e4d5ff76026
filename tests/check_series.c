/* SPDX-License-Identifier: ISC */
/*
 * check_series.c: the per-second counters of the last hour (series.c):
 * counts land in their second, an hour later their slot is another
 * second's, a clock set back reads nothing stale, and a series' steps
 * sum the seconds they cover.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>

#include "series.h"

#define TIMEOUT	10
#define T0	1796597870ULL	/* a wall second, 2026-12 */

/* The i-th count of kind's array in a series_json answer. */
static json_int_t
point(json_t *o, const char *kind, size_t i)
{
	json_t *a = json_object_get(json_object_get(o, "series"), kind);

	ck_assert_msg(json_is_array(a), "no series %s", kind);
	ck_assert_msg(i < json_array_size(a), "%s has %zu points, not %zu",
	    kind, json_array_size(a), i + 1);
	return json_integer_value(json_array_get(a, i));
}

START_TEST(test_counts_land_in_their_second)
{
	series_reset();
	series_add_at(T0, SERIES_INGEST, 3);
	series_add_at(T0, SERIES_INGEST, 2);
	series_add_at(T0 + 1, SERIES_DEAD, 1);
	ck_assert_uint_eq(series_get(T0 + 1, T0, SERIES_INGEST), 5);
	ck_assert_uint_eq(series_get(T0 + 1, T0 + 1, SERIES_INGEST), 0);
	ck_assert_uint_eq(series_get(T0 + 1, T0 + 1, SERIES_DEAD), 1);
	/* A second after now is none. */
	ck_assert_uint_eq(series_get(T0, T0 + 1, SERIES_DEAD), 0);
}
END_TEST

/* An attempt counts once as delivered or failed, once by its class. */
static const struct {
	int		 ok;
	uint32_t	 status;
	enum series_kind cls;
} attempts[] = {
	{ 1, 200, SERIES_2XX },
	{ 1, 204, SERIES_2XX },
	{ 0, 301, SERIES_3XX },
	{ 0, 410, SERIES_4XX },
	{ 0, 429, SERIES_4XX },
	{ 0, 503, SERIES_5XX },
	{ 0, 0, SERIES_NO_ANSWER },
	{ 0, 101, SERIES_NO_ANSWER },
	{ 0, 700, SERIES_NO_ANSWER },
};

START_TEST(test_attempt_classes)
{
	enum series_kind k;

	series_reset();
	series_attempt_at(T0, attempts[_i].ok, attempts[_i].status);
	for (k = 0; k < SERIES_N; k++) {
		uint32_t want = k == attempts[_i].cls ||
		    k == (attempts[_i].ok ? SERIES_DELIVERED : SERIES_FAILED);

		ck_assert_msg(series_get(T0, T0, k) == want,
		    "status %u: %s is %u, not %u", attempts[_i].status,
		    series_name(k), series_get(T0, T0, k), want);
	}
}
END_TEST

START_TEST(test_an_hour_later_the_slot_is_reused)
{
	uint64_t later = T0 + SERIES_SECONDS;

	series_reset();
	series_add_at(T0, SERIES_DELIVERED, 7);
	/* Still held one second short of an hour on. */
	ck_assert_uint_eq(series_get(later - 1, T0, SERIES_DELIVERED), 7);
	/* An hour on it is gone, though its slot was never written. */
	ck_assert_uint_eq(series_get(later, T0, SERIES_DELIVERED), 0);
	/* The same slot's new second starts from 0, every kind. */
	series_add_at(later, SERIES_FAILED, 1);
	ck_assert_uint_eq(series_get(later, later, SERIES_DELIVERED), 0);
	ck_assert_uint_eq(series_get(later, later, SERIES_FAILED), 1);
}
END_TEST

START_TEST(test_clock_set_back)
{
	uint64_t back = T0 + 100 - SERIES_SECONDS;	/* the same slot */

	series_reset();
	series_add_at(T0 + 100, SERIES_INGEST, 4);
	/* The clock goes back 100 s: the second ahead of it is not read. */
	ck_assert_uint_eq(series_get(T0, T0 + 100, SERIES_INGEST), 0);
	/* A second of the hour before now takes the slot, from 0. */
	series_add_at(back, SERIES_INGEST, 1);
	ck_assert_uint_eq(series_get(T0, back, SERIES_INGEST), 1);
	/* And the second it held is not read again when the clock is
	 * back there. */
	ck_assert_uint_eq(series_get(T0 + 100, T0 + 100, SERIES_INGEST), 0);
}
END_TEST

START_TEST(test_saturates)
{
	series_reset();
	series_add_at(T0, SERIES_INGEST, UINT32_MAX - 1);
	series_add_at(T0, SERIES_INGEST, 5);
	ck_assert_uint_eq(series_get(T0, T0, SERIES_INGEST), UINT32_MAX);
}
END_TEST

START_TEST(test_json_steps)
{
	json_t *o;
	uint64_t s;

	series_reset();
	/* One ingest a second over the last 25 seconds, 2 dead at now. */
	for (s = T0 - 24; s <= T0; s++)
		series_add_at(s, SERIES_INGEST, 1);
	series_add_at(T0, SERIES_DEAD, 2);
	/* And one before the window, which no step holds. */
	series_add_at(T0 - 25, SERIES_INGEST, 100);
	o = series_json(T0, 25, 10);
	ck_assert_ptr_nonnull(o);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "now")), T0);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "step")), 10);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "start")),
	    T0 - 24);
	/* 25 = 5 + 10 + 10: the short step first, the last ends at now. */
	ck_assert_int_eq(point(o, "ingest", 0), 5);
	ck_assert_int_eq(point(o, "ingest", 1), 10);
	ck_assert_int_eq(point(o, "ingest", 2), 10);
	ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(o,
	    "series"), "ingest")), 3);
	ck_assert_int_eq(point(o, "dead", 2), 2);
	ck_assert_int_eq(point(o, "dead", 0), 0);
	ck_assert_int_eq(point(o, "no_answer", 2), 0);
	json_decref(o);
}
END_TEST

START_TEST(test_json_bounds)
{
	json_t *o;

	series_reset();
	series_add_at(T0, SERIES_FAILED, 1);
	/* Out of range: the whole hour, one step. */
	o = series_json(T0, 0, 0);
	ck_assert_int_eq(json_integer_value(json_object_get(o, "step")),
	    SERIES_SECONDS);
	ck_assert_int_eq(point(o, "failed", 0), 1);
	json_decref(o);
	/* Every second of the hour, 3,600 points. */
	o = series_json(T0, SERIES_SECONDS, 1);
	ck_assert_uint_eq(json_array_size(json_object_get(json_object_get(o,
	    "series"), "failed")), SERIES_SECONDS);
	ck_assert_int_eq(point(o, "failed", SERIES_SECONDS - 1), 1);
	json_decref(o);
}
END_TEST

static Suite *
series_suite(void)
{
	Suite *s = suite_create("series");
	TCase *tc = tcase_create("ring");

	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_counts_land_in_their_second);
	tcase_add_loop_test(tc, test_attempt_classes, 0,
	    sizeof(attempts) / sizeof(attempts[0]));
	tcase_add_test(tc, test_an_hour_later_the_slot_is_reused);
	tcase_add_test(tc, test_clock_set_back);
	tcase_add_test(tc, test_saturates);
	tcase_add_test(tc, test_json_steps);
	tcase_add_test(tc, test_json_bounds);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(series_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
