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
 * Rates: dispatch_rate.c; a row whose key has no token is passed over by
 * the scan as a held source's is, unclaimed, and when the token comes a
 * rate scan reads the tenant's rows from the first one passed over to
 * its cursor (rate_scan).
 *
 * Binding: at claim time a row is bound to the sink of its source as the
 * config is now: (index, module), else the one sink with its module, else
 * it is dead-lettered as sink_gone; a row of a deleted source as
 * source_gone.  A reload binds every claimed row that has not started
 * again, before the next start (rebind_claimed).
 *
 * Settles, outcomes, parks and set-asides: dispatch_settle.c, over the
 * state that dispatch_int.h shares.
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
#include "dispatch_int.h"
#include "fair.h"
#include "ids.h"
#include "job.h"
#include "log.h"
#include "pause.h"
#include "sinkq.h"

#define CURSOR_MAX_AGE_MS	10000	/* a scan cursor starts over after */
#define HELD_PASS_MAX		256	/* held rows a tenant's scan passes */

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
static void		 row_insert(struct dispatch *, struct drow *);
static struct dtenant	*tenant_find(struct dispatch *, const char *);
static struct dtenant	*tenant_get(struct dispatch *, const char *);
static void		 tenant_window(struct dispatch *, struct dtenant *);
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
static void		 deck_requeue(struct dispatch *, struct drow *);
static void		 enqueue_row(struct dispatch *, struct drow *);
static void		 dls_dead_cb(struct dispatch *, struct drow *, void *);
static void		 rate_pass(struct dtenant *);
static int		 rate_row(const unsigned char *,
			    const struct store_row *, void *);
static void		 rate_scan(struct dispatch *, struct dtenant *);
static void		 rate_scans(struct dispatch *);

/* --- rows --- */

static uint64_t
key_hash(const unsigned char *k)
{
	return ids_fnv1a(IDS_FNV_INIT, k, STORE_ROWKEY_LEN);
}

struct drow *
dispatch_row_find(struct dispatch *d, const unsigned char *key)
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

void
dispatch_row_remove(struct dispatch *d, struct drow *r)
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
	return dispatch_row_find(d, key) != NULL;
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

void
dispatch_tenant_maybe_free(struct dispatch *d, struct dtenant *t)
{
	if (t->nkeys != 0 || t->win.rows != 0 || t->win.running != 0 ||
	    t->rate_pending)
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
	buckets_clear(&d->buckets);
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
	dispatch_rate_reconfigure(d);
	/* Decks form again at the next run, under the new limits and
	 * bound anew. */
	dispatch_decks_cancel(d, NULL);
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
	dispatch_decks_cancel(d, NULL);
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

/* The sink's policy, else its source's (dispatch.retry overlaid), else
 * dispatch.retry. */
const struct retry_policy *
dispatch_row_policy(struct dispatch *d, const struct drow *r)
{
	const struct source_conf *src = conf_source(d->conf, r->row.source);

	if (src == NULL)
		return &d->conf->dispatch.retry;
	if (r->bound < (uint32_t)src->nsinks && src->sinks[r->bound].has_retry)
		return &src->sinks[r->bound].retry;
	return &src->retry;
}

/* --- binding --- */

/*
 * Bind r to a sink of its source as the config is now.  0, or -1 with the
 * dead-letter reason in why.
 */
int
dispatch_bind(struct dispatch *d, struct drow *r, char *why, size_t len)
{
	return dispatch_bind_index(d, &r->row, &r->bound, why, len);
}

int
dispatch_bind_index(struct dispatch *d, const struct store_row *row,
    uint32_t *bound, char *why, size_t len)
{
	const struct source_conf *src = conf_source(d->conf, row->source);
	int i, found = -1, n = 0;

	if (src == NULL) {
		snprintf(why, len, "source_gone:%s", row->source);
		return -1;
	}
	if (row->sink_index < (uint32_t)src->nsinks &&
	    dispatch_sink_module(src->sinks[row->sink_index].type) ==
	    row->module) {
		*bound = row->sink_index;
		return 0;
	}
	/* Sinks reordered: the one sink with the row's module. */
	for (i = 0; i < src->nsinks; i++)
		if (dispatch_sink_module(src->sinks[i].type) == row->module) {
			found = i;
			n++;
		}
	if (n == 1) {
		*bound = found;
		return 0;
	}
	snprintf(why, len, "sink_gone:%u:%s", row->sink_index,
	    dispatch_module_name(row->module));
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
	settle_take_back(d, NULL, source, dls_dead_cb, &a);
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
		settle_set_aside(d, r);
		return;
	}
	if (breaker_parks(&r->q->br, &d->bconf, d->now, &until)) {
		settle_park(d, r, until);
		return;
	}
	sinkq_ready(&d->ring, r->q);
}

