/* SPDX-License-Identifier: ISC */
/*
 * check_dispatch_sinks.c: the dispatch scheduler's sink side over the
 * in-memory store of fakestore.c, with a fake clock: per-sink isolation
 * (slots) and breakers, the retry horizon, binding (and after a reload),
 * batching sinks and decks.  The rest is in check_dispatch.c.
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
#include "pause.h"

static void		 get_breaker(const char *, const char *,
			    struct breaker *);
static void		 breaker_cb(const char *, const char *, uint32_t,
			    uint8_t, const struct breaker *, void *);

struct bq {
	const char	*tenant;
	const char	*source;
	struct breaker	*out;
	int		 found;
};

static void
breaker_cb(const char *tenant, const char *source, uint32_t sink,
    uint8_t module, const struct breaker *b, void *arg)
{
	struct bq *q = arg;

	if (strcmp(tenant, q->tenant) == 0 && strcmp(source, q->source) == 0) {
		*q->out = *b;
		q->found++;
	}
}

/* The breaker of key (tenant, source); an idle one if not listed. */
static void
get_breaker(const char *tenant, const char *source, struct breaker *b)
{
	struct bq q = { tenant, source, b, 0 };

	breaker_init(b);
	dispatch_breakers(d, breaker_cb, &q);
	ck_assert_int_le(q.found, 1);
}

/* --- slots --- */

START_TEST(test_sink_concurrency)
{
	struct dispatch_stats st;
	struct fjob *j;
	char conf[128];
	uint32_t cap = (uint32_t)_i + 1;
	size_t i;
	int k;

	snprintf(conf, sizeof(conf), "  sink_concurrency: %u\n" RETRY, cap);
	mk(conf, SRC);
	for (k = 0; k < 10; k++) {
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100, 100);
		fake_add("a", "s2", 0, MODULE_LOG, T0 - 100, 100);
	}
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_running("a", "s"), cap);
	ck_assert_uint_eq(fake_running("a", "s2"), cap);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.running, 2 * cap);
	ck_assert_uint_eq(st.queued, 20 - 2 * cap);
	ck_assert_uint_eq(st.sinkqs, 2);
	ck_assert_uint_eq(st.tenants, 1);
	/* s frees a slot: s takes it, s2 stays at its cap. */
	for (i = 0; (j = fake_running_job(i)) != NULL; i++)
		if (strcmp(j->row.source, "s") == 0)
			break;
	fake_finish(d, j, ATTEMPT_OK, 0, "", T0 + 1);
	fake_flush(d);
	dispatch_run(d, T0 + 1);
	ck_assert_uint_eq(fake_running("a", "s"), cap);
	ck_assert_uint_eq(fake_running("a", "s2"), cap);
	ck_assert_uint_eq(fake.njobs, 2 * cap + 1);
	done();
}
END_TEST

/* dispatch_keys: each key's claimed rows, whatever their state (running,
 * queued), by tenant; a settle written gives its row back. */
struct kseen {
	char		 key[8][140];
	uint32_t	 claimed[8];
	int		 n;
};

static void
keys_cb(const char *tenant, const char *source, uint32_t sink,
    uint8_t module, uint32_t claimed, const struct breaker *b, void *arg)
{
	struct kseen *k = arg;

	ck_assert_int_lt(k->n, 8);
	snprintf(k->key[k->n], sizeof(k->key[0]), "%s/%s#%u(%s)", tenant,
	    source, sink, dispatch_module_name(module));
	k->claimed[k->n++] = claimed;
}

static uint32_t
key_claimed(const struct kseen *k, const char *key)
{
	int i;

	for (i = 0; i < k->n; i++)
		if (strcmp(k->key[i], key) == 0)
			return k->claimed[i];
	return UINT32_MAX;
}

START_TEST(test_keys_claimed)
{
	struct kseen k;
	struct fjob *j;
	size_t i;
	int n;

	mk("  sink_concurrency: 2\n" RETRY, SRC);
	for (n = 0; n < 5; n++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100, 100);
	for (n = 0; n < 3; n++)
		fake_add("b", "s", 0, MODULE_LOG, T0 - 100, 100);
	for (n = 0; n < 2; n++)
		fake_add("a", "s2", 0, MODULE_LOG, T0 - 100, 100);
	dispatch_run(d, T0);
	memset(&k, 0, sizeof(k));
	dispatch_keys(d, keys_cb, &k);
	ck_assert_int_eq(k.n, 3);
	ck_assert_uint_eq(key_claimed(&k, "a/s#0(log)"), 5);
	ck_assert_uint_eq(key_claimed(&k, "b/s#0(log)"), 3);
	ck_assert_uint_eq(key_claimed(&k, "a/s2#0(log)"), 2);
	for (i = 0; (j = fake_running_job(i)) != NULL; i++)
		if (strcmp(j->row.tenant, "a") == 0 &&
		    strcmp(j->row.source, "s") == 0)
			break;
	ck_assert_ptr_nonnull(j);
	fake_finish(d, j, ATTEMPT_OK, 0, "", T0 + 1);
	memset(&k, 0, sizeof(k));
	dispatch_keys(d, keys_cb, &k);
	ck_assert_uint_eq(key_claimed(&k, "a/s#0(log)"), 5);
	fake_flush(d);
	memset(&k, 0, sizeof(k));
	dispatch_keys(d, keys_cb, &k);
	ck_assert_uint_eq(key_claimed(&k, "a/s#0(log)"), 4);
	done();
}
END_TEST

/* Slots round-robin across tenants first, then across a tenant's keys:
 * a has keys s and s2, b has s; all with a backlog. */
static const struct {
	const char	*conf;
	size_t		 a, b, as, as2;
} slots[] = {
	{ "  concurrency: 2\n  sink_concurrency: 2\n", 1, 1, 1, 0 },
	{ "  concurrency: 3\n  sink_concurrency: 3\n", 2, 1, 1, 1 },
	{ "  concurrency: 4\n  sink_concurrency: 4\n", 2, 2, 1, 1 },
	{ "  concurrency: 6\n  sink_concurrency: 6\n", 3, 3, 2, 1 },
	{ "  concurrency: 8\n  sink_concurrency: 8\n", 4, 4, 2, 2 },
	/* b takes the default tenant share, 6 * 3 / 4. */
	{ "  concurrency: 6\n  sink_concurrency: 6\n"
	    "  tenants: {a: {concurrency: 1}}\n", 1, 4, 1, 0 },
	{ "  concurrency: 6\n  sink_concurrency: 1\n", 2, 1, 1, 1 },
};

START_TEST(test_slots)
{
	int k;

	mk(slots[_i].conf, SRC);
	for (k = 0; k < 10; k++) {
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100, 100);
		fake_add("a", "s2", 0, MODULE_LOG, T0 - 100, 100);
		fake_add("b", "s", 0, MODULE_LOG, T0 - 100, 100);
	}
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_running("a", NULL), slots[_i].a);
	ck_assert_uint_eq(fake_running("b", NULL), slots[_i].b);
	ck_assert_uint_eq(fake_running("a", "s"), slots[_i].as);
	ck_assert_uint_eq(fake_running("a", "s2"), slots[_i].as2);
	/* The first two starts are one of each tenant. */
	ck_assert(fake.njobs < 2 || fake.jobs[0]->row.tenant[0] !=
	    fake.jobs[1]->row.tenant[0] || slots[_i].b == 0);
	done();
}
END_TEST

/* No idle deliver process: rows stay queued, and start when one is. */
START_TEST(test_idle_workers)
{
	struct dispatch_stats st;
	int k;

	mk(SC3 RETRY, SRC);
	fake.idle = 2;
	for (k = 0; k < 10; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake.njobs, 2);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.claimed, 10);
	ck_assert_uint_eq(st.running, 2);
	ck_assert_uint_eq(st.queued, 8);
	next_ok(T0 + 1);
	ck_assert_uint_eq(fake.njobs, 3);
	ck_assert_uint_eq(fake_running(NULL, NULL), 2);
	done();
}
END_TEST

/* A slot no deliver process could take keeps its key's turn: the next
 * idle process goes to the key that was refused, not to the one after. */
START_TEST(test_idle_keeps_turn)
{
	char first;
	int k;

	mk(SC3 RETRY, SRC);
	fake.idle = 1;
	for (k = 0; k < 4; k++) {
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100, 100);
		fake_add("b", "s", 0, MODULE_LOG, T0 - 100, 100);
	}
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake.njobs, 1);
	first = fake.jobs[0]->row.tenant[0];
	next_ok(T0 + 1);
	ck_assert_uint_eq(fake.njobs, 2);
	ck_assert_int_ne(fake.jobs[1]->row.tenant[0], first);
	done();
}
END_TEST

