/* SPDX-License-Identifier: ISC */
/*
 * check_health.c: the sink keys' rings (daemon/dispatch/health.c) with a
 * fake clock: the success ratio and percentiles over 5 minutes and the
 * hour, the ring's roll-over, the last success and error, a reload, and
 * the memory at 1,000 keys (printed, for docs/PERFORMANCE).
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "health.h"

#define TIMEOUT	10
#define MIN	60000ULL	/* a minute, ms */
#define T0	(1800000000000ULL - 1800000000000ULL % MIN)

/* A config of nsrc sources named s0, s1, ... with nsink sinks each, of
 * type t. */
static struct conf *
mkconf(int nsrc, int nsink, enum sink_type t)
{
	struct conf *c;
	char name[32];
	int i, j;

	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (c->sources = calloc(nsrc, sizeof(*c->sources))) == NULL)
		abort();
	c->nsources = nsrc;
	for (i = 0; i < nsrc; i++) {
		snprintf(name, sizeof(name), "s%d", i);
		c->sources[i].id = strdup(name);
		c->sources[i].nsinks = nsink;
		if ((c->sources[i].sinks = calloc(nsink,
		    sizeof(struct sink_conf))) == NULL)
			abort();
		for (j = 0; j < nsink; j++)
			c->sources[i].sinks[j].type = t;
	}
	return c;
}

static void
freeconf(struct conf *c)
{
	int i;

	for (i = 0; i < c->nsources; i++) {
		free(c->sources[i].id);
		free(c->sources[i].sinks);
	}
	free(c->sources);
	free(c);
}

static struct health *
mk(int nsrc, int nsink)
{
	struct health *h = health_new();
	struct conf *c = mkconf(nsrc, nsink, SINK_HTTP);

	health_reconfigure(h, c);
	freeconf(c);
	return h;
}

static void
info(struct health *h, const char *src, uint32_t sink, uint64_t now,
    struct health_info *hi)
{
	ssize_t i = health_find(h, src, sink);

	ck_assert_int_ne(i, -1);
	ck_assert_int_eq(health_key(h, (size_t)i, now, hi), 0);
}

/* 90 successes of 3 ms and 10 failures of 40 ms: the ratio is 0.9, the
 * median lies in the 1-5 ms bucket (rank 50 of its 90: 1 + 4 x 50/90),
 * p99 in the 25-50 ms one (rank 9 of its 10: 25 + 25 x 9/10). */
START_TEST(test_ratio_percentiles)
{
	struct health *h = mk(1, 1);
	struct health_info hi;
	int i;

	for (i = 0; i < 90; i++)
		ck_assert_int_eq(health_attempt(h, "s0", 0, ATTEMPT_OK, 3000,
		    NULL, T0 + i), 0);
	for (i = 0; i < 10; i++)
		health_attempt(h, "s0", 0, ATTEMPT_ERROR, 40000, "http 503",
		    T0 + 100 + i);
	info(h, "s0", 0, T0 + 200, &hi);
	ck_assert_uint_eq(hi.w5.attempts, 100);
	ck_assert_uint_eq(hi.w5.ok, 90);
	ck_assert_double_eq_tol(hi.w5.ratio, 0.9, 1e-9);
	ck_assert_double_eq_tol(hi.w5.p50_ms, 1 + 4.0 * 50 / 90, 1e-9);
	ck_assert_double_eq_tol(hi.w5.p99_ms, 25 + 25.0 * 9 / 10, 1e-9);
	ck_assert_double_eq_tol(hi.w60.ratio, 0.9, 1e-9);
	ck_assert_uint_eq(hi.failures, 10);
	ck_assert_str_eq(hi.last_error, "http 503");
	ck_assert_uint_eq(hi.last_error_at, T0 + 109);
	ck_assert_uint_eq(hi.last_ok, T0 + 89);
	/* A success ends the run of failures. */
	health_attempt(h, "s0", 0, ATTEMPT_OK, 3000, NULL, T0 + 300);
	info(h, "s0", 0, T0 + 300, &hi);
	ck_assert_uint_eq(hi.failures, 0);
	ck_assert_str_eq(hi.last_error, "http 503");
	health_free(h);
}
END_TEST

/* Failures at minute 0, successes at minute 10: 5 minutes see the
 * successes alone, the hour both; at minute 64 the hour has lost minute 0
 * and at minute 70 minute 10 too; a minute's window needs no upkeep. */
