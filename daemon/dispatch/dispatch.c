/* SPDX-License-Identifier: ISC */
/*
 * dispatch.c: the scheduler; see dispatch.h, and the spec section by
 * section:
 *
 * What wakes it: the glue calls dispatch_run() after a commit, after
 * settles and at the time dispatch_run() last asked for: the earliest due
 * row of a tenant with window room.  A retry is a row due at now + backoff,
 * so waiting costs no slot.
 *
 * Concurrency: window.c; a claim charges the tenant's window and the
 * global one (rows and stored bytes), a start charges running attempts.
 *
 * Ordering lanes: only a lane's head is a due row (store.c keeps heads,
 * members, marks and the release of a head's lane in the transaction of
 * its terminal settle).  Here: the sweep, once per visit of a tenant,
 * before its due rows are claimed, and only while lane_members > 0.
 *
 * Per-tenant fairness: fair.c splits each scan's page of dispatch.batch
 * rows over the tenants with due rows and window room.
 *
 * Per-sink isolation: sinkq.c; the breaker of the key parks rows (a settle
 * that rewrites them due later with attempts unchanged), bounded by the
 * retry horizon.
 *
 * Binding: at claim time a row is bound to the sink of its source as the
 * config is now: (index, module), else the one sink with its module, else
 * it is dead-lettered as sink_gone; a row of a deleted source as
 * source_gone.  A reload binds every claimed row that has not started
 * again, before the next start (rebind_claimed).
 *
 * Fatal: only inconsistency of this module's own counts (fatalx).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "dispatch.h"
#include "fair.h"
#include "ids.h"
#include "job.h"
#include "log.h"
#include "pause.h"
#include "sinkq.h"

#define DISPATCH_HASH		4096	/* claimed-row buckets */
#define RETRY_AFTER_CAP_MS	3600000	/* a sink's Retry-After, at most 1 h */
#define CURSOR_MAX_AGE_MS	10000	/* a scan cursor starts over after */
#define HELD_PASS_MAX		256	/* held rows a tenant's scan passes */

enum drow_state {
	DROW_QUEUED = 1,	/* waiting for a slot in its key's queue */
	DROW_RUNNING,		/* an attempt runs */
	DROW_SETTLING,		/* its settle is queued for writing */
	DROW_BATCHED,		/* in a batcher, or in its request */
	DROW_CLAIMWAIT,		/* waiting for its hook's check-in */
	DROW_DECK,		/* on deck behind a running attempt */
};

struct dispatch {
	const struct conf	*conf;
	struct dispatch_ops	 ops;
	struct window		 win;		/* the global window */
	uint32_t		 sink_cap;	/* dispatch.sink_concurrency */
	struct breaker_conf	 bconf;
	struct drow		*rows[DISPATCH_HASH];
	struct dtenant_list	 tenants;	/* every tenant in memory */
	struct dtenant_list	 ring;		/* tenants with queued rows */
	struct drowq		 running;
	struct drowq		 decks;		/* rows on deck */
	struct dhold		*holds;		/* sources dead_letter_source
						 * holds */
	char			 fair_first[65];	/* the tenant the last
							 * page did not reach */
	int			 stopped;
	int			 rebind;	/* the config changed since the
						 * last run */
	uint64_t		 next_job;
	struct dispatch_stats	 st;
	/* during a scan */
	uint64_t		 now;
};

/* A source whose rows are not claimed: dead_letter_source runs for it. */
struct dhold {
	struct dhold		*next;
	char			 source[65];
	unsigned		 n;		/* calls holding it */
};

/* One scan's view of a tenant. */
struct scan_tenant {
	char		 name[65];
	uint64_t	 earliest;	/* its earliest due key */
	int		 marked;	/* has marked lanes */
	struct dtenant	*t;
};

struct scan {
	struct dispatch		*d;
	struct scan_tenant	*v;
	size_t			 n;
	size_t			 cap;
	/* claim in progress */
	struct dtenant		*t;
	uint32_t		 want;
	uint32_t		 got;
	uint32_t		 passed;	/* rows of held sources */
	int			 more;		/* stopped by want, not by rows */
};

static uint64_t		 key_hash(const unsigned char *);
static struct drow	*row_find(struct dispatch *, const unsigned char *);
static void		 row_insert(struct dispatch *, struct drow *);
static void		 row_remove(struct dispatch *, struct drow *);
static struct dtenant	*tenant_find(struct dispatch *, const char *);
static struct dtenant	*tenant_get(struct dispatch *, const char *);
static void		 tenant_window(struct dispatch *, struct dtenant *);
static void		 tenant_maybe_free(struct dispatch *, struct dtenant *);
static int		 scan_add(const char *, uint64_t, void *);
static int		 scan_add_marked(const char *, void *);
static struct scan_tenant *scan_slot(struct scan *, const char *);
static uint32_t		 scan_claim(struct fair_tenant *, uint32_t, void *);
static int		 scan_row(const unsigned char *, const struct store_row *,
			    void *);
static int		 scan_want(const unsigned char *, void *);
static void		 scan_cursor(struct dtenant *, const unsigned char *,
			    const struct store_row *, int);
static struct dhold	**hold_find(struct dispatch *, const char *);
static void		 claim_row(struct dispatch *, struct dtenant *,
			    const unsigned char *, const struct store_row *);
