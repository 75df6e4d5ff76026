/* SPDX-License-Identifier: ISC */
/*
 * check_batcher.c: the batches of batched sinks (daemon/dispatch/batcher.c)
 * with a fake clock: fill by entries and bytes, linger, the in-flight cap and
 * round-robin, the queue bounds, per-entry timeouts, removal, limits
 * changed between calls, and that everything is freed.
 */
#include "config.h"

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "batcher.h"

#define TIMEOUT		10
#define MAXN		16
#define FAR		1000000	/* a deadline nothing reaches */

static const struct batcher_limits base = {
	.max_entries = 10,
	.max_bytes = 1000,
	.linger_ms = 10,
	.max_queued = 100,
	.max_queued_tenant = 100,
	.max_in_flight = 0,
};

static uint64_t	 expired[MAXN];
static size_t	 nexpired;

static void	 on_expire(struct batcher_entry *, void *);
static int	 remove_one(struct batcher *, uint64_t);
static void	 add_ok(struct batcher *, const char *,
		    const struct batcher_limits *, const char *, uint64_t,
		    uint64_t, uint64_t, uint64_t);
static Suite	*batcher_suite(void);

static void
on_expire(struct batcher_entry *e, void *arg)
{
	int *calls = arg;

	ck_assert(e->done);
	ck_assert_uint_lt(nexpired, MAXN);
	expired[nexpired++] = e->job;
	(*calls)++;
}

/* 1 job's queued entry dropped, 0 it has none. */
static int
remove_one(struct batcher *bt, uint64_t job)
{
	return batcher_remove_jobs(bt, &job, 1, NULL) == 1;
}

static void
add_ok(struct batcher *bt, const char *dest,
    const struct batcher_limits *lim, const char *tenant, uint64_t job,
    uint64_t bytes, uint64_t now, uint64_t deadline)
{
	ck_assert_int_eq(batcher_add(bt, dest, lim, tenant, job, bytes, now,
	    deadline, NULL), 0);
}

/*
 * Fill: entries of the given sizes added at 0 to one destination; the
 * batches ready at once (their entry counts, in order), then those ready
 * when the linger ends.
 */
static const struct {
	const char	*name;
	uint32_t	 max_entries;
	uint64_t	 max_bytes;
	uint64_t	 sizes[MAXN];
	size_t		 nsizes;
	uint32_t	 now[MAXN];	/* 0-terminated */
	uint32_t	 later[MAXN];	/* 0-terminated */
} fills[] = {
	{ "full by entries", 3, 1000, { 1, 1, 1, 1, 1, 1, 1 }, 7,
	    { 3, 3 }, { 1 } },
	{ "exactly full by entries", 2, 0, { 5, 5, 5, 5 }, 4,
	    { 2, 2 }, { 0 } },
	{ "full by bytes: next does not fit", 10, 100, { 40, 40, 40 }, 3,
	    { 2 }, { 1 } },
	{ "full by bytes: exactly", 10, 100, { 50, 50, 10 }, 3,
	    { 2 }, { 1 } },
	{ "oversized alone, between", 10, 100, { 30, 500, 30 }, 3,
	    { 1, 1 }, { 1 } },
	{ "oversized alone, first", 10, 100, { 500, 10, 10 }, 3,
	    { 1 }, { 2 } },
	{ "oversized twice", 10, 100, { 500, 500 }, 2,
	    { 1, 1 }, { 0 } },
	{ "max_entries 0 is 1", 0, 0, { 1, 1 }, 2,
	    { 1, 1 }, { 0 } },
	{ "no byte cap", 4, 0, { 1000000, 1000000, 1000000 }, 3,
	    { 0 }, { 3 } },
};

