/* SPDX-License-Identifier: ISC */
/*
 * batcher.c: batches of attempts per destination; see batcher.h for the
 * contract.
 *
 * Fill: entries join the destination's open batch in arrival order.  With
 * E = max_entries and B = max_bytes (the limits of the latest add), an
 * entry of s bytes joins the open batch b only if
 *	b.n < E  and  (B == 0 or b.bytes + s <= B);
 * otherwise b closes as it is and the entry opens a new batch.  A batch
 * closes as soon as b.n == E or b.bytes >= B, so a full one is ready at
 * once.  An entry with s > B lands in an empty batch (it never fits a
 * non-empty one) and closes it at once: it travels alone.  A lowered E or B
 * only stops the open batch from growing: it is sent with what it holds,
 * nothing is dropped or split, and the next batch obeys the new limits.
 *
 * Linger: a batch that is not full is ready at
 *	ready_at = opened + linger_ms
 * where opened is the time its first entry was added (it is not reset when
 * that entry leaves), so no entry waits more than linger_ms for a request
 * to start, except behind the in-flight cap.
 *
 * Recommended linger: BATCHER_LINGER_MS = 10 ms.  Under load a batch fills
 * to its 10 (SQS) or 1000 (Pub/Sub) entries well within it and leaves
 * full, without waiting; alone, a hook waits at most 10 ms, small next to
 * a queue service's round trip (tens of ms), so latency barely moves while
 * a burst is sent in one request instead of many.
 *
 * Round-robin: the destinations are kept in one list; batcher_take sends
 * the first ready batch found from its head and moves that destination to
 * the tail, so a busy destination cannot starve the others.
 *
 * Costs: the lookups by destination are linear in the destinations, which
 * the queue limits bound; batcher_remove_jobs is one pass over the queued
 * entries, each looked up in the sorted jobs.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "batcher.h"
#include "log.h"

/* Queued entries of one tenant at one destination. */
struct btenant {
	char			 name[65];
	uint32_t		 queued;
	TAILQ_ENTRY(btenant)	 link;
};

TAILQ_HEAD(btenant_list, btenant);
TAILQ_HEAD(batchq, batcher_req);

struct bdest {
	char			*name;
	struct batcher_limits	 lim;		/* of the latest add */
	struct batchq		 queued;	/* closed ones first, then the
						 * open one */
	struct batchq		 flight;	/* requests in flight */
	struct batcher_req		*open;		/* the one filling, or NULL */
	uint32_t		 nqueued;	/* entries in queued */
	uint32_t		 in_flight;	/* batches in flight */
	struct btenant_list	 tenants;	/* with entries queued here */
	TAILQ_ENTRY(bdest)	 link;		/* round-robin order */
};

TAILQ_HEAD(bdest_list, bdest);

struct batcher {
	struct bdest_list	 dests;
	uint64_t		 last_id;
};

static void		 tenant_copy(char *, const char *);
static struct bdest	*bdest_find(const struct batcher *, const char *);
static struct bdest	*bdest_get(struct batcher *, const char *);
static void		 bdest_maybe_free(struct batcher *, struct bdest *);
static void		 bdest_free(struct bdest *);
static int		 bdest_may_send(const struct bdest *);
static struct btenant	*btenant_find(const struct bdest *, const char *);
static void		 btenant_inc(struct bdest *, const char *);
static void		 btenant_dec(struct bdest *, const char *);
static uint32_t		 lim_entries(const struct batcher_limits *);
static int		 batch_full(const struct batcher_req *,
			    const struct batcher_limits *);
static uint64_t		 batch_ready_at(const struct batcher_req *,
			    const struct batcher_limits *);
static struct batcher_req	*batch_open(struct batcher *, struct bdest *,
			    uint64_t);
static void		 batch_append(struct batcher_req *, uint32_t);
static void		 entry_leave(struct bdest *, struct batcher_req *,
			    const struct batcher_entry *);
