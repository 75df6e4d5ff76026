/* SPDX-License-Identifier: ISC */
/*
 * check_dispatch.c: the dispatch scheduler (daemon/dispatch/dispatch.c and its
 * parts) over the in-memory store of fakestore.c, with a fake clock: retry
 * policy, fairness, windows, ordering lanes, reconfigure, wake-up and stop.
 * Per-sink isolation, breakers, the retry horizon, binding, batching sinks
 * and decks are in check_dispatch_sinks.c.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "dispatch.h"
#include "dispatchutil.h"
#include "fakestore.h"

/* --- the retry policy --- */

static const struct {
	uint64_t	base, max;
	uint32_t	attempts;
	uint64_t	want;
} backoffs[] = {
	{ 100, 300000, 0, 100 },
	{ 100, 300000, 1, 100 },
	{ 100, 300000, 2, 200 },
	{ 100, 300000, 3, 400 },
	{ 100, 300000, 12, 204800 },
	{ 100, 300000, 13, 300000 },
	{ 100, 300000, 84, 300000 },
	{ 100, 300000, UINT32_MAX, 300000 },
	{ 1, DAY, 27, 67108864 },
	{ 1, DAY, 84, DAY },
	{ DAY, DAY, 84, DAY },
	{ 3, 10, 3, 10 },
	{ 5000, 1000, 1, 1000 },
};

START_TEST(test_backoff)
{
	ck_assert_uint_eq(dispatch_backoff(backoffs[_i].base,
	    backoffs[_i].max, backoffs[_i].attempts), backoffs[_i].want);
}
END_TEST

/*
 * One attempt of one row that has spent attempts before (its first at
 * first_attempt), ending as res at T0: the settle it must get.
 */
static const struct {
	const char		*name;
	const char		*retry;
	double			 rnd;
	uint32_t		 attempts;
	uint64_t		 first_attempt;	/* 0: T0 - 10 if attempts */
	enum attempt_result	 res;
	uint64_t		 retry_after;
	const char		*detail;
	enum settle_kind	 kind;
	uint64_t		 due;		/* RESCHEDULE */
	const char		*reason;	/* DEAD */
} retries[] = {
	{ "transient", RETRY, 0, 0, 0, ATTEMPT_ERROR, 0, "http 503",
	    SETTLE_RESCHEDULE, T0 + 100, NULL },
	{ "third attempt", RETRY, 0, 2, 0, ATTEMPT_ERROR, 0, "http 503",
	    SETTLE_RESCHEDULE, T0 + 400, NULL },
	{ "backoff cap", RETRY, 0, 40, 0, ATTEMPT_ERROR, 0, "http 503",
	    SETTLE_RESCHEDULE, T0 + 300000, NULL },
	{ "jitter low", "  retry: {jitter: true}\n", 0.0, 0, 0,
	    ATTEMPT_ERROR, 0, "x", SETTLE_RESCHEDULE, T0 + 50, NULL },
	{ "jitter high", "  retry: {jitter: true}\n", 0.999, 1, 0,
	    ATTEMPT_ERROR, 0, "x", SETTLE_RESCHEDULE, T0 + 199, NULL },
	{ "retry_after raises the floor", RETRY, 0, 0, 0, ATTEMPT_ERROR, 5000,
	    "http 429", SETTLE_RESCHEDULE, T0 + 5000, NULL },
	{ "retry_after below the backoff", RETRY, 0, 4, 0, ATTEMPT_ERROR, 500,
	    "http 429", SETTLE_RESCHEDULE, T0 + 1600, NULL },
	{ "retry_after capped at 1 h", RETRY, 0, 0, 0, ATTEMPT_ERROR, 7200000,
	    "http 429", SETTLE_RESCHEDULE, T0 + 3600000, NULL },
	{ "retry_after over jitter", "  retry: {jitter: true}\n", 0.0, 0, 0,
	    ATTEMPT_ERROR, 70, "http 503", SETTLE_RESCHEDULE, T0 + 70, NULL },
	{ "timeout, not the last", RETRY, 0, 0, 0, ATTEMPT_TIMEOUT, 0,
	    "attempt_timeout:30000", SETTLE_RESCHEDULE, T0 + 100, NULL },
	{ "max_attempts", RETRY, 0, 83, 0, ATTEMPT_ERROR, 0, "http 500",
	    SETTLE_DEAD, 0, "retries_exhausted" },
	{ "max_attempts 3", "  retry: {jitter: false, max_attempts: 3}\n", 0,
	    2, 0, ATTEMPT_ERROR, 0, "http 500", SETTLE_DEAD, 0,
	    "retries_exhausted" },
	{ "timeout, the last", RETRY, 0, 83, 0, ATTEMPT_TIMEOUT, 0,
	    "attempt_timeout:30000", SETTLE_DEAD, 0,
	    "attempt_timeout:30000" },
	{ "max_elapsed_ms", RETRY, 0, 1, T0 - DAY, ATTEMPT_ERROR, 0,
	    "http 500", SETTLE_DEAD, 0, "retries_exhausted" },
	{ "max_elapsed_ms 5 s", "  retry: {jitter: false, max_elapsed_ms: "
	    "5000}\n", 0, 1, T0 - 5000, ATTEMPT_ERROR, 0, "http 500",
	    SETTLE_DEAD, 0, "retries_exhausted" },
	{ "retry capped at the horizon", RETRY, 0, 10, T0 - DAY + 1000,
	    ATTEMPT_ERROR, 0, "http 500", SETTLE_RESCHEDULE, T0 + 1000, NULL },
	/* A sink's Retry-After is never cut short by the horizon: when the
	 * time it asks for ends inside the horizon the row is due then
	 * (the backoff, longer, capped at the horizon), else no attempt may
	 * come inside the horizon and the row is given up now. */
	{ "retry_after up to the horizon", RETRY, 0, 10, T0 - DAY + 1000,
	    ATTEMPT_ERROR, 1000, "http 429", SETTLE_RESCHEDULE, T0 + 1000,
	    NULL },
	{ "retry_after inside the horizon, backoff past it", RETRY, 0, 10,
	    T0 - DAY + 1000, ATTEMPT_ERROR, 600, "http 429",
	    SETTLE_RESCHEDULE, T0 + 1000, NULL },
	{ "retry_after past the horizon", RETRY, 0, 10, T0 - DAY + 1000,
	    ATTEMPT_ERROR, 1001, "http 429", SETTLE_DEAD, 0,
	    "retries_exhausted" },
	{ "retry_after past the horizon, low backoff", RETRY, 0, 1,
	    T0 - DAY + 1000, ATTEMPT_ERROR, 5000, "http 503", SETTLE_DEAD, 0,
	    "retries_exhausted" },
	{ "retry_after capped at 1 h, past the horizon", RETRY, 0, 1,
	    T0 - DAY + 3599999, ATTEMPT_ERROR, 7200000, "http 429",
	    SETTLE_DEAD, 0, "retries_exhausted" },
	{ "retry_after capped at 1 h, inside the horizon", RETRY, 0, 1,
	    T0 - DAY + 3600000, ATTEMPT_ERROR, 7200000, "http 429",
	    SETTLE_RESCHEDULE, T0 + 3600000, NULL },
	{ "permanent", RETRY, 0, 0, 0, ATTEMPT_PERMANENT, 0, "http 410",
	    SETTLE_DEAD, 0, "permanent:http 410" },
	{ "permanent after retries", RETRY, 0, 5, 0, ATTEMPT_PERMANENT, 0,
	    "http 404", SETTLE_DEAD, 0, "permanent:http 404" },
	{ "ok", RETRY, 0, 3, 0, ATTEMPT_OK, 0, "", SETTLE_DELIVERED, 0,
	    NULL },
};

