/* SPDX-License-Identifier: ISC */
/*
 * fakestore.c: the in-memory store and deliver pool of the dispatch tests;
 * see fakestore.h.  Aborts (via check's ck_abort) on misuse.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "fakestore.h"
#include "store_rec.h"

struct fakestore fake;

static int	 has_due_key(const struct frow *);
static int	 same_lane(const struct frow *, const struct frow *);
static struct frow *lane_next(const struct frow *);
static void	 lane_release(struct frow *);
static void	 bump(struct fcount *, size_t *, const char *);
static int	 cmp_due(const void *, const void *);
static int	 cmp_name(const void *, const void *);
static int	 f_due_tenants(void *, int (*)(const char *, uint64_t, void *),
		    void *);
static int	 f_due_scan(void *, const char *, uint64_t, uint64_t,
		    const unsigned char *, int (*)(const unsigned char *,
		    void *), int (*)(const unsigned char *,
		    const struct store_row *, void *), void *);
static int	 f_due_next(void *, const char *, uint64_t, uint64_t *);
static uint64_t	 f_lane_members(void *);
static int	 f_marked_tenants(void *, int (*)(const char *, void *),
		    void *);
static int	 f_lane_sweep(void *, const char *, uint64_t);
static int	 f_start(void *, struct drow *);
static void	 f_settle(void *, const struct dsettle *);
static double	 f_random(void *);

static int
has_due_key(const struct frow *f)
{
	return f->live && !f->dead && (f->row.state == STORE_ROW_DUE ||
	    f->row.state == STORE_ROW_HEAD || f->row.state == STORE_ROW_PARKED);
}

static int
same_lane(const struct frow *a, const struct frow *b)
{
	return strcmp(a->row.tenant, b->row.tenant) == 0 &&
	    strcmp(a->row.source, b->row.source) == 0 &&
	    a->row.sink_index == b->row.sink_index &&
	    a->row.lane_hash == b->row.lane_hash;
}

/* The lowest-seq member of f's lane. */
static struct frow *
lane_next(const struct frow *f)
{
	struct frow *best = NULL, *g;
	size_t i;

	for (i = 0; i < fake.nrows; i++) {
		g = fake.rows[i];
		if (!g->live || g->dead || g->row.state != STORE_ROW_MEMBER ||
		    !same_lane(f, g))
			continue;
		if (best == NULL || g->seq < best->seq)
			best = g;
	}
	return best;
}

/* A head's terminal transition: the next member becomes the head. */
static void
lane_release(struct frow *f)
{
	struct frow *n;

	if (f->row.state != STORE_ROW_HEAD)
		return;
	if ((n = lane_next(f)) != NULL)
		n->row.state = STORE_ROW_HEAD;
}

static void
bump(struct fcount *c, size_t *n, const char *tenant)
{
	size_t i;

	for (i = 0; i < *n; i++)
		if (strcmp(c[i].tenant, tenant) == 0) {
			c[i].n++;
			return;
		}
	ck_assert_uint_lt(*n, 128);
	snprintf(c[*n].tenant, sizeof(c[*n].tenant), "%s", tenant);
	c[(*n)++].n = 1;
}

unsigned
fake_count(const struct fcount *c, size_t n, const char *tenant)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (strcmp(c[i].tenant, tenant) == 0)
			return c[i].n;
	return 0;
}

static int
cmp_due(const void *a, const void *b)
{
	const struct frow *x = *(struct frow *const *)a;
	const struct frow *y = *(struct frow *const *)b;

	if (x->row.due != y->row.due)
		return x->row.due < y->row.due ? -1 : 1;
	return memcmp(x->key, y->key, STORE_ROWKEY_LEN);
}

static int
cmp_name(const void *a, const void *b)
{
	return strcmp(((const struct fcount *)a)->tenant,
	    ((const struct fcount *)b)->tenant);
}

/* --- the ops --- */