/* --- breakers --- */

/* permanent answers never count toward a breaker. */
START_TEST(test_permanent_not_counted)
{
	struct dispatch_stats st;
	struct breaker b;
	int k;

	mk(SC3 RETRY, SRC);
	for (k = 0; k < 10; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_running(NULL, NULL), 3);
	fake_finish(d, fake_running_job(0), ATTEMPT_ERROR, 0, "e", T0);
	fake_finish(d, fake_running_job(0), ATTEMPT_PERMANENT, 0, "http 410",
	    T0);
	fake_finish(d, fake_running_job(0), ATTEMPT_ERROR, 0, "e", T0);
	fake_flush(d);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.breakers_open, 0);
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_CLOSED);
	ck_assert_uint_eq(b.fails, 2);
	/* Three more permanents: still closed. */
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_running(NULL, NULL), 3);
	fake_finish_all(d, ATTEMPT_PERMANENT, "http 404", T0);
	fake_flush(d);
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_CLOSED);
	/* The third counted failure opens it. */
	dispatch_run(d, T0);
	fake_finish(d, fake_running_job(0), ATTEMPT_ERROR, 0, "e", T0);
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	done();
}
END_TEST

/* The store's errors (an unreadable hook: ATTEMPT_STORE) spend an
 * attempt and back off, but never count toward a breaker: the sink was
 * not reached. */
START_TEST(test_store_error_not_counted)
{
	struct dispatch_stats st;
	struct breaker b;
	size_t i;
	int k;

	mk(SC3 RETRY, SRC);
	for (k = 0; k < 10; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100, 100);
	for (k = 0; k < 3; k++) {
		dispatch_run(d, T0);
		ck_assert_uint_eq(fake_running(NULL, NULL), 3);
		fake_finish_all(d, ATTEMPT_STORE, "store: EIO", T0);
		fake_flush(d);
	}
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.breakers_open, 0);
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_CLOSED);
	ck_assert_uint_eq(b.fails, 0);
	/* Each spent an attempt and backs off (none is due at T0). */
	for (i = 0, k = 0; i < fake.nrows; i++)
		if (fake.rows[i]->row.attempts == 1) {
			ck_assert_uint_gt(fake.rows[i]->row.due, T0);
			ck_assert_str_eq(fake.rows[i]->row.last_error,
			    "store: EIO");
			k++;
		}
	ck_assert_int_eq(k, 9);
	done();
}
END_TEST

/*
 * Open, park, probe, doubling, close, on one key with a backlog of 10:
 * three failures open the breaker for 1000 ms; its queued rows and the
 * rows claimed while it is open are parked with their attempts unchanged;
 * at open_until one probe runs and what comes meanwhile waits 1000 ms; a
 * failed probe opens it for 2000 ms; a good one closes it.
 */
START_TEST(test_breaker_cycle)
{
	struct dispatch_stats st;
	struct breaker b;
	struct fjob *probe;
	struct frow *rows[10];
	size_t i, njobs, retried = 0, parked = 0;
	int k;

	mk(SC3 RETRY, SRC);
	for (k = 0; k < 10; k++)
		rows[k] = fake_add("a", "s", 0, MODULE_LOG, T0 - 100 + k, 100);
	fake_add("b", "s", 0, MODULE_LOG, T0 - 100, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_running("a", NULL), 3);
	ck_assert_uint_eq(finish_key("a", "s", 3, ATTEMPT_ERROR, "http 503",
	    T0), 3);
	fake_finish_all(d, ATTEMPT_OK, "", T0);	/* b's */
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	ck_assert_uint_eq(b.open_until, T0 + 1000);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.breakers_open, 1);
	ck_assert_uint_eq(st.queued, 0);
	ck_assert_uint_eq(fake_flush(d), 11);
	for (k = 0; k < 10; k++) {
		if (rows[k]->row.attempts == 1) {
			ck_assert_uint_eq(rows[k]->row.due, T0 + 100);
			retried++;
		} else {
			ck_assert_uint_eq(rows[k]->row.attempts, 0);
			ck_assert_uint_eq(rows[k]->row.due, T0 + 1000);
			ck_assert_int_eq(rows[k]->row.state, STORE_ROW_PARKED);
			parked++;
		}
	}
	ck_assert_uint_eq(retried, 3);
	ck_assert_uint_eq(parked, 7);
	/* b's key is not a's: b was delivered meanwhile. */
	ck_assert(!fake.rows[10]->live);

	/* The retries come due while it is open: parked, attempts kept. */
	njobs = fake.njobs;
	ck_assert_uint_eq(turn(T0 + 100), T0 + 1000);
	ck_assert_uint_eq(fake.njobs, njobs);
	for (k = 0; k < 10; k++) {
		ck_assert_uint_eq(rows[k]->row.due, T0 + 1000);
		ck_assert(rows[k]->row.attempts <= 1);
	}

	/* open_until: exactly one probe; the rest wait breaker_open_ms. */
	dispatch_run(d, T0 + 1000);
	ck_assert_uint_eq(fake.njobs, njobs + 1);
	ck_assert_ptr_nonnull(probe = fake_running_job(0));
	ck_assert_int_eq(probe->probe, 1);
	ck_assert_uint_eq(fake_flush(d), 9);
	for (k = 0; k < 10; k++)
		if (rows[k]->seq != probe->seq)
			ck_assert_uint_eq(rows[k]->row.due, T0 + 2000);
	dispatch_run(d, T0 + 1500);
	ck_assert_uint_eq(fake.njobs, njobs + 1);

	/* The probe fails: open again for twice as long. */
	fake_finish(d, probe, ATTEMPT_ERROR, 0, "http 503", T0 + 1500);
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	ck_assert_uint_eq(b.open_until, T0 + 1500 + 2000);
	fake_flush(d);
	ck_assert_uint_eq(turn(T0 + 2000), T0 + 3500);
	ck_assert_uint_eq(fake.njobs, njobs + 1);

	/* The next probe succeeds: closed, and the backlog flows. */
	dispatch_run(d, T0 + 3500);
	ck_assert_uint_eq(fake.njobs, njobs + 2);
	ck_assert_ptr_nonnull(probe = fake_running_job(0));
	ck_assert_int_eq(probe->probe, 1);
	fake_flush(d);
	fake_finish(d, probe, ATTEMPT_OK, 0, "", T0 + 3600);
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_CLOSED);
	fake_flush(d);
	turn(T0 + 4500);
	ck_assert_uint_eq(fake_running("a", "s"), 3);
	for (i = 0; fake_running_job(i) != NULL; i++)
		ck_assert_int_eq(fake_running_job(i)->probe, 0);
	/* Parks spent no attempts: only the 3 failures and the probe. */
	for (k = 0, retried = 0; k < 10; k++)
		retried += rows[k]->row.attempts;
	ck_assert_uint_eq(retried, 3 + 1);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.breakers_open, 0);
	done();
}
END_TEST

/* Consecutive opens double up to breaker_max_open_ms; the glue's loop
 * (run at the wake time) finds every probe. */
START_TEST(test_breaker_doubling)
{
	static const uint64_t open[] = { 1000, 2000, 4000, 8000, 8000, 8000 };
	struct breaker b;
	struct fjob *j;
	uint64_t now = T0, w;
	size_t k;
	int guard;

	mk("  sink_concurrency: 3\n  breaker_failures: 1\n" RETRY, SRC);
	fake_add("a", "s", 0, MODULE_LOG, T0, 100);
	for (k = 0; k < sizeof(open) / sizeof(open[0]); k++) {
		for (guard = 0; (j = fake_running_job(0)) == NULL; guard++) {
			ck_assert_int_lt(guard, 10);
			w = turn(now);
			if ((j = fake_running_job(0)) != NULL)
				break;
			ck_assert_uint_gt(w, now);
			ck_assert_uint_ne(w, UINT64_MAX);
			now = w;
		}
		ck_assert_int_eq(j->probe, k > 0);
		if (k > 0) {
			get_breaker("a", "s", &b);
			ck_assert_uint_eq(now, b.open_until);
		}
		fake_finish(d, j, ATTEMPT_ERROR, 0, "http 503", now);
		fake_flush(d);
		get_breaker("a", "s", &b);
		ck_assert_int_eq(b.state, BREAKER_OPEN);
		ck_assert_uint_eq(b.open_until - now, open[k]);
		ck_assert_uint_eq(b.open_ms, open[k]);
	}
	done();
}
END_TEST