START_TEST(test_retry)
{
	struct dispatch_stats st;
	const struct fsettle *s;
	struct frow *f;
	struct fjob *j;
	uint64_t fa;
	unsigned k;

	mk(retries[_i].retry, SRC);
	fake.rnd = retries[_i].rnd;
	f = fake_add("a", "s", 0, MODULE_LOG, T0 - 50, 100);
	f->row.attempts = retries[_i].attempts;
	fa = retries[_i].first_attempt;
	if (fa == 0 && retries[_i].attempts > 0)
		fa = T0 - 10;
	f->row.first_attempt = fa;
	dispatch_run(d, T0);
	ck_assert_ptr_nonnull(j = fake_running_job(0));
	ck_assert_uint_eq(j->seq, f->seq);
	ck_assert_uint_eq(j->row.attempts, retries[_i].attempts);
	fake_finish(d, j, retries[_i].res, retries[_i].retry_after,
	    retries[_i].detail, T0);
	ck_assert_uint_eq(fake.nsettles, 1);
	s = last_settle(f->seq);
	ck_assert_msg(s->kind == retries[_i].kind, "%s: settle %d, want %d",
	    retries[_i].name, s->kind, retries[_i].kind);
	ck_assert_uint_eq(s->job, j->job);	/* the attempt's, for its line */
	if (s->kind != SETTLE_DEAD)
		ck_assert(!s->expired);
	/* The hook's trace id, as the attempt read it, for its lines. */
	ck_assert_uint_eq(s->trace_id[0], FAKE_TRACE(f->seq));
	ck_assert_uint_eq(s->trace_id[TRACE_ID_LEN - 1], FAKE_TRACE(f->seq));
	ck_assert(dispatch_is_claimed(d, f->key));
	fake_flush(d);
	ck_assert(!dispatch_is_claimed(d, f->key));
	switch (retries[_i].kind) {
	case SETTLE_RESCHEDULE:
		ck_assert(s->retry);	/* a failed attempt's: logged */
		ck_assert_msg(f->row.due == retries[_i].due, "%s: due T0%+lld, "
		    "want T0%+lld", retries[_i].name,
		    (long long)(f->row.due - T0),
		    (long long)(retries[_i].due - T0));
		ck_assert_uint_eq(f->row.attempts, retries[_i].attempts + 1);
		ck_assert_str_eq(f->row.last_error, retries[_i].detail);
		ck_assert_uint_eq(f->row.first_attempt, fa != 0 ? fa : T0);
		break;
	case SETTLE_DEAD:
		ck_assert(f->dead);
		ck_assert_str_eq(f->reason, retries[_i].reason);
		/* Given up for time or count: expired; else bounced. */
		ck_assert_int_eq(s->expired, retries[_i].res !=
		    ATTEMPT_PERMANENT);
		ck_assert_str_eq(s->last_error, retries[_i].detail);
		ck_assert_uint_eq(f->dead_attempts, retries[_i].attempts + 1);
		ck_assert_uint_eq(f->dead_at, T0);
		break;
	case SETTLE_DELIVERED:
		ck_assert(!f->live);
		break;
	}
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.claimed, 0);
	ck_assert_uint_eq(st.claimed_bytes, 0);
	ck_assert_uint_eq(st.running, 0);
	ck_assert_uint_eq(st.settling, 0);
	/* A counted failure keeps the key for its breaker, nothing else. */
	k = retries[_i].res == ATTEMPT_ERROR ||
	    retries[_i].res == ATTEMPT_TIMEOUT;
	ck_assert_uint_eq(st.tenants, k);
	ck_assert_uint_eq(st.sinkqs, k);
	done();
}
END_TEST