static void		 rebind_claimed(struct dispatch *);
static void		 assign(struct dispatch *);
static void		 run_begin(struct dispatch *, struct drow *, uint64_t);
static void		 assign_batched(struct dispatch *);
static void		 deck_fill(struct dispatch *);
static void		 deck_unlink(struct dispatch *, struct drow *);
static void		 deck_requeue(struct dispatch *, struct drow *);
static void		 decks_cancel(struct dispatch *, struct dsinkq *);
static void		 enqueue_row(struct dispatch *, struct drow *);
static void		 settle_delivered(struct dispatch *, struct drow *);
static void		 settle_dead(struct dispatch *, struct drow *,
			    const char *, const char *);
static void		 settle_reschedule(struct dispatch *, struct drow *, int,
			    uint64_t *);
static void		 park(struct dispatch *, struct drow *, uint64_t);
static void		 park_queued(struct dispatch *, struct dsinkq *,
			    uint64_t);
static void		 park_batched(struct dispatch *, struct dsinkq *,
			    uint64_t);
static void		 park_cb(struct dispatch *, struct drow *, void *);
static void		 set_aside(struct dispatch *, struct drow *);
static void		 set_aside_cb(struct dispatch *, struct drow *, void *);
static void		 batched_take_back(struct dispatch *,
			    const struct dsinkq *, const char *,
			    void (*)(struct dispatch *, struct drow *, void *),
			    void *);
static int		 batched_of(const struct drow *, const struct dsinkq *,
			    const char *);
static void		 dls_dead_cb(struct dispatch *, struct drow *, void *);
static void		 breaker_moved(struct dispatch *, uint8_t, const char *);
static const struct retry_policy *row_policy(struct dispatch *,
			    const struct drow *);

/* --- rows --- */

static uint64_t
key_hash(const unsigned char *k)
{
	return ids_fnv1a(IDS_FNV_INIT, k, STORE_ROWKEY_LEN);
}

static struct drow *
row_find(struct dispatch *d, const unsigned char *key)
{
	struct drow *r;

	for (r = d->rows[key_hash(key) % DISPATCH_HASH]; r != NULL;
	    r = r->hnext)
		if (memcmp(r->key, key, STORE_ROWKEY_LEN) == 0)
			return r;
	return NULL;
}

static void
row_insert(struct dispatch *d, struct drow *r)
{
	size_t b = key_hash(r->key) % DISPATCH_HASH;

	r->hnext = d->rows[b];
	d->rows[b] = r;
}

static void
row_remove(struct dispatch *d, struct drow *r)
{
	struct drow **pp;

	for (pp = &d->rows[key_hash(r->key) % DISPATCH_HASH]; *pp != NULL;
	    pp = &(*pp)->hnext)
		if (*pp == r) {
			*pp = r->hnext;
			return;
		}
	fatalx("dispatch: claimed row not in its table");
}

int
dispatch_is_claimed(struct dispatch *d, const unsigned char *key)
{
	return row_find(d, key) != NULL;
}

/* --- tenants --- */

static struct dtenant *
tenant_find(struct dispatch *d, const char *name)
{
	struct dtenant *t;

	TAILQ_FOREACH(t, &d->tenants, all)
		if (strcmp(t->name, name) == 0)
			return t;
	return NULL;
}

static struct dtenant *
tenant_get(struct dispatch *d, const char *name)
{
	struct dtenant *t;

	if ((t = tenant_find(d, name)) != NULL)
		return t;
	if ((t = calloc(1, sizeof(*t))) == NULL)
		fatal("dispatch: tenant");
	snprintf(t->name, sizeof(t->name), "%s", name);
	TAILQ_INIT(&t->keys);
	TAILQ_INIT(&t->ready);
	tenant_window(d, t);
	TAILQ_INSERT_TAIL(&d->tenants, t, all);
	d->st.tenants++;
	return t;
}

static void
tenant_window(struct dispatch *d, struct dtenant *t)
{
	const struct tenant_window *tw = conf_tenant_window(d->conf, t->name);

	window_set(&t->win, tw->max_inflight, tw->max_inflight_bytes,
	    tw->concurrency);
}

static void
tenant_maybe_free(struct dispatch *d, struct dtenant *t)
{
	if (t->nkeys != 0 || t->win.rows != 0 || t->win.running != 0)
		return;
	if (t->in_ring)
		TAILQ_REMOVE(&d->ring, t, ring);
	TAILQ_REMOVE(&d->tenants, t, all);
	d->st.tenants--;
	free(t);
}

/* --- life --- */

struct dispatch *
dispatch_new(const struct conf *conf, const struct dispatch_ops *ops)
{
	struct dispatch *d;

	if ((d = calloc(1, sizeof(*d))) == NULL)
		fatal("dispatch_new");
	d->ops = *ops;
	TAILQ_INIT(&d->tenants);
	TAILQ_INIT(&d->ring);
	TAILQ_INIT(&d->running);
	TAILQ_INIT(&d->decks);
	d->next_job = 1;
	dispatch_reconfigure(d, conf);
	return d;
}