void
dispatch_claim_release(struct dispatch *d, const unsigned char *key)
{
	struct drow *r = dispatch_row_find(d, key);

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

	return dispatch_row_find(sc->d, key) == NULL;
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
	if (dispatch_row_find(d, key) != NULL)
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
	/* A row whose key has no token is passed over as a held source's
	 * is (the rate scan comes back for it when the token comes). */
	if (d->rated && !dispatch_rate_admit(d, sc->t, row)) {
		if (sc->passed++ == HELD_PASS_MAX) {
			sc->more = 1;
			return 1;
		}
		rate_pass(sc->t);
		scan_cursor(sc->t, key, row, 1);
		return 0;
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
	if (st->t->cur_set && ((st->t->win.rows == 0 && !st->t->cur_held &&
	    !st->t->rate_pending) ||
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

/* --- the rate scan --- */

/*
 * The scan passes a row over for want of its key's token: the first such
 * row since the last rate scan marks where the next one starts, just after
 * the tenant's cursor as it is before the row.
 */
static void
rate_pass(struct dtenant *t)
{
	if (t->rate_pending)
		return;
	t->rate_pending = 1;
	t->rate_from = t->cur_set;
	t->rate_due = t->cur_due;
	memcpy(t->rate_key, t->cur_key, sizeof(t->rate_key));
}

struct rscan {
	struct dispatch	*d;
	struct dtenant	*t;
	uint32_t	 passed;	/* passed over again */
	int		 first;		/* a row passed over: where it was */
	int		 full;		/* stopped by a window */
	/* the last row read (its key, due), the start at first */
	int		 at_set;
	uint64_t	 at_due;
	unsigned char	 at_key[STORE_ROWKEY_LEN];
};

/* The rate scan's row: claimed with a token, passed over without, up to
 * the tenant's cursor (the main scan goes on from there). */
static int
rate_row(const unsigned char *key, const struct store_row *row, void *arg)
{
	struct rscan *rs = arg;
	struct dispatch *d = rs->d;
	struct dtenant *t = rs->t;

	if (row == NULL || dispatch_row_find(d, key) != NULL)
		return 0;
	if (row->due > t->cur_due || (row->due == t->cur_due &&
	    memcmp(key, t->cur_key, STORE_ROWKEY_LEN) > 0))
		return 1;
	if (!window_fits(&d->win, row->body_size) ||
	    !window_fits(&t->win, row->body_size)) {
		rs->full = 1;
		return 1;
	}
	if ((d->holds != NULL && *hold_find(d, row->source) != NULL) ||
	    !dispatch_rate_admit(d, t, row)) {
		if (!rs->first) {
			rs->first = 1;
			t->rate_from = rs->at_set;
			t->rate_due = rs->at_due;
			memcpy(t->rate_key, rs->at_key, STORE_ROWKEY_LEN);
		}
		if (++rs->passed >= HELD_PASS_MAX)
			return 1;
	} else
		claim_row(d, t, key, row);
	rs->at_set = 1;
	rs->at_due = row->due;
	memcpy(rs->at_key, key, STORE_ROWKEY_LEN);
	return 0;
}

/*
 * The token the tenant's passed rows waited for has come: read them again,
 * from the first one passed over to the tenant's cursor, claiming those
 * whose key has a token now.  Where the next rate scan starts is where the
 * first row passed over again is; with none, nothing waits.  Passed over
 * HELD_PASS_MAX times, it stops: the rows behind wait for the main scan's
 * cursor to start over (CURSOR_MAX_AGE_MS).
 */
static void
rate_scan(struct dispatch *d, struct dtenant *t)
{
	struct rscan rs;

	t->rate_wake = 0;
	t->rate_retry = 0;
	if (!t->cur_set) {
		/* The main scan starts from the first row: it reads them. */
		t->rate_pending = 0;
		return;
	}
	memset(&rs, 0, sizeof(rs));
	rs.d = d;
	rs.t = t;
	rs.at_set = t->rate_from;
	rs.at_due = t->rate_due;
	memcpy(rs.at_key, t->rate_key, STORE_ROWKEY_LEN);
	if (d->ops.due_scan(d->ops.arg, t->name, d->now, t->rate_due,
	    t->rate_from ? t->rate_key : NULL, scan_want, rate_row,
	    &rs) == -1) {
		t->rate_retry = 1;	/* the store erred: the next run */
		return;
	}
	if (rs.full && !rs.first) {
		/* Not read past here: from here, when room comes. */
		t->rate_from = rs.at_set;
		t->rate_due = rs.at_due;
		memcpy(t->rate_key, rs.at_key, STORE_ROWKEY_LEN);
		t->rate_retry = 1;
	} else if (!rs.first || t->rate_wake == 0)
		t->rate_pending = 0;	/* none waits for a token */
}

/* The tenants whose token has come, or whose last rate scan a window
 * stopped. */
static void
rate_scans(struct dispatch *d)
{
	struct dtenant *t, *next;

	for (t = TAILQ_FIRST(&d->tenants); t != NULL; t = next) {
		next = TAILQ_NEXT(t, all);
		if (!t->rate_pending || (!t->rate_retry &&
		    (t->rate_wake == 0 || t->rate_wake > d->now)))
			continue;
		if (window_room(&t->win) > 0)
			rate_scan(d, t);
		else
			t->rate_retry = 1;
		dispatch_tenant_maybe_free(d, t);
	}
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
			settle_set_aside(d, r);	/* a deck given back */
			continue;
		}
		switch (breaker_may_start(&q->br, &d->bconf, d->now, &until)) {
		case BREAKER_PARK:
			settle_park(d, r, until);
			continue;
		case BREAKER_PROBE:
			r->probe = 1;
			dispatch_breaker_moved(d, q, "half_open");
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
		dispatch_decks_cancel(d, NULL);
		return;
	}
	if (q == NULL)
		return;		/* nothing waits: decks stay */
	TAILQ_FOREACH(r, &d->decks, link)
		if (r->q != q) {
			/* Taken back, they wait too: no decks at all. */
			dispatch_decks_cancel(d, NULL);
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

void
dispatch_deck_unlink(struct dispatch *d, struct drow *r)
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
	dispatch_deck_unlink(d, r);
	r->state = DROW_QUEUED;
	TAILQ_INSERT_HEAD(&r->q->queue, r, link);
	r->q->nqueued++;
	sinkq_ready(&d->ring, r->q);
}

/* Take back the decks of q (NULL: every key) that have not started. */
void
dispatch_decks_cancel(struct dispatch *d, struct dsinkq *q)
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
	dispatch_deck_unlink(d, r);
	run_begin(d, r, now);
}

/*
 * The spec's "Batching sinks": a batching key's queued rows go to their
 * destination's batcher while it has room, counted against no concurrency
 * (the claimed-row windows bound them); the key's breaker is asked first,
 * and one that opens takes its entries still waiting back (park_batched
 * in dispatch_settle.c), so a tenant whose breaker is open never has an
 * entry in a batch.
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
					settle_set_aside(d, r);
					continue;
				}
				switch (breaker_may_start(&q->br, &d->bconf,
				    d->now, &until)) {
				case BREAKER_PARK:
					settle_park(d, r, until);
					continue;
				case BREAKER_PROBE:
					r->probe = 1;
					dispatch_breaker_moved(d, q,
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
	if (d->rated)
		rate_scans(d);
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
	/* Tenants waiting for a token wake us when it comes. */
	if (d->rated && (w = dispatch_rate_next(d)) < wake)
		wake = w;
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
void
dispatch_breaker_moved(struct dispatch *d, const struct dsinkq *q,
    const char *state)
{
	if (d->ops.breaker_moved != NULL)
		d->ops.breaker_moved(d->ops.arg, q->t->name, q->source, q->sink,
		    q->module, state);
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

void
dispatch_keys(struct dispatch *d, void (*cb)(const char *, const char *,
    uint32_t, uint8_t, uint32_t, const struct breaker *, void *), void *arg)
{
	struct dtenant *t;
	struct dsinkq *q;

	TAILQ_FOREACH(t, &d->tenants, all)
		TAILQ_FOREACH(q, &t->keys, all)
			cb(t->name, q->source, q->sink, q->module, q->claimed,
			    &q->br, arg);
}