/* --- fairness --- */

static const struct {
	size_t		n;
	uint32_t	due[3];
	uint32_t	want[3];
} drr[] = {
	{ 3, { 100, 100, 100 }, { 10, 10, 10 } },
	{ 3, { 2, 100, 100 }, { 2, 14, 14 } },
	{ 3, { 100, 100, 2 }, { 14, 14, 2 } },
	{ 2, { 100, 5 }, { 25, 5 } },
	{ 1, { 100 }, { 30 } },
};

START_TEST(test_drr)
{
	const char *names[] = { "a", "b", "c" };
	size_t i;
	uint32_t k;

	mk(SC3 RETRY, SRC);
	for (i = 0; i < drr[_i].n; i++)
		for (k = 0; k < drr[_i].due[i]; k++)
			fake_add(names[i], "s", 0, MODULE_LOG, T0 - 1000 + k,
			    100);
	dispatch_run(d, T0);
	for (i = 0; i < drr[_i].n; i++)
		ck_assert_msg(fake_claimed(d, names[i]) == drr[_i].want[i],
		    "tenant %s claimed %zu, want %u", names[i],
		    fake_claimed(d, names[i]), drr[_i].want[i]);
	done();
}
END_TEST

/* 50 tenants, a page of 10: each scan goes on where the last stopped. */
START_TEST(test_unreached_first)
{
	char name[16];
	int t, k, scan;
	uint64_t w;

	mk(SC3 RETRY, SRC);
	cf->dispatch.batch = 10;	/* read at each scan */
	for (t = 0; t < 50; t++)
		for (k = 0; k < 3; k++) {
			snprintf(name, sizeof(name), "t%02d", t);
			fake_add(name, "s", 0, MODULE_LOG, T0 - 100, 100);
		}
	for (scan = 0; scan < 5; scan++) {
		w = dispatch_run(d, T0);
		ck_assert_uint_eq(w, T0);	/* more is due now */
		ck_assert_uint_eq(fake_claimed(d, NULL), 10 * (scan + 1));
		for (t = 0; t < 50; t++) {
			snprintf(name, sizeof(name), "t%02d", t);
			ck_assert_msg(fake_claimed(d, name) ==
			    (t < 10 * (scan + 1) ? 1U : 0U), "scan %d: %s "
			    "claimed %zu", scan, name, fake_claimed(d, name));
		}
	}
	/* A full round: every tenant once, then the first again. */
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_claimed(d, "t00"), 2);
	ck_assert_uint_eq(fake_claimed(d, "t10"), 1);
	done();
}
END_TEST

/* A tenant at its window is skipped by the scan and by the timer; the
 * other proceeds; an outcome frees room. */
START_TEST(test_tenant_window)
{
	unsigned scans;
	uint64_t w;
	int k;

	mk(SC3 RETRY "  tenants: {a: {max_inflight: 2}}\n", SRC);
	for (k = 0; k < 10; k++) {
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100, 100);
		fake_add("b", "s", 0, MODULE_LOG, T0 - 100, 100);
	}
	fake_add("b", "s", 0, MODULE_LOG, T0 + 500, 100);
	w = dispatch_run(d, T0);
	ck_assert_uint_eq(fake_claimed(d, "a"), 2);
	ck_assert_uint_eq(fake_claimed(d, "b"), 10);
	/* a has 8 rows due now, but no room: the wake is b's next row */
	ck_assert_uint_eq(w, T0 + 500);

	scans = fake_count(fake.scans, fake.nscans, "a");
	fake_add("b", "s", 0, MODULE_LOG, T0 + 1, 100);
	w = dispatch_run(d, T0 + 1);
	ck_assert_uint_eq(fake_count(fake.scans, fake.nscans, "a"), scans);
	ck_assert_uint_eq(fake_claimed(d, "a"), 2);
	ck_assert_uint_eq(fake_claimed(d, "b"), 11);
	ck_assert_uint_eq(w, T0 + 500);

	/* An outcome of a frees room: a is claimed again, b unchanged. */
	ck_assert_uint_eq(fake_running("a", NULL), 2);
	finish_key("a", "s", 1, ATTEMPT_OK, "", T0 + 2);
	fake_flush(d);
	ck_assert_uint_eq(fake_claimed(d, "a"), 1);
	dispatch_run(d, T0 + 2);
	ck_assert_uint_eq(fake_claimed(d, "a"), 2);
	ck_assert_uint_eq(fake_claimed(d, "b"), 11);
	done();
}
END_TEST

/* --- windows --- */

