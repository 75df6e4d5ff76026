/* SPDX-License-Identifier: ISC */
/*
 * dispatch_settle.c: how a claimed row leaves the scheduler (dispatch.c
 * claims and starts it): an attempt's outcome (dispatch_outcome: the
 * breaker, then the retry policy), the settle it asks of the glue
 * (delivered, dead, rescheduled) and the call that says it is written
 * (dispatch_settled), the breaker's park, a paused key's set-aside
 * (dispatch_pause_key) and a batcher's entries taken back.  Pure, as
 * dispatch.c is: no I/O, no clock but the now it is given.
 *
 * A row settling holds its claim (its window room, its key's count) until
 * dispatch_settled; only then is it counted (delivered, dead, retried,
 * parked, set aside) and freed.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "dispatch.h"
#include "dispatch_int.h"
#include "job.h"
#include "log.h"
#include "sinkq.h"

#define RETRY_AFTER_CAP_MS	3600000	/* a sink's Retry-After, at most 1 h */

static void	settle_begin(struct dispatch *, struct drow *, uint64_t *);
static void	settle_delivered(struct dispatch *, struct drow *);
static void	settle_dead_as(struct dispatch *, struct drow *, const char *,
		    const char *, int);
static void	settle_reschedule(struct dispatch *, struct drow *, int,
		    uint64_t *);
static void	park_queued(struct dispatch *, struct dsinkq *, uint64_t);
static void	park_batched(struct dispatch *, struct dsinkq *, uint64_t);
static void	park_cb(struct dispatch *, struct drow *, void *);
static void	set_aside_cb(struct dispatch *, struct drow *, void *);
static int	cmp_row_job(const void *, const void *);
static int	batched_of(const struct drow *, const struct dsinkq *,
		    const char *);

/* r settles; once its settle is written, counts goes up by one
 * (dispatch_settled). */
static void
settle_begin(struct dispatch *d, struct drow *r, uint64_t *counts)
{
	/* A lane head's terminal settle promotes its next member, due at
	 * its receive time: behind the tenant's cursor. */
	if (r->row.state == STORE_ROW_HEAD)
		r->t->cur_set = 0;
	if (r->state == DROW_QUEUED) {
		TAILQ_REMOVE(&r->q->queue, r, link);
		r->q->nqueued--;
	} else if (r->state == DROW_DECK)
		dispatch_deck_unlink(d, r);
	r->state = DROW_SETTLING;
	r->counts = counts;
	d->st.settling++;
}

static void
settle_delivered(struct dispatch *d, struct drow *r)
{
	struct dsettle s;

	settle_begin(d, r, &d->st.delivered);
	memset(&s, 0, sizeof(s));
	s.kind = SETTLE_DELIVERED;
	memcpy(s.key, r->key, STORE_ROWKEY_LEN);
	s.row = &r->row;	/* as claimed: saves the store a read */
	s.dr = r;
	d->ops.settle(d->ops.arg, &s);
}

void
settle_dead(struct dispatch *d, struct drow *r, const char *reason,
    const char *last_error)
{
	settle_dead_as(d, r, reason, last_error, 0);
}

void
settle_expired(struct dispatch *d, struct drow *r, const char *reason,
    const char *last_error)
{
	settle_dead_as(d, r, reason, last_error, 1);
}

static void
settle_dead_as(struct dispatch *d, struct drow *r, const char *reason,
    const char *last_error, int expired)
{
	struct dsettle s;

	settle_begin(d, r, &d->st.dead);
	memset(&s, 0, sizeof(s));
	s.kind = SETTLE_DEAD;
	memcpy(s.key, r->key, STORE_ROWKEY_LEN);
	s.row = &r->row;	/* as claimed: its replay id */
	s.reason = reason;
	s.last_error = last_error != NULL ? last_error : r->row.last_error;
	s.attempts = r->row.attempts;
	s.dead_at = d->now;
	s.source = r->row.source;
	s.module = r->row.module;
	s.expired = expired;
	s.dr = r;
	/* Its line is the glue's, once the dead letter is written. */
	d->ops.settle(d->ops.arg, &s);
}

/* Write r back due at r->row.due: a retry after a failed attempt (retry
 * 1), or a park or a pause, which made none (0). */
