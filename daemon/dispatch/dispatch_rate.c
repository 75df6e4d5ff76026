/* SPDX-License-Identifier: ISC */
/*
 * dispatch_rate.c: the scheduler's use of the sink keys' token buckets
 * (bucket.h): which rows a scan may claim, the tenants that wait for a
 * token, the holds a sink's Retry-After asks for, the operators'
 * overrides.  Pure, as dispatch.c is: no I/O, no clock but the now it is
 * given.
 *
 * A row spends its key's token when it is claimed: a row without one is
 * not claimed, so it stays due in the store, spends no attempt and holds
 * no slot nor window room, and the scan goes on to the tenant's other
 * keys.  The tenant's rate_wake is then the time the token comes: the
 * dispatch wakes then and a rate scan (dispatch.c) reads the tenant's
 * rows from the first one passed over up to its scan cursor, at most
 * HELD_PASS_MAX passed over again, so that a key's backlog costs a
 * bounded read a token, not a read of the backlog.  A claimed row may
 * still wait for a slot; its token is spent, so the attempts of a key
 * start no faster than its rate, give or take the rows its slots make
 * wait (at most its burst at once).
 *
 * A sink's 429 or 503 with Retry-After holds its key's bucket until then
 * (a key without a rate gets a bucket for the hold): the key's claimed
 * rows that have not started are parked until then, its other rows are
 * not claimed, and the answer does not count toward its breaker.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include "bucket.h"
#include "conf.h"
#include "dispatch.h"
#include "dispatch_int.h"
#include "pause.h"
#include "rateov.h"
#include "sinkq.h"

#define HOLD_CAP_MS	3600000	/* a sink's Retry-After, at most 1 h */

static const struct sink_conf *key_sink(struct dispatch *, const char *,
		    uint32_t);
static int	 key_conf_rate(struct dispatch *, const char *, const char *,
		    uint32_t, double *, uint32_t *);
static void	 key_rate(struct dispatch *, struct bucket *, uint64_t);
static void	 rate_reconf_cb(struct bucket *, void *);
static void	 rated_update(struct dispatch *);
static void	 rate_forget(struct dtenant *);
static void	 tenant_rescan(struct dispatch *, const char *);

/* The sink (source, index) as the config is now, or NULL. */
static const struct sink_conf *
key_sink(struct dispatch *d, const char *source, uint32_t sink)
{
	const struct source_conf *src = conf_source(d->conf, source);

	if (src == NULL || sink >= (uint32_t)src->nsinks)
		return NULL;
	return &src->sinks[sink];
}

/* The key's rate in force: an operator's override (2), else its sink's
 * (1), else none (0, *ps 0); a burst of 0 made its default. */
static int
key_conf_rate(struct dispatch *d, const char *tenant, const char *source,
    uint32_t sink, double *ps, uint32_t *burst)
{
	const struct sink_conf *sk;
	int rc = 0;

	*ps = 0;
	*burst = 0;
	if (rateov_get(tenant, source, sink, ps, burst))
		rc = 2;
	else if ((sk = key_sink(d, source, sink)) != NULL &&
	    sk->rate_per_second > 0) {
		*ps = sk->rate_per_second;
		*burst = sk->rate_burst;
		rc = 1;
	}
	if (rc != 0 && *burst == 0)
		*burst = bucket_default_burst(*ps);
	return rc;
}

/* b's rate in force. */
static void
key_rate(struct dispatch *d, struct bucket *b, uint64_t now)
{
	double ps;
	uint32_t burst;

	b->overridden = key_conf_rate(d, b->tenant, b->source, b->sink, &ps,
	    &burst) == 2;
	bucket_set_rate(b, ps, burst, now);
}

/* The tenant's rows passed over wait for no rate scan: its scan reads
 * them from its first row. */
static void
rate_forget(struct dtenant *t)
{
	if (!t->rate_pending)
		return;
	t->rate_pending = 0;
	t->rate_retry = 0;
	t->rate_wake = 0;
	t->cur_set = 0;
}

/* Claims ask the buckets only while a sink has a rate or a key a bucket;
 * when none has, no rate scan runs, and no row waits for one. */
static void
rated_update(struct dispatch *d)
{
	const struct conf *cf = d->conf;
	struct dtenant *t;
	int i, k;

	d->rated = d->buckets.n > 0 || rateov_count() > 0;
	for (i = 0; !d->rated && i < cf->nsources; i++)
		for (k = 0; k < cf->sources[i].nsinks; k++)
			if (cf->sources[i].sinks[k].rate_per_second > 0) {
				d->rated = 1;
				break;
			}
	if (!d->rated)
		TAILQ_FOREACH(t, &d->tenants, all)
			rate_forget(t);
}

/* The rows of tenant's that were passed over are looked at again at the
 * next run. */
static void
tenant_rescan(struct dispatch *d, const char *tenant)
{
	struct dtenant *t;

	TAILQ_FOREACH(t, &d->tenants, all)
		if (strcmp(t->name, tenant) == 0 && t->rate_pending)
			t->rate_retry = 1;
}