static const struct {
	const char	*name;
	const char	*conf;
	uint64_t	 body;
	size_t		 want;		/* claimed */
	size_t		 want_a;	/* of tenant a (both have 10 due) */
} windows[] = {
	{ "max_inflight", "  max_inflight: 5\n", 100, 5, 3 },
	{ "max_inflight_bytes", "  max_inflight_bytes: 1000\n", 300, 3, 3 },
	{ "bytes exactly", "  max_inflight_bytes: 1000\n", 250, 4, 4 },
	{ "one row over the window", "  max_inflight_bytes: 1000\n", 5000, 1,
	    1 },
	{ "tenant rows", "  tenants: {a: {max_inflight: 3}}\n", 100, 13, 3 },
	{ "tenant bytes", "  tenants: {a: {max_inflight_bytes: 1000}}\n", 300,
	    13, 3 },
	{ "default tenant", "  tenants: {default: {max_inflight: 4}}\n", 100,
	    8, 4 },
};

START_TEST(test_window)
{
	struct dispatch_stats st;
	size_t i, a;
	uint64_t w;
	int k;

	mk(windows[_i].conf, SRC);
	for (k = 0; k < 10; k++) {
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100, windows[_i].body);
		fake_add("b", "s", 0, MODULE_LOG, T0 - 100, windows[_i].body);
	}
	w = dispatch_run(d, T0);
	ck_assert_msg(fake_claimed(d, NULL) == windows[_i].want,
	    "%s: claimed %zu, want %zu", windows[_i].name,
	    fake_claimed(d, NULL), windows[_i].want);
	ck_assert_uint_eq(fake_claimed(d, "a"), windows[_i].want_a);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.claimed, windows[_i].want);
	ck_assert_uint_eq(st.claimed_bytes, windows[_i].want *
	    windows[_i].body);
	ck_assert(st.claimed_bytes <= 1000 || windows[_i].want == 1 ||
	    strncmp(windows[_i].name, "max_inflight_bytes", 12) != 0);
	if (windows[_i].want < 20 && strstr(windows[_i].conf, "tenants") ==
	    NULL) {
		ck_assert_int_eq(st.window_full, 1);
		ck_assert_uint_eq(w, UINT64_MAX);	/* an outcome wakes */
	} else
		ck_assert_int_eq(st.window_full, 0);
	/* Nothing is claimed twice: a second scan adds nothing. */
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_claimed(d, NULL), windows[_i].want);

	/* One outcome frees one row's room. */
	for (i = 0; fake_running_job(i) != NULL; i++)
		if (fake_running_job(i)->row.tenant[0] == 'a')
			break;
	ck_assert_ptr_nonnull(fake_running_job(i));
	a = fake_claimed(d, "a");
	fake_finish(d, fake_running_job(i), ATTEMPT_OK, 0, "", T0 + 1);
	fake_flush(d);
	ck_assert_uint_eq(fake_claimed(d, "a"), a - 1);
	dispatch_run(d, T0 + 1);
	ck_assert_uint_eq(fake_claimed(d, NULL), windows[_i].want);
	done();
}
END_TEST

/* --- ordering lanes --- */

#define ORDERED \
	"sources:\n" \
	"  o: {sinks: [{type: log, ordered: true}]}\n" \
	"  s: {sinks: [{type: log}]}\n"

enum lane_end {
	END_OK, END_EXHAUSTED, END_PERMANENT, END_TIMEOUT, END_SINK_GONE,
	END_SOURCE_GONE,
};

static const struct {
	enum lane_end	 end;
	const char	*reason;
} lane_ends[] = {
	{ END_OK, NULL },
	{ END_EXHAUSTED, "retries_exhausted" },
	{ END_PERMANENT, "permanent:http 410" },
	{ END_TIMEOUT, "attempt_timeout:30000" },
	{ END_SINK_GONE, "sink_gone:0:log" },
	{ END_SOURCE_GONE, "source_gone:o" },
};

/* Every terminal transition of a head releases its lane in the batch
 * that writes it: the next member is the head right after the flush. */
START_TEST(test_lane_release)
{
	struct frow *m[3], *other;
	struct fjob *j;
	struct conf *c2 = NULL;
	enum lane_end end = lane_ends[_i].end;
	int k;

	mk(SC3 "  breaker_failures: 0\n"
	    "  retry: {jitter: false, base_ms: 100, max_attempts: 1}\n",
	    ORDERED);
	for (k = 0; k < 3; k++)
		m[k] = fake_add_member("a", "o", 0, MODULE_LOG, 7, T0 - 100 + k);
	other = fake_add_member("a", "o", 0, MODULE_LOG, 8, T0 - 50);
	if (end == END_SINK_GONE || end == END_SOURCE_GONE) {
		c2 = parse("", end == END_SINK_GONE ?
		    "sources:\n  o: {sinks: [" HTTP "]}\n" :
		    "sources:\n  s: {sinks: [" LOG "]}\n");
		dispatch_reconfigure(d, c2);
	}
	for (k = 0; k < 3; k++) {
		dispatch_run(d, T0);
		/* Only the head is claimed. */
		ck_assert(m[k]->row.state == STORE_ROW_HEAD);
		ck_assert(dispatch_is_claimed(d, m[k]->key));
		if (k < 2)
			ck_assert(!dispatch_is_claimed(d, m[k + 1]->key) &&
			    m[k + 1]->row.state == STORE_ROW_MEMBER);
		if (end != END_SINK_GONE && end != END_SOURCE_GONE) {
			for (j = NULL; (j = fake_running_job(0)) != NULL &&
			    j->seq != m[k]->seq; )
				fake_finish(d, j, ATTEMPT_ERROR, 0, "x", T0);
			ck_assert_ptr_nonnull(j);
			fake_finish(d, j, end == END_OK ? ATTEMPT_OK :
			    end == END_PERMANENT ? ATTEMPT_PERMANENT :
			    end == END_TIMEOUT ? ATTEMPT_TIMEOUT :
			    ATTEMPT_ERROR, 0, end == END_PERMANENT ?
			    "http 410" : end == END_TIMEOUT ?
			    "attempt_timeout:30000" : "http 500", T0);
		}
		fake_flush(d);
		if (end == END_OK)
			ck_assert(!m[k]->live);
		else {
			ck_assert(m[k]->dead);
			ck_assert_str_eq(m[k]->reason, lane_ends[_i].reason);
		}
		if (k < 2)
			ck_assert_int_eq(m[k + 1]->row.state, STORE_ROW_HEAD);
	}
	/* The other lane went its own way. */
	ck_assert(other->row.state == STORE_ROW_HEAD || !other->live ||
	    other->dead);
	dispatch_free(d);
	d = NULL;
	conf_free(c2);
	conf_free(cf);
	cf = NULL;
	fake_free();
}
END_TEST