static int		 batch_free_empty(struct bdest *, struct batcher_req *);
static void		 batch_drop_entry(struct bdest *, struct batcher_req *,
			    uint32_t);
static int		 job_index(const uint64_t *, size_t, uint64_t);
static void		 batch_free(struct batcher_req *);

static void
tenant_copy(char *dst, const char *src)
{
	size_t len = strnlen(src, 64);

	memcpy(dst, src, len);
	dst[len] = '\0';
}

static struct bdest *
bdest_find(const struct batcher *bt, const char *dest)
{
	struct bdest *d;

	TAILQ_FOREACH(d, &bt->dests, link)
		if (strcmp(d->name, dest) == 0)
			return d;
	return NULL;
}

static struct bdest *
bdest_get(struct batcher *bt, const char *dest)
{
	struct bdest *d;

	if ((d = bdest_find(bt, dest)) != NULL)
		return d;
	if ((d = calloc(1, sizeof(*d))) == NULL ||
	    (d->name = strdup(dest)) == NULL)
		fatal("batcher: new destination");
	TAILQ_INIT(&d->queued);
	TAILQ_INIT(&d->flight);
	TAILQ_INIT(&d->tenants);
	TAILQ_INSERT_TAIL(&bt->dests, d, link);
	return d;
}

/* A destination holding nothing is forgotten: memory stays bounded by
 * what is queued or in flight; its limits come again with the next add. */
static void
bdest_maybe_free(struct batcher *bt, struct bdest *d)
{
	if (!TAILQ_EMPTY(&d->queued) || !TAILQ_EMPTY(&d->flight))
		return;
	if (d->nqueued != 0 || d->in_flight != 0 || d->open != NULL ||
	    !TAILQ_EMPTY(&d->tenants))
		fatalx("batcher: %s: empty with %u queued, %u in flight",
		    d->name, d->nqueued, d->in_flight);
	TAILQ_REMOVE(&bt->dests, d, link);
	bdest_free(d);
}

static void
bdest_free(struct bdest *d)
{
	struct btenant *t;
	struct batcher_req *b;

	while ((b = TAILQ_FIRST(&d->queued)) != NULL) {
		TAILQ_REMOVE(&d->queued, b, link);
		batch_free(b);
	}
	while ((b = TAILQ_FIRST(&d->flight)) != NULL) {
		TAILQ_REMOVE(&d->flight, b, link);
		batch_free(b);
	}
	while ((t = TAILQ_FIRST(&d->tenants)) != NULL) {
		TAILQ_REMOVE(&d->tenants, t, link);
		free(t);
	}
	free(d->name);
	free(d);
}

static int
bdest_may_send(const struct bdest *d)
{
	return d->lim.max_in_flight == 0 || d->in_flight < d->lim.max_in_flight;
}

static struct btenant *
btenant_find(const struct bdest *d, const char *tenant)
{
	struct btenant *t;

	TAILQ_FOREACH(t, &d->tenants, link)
		if (strcmp(t->name, tenant) == 0)
			return t;
	return NULL;
}

static void
btenant_inc(struct bdest *d, const char *tenant)
{
	struct btenant *t;

	if ((t = btenant_find(d, tenant)) == NULL) {
		if ((t = calloc(1, sizeof(*t))) == NULL)
			fatal("batcher: new tenant");
		tenant_copy(t->name, tenant);
		TAILQ_INSERT_TAIL(&d->tenants, t, link);
	}
	t->queued++;
}

static void
btenant_dec(struct bdest *d, const char *tenant)
{
	struct btenant *t;

	if ((t = btenant_find(d, tenant)) == NULL || t->queued == 0)
		fatalx("batcher: %s: no entry of tenant %s queued", d->name,
		    tenant);
	if (--t->queued == 0) {
		TAILQ_REMOVE(&d->tenants, t, link);
		free(t);
	}
}

static uint32_t
lim_entries(const struct batcher_limits *lim)
{
	return lim->max_entries == 0 ? 1 : lim->max_entries;
}