START_TEST(test_windows)
{
	struct health *h = mk(1, 1);
	struct health_info hi;
	int i;

	for (i = 0; i < 30; i++)
		health_attempt(h, "s0", 0, ATTEMPT_TIMEOUT, 30000000,
		    "attempt_timeout:30000", T0 + i);
	for (i = 0; i < 10; i++)
		health_attempt(h, "s0", 0, ATTEMPT_OK, 2000, NULL,
		    T0 + 10 * MIN + i);
	info(h, "s0", 0, T0 + 10 * MIN + 59999, &hi);
	ck_assert_uint_eq(hi.w5.attempts, 10);
	ck_assert_double_eq_tol(hi.w5.ratio, 1, 1e-9);
	ck_assert_uint_eq(hi.w60.attempts, 40);
	ck_assert_double_eq_tol(hi.w60.ratio, 0.25, 1e-9);
	/* The hour's p99 is among the timeouts (25-30 s bucket... the
	 * 10-30 s one: 30000000 us is its bound). */
	ck_assert(hi.w60.p99_ms > 10000 && hi.w60.p99_ms <= 30000);
	/* Minute 14 is the last that sees minute 10 in 5 minutes. */
	info(h, "s0", 0, T0 + 14 * MIN, &hi);
	ck_assert_uint_eq(hi.w5.attempts, 10);
	info(h, "s0", 0, T0 + 15 * MIN, &hi);
	ck_assert_uint_eq(hi.w5.attempts, 0);
	ck_assert_double_eq(hi.w5.ratio, -1);
	ck_assert_double_eq(hi.w5.p50_ms, -1);
	info(h, "s0", 0, T0 + 59 * MIN, &hi);
	ck_assert_uint_eq(hi.w60.attempts, 40);
	info(h, "s0", 0, T0 + 64 * MIN, &hi);
	ck_assert_uint_eq(hi.w60.attempts, 10);
	info(h, "s0", 0, T0 + 70 * MIN, &hi);
	ck_assert_uint_eq(hi.w60.attempts, 0);
	ck_assert_double_eq(hi.w60.ratio, -1);
	health_free(h);
}
END_TEST

/* Minute 60 falls in minute 0's slot: the slot is emptied first, so the
 * hour counts the new minute alone. */
START_TEST(test_rollover)
{
	struct health *h = mk(1, 1);
	struct health_info hi;
	int i;

	for (i = 0; i < 50; i++)
		health_attempt(h, "s0", 0, ATTEMPT_ERROR, 1000, "x", T0 + i);
	for (i = 0; i < 5; i++)
		health_attempt(h, "s0", 0, ATTEMPT_OK, 1000, NULL,
		    T0 + 60 * MIN + i);
	info(h, "s0", 0, T0 + 60 * MIN + 10, &hi);
	ck_assert_uint_eq(hi.w60.attempts, 5);
	ck_assert_uint_eq(hi.w60.ok, 5);
	ck_assert_uint_eq(hi.w5.attempts, 5);
	/* Every minute of two hours, one attempt each: the hour holds 60. */
	for (i = 0; i < 120; i++)
		health_attempt(h, "s0", 0, ATTEMPT_OK, 1000, NULL,
		    T0 + 100 * MIN + (uint64_t)i * MIN);
	info(h, "s0", 0, T0 + 219 * MIN, &hi);
	ck_assert_uint_eq(hi.w60.attempts, 60);
	ck_assert_uint_eq(hi.w5.attempts, 5);
	health_free(h);
}
END_TEST

/* An attempt past the last bucket: its percentile is the longest seen. */
START_TEST(test_open_bucket)
{
	struct health *h = mk(1, 1);
	struct health_info hi;

	health_attempt(h, "s0", 0, ATTEMPT_OK, 90000000, NULL, T0);
	info(h, "s0", 0, T0, &hi);
	ck_assert_double_eq_tol(hi.w5.p50_ms, 90000, 1e-9);
	ck_assert_double_eq_tol(hi.w5.p99_ms, 90000, 1e-9);
	health_free(h);
}
END_TEST

/* Only the config's keys are kept; a reload keeps a key it still names
 * with the same module, forgets one whose module changed, drops the ones
 * it no longer names. */