/* A retry of the head blocks its lane alone. */
START_TEST(test_lane_retry_blocks)
{
	struct frow *m1, *m2, *o1, *o2;
	struct fjob *j;

	mk(SC3 RETRY, ORDERED);
	m1 = fake_add_member("a", "o", 0, MODULE_LOG, 7, T0 - 100);
	m2 = fake_add_member("a", "o", 0, MODULE_LOG, 7, T0 - 99);
	o1 = fake_add_member("a", "o", 0, MODULE_LOG, 9, T0 - 98);
	o2 = fake_add_member("a", "o", 0, MODULE_LOG, 9, T0 - 97);
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_running(NULL, NULL), 2);
	ck_assert_uint_eq(fake.nsweeps, 1);
	while ((j = fake_running_job(0)) != NULL)
		fake_finish(d, j, j->seq == m1->seq ? ATTEMPT_ERROR :
		    ATTEMPT_OK, 0, "http 503", T0);
	fake_flush(d);
	ck_assert_int_eq(m1->row.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(m1->row.due, T0 + 100);
	ck_assert_int_eq(m2->row.state, STORE_ROW_MEMBER);
	ck_assert(!o1->live);
	ck_assert_int_eq(o2->row.state, STORE_ROW_HEAD);
	/* Before m1's retry: only the other lane runs. */
	dispatch_run(d, T0 + 50);
	ck_assert_uint_eq(fake_running(NULL, NULL), 1);
	ck_assert_uint_eq(fake_running_job(0)->seq, o2->seq);
	ck_assert(!dispatch_is_claimed(d, m2->key));
	fake_finish_all(d, ATTEMPT_OK, "", T0 + 50);
	fake_flush(d);
	/* m1 again, then m2 only after it. */
	dispatch_run(d, T0 + 100);
	ck_assert_uint_eq(fake_running(NULL, NULL), 1);
	ck_assert_uint_eq(fake_running_job(0)->seq, m1->seq);
	fake_finish_all(d, ATTEMPT_OK, "", T0 + 100);
	fake_flush(d);
	ck_assert_int_eq(m2->row.state, STORE_ROW_HEAD);
	dispatch_run(d, T0 + 100);
	ck_assert_uint_eq(fake_running_job(0)->seq, m2->seq);
	done();
}
END_TEST

/* The sweep: only while the node holds a member, once per tenant visit. */
START_TEST(test_sweep)
{
	int k, turns;

	mk(SC3 RETRY, ORDERED);
	for (k = 0; k < 100; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 1000 + k, 100);
	fake_add("b", "s", 0, MODULE_LOG, T0 - 100, 100);
	fake_add("b", "s", 0, MODULE_LOG, T0 - 100, 100);
	for (turns = 0; turns < 3; turns++) {
		turn(T0 + turns);
		fake_finish_all(d, ATTEMPT_OK, "", T0 + turns);
		fake_flush(d);
	}
	ck_assert_uint_eq(fake.nsweeps, 0);
	ck_assert_uint_eq(fake.nmarked, 0);

	/* A member anywhere: each visited tenant is swept once per scan,
	 * though a is visited in two passes of the page. */
	fake_add_member("c", "o", 0, MODULE_LOG, 1, T0);
	fake_add("b", "s", 0, MODULE_LOG, T0, 100);
	fake_add("b", "s", 0, MODULE_LOG, T0, 100);
	fake.nsweepst = 0;
	dispatch_run(d, T0 + 10);
	ck_assert_uint_eq(fake_count(fake.sweeps, fake.nsweepst, "a"), 1);
	ck_assert_uint_eq(fake_count(fake.sweeps, fake.nsweepst, "b"), 1);
	ck_assert_uint_eq(fake_count(fake.sweeps, fake.nsweepst, "c"), 1);
	ck_assert_uint_eq(fake.nmarked, 1);
	/* the member of c was promoted and claimed */
	ck_assert_uint_eq(fake_running("c", NULL), 1);
	done();
}
END_TEST

/* --- reconfigure --- */