static int
f_due_tenants(void *arg, int (*cb)(const char *, uint64_t, void *),
    void *cbarg)
{
	struct fcount *v;
	uint64_t *early;
	size_t i, j, n = 0;

	v = calloc(fake.nrows + 1, sizeof(*v));
	early = calloc(fake.nrows + 1, sizeof(*early));
	ck_assert(v != NULL && early != NULL);
	for (i = 0; i < fake.nrows; i++) {
		if (!has_due_key(fake.rows[i]))
			continue;
		for (j = 0; j < n; j++)
			if (strcmp(v[j].tenant, fake.rows[i]->row.tenant) == 0)
				break;
		if (j == n) {
			snprintf(v[n].tenant, sizeof(v[n].tenant), "%s",
			    fake.rows[i]->row.tenant);
			v[n++].n = 0;
		}
		v[j].n++;
	}
	qsort(v, n, sizeof(*v), cmp_name);
	for (j = 0; j < n; j++) {
		early[j] = UINT64_MAX;
		for (i = 0; i < fake.nrows; i++)
			if (has_due_key(fake.rows[i]) &&
			    strcmp(v[j].tenant, fake.rows[i]->row.tenant) == 0 &&
			    fake.rows[i]->row.due < early[j])
				early[j] = fake.rows[i]->row.due;
	}
	for (j = 0; j < n; j++)
		if (cb(v[j].tenant, early[j], cbarg) != 0)
			break;
	free(v);
	free(early);
	return 0;
}

static int
f_due_scan(void *arg, const char *tenant, uint64_t now, uint64_t after_due,
    const unsigned char *after_key, int (*want)(const unsigned char *, void *),
    int (*cb)(const unsigned char *, const struct store_row *, void *),
    void *cbarg)
{
	struct frow **v;
	struct store_row row;
	size_t i, n = 0;

	bump(fake.scans, &fake.nscans, tenant);
	v = calloc(fake.nrows + 1, sizeof(*v));
	ck_assert(v != NULL);
	for (i = 0; i < fake.nrows; i++)
		if (has_due_key(fake.rows[i]) && fake.rows[i]->row.due <= now &&
		    strcmp(fake.rows[i]->row.tenant, tenant) == 0)
			v[n++] = fake.rows[i];
	qsort(v, n, sizeof(*v), cmp_due);
	for (i = 0; i < n; i++) {
		/* The store's order: due, then row key. */
		if (after_key != NULL && (v[i]->row.due < after_due ||
		    (v[i]->row.due == after_due && memcmp(v[i]->key,
		    after_key, STORE_ROWKEY_LEN) <= 0)))
			continue;
		if (want != NULL && !want(v[i]->key, cbarg))
			continue;
		row = v[i]->row;	/* a copy, as a cursor read gives */
		if (cb(v[i]->key, &row, cbarg) != 0)
			break;
	}
	free(v);
	return 0;
}

static int
f_due_next(void *arg, const char *tenant, uint64_t t, uint64_t *due)
{
	uint64_t best = UINT64_MAX;
	size_t i;

	for (i = 0; i < fake.nrows; i++)
		if (has_due_key(fake.rows[i]) && fake.rows[i]->row.due > t &&
		    strcmp(fake.rows[i]->row.tenant, tenant) == 0 &&
		    fake.rows[i]->row.due < best)
			best = fake.rows[i]->row.due;
	if (best == UINT64_MAX)
		return 0;
	*due = best;
	return 1;
}

static uint64_t
f_lane_members(void *arg)
{
	uint64_t n = 0;
	size_t i;

	for (i = 0; i < fake.nrows; i++)
		if (fake.rows[i]->live && !fake.rows[i]->dead &&
		    fake.rows[i]->row.state == STORE_ROW_MEMBER)
			n++;
	return n;
}

static int
f_marked_tenants(void *arg, int (*cb)(const char *, void *), void *cbarg)
{
	struct fcount v[128];
	size_t i, j, n = 0;

	fake.nmarked++;
	for (i = 0; i < fake.nrows; i++) {
		if (!fake.rows[i]->live || !fake.rows[i]->marked)
			continue;
		for (j = 0; j < n; j++)
			if (strcmp(v[j].tenant, fake.rows[i]->row.tenant) == 0)
				break;
		if (j == n && n < 128)
			snprintf(v[n++].tenant, sizeof(v[0].tenant), "%s",
			    fake.rows[i]->row.tenant);
	}
	qsort(v, n, sizeof(v[0]), cmp_name);
	for (j = 0; j < n; j++)
		if (cb(v[j].tenant, cbarg) != 0)
			break;
	return 0;
}

static int
f_lane_sweep(void *arg, const char *tenant, uint64_t now)
{
	struct frow *f, *g, *n;
	size_t i, j;
	int heads, promoted = 0;

	fake.nsweeps++;
	bump(fake.sweeps, &fake.nsweepst, tenant);
	for (i = 0; i < fake.nrows; i++) {
		f = fake.rows[i];
		if (!f->live || f->dead || f->row.state != STORE_ROW_MEMBER ||
		    strcmp(f->row.tenant, tenant) != 0)
			continue;
		heads = 0;
		for (j = 0; j < fake.nrows; j++) {
			g = fake.rows[j];
			if (g->live && !g->dead &&
			    g->row.state == STORE_ROW_HEAD && same_lane(f, g))
				heads++;
		}
		if (heads == 0 && (n = lane_next(f)) != NULL) {
			n->row.state = STORE_ROW_HEAD;
			promoted++;
		}
	}
	for (i = 0; i < fake.nrows; i++)
		if (strcmp(fake.rows[i]->row.tenant, tenant) == 0)
			fake.rows[i]->marked = 0;
	return promoted;
}