static void
settle_reschedule(struct dispatch *d, struct drow *r, int retry,
    uint64_t *counts)
{
	struct dsettle s;

	settle_begin(d, r, counts);
	memset(&s, 0, sizeof(s));
	s.kind = SETTLE_RESCHEDULE;
	s.retry = retry;
	memcpy(s.key, r->key, STORE_ROWKEY_LEN);
	s.row = &r->row;
	s.dr = r;
	d->ops.settle(d->ops.arg, &s);
}

/*
 * Park r until until, attempts unchanged: the spec's breaker park.  Its
 * retry horizon (retry.max_elapsed_ms from the first attempt) bounds the
 * park, and a row parked at or past its horizon is dead-lettered as
 * retry_horizon.  A row never attempted has no horizon yet (the spec counts
 * it from the first attempt, not from a park): its park is bounded by the
 * breaker's open time alone (at most breaker_max_open_ms each).
 */
void
settle_park(struct dispatch *d, struct drow *r, uint64_t until)
{
	const struct retry_policy *p = dispatch_row_policy(d, r);
	uint64_t horizon = UINT64_MAX;
	char why[64];

	if (r->row.first_attempt != 0) {
		horizon = r->row.first_attempt + p->max_elapsed_ms;
		if (d->now >= horizon) {
			snprintf(why, sizeof(why), "retry_horizon:%s",
			    dispatch_module_name(r->row.module));
			settle_expired(d, r, why, NULL);
			return;
		}
	}
	r->row.due = until < horizon ? until : horizon;
	if (r->row.state != STORE_ROW_HEAD)
		r->row.state = STORE_ROW_PARKED;
	settle_reschedule(d, r, 0, &d->st.parked);
}

static void
park_queued(struct dispatch *d, struct dsinkq *q, uint64_t until)
{
	struct drow *r;

	while ((r = TAILQ_FIRST(&q->queue)) != NULL)
		settle_park(d, r, until);
}

void
settle_park_key(struct dispatch *d, struct dsinkq *q, uint64_t until)
{
	dispatch_decks_cancel(d, q);
	park_queued(d, q, until);
	park_batched(d, q, until);
}

static int
cmp_row_job(const void *a, const void *b)
{
	uint64_t x = (*(struct drow *const *)a)->job;
	uint64_t y = (*(struct drow *const *)b)->job;

	return x < y ? -1 : x > y;
}

/*
 * The rows in a batcher of key q (or, q NULL, of every key of source) are
 * taken back from it: each still waiting in no request (its attempt never
 * went out) leaves the running list, gets its first attempt back and goes
 * to fn; those in a request in flight have started and settle on their
 * results.
 */
void
settle_take_back(struct dispatch *d, const struct dsinkq *q,
    const char *source, void (*fn)(struct dispatch *, struct drow *, void *),
    void *arg)
{
	struct drow *r, **v;
	uint64_t *jobs;
	char *taken;
	size_t i, n = 0;

	if (d->ops.batch_cancel == NULL)
		return;
	TAILQ_FOREACH(r, &d->running, link)
		if (batched_of(r, q, source))
			n++;
	if (n == 0)
		return;
	if ((v = reallocarray(NULL, n, sizeof(*v))) == NULL ||
	    (jobs = reallocarray(NULL, n, sizeof(*jobs))) == NULL ||
	    (taken = calloc(n, 1)) == NULL)
		fatal("dispatch: take back");
	i = 0;
	TAILQ_FOREACH(r, &d->running, link)
		if (batched_of(r, q, source))
			v[i++] = r;
	qsort(v, n, sizeof(*v), cmp_row_job);
	for (i = 0; i < n; i++)
		jobs[i] = v[i]->job;
	d->ops.batch_cancel(d->ops.arg, jobs, n, taken);
	for (i = 0; i < n; i++) {
		if (!taken[i])
			continue;
		r = v[i];
		/* Out of the running list and the batched count; its
		 * state stays BATCHED, which settle_begin leaves alone. */
		TAILQ_REMOVE(&d->running, r, link);
		d->st.batched--;
		if (r->probe)
			breaker_probe_lost(&r->q->br);
		r->probe = 0;
		r->row.first_attempt = r->first0;
		fn(d, r, arg);
	}
	free(taken);
	free(jobs);
	free(v);
}