/* Full by the destination's current limits (a lowered limit may make a
 * batch full that was not when it was last added to). */
static int
batch_full(const struct batcher_req *b, const struct batcher_limits *lim)
{
	return b->closed || b->n >= lim_entries(lim) ||
	    (lim->max_bytes != 0 && b->bytes >= lim->max_bytes);
}

/* When a batch may be sent: now if full, else opened + linger_ms
 * (saturating: a huge linger means never, not a wrapped early time). */
static uint64_t
batch_ready_at(const struct batcher_req *b, const struct batcher_limits *lim)
{
	if (batch_full(b, lim))
		return 0;
	if (lim->linger_ms > UINT64_MAX - b->opened)
		return UINT64_MAX;
	return b->opened + lim->linger_ms;
}

static struct batcher_req *
batch_open(struct batcher *bt, struct bdest *d, uint64_t now)
{
	struct batcher_req *b;

	if ((b = calloc(1, sizeof(*b))) == NULL)
		fatal("batcher: new batch");
	b->id = ++bt->last_id;
	b->dest = d->name;
	b->d = d;
	b->opened = now;
	TAILQ_INSERT_TAIL(&d->queued, b, link);
	d->open = b;
	return b;
}

/* Room for one more entry: the array doubles, but never past max_entries
 * while under it, so a batch holds at most what is queued in it (times
 * two) and a lone Pub/Sub hook does not cost 1000 entries. */
static void
batch_append(struct batcher_req *b, uint32_t max)
{
	struct batcher_entry *e;
	uint32_t cap;

	if (b->n < b->cap)
		return;
	cap = b->cap == 0 ? 4 : b->cap * 2;
	if (b->n < max && cap > max)
		cap = max;
	if ((e = reallocarray(b->entries, cap, sizeof(*e))) == NULL)
		fatal("batcher: batch entries");
	b->entries = e;
	b->cap = cap;
}

/* A queued entry leaves the queue counts and its batch's bytes (the
 * caller takes it out of the array). */
static void
entry_leave(struct bdest *d, struct batcher_req *b,
    const struct batcher_entry *e)
{
	if (b->in_flight)
		fatalx("batcher: batch %llu: drop from a batch in flight",
		    (unsigned long long)b->id);
	btenant_dec(d, e->tenant);
	d->nqueued--;
	b->bytes -= e->bytes;
}

/* A queued batch left empty is freed: 1 if it was. */
static int
batch_free_empty(struct bdest *d, struct batcher_req *b)
{
	if (b->n != 0)
		return 0;
	TAILQ_REMOVE(&d->queued, b, link);
	if (d->open == b)
		d->open = NULL;
	batch_free(b);
	return 1;
}

/* A queued entry leaves its batch and the queue counts; a batch left
 * empty is freed. */
static void
batch_drop_entry(struct bdest *d, struct batcher_req *b, uint32_t i)
{
	struct batcher_entry *e = &b->entries[i];

	entry_leave(d, b, e);
	b->n--;
	memmove(e, e + 1, (b->n - i) * sizeof(*e));
	(void)batch_free_empty(d, b);
}

static void
batch_free(struct batcher_req *b)
{
	free(b->entries);
	free(b);
}

struct batcher *
batcher_new(void)
{
	struct batcher *bt;

	if ((bt = calloc(1, sizeof(*bt))) == NULL)
		fatal("batcher_new");
	TAILQ_INIT(&bt->dests);
	return bt;
}

void
batcher_free(struct batcher *bt)
{
	struct bdest *d;

	if (bt == NULL)
		return;
	while ((d = TAILQ_FIRST(&bt->dests)) != NULL) {
		TAILQ_REMOVE(&bt->dests, d, link);
		bdest_free(d);
	}
	free(bt);
}