/*
 * Only the probe moves a breaker out of half-open: a straggler (started
 * before the open) that fails while the probe runs neither reopens it nor
 * doubles its time; the probe's failure then is the second open (2000 ms
 * from its end).
 */
START_TEST(test_breaker_straggler)
{
	struct breaker b;
	struct fjob *j, *probe = NULL, *late = NULL;
	size_t i;
	int k;

	mk("  sink_concurrency: 3\n  breaker_failures: 1\n" RETRY, SRC);
	for (k = 0; k < 3; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_running("a", "s"), 3);
	fake_finish(d, fake_running_job(0), ATTEMPT_ERROR, 0, "x", T0);
	fake_flush(d);
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	ck_assert_uint_eq(b.open_until, T0 + 1000);
	turn(T0 + 1000);
	ck_assert_uint_eq(fake_running("a", "s"), 3);
	for (i = 0; (j = fake_running_job(i)) != NULL; i++) {
		if (j->probe)
			probe = j;
		else
			late = j;
	}
	ck_assert_ptr_nonnull(probe);
	ck_assert_ptr_nonnull(late);
	fake_finish(d, late, ATTEMPT_ERROR, 0, "x", T0 + 1001);
	fake_flush(d);
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_HALF_OPEN);
	ck_assert_uint_eq(b.opens, 1);
	fake_finish(d, probe, ATTEMPT_ERROR, 0, "x", T0 + 1500);
	fake_flush(d);
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	ck_assert_uint_eq(b.opens, 2);
	ck_assert_uint_eq(b.open_until, T0 + 1500 + 2000);
	done();
}
END_TEST

/* Breakers are per key, and a key carries the tenant. */
START_TEST(test_breaker_per_key)
{
	struct breaker b;
	struct frow *f;
	int k;

	mk("  sink_concurrency: 3\n  breaker_failures: 1\n" RETRY, SRC);
	for (k = 0; k < 3; k++) {
		fake_add("a", "s", 0, MODULE_LOG, T0, 100);
		fake_add("a", "s2", 0, MODULE_LOG, T0, 100);
		fake_add("b", "s", 0, MODULE_LOG, T0, 100);
	}
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_running(NULL, NULL), 9);
	/* a/s fails: only a/s opens */
	for (k = 0; k < 9; k++)
		if (strcmp(fake_running_job(k)->row.tenant, "a") == 0 &&
		    strcmp(fake_running_job(k)->row.source, "s") == 0)
			break;
	fake_finish(d, fake_running_job(k), ATTEMPT_ERROR, 0, "x", T0);
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	get_breaker("a", "s2", &b);
	ck_assert_int_eq(b.state, BREAKER_CLOSED);
	get_breaker("b", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_CLOSED);
	fake_flush(d);
	fake_add("b", "s", 0, MODULE_LOG, T0 + 1, 100);
	fake_add("a", "s2", 0, MODULE_LOG, T0 + 1, 100);
	f = fake_add("a", "s", 0, MODULE_LOG, T0 + 1, 100);
	/* Every running attempt succeeds, a/s's two that started before its
	 * breaker opened among them: stragglers, not the probe, so a/s
	 * stays open and its new row is parked; the other keys run on. */
	ck_assert_uint_eq(fake_running("a", "s"), 2);
	fake_finish_all(d, ATTEMPT_OK, "", T0 + 1);
	fake_flush(d);
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	ck_assert_uint_eq(b.open_until, T0 + 1000);
	turn(T0 + 1);
	ck_assert_uint_eq(fake_running("b", "s"), 1);
	ck_assert_uint_eq(fake_running("a", "s2"), 1);
	ck_assert_uint_eq(fake_running("a", "s"), 0);
	ck_assert_uint_eq(f->row.due, T0 + 1000);
	ck_assert_int_eq(f->row.state, STORE_ROW_PARKED);
	ck_assert_uint_eq(f->row.attempts, 0);
	ck_assert(!last_settle(f->seq)->retry);	/* a park: no attempt */
	/* At open_until the probe runs, and its success closes it. */
	fake_finish_all(d, ATTEMPT_OK, "", T0 + 2);
	fake_flush(d);
	turn(T0 + 1000);
	ck_assert_uint_eq(fake_running("a", "s"), 1);
	ck_assert_int_eq(fake_running_job(0)->probe, 1);
	fake_finish(d, fake_running_job(0), ATTEMPT_OK, 0, "", T0 + 1001);
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_CLOSED);
	done();
}
END_TEST

/* --- the retry horizon --- */

/*
 * max_elapsed_ms 5000; the breaker of a/s is open until T0 + 1000; a row
 * claimed at T0 + 1 with first_attempt fa is parked until want_due, or
 * dead-lettered as retry_horizon:log.
 */
static const struct {
	uint64_t	fa;
	uint32_t	attempts;
	uint64_t	want_due;	/* 0: dead */
	int		then_dead;	/* claimed again at want_due: dead */
} horizons[] = {
	{ T0 - 5000, 1, 0, 0 },		/* horizon T0: past */
	{ T0 + 1 - 5000, 1, 0, 0 },	/* at the horizon */
	{ T0 - 4500, 1, T0 + 500, 1 },	/* horizon before open_until */
	{ T0 - 4000, 1, T0 + 1000, 0 },	/* exactly open_until */
	{ T0 - 10, 2, T0 + 1000, 0 },
	{ 0, 0, T0 + 1000, 0 },		/* not attempted: no horizon yet */
};

START_TEST(test_horizon)
{
	struct frow *f;
	struct breaker b;

	mk("  sink_concurrency: 3\n  breaker_failures: 1\n"
	    "  retry: {jitter: false, base_ms: 100, max_elapsed_ms: 5000}\n",
	    SRC);
	fake_add("a", "s", 0, MODULE_LOG, T0, 100);
	dispatch_run(d, T0);
	fake_finish(d, fake_running_job(0), ATTEMPT_ERROR, 0, "x", T0);
	fake_flush(d);
	get_breaker("a", "s", &b);
	ck_assert_uint_eq(b.open_until, T0 + 1000);
	fake.rows[0]->row.due = T0 + 100000;	/* out of the way */

	f = fake_add("a", "s", 0, MODULE_LOG, T0 + 1, 100);
	f->row.first_attempt = horizons[_i].fa;
	f->row.attempts = horizons[_i].attempts;
	turn(T0 + 1);
	ck_assert_uint_eq(fake.njobs, 1);
	if (horizons[_i].want_due == 0) {
		ck_assert(f->dead);
		ck_assert_str_eq(f->reason, "retry_horizon:log");
		ck_assert(last_settle(f->seq)->expired);
		ck_assert_uint_eq(f->dead_attempts, horizons[_i].attempts);
	} else {
		ck_assert(!f->dead);
		ck_assert_uint_eq(f->row.due, horizons[_i].want_due);
		ck_assert_uint_eq(f->row.attempts, horizons[_i].attempts);
		ck_assert_uint_eq(f->row.first_attempt, horizons[_i].fa);
		if (horizons[_i].then_dead) {
			turn(horizons[_i].want_due);
			ck_assert(f->dead);
			ck_assert_str_eq(f->reason, "retry_horizon:log");
		}
	}
	done();
}
END_TEST

/*
 * The horizon counts from a row's first attempt, not from a park: a row
 * parked before it was ever attempted keeps first_attempt 0 through parks
 * that last past max_elapsed_ms (5000) from the first, and its first
 * attempt, the probe at T0 + 7000 or later, starts its horizon.
 */
START_TEST(test_horizon_from_first_attempt)
{
	struct frow *a, *f;
	struct fjob *j;
	uint64_t now = T0, w, tried = 0;
	int guard;

	mk("  sink_concurrency: 1\n  breaker_failures: 1\n"
	    "  retry: {jitter: false, base_ms: 100, max_elapsed_ms: 5000}\n",
	    SRC);
	a = fake_add("a", "s", 0, MODULE_LOG, T0, 100);
	dispatch_run(d, T0);
	fake_finish(d, fake_running_job(0), ATTEMPT_ERROR, 0, "x", T0);
	fake_flush(d);
	f = fake_add("a", "s", 0, MODULE_LOG, T0 + 1, 100);
	now = T0 + 1;
	/* Every probe fails, a's first: opens of 1, 2, 4 s; a dies at its
	 * horizon (T0 + 5000) and f's turn as the probe comes. */
	for (guard = 0; tried == 0; guard++) {
		ck_assert_int_lt(guard, 50);
		w = turn(now);
		if ((j = fake_running_job(0)) != NULL) {
			if (j->seq == f->seq) {
				ck_assert_uint_eq(f->row.first_attempt, 0);
				ck_assert_uint_eq(f->row.attempts, 0);
				tried = now;
			}
			fake_finish(d, j, ATTEMPT_ERROR, 0, "x", now);
			fake_flush(d);
			continue;
		}
		ck_assert(!f->dead);
		ck_assert_uint_eq(f->row.first_attempt, 0);
		ck_assert_uint_eq(f->row.attempts, 0);
		ck_assert_uint_gt(w, now);
		now = w;
	}
	ck_assert(a->dead);
	ck_assert_str_eq(a->reason, "retry_horizon:log");
	ck_assert_uint_ge(tried, T0 + 7000);
	ck_assert(!f->dead);
	ck_assert_uint_eq(f->row.attempts, 1);
	ck_assert_uint_eq(f->row.first_attempt, tried);
	done();
}
END_TEST