static int
batched_of(const struct drow *r, const struct dsinkq *q, const char *source)
{
	if (r->state != DROW_BATCHED)
		return 0;
	if (q != NULL)
		return r->q == q;
	return source != NULL && strcmp(r->row.source, source) == 0;
}

static void
park_cb(struct dispatch *d, struct drow *r, void *arg)
{
	settle_park(d, r, *(const uint64_t *)arg);
}

/*
 * A paused key's row (daemon/dispatch/pause.h) is set aside until the resume:
 * due at STORE_DUE_PAUSED, where no due scan reads it, PARKED (a head stays
 * HEAD), attempts unchanged and no retry horizon (the operator holds it,
 * not the sink), its slot and window room given back by its settle.
 */
void
settle_set_aside(struct dispatch *d, struct drow *r)
{
	r->row.due = STORE_DUE_PAUSED;
	if (r->row.state != STORE_ROW_HEAD)
		r->row.state = STORE_ROW_PARKED;
	settle_reschedule(d, r, 0, &d->st.set_aside);
}

static void
set_aside_cb(struct dispatch *d, struct drow *r, void *arg)
{
	settle_set_aside(d, r);
}

/*
 * The key (source, sink) was paused: its claimed rows that have not
 * started are set aside now, in every tenant (decks taken back, entries
 * waiting in a batcher taken back, the queue); running attempts and
 * requests in flight settle on their results, and a retry of theirs is
 * set aside when it is claimed again.
 */
void
dispatch_pause_key(struct dispatch *d, const char *source, uint32_t sink,
    uint64_t now)
{
	struct dtenant *t;
	struct dsinkq *q;
	struct drow *r;

	d->now = now;
	TAILQ_FOREACH(t, &d->tenants, all)
		TAILQ_FOREACH(q, &t->keys, all) {
			if (q->sink != sink || strcmp(q->source, source) != 0)
				continue;
			dispatch_decks_cancel(d, q);
			if (q->batched)
				settle_take_back(d, q, NULL, set_aside_cb,
				    NULL);
			while ((r = TAILQ_FIRST(&q->queue)) != NULL)
				settle_set_aside(d, r);
		}
}

/*
 * A batching key's attempts waiting in their batcher are queued, in the
 * spec's words ("the key's queued rows ... are parked"): when its breaker
 * opens they are taken back and parked like the rows in its queue, so none
 * of them is sent while it is open (nor shares another tenant's batch).
 */
static void
park_batched(struct dispatch *d, struct dsinkq *q, uint64_t until)
{
	if (q->batched)
		settle_take_back(d, q, NULL, park_cb, &until);
}

void
dispatch_settled(struct dispatch *d, const unsigned char *key,
    enum settle_written how)
{
	struct drow *r = dispatch_row_find(d, key);
	struct dsinkq *q;
	struct dtenant *t;

	if (r == NULL || r->state != DROW_SETTLING)
		fatalx("dispatch: settle of a row that is not settling");
	q = r->q;
	t = r->t;
	dispatch_row_remove(d, r);
	window_release(&d->win, r->row.body_size);
	window_release(&t->win, r->row.body_size);
	if (q != NULL)
		q->claimed--;
	d->st.settling--;
	d->st.claimed--;
	d->st.claimed_bytes -= r->row.body_size;
	/* Counted once, when written: a failed write leaves the row as it
	 * was in the store, due again behind the cursor, and the next scan
	 * claims it (at least once); a dropped orphan was never delivered
	 * nor dead-lettered. */
	if (how == SETTLED_WRITTEN)
		(*r->counts)++;
	else if (how == SETTLED_FAILED)
		t->cur_set = 0;
	free(r);
	if (q != NULL)
		sinkq_maybe_free(q);
	dispatch_tenant_maybe_free(d, t);
}


