/* SPDX-License-Identifier: ISC */
/*
 * check_dispatch_rate.c: the scheduler's rates (daemon/dispatch/
 * dispatch_rate.c) and retry schedules (dispatch_policy.c) over the
 * in-memory store of fakestore.c, with a fake clock: a limited key is not
 * claimed past its tokens while the tenant's other keys run, the wake-up
 * time covers its next token, a Retry-After holds the key without
 * counting toward its breaker, an operator's override, and schedules with
 * their last step repeating and Retry-After winning.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bucket.h"
#include "conf.h"
#include "dispatch.h"
#include "dispatchutil.h"
#include "fakestore.h"
#include "rateov.h"

#define SC	"  sink_concurrency: 16\n"
/* s: sink 0 limited to 10/s with a burst of 2; sink 1 not limited. */
#define SRC_RATE \
	"sources:\n" \
	"  s:\n" \
	"    retry: {jitter: false, base_ms: 100}\n" \
	"    sinks:\n" \
	"      - {type: log, rate: {per_second: 10, burst: 2}}\n" \
	"      - " HTTP "\n"

static size_t
running_sink(uint32_t sink)
{
	struct fjob *j;
	size_t i, n = 0;

	for (i = 0; (j = fake_running_job(i)) != NULL; i++)
		if (j->bound == sink)
			n++;
	return n;
}

/* Only burst rows of the limited key are claimed; the rest stay due,
 * unclaimed, with no attempt spent, while the other key takes all its
 * rows; the wake is the next token's time, and each token claims one. */
START_TEST(test_limited_not_claimed)
{
	struct frow *lim[10];
	struct dispatch_stats st;
	uint64_t w;
	int k;

	mk(SC, SRC_RATE);
	for (k = 0; k < 10; k++) {
		lim[k] = fake_add("a", "s", 0, MODULE_LOG, T0 - 100 + k, 100);
		fake_add("a", "s", 1, MODULE_HTTP, T0 - 100 + k, 100);
	}
	w = dispatch_run(d, T0);
	ck_assert_uint_eq(running_sink(0), 2);
	ck_assert_uint_eq(running_sink(1), 10);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.claimed, 12);
	for (k = 2; k < 10; k++) {
		ck_assert(!dispatch_is_claimed(d, lim[k]->key));
		ck_assert_uint_eq(lim[k]->row.attempts, 0);
		ck_assert_uint_eq(lim[k]->row.due, T0 - 100 + k);
	}
	ck_assert_uint_eq(w, T0 + 100);	/* 10/s: the next token */
	fake_finish_all(d, ATTEMPT_OK, "", T0 + 1);
	fake_flush(d);
	/* Before the token: nothing more of key 0. */
	w = turn(T0 + 50);
	ck_assert_uint_eq(running_sink(0), 0);
	ck_assert_uint_eq(w, T0 + 100);
	w = turn(T0 + 100);
	ck_assert_uint_eq(running_sink(0), 1);
	ck_assert_uint_eq(fake_running_job(0)->seq, lim[2]->seq);
	ck_assert_uint_eq(w, T0 + 200);
	/* 10 rows at 10/s, 2 at once: all started by T0 + 800. */
	fake_finish_all(d, ATTEMPT_OK, "", T0 + 100);
	fake_flush(d);
	for (w = T0 + 200; w <= T0 + 800; w += 100) {
		turn(w);
		ck_assert_uint_eq(running_sink(0), 1);
		fake_finish_all(d, ATTEMPT_OK, "", w);
		fake_flush(d);
	}
	for (k = 0; k < 10; k++)
		ck_assert(!lim[k]->live);
	ck_assert_uint_eq(turn(T0 + 900), UINT64_MAX);
	done();
}
END_TEST

/* Rows the scans read (the fake store's due_scan, counted). */
static int	(*real_scan)(void *, const char *, uint64_t, uint64_t,
		    const unsigned char *, int (*)(const unsigned char *, void *),
		    int (*)(const unsigned char *, const struct store_row *,
		    void *), void *);
static int	(*real_cb)(const unsigned char *, const struct store_row *,
		    void *);
static size_t	rows_read;

static int
count_cb(const unsigned char *key, const struct store_row *row, void *arg)
{
	rows_read++;
	return real_cb(key, row, arg);
}

static int
count_scan(void *a, const char *t, uint64_t now, uint64_t due,
    const unsigned char *key, int (*want)(const unsigned char *, void *),
    int (*cb)(const unsigned char *, const struct store_row *, void *),
    void *arg)
{
	real_cb = cb;
	return real_scan(a, t, now, due, key, want, count_cb, arg);
}

/* A backlog of 3000 rows of a limited key: the first scan reads it once
 * (the other key's rows behind it are claimed), then each token costs a
 * read of at most a few hundred rows, never the backlog. */