/* The rows queued when a breaker opens are bound by their horizon too. */
START_TEST(test_horizon_queued)
{
	struct frow *f, *g;

	mk("  sink_concurrency: 1\n  breaker_failures: 1\n"
	    "  retry: {jitter: false, base_ms: 100, max_elapsed_ms: 5000}\n",
	    SRC);
	fake_add("a", "s", 0, MODULE_LOG, T0 - 10, 100);
	f = fake_add("a", "s", 0, MODULE_LOG, T0 - 5, 100);
	f->row.first_attempt = T0 - 4800;
	f->row.attempts = 1;
	g = fake_add("a", "s", 0, MODULE_LOG, T0 - 5, 100);
	g->row.first_attempt = T0 - 5000;
	g->row.attempts = 3;
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake.njobs, 1);
	fake_finish(d, fake_running_job(0), ATTEMPT_TIMEOUT, 0,
	    "attempt_timeout:30000", T0);
	fake_flush(d);
	ck_assert_uint_eq(f->row.due, T0 + 200);
	ck_assert_uint_eq(f->row.attempts, 1);
	ck_assert(g->dead);
	ck_assert_str_eq(g->reason, "retry_horizon:log");
	ck_assert_uint_eq(g->dead_attempts, 3);
	done();
}
END_TEST

/* --- binding --- */

static const struct {
	const char	*name;
	const char	*sources;	/* as it is now */
	uint32_t	 index;
	uint8_t		 module;
	int		 bound;		/* -1: dead */
	const char	*reason;
} bindings[] = {
	{ "same place", "  s: {sinks: [" LOG ", " HTTP "]}\n", 1, MODULE_HTTP,
	    1, NULL },
	{ "reordered", "  s: {sinks: [" HTTP ", " LOG "]}\n", 0, MODULE_LOG,
	    1, NULL },
	{ "reordered back", "  s: {sinks: [" HTTP ", " LOG "]}\n", 1,
	    MODULE_HTTP, 0, NULL },
	{ "removed before", "  s: {sinks: [" HTTP "]}\n", 3, MODULE_HTTP, 0,
	    NULL },
	{ "module gone", "  s: {sinks: [" HTTP ", " HTTP "]}\n", 0,
	    MODULE_LOG, -1, "sink_gone:0:log" },
	{ "two with the module", "  s: {sinks: [" LOG ", " LOG "]}\n", 1,
	    MODULE_HTTP, -1, "sink_gone:1:http" },
	{ "ambiguous fallback", "  s: {sinks: [" HTTP ", " LOG ", " LOG "]}\n",
	    5, MODULE_LOG, -1, "sink_gone:5:log" },
	{ "sqs never configured", "  s: {sinks: [" LOG "]}\n", 0, MODULE_SQS,
	    -1, "sink_gone:0:sqs" },
	{ "source gone", "  other: {sinks: [" LOG "]}\n", 0, MODULE_LOG, -1,
	    "source_gone:s" },
};

START_TEST(test_binding)
{
	struct dispatch_stats st;
	struct conf *c2;
	struct frow *f;
	char src[512];

	mk(SC3 RETRY, "sources:\n  s: {sinks: [" LOG ", " HTTP "]}\n");
	snprintf(src, sizeof(src), "sources:\n%s", bindings[_i].sources);
	c2 = parse(SC3 RETRY, src);
	dispatch_reconfigure(d, c2);
	conf_free(cf);
	cf = c2;
	f = fake_add("a", "s", bindings[_i].index, bindings[_i].module,
	    T0 - 10, 100);
	dispatch_run(d, T0);
	if (bindings[_i].bound >= 0) {
		ck_assert_uint_eq(fake.njobs, 1);
		ck_assert_uint_eq(fake.jobs[0]->bound,
		    (uint32_t)bindings[_i].bound);
		/* the row keeps its key and its binding at ack */
		ck_assert_uint_eq(fake.jobs[0]->row.sink_index,
		    bindings[_i].index);
		ck_assert_uint_eq(fake.nsettles, 0);
	} else {
		ck_assert_uint_eq(fake.njobs, 0);
		fake_flush(d);
		ck_assert(f->dead);
		ck_assert_str_eq(f->reason, bindings[_i].reason);
		ck_assert_uint_eq(f->dead_attempts, 0);
		dispatch_get_stats(d, &st);
		ck_assert_uint_eq(st.claimed, 0);
		ck_assert_uint_eq(st.dead, 1);
		ck_assert_uint_eq(st.tenants, 0);
	}
	done();
}
END_TEST

/* --- batching sinks --- */

#define SQS \
	"sources:\n" \
	"  q: {sinks: [{type: sqs, queue_url: \"http://sink.test:9/1/q\"}]}\n"

/* What the fake batcher took: job ids in order; room: how many more it
 * takes (-1: no bound). */
static uint64_t	batched_jobs[256];
static char	batched_gone[256];	/* taken back */
static uint32_t	batched_bound[256];	/* the sink index each was bound to */
static size_t	nbatched;
static size_t	batch_sent;	/* the first batch_sent are in requests */
static int	batch_room;

static int
fake_batch_add(void *arg, struct drow *r)
{
	if (batch_room == 0)
		return -1;
	if (batch_room > 0)
		batch_room--;
	ck_assert_uint_lt(nbatched, 256);
	batched_gone[nbatched] = 0;
	batched_bound[nbatched] = r->bound;
	batched_jobs[nbatched++] = r->job;
	return 0;
}

static void
fake_batch_cancel(void *arg, const uint64_t *jobs, size_t n, char *taken)
{
	size_t i, k;

	for (i = 0; i < n; i++) {
		if (i > 0)
			ck_assert_uint_lt(jobs[i - 1], jobs[i]);
		for (k = batch_sent; k < nbatched; k++)
			if (batched_jobs[k] == jobs[i] && !batched_gone[k]) {
				batched_gone[k] = 1;
				taken[i] = 1;
			}
	}
}

/* Entries of tenant still waiting in the fake batcher. */
static size_t
batch_waiting(const char *tenant)
{
	struct drow *r;
	size_t k, n = 0;

	for (k = batch_sent; k < nbatched; k++)
		if (!batched_gone[k] &&
		    (r = dispatch_job_row(d, batched_jobs[k])) != NULL &&
		    strcmp(r->row.tenant, tenant) == 0)
			n++;
	return n;
}

static void
mk_batching(const char *dkeys)
{
	struct dispatch_ops ops;

	fake_init();
	fake_ops(&ops);
	ops.batch_add = fake_batch_add;
	ops.batch_cancel = fake_batch_cancel;
	nbatched = 0;
	batch_sent = 0;
	batch_room = -1;
	cf = parse(dkeys, SQS);
	d = dispatch_new(cf, &ops);
}

/* Batched attempts count against no concurrency: 30 rows go to the
 * batcher with concurrency 2 and sink_concurrency 1; none is started as a
 * job of its own. */
START_TEST(test_batch_not_counted)
{
	struct dispatch_stats st;
	int k;

	mk_batching("  concurrency: 2\n  sink_concurrency: 1\n" RETRY);
	for (k = 0; k < 30; k++)
		fake_add("a", "q", 0, MODULE_SQS, T0 - 100, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(nbatched, 30);
	ck_assert_uint_eq(fake.njobs, 0);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.batched, 30);
	ck_assert_uint_eq(st.running, 0);
	ck_assert_uint_eq(st.claimed, 30);
	done();
}
END_TEST