START_TEST(test_fill)
{
	struct batcher_limits lim = base;
	struct batcher *bt = batcher_new();
	struct batcher_req *b, *taken[MAXN];
	size_t i, j, k, ntaken = 0;
	uint64_t sum;

	lim.max_entries = fills[_i].max_entries;
	lim.max_bytes = fills[_i].max_bytes;
	for (i = 0; i < fills[_i].nsizes; i++)
		add_ok(bt, "sqs|q", &lim, "t", i + 1, fills[_i].sizes[i], 0,
		    FAR);
	ck_assert_uint_eq(batcher_queued(bt, NULL, NULL), fills[_i].nsizes);

	/* Ready at once, in arrival order. */
	k = 1;
	for (i = 0; fills[_i].now[i] != 0; i++) {
		b = batcher_take(bt, 0);
		ck_assert_msg(b != NULL, "%s: batch %zu not ready",
		    fills[_i].name, i);
		ck_assert_uint_eq(b->n, fills[_i].now[i]);
		taken[ntaken++] = b;
	}
	ck_assert_msg(batcher_take(bt, 9) == NULL, "%s: too many ready",
	    fills[_i].name);
	/* The rest when the linger ends. */
	for (i = 0; fills[_i].later[i] != 0; i++) {
		b = batcher_take(bt, 10);
		ck_assert_msg(b != NULL, "%s: later batch %zu not ready",
		    fills[_i].name, i);
		ck_assert_uint_eq(b->n, fills[_i].later[i]);
		taken[ntaken++] = b;
	}
	ck_assert(batcher_take(bt, 1000) == NULL);
	ck_assert_uint_eq(batcher_queued(bt, NULL, NULL), 0);
	ck_assert_uint_eq(batcher_in_flight(bt, "sqs|q"), ntaken);

	/* Every entry once, in order; bytes summed. */
	for (i = 0; i < ntaken; i++) {
		b = taken[i];
		ck_assert(b->in_flight);
		ck_assert_str_eq(b->dest, "sqs|q");
		sum = 0;
		for (j = 0; j < b->n; j++) {
			ck_assert_uint_eq(b->entries[j].job, k);
			ck_assert_uint_eq(b->entries[j].bytes,
			    fills[_i].sizes[k - 1]);
			sum += b->entries[j].bytes;
			k++;
		}
		ck_assert_uint_eq(b->bytes, sum);
		if (lim.max_bytes != 0 && b->bytes > lim.max_bytes)
			ck_assert_uint_eq(b->n, 1);
	}
	ck_assert_uint_eq(k - 1, fills[_i].nsizes);
	for (i = 0; i < ntaken; i++)
		batcher_done(bt, taken[i]);
	ck_assert_uint_eq(batcher_in_flight(bt, NULL), 0);
	batcher_free(bt);
}
END_TEST

/*
 * Linger: first entry at 100, a second at 105, linger 10: the batch is
 * ready at 110, counted from its first entry.
 */
static const struct {
	uint64_t	at;
	int		ready;
	uint64_t	next;		/* batcher_next_ready(at) before take */
} lingers[] = {
	{ 105, 0, 110 },
	{ 109, 0, 110 },
	{ 110, 1, 110 },
	{ 111, 1, 111 },
	{ 5000, 1, 5000 },
};

START_TEST(test_linger)
{
	struct batcher *bt = batcher_new();
	struct batcher_req *b;

	ck_assert_uint_eq(batcher_next_ready(bt, 0), UINT64_MAX);
	add_ok(bt, "sqs|q", &base, "t", 1, 10, 100, FAR);
	add_ok(bt, "sqs|q", &base, "t", 2, 10, 105, FAR);
	ck_assert_uint_eq(batcher_next_ready(bt, lingers[_i].at),
	    lingers[_i].next);
	b = batcher_take(bt, lingers[_i].at);
	if (!lingers[_i].ready) {
		ck_assert(b == NULL);
		b = batcher_take(bt, lingers[_i].next);
	}
	ck_assert(b != NULL);
	ck_assert_uint_eq(b->n, 2);
	ck_assert_uint_eq(b->entries[0].added, 100);
	ck_assert_uint_eq(b->entries[1].added, 105);
	ck_assert_uint_eq(batcher_next_ready(bt, lingers[_i].at), UINT64_MAX);
	batcher_done(bt, b);
	batcher_free(bt);
}
END_TEST

/* next_ready: the earliest linger across destinations; a huge linger
 * does not wrap around. */
START_TEST(test_next_ready)
{
	struct batcher_limits lim = base, slow = base;
	struct batcher *bt = batcher_new();

	slow.linger_ms = UINT64_MAX - 5;
	add_ok(bt, "a", &slow, "t", 1, 1, 100, FAR);
	ck_assert_uint_eq(batcher_next_ready(bt, 100), UINT64_MAX);
	ck_assert(batcher_take(bt, UINT64_MAX - 1) == NULL);
	lim.linger_ms = 50;
	add_ok(bt, "b", &lim, "t", 2, 1, 20, FAR);
	lim.linger_ms = 30;
	add_ok(bt, "c", &lim, "t", 3, 1, 25, FAR);
	ck_assert_uint_eq(batcher_next_ready(bt, 30), 55);
	ck_assert_uint_eq(batcher_next_ready(bt, 60), 60);
	batcher_free(bt);
}
END_TEST