int
batcher_add(struct batcher *bt, const char *dest,
    const struct batcher_limits *lim, const char *tenant, uint64_t job,
    uint64_t bytes, uint64_t now, uint64_t deadline, void *arg)
{
	struct bdest *d;
	struct btenant *t;
	struct batcher_req *b;
	struct batcher_entry *e;
	uint32_t max = lim_entries(lim);
	char name[65];

	tenant_copy(name, tenant);
	/* The bounds count entries waiting, not in flight. */
	if ((d = bdest_find(bt, dest)) != NULL) {
		d->lim = *lim;
		if (lim->max_queued != 0 && d->nqueued >= lim->max_queued)
			return -1;
		if (lim->max_queued_tenant != 0 &&
		    (t = btenant_find(d, name)) != NULL &&
		    t->queued >= lim->max_queued_tenant)
			return -1;
	} else {
		d = bdest_get(bt, dest);
		d->lim = *lim;
	}

	/* Close the open batch if this entry does not fit in it (see the
	 * fill arithmetic above); then open one if none is. */
	if ((b = d->open) != NULL && (batch_full(b, lim) ||
	    (lim->max_bytes != 0 && b->bytes + bytes > lim->max_bytes))) {
		b->closed = 1;
		d->open = NULL;
	}
	if ((b = d->open) == NULL)
		b = batch_open(bt, d, now);

	batch_append(b, max);
	e = &b->entries[b->n++];
	memset(e, 0, sizeof(*e));
	e->job = job;
	memcpy(e->tenant, name, sizeof(e->tenant));
	e->bytes = bytes;
	e->added = now;
	e->deadline = deadline;
	e->arg = arg;
	b->bytes += bytes;
	d->nqueued++;
	btenant_inc(d, name);

	if (batch_full(b, lim)) {
		b->closed = 1;
		d->open = NULL;
	}
	return 0;
}

struct batcher_req *
batcher_take(struct batcher *bt, uint64_t now)
{
	struct bdest *d;
	struct batcher_req *b;
	uint32_t i;

	TAILQ_FOREACH(d, &bt->dests, link) {
		/* Closed batches precede the open one: the head is the
		 * first to be ready. */
		if ((b = TAILQ_FIRST(&d->queued)) == NULL ||
		    !bdest_may_send(d) || batch_ready_at(b, &d->lim) > now)
			continue;
		TAILQ_REMOVE(&d->queued, b, link);
		if (d->open == b)
			d->open = NULL;
		b->closed = 1;
		b->in_flight = 1;
		TAILQ_INSERT_TAIL(&d->flight, b, link);
		d->in_flight++;
		for (i = 0; i < b->n; i++)
			btenant_dec(d, b->entries[i].tenant);
		d->nqueued -= b->n;
		TAILQ_REMOVE(&bt->dests, d, link);
		TAILQ_INSERT_TAIL(&bt->dests, d, link);
		return b;
	}
	return NULL;
}

uint64_t
batcher_next_ready(const struct batcher *bt, uint64_t now)
{
	const struct bdest *d;
	const struct batcher_req *b;
	uint64_t at, next = UINT64_MAX;

	TAILQ_FOREACH(d, &bt->dests, link) {
		if ((b = TAILQ_FIRST(&d->queued)) == NULL || !bdest_may_send(d))
			continue;
		if ((at = batch_ready_at(b, &d->lim)) <= now)
			return now;
		if (at < next)
			next = at;
	}
	return next;
}

void
batcher_done(struct batcher *bt, struct batcher_req *b)
{
	struct bdest *d = b->d;

	if (!b->in_flight || d == NULL || d->in_flight == 0)
		fatalx("batcher: done of batch %llu not in flight",
		    (unsigned long long)b->id);
	TAILQ_REMOVE(&d->flight, b, link);
	d->in_flight--;
	batch_free(b);
	bdest_maybe_free(bt, d);
}