static struct fjob *job_add(uint64_t, const unsigned char *, uint64_t,
		    const struct store_row *, uint32_t);

static int
f_start(void *arg, struct drow *r)
{
	struct fjob *j;
	size_t k;

	if (fake.idle == 0)
		return -1;
	ck_assert(fake.idle > 0);
	for (k = 0; k < fake.njobs; k++)
		ck_assert_msg(!fake.jobs[k]->running ||
		    memcmp(fake.jobs[k]->key, r->key, STORE_ROWKEY_LEN) != 0,
		    "seq %llu started twice", (unsigned long long)r->seq);
	j = job_add(r->job, r->key, r->seq, &r->row, r->bound);
	j->probe = r->probe;
	/* As the glue does when it reads the hook (pipeline_store_hook). */
	memset(r->trace_id, FAKE_TRACE(r->seq), TRACE_ID_LEN);
	return 0;
}

/* A running job in a process that was idle. */
static struct fjob *
job_add(uint64_t job, const unsigned char *key, uint64_t seq,
    const struct store_row *row, uint32_t bound)
{
	struct fjob *j;

	if ((j = calloc(1, sizeof(*j))) == NULL ||
	    (fake.jobs = reallocarray(fake.jobs, fake.njobs + 1,
	    sizeof(*fake.jobs))) == NULL)
		ck_abort_msg("fake: out of memory");
	j->job = job;
	memcpy(j->key, key, STORE_ROWKEY_LEN);
	j->seq = seq;
	j->row = *row;
	j->bound = bound;
	j->running = 1;
	fake.jobs[fake.njobs++] = j;
	fake.idle--;
	return j;
}

static struct fdeck *
deck_find(uint64_t job)
{
	size_t k;

	for (k = fake.ndecks; k > 0; k--)
		if (fake.decks[k - 1]->job == job)
			return fake.decks[k - 1];
	return NULL;
}

static int
f_deck(void *arg, struct drow *r, struct drow *ahead)
{
	struct fdeck *dk;
	size_t k;

	if (!fake.decks_on)
		return -1;
	for (k = 0; k < fake.ndecks; k++) {
		ck_assert_msg(fake.decks[k]->state != FDECK_OFFERED ||
		    fake.decks[k]->ahead != ahead->job,
		    "a second deck behind job %llu",
		    (unsigned long long)ahead->job);
		ck_assert_msg(fake.decks[k]->state != FDECK_OFFERED ||
		    memcmp(fake.decks[k]->key, r->key, STORE_ROWKEY_LEN) != 0,
		    "seq %llu on deck twice", (unsigned long long)r->seq);
	}
	for (k = 0; k < fake.njobs; k++)
		ck_assert_msg(!fake.jobs[k]->running ||
		    memcmp(fake.jobs[k]->key, r->key, STORE_ROWKEY_LEN) != 0,
		    "seq %llu on deck while it runs",
		    (unsigned long long)r->seq);
	if ((dk = calloc(1, sizeof(*dk))) == NULL ||
	    (fake.decks = reallocarray(fake.decks, fake.ndecks + 1,
	    sizeof(*fake.decks))) == NULL)
		ck_abort_msg("fake: out of memory");
	dk->job = r->job;
	dk->ahead = ahead->job;
	memcpy(dk->key, r->key, STORE_ROWKEY_LEN);
	dk->seq = r->seq;
	dk->row = r->row;
	dk->bound = r->bound;
	dk->state = FDECK_OFFERED;
	fake.decks[fake.ndecks++] = dk;
	return 0;
}

static int
f_deck_cancel(void *arg, struct drow *r)
{
	struct fdeck *dk = deck_find(r->job);

	ck_assert_ptr_nonnull(dk);
	if (dk->state == FDECK_STARTED)
		return -1;
	ck_assert_int_eq(dk->state, FDECK_OFFERED);
	dk->state = FDECK_CANCELLED;
	return 0;
}