/* max_in_flight caps one destination while another proceeds. */
START_TEST(test_in_flight_cap)
{
	struct batcher_limits capped = base;
	struct batcher *bt = batcher_new();
	struct batcher_req *a1, *a2, *b1, *b;
	uint64_t j;

	capped.max_entries = 2;
	capped.max_in_flight = 1;
	for (j = 1; j <= 6; j++)
		add_ok(bt, "sqs|a", &capped, "t", j, 1, 0, FAR);
	for (j = 11; j <= 12; j++)
		add_ok(bt, "sqs|b", &capped, "t", j, 1, 0, FAR);

	a1 = batcher_take(bt, 0);
	ck_assert(a1 != NULL);
	ck_assert_str_eq(a1->dest, "sqs|a");
	b1 = batcher_take(bt, 0);
	ck_assert(b1 != NULL);
	ck_assert_str_eq(b1->dest, "sqs|b");
	/* a has two full batches waiting, but its one request flies. */
	ck_assert(batcher_take(bt, 0) == NULL);
	ck_assert_uint_eq(batcher_next_ready(bt, 0), UINT64_MAX);
	ck_assert_uint_eq(batcher_in_flight(bt, "sqs|a"), 1);
	ck_assert_uint_eq(batcher_in_flight(bt, "sqs|b"), 1);
	ck_assert_uint_eq(batcher_in_flight(bt, NULL), 2);
	ck_assert_uint_eq(batcher_queued(bt, "sqs|a", NULL), 4);

	/* b proceeds on its own. */
	batcher_done(bt, b1);
	add_ok(bt, "sqs|b", &capped, "t", 13, 1, 0, FAR);
	add_ok(bt, "sqs|b", &capped, "t", 14, 1, 0, FAR);
	b = batcher_take(bt, 0);
	ck_assert(b != NULL);
	ck_assert_str_eq(b->dest, "sqs|b");
	ck_assert_uint_eq(b->entries[0].job, 13);
	batcher_done(bt, b);

	batcher_done(bt, a1);
	ck_assert_uint_eq(batcher_next_ready(bt, 0), 0);
	a2 = batcher_take(bt, 0);
	ck_assert(a2 != NULL);
	ck_assert_uint_eq(a2->entries[0].job, 3);
	ck_assert(batcher_take(bt, 0) == NULL);
	batcher_done(bt, a2);
	b = batcher_take(bt, 0);
	ck_assert(b != NULL);
	ck_assert_uint_eq(b->entries[0].job, 5);
	batcher_done(bt, b);
	ck_assert(batcher_take(bt, 1000) == NULL);
	batcher_free(bt);
}
END_TEST

/*
 * The in-flight cap (dispatch.sink_concurrency) from above: with full
 * batches of two tenants waiting, exactly max_in_flight requests are taken,
 * never one more; each batcher_done lets exactly one more go; a cap lowered
 * while requests fly lets none go until fewer than it fly.
 */
static const uint32_t caps[] = { 1, 2, 3, 8 };

START_TEST(test_in_flight_cap_above)
{
	struct batcher_limits lim = base;
	struct batcher *bt = batcher_new();
	struct batcher_req *fly[MAXN], *b;
	uint32_t cap = caps[_i], n = 0, k;
	uint64_t j;

	lim.max_entries = 2;
	lim.max_in_flight = cap;
	for (j = 1; j <= 4 * cap + 4; j++)
		add_ok(bt, "sqs|a", &lim, j % 2 ? "t1" : "t2", j, 1, 0, FAR);
	while ((b = batcher_take(bt, 0)) != NULL) {
		ck_assert_uint_lt(n, cap);
		fly[n++] = b;
	}
	ck_assert_uint_eq(n, cap);
	ck_assert_uint_eq(batcher_in_flight(bt, "sqs|a"), cap);
	ck_assert_uint_eq(batcher_next_ready(bt, 0), UINT64_MAX);
	for (k = 0; k < cap && k < 2; k++) {
		batcher_done(bt, fly[k]);
		ck_assert_ptr_nonnull(fly[k] = batcher_take(bt, 0));
		ck_assert(batcher_take(bt, 0) == NULL);
		ck_assert_uint_eq(batcher_in_flight(bt, "sqs|a"), cap);
	}
	/* Lowered to 1, with the next entry. */
	lim.max_in_flight = 1;
	add_ok(bt, "sqs|a", &lim, "t1", 1000, 1, 0, FAR);
	for (k = 0; k + 1 < cap; k++) {
		batcher_done(bt, fly[k]);
		ck_assert(batcher_take(bt, 0) == NULL);
	}
	batcher_done(bt, fly[cap - 1]);
	ck_assert_uint_eq(batcher_in_flight(bt, "sqs|a"), 0);
	ck_assert_ptr_nonnull(b = batcher_take(bt, 0));
	ck_assert(batcher_take(bt, 0) == NULL);
	ck_assert_uint_eq(batcher_in_flight(bt, "sqs|a"), 1);
	batcher_free(bt);
}
END_TEST