START_TEST(test_keys)
{
	struct health *h = mk(2, 2);
	struct health_info hi;
	struct conf *c;

	ck_assert_uint_eq(health_nkeys(h), 4);
	ck_assert_int_eq(health_attempt(h, "s2", 0, ATTEMPT_OK, 1, NULL, T0),
	    -1);
	ck_assert_int_eq(health_attempt(h, "s0", 2, ATTEMPT_OK, 1, NULL, T0),
	    -1);
	health_attempt(h, "s0", 1, ATTEMPT_ERROR, 1000, "http 500", T0);
	health_attempt(h, "s1", 1, ATTEMPT_ERROR, 1000, "http 502", T0);
	/* Keys in (source, sink) order. */
	ck_assert_int_eq(health_key(h, 0, T0, &hi), 0);
	ck_assert_str_eq(hi.source, "s0");
	ck_assert_uint_eq(hi.sink, 0);
	ck_assert_int_eq(health_key(h, 3, T0, &hi), 0);
	ck_assert_str_eq(hi.source, "s1");
	ck_assert_uint_eq(hi.sink, 1);
	ck_assert_int_eq(health_key(h, 4, T0, &hi), -1);

	c = mkconf(2, 2, SINK_HTTP);
	c->sources[1].sinks[1].type = SINK_SQS;
	c->sources[1].nsinks = 2;
	c->sources[0].nsinks = 2;
	health_reconfigure(h, c);
	freeconf(c);
	info(h, "s0", 1, T0, &hi);
	ck_assert_uint_eq(hi.failures, 1);
	ck_assert_str_eq(hi.last_error, "http 500");
	info(h, "s1", 1, T0, &hi);
	ck_assert_uint_eq(hi.module, MODULE_SQS);
	ck_assert_uint_eq(hi.failures, 0);
	ck_assert_uint_eq(hi.w5.attempts, 0);

	c = mkconf(1, 1, SINK_HTTP);
	health_reconfigure(h, c);
	freeconf(c);
	ck_assert_uint_eq(health_nkeys(h), 1);
	ck_assert_int_eq(health_find(h, "s0", 1), -1);
	health_free(h);
}
END_TEST

/* The error kept is valid UTF-8 and bounded. */
START_TEST(test_error_text)
{
	struct health *h = mk(1, 1);
	struct health_info hi;
	char big[2000];

	memset(big, 'e', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	big[3] = '\xff';
	health_attempt(h, "s0", 0, ATTEMPT_ERROR, 1, big, T0);
	info(h, "s0", 0, T0, &hi);
	ck_assert_uint_lt(strlen(hi.last_error), HEALTH_ERROR_MAX);
	ck_assert(strncmp(hi.last_error, "eee\\xFF", 7) == 0 ||
	    strncmp(hi.last_error, "eee\\xff", 7) == 0);
	health_free(h);
}
END_TEST

/* 1,000 keys: the memory is fixed by the config, and traffic over two
 * hours on every key adds nothing to it. */
START_TEST(test_memory)
{
	struct health *h = mk(100, 10);
	size_t bytes = health_bytes(h), i;
	uint64_t t;

	ck_assert_uint_eq(health_nkeys(h), 1000);
	for (t = 0; t < 120; t++)
		for (i = 0; i < 1000; i++) {
			char src[16];

			snprintf(src, sizeof(src), "s%zu", i / 10);
			ck_assert_int_eq(health_attempt(h, src,
			    (uint32_t)(i % 10), (i + t) % 7 ? ATTEMPT_OK :
			    ATTEMPT_ERROR, 1000 * (i % 500), "http 500",
			    T0 + t * MIN), 0);
		}
	ck_assert_uint_eq(health_bytes(h), bytes);
	/* Bounded: under 5 MiB for 1,000 keys. */
	ck_assert_uint_lt(bytes, 5u << 20);
	fprintf(stderr, "health: 1000 sink keys hold %zu bytes (%zu a key)\n",
	    bytes, bytes / 1000);
	health_free(h);
}
END_TEST

static Suite *
health_suite(void)
{
	Suite *s = suite_create("health");
	TCase *tc = tcase_create("health");

	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_ratio_percentiles);
	tcase_add_test(tc, test_windows);
	tcase_add_test(tc, test_rollover);
	tcase_add_test(tc, test_open_bucket);
	tcase_add_test(tc, test_keys);
	tcase_add_test(tc, test_error_text);
	tcase_add_test(tc, test_memory);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(health_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