void
dispatch_outcome(struct dispatch *d, uint64_t job, enum attempt_result res,
    uint64_t retry_after_ms, const char *detail, uint64_t now)
{
	const struct retry_policy *p;
	struct drow *r;
	struct dsinkq *q;
	uint64_t delay, horizon, floor_ms;
	char why[STORE_ERROR_MAX];
	int opened;

	TAILQ_FOREACH(r, &d->running, link)
		if (r->job == job)
			break;
	if (r == NULL)
		fatalx("dispatch: outcome of job %" PRIu64 " that is not "
		    "running", job);
	d->now = now;
	q = r->q;
	TAILQ_REMOVE(&d->running, r, link);
	if (r->deck != NULL) {
		/* The row on deck behind it waits for dispatch_deck_done. */
		r->deck->ahead = NULL;
		r->deck = NULL;
	}
	if (r->state == DROW_BATCHED) {
		/* Batched attempts hold no slot. */
		d->st.batched--;
	} else {
		window_stop(&d->win);
		window_stop(&r->t->win);
		q->running--;
		d->st.running--;
	}

	switch (res) {
	case ATTEMPT_OK:
		if (breaker_ok(&q->br, r->probe)) {
			log_info("dispatch: sink %s/%s#%u (%s): breaker closed",
			    r->t->name, q->source, q->sink,
			    dispatch_module_name(q->module));
			dispatch_breaker_moved(d, q, "closed");
		}
		settle_delivered(d, r);
		return;
	case ATTEMPT_PERMANENT:
		breaker_permanent(&q->br, r->probe);
		r->row.attempts++;
		job_dead_reason(why, sizeof(why), detail);
		snprintf(r->row.last_error, sizeof(r->row.last_error), "%s",
		    detail);
		settle_dead(d, r, why, detail);
		return;
	case ATTEMPT_UNBOUND:
		settle_dead(d, r, detail, NULL);
		return;
	case ATTEMPT_DISABLE:
		/* The sink said to stop: held as a pause holds, the attempt
		 * spent and its error kept. */
		breaker_permanent(&q->br, r->probe);
		r->row.attempts++;
		snprintf(r->row.last_error, sizeof(r->row.last_error), "%s",
		    detail);
		settle_set_aside(d, r);
		return;
	case ATTEMPT_ERROR:
	case ATTEMPT_TIMEOUT:
	case ATTEMPT_STORE:
	case ATTEMPT_PROXY:
		break;
	}

	/* A failed attempt: the breaker (never for the store's error nor the
	 * forward proxy's, which are not the sink's health, nor for a sink
	 * that asked for time with Retry-After: dispatch_throttle held its
	 * key), then the retry policy. */
	opened = 0;
	if (res == ATTEMPT_STORE || res == ATTEMPT_PROXY || r->throttled)
		breaker_permanent(&q->br, r->probe);
	else
		opened = breaker_fail(&q->br, &d->bconf, now, r->probe);
	if (opened) {
		log_info("dispatch: sink %s/%s#%u (%s): breaker open for "
		    "%" PRIu64 " ms", r->t->name, q->source, q->sink,
		    dispatch_module_name(q->module), q->br.open_ms);
		dispatch_breaker_moved(d, q, "open");
	}
	p = dispatch_row_policy(d, r);
	r->row.attempts++;
	snprintf(r->row.last_error, sizeof(r->row.last_error), "%s", detail);
	horizon = r->row.first_attempt + p->max_elapsed_ms;
	/* retry_after raises the floor, at most 1 h.  The next attempt
	 * comes no sooner than the floor (the contracts) and not past the
	 * horizon: when the floor ends past it no attempt can, and the row
	 * is given up now rather than tried before the sink asked. */
	floor_ms = retry_after_ms < RETRY_AFTER_CAP_MS ?
	    retry_after_ms : RETRY_AFTER_CAP_MS;
	if (r->row.attempts >= p->max_attempts || now >= horizon ||
	    floor_ms > horizon - now) {
		if (res == ATTEMPT_TIMEOUT)
			settle_expired(d, r, detail, detail);
		else
			settle_expired(d, r, "retries_exhausted", detail);
	} else {
		delay = dispatch_retry_delay(p, r->row.attempts);
		if (p->jitter)
			delay = (uint64_t)(delay * (0.5 + 0.5 *
			    d->ops.random(d->ops.arg)));
		if (delay < floor_ms)
			delay = floor_ms;
		/* Only the backoff is cut to the horizon: the floor fits. */
		r->row.due = now + delay;
		if (r->row.due > horizon)
			r->row.due = horizon;
		settle_reschedule(d, r, 1, &d->st.retried);
	}
	if (opened)
		settle_park_key(d, q, q->br.open_until);
}