/* Ready batches of several destinations are taken in turn. */
START_TEST(test_round_robin)
{
	static const char *dests[] = { "a", "b", "c" };
	static const char *want = "abcabcaa";
	struct batcher_limits lim = base;
	struct batcher *bt = batcher_new();
	struct batcher_req *b, *taken[MAXN];
	size_t i, n = 0;
	uint64_t job = 0;
	int k;

	lim.max_entries = 1;
	for (i = 0; i < 3; i++)
		for (k = 0; k < (i == 0 ? 4 : 2); k++)
			add_ok(bt, dests[i], &lim, "t", ++job, 1, 0, FAR);
	while ((b = batcher_take(bt, 0)) != NULL) {
		ck_assert_uint_lt(n, strlen(want));
		ck_assert_int_eq(b->dest[0], want[n]);
		taken[n++] = b;
	}
	ck_assert_uint_eq(n, strlen(want));
	for (i = 0; i < n; i++)
		batcher_done(bt, taken[i]);
	batcher_free(bt);
}
END_TEST

/* The queue bound and the per-tenant bound refuse, and admit again once
 * entries leave the queue (take) or the batcher (done). */
START_TEST(test_queue_bounds)
{
	struct batcher_limits lim = base;
	struct batcher *bt = batcher_new();
	struct batcher_req *b, *e;

	lim.max_entries = 2;
	lim.max_queued = 4;
	lim.max_queued_tenant = 2;
	lim.max_in_flight = 1;

	/* Per tenant: a third of t1 is refused, t2 still gets in. */
	add_ok(bt, "d", &lim, "t1", 1, 1, 0, FAR);
	add_ok(bt, "d", &lim, "t1", 2, 1, 0, FAR);
	ck_assert_int_eq(batcher_add(bt, "d", &lim, "t1", 3, 1, 0, FAR, NULL),
	    -1);
	add_ok(bt, "d", &lim, "t2", 4, 1, 0, FAR);
	/* The bound is per destination: t1 has room elsewhere. */
	add_ok(bt, "e", &lim, "t1", 5, 1, 0, FAR);
	add_ok(bt, "d", &lim, "t3", 6, 1, 0, FAR);
	/* The destination's queue is full. */
	ck_assert_uint_eq(batcher_queued(bt, "d", NULL), 4);
	ck_assert_int_eq(batcher_add(bt, "d", &lim, "t4", 7, 1, 0, FAR, NULL),
	    -1);
	ck_assert_uint_eq(batcher_queued(bt, "d", "t1"), 2);
	ck_assert_uint_eq(batcher_queued(bt, NULL, "t1"), 3);
	ck_assert_uint_eq(batcher_queued(bt, "d", "t4"), 0);
	ck_assert_uint_eq(batcher_queued(bt, NULL, NULL), 5);

	/* A take leaves room: t1's two fly, t1 may queue two more. */
	b = batcher_take(bt, 0);
	ck_assert(b != NULL);
	ck_assert_str_eq(b->dest, "d");
	ck_assert_uint_eq(batcher_queued(bt, "d", NULL), 2);
	ck_assert_uint_eq(batcher_queued(bt, "d", "t1"), 0);
	add_ok(bt, "d", &lim, "t1", 3, 1, 0, FAR);
	add_ok(bt, "d", &lim, "t4", 7, 1, 0, FAR);
	ck_assert_int_eq(batcher_add(bt, "d", &lim, "t1", 8, 1, 0, FAR, NULL),
	    -1);
	/* Capped in flight: nothing leaves d until done; e lingers out. */
	ck_assert(batcher_take(bt, 0) == NULL);
	e = batcher_take(bt, 10);
	ck_assert(e != NULL);
	ck_assert_str_eq(e->dest, "e");
	ck_assert(batcher_take(bt, 100) == NULL);
	batcher_done(bt, e);
	batcher_done(bt, b);
	b = batcher_take(bt, 0);
	ck_assert(b != NULL);
	ck_assert_uint_eq(b->entries[0].job, 4);
	add_ok(bt, "d", &lim, "t1", 8, 1, 0, FAR);
	ck_assert_uint_eq(batcher_queued(bt, "d", NULL), 3);
	batcher_done(bt, b);
	batcher_free(bt);
}
END_TEST