/* Each entry settles its own row on its own result. */
START_TEST(test_batch_per_entry_settle)
{
	struct dispatch_stats st;
	struct frow *rows[12];
	const struct fsettle *se;
	size_t i;
	int k;

	mk_batching("  breaker_failures: 0\n" RETRY);
	for (k = 0; k < 12; k++)
		rows[k] = fake_add("a", "q", 0, MODULE_SQS, T0 - 100, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(nbatched, 12);
	for (i = 0; i < nbatched; i++)
		dispatch_outcome(d, batched_jobs[i], i < 10 ? ATTEMPT_OK :
		    i == 10 ? ATTEMPT_PERMANENT : ATTEMPT_ERROR, 0,
		    i == 10 ? "sqs InvalidMessageContents" : "sqs http 503",
		    T0 + 5);
	ck_assert_uint_eq(fake_flush(d), 12);
	for (k = 0; k < 10; k++)
		ck_assert_int_eq(rows[k]->live, 0);
	ck_assert_int_eq(rows[10]->dead, 1);
	ck_assert_str_eq(rows[10]->reason,
	    "permanent:sqs InvalidMessageContents");
	ck_assert_int_eq(rows[11]->live, 1);
	ck_assert_int_eq(rows[11]->dead, 0);
	ck_assert_uint_eq(rows[11]->row.attempts, 1);
	ck_assert_uint_eq(rows[11]->row.due, T0 + 5 + 100);
	se = last_settle(rows[11]->seq);
	ck_assert_int_eq(se->kind, SETTLE_RESCHEDULE);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.claimed, 0);
	ck_assert_uint_eq(st.batched, 0);
	done();
}
END_TEST

/* A full batcher leaves the rows claimed and queued; they go once it has
 * room again. */
START_TEST(test_batch_full_waits)
{
	struct dispatch_stats st;
	int k;

	mk_batching(RETRY);
	batch_room = 5;
	for (k = 0; k < 8; k++)
		fake_add("a", "q", 0, MODULE_SQS, T0 - 100, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(nbatched, 5);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.queued, 3);
	ck_assert_uint_eq(st.claimed, 8);
	batch_room = -1;
	dispatch_run(d, T0 + 1);
	ck_assert_uint_eq(nbatched, 8);
	done();
}
END_TEST

/* Batched entries move their own key's breaker: three failures open it,
 * and rows claimed while it is open are parked, never batched. */
START_TEST(test_batch_breaker)
{
	struct breaker b;
	size_t i, before;
	int k;

	mk_batching(RETRY);
	for (k = 0; k < 3; k++)
		fake_add("a", "q", 0, MODULE_SQS, T0 - 100, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(nbatched, 3);
	for (i = 0; i < 3; i++)
		dispatch_outcome(d, batched_jobs[i], ATTEMPT_ERROR, 0,
		    "sqs http 503", T0 + 1);
	fake_flush(d);
	get_breaker("a", "q", &b);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	before = nbatched;
	for (k = 0; k < 4; k++)
		fake_add("a", "q", 0, MODULE_SQS, T0, 100);
	dispatch_run(d, T0 + 2);
	ck_assert_uint_eq(nbatched, before);
	ck_assert_uint_ge(fake_flush(d), 4);	/* parked */
	done();
}
END_TEST

/*
 * A breaker that opens parks its key's entries still waiting in the
 * batcher (queued, in the spec's words), attempts and first attempt as
 * they were, due at its close; entries in a request in flight stay and
 * settle on their results, which leave the breaker open.  Tenant b shares
 * the destination: its entries stay, so no batch carries one of a's while
 * its breaker is open.
 */
START_TEST(test_batch_breaker_parks_waiting)
{
	struct dispatch_stats st;
	struct breaker b;
	struct frow *rows[12], *brow[3];
	size_t i;
	int k;

	mk_batching(RETRY);
	for (k = 0; k < 12; k++) {
		rows[k] = fake_add("a", "q", 0, MODULE_SQS, T0 - 100, 100);
		if (k == 11)
			rows[k]->row.first_attempt = T0 - 5000;
	}
	for (k = 0; k < 3; k++)
		brow[k] = fake_add("b", "q", 0, MODULE_SQS, T0 - 100, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(nbatched, 15);
	batch_sent = 5;		/* a's first five are in a request */
	ck_assert_uint_eq(batch_waiting("a"), 7);
	for (i = 0; i < 3; i++)
		dispatch_outcome(d, batched_jobs[i], ATTEMPT_ERROR, 0,
		    "sqs http 500", T0 + 1);
	get_breaker("a", "q", &b);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	ck_assert_uint_eq(b.open_until, T0 + 1001);
	ck_assert_uint_eq(batch_waiting("a"), 0);
	ck_assert_uint_eq(batch_waiting("b"), 3);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.batched, 2 + 3);
	ck_assert_uint_eq(fake_flush(d), 3 + 7);
	for (k = 5; k < 12; k++) {
		ck_assert_uint_eq(rows[k]->row.due, T0 + 1001);
		ck_assert_int_eq(rows[k]->row.state, STORE_ROW_PARKED);
		ck_assert_uint_eq(rows[k]->row.attempts, 0);
		ck_assert_uint_eq(rows[k]->row.first_attempt,
		    k == 11 ? T0 - 5000 : 0);
	}
	/* The two left in flight answer ok: stragglers, the breaker stays
	 * open, their rows are delivered. */
	for (i = 3; i < 5; i++)
		dispatch_outcome(d, batched_jobs[i], ATTEMPT_OK, 0, "",
		    T0 + 2);
	get_breaker("a", "q", &b);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	ck_assert_uint_eq(fake_flush(d), 2);
	ck_assert(!rows[3]->live && !rows[4]->live);
	/* Nothing of a's is batched again while it is open; b's flow. */
	turn(T0 + 3);
	ck_assert_uint_eq(nbatched, 15);
	for (k = 0; k < 3; k++)
		ck_assert(brow[k]->live && !brow[k]->dead);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.batched, 3);
	done();
}
END_TEST

/* --- binding after a reload --- */

/*
 * A reload between a row's claim and its start: the row binds again as the
 * spec binds (same index and module, else the one sink with its module,
 * else sink_gone), so a queued http row whose index now holds a log sink
 * never starts as a log job.
 */
static const struct {
	const char	*name;
	const char	*after;		/* s's sinks after the reload */
	int		 bound;		/* -1: dead-lettered */
	const char	*reason;
} rebinds[] = {
	{ "reordered", "  s: {sinks: [" LOG ", " HTTP "]}\n", 1, NULL },
	{ "moved further", "  s: {sinks: [" LOG ", " LOG ", " HTTP "]}\n", 2,
	    NULL },
	{ "in place", "  s: {sinks: [" HTTP ", " LOG "]}\n", 0, NULL },
	{ "module gone", "  s: {sinks: [" LOG ", " LOG "]}\n", -1,
	    "sink_gone:0:http" },
	{ "source gone", "  other: {sinks: [" HTTP "]}\n", -1,
	    "source_gone:s" },
};

START_TEST(test_rebind_queued)
{
	struct dispatch_stats st;
	struct conf *c2;
	struct frow *f[3];
	char src[512];
	size_t i;
	int k;

	mk("  concurrency: 1\n" RETRY,
	    "sources:\n  s: {sinks: [" HTTP ", " LOG "]}\n");
	for (k = 0; k < 3; k++)
		f[k] = fake_add("a", "s", 0, MODULE_HTTP, T0 - 100 + k, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake.njobs, 1);
	ck_assert_uint_eq(fake.jobs[0]->bound, 0);
	snprintf(src, sizeof(src), "sources:\n%s", rebinds[_i].after);
	c2 = parse("  concurrency: 1\n" RETRY, src);
	dispatch_reconfigure(d, c2);
	conf_free(cf);
	cf = c2;
	/* The attempt running since before the reload settles as it is. */
	next_ok(T0 + 1);
	turn(T0 + 1);
	if (rebinds[_i].bound >= 0) {
		for (k = 0; k < 2; k++) {
			ck_assert_uint_eq(fake.njobs, 2 + k);
			ck_assert_uint_eq(fake.jobs[1 + k]->bound,
			    (uint32_t)rebinds[_i].bound);
			ck_assert_uint_eq(fake.jobs[1 + k]->row.module,
			    MODULE_HTTP);
			/* The row keeps its binding at ack. */
			ck_assert_uint_eq(fake.jobs[1 + k]->row.sink_index, 0);
			next_ok(T0 + 2 + k);
		}
		fake_flush(d);
		for (k = 0; k < 3; k++)
			ck_assert(!f[k]->live && !f[k]->dead);
	} else {
		ck_assert_uint_eq(fake.njobs, 1);
		ck_assert(!f[0]->live && !f[0]->dead);
		for (k = 1; k < 3; k++) {
			ck_assert(f[k]->dead);
			ck_assert_str_eq(f[k]->reason, rebinds[_i].reason);
			ck_assert_uint_eq(f[k]->dead_attempts, 0);
		}
	}
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.claimed, 0);
	for (i = 0; i < fake.njobs; i++)
		ck_assert_uint_eq(fake.jobs[i]->row.module, MODULE_HTTP);
	done();
}
END_TEST