START_TEST(test_backlog_bounded)
{
	struct dispatch_ops ops;
	struct frow *other;
	uint64_t t;
	size_t before;
	int k;

	fake_init();
	fake_ops(&ops);
	real_scan = ops.due_scan;
	ops.due_scan = count_scan;
	rows_read = 0;
	cf = parse(SC, SRC_RATE);
	d = dispatch_new(cf, &ops);
	for (k = 0; k < 3000; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 10000 + k, 100);
	other = fake_add("a", "s", 1, MODULE_HTTP, T0 - 1, 100);
	for (t = T0; t < T0 + 50; t++)
		turn(t);
	ck_assert(dispatch_is_claimed(d, other->key));
	ck_assert_uint_le(rows_read, 3100);
	fake_finish_all(d, ATTEMPT_OK, "", T0 + 50);
	fake_flush(d);
	before = rows_read;
	for (t = T0 + 100; t <= T0 + 1000; t += 100) {
		turn(t);
		ck_assert_uint_eq(running_sink(0), 1);
		fake_finish_all(d, ATTEMPT_OK, "", t);
		fake_flush(d);
	}
	ck_assert_uint_le(rows_read - before, 10 * 300);
	done();
}
END_TEST

/* A reload that lifts the rate lets the rows passed over go at once; one
 * that sets it again limits the next. */
START_TEST(test_reconfigure)
{
	struct conf *c2, *c3;
	int k;

	mk(SC, SRC_RATE);
	for (k = 0; k < 10; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100 + k, 100);
	turn(T0);
	ck_assert_uint_eq(running_sink(0), 2);
	c2 = parse(SC, "sources:\n  s: {sinks: [" LOG ", " HTTP "]}\n");
	dispatch_reconfigure(d, c2);
	fake_finish_all(d, ATTEMPT_OK, "", T0 + 1);
	fake_flush(d);
	turn(T0 + 1);
	ck_assert_uint_eq(running_sink(0), 8);
	fake_finish_all(d, ATTEMPT_OK, "", T0 + 2);
	fake_flush(d);
	c3 = parse(SC, SRC_RATE);
	dispatch_reconfigure(d, c3);
	for (k = 0; k < 5; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 + 2, 100);
	turn(T0 + 2);
	ck_assert_uint_le(running_sink(0), 2);
	dispatch_free(d);
	d = NULL;
	conf_free(c2);
	conf_free(c3);
	done();
}
END_TEST

/* Tenants apart: a's limited key does not take b's tokens. */
START_TEST(test_per_tenant)
{
	int k;

	mk(SC, SRC_RATE);
	for (k = 0; k < 5; k++) {
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100 + k, 100);
		fake_add("b", "s", 0, MODULE_LOG, T0 - 100 + k, 100);
	}
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_running("a", "s"), 2);
	ck_assert_uint_eq(fake_running("b", "s"), 2);
	done();
}
END_TEST

/* A sink without a rate: no bucket, nothing to report. */
START_TEST(test_no_rate_no_bucket)
{
	struct bucket_info bi;

	mk(SC, SRC_RATE);
	fake_add("a", "s", 1, MODULE_HTTP, T0 - 100, 100);
	dispatch_run(d, T0);
	ck_assert_int_eq(dispatch_key_rate(d, "a", "s", 1, T0, &bi), -1);
	ck_assert_int_eq(dispatch_key_rate(d, "a", "s", 0, T0, &bi), 0);
	ck_assert(bi.per_second == 10);
	ck_assert_uint_eq(bi.burst, 2);
	ck_assert(bi.tokens == 2);
	done();
}
END_TEST

/* A 429 with Retry-After holds the key: its queued rows are parked until
 * then (no attempt spent), its other rows are not claimed before, the
 * answers do not open its breaker, and the tenant's other key runs on. */