/* Tenants share a batch; destinations never do. */
START_TEST(test_sharing)
{
	static const char *tenants[] = { "acme", "globex", "initech", "acme" };
	struct batcher_limits lim = base;
	struct batcher *bt = batcher_new();
	struct batcher_req *b, *c;
	char longname[100];
	size_t i;
	int one = 0, two = 0;

	lim.max_entries = 4;
	for (i = 0; i < 4; i++) {
		add_ok(bt, "pubsub|p/t|", &lim, tenants[i], i + 1, 1, 0, FAR);
		add_ok(bt, "pubsub|p/t|k", &lim, tenants[i], i + 11, 1, 0,
		    FAR);
	}
	b = batcher_take(bt, 0);
	c = batcher_take(bt, 0);
	ck_assert(b != NULL && c != NULL);
	ck_assert(batcher_take(bt, 100) == NULL);
	ck_assert_uint_ne(b->id, c->id);
	for (i = 0; i < 4; i++) {
		ck_assert_str_eq(b->entries[i].tenant, tenants[i]);
		ck_assert_str_eq(c->entries[i].tenant, tenants[i]);
		if (strcmp(b->dest, "pubsub|p/t|") == 0)
			one += b->entries[i].job < 10;
		else
			two += b->entries[i].job > 10;
		if (strcmp(c->dest, "pubsub|p/t|") == 0)
			one += c->entries[i].job < 10;
		else
			two += c->entries[i].job > 10;
	}
	ck_assert_int_eq(one, 4);
	ck_assert_int_eq(two, 4);
	batcher_done(bt, b);
	batcher_done(bt, c);

	/* A long tenant name is cut, and still counted as one. */
	memset(longname, 'x', sizeof(longname) - 1);
	longname[sizeof(longname) - 1] = '\0';
	add_ok(bt, "d", &lim, longname, 1, 1, 0, FAR);
	ck_assert_uint_eq(batcher_queued(bt, "d", longname), 1);
	b = batcher_take(bt, 10);
	ck_assert_uint_eq(strlen(b->entries[0].tenant), 64);
	batcher_done(bt, b);
	batcher_free(bt);
}
END_TEST

/* Queued entries time out on their own and leave their batch. */
START_TEST(test_expire_queued)
{
	struct batcher_limits lim = base;
	struct batcher *bt = batcher_new();
	struct batcher_req *b;
	int calls = 0;

	lim.linger_ms = 1000;
	nexpired = 0;
	add_ok(bt, "d", &lim, "t1", 1, 10, 0, 50);
	add_ok(bt, "d", &lim, "t2", 2, 20, 0, 30);
	add_ok(bt, "d", &lim, "t1", 3, 30, 0, 70);
	add_ok(bt, "e", &lim, "t1", 4, 40, 0, 30);

	ck_assert_uint_eq(batcher_expire(bt, 29, on_expire, &calls), 30);
	ck_assert_int_eq(calls, 0);
	ck_assert_uint_eq(batcher_expire(bt, 30, on_expire, &calls), 50);
	ck_assert_int_eq(calls, 2);
	ck_assert_uint_eq(expired[0], 2);
	ck_assert_uint_eq(expired[1], 4);
	ck_assert_uint_eq(batcher_queued(bt, "d", NULL), 2);
	ck_assert_uint_eq(batcher_queued(bt, NULL, "t2"), 0);
	ck_assert_uint_eq(batcher_queued(bt, "e", NULL), 0);
	ck_assert_uint_eq(batcher_next_ready(bt, 30), 1000);

	/* What is left still goes, without the timed-out one. */
	b = batcher_take(bt, 1000);
	ck_assert(b != NULL);
	ck_assert_uint_eq(b->n, 2);
	ck_assert_uint_eq(b->bytes, 40);
	ck_assert_uint_eq(b->entries[0].job, 1);
	ck_assert_uint_eq(b->entries[1].job, 3);
	ck_assert(!b->entries[0].done && !b->entries[1].done);
	batcher_done(bt, b);

	/* A batch whose every entry timed out is gone. */
	add_ok(bt, "d", &lim, "t1", 5, 10, 2000, 2050);
	add_ok(bt, "d", &lim, "t1", 6, 10, 2000, 2040);
	ck_assert_uint_eq(batcher_expire(bt, 2100, on_expire, &calls),
	    UINT64_MAX);
	ck_assert_int_eq(calls, 4);
	ck_assert_uint_eq(batcher_queued(bt, NULL, NULL), 0);
	ck_assert_uint_eq(batcher_next_ready(bt, 2100), UINT64_MAX);
	ck_assert(batcher_take(bt, 5000) == NULL);
	batcher_free(bt);
}
END_TEST