/*
 * dead_letter_source's share in dispatch: the source's claimed rows that
 * wait for a slot are pending, not started, so they are dead-lettered at
 * once (attempts unchanged); the running attempt is left to settle, and
 * other sources' rows are untouched.
 */
START_TEST(test_dead_letter_queued)
{
	struct dispatch_stats st;
	struct frow *f[4], *o;
	uint64_t n;
	int k;

	mk("  concurrency: 1\n" RETRY,
	    "sources:\n  s: {sinks: [" HTTP "]}\n  o: {sinks: [" HTTP "]}\n");
	for (k = 0; k < 4; k++)
		f[k] = fake_add("a", "s", 0, MODULE_HTTP, T0 - 100 + k, 100);
	o = fake_add("a", "o", 0, MODULE_HTTP, T0 - 50, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake.njobs, 1);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.claimed, 5);
	n = dispatch_dead_letter_queued(d, "s", "source_gone:s", T0 + 1);
	ck_assert_uint_eq(n, 3);
	ck_assert_uint_eq(fake_flush(d), 3);
	for (k = 1; k < 4; k++) {
		ck_assert(f[k]->dead);
		ck_assert_str_eq(f[k]->reason, "source_gone:s");
		ck_assert_uint_eq(f[k]->dead_attempts, 0);
	}
	ck_assert(f[0]->live && !f[0]->dead);	/* running: left to settle */
	ck_assert(o->live && !o->dead);
	ck_assert_uint_eq(dispatch_dead_letter_queued(d, "s", "source_gone:s",
	    T0 + 2), 0);
	next_ok(T0 + 3);
	turn(T0 + 3);
	next_ok(T0 + 4);
	fake_flush(d);
	ck_assert(!f[0]->live && !f[0]->dead);
	ck_assert(!o->live && !o->dead);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.claimed, 0);
	done();
}
END_TEST

/* The same for a batching key: its entries waiting in the batcher are
 * taken back and dead-lettered, those in a request in flight settle on
 * their results. */
START_TEST(test_dead_letter_batched)
{
	struct dispatch_stats st;
	struct frow *rows[8];
	size_t i;
	int k;

	mk_batching(RETRY);
	for (k = 0; k < 8; k++)
		rows[k] = fake_add("a", "q", 0, MODULE_SQS, T0 - 100, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(nbatched, 8);
	batch_sent = 3;		/* the first three are in a request */
	ck_assert_uint_eq(dispatch_dead_letter_queued(d, "q", "source_gone:q",
	    T0 + 1), 5);
	ck_assert_uint_eq(fake_flush(d), 5);
	for (k = 3; k < 8; k++) {
		ck_assert(rows[k]->dead);
		ck_assert_str_eq(rows[k]->reason, "source_gone:q");
		ck_assert_uint_eq(rows[k]->dead_attempts, 0);
	}
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.batched, 3);
	for (i = 0; i < 3; i++)
		dispatch_outcome(d, batched_jobs[i], ATTEMPT_OK, 0, "", T0 + 2);
	ck_assert_uint_eq(fake_flush(d), 3);
	for (k = 0; k < 3; k++)
		ck_assert(!rows[k]->live && !rows[k]->dead);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.claimed, 0);
	done();
}
END_TEST

/*
 * dead_letter_source holds its source from its start to its end: no row
 * of it is claimed meanwhile, however due (calls nest), while another
 * source's row of the same tenant, due behind 600 of them, is claimed
 * within a few turns: the scan passes the held rows over a bounded number
 * a turn, its cursor moving past them, and asks to run again at once
 * until it has, then sleeps.  Released (and the scan sent back, as the
 * glue does at a call's end), they are claimed.
 */
START_TEST(test_dead_letter_hold)
{
	struct frow *f[600], *o;
	uint64_t w;
	int k, turns;

	mk(RETRY, "sources:\n  s: {sinks: [" HTTP "]}\n  o: {sinks: [" HTTP
	    "]}\n");
	dispatch_hold_source(d, "s");
	dispatch_hold_source(d, "s");
	for (k = 0; k < 600; k++)
		f[k] = fake_add("a", "s", 0, MODULE_HTTP, T0 - 1000 + k, 100);
	o = fake_add("a", "o", 0, MODULE_HTTP, T0 - 1, 100);
	for (turns = 1; ; turns++) {
		ck_assert_int_le(turns, 12);
		w = dispatch_run(d, T0);
		if (dispatch_is_claimed(d, o->key))
			break;
		ck_assert_uint_eq(w, T0);	/* more to read: at once */
	}
	ck_assert_int_gt(turns, 1);		/* not all 600 in one turn */
	ck_assert_uint_eq(fake.njobs, 1);
	ck_assert_uint_eq(fake.jobs[0]->seq, o->seq);
	/* Nothing more for the tenant until an event: no busy loop, also
	 * once o has settled and nothing of the tenant is claimed. */
	ck_assert_uint_eq(dispatch_run(d, T0 + 1), UINT64_MAX);
	fake_finish(d, fake_running_job(0), ATTEMPT_OK, 0, "", T0 + 2);
	fake_flush(d);
	for (turns = 1; (w = dispatch_run(d, T0 + 3)) == T0 + 3; turns++)
		ck_assert_int_le(turns, 12);
	ck_assert_uint_eq(w, UINT64_MAX);
	dispatch_release_source(d, "s");	/* the other call goes on */
	dispatch_hint(d, 0);
	for (turns = 1; dispatch_run(d, T0 + 4) == T0 + 4; turns++)
		ck_assert_int_le(turns, 12);
	for (k = 0; k < 600; k++)
		ck_assert(!dispatch_is_claimed(d, f[k]->key));
	ck_assert_uint_eq(fake.njobs, 1);
	dispatch_release_source(d, "s");
	dispatch_hint(d, 0);
	dispatch_run(d, T0 + 5);
	ck_assert(dispatch_is_claimed(d, f[0]->key));
	ck_assert_uint_gt(fake.njobs, 1);
	ck_assert_uint_eq(fake.jobs[1]->seq, f[0]->seq);
	done();
}
END_TEST

/* The same for a batching sink's rows that wait for room in their
 * batcher: they go to the batcher bound to the sqs sink as it is now. */
START_TEST(test_rebind_batched)
{
	struct conf *c2;
	size_t i;
	int k;

	mk_batching(RETRY);
	c2 = parse(RETRY, "sources:\n  q: {sinks: [{type: sqs, queue_url: "
	    "\"http://sink.test:9/1/q\"}, " HTTP "]}\n");
	dispatch_reconfigure(d, c2);
	conf_free(cf);
	cf = c2;
	batch_room = 0;
	for (k = 0; k < 4; k++)
		fake_add("a", "q", 0, MODULE_SQS, T0 - 100, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(nbatched, 0);
	c2 = parse(RETRY, "sources:\n  q: {sinks: [" HTTP ", {type: sqs, "
	    "queue_url: \"http://sink.test:9/1/q\"}]}\n");
	dispatch_reconfigure(d, c2);
	conf_free(cf);
	cf = c2;
	batch_room = -1;
	dispatch_run(d, T0 + 1);
	ck_assert_uint_eq(nbatched, 4);
	for (i = 0; i < nbatched; i++)
		ck_assert_uint_eq(batched_bound[i], 1);
	ck_assert_uint_eq(fake.njobs, 0);
	done();
}
END_TEST

/* --- decks --- */

/*
 * With one key waiting, each running attempt of it gets the next queued
 * row on deck, which holds no slot; when the attempt ends its process
 * starts the deck, which takes the slot: the key never runs more than its
 * cap, and every row is attempted once.
 */
START_TEST(test_deck_fill)
{
	struct dispatch_stats st;
	struct fjob *j;
	struct fdeck *dk;
	int k, round;

	mk(SC3 RETRY, SRC);
	fake.decks_on = 1;
	fake.deck_take = 1;
	for (k = 0; k < 12; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100 + k, 100);
	dispatch_run(d, T0);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.running, 3);
	ck_assert_uint_eq(st.decked, 3);
	ck_assert_uint_eq(st.queued, 6);
	ck_assert_uint_eq(st.claimed, 12);
	ck_assert_uint_eq(fake_decked("a"), 3);
	/* The first job ends: its deck starts in its slot. */
	j = fake_running_job(0);
	ck_assert_ptr_nonnull(dk = fake_deck_of(j));
	ck_assert_uint_eq(dk->row.attempts, 0);
	fake_finish(d, j, ATTEMPT_OK, 0, "", T0 + 1);
	ck_assert_int_eq(dk->state, FDECK_STARTED);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.running, 3);
	ck_assert_uint_eq(st.decked, 2);
	ck_assert_uint_eq(fake_running("a", "s"), 3);
	/* The next run puts a row on deck behind it. */
	ck_assert_uint_eq(fake_flush(d), 1);
	dispatch_run(d, T0 + 1);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.decked, 3);
	ck_assert_uint_eq(st.queued, 5);
	for (round = 0; round < 100 && (j = fake_running_job(0)) != NULL;
	    round++) {
		fake_finish(d, j, ATTEMPT_OK, 0, "", T0 + 2 + round);
		ck_assert_uint_le(fake_running(NULL, NULL), 3);
		fake_flush(d);
		dispatch_run(d, T0 + 2 + round);
		ck_assert_uint_le(fake_running(NULL, NULL), 3);
	}
	for (k = 0; k < 12; k++)
		ck_assert(!fake.rows[k]->live);
	ck_assert_uint_eq(fake.njobs, 12);	/* starts, decks included */
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.claimed, 0);
	ck_assert_uint_eq(st.decked, 0);
	ck_assert_uint_eq(st.delivered, 12);
	done();
}
END_TEST