void
dispatch_free(struct dispatch *d)
{
	struct dtenant *t;
	struct dsinkq *q;
	struct drow *r, *next;
	struct dhold *h;
	size_t i;

	if (d == NULL)
		return;
	for (i = 0; i < DISPATCH_HASH; i++)
		for (r = d->rows[i]; r != NULL; r = next) {
			next = r->hnext;
			free(r);
		}
	while ((t = TAILQ_FIRST(&d->tenants)) != NULL) {
		while ((q = TAILQ_FIRST(&t->keys)) != NULL) {
			TAILQ_REMOVE(&t->keys, q, all);
			free(q);
		}
		TAILQ_REMOVE(&d->tenants, t, all);
		free(t);
	}
	while ((h = d->holds) != NULL) {
		d->holds = h->next;
		free(h);
	}
	free(d);
}

/*
 * The spec's reconfigure: limits are rebuilt, nothing claimed or running is
 * dropped; a lowered limit only stops the next claim or start until the
 * counts fall below it.
 */
void
dispatch_reconfigure(struct dispatch *d, const struct conf *conf)
{
	struct dtenant *t;

	d->conf = conf;
	window_set(&d->win, conf->dispatch.max_inflight,
	    conf->dispatch.max_inflight_bytes, conf->dispatch.concurrency);
	d->sink_cap = conf->dispatch.sink_concurrency;
	d->bconf.failures = conf->dispatch.breaker_failures;
	d->bconf.open_ms = conf->dispatch.breaker_open_ms;
	d->bconf.max_open_ms = conf->dispatch.breaker_max_open_ms;
	TAILQ_FOREACH(t, &d->tenants, all)
		tenant_window(d, t);
	/* Decks form again at the next run, under the new limits and
	 * bound anew. */
	decks_cancel(d, NULL);
	d->rebind = 1;
}

void
dispatch_hint(struct dispatch *d, uint64_t min_due)
{
	struct dtenant *t;

	TAILQ_FOREACH(t, &d->tenants, all)
		if (t->cur_set && t->cur_due >= min_due)
			t->cur_set = 0;
}

void
dispatch_stop(struct dispatch *d)
{
	d->stopped = 1;
	decks_cancel(d, NULL);
}

/* --- policy --- */

struct drow *
dispatch_job_row(struct dispatch *d, uint64_t job)
{
	struct drow *r;

	TAILQ_FOREACH(r, &d->running, link)
		if (r->job == job)
			return r;
	return NULL;
}

static const struct retry_policy *
row_policy(struct dispatch *d, const struct drow *r)
{
	const struct source_conf *src = conf_source(d->conf, r->row.source);

	return src != NULL ? &src->retry : &d->conf->dispatch.retry;
}

/* --- binding --- */

/*
 * Bind r to a sink of its source as the config is now.  0, or -1 with the
 * dead-letter reason in why.
 */
int
dispatch_bind(struct dispatch *d, struct drow *r, char *why, size_t len)
{
	const struct source_conf *src = conf_source(d->conf, r->row.source);
	int i, found = -1, n = 0;

	if (src == NULL) {
		snprintf(why, len, "source_gone:%s", r->row.source);
		return -1;
	}
	if (r->row.sink_index < (uint32_t)src->nsinks &&
	    dispatch_sink_module(src->sinks[r->row.sink_index].type) ==
	    r->row.module) {
		r->bound = r->row.sink_index;
		return 0;
	}
	/* Sinks reordered: the one sink with the row's module. */
	for (i = 0; i < src->nsinks; i++)
		if (dispatch_sink_module(src->sinks[i].type) == r->row.module) {
			found = i;
			n++;
		}
	if (n == 1) {
		r->bound = found;
		return 0;
	}
	snprintf(why, len, "sink_gone:%u:%s", r->row.sink_index,
	    dispatch_module_name(r->row.module));
	return -1;
}

/*
 * After a reload, every claimed row that has not started (queued, decks
 * taken back, waiting for its check-in) binds again, so that no attempt
 * starts on the sink a row was bound to at claim when that index now
 * holds another sink: one that binds elsewhere moves to that key's queue
 * (the order among a key's rows is not kept: only a lane orders, and a
 * lane has one claimed row), one that cannot bind is dead-lettered.
 * Running and batched attempts started under the old config; the glue
 * binds a batcher's entries again when their request is built.
 */
static void
rebind_claimed(struct dispatch *d)
{
	struct drow *r, *next;
	struct dsinkq *q;
	char why[STORE_ERROR_MAX];
	size_t i;

	d->rebind = 0;
	for (i = 0; i < DISPATCH_HASH; i++)
		for (r = d->rows[i]; r != NULL; r = next) {
			next = r->hnext;
			if (r->state != DROW_QUEUED &&
			    r->state != DROW_CLAIMWAIT)
				continue;
			q = r->q;
			if (dispatch_bind(d, r, why, sizeof(why)) == -1) {
				if (r->state == DROW_CLAIMWAIT)
					d->st.claimwait--;
				settle_dead(d, r, why, NULL);
				continue;
			}
			if (r->bound == q->sink)
				continue;
			if (r->state == DROW_QUEUED) {
				TAILQ_REMOVE(&q->queue, r, link);
				q->nqueued--;
			}
			q->claimed--;
			r->q = sinkq_get(r->t, r->row.source, r->bound,
			    r->row.module);
			r->q->batched = q->batched;
			r->q->claimed++;
			if (r->state == DROW_QUEUED)
				enqueue_row(d, r);
			sinkq_maybe_free(q);
		}
}