/* In-flight entries time out on their own: marked done, once; the
 * request is all done only when every entry is. */
START_TEST(test_expire_in_flight)
{
	struct batcher_limits lim = base;
	struct batcher *bt = batcher_new();
	struct batcher_req *b;
	int calls = 0;

	lim.max_entries = 3;
	nexpired = 0;
	add_ok(bt, "d", &lim, "t", 1, 1, 0, 10);
	add_ok(bt, "d", &lim, "t", 2, 1, 0, 20);
	add_ok(bt, "d", &lim, "t", 3, 1, 0, 30);
	b = batcher_take(bt, 0);
	ck_assert(b != NULL);
	ck_assert(!batcher_all_done(b));

	ck_assert_uint_eq(batcher_expire(bt, 20, on_expire, &calls), 30);
	ck_assert_int_eq(calls, 2);
	ck_assert(b->entries[0].done && b->entries[1].done);
	ck_assert(!b->entries[2].done);
	ck_assert_uint_eq(b->n, 3);
	ck_assert(!batcher_all_done(b));
	/* Not twice. */
	ck_assert_uint_eq(batcher_expire(bt, 25, on_expire, &calls), 30);
	ck_assert_int_eq(calls, 2);
	/* In flight: not removable. */
	ck_assert_int_eq(remove_one(bt, 3), 0);
	ck_assert_uint_eq(batcher_expire(bt, 30, on_expire, &calls),
	    UINT64_MAX);
	ck_assert_int_eq(calls, 3);
	ck_assert_uint_eq(expired[2], 3);
	ck_assert(batcher_all_done(b));
	ck_assert_uint_eq(batcher_in_flight(bt, "d"), 1);
	batcher_done(bt, b);
	ck_assert_uint_eq(batcher_in_flight(bt, "d"), 0);
	batcher_free(bt);
}
END_TEST

/* One job's queued entry dropped (batcher_remove_jobs of one). */
START_TEST(test_remove)
{
	struct batcher_limits lim = base;
	struct batcher *bt = batcher_new();
	struct batcher_req *b;

	lim.max_entries = 2;
	add_ok(bt, "d", &lim, "t", 1, 1, 0, FAR);
	add_ok(bt, "d", &lim, "t", 2, 1, 0, FAR);
	add_ok(bt, "d", &lim, "u", 3, 1, 0, FAR);
	ck_assert_int_eq(remove_one(bt, 99), 0);
	ck_assert_int_eq(remove_one(bt, 1), 1);
	ck_assert_int_eq(remove_one(bt, 1), 0);
	ck_assert_uint_eq(batcher_queued(bt, "d", "t"), 1);
	/* The closed batch keeps its place with one entry. */
	b = batcher_take(bt, 0);
	ck_assert(b != NULL);
	ck_assert_uint_eq(b->n, 1);
	ck_assert_uint_eq(b->entries[0].job, 2);
	ck_assert_int_eq(remove_one(bt, 2), 0);
	batcher_done(bt, b);
	/* The open batch, emptied, is gone. */
	ck_assert_int_eq(remove_one(bt, 3), 1);
	ck_assert_uint_eq(batcher_queued(bt, NULL, NULL), 0);
	ck_assert_uint_eq(batcher_next_ready(bt, 0), UINT64_MAX);
	ck_assert(batcher_take(bt, 1000) == NULL);
	batcher_free(bt);
}
END_TEST

/*
 * batcher_remove_jobs takes back the queued entries of a set of jobs (a
 * key whose breaker opened) in one pass: entries in flight stay, the
 * tenant that shares the batch keeps its entries and their order, and a
 * batch or destination left empty is gone.
 */