static const struct {
	const char	*before, *after;
} lowered_conc[] = {
	{ "  concurrency: 8\n  sink_concurrency: 8\n",
	  "  concurrency: 2\n  sink_concurrency: 2\n" },
	{ "  concurrency: 8\n  sink_concurrency: 8\n",
	  "  concurrency: 8\n  sink_concurrency: 2\n" },
	{ "  concurrency: 8\n  sink_concurrency: 8\n"
	    "  tenants: {default: {concurrency: 8}}\n",
	  "  concurrency: 8\n  sink_concurrency: 8\n"
	    "  tenants: {default: {concurrency: 2}}\n" },
	{ "  concurrency: 8\n  sink_concurrency: 8\n",
	  "  concurrency: 8\n  sink_concurrency: 8\n"
	    "  tenants: {a: {concurrency: 2}}\n" },
};

/* A lowered concurrency drops nothing running or queued; new starts wait
 * until the count falls below it. */
START_TEST(test_lower_concurrency)
{
	struct dispatch_stats st;
	struct conf *c2;
	int k;

	mk(lowered_conc[_i].before, SRC);
	for (k = 0; k < 20; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_running(NULL, NULL), 8);
	c2 = parse(lowered_conc[_i].after, SRC);
	dispatch_reconfigure(d, c2);
	conf_free(cf);
	cf = c2;
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.running, 8);
	ck_assert_uint_eq(st.queued, 12);
	ck_assert_uint_eq(st.claimed, 20);
	ck_assert_uint_eq(fake.nsettles, 0);
	dispatch_run(d, T0 + 1);
	ck_assert_uint_eq(fake.njobs, 8);
	for (k = 0; k < 6; k++)
		fake_finish(d, fake_running_job(0), ATTEMPT_OK, 0, "", T0 + 2);
	fake_flush(d);
	dispatch_run(d, T0 + 2);
	ck_assert_uint_eq(fake.njobs, 8);	/* 2 running: not below 2 */
	next_ok(T0 + 3);
	ck_assert_uint_eq(fake.njobs, 9);
	ck_assert_uint_eq(fake_running(NULL, NULL), 2);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.queued, 11);
	done();
}
END_TEST

static const struct {
	const char	*before, *after;
} lowered_win[] = {
	{ "  max_inflight: 10\n", "  max_inflight: 4\n" },
	{ "  tenants: {a: {max_inflight: 10}}\n",
	  "  tenants: {a: {max_inflight: 4}}\n" },
	{ "  max_inflight_bytes: 1000\n", "  max_inflight_bytes: 400\n" },
};

/* A lowered window drops nothing claimed; claims resume below it. */
START_TEST(test_lower_window)
{
	struct dispatch_stats st;
	struct conf *c2;
	char conf[256];
	int k;

	mk(SC3 RETRY, SRC);
	snprintf(conf, sizeof(conf), SC3 "%s", lowered_win[_i].before);
	c2 = parse(conf, SRC);
	dispatch_reconfigure(d, c2);
	conf_free(cf);
	cf = c2;
	for (k = 0; k < 30; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_claimed(d, NULL), 10);
	snprintf(conf, sizeof(conf), SC3 "%s", lowered_win[_i].after);
	c2 = parse(conf, SRC);
	dispatch_reconfigure(d, c2);
	conf_free(cf);
	cf = c2;
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.claimed, 10);
	ck_assert_uint_eq(fake.nsettles, 0);
	/* 10, 7, 4 claimed: no new claims; 1: back to 4 */
	for (k = 0; k < 3; k++) {
		ck_assert_uint_eq(fake_claimed(d, NULL), 10 - 3 * k);
		fake_finish_all(d, ATTEMPT_OK, "", T0 + k);
		fake_flush(d);
		dispatch_run(d, T0 + k);
		ck_assert_uint_eq(fake_claimed(d, NULL),
		    k < 2 ? 7 - 3 * k : 4);
	}
	done();
}
END_TEST

/* --- wake-up --- */

enum wake_setup {
	W_FUTURE, W_NOTHING, W_TENANT_FULL, W_RUNNING, W_UNREACHED,
	W_GLOBAL_FULL, W_PARKED,
};

static const struct {
	const char	*name;
	enum wake_setup	 setup;
	const char	*conf;
	uint64_t	 want;
} wakes[] = {
	{ "earliest future row", W_FUTURE, "", T0 + 300 },
	{ "nothing", W_NOTHING, "", UINT64_MAX },
	{ "tenant at its window", W_TENANT_FULL,
	    "  tenants: {a: {max_inflight: 1}}\n", T0 + 500 },
	{ "running, next later", W_RUNNING, "", T0 + 300 },
	{ "page did not reach everyone", W_UNREACHED, "", T0 },
	{ "global window full", W_GLOBAL_FULL, "  max_inflight: 1\n",
	    UINT64_MAX },
	{ "parked until open_until", W_PARKED, "  breaker_failures: 1\n",
	    T0 + 1000 },
};