int
dispatch_rate_admit(struct dispatch *d, struct dtenant *t,
    const struct store_row *row)
{
	struct bucket *b;
	char why[STORE_ERROR_MAX];
	uint32_t idx, burst;
	uint64_t next;
	double ps;

	/* A row that cannot bind is dead-lettered by its claim, and a
	 * paused key's row is set aside by it: neither spends a token. */
	if (dispatch_bind_index(d, row, &idx, why, sizeof(why)) == -1 ||
	    pause_is(row->source, idx))
		return 1;
	if ((b = buckets_find(&d->buckets, t->name, row->source, idx)) ==
	    NULL) {
		if (key_conf_rate(d, t->name, row->source, idx, &ps,
		    &burst) == 0)
			return 1;
		b = buckets_get(&d->buckets, t->name, row->source, idx);
		b->at = d->now;
		key_rate(d, b, d->now);
	}
	if (bucket_take(b, d->now))
		return 1;
	next = bucket_next(b, d->now);
	if (t->rate_wake == 0 || next < t->rate_wake)
		t->rate_wake = next;
	return 0;
}

uint64_t
dispatch_rate_next(struct dispatch *d)
{
	struct dtenant *t;
	uint64_t wake = UINT64_MAX;

	TAILQ_FOREACH(t, &d->tenants, all)
		if (t->rate_pending && t->rate_wake != 0 &&
		    t->rate_wake < wake)
			wake = t->rate_wake;
	return wake;
}

struct reconf_arg {
	struct dispatch	*d;
	uint64_t	 now;
};

static void
rate_reconf_cb(struct bucket *b, void *arg)
{
	struct reconf_arg *a = arg;

	key_rate(a->d, b, a->now);
	/* Nothing left to keep: no rate, no hold to come. */
	if (b->per_second <= 0 && b->held_until <= a->now)
		buckets_remove(&a->d->buckets, b);
}

/* The buckets' rates as the config is now.  The time is the last run's:
 * a reconfigure is given none.  A tenant freed for want of anything
 * waiting goes at its next settle (dispatch_tenant_maybe_free). */
void
dispatch_rate_reconfigure(struct dispatch *d)
{
	struct reconf_arg a = { d, d->now };
	struct dtenant *t;

	buckets_each(&d->buckets, rate_reconf_cb, &a);
	/* The rows passed over are read again from each tenant's first: a
	 * reload is rare, and a rate lifted leaves no rate scan to come. */
	TAILQ_FOREACH(t, &d->tenants, all)
		rate_forget(t);
	rated_update(d);
}

void
dispatch_throttle(struct dispatch *d, uint64_t job, uint64_t retry_after_ms,
    uint64_t now)
{
	struct drow *r = dispatch_job_row(d, job);
	struct bucket *b;
	uint64_t until;

	if (r == NULL || r->q == NULL || retry_after_ms == 0)
		return;
	d->now = now;
	until = now + (retry_after_ms < HOLD_CAP_MS ? retry_after_ms :
	    HOLD_CAP_MS);
	if ((b = buckets_find(&d->buckets, r->t->name, r->row.source,
	    r->q->sink)) == NULL) {
		b = buckets_get(&d->buckets, r->t->name, r->row.source,
		    r->q->sink);
		b->at = now;
		key_rate(d, b, now);
	}
	bucket_hold(b, until);
	d->rated = 1;
	r->throttled = 1;
	settle_park_key(d, r->q, b->held_until);
}

int
dispatch_key_rate(struct dispatch *d, const char *tenant, const char *source,
    uint32_t sink, uint64_t now, struct bucket_info *bi)
{
	struct bucket *b;
	int rc;

	memset(bi, 0, sizeof(*bi));
	if ((b = buckets_find(&d->buckets, tenant, source, sink)) != NULL) {
		bucket_info(b, now, bi);
		return 0;
	}
	/* A key not yet seen: a full bucket of its rate. */
	if ((rc = key_conf_rate(d, tenant, source, sink, &bi->per_second,
	    &bi->burst)) == 0)
		return -1;
	bi->tokens = bi->burst;
	bi->overridden = rc == 2;
	return 0;
}

void
dispatch_rate_changed(struct dispatch *d, const char *tenant,
    const char *source, uint32_t sink, uint64_t now)
{
	struct bucket *b;

	d->now = now;
	tenant_rescan(d, tenant);
	if ((b = buckets_find(&d->buckets, tenant, source, sink)) == NULL) {
		b = buckets_get(&d->buckets, tenant, source, sink);
		b->at = now;
	}
	key_rate(d, b, now);
	if (b->per_second <= 0 && b->held_until <= now)
		buckets_remove(&d->buckets, b);
	rated_update(d);
}

struct each_arg {
	uint64_t	 now;
	void		(*cb)(const char *, const char *, uint32_t,
			    const struct bucket_info *, void *);
	void		*arg;
};

static void
rates_cb(struct bucket *b, void *arg)
{
	struct each_arg *a = arg;
	struct bucket_info bi;

	bucket_info(b, a->now, &bi);
	a->cb(b->tenant, b->source, b->sink, &bi, a->arg);
}

void
dispatch_rates(struct dispatch *d, uint64_t now, void (*cb)(const char *,
    const char *, uint32_t, const struct bucket_info *, void *), void *arg)
{
	struct each_arg a = { now, cb, arg };

	buckets_each(&d->buckets, rates_cb, &a);
}