START_TEST(test_remove_jobs)
{
	static const uint64_t jobs[] = { 1, 3, 5, 7, 8, 99 };
	struct batcher_limits lim = base;
	struct batcher *bt = batcher_new();
	struct batcher_req *f, *b;
	char taken[6] = { 0 };

	lim.max_entries = 4;
	add_ok(bt, "d", &lim, "a", 1, 10, 0, FAR);
	add_ok(bt, "d", &lim, "b", 2, 10, 0, FAR);
	add_ok(bt, "d", &lim, "a", 3, 10, 0, FAR);
	add_ok(bt, "d", &lim, "b", 4, 10, 0, FAR);
	add_ok(bt, "d", &lim, "a", 5, 10, 1, FAR);
	add_ok(bt, "d", &lim, "b", 6, 20, 1, FAR);
	add_ok(bt, "d", &lim, "a", 8, 10, 1, FAR);
	add_ok(bt, "e", &lim, "a", 7, 10, 1, FAR);
	f = batcher_take(bt, 0);	/* d's full batch: 1-4, in flight */
	ck_assert(f != NULL);
	ck_assert_uint_eq(f->n, 4);
	ck_assert_uint_eq(batcher_remove_jobs(bt, jobs, 6, taken), 3);
	ck_assert_int_eq(taken[0], 0);	/* 1: in flight */
	ck_assert_int_eq(taken[1], 0);	/* 3: in flight */
	ck_assert_int_eq(taken[2], 1);
	ck_assert_int_eq(taken[3], 1);
	ck_assert_int_eq(taken[4], 1);
	ck_assert_int_eq(taken[5], 0);	/* 99: unknown */
	ck_assert_uint_eq(f->n, 4);
	ck_assert_uint_eq(batcher_queued(bt, NULL, "a"), 0);
	ck_assert_uint_eq(batcher_queued(bt, "d", "b"), 1);
	ck_assert_uint_eq(batcher_queued(bt, "e", NULL), 0);
	/* The open batch keeps b's entry, from its first entry's time. */
	ck_assert_uint_eq(batcher_next_ready(bt, 1), 11);
	b = batcher_take(bt, 11);
	ck_assert(b != NULL);
	ck_assert_str_eq(b->dest, "d");
	ck_assert_uint_eq(b->n, 1);
	ck_assert_uint_eq(b->bytes, 20);
	ck_assert_uint_eq(b->entries[0].job, 6);
	ck_assert_str_eq(b->entries[0].tenant, "b");
	ck_assert(batcher_take(bt, 1000) == NULL);
	ck_assert_uint_eq(batcher_remove_jobs(bt, jobs, 0, NULL), 0);
	batcher_done(bt, f);
	batcher_done(bt, b);
	ck_assert_uint_eq(batcher_in_flight(bt, NULL), 0);
	batcher_free(bt);
}
END_TEST

/* Limits changed between calls: a lowered max_entries closes the open
 * batch as it is (nothing dropped) and applies to the next. */
START_TEST(test_limits_change)
{
	struct batcher_limits lim = base;
	struct batcher *bt = batcher_new();
	struct batcher_req *b;
	uint64_t j;

	lim.max_entries = 5;
	for (j = 1; j <= 3; j++)
		add_ok(bt, "d", &lim, "t", j, 1, 0, FAR);
	ck_assert(batcher_take(bt, 0) == NULL);
	lim.max_entries = 2;
	add_ok(bt, "d", &lim, "t", 4, 1, 0, FAR);
	b = batcher_take(bt, 0);
	ck_assert(b != NULL);
	ck_assert_uint_eq(b->n, 3);
	batcher_done(bt, b);
	add_ok(bt, "d", &lim, "t", 5, 1, 0, FAR);
	b = batcher_take(bt, 0);
	ck_assert(b != NULL);
	ck_assert_uint_eq(b->n, 2);
	ck_assert_uint_eq(b->entries[0].job, 4);
	ck_assert_uint_eq(b->entries[1].job, 5);
	batcher_done(bt, b);

	/* Raised: the open batch grows further. */
	add_ok(bt, "d", &lim, "t", 6, 1, 0, FAR);
	lim.max_entries = 4;
	lim.max_in_flight = 1;
	for (j = 7; j <= 9; j++)
		add_ok(bt, "d", &lim, "t", j, 1, 0, FAR);
	b = batcher_take(bt, 0);
	ck_assert(b != NULL);
	ck_assert_uint_eq(b->n, 4);
	/* A cap given later applies from then on. */
	add_ok(bt, "d", &lim, "t", 10, 1, 0, FAR);
	ck_assert(batcher_take(bt, 100) == NULL);
	lim.max_in_flight = 0;
	add_ok(bt, "d", &lim, "t", 11, 1, 0, FAR);
	batcher_done(bt, b);
	b = batcher_take(bt, 100);
	ck_assert(b != NULL);
	ck_assert_uint_eq(b->n, 2);
	batcher_done(bt, b);

	/* A lowered queue bound refuses until the queue falls below. */
	lim.max_entries = 10;
	for (j = 12; j <= 14; j++)
		add_ok(bt, "d", &lim, "t", j, 1, 0, FAR);
	lim.max_queued = 2;
	ck_assert_int_eq(batcher_add(bt, "d", &lim, "t", 15, 1, 0, FAR, NULL),
	    -1);
	ck_assert_uint_eq(batcher_queued(bt, "d", NULL), 3);
	batcher_free(bt);
}
END_TEST