START_TEST(test_wake)
{
	char conf[256];
	uint64_t w;

	snprintf(conf, sizeof(conf), "%s%s", wakes[_i].conf, RETRY);
	mk(conf, SRC);
	if (wakes[_i].setup == W_UNREACHED)
		cf->dispatch.batch = 2;	/* read at each scan */
	switch (wakes[_i].setup) {
	case W_FUTURE:
		fake_add("a", "s", 0, MODULE_LOG, T0 + 700, 100);
		fake_add("a", "s", 0, MODULE_LOG, T0 + 300, 100);
		fake_add("b", "s", 0, MODULE_LOG, T0 + 500, 100);
		break;
	case W_NOTHING:
		break;
	case W_TENANT_FULL:
		fake_add("a", "s", 0, MODULE_LOG, T0, 100);
		fake_add("a", "s", 0, MODULE_LOG, T0 + 1, 100);
		fake_add("a", "s", 0, MODULE_LOG, T0 + 300, 100);
		fake_add("b", "s", 0, MODULE_LOG, T0 + 500, 100);
		break;
	case W_RUNNING:
		fake_add("a", "s", 0, MODULE_LOG, T0, 100);
		fake_add("a", "s", 0, MODULE_LOG, T0 + 300, 100);
		break;
	case W_UNREACHED:
		fake_add("a", "s", 0, MODULE_LOG, T0, 100);
		fake_add("b", "s", 0, MODULE_LOG, T0, 100);
		fake_add("c", "s", 0, MODULE_LOG, T0, 100);
		fake_add("d", "s", 0, MODULE_LOG, T0 + 300, 100);
		break;
	case W_GLOBAL_FULL:
		fake_add("a", "s", 0, MODULE_LOG, T0, 100);
		fake_add("b", "s", 0, MODULE_LOG, T0 + 300, 100);
		break;
	case W_PARKED:
		fake_add("a", "s", 0, MODULE_LOG, T0, 100);
		dispatch_run(d, T0);
		fake_finish_all(d, ATTEMPT_ERROR, "x", T0);
		fake_flush(d);
		fake_add("a", "s", 0, MODULE_LOG, T0, 100);
		fake.rows[0]->row.due = T0 + 5000;
		turn(T0);
		ck_assert_uint_eq(fake.rows[1]->row.due, T0 + 1000);
		break;
	}
	w = dispatch_run(d, T0);
	ck_assert_msg(w == wakes[_i].want, "%s: wake %lld, want %lld",
	    wakes[_i].name, (long long)(w - T0),
	    (long long)(wakes[_i].want - T0));
	if (wakes[_i].setup == W_TENANT_FULL) {
		/* again, a skipped: still b's row */
		ck_assert_uint_eq(dispatch_run(d, T0 + 2), T0 + 500);
		/* a's outcome frees room: its next due row is claimed,
		 * which fills it again */
		fake_finish_all(d, ATTEMPT_OK, "", T0 + 2);
		fake_flush(d);
		ck_assert_uint_eq(dispatch_run(d, T0 + 2), T0 + 500);
		ck_assert_uint_eq(fake_claimed(d, "a"), 1);
		/* and once more: now a's row at T0 + 300 wakes it */
		fake_finish_all(d, ATTEMPT_OK, "", T0 + 3);
		fake_flush(d);
		ck_assert_uint_eq(dispatch_run(d, T0 + 3), T0 + 300);
	}
	done();
}
END_TEST

/* A failure at the forward proxy is retried but charged to no breaker:
 * with breaker_failures 1, an ATTEMPT_ERROR parks the key's next row
 * (test_wake, W_PARKED); an ATTEMPT_PROXY leaves it due, and claimed. */
START_TEST(test_proxy_not_charged)
{
	mk("  breaker_failures: 1\n" RETRY, SRC);
	fake_add("a", "s", 0, MODULE_LOG, T0, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_claimed(d, "a"), 1);
	fake_finish_all(d, _i == 0 ? ATTEMPT_PROXY : ATTEMPT_ERROR,
	    "proxy_error: the proxy answered CONNECT with 502", T0);
	fake_flush(d);
	ck_assert_uint_eq(fake.rows[0]->row.attempts, 1);
	ck_assert_str_eq(fake.rows[0]->row.last_error,
	    "proxy_error: the proxy answered CONNECT with 502");
	fake_add("a", "s", 0, MODULE_LOG, T0, 100);
	fake.rows[0]->row.due = T0 + 5000;
	turn(T0);
	if (_i == 0) {
		ck_assert_uint_eq(fake.rows[1]->row.due, T0);
		ck_assert_uint_eq(fake_claimed(d, "a"), 1);
	} else
		ck_assert_uint_eq(fake.rows[1]->row.due, T0 + 1000);
	done();
}
END_TEST

/* --- stop --- */

START_TEST(test_stop)
{
	struct dispatch_stats st;
	int k;

	mk(SC3 RETRY, SRC);
	for (k = 0; k < 10; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake.njobs, 3);
	dispatch_stop(d);
	fake_add("b", "s", 0, MODULE_LOG, T0, 100);
	ck_assert_uint_eq(dispatch_run(d, T0 + 1), UINT64_MAX);
	ck_assert_uint_eq(fake_claimed(d, "b"), 0);
	ck_assert_uint_eq(fake.njobs, 3);
	/* Running attempts still settle; nothing starts after them. */
	fake_finish_all(d, ATTEMPT_OK, "", T0 + 2);
	ck_assert_uint_eq(fake_flush(d), 3);
	ck_assert_uint_eq(dispatch_run(d, T0 + 2), UINT64_MAX);
	ck_assert_uint_eq(fake.njobs, 3);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.running, 0);
	ck_assert_uint_eq(st.delivered, 3);
	ck_assert_uint_eq(st.settled, 3);
	done();
}
END_TEST

/*
 * The rows settled (what tick counts) are those whose settle was written,
 * each once: a batch the store refused counts nothing (its rows are due as
 * they were and run again), and an orphan, whose hook is gone, is dropped,
 * not dead-lettered (SETTLED_DROPPED, store_batch_row_dead's 2).
 */