/*
 * dead_letter_source's share (daemon/pipeline/pipeline_dlsource.c dead-letters
 * what is in the store): the source's claimed rows that have not started are
 * pending, so they are dead-lettered now as reason, attempts unchanged:
 * those waiting for a slot or for their hook's check-in, decks taken back
 * before their process took them, entries waiting in a batcher.  Rows of
 * a running attempt, a started deck or a request in flight are left to
 * settle, as the spec leaves "rows claimed by a running attempt".
 * Returns how many; their settles go the usual way.
 */
struct dls_arg {
	const char	*reason;
	uint64_t	 n;
};

static void
dls_dead_cb(struct dispatch *d, struct drow *r, void *arg)
{
	struct dls_arg *a = arg;

	settle_dead(d, r, a->reason, NULL);
	a->n++;
}

uint64_t
dispatch_dead_letter_queued(struct dispatch *d, const char *source,
    const char *reason, uint64_t now)
{
	struct dls_arg a = { reason, 0 };
	struct drow *r, *next;
	size_t i;

	d->now = now;
	for (r = TAILQ_FIRST(&d->decks); r != NULL; r = next) {
		next = TAILQ_NEXT(r, link);
		if (strcmp(r->row.source, source) == 0 &&
		    d->ops.deck_cancel(d->ops.arg, r) == 0)
			deck_requeue(d, r);
	}
	batched_take_back(d, NULL, source, dls_dead_cb, &a);
	for (i = 0; i < DISPATCH_HASH; i++)
		for (r = d->rows[i]; r != NULL; r = next) {
			next = r->hnext;
			if ((r->state != DROW_QUEUED &&
			    r->state != DROW_CLAIMWAIT) ||
			    strcmp(r->row.source, source) != 0)
				continue;
			if (r->state == DROW_CLAIMWAIT)
				d->st.claimwait--;
			dls_dead_cb(d, r, &a);
		}
	return a.n;
}

/* Where source's hold is (or would go) in the list. */
static struct dhold **
hold_find(struct dispatch *d, const char *source)
{
	struct dhold **hp;

	for (hp = &d->holds; *hp != NULL; hp = &(*hp)->next)
		if (strcmp((*hp)->source, source) == 0)
			break;
	return hp;
}

void
dispatch_hold_source(struct dispatch *d, const char *source)
{
	struct dhold **hp = hold_find(d, source);

	if (*hp == NULL) {
		if ((*hp = calloc(1, sizeof(**hp))) == NULL)
			fatal("dispatch: hold");
		snprintf((*hp)->source, sizeof((*hp)->source), "%s", source);
	}
	(*hp)->n++;
}

void
dispatch_release_source(struct dispatch *d, const char *source)
{
	struct dhold **hp = hold_find(d, source), *h = *hp;

	if (h == NULL)
		fatalx("dispatch: release of source %s, which is not held",
		    source);
	if (--h->n == 0) {
		*hp = h->next;
		free(h);
	}
}

/* --- settling --- */

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
		deck_unlink(d, r);
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
	d->ops.settle(d->ops.arg, &s);
}