static void
f_settle(void *arg, const struct dsettle *s)
{
	struct fsettle *c;
	struct frow *f;

	if ((f = fake_find(s->key)) == NULL)
		ck_abort_msg("fake: settle of an unknown row");
	if ((c = calloc(1, sizeof(*c))) == NULL ||
	    (fake.settles = reallocarray(fake.settles, fake.nsettles + 1,
	    sizeof(*fake.settles))) == NULL)
		ck_abort_msg("fake: out of memory");
	c->kind = s->kind;
	memcpy(c->key, s->key, STORE_ROWKEY_LEN);
	c->seq = f->seq;
	if (s->kind == SETTLE_RESCHEDULE) {
		ck_assert_ptr_nonnull(s->row);
		c->row = *s->row;
	}
	if (s->reason != NULL)
		snprintf(c->reason, sizeof(c->reason), "%s", s->reason);
	if (s->last_error != NULL)
		snprintf(c->last_error, sizeof(c->last_error), "%s",
		    s->last_error);
	c->attempts = s->attempts;
	c->dead_at = s->dead_at;
	c->retry = s->retry;
	c->expired = s->expired;
	ck_assert_ptr_nonnull(s->dr);
	ck_assert(memcmp(s->dr->key, s->key, STORE_ROWKEY_LEN) == 0);
	c->job = s->dr->job;
	memcpy(c->trace_id, s->dr->trace_id, TRACE_ID_LEN);
	fake.settles[fake.nsettles++] = c;
}

static double
f_random(void *arg)
{
	return fake.rnd;
}

/* --- the tests' side --- */

void
fake_init(void)
{
	memset(&fake, 0, sizeof(fake));
	fake.next_seq = 1;
	fake.idle = 1000;
	fake.rnd = 0.5;
}

void
fake_free(void)
{
	size_t i;

	for (i = 0; i < fake.nrows; i++)
		free(fake.rows[i]);
	for (i = 0; i < fake.njobs; i++)
		free(fake.jobs[i]);
	for (i = 0; i < fake.nsettles; i++)
		free(fake.settles[i]);
	for (i = 0; i < fake.ndecks; i++)
		free(fake.decks[i]);
	free(fake.decks);
	free(fake.rows);
	free(fake.jobs);
	free(fake.settles);
	memset(&fake, 0, sizeof(fake));
}

void
fake_ops(struct dispatch_ops *ops)
{
	memset(ops, 0, sizeof(*ops));
	ops->arg = &fake;
	ops->due_tenants = f_due_tenants;
	ops->due_scan = f_due_scan;
	ops->due_next = f_due_next;
	ops->lane_members = f_lane_members;
	ops->marked_tenants = f_marked_tenants;
	ops->lane_sweep = f_lane_sweep;
	ops->start = f_start;
	ops->deck = f_deck;
	ops->deck_cancel = f_deck_cancel;
	ops->settle = f_settle;
	ops->random = f_random;
}

static struct frow *
add(const char *tenant, const char *source, uint32_t sink, uint8_t module,
    uint64_t due, uint64_t body_size)
{
	struct frow *f;

	if ((f = calloc(1, sizeof(*f))) == NULL ||
	    (fake.rows = reallocarray(fake.rows, fake.nrows + 1,
	    sizeof(*fake.rows))) == NULL)
		ck_abort_msg("fake: out of memory");
	f->live = 1;
	f->seq = fake.next_seq++;
	store_key_row(f->key, f->seq, sink);
	snprintf(f->row.tenant, sizeof(f->row.tenant), "%s", tenant);
	snprintf(f->row.source, sizeof(f->row.source), "%s", source);
	f->row.sink_index = sink;
	f->row.module = module;
	f->row.due = due;
	f->row.state = STORE_ROW_DUE;
	f->row.body_size = body_size;
	fake.rows[fake.nrows++] = f;
	return f;
}

struct frow *
fake_add(const char *tenant, const char *source, uint32_t sink,
    uint8_t module, uint64_t due, uint64_t body_size)
{
	return add(tenant, source, sink, module, due, body_size);
}

struct frow *
fake_add_member(const char *tenant, const char *source, uint32_t sink,
    uint8_t module, uint64_t lane_hash, uint64_t due)
{
	struct frow *f = add(tenant, source, sink, module, due, 100);

	f->row.state = STORE_ROW_MEMBER;
	f->row.lane_hash = lane_hash;
	f->marked = 1;
	return f;
}

struct frow *
fake_find(const unsigned char *key)
{
	size_t i;

	for (i = 0; i < fake.nrows; i++)
		if (memcmp(fake.rows[i]->key, key, STORE_ROWKEY_LEN) == 0)
			return fake.rows[i];
	return NULL;
}