/* A turn at now: the n due rows run and end as res, the store refuses
 * their settles' batch if fail; then the counts so far. */
static void
settle_turn(uint64_t now, size_t n, enum attempt_result res, int fail,
    uint64_t delivered, uint64_t dead)
{
	struct dispatch_stats st;

	dispatch_run(d, now);
	ck_assert_uint_eq(fake_running(NULL, NULL), n);
	fake_finish_all(d, res, res == ATTEMPT_OK ? "" : "http 410", now);
	fake.fail_flush = fail;
	ck_assert_uint_eq(fake_flush(d), n);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.claimed, 0);
	ck_assert_uint_eq(st.delivered, delivered);
	ck_assert_uint_eq(st.dead, dead);
	ck_assert_uint_eq(st.settled, delivered + dead);
}

START_TEST(test_settled_once)
{
	struct frow *o;
	int k;

	mk(SC3 RETRY, SRC);
	for (k = 0; k < 3; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100, 100);
	/* Refused, the rows are due as they were: they run again, and are
	 * counted once, when written. */
	settle_turn(T0, 3, ATTEMPT_OK, 1, 0, 0);
	settle_turn(T0 + 1, 3, ATTEMPT_OK, 0, 3, 0);
	/* The same for a dead letter. */
	fake_add("a", "s", 0, MODULE_LOG, T0 - 100, 100);
	settle_turn(T0 + 2, 1, ATTEMPT_PERMANENT, 1, 3, 0);
	settle_turn(T0 + 3, 1, ATTEMPT_PERMANENT, 0, 3, 1);
	/* An orphan: its dead settle deletes it; nothing is counted. */
	o = fake_add("a", "s", 0, MODULE_LOG, T0 - 100, 100);
	o->orphan = 1;
	settle_turn(T0 + 4, 1, ATTEMPT_PERMANENT, 0, 3, 1);
	ck_assert(!o->live && !o->dead);
	done();
}
END_TEST

/* Everything delivered: nothing left in memory. */
START_TEST(test_drain)
{
	struct dispatch_stats st;
	uint64_t now = T0, w;
	int k, guard;

	mk(SC3 RETRY, ORDERED);
	for (k = 0; k < 40; k++) {
		fake_add(k % 2 ? "a" : "b", k % 3 ? "s" : "o", 0, MODULE_LOG,
		    T0 - 100, 100 + k);
		if (k % 5 == 0)
			fake_add_member("c", "o", 0, MODULE_LOG, k % 3, T0);
	}
	for (guard = 0; guard < 200; guard++) {
		w = turn(now);
		if (fake_running(NULL, NULL) == 0 && w == UINT64_MAX)
			break;
		/* every third attempt fails once */
		while (fake_running_job(0) != NULL)
			fake_finish(d, fake_running_job(0),
			    fake_running_job(0)->row.attempts == 0 &&
			    fake_running_job(0)->seq % 3 == 0 ? ATTEMPT_ERROR :
			    ATTEMPT_OK, 0, "x", now);
		fake_flush(d);
		if (w > now && w != UINT64_MAX)
			now = w;
	}
	for (k = 0; k < (int)fake.nrows; k++)
		ck_assert_msg(!fake.rows[k]->live, "seq %llu left",
		    (unsigned long long)fake.rows[k]->seq);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.claimed, 0);
	ck_assert_uint_eq(st.claimed_bytes, 0);
	ck_assert_uint_eq(st.tenants, 0);
	ck_assert_uint_eq(st.sinkqs, 0);
	ck_assert_uint_eq(st.delivered, fake.nrows);
	done();
}
END_TEST


static Suite *
dispatch_suite(void)
{
	Suite *s = suite_create("dispatch");
	TCase *tc;

	tc = tcase_create("retry");
	tcase_set_timeout(tc, TIMEOUT);
	ADD_LOOP(tc, test_backoff, backoffs);
	ADD_LOOP(tc, test_retry, retries);
	suite_add_tcase(s, tc);

	tc = tcase_create("fairness");
	tcase_set_timeout(tc, TIMEOUT);
	ADD_LOOP(tc, test_drr, drr);
	tcase_add_test(tc, test_unreached_first);
	tcase_add_test(tc, test_tenant_window);
	suite_add_tcase(s, tc);

	tc = tcase_create("windows");
	tcase_set_timeout(tc, TIMEOUT);
	ADD_LOOP(tc, test_window, windows);
	ADD_LOOP(tc, test_lower_concurrency, lowered_conc);
	ADD_LOOP(tc, test_lower_window, lowered_win);
	suite_add_tcase(s, tc);

	tc = tcase_create("lanes");
	tcase_set_timeout(tc, TIMEOUT);
	ADD_LOOP(tc, test_lane_release, lane_ends);
	tcase_add_test(tc, test_lane_retry_blocks);
	tcase_add_test(tc, test_sweep);
	suite_add_tcase(s, tc);

	tc = tcase_create("life");
	tcase_set_timeout(tc, TIMEOUT);
	ADD_LOOP(tc, test_wake, wakes);
	tcase_add_loop_test(tc, test_proxy_not_charged, 0, 2);
	tcase_add_test(tc, test_stop);
	tcase_add_test(tc, test_settled_once);
	tcase_add_test(tc, test_drain);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return dispatchutil_run(dispatch_suite());
}