static void
settle_dead(struct dispatch *d, struct drow *r, const char *reason,
    const char *last_error)
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
static void
park(struct dispatch *d, struct drow *r, uint64_t until)
{
	const struct retry_policy *p = row_policy(d, r);
	uint64_t horizon = UINT64_MAX;
	char why[64];

	if (r->row.first_attempt != 0) {
		horizon = r->row.first_attempt + p->max_elapsed_ms;
		if (d->now >= horizon) {
			snprintf(why, sizeof(why), "retry_horizon:%s",
			    dispatch_module_name(r->row.module));
			settle_dead(d, r, why, NULL);
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
		park(d, r, until);
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
static void
batched_take_back(struct dispatch *d, const struct dsinkq *q,
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
	park(d, r, *(const uint64_t *)arg);
}

/*
 * A paused key's row (daemon/dispatch/pause.h) is set aside until the resume:
 * due at STORE_DUE_PAUSED, where no due scan reads it, PARKED (a head stays
 * HEAD), attempts unchanged and no retry horizon (the operator holds it,
 * not the sink), its slot and window room given back by its settle.
 */
static void
set_aside(struct dispatch *d, struct drow *r)
{
	r->row.due = STORE_DUE_PAUSED;
	if (r->row.state != STORE_ROW_HEAD)
		r->row.state = STORE_ROW_PARKED;
	settle_reschedule(d, r, 0, &d->st.set_aside);
}

static void
set_aside_cb(struct dispatch *d, struct drow *r, void *arg)
{
	set_aside(d, r);
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
			decks_cancel(d, q);
			if (q->batched)
				batched_take_back(d, q, NULL, set_aside_cb,
				    NULL);
			while ((r = TAILQ_FIRST(&q->queue)) != NULL)
				set_aside(d, r);
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
		batched_take_back(d, q, NULL, park_cb, &until);
}

void
dispatch_settled(struct dispatch *d, const unsigned char *key,
    enum settle_written how)
{
	struct drow *r = row_find(d, key);
	struct dsinkq *q;
	struct dtenant *t;

	if (r == NULL || r->state != DROW_SETTLING)
		fatalx("dispatch: settle of a row that is not settling");
	q = r->q;
	t = r->t;
	row_remove(d, r);
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
	tenant_maybe_free(d, t);
}

/* --- claiming --- */

/* The scan's entry of tenant, made with earliest UINT64_MAX if new. */
static struct scan_tenant *
scan_slot(struct scan *sc, const char *tenant)
{
	size_t i;

	for (i = 0; i < sc->n; i++)
		if (strcmp(sc->v[i].name, tenant) == 0)
			return &sc->v[i];
	if (sc->n == sc->cap) {
		sc->cap = sc->cap ? sc->cap * 2 : 64;
		if ((sc->v = reallocarray(sc->v, sc->cap, sizeof(*sc->v))) ==
		    NULL)
			fatal("dispatch: scan");
	}
	memset(&sc->v[sc->n], 0, sizeof(sc->v[0]));
	snprintf(sc->v[sc->n].name, sizeof(sc->v[0].name), "%s", tenant);
	sc->v[sc->n].earliest = UINT64_MAX;
	return &sc->v[sc->n++];
}

static int
scan_add(const char *tenant, uint64_t earliest, void *arg)
{
	struct scan_tenant *s = scan_slot(arg, tenant);

	if (earliest < s->earliest)
		s->earliest = earliest;
	return 0;
}

static int
scan_add_marked(const char *tenant, void *arg)
{
	scan_slot(arg, tenant)->marked = 1;
	return 0;
}

static int
cmp_scan_tenant(const void *a, const void *b)
{
	return strcmp(((const struct scan_tenant *)a)->name,
	    ((const struct scan_tenant *)b)->name);
}

/* Take a due row: bind it, park it if its key's breaker says so, else
 * queue it for a slot. */
static void
claim_row(struct dispatch *d, struct dtenant *t, const unsigned char *key,
    const struct store_row *row)
{
	struct drow *r;
	char why[STORE_ERROR_MAX];
	int i;

	if ((r = calloc(1, sizeof(*r))) == NULL)
		fatal("dispatch: claim");
	memcpy(r->key, key, STORE_ROWKEY_LEN);
	for (i = 0; i < 8; i++)
		r->seq = (r->seq << 8) | key[i];
	r->row = *row;
	r->t = t;
	row_insert(d, r);
	window_claim(&d->win, row->body_size);
	window_claim(&t->win, row->body_size);
	d->st.claimed++;
	d->st.claimed_bytes += row->body_size;

	if (dispatch_bind(d, r, why, sizeof(why)) == -1) {
		settle_dead(d, r, why, NULL);	/* in no queue: r->q NULL */
		return;
	}
	r->q = sinkq_get(t, r->row.source, r->bound, r->row.module);
	r->q->batched = d->ops.batch_add != NULL &&
	    dispatch_module_batches(r->row.module);
	r->q->claimed++;
	if (d->ops.claim_gate != NULL) {
		switch (d->ops.claim_gate(d->ops.arg, r)) {
		case 1:
			r->state = DROW_CLAIMWAIT;
			d->st.claimwait++;
			return;
		case 2:
			settle_dead(d, r, "inline_max_bytes", "the body is "
			    "above the sink's inline_max_bytes and no "
			    "claim_check store is configured");
			return;
		}
	}
	enqueue_row(d, r);
}

/* Into its key's queue, or parked if the key's breaker says so. */
static void
enqueue_row(struct dispatch *d, struct drow *r)
{
	uint64_t until;

	r->state = DROW_QUEUED;
	/* In the queue first: park goes through settle_begin, which takes
	 * a queued row out of it. */
	sinkq_push(r->q, r);
	if (pause_is(r->q->source, r->q->sink)) {
		set_aside(d, r);
		return;
	}
	if (breaker_parks(&r->q->br, &d->bconf, d->now, &until)) {
		park(d, r, until);
		return;
	}
	sinkq_ready(&d->ring, r->q);
}

void
dispatch_claim_release(struct dispatch *d, const unsigned char *key)
{
	struct drow *r = row_find(d, key);

	if (r == NULL || r->state != DROW_CLAIMWAIT)
		return;
	d->st.claimwait--;
	enqueue_row(d, r);
}

/* A claimed row is passed over by its key alone. */
static int
scan_want(const unsigned char *key, void *arg)
{
	struct scan *sc = arg;

	return row_find(sc->d, key) == NULL;
}

static int
scan_row(const unsigned char *key, const struct store_row *row, void *arg)
{
	struct scan *sc = arg;
	struct dispatch *d = sc->d;

	if (sc->got >= sc->want) {
		sc->more = 1;
		return 1;
	}
	if (row == NULL)
		return 0;	/* a due key without its row: the store heals */
	if (row_find(d, key) != NULL)
		return 0;	/* claimed: settling or running */
	/*
	 * A held source's row stays in the store for dead_letter_source's
	 * walk.  The cursor moves past it as past a claim, so the next turn
	 * goes on after it, and a turn passes at most HELD_PASS_MAX such
	 * rows: a backlog of them costs a bounded read a turn (the scan
	 * runs again at once, "more"), and the rows of other sources behind
	 * it come within a few turns.  The call's end sends the cursors back
	 * (dispatch_hint).
	 */
	if (d->holds != NULL && *hold_find(d, row->source) != NULL) {
		if (sc->passed++ == HELD_PASS_MAX) {
			sc->more = 1;
			return 1;
		}
		scan_cursor(sc->t, key, row, 1);
		return 0;
	}
	if (!window_fits(&d->win, row->body_size) ||
	    !window_fits(&sc->t->win, row->body_size)) {
		sc->more = 1;
		return 1;
	}
	claim_row(d, sc->t, key, row);
	sc->got++;
	scan_cursor(sc->t, key, row, 0);
	return 0;
}

/* The tenant's scan cursor is now at key (held: a held source's row). */
static void
scan_cursor(struct dtenant *t, const unsigned char *key,
    const struct store_row *row, int held)
{
	t->cur_set = 1;
	t->cur_due = row->due;
	memcpy(t->cur_key, key, STORE_ROWKEY_LEN);
	t->cur_held = held;
}

static uint32_t
scan_claim(struct fair_tenant *ft, uint32_t want, void *arg)
{
	struct scan *sc = arg;
	struct scan_tenant *st = ft->arg;
	struct dispatch *d = sc->d;

	if (st->t == NULL)
		st->t = tenant_get(d, st->name);
	/* The lane sweep: once per visit, before the due rows, and only
	 * while the node holds a member at all. */
	if (!ft->reached && d->ops.lane_members(d->ops.arg) > 0 &&
	    d->ops.lane_sweep(d->ops.arg, st->name, d->now) > 0)
		st->t->cur_set = 0;	/* promoted heads are due in the past */
	sc->t = st->t;
	sc->want = want;
	sc->got = 0;
	sc->passed = 0;
	sc->more = 0;
	if (window_room(&st->t->win) == 0)
		return 0;
	/* The cursor starts over when nothing of the tenant is claimed (a
	 * scan from its first key is then cheap, unless it would read its
	 * way past a held source's rows again) and now and then, in case a
	 * row became due behind it unseen (a clock step). */
	if (st->t->cur_set && ((st->t->win.rows == 0 && !st->t->cur_held) ||
	    d->now - st->t->cur_since > CURSOR_MAX_AGE_MS))
		st->t->cur_set = 0;
	if (!st->t->cur_set)
		st->t->cur_since = d->now;
	if (d->ops.due_scan(d->ops.arg, st->name, d->now, st->t->cur_due,
	    st->t->cur_set ? st->t->cur_key : NULL, scan_want, scan_row,
	    sc) == -1)
		return 0;
	st->t->exhausted = !sc->more;
	return sc->got;
}

/* --- slots --- */

static void
assign(struct dispatch *d)
{
	struct dsinkq *q;
	struct drow *r;
	uint64_t until;

	while (!d->stopped && window_may_run(&d->win) &&
	    (q = sinkq_next(&d->ring, d->sink_cap)) != NULL) {
		r = TAILQ_FIRST(&q->queue);
		if (pause_is(q->source, q->sink)) {
			set_aside(d, r);	/* a deck given back */
			continue;
		}
		switch (breaker_may_start(&q->br, &d->bconf, d->now, &until)) {
		case BREAKER_PARK:
			park(d, r, until);
			continue;
		case BREAKER_PROBE:
			r->probe = 1;
			breaker_moved(d, q->module, "half_open");
			break;
		case BREAKER_START:
			r->probe = 0;
			break;
		}
		r->job = d->next_job++;
		if (d->ops.start(d->ops.arg, r) == -1) {
			/* No idle deliver process: it waits for one, and
			 * the next slot is still its key's. */
			if (r->probe)
				breaker_probe_lost(&q->br);
			r->probe = 0;
			sinkq_unturn(&d->ring, q);
			break;
		}
		sinkq_pop(q);
		run_begin(d, r, d->now);
	}
	deck_fill(d);
}

/* r's attempt started at now: it takes a slot of its key, its tenant's
 * window and the global one. */
static void
run_begin(struct dispatch *d, struct drow *r, uint64_t now)
{
	if (r->row.first_attempt == 0)
		r->row.first_attempt = now;
	r->state = DROW_RUNNING;
	TAILQ_INSERT_TAIL(&d->running, r, link);
	window_run(&d->win);
	window_run(&r->t->win);
	r->q->running++;
	d->st.running++;
}

/*
 * Decks (common/deck.h): a deliver process running an attempt of a key
 * holds the key's next queued row and starts it as soon as its attempt
 * ends, so the key's slot does not idle while the process waits for the
 * master's next turn.  A row on deck holds no slot: when it starts it
 * takes the slot of the attempt ahead of it, of the same key, tenant and
 * global window, so no count ever passes a limit (a lowered limit takes
 * the decks back).  Only while one key alone has queued rows, and its
 * breaker is closed: a slot another key waits for goes round-robin, and
 * a breaker that opens parks the key's decks with its queued rows.  A
 * deck that has started already cannot be taken back; it is one attempt
 * that began before the change, like those running.
 */
static int
slot_passes(uint32_t running, uint32_t cap)
{
	return cap == 0 || running <= cap;
}

static void
deck_fill(struct dispatch *d)
{
	struct dsinkq *q;
	struct drow *a, *r;

	if (d->ops.deck == NULL || TAILQ_EMPTY(&d->running))
		return;
	if (d->stopped || sinkq_waiting(&d->ring, &q) == 2) {
		decks_cancel(d, NULL);
		return;
	}
	if (q == NULL)
		return;		/* nothing waits: decks stay */
	TAILQ_FOREACH(r, &d->decks, link)
		if (r->q != q) {
			/* Taken back, they wait too: no decks at all. */
			decks_cancel(d, NULL);
			return;
		}
	/* A deck takes the slot of the attempt ahead of it: only while
	 * that slot could be given again (a lowered limit waits for the
	 * counts to fall below it). */
	if (q->br.state != BREAKER_CLOSED || !slot_passes(q->running,
	    d->sink_cap) || !slot_passes(q->t->win.running,
	    q->t->win.max_running) || !slot_passes(d->win.running,
	    d->win.max_running))
		return;
	TAILQ_FOREACH(a, &d->running, link) {
		if (q->nqueued == 0)
			break;
		if (a->q != q || a->state != DROW_RUNNING || a->deck != NULL ||
		    a->probe)
			continue;
		r = TAILQ_FIRST(&q->queue);
		r->job = d->next_job++;
		r->probe = 0;
		if (d->ops.deck(d->ops.arg, r, a) == -1)
			continue;
		sinkq_pop(q);
		r->state = DROW_DECK;
		r->ahead = a;
		a->deck = r;
		TAILQ_INSERT_TAIL(&d->decks, r, link);
		d->st.decked++;
	}
}

static void
deck_unlink(struct dispatch *d, struct drow *r)
{
	TAILQ_REMOVE(&d->decks, r, link);
	if (r->ahead != NULL)
		r->ahead->deck = NULL;
	r->ahead = NULL;
	d->st.decked--;
}

/* Taken back: first in its key's queue again, attempts unchanged. */
static void
deck_requeue(struct dispatch *d, struct drow *r)
{
	deck_unlink(d, r);
	r->state = DROW_QUEUED;
	TAILQ_INSERT_HEAD(&r->q->queue, r, link);
	r->q->nqueued++;
	sinkq_ready(&d->ring, r->q);
}

/* Take back the decks of q (NULL: every key) that have not started. */
static void
decks_cancel(struct dispatch *d, struct dsinkq *q)
{
	struct drow *r, *next;

	for (r = TAILQ_FIRST(&d->decks); r != NULL; r = next) {
		next = TAILQ_NEXT(r, link);
		if ((q == NULL || r->q == q) &&
		    d->ops.deck_cancel(d->ops.arg, r) == 0)
			deck_requeue(d, r);
	}
}

void
dispatch_deck_done(struct dispatch *d, uint64_t job, int started,
    uint64_t now)
{
	struct drow *r;

	TAILQ_FOREACH(r, &d->decks, link)
		if (r->job == job)
			break;
	if (r == NULL)
		return;		/* taken back already */
	if (!started) {
		deck_requeue(d, r);
		return;
	}
	deck_unlink(d, r);
	run_begin(d, r, now);
}

/*
 * The spec's "Batching sinks": a batching key's queued rows go to their
 * destination's batcher while it has room, counted against no concurrency
 * (the claimed-row windows bound them); the key's breaker is asked first,
 * and one that opens takes its entries still waiting back (park_batched),
 * so a tenant whose breaker is open never has an entry in a batch.
 */
static void
assign_batched(struct dispatch *d)
{
	struct dtenant *t;
	struct dsinkq *q;
	struct drow *r;
	uint64_t until;

	if (d->stopped || d->ops.batch_add == NULL)
		return;
	TAILQ_FOREACH(t, &d->tenants, all)
		TAILQ_FOREACH(q, &t->keys, all) {
			if (!q->batched)
				continue;
			while ((r = TAILQ_FIRST(&q->queue)) != NULL) {
				if (pause_is(q->source, q->sink)) {
					set_aside(d, r);
					continue;
				}
				switch (breaker_may_start(&q->br, &d->bconf,
				    d->now, &until)) {
				case BREAKER_PARK:
					park(d, r, until);
					continue;
				case BREAKER_PROBE:
					r->probe = 1;
					breaker_moved(d, q->module,
					    "half_open");
					break;
				case BREAKER_START:
					r->probe = 0;
					break;
				}
				r->job = d->next_job++;
				if (d->ops.batch_add(d->ops.arg, r) == -1) {
					if (r->probe)
						breaker_probe_lost(&q->br);
					r->probe = 0;
					break;	/* full: this key waits */
				}
				sinkq_pop(q);
				r->first0 = r->row.first_attempt;
				if (r->row.first_attempt == 0)
					r->row.first_attempt = d->now;
				r->state = DROW_BATCHED;
				TAILQ_INSERT_TAIL(&d->running, r, link);
				d->st.batched++;
			}
		}
}

/* --- the scan --- */

uint64_t
dispatch_run(struct dispatch *d, uint64_t now)
{
	struct scan sc;
	struct scan_tenant *act, *s;
	struct fair_tenant *ft;
	uint64_t wake = UINT64_MAX, w, nd;
	uint32_t page;
	size_t i, k, n = 0, start, next;

	if (d->stopped)
		return UINT64_MAX;
	d->now = now;
	if (d->rebind)
		rebind_claimed(d);
	memset(&sc, 0, sizeof(sc));
	sc.d = d;
	if (d->ops.due_tenants(d->ops.arg, scan_add, &sc) == -1) {
		free(sc.v);
		return now + 1000;	/* the store erred: try again soon */
	}
	if (d->ops.lane_members(d->ops.arg) > 0)
		(void)d->ops.marked_tenants(d->ops.arg, scan_add_marked, &sc);
	if (sc.n > 1)	/* sc.v is NULL when there are none */
		qsort(sc.v, sc.n, sizeof(sc.v[0]), cmp_scan_tenant);

	/* The tenants this scan visits, in name order: work due (or lanes to
	 * sweep), and room in their window.  A tenant at its window is
	 * skipped. */
	if ((act = calloc(sc.n + 1, sizeof(*act))) == NULL ||
	    (ft = calloc(sc.n + 1, sizeof(*ft))) == NULL)
		fatal("dispatch: scan");
	for (i = 0; i < sc.n; i++) {
		s = &sc.v[i];
		s->t = tenant_find(d, s->name);
		if (s->earliest > now && !s->marked)
			continue;
		if (s->t != NULL && window_room(&s->t->win) == 0)
			continue;
		act[n++] = *s;
	}
	for (i = 0; i < n; i++)
		ft[i].name = act[i].name;
	/* In scan order: the tenant the last page did not reach first. */
	start = fair_start(ft, n, d->fair_first);
	for (i = 0; i < n; i++) {
		k = (start + i) % n;
		ft[i].name = act[k].name;
		ft[i].arg = &act[k];
	}
	page = window_room(&d->win);
	if (page > d->conf->dispatch.batch)
		page = d->conf->dispatch.batch;
	(void)fair_page(ft, n, page, scan_claim, &sc, &next);
	d->fair_first[0] = '\0';
	if (next < n)
		snprintf(d->fair_first, sizeof(d->fair_first), "%s",
		    ft[next].name);

	/* Wake-up: a tenant not reached, or one stopped by its share, has
	 * more due now; an exhausted one at its next due row; a tenant at
	 * its window only on an outcome. */
	for (i = 0; i < n; i++) {
		s = ft[i].arg;
		if (!ft[i].reached)
			w = now;	/* the next page */
		else if (window_room(&s->t->win) == 0)
			continue;
		else if (!s->t->exhausted)
			w = now;
		else if (d->ops.due_next(d->ops.arg, s->name, now, &nd) == 1)
			w = nd;
		else
			continue;
		if (w < wake)
			wake = w;
	}
	/* Tenants with only future rows wake us at their first. */
	for (i = 0; i < sc.n; i++) {
		s = &sc.v[i];
		if (s->earliest <= now || s->earliest == UINT64_MAX)
			continue;
		if (s->t != NULL && window_room(&s->t->win) == 0)
			continue;
		if (s->earliest < wake)
			wake = s->earliest;
	}
	free(ft);
	free(act);
	free(sc.v);
	assign(d);
	assign_batched(d);
	/* A page cut short by the global window waits for an outcome; rows
	 * set aside by a pause wait for its resume. */
	if (window_room(&d->win) == 0 || wake >= STORE_DUE_PAUSED)
		wake = UINT64_MAX;
	return wake;
}

/* --- outcomes --- */

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
			breaker_moved(d, q->module, "closed");
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
	case ATTEMPT_ERROR:
	case ATTEMPT_TIMEOUT:
	case ATTEMPT_STORE:
		break;
	}

	/* A failed attempt: the breaker (never for the store's error, which
	 * is not the sink's health), then the retry policy. */
	opened = 0;
	if (res == ATTEMPT_STORE)
		breaker_permanent(&q->br, r->probe);
	else
		opened = breaker_fail(&q->br, &d->bconf, now, r->probe);
	if (opened) {
		log_info("dispatch: sink %s/%s#%u (%s): breaker open for "
		    "%" PRIu64 " ms", r->t->name, q->source, q->sink,
		    dispatch_module_name(q->module), q->br.open_ms);
		breaker_moved(d, q->module, "open");
	}
	p = row_policy(d, r);
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
			settle_dead(d, r, detail, detail);
		else
			settle_dead(d, r, "retries_exhausted", detail);
	} else {
		delay = dispatch_backoff(p->base_ms, p->max_ms,
		    r->row.attempts);
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
	if (opened) {
		decks_cancel(d, q);
		park_queued(d, q, q->br.open_until);
		park_batched(d, q, q->br.open_until);
	}
}

/* --- introspection --- */

void
dispatch_get_stats(struct dispatch *d, struct dispatch_stats *st)
{
	struct dtenant *t;
	struct dsinkq *q;
	uint32_t queued = 0, open = 0, nkeys = 0;

	TAILQ_FOREACH(t, &d->tenants, all)
		TAILQ_FOREACH(q, &t->keys, all) {
			nkeys++;
			queued += q->nqueued;
			if (q->br.state != BREAKER_CLOSED)
				open++;
		}
	*st = d->st;
	st->queued = queued;
	st->sinkqs = nkeys;
	st->breakers_open = open;
	st->window_full = window_full(&d->win);
	st->settled = d->st.delivered + d->st.dead;
}

/* A breaker of a sink of the module moved to state: told to the glue. */
static void
breaker_moved(struct dispatch *d, uint8_t module, const char *state)
{
	if (d->ops.breaker_moved != NULL)
		d->ops.breaker_moved(d->ops.arg, module, state);
}

void
dispatch_breakers(struct dispatch *d, void (*cb)(const char *, const char *,
    uint32_t, uint8_t, const struct breaker *, void *), void *arg)
{
	struct dtenant *t;
	struct dsinkq *q;

	TAILQ_FOREACH(t, &d->tenants, all)
		TAILQ_FOREACH(q, &t->keys, all)
			if (!breaker_is_idle(&q->br))
				cb(t->name, q->source, q->sink, q->module,
				    &q->br, arg);
}