/* A deck its process had not read when the attempt ahead ended is taken
 * back: first in its queue again, attempts unchanged, and it starts next
 * the usual way. */
START_TEST(test_deck_taken_back)
{
	struct dispatch_stats st;
	struct fjob *j;
	struct fdeck *dk;
	int k;

	mk(SC3 RETRY, SRC);
	fake.decks_on = 1;
	fake.deck_take = 0;
	for (k = 0; k < 10; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100 + k, 100);
	dispatch_run(d, T0);
	j = fake_running_job(0);
	ck_assert_ptr_nonnull(dk = fake_deck_of(j));
	fake_finish(d, j, ATTEMPT_OK, 0, "", T0 + 1);
	ck_assert_int_eq(dk->state, FDECK_CANCELLED);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.running, 2);
	ck_assert_uint_eq(st.decked, 2);
	ck_assert_uint_eq(st.queued, 5);
	fake_flush(d);
	dispatch_run(d, T0 + 1);
	ck_assert_uint_eq(fake_running("a", "s"), 3);
	ck_assert_uint_eq(fake.jobs[fake.njobs - 1]->seq, dk->seq);
	ck_assert_uint_eq(fake.jobs[fake.njobs - 1]->row.attempts, 0);
	ck_assert_ptr_nonnull(fake_deck_of(fake.jobs[fake.njobs - 1]));
	done();
}
END_TEST

/* Decks only while one key waits: when another key waits for a slot
 * (here the global concurrency's), every deck is taken back, and none
 * forms until it has started. */
START_TEST(test_deck_fairness)
{
	struct dispatch_stats st;
	struct frow *b;
	int k, n;

	mk("  concurrency: 3\n" SC3 RETRY, SRC);
	fake.decks_on = 1;
	fake.deck_take = 1;
	for (k = 0; k < 10; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100 + k, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_decked("a"), 3);
	b = fake_add("b", "s", 0, MODULE_LOG, T0, 100);
	dispatch_run(d, T0 + 1);
	ck_assert(dispatch_is_claimed(d, b->key));
	ck_assert_uint_eq(fake_decked(NULL), 0);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.decked, 0);
	ck_assert_uint_eq(st.queued, 8);
	for (k = 0; k < 3; k++)
		ck_assert_int_eq(fake.decks[k]->state, FDECK_CANCELLED);
	/* a's jobs end one by one: no deck while b waits. */
	for (n = 0; n < 3 && fake_running("b", NULL) == 0; n++) {
		next_ok(T0 + 2 + n);
		if (fake_running("b", NULL) == 0)
			ck_assert_uint_eq(fake_decked(NULL), 0);
	}
	ck_assert_uint_eq(fake_running("b", NULL), 1);
	ck_assert_uint_eq(n, 2);	/* the second slot freed */
	/* b runs, only a waits: a's decks form again. */
	ck_assert_uint_eq(fake_decked("a"), 2);
	done();
}
END_TEST

/*
 * A breaker that opens takes the key's decks back and parks them with its
 * queued rows, attempts unchanged; a deck its process has started cannot
 * be taken back and runs, like an attempt that was running.
 */
START_TEST(test_deck_breaker)
{
	struct dispatch_stats st;
	struct breaker b;
	struct fjob *j;
	struct fdeck *d1, *d2, *d3;
	struct frow *f;
	int k;

	mk(SC3 RETRY, SRC);
	fake.decks_on = 1;
	for (k = 0; k < 10; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100 + k, 100);
	dispatch_run(d, T0);
	fake.deck_take = 1;
	j = fake_running_job(0);
	d1 = fake_deck_of(j);
	fake_finish(d, j, ATTEMPT_ERROR, 0, "http 503", T0 + 1);
	j = fake_running_job(0);
	d2 = fake_deck_of(j);
	fake_finish(d, j, ATTEMPT_ERROR, 0, "http 503", T0 + 1);
	ck_assert_int_eq(d1->state, FDECK_STARTED);
	ck_assert_int_eq(d2->state, FDECK_STARTED);
	/* The third failure opens it while d3 waits unread. */
	fake.deck_take = 0;
	j = fake_running_job(0);
	d3 = fake_deck_of(j);
	ck_assert_ptr_nonnull(d3);
	fake_finish(d, j, ATTEMPT_ERROR, 0, "http 503", T0 + 1);
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_OPEN);
	ck_assert_int_eq(d3->state, FDECK_CANCELLED);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.decked, 0);
	ck_assert_uint_eq(st.queued, 0);
	ck_assert_uint_eq(st.running, 2);	/* d1 and d2 run on */
	fake_flush(d);
	ck_assert_ptr_nonnull(f = fake_find(d3->key));
	ck_assert_uint_eq(f->row.attempts, 0);
	ck_assert_int_eq(f->row.state, STORE_ROW_PARKED);
	ck_assert_uint_eq(f->row.due, T0 + 1 + 1000);
	/* No deck forms behind d1 and d2 while it is open. */
	dispatch_run(d, T0 + 2);
	ck_assert_uint_eq(fake_decked(NULL), 0);
	done();
}
END_TEST

/* Draining and reconfigure take every deck back; a lowered cap gets decks
 * again only once the key's running count is down to it. */
START_TEST(test_deck_stop_lowered)
{
	struct dispatch_stats st;
	struct conf *c2;
	int k;

	mk(SC3 RETRY, SRC);
	fake.decks_on = 1;
	fake.deck_take = 1;
	for (k = 0; k < 10; k++)
		fake_add("a", "s", 0, MODULE_LOG, T0 - 100 + k, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_decked(NULL), 3);
	c2 = parse("  sink_concurrency: 1\n" RETRY, SRC);
	dispatch_reconfigure(d, c2);
	conf_free(cf);
	cf = c2;
	ck_assert_uint_eq(fake_decked(NULL), 0);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.queued, 7);
	dispatch_run(d, T0 + 1);
	ck_assert_uint_eq(fake_decked(NULL), 0);	/* 3 run, cap 1 */
	next_ok(T0 + 2);
	ck_assert_uint_eq(fake_decked(NULL), 0);	/* 2 run */
	ck_assert_uint_eq(fake_running(NULL, NULL), 2);
	next_ok(T0 + 3);
	ck_assert_uint_eq(fake_running(NULL, NULL), 1);
	ck_assert_uint_eq(fake_decked(NULL), 1);	/* its slot passes on */
	fake_finish(d, fake_running_job(0), ATTEMPT_OK, 0, "", T0 + 4);
	ck_assert_uint_eq(fake_running(NULL, NULL), 1);
	fake_flush(d);
	dispatch_run(d, T0 + 4);
	ck_assert_uint_eq(fake_decked(NULL), 1);
	dispatch_stop(d);
	ck_assert_uint_eq(fake_decked(NULL), 0);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.decked, 0);
	ck_assert_uint_eq(st.running, 1);
	ck_assert_uint_eq(dispatch_run(d, T0 + 5), UINT64_MAX);
	ck_assert_uint_eq(fake_decked(NULL), 0);
	done();
}
END_TEST


/* --- pauses (daemon/dispatch/pause.h) --- */

#define SRC_PAUSE \
	"sources:\n" \
	"  s: {sinks: [{type: log}, {type: log}]}\n" \
	"  s2: {sinks: [{type: log}]}\n"