size_t
fake_flush(struct dispatch *d)
{
	struct fsettle *s;
	struct frow *f;
	size_t i, first = fake.flushed, n;
	enum settle_written *how;
	int failed = fake.fail_flush;

	fake.fail_flush = 0;
	if ((how = calloc(fake.nsettles - first + 1, sizeof(*how))) == NULL)
		ck_abort_msg("fake: out of memory");
	/* One batch: every write, then the claims end. */
	for (i = first; !failed && i < fake.nsettles; i++) {
		s = fake.settles[i];
		f = fake_find(s->key);
		ck_assert_ptr_nonnull(f);
		ck_assert_msg(f->live && !f->dead, "settle of seq %llu that "
		    "is gone", (unsigned long long)f->seq);
		how[i - first] = SETTLED_WRITTEN;
		switch (s->kind) {
		case SETTLE_DELIVERED:
			lane_release(f);
			f->live = 0;
			break;
		case SETTLE_RESCHEDULE:
			f->row = s->row;
			break;
		case SETTLE_DEAD:
			lane_release(f);
			if (f->orphan) {
				f->live = 0;
				how[i - first] = SETTLED_DROPPED;
				break;
			}
			f->dead = 1;
			f->dead_attempts = s->attempts;
			f->dead_at = s->dead_at;
			snprintf(f->reason, sizeof(f->reason), "%s",
			    s->reason);
			break;
		default:
			ck_abort_msg("fake: settle kind %d", s->kind);
		}
	}
	n = fake.nsettles;
	fake.flushed = n;
	for (i = first; i < n; i++)
		dispatch_settled(d, fake.settles[i]->key, how[i - first]);
	free(how);
	return n - first;
}

struct fjob *
fake_running_job(size_t i)
{
	size_t k;

	for (k = 0; k < fake.njobs; k++)
		if (fake.jobs[k]->running && i-- == 0)
			return fake.jobs[k];
	return NULL;
}

size_t
fake_running(const char *tenant, const char *source)
{
	size_t k, n = 0;

	for (k = 0; k < fake.njobs; k++)
		if (fake.jobs[k]->running &&
		    (tenant == NULL ||
		    strcmp(fake.jobs[k]->row.tenant, tenant) == 0) &&
		    (source == NULL ||
		    strcmp(fake.jobs[k]->row.source, source) == 0))
			n++;
	return n;
}

size_t
fake_claimed(struct dispatch *d, const char *tenant)
{
	size_t i, n = 0;

	for (i = 0; i < fake.nrows; i++)
		if (fake.rows[i]->live && (tenant == NULL ||
		    strcmp(fake.rows[i]->row.tenant, tenant) == 0) &&
		    dispatch_is_claimed(d, fake.rows[i]->key))
			n++;
	return n;
}

void
fake_finish(struct dispatch *d, struct fjob *j, enum attempt_result res,
    uint64_t retry_after_ms, const char *detail, uint64_t now)
{
	struct fdeck *dk;

	ck_assert_ptr_nonnull(j);
	ck_assert(j->running);
	j->running = 0;
	fake.idle++;
	if ((dk = fake_deck_of(j)) != NULL && fake.deck_take)
		dk->state = FDECK_STARTED;
	dispatch_outcome(d, j->job, res, retry_after_ms, detail, now);
	if (dk == NULL || dk->state == FDECK_CANCELLED)
		return;
	if (dk->state == FDECK_OFFERED) {
		dk->state = FDECK_CANCELLED;
		dispatch_deck_done(d, dk->job, 0, now);
		return;
	}
	(void)job_add(dk->job, dk->key, dk->seq, &dk->row, dk->bound);
	dispatch_deck_done(d, dk->job, 1, now);
}

size_t
fake_decked(const char *tenant)
{
	size_t k, n = 0;

	for (k = 0; k < fake.ndecks; k++)
		if (fake.decks[k]->state == FDECK_OFFERED &&
		    (tenant == NULL ||
		    strcmp(fake.decks[k]->row.tenant, tenant) == 0))
			n++;
	return n;
}

struct fdeck *
fake_deck_of(const struct fjob *j)
{
	size_t k;

	for (k = 0; k < fake.ndecks; k++)
		if (fake.decks[k]->ahead == j->job &&
		    fake.decks[k]->state == FDECK_OFFERED)
			return fake.decks[k];
	return NULL;
}

size_t
fake_finish_all(struct dispatch *d, enum attempt_result res,
    const char *detail, uint64_t now)
{
	struct fjob *j;
	size_t n = 0;

	while ((j = fake_running_job(0)) != NULL) {
		fake_finish(d, j, res, 0, detail, now);
		n++;
	}
	return n;
}