START_TEST(test_retry_after_holds_key)
{
	struct frow *q[6], *other;
	struct bucket_info bi;
	struct fjob *j;
	size_t i;
	int k;

	mk("  sink_concurrency: 3\n", SRC_RATE);
	/* Key 1 (no rate) is held; key 0 runs. */
	for (k = 0; k < 6; k++)
		q[k] = fake_add("a", "s", 1, MODULE_HTTP, T0 - 100 + k, 100);
	other = fake_add("a", "s", 0, MODULE_LOG, T0 - 50, 100);
	turn(T0);
	ck_assert_uint_eq(running_sink(1), 3);
	ck_assert_uint_eq(running_sink(0), 1);
	/* breaker_failures is 3: three 429s would open it. */
	for (i = 0; (j = fake_running_job(i)) != NULL;) {
		if (j->bound != 1) {
			i++;
			continue;
		}
		dispatch_throttle(d, j->job, 2000, T0 + 10);
		fake_finish(d, j, ATTEMPT_ERROR, 2000, "http 429", T0 + 10);
	}
	ck_assert_uint_eq(fake_flush(d), 6);
	for (k = 0; k < 6; k++) {
		ck_assert_uint_ge(q[k]->row.due, T0 + 2010);
		ck_assert_uint_eq(q[k]->row.attempts, k < 3 ? 1 : 0);
	}
	ck_assert_int_eq(dispatch_key_rate(d, "a", "s", 1, T0 + 10, &bi), 0);
	ck_assert_uint_eq(bi.held_until, T0 + 2010);
	ck_assert(bi.per_second == 0);
	/* Not the breaker's: a fourth failure alone does not open it. */
	{
		struct dispatch_stats st;

		dispatch_get_stats(d, &st);
		ck_assert_uint_eq(st.breakers_open, 0);
	}
	/* The other key delivers meanwhile. */
	fake_finish_all(d, ATTEMPT_OK, "", T0 + 20);
	fake_flush(d);
	ck_assert(!other->live);
	/* A row of the held key due before the hold ends waits for it. */
	q[0] = fake_add("a", "s", 1, MODULE_HTTP, T0 + 30, 100);
	ck_assert_uint_eq(turn(T0 + 1000), T0 + 2010);
	ck_assert_uint_eq(running_sink(1), 0);
	ck_assert(!dispatch_is_claimed(d, q[0]->key));
	turn(T0 + 2010);
	ck_assert_uint_eq(running_sink(1), 3);
	done();
}
END_TEST

/* An operator's override in place of the sink's rate, and its removal. */
START_TEST(test_override)
{
	struct bucket_info bi;
	int k;

	mk(SC, SRC_RATE);
	ck_assert_int_eq(rateov_set("a", "s", 1, 1, 1), 1);
	dispatch_rate_changed(d, "a", "s", 1, T0);
	for (k = 0; k < 3; k++)
		fake_add("a", "s", 1, MODULE_HTTP, T0 - 100 + k, 100);
	ck_assert_uint_eq(dispatch_run(d, T0), T0 + 1000);
	ck_assert_uint_eq(running_sink(1), 1);
	ck_assert_int_eq(dispatch_key_rate(d, "a", "s", 1, T0, &bi), 0);
	ck_assert_int_eq(bi.overridden, 1);
	ck_assert(bi.tokens == 0);
	ck_assert_int_eq(rateov_del("a", "s", 1), 1);
	dispatch_rate_changed(d, "a", "s", 1, T0);
	ck_assert_int_eq(dispatch_key_rate(d, "a", "s", 1, T0, &bi), -1);
	fake_finish_all(d, ATTEMPT_OK, "", T0 + 1);
	fake_flush(d);
	turn(T0 + 2);
	ck_assert_uint_eq(running_sink(1), 2);
	/* The override of a limited sink's key, and back to the sink's. */
	ck_assert_int_eq(rateov_set("a", "s", 0, 100, 50), 1);
	dispatch_rate_changed(d, "a", "s", 0, T0 + 2);
	ck_assert_int_eq(dispatch_key_rate(d, "a", "s", 0, T0 + 2, &bi), 0);
	ck_assert(bi.per_second == 100);
	ck_assert_uint_eq(bi.burst, 50);
	ck_assert_int_eq(rateov_del("a", "s", 0), 1);
	dispatch_rate_changed(d, "a", "s", 0, T0 + 2);
	ck_assert_int_eq(dispatch_key_rate(d, "a", "s", 0, T0 + 2, &bi), 0);
	ck_assert(bi.per_second == 10);
	ck_assert_uint_eq(bi.burst, 2);
	ck_assert_int_eq(bi.overridden, 0);
	/* An override of a key not seen yet is reported as in force. */
	ck_assert_int_eq(rateov_set("z", "s", 1, 3, 0), 1);
	ck_assert_int_eq(dispatch_key_rate(d, "z", "s", 1, T0 + 2, &bi), 0);
	ck_assert(bi.per_second == 3);
	ck_assert_uint_eq(bi.burst, 3);
	ck_assert_int_eq(bi.overridden, 1);
	rateov_clear();
	done();
}
END_TEST

/* A batching sink spends one token per entry: its batcher gets the
 * burst, then one entry a token. */
static size_t	nentries;

static int
count_batch_add(void *arg, struct drow *r)
{
	nentries++;
	return 0;
}

static void
none_taken(void *arg, const uint64_t *jobs, size_t n, char *taken)
{
}