/*
 * A paused key's rows are set aside as they are claimed (due at
 * STORE_DUE_PAUSED, PARKED, no attempt spent), in every tenant, and its
 * queued rows when the pause comes; the source's other sink, other
 * sources and tenants run; a dispatch asks no wake-up for rows set aside.
 */
START_TEST(test_pause_sets_aside)
{
	struct dispatch_stats st;
	struct frow *a0, *a0b, *a1, *b0, *c0, *q[3];
	uint64_t w;
	int k;

	mk("  sink_concurrency: 1\n" RETRY, SRC_PAUSE);
	ck_assert_int_eq(pause_add("s", 0, T0, NULL), 1);
	ck_assert_int_eq(pause_count(), 1);
	a0 = fake_add("a", "s", 0, MODULE_LOG, T0 - 10, 100);
	a0b = fake_add("a", "s", 0, MODULE_LOG, T0 - 9, 100);
	a1 = fake_add("a", "s", 1, MODULE_LOG, T0 - 8, 100);
	b0 = fake_add("b", "s", 0, MODULE_LOG, T0 - 7, 100);
	c0 = fake_add("a", "s2", 0, MODULE_LOG, T0 - 6, 100);
	w = turn(T0);
	ck_assert_uint_eq(fake_running("a", "s"), 1);	/* s#1 */
	ck_assert_uint_eq(fake_running("a", "s2"), 1);
	ck_assert_uint_eq(fake_running("b", NULL), 0);
	ck_assert_uint_eq(fake_running_job(0)->seq, a1->seq);
	for (k = 0; k < 3; k++) {
		struct frow *f = k == 0 ? a0 : k == 1 ? a0b : b0;

		ck_assert_uint_eq(f->row.due, STORE_DUE_PAUSED);
		ck_assert_int_eq(f->row.state, STORE_ROW_PARKED);
		ck_assert_uint_eq(f->row.attempts, 0);
		ck_assert(!dispatch_is_claimed(d, f->key));
	}
	ck_assert_uint_gt(w, T0);
	fake_finish_all(d, ATTEMPT_OK, "", T0);
	w = turn(T0 + 1);
	ck_assert(!a1->live && !c0->live);
	ck_assert_uint_eq(w, UINT64_MAX);	/* only rows set aside */
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.set_aside, 3);
	ck_assert_uint_eq(st.claimed, 0);

	/* A pause of a key with queued rows sets them aside at once; its
	 * running attempt settles on its result. */
	ck_assert_int_eq(pause_del("s", 0), 1);
	for (k = 0; k < 3; k++)
		q[k] = fake_add("c", "s", 0, MODULE_LOG, T0 + k, 100);
	turn(T0 + 10);
	ck_assert_uint_eq(fake_running("c", "s"), 1);
	ck_assert_int_eq(pause_add("s", 0, T0, NULL), 1);
	dispatch_pause_key(d, "s", 0, T0 + 10);
	ck_assert_uint_eq(fake_flush(d), 2);
	ck_assert_uint_eq(q[1]->row.due, STORE_DUE_PAUSED);
	ck_assert_uint_eq(q[2]->row.due, STORE_DUE_PAUSED);
	fake_finish_all(d, ATTEMPT_OK, "", T0 + 10);
	turn(T0 + 11);
	ck_assert(!q[0]->live);
	ck_assert_uint_eq(fake_running(NULL, NULL), 0);
	pause_clear();
	done();
}
END_TEST

/*
 * A sink's answer in its disable_on (the glue has disabled the key: a
 * pause with a reason, its queued rows set aside by dispatch_pause_key)
 * comes as ATTEMPT_DISABLE: the row is set aside with them, its attempt
 * counted and its error kept, never dead-lettered, and no breaker
 * failure is counted; an attempt running beside it settles on its own
 * result.
 */
START_TEST(test_disable_holds)
{
	struct dispatch_stats st;
	struct frow *r[4];
	struct fjob *j;
	struct breaker b;
	int k;

	mk(SC3 RETRY "  breaker_failures: 1\n", SRC_PAUSE);
	for (k = 0; k < 4; k++)
		r[k] = fake_add("a", "s", 0, MODULE_LOG, T0 - 10 + k, 100);
	dispatch_run(d, T0);
	ck_assert_uint_eq(fake_running(NULL, NULL), 3);
	/* The first answer disables the key. */
	ck_assert_int_eq(pause_add("s", 0, T0, "disable_on: 410"), 1);
	ck_assert_str_eq(pause_reason("s", 0), "disable_on: 410");
	dispatch_pause_key(d, "s", 0, T0);
	j = fake_running_job(0);
	fake_finish(d, j, ATTEMPT_DISABLE, 0, "http 410", T0);
	fake_finish(d, fake_running_job(0), ATTEMPT_OK, 0, "", T0);
	fake_finish(d, fake_running_job(0), ATTEMPT_DISABLE, 0, "http 410",
	    T0);
	fake_flush(d);
	get_breaker("a", "s", &b);
	ck_assert_int_eq(b.state, BREAKER_CLOSED);
	ck_assert_uint_eq(b.fails, 0);
	dispatch_get_stats(d, &st);
	ck_assert_uint_eq(st.dead, 0);
	ck_assert_uint_eq(st.delivered, 1);
	ck_assert_uint_eq(st.set_aside, 3);
	/* Two held with their attempt spent, one held with none. */
	ck_assert(!r[1]->live);
	for (k = 0; k < 4; k++) {
		if (k == 1)
			continue;
		ck_assert(r[k]->live && !r[k]->dead);
		ck_assert_uint_eq(r[k]->row.due, STORE_DUE_PAUSED);
		ck_assert_int_eq(r[k]->row.state, STORE_ROW_PARKED);
		ck_assert_uint_eq(r[k]->row.attempts, k == 3 ? 0 : 1);
		if (k != 3)
			ck_assert_str_eq(r[k]->row.last_error, "http 410");
	}
	/* Nothing more starts while it is disabled. */
	ck_assert_uint_eq(dispatch_run(d, T0 + 1000), UINT64_MAX);
	ck_assert_uint_eq(fake_running(NULL, NULL), 0);
	pause_clear();
	done();
}
END_TEST

static Suite *
dispatch_sinks_suite(void)
{
	Suite *s = suite_create("dispatch_sinks");
	TCase *tc;

	tc = tcase_create("slots");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_loop_test(tc, test_sink_concurrency, 0, 5);
	tcase_add_test(tc, test_keys_claimed);
	ADD_LOOP(tc, test_slots, slots);
	tcase_add_test(tc, test_idle_workers);
	tcase_add_test(tc, test_idle_keeps_turn);
	suite_add_tcase(s, tc);

	tc = tcase_create("breakers");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_permanent_not_counted);
	tcase_add_test(tc, test_store_error_not_counted);
	tcase_add_test(tc, test_breaker_cycle);
	tcase_add_test(tc, test_pause_sets_aside);
	tcase_add_test(tc, test_disable_holds);
	tcase_add_test(tc, test_breaker_doubling);
	tcase_add_test(tc, test_breaker_straggler);
	tcase_add_test(tc, test_breaker_per_key);
	ADD_LOOP(tc, test_horizon, horizons);
	tcase_add_test(tc, test_horizon_queued);
	tcase_add_test(tc, test_horizon_from_first_attempt);
	suite_add_tcase(s, tc);

	tc = tcase_create("binding");
	tcase_set_timeout(tc, TIMEOUT);
	ADD_LOOP(tc, test_binding, bindings);
	ADD_LOOP(tc, test_rebind_queued, rebinds);
	tcase_add_test(tc, test_rebind_batched);
	tcase_add_test(tc, test_dead_letter_queued);
	tcase_add_test(tc, test_dead_letter_batched);
	tcase_add_test(tc, test_dead_letter_hold);
	suite_add_tcase(s, tc);

	tc = tcase_create("batching");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_batch_not_counted);
	tcase_add_test(tc, test_batch_per_entry_settle);
	tcase_add_test(tc, test_batch_full_waits);
	tcase_add_test(tc, test_batch_breaker);
	tcase_add_test(tc, test_batch_breaker_parks_waiting);
	suite_add_tcase(s, tc);

	tc = tcase_create("decks");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_deck_fill);
	tcase_add_test(tc, test_deck_taken_back);
	tcase_add_test(tc, test_deck_fairness);
	tcase_add_test(tc, test_deck_breaker);
	tcase_add_test(tc, test_deck_stop_lowered);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return dispatchutil_run(dispatch_sinks_suite());
}