/* Batch ids are unique, from 1: distinct across destinations (a batch
 * gets its id when it opens, so takes may come out of order), never
 * reused after done. */
START_TEST(test_ids)
{
	struct batcher_limits lim = base;
	struct batcher *bt = batcher_new();
	struct batcher_req *taken[65];
	uint64_t j;
	size_t i, k, n = 0;

	lim.max_entries = 1;
	for (j = 1; j <= 64; j++)
		add_ok(bt, j % 2 ? "a" : "b", &lim, "t", j, 1, 0, FAR);
	while ((taken[n] = batcher_take(bt, 0)) != NULL)
		n++;
	ck_assert_uint_eq(n, 64);
	for (i = 0; i < n; i++) {
		ck_assert_uint_ge(taken[i]->id, 1);
		ck_assert_uint_le(taken[i]->id, 64);
		for (k = i + 1; k < n; k++)
			ck_assert_uint_ne(taken[i]->id, taken[k]->id);
	}
	for (i = 0; i < n; i++)
		batcher_done(bt, taken[i]);
	add_ok(bt, "a", &lim, "t", 65, 1, 0, FAR);
	taken[0] = batcher_take(bt, 0);
	ck_assert(taken[0] != NULL);
	ck_assert_uint_eq(taken[0]->id, 65);
	batcher_done(bt, taken[0]);
	batcher_free(bt);
}
END_TEST

/* Freeing with batches queued and in flight frees them all (valgrind). */
START_TEST(test_free_busy)
{
	struct batcher_limits lim = base;
	struct batcher *bt = batcher_new();
	uint64_t j;

	batcher_free(NULL);
	lim.max_entries = 1000;
	lim.max_queued = 0;		/* no caps */
	lim.max_queued_tenant = 0;
	for (j = 1; j <= 300; j++)
		add_ok(bt, j % 2 ? "a" : "b", &lim, j % 3 ? "t" : "u", j, 1,
		    0, FAR);
	ck_assert(batcher_take(bt, 10) != NULL);
	ck_assert(batcher_take(bt, 10) != NULL);
	for (j = 301; j <= 310; j++)
		add_ok(bt, "a", &lim, "t", j, 1, 0, FAR);
	ck_assert_uint_eq(batcher_queued(bt, NULL, NULL), 10);
	ck_assert_uint_eq(batcher_in_flight(bt, NULL), 2);
	batcher_free(bt);
}
END_TEST

static Suite *
batcher_suite(void)
{
	Suite *s = suite_create("batcher");
	TCase *tc;

	tc = tcase_create("fill");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_loop_test(tc, test_fill, 0, sizeof(fills) / sizeof(fills[0]));
	tcase_add_test(tc, test_limits_change);
	tcase_add_test(tc, test_sharing);
	tcase_add_test(tc, test_ids);
	suite_add_tcase(s, tc);

	tc = tcase_create("time");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_loop_test(tc, test_linger, 0,
	    sizeof(lingers) / sizeof(lingers[0]));
	tcase_add_test(tc, test_next_ready);
	tcase_add_test(tc, test_expire_queued);
	tcase_add_test(tc, test_expire_in_flight);
	suite_add_tcase(s, tc);

	tc = tcase_create("bounds");
	tcase_set_timeout(tc, TIMEOUT);
	tcase_add_test(tc, test_in_flight_cap);
	tcase_add_loop_test(tc, test_in_flight_cap_above, 0,
	    sizeof(caps) / sizeof(caps[0]));
	tcase_add_test(tc, test_round_robin);
	tcase_add_test(tc, test_queue_bounds);
	tcase_add_test(tc, test_remove);
	tcase_add_test(tc, test_remove_jobs);
	tcase_add_test(tc, test_free_busy);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(batcher_suite());
	int failed;

	/* Forked, unless CK_FORK=no (to run under valgrind). */
	if (getenv("CK_FORK") == NULL)
		srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? 0 : 1;
}