START_TEST(test_batch_entry_tokens)
{
	struct dispatch_ops ops;
	int k;

	fake_init();
	fake_ops(&ops);
	ops.batch_add = count_batch_add;
	ops.batch_cancel = none_taken;
	nentries = 0;
	cf = parse("", "sources:\n  q: {sinks: [{type: sqs, queue_url: "
	    "\"http://sink.test:9/1/q\", rate: {per_second: 10, burst: 3}}]}\n");
	d = dispatch_new(cf, &ops);
	for (k = 0; k < 10; k++)
		fake_add("a", "q", 0, MODULE_SQS, T0 - 100 + k, 100);
	ck_assert_uint_eq(dispatch_run(d, T0), T0 + 100);
	ck_assert_uint_eq(nentries, 3);
	dispatch_run(d, T0 + 100);
	ck_assert_uint_eq(nentries, 4);
	dispatch_run(d, T0 + 350);
	ck_assert_uint_eq(nentries, 6);
	done();
}
END_TEST

/* --- schedules --- */

#define SRC_SCHED(src, sink) \
	"sources:\n" \
	"  s:\n" \
	"    retry: " src "\n" \
	"    sinks:\n" \
	"      - {type: log" sink "}\n"

static const struct {
	const char	*sources;
	uint64_t	 ra;		/* a Retry-After on the 2nd failure */
	uint64_t	 gaps[5];
} scheds[] = {
	/* The last step repeats. */
	{ SRC_SCHED("{jitter: false, schedule_ms: [200, 1000, 3000]}", ""),
	    0, { 200, 1000, 3000, 3000, 3000 } },
	/* Retry-After wins over its step. */
	{ SRC_SCHED("{jitter: false, schedule_ms: [200, 1000, 3000]}", ""),
	    5000, { 200, 5000, 3000, 3000, 3000 } },
	/* A sink's schedule wins over its source's. */
	{ SRC_SCHED("{jitter: false, schedule_ms: [200, 1000, 3000]}",
	    ", retry: {schedule_ms: [7, 8]}"), 0, { 7, 8, 8, 8, 8 } },
	/* A sink's base_ms drops the schedule it inherits. */
	{ SRC_SCHED("{jitter: false, schedule_ms: [200, 1000, 3000]}",
	    ", retry: {base_ms: 10}"), 0, { 10, 20, 40, 80, 160 } },
	/* A sink's jitter alone keeps its source's schedule. */
	{ SRC_SCHED("{schedule_ms: [200, 1000]}",
	    ", retry: {jitter: false}"), 0, { 200, 1000, 1000, 1000, 1000 } },
};

START_TEST(test_schedule)
{
	struct frow *r;
	uint64_t now = T0;
	int k;

	/* No breaker: it would park the fast schedules' fourth attempt. */
	mk("  breaker_failures: 0\n", scheds[_i].sources);
	r = fake_add("a", "s", 0, MODULE_LOG, T0 - 1, 100);
	for (k = 0; k < 5; k++) {
		turn(now);
		ck_assert_uint_eq(fake_running(NULL, NULL), 1);
		fake_finish(d, fake_running_job(0), ATTEMPT_ERROR,
		    k == 1 ? scheds[_i].ra : 0, "http 500", now);
		fake_flush(d);
		ck_assert_uint_eq(r->row.due - now, scheds[_i].gaps[k]);
		now = r->row.due;
	}
	done();
}
END_TEST

/* Jitter scales a step as it scales the exponential form. */
START_TEST(test_schedule_jitter)
{
	struct frow *r;

	mk("", SRC_SCHED("{schedule_ms: [1000]}", ""));
	fake.rnd = 0;
	r = fake_add("a", "s", 0, MODULE_LOG, T0 - 1, 100);
	turn(T0);
	fake_finish(d, fake_running_job(0), ATTEMPT_ERROR, 0, "http 500", T0);
	fake_flush(d);
	ck_assert_uint_eq(r->row.due, T0 + 500);
	done();
}
END_TEST

static Suite *
dispatch_rate_suite(void)
{
	Suite *s = suite_create("dispatch_rate");
	TCase *tc;

	tc = tcase_create("rates");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_limited_not_claimed);
	tcase_add_test(tc, test_backlog_bounded);
	tcase_add_test(tc, test_reconfigure);
	tcase_add_test(tc, test_per_tenant);
	tcase_add_test(tc, test_no_rate_no_bucket);
	tcase_add_test(tc, test_retry_after_holds_key);
	tcase_add_test(tc, test_override);
	tcase_add_test(tc, test_batch_entry_tokens);
	suite_add_tcase(s, tc);

	tc = tcase_create("schedules");
	tcase_set_timeout(tc, TIMEOUT);
	ADD_LOOP(tc, test_schedule, scheds);
	tcase_add_test(tc, test_schedule_jitter);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return dispatchutil_run(dispatch_rate_suite());
}