uint64_t
batcher_expire(struct batcher *bt, uint64_t now,
    void (*cb)(struct batcher_entry *, void *), void *arg)
{
	struct bdest *d, *dnext;
	struct batcher_req *b, *bnext;
	struct batcher_entry *e;
	uint64_t next = UINT64_MAX;
	uint32_t i;

	for (d = TAILQ_FIRST(&bt->dests); d != NULL; d = dnext) {
		dnext = TAILQ_NEXT(d, link);
		/* In flight: marked done, left in the request, whose
		 * result for it the caller then ignores. */
		TAILQ_FOREACH(b, &d->flight, link) {
			for (i = 0; i < b->n; i++) {
				e = &b->entries[i];
				if (e->done)
					continue;
				if (e->deadline <= now) {
					e->done = 1;
					cb(e, arg);
				} else if (e->deadline < next)
					next = e->deadline;
			}
		}
		/* Queued: leaves its batch, which may be left empty. */
		for (b = TAILQ_FIRST(&d->queued); b != NULL; b = bnext) {
			bnext = TAILQ_NEXT(b, link);
			for (i = 0; i < b->n; ) {
				e = &b->entries[i];
				if (e->deadline > now) {
					if (e->deadline < next)
						next = e->deadline;
					i++;
					continue;
				}
				e->done = 1;
				cb(e, arg);
				if (b->n == 1) {
					batch_drop_entry(d, b, i);
					break;
				}
				batch_drop_entry(d, b, i);
			}
		}
		bdest_maybe_free(bt, d);
	}
	return next;
}

int
batcher_all_done(const struct batcher_req *b)
{
	uint32_t i;

	for (i = 0; i < b->n; i++)
		if (!b->entries[i].done)
			return 0;
	return 1;
}

/* The index of job in the ascending jobs, or -1. */
static int
job_index(const uint64_t *jobs, size_t n, uint64_t job)
{
	size_t lo = 0, hi = n, mid;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if (jobs[mid] == job)
			return (int)mid;
		if (jobs[mid] < job)
			lo = mid + 1;
		else
			hi = mid;
	}
	return -1;
}

uint32_t
batcher_remove_jobs(struct batcher *bt, const uint64_t *jobs, size_t n,
    char *taken)
{
	struct bdest *d, *dnext;
	struct batcher_req *b, *bnext;
	uint32_t i, k, dropped = 0;
	int at;

	if (n == 0)
		return 0;
	for (d = TAILQ_FIRST(&bt->dests); d != NULL; d = dnext) {
		dnext = TAILQ_NEXT(d, link);
		for (b = TAILQ_FIRST(&d->queued); b != NULL; b = bnext) {
			bnext = TAILQ_NEXT(b, link);
			/* Compacted in place, in arrival order. */
			for (i = k = 0; i < b->n; i++) {
				if ((at = job_index(jobs, n,
				    b->entries[i].job)) != -1) {
					entry_leave(d, b, &b->entries[i]);
					if (taken != NULL)
						taken[at] = 1;
					dropped++;
					continue;
				}
				if (k != i)
					b->entries[k] = b->entries[i];
				k++;
			}
			b->n = k;
			(void)batch_free_empty(d, b);
		}
		bdest_maybe_free(bt, d);
	}
	return dropped;
}

uint32_t
batcher_queued(const struct batcher *bt, const char *dest,
    const char *tenant)
{
	const struct bdest *d;
	const struct btenant *t;
	uint32_t n = 0;
	char name[65];

	if (tenant != NULL)
		tenant_copy(name, tenant);
	TAILQ_FOREACH(d, &bt->dests, link) {
		if (dest != NULL && strcmp(d->name, dest) != 0)
			continue;
		if (tenant == NULL)
			n += d->nqueued;
		else if ((t = btenant_find(d, name)) != NULL)
			n += t->queued;
	}
	return n;
}

uint32_t
batcher_in_flight(const struct batcher *bt, const char *dest)
{
	const struct bdest *d;
	uint32_t n = 0;

	TAILQ_FOREACH(d, &bt->dests, link)
		if (dest == NULL || strcmp(d->name, dest) == 0)
			n += d->in_flight;
	return n;
}
