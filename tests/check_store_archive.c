/* SPDX-License-Identifier: ISC */
/*
 * check_store_archive.c: unit tests of the archive of delivered hooks
 * (daemon/store/store_archive.c) and the erase's dedupe step
 * (store_dedupe.c): without keeping, a hook goes with its last row as
 * before; with it, each delivered row leaves its record, the last keeps
 * the hook (counters, id index, body, flags, across a reopen); the prune
 * by age, by bytes and its bound; a kept hook deleted by any path takes
 * its records and entry; the archive replay's rows, its sink filter and
 * the hook kept again after; the dedupe erase's range and tenant.
 *
 * Each case works in its own mkdtemp directory under TMPDIR and removes it.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "store.h"
#include "store_int.h"
#include "store_rec.h"
#include "storeutil.h"

static Suite	*archive_suite(void);

static char	 body[2000];	/* in bodies: over STORE_BODY_MIN */

struct recs {
	struct store_delivered	d[8];
	int			n;
};

static int
recs_cb(const struct store_delivered *d, void *arg)
{
	struct recs *r = arg;

	ck_assert_int_lt(r->n, 8);
	r->d[r->n++] = *d;
	return 0;
}

static struct recs
recs_of(struct store *st, uint64_t seq)
{
	struct recs r;

	memset(&r, 0, sizeof(r));
	ck_assert_int_eq(store_hook_delivered(st, seq, recs_cb, &r), 0);
	return r;
}

static struct store_counts
counts(struct store *st)
{
	struct store_counts c;

	ck_assert_int_eq(store_counts(st, &c), 0);
	return c;
}

/* A hook with n rows (sinks 0..n-1: http, then sqs) and the big body. */
static uint64_t
put_n(struct store *st, const char *source, int n, unsigned char id[16])
{
	struct store_row_spec rows[4];
	struct store_hook_rec rec;
	uint64_t seq;
	int i;

	memset(rows, 0, sizeof(rows));
	for (i = 0; i < n; i++) {
		rows[i].sink_index = i;
		rows[i].module = i == 0 ? MODULE_HTTP : MODULE_SQS;
	}
	seq = put_hook_body(st, "acme", source, 1700000000000ULL, body,
	    sizeof(body), rows, n);
	if (id != NULL) {
		ck_assert_int_eq(store_hook_head(st, seq, 0, &rec), 1);
		memcpy(id, rec.hook.id, 16);
		store_hook_rec_free(&rec);
	}
	return seq;
}

static int
prune(struct store *st, uint64_t before, uint64_t max_bytes, unsigned max,
    uint64_t *freed)
{
	struct store_batch *b;
	int n;

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	n = store_batch_archive_prune(b, before, max_bytes, max, freed);
	ck_assert_msg(n >= 0, "prune: %s", store_strerror(st));
	commit_ok(st, b);
	return n;
}

static void
no_trace(struct store *st)
{
	ck_assert_int_eq(store_debug_count(st, "hooks"), 0);
	ck_assert_int_eq(store_debug_count(st, "bodies"), 0);
	ck_assert_int_eq(store_debug_count(st, "hookids"), 0);
	ck_assert_int_eq(store_debug_count(st, "delivered"), 0);
	ck_assert_int_eq(store_debug_count(st, "archive"), 0);
	ck_assert_int_eq(counts(st).ahooks, 0);
	ck_assert_int_eq(counts(st).abytes, 0);
}

/* Keeping off (the default): the hook goes with its last row and leaves
 * nothing of the archive. */
START_TEST(test_archive_off)
{
	struct store *st = open_ok();
	unsigned char id[16];
	uint64_t seq, s2;

	seq = put_n(st, "github", 2, id);
	ck_assert_int_eq(deliver(st, seq, 0), 1);
	ck_assert_int_eq(deliver(st, seq, 1), 1);
	ck_assert_int_eq(store_hook_seq(st, id, &s2), 0);
	ck_assert_int_eq(counts(st).hooks, 0);
	no_trace(st);
	store_close(st);
}
END_TEST

/* Keeping on: a record a delivered row, the hook kept at its last, out of
 * hooks and rows, into ahooks and abytes, found by id with its body;
 * the same after a reopen; a second delivery of a row gone is nothing. */
START_TEST(test_archive_keep)
{
	struct store *st = open_ok();
	struct store_hook_rec rec;
	struct store_counts c;
	struct listed l;
	struct recs r;
	unsigned char id[16];
	uint64_t seq, s2, t0 = time_wall_ms();

	store_archive_keep(st, 1);
	seq = put_n(st, "github", 2, id);
	ck_assert_int_eq(deliver(st, seq, 0), 1);
	c = counts(st);
	ck_assert_int_eq(c.hooks, 1);
	ck_assert_int_eq(c.rows, 1);
	ck_assert_int_eq(c.ahooks, 0);
	r = recs_of(st, seq);
	ck_assert_int_eq(r.n, 1);
	ck_assert_int_eq(r.d[0].sink, 0);
	ck_assert_int_eq(r.d[0].module, MODULE_HTTP);
	ck_assert_uint_ge(r.d[0].delivered_at, t0);
	ck_assert_int_eq(deliver(st, seq, 1), 1);
	ck_assert_int_eq(deliver(st, seq, 1), 0);
	c = counts(st);
	ck_assert_int_eq(c.hooks, 0);
	ck_assert_int_eq(c.rows, 0);
	ck_assert_int_eq(c.dead, 0);
	ck_assert_int_eq(c.ahooks, 1);
	ck_assert_uint_gt(c.abytes, sizeof(body));
	store_close(st);

	st = open_ok();
	c = counts(st);
	ck_assert_int_eq(c.hooks, 0);
	ck_assert_int_eq(c.ahooks, 1);
	ck_assert_int_eq(store_hook_seq(st, id, &s2), 1);
	ck_assert_uint_eq(s2, seq);
	ck_assert_int_eq(store_hook_get(st, seq, &rec), 1);
	ck_assert_int_eq(rec.kept, 1);
	ck_assert_int_eq(rec.rows, 0);
	ck_assert_uint_eq(rec.hook.body_len, sizeof(body));
	ck_assert_mem_eq(rec.hook.body, body, sizeof(body));
	store_hook_rec_free(&rec);
	r = recs_of(st, seq);
	ck_assert_int_eq(r.n, 2);
	ck_assert_int_eq(r.d[1].sink, 1);
	ck_assert_int_eq(r.d[1].module, MODULE_SQS);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 1);
	ck_assert_int_eq(l.info[0].kept, 1);
	/* No due key: nothing may claim it. */
	ck_assert_int_eq(store_debug_count(st, "due"), 0);
	store_close(st);
}
END_TEST

/* The prune: by age, oldest first, at most max a call; by bytes; every
 * trace of the hook gone. */
START_TEST(test_archive_prune)
{
	struct store *st = open_ok();
	struct store_hook_rec rec;
	uint64_t seq[3], freed = 0, at, per;
	int i;

	store_archive_keep(st, 1);
	for (i = 0; i < 3; i++) {
		seq[i] = put_n(st, "github", 1, NULL);
		ck_assert_int_eq(deliver(st, seq[i], 0), 1);
	}
	ck_assert_int_eq(counts(st).ahooks, 3);
	per = counts(st).abytes / 3;
	ck_assert_int_eq(store_archive_oldest(st, &at), 1);
	/* Nothing older than the cut, no cap passed: nothing. */
	ck_assert_int_eq(prune(st, at, 0, 10, &freed), 0);
	ck_assert_int_eq(prune(st, at, counts(st).abytes, 10, &freed), 0);
	ck_assert_uint_eq(freed, 0);
	/* By age, one a call. */
	ck_assert_int_eq(prune(st, UINT64_MAX, 0, 1, &freed), 1);
	ck_assert_uint_eq(freed, per);
	ck_assert_int_eq(counts(st).ahooks, 2);
	ck_assert_int_eq(store_hook_head(st, seq[0], 0, &rec), 0);
	/* By bytes: down to one hook's worth. */
	ck_assert_int_eq(prune(st, 0, per, 10, &freed), 1);
	ck_assert_int_eq(counts(st).ahooks, 1);
	ck_assert_int_eq(store_debug_count(st, "hooks"), 1);
	ck_assert_int_eq(prune(st, UINT64_MAX, 0, 10, &freed), 1);
	ck_assert_uint_eq(freed, 3 * per);
	ck_assert_int_eq(store_archive_oldest(st, &at), 0);
	no_trace(st);
	store_close(st);
}
END_TEST

/* A hook deleted whole (a purge, an erase) takes its delivered records
 * and, kept, its archive entry. */
START_TEST(test_archive_delete)
{
	struct store *st = open_ok();
	struct store_batch *b;
	uint64_t kept, part, bytes;

	store_archive_keep(st, 1);
	kept = put_n(st, "github", 1, NULL);
	part = put_n(st, "github", 2, NULL);
	ck_assert_int_eq(deliver(st, kept, 0), 1);
	ck_assert_int_eq(deliver(st, part, 0), 1);
	ck_assert_int_eq(store_debug_count(st, "delivered"), 2);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_hook_del(b, kept, NULL, NULL, &bytes), 1);
	ck_assert_uint_eq(bytes, sizeof(body));
	ck_assert_int_eq(store_batch_hook_del(b, part, NULL, NULL, &bytes), 1);
	commit_ok(st, b);
	ck_assert_int_eq(counts(st).hooks, 0);
	ck_assert_int_eq(counts(st).rows, 0);
	no_trace(st);
	store_close(st);
}
END_TEST

/* A partly delivered hook whose last row dies, then is purged while
 * keeping is off: its record goes with it. */
START_TEST(test_archive_dead_purge)
{
	struct store *st = open_ok();
	struct store_batch *b;
	unsigned char dk[STORE_DEADKEY_LEN], rk[STORE_ROWKEY_LEN];
	uint64_t seq, bytes = 0;

	store_archive_keep(st, 1);
	seq = put_n(st, "github", 2, NULL);
	ck_assert_int_eq(deliver(st, seq, 0), 1);
	ck_assert_int_eq(kill_row(st, seq, 1, 5000, "gone", "410", 1), 1);
	ck_assert_int_eq(counts(st).ahooks, 0);
	store_archive_keep(st, 0);
	store_key_row(rk, seq, 1);
	store_key_dead(dk, 5000, rk);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_dead_del(b, dk, &bytes), 1);
	commit_ok(st, b);
	ck_assert_uint_eq(bytes, sizeof(body));
	no_trace(st);
	store_close(st);
}
END_TEST

static int
claimed_sink0(const unsigned char *rk, void *arg)
{
	return rec_get_u32(rk + 8) == 0;
}

/* The erase's delete: a claimed row stays, an orphan, whose delivered
 * settle deletes it and keeps nothing, whose dead settle drops it. */
START_TEST(test_archive_erase_orphan)
{
	struct store *st = open_ok();
	struct store_batch *b;
	struct store_counts c;
	uint64_t a, d, bytes;

	store_archive_keep(st, 1);
	a = put_n(st, "github", 2, NULL);
	d = put_n(st, "github", 2, NULL);
	ck_assert_int_eq(deliver(st, a, 1), 1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_hook_erase(b, a, claimed_sink0, NULL,
	    &bytes), 1);
	ck_assert_int_eq(store_batch_hook_erase(b, d, claimed_sink0, NULL,
	    &bytes), 1);
	commit_ok(st, b);
	c = counts(st);
	ck_assert_int_eq(c.hooks, 0);
	ck_assert_int_eq(c.rows, 2);
	ck_assert_int_eq(store_debug_count(st, "delivered"), 0);
	ck_assert_int_eq(deliver(st, a, 0), 1);
	ck_assert_int_eq(kill_row(st, d, 0, 5000, "gone", "x", 1), 2);
	c = counts(st);
	ck_assert_int_eq(c.rows, 0);
	ck_assert_int_eq(c.dead, 0);
	ck_assert_int_eq(store_debug_count(st, "rows"), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 0);
	no_trace(st);
	/* Refused whole by store_batch_hook_del. */
	a = put_n(st, "github", 2, NULL);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_hook_del(b, a, claimed_sink0, NULL,
	    &bytes), 2);
	commit_ok(st, b);
	ck_assert_int_eq(counts(st).rows, 2);
	store_close(st);
}
END_TEST

static int
replay_step(struct store *st, const unsigned char *id,
    struct store_replay *rp, uint64_t limit, uint64_t *moved)
{
	struct store_replay_step s;
	struct store_batch *b;
	int ret;

	memset(&s, 0, sizeof(s));
	s.now = 5000;
	s.limit = limit;
	s.visits = 100;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ret = store_batch_archive_replay_step(b, id, rp, &s);
	ck_assert_msg(ret >= 0, "step: %s", store_strerror(st));
	commit_ok(st, b);
	*moved = s.moved;
	return ret;
}

/* The replay: the kept hooks of its source get due rows with its id, in
 * bounded steps, leave the archive, and are kept again once delivered;
 * with a sink, that sink's row alone; a job ends at its creation time. */
START_TEST(test_archive_replay)
{
	struct store *st = open_ok();
	struct store_replay rp;
	struct store_row r;
	struct store_counts c;
	unsigned char jid[16], rk[STORE_ROWKEY_LEN];
	uint64_t a, b2, other, moved, live, dead;
	struct scanned sc;

	store_archive_keep(st, 1);
	while (store_keycount_seed(st, 1000) == 0)
		;
	a = put_n(st, "github", 2, NULL);
	b2 = put_n(st, "github", 2, NULL);
	other = put_n(st, "stripe", 1, NULL);
	ck_assert_int_eq(deliver(st, a, 0), 1);
	ck_assert_int_eq(deliver(st, a, 1), 1);
	ck_assert_int_eq(deliver(st, b2, 0), 1);
	ck_assert_int_eq(deliver(st, b2, 1), 1);
	ck_assert_int_eq(deliver(st, other, 0), 1);
	ck_assert_int_eq(counts(st).ahooks, 3);

	memset(&rp, 0, sizeof(rp));
	rp.state = STORE_REPLAY_RUNNING;
	rp.kind = STORE_REPLAY_ARCHIVE;
	snprintf(rp.source, sizeof(rp.source), "github");
	rp.created_at = time_wall_ms() + 1000;
	rp.sink = 0;
	uuidv7_new(jid);
	ck_assert_int_eq(replay_step(st, jid, &rp, 1, &moved), 1);
	ck_assert_uint_eq(moved, 1);
	ck_assert_int_eq(replay_step(st, jid, &rp, 10, &moved), 0);
	ck_assert_uint_eq(moved, 1);
	ck_assert_int_eq(rp.state, STORE_REPLAY_DONE);
	ck_assert_uint_eq(rp.moved, 2);
	c = counts(st);
	ck_assert_int_eq(c.hooks, 2);
	ck_assert_int_eq(c.rows, 4);
	ck_assert_int_eq(c.ahooks, 1);
	store_key_row(rk, a, 1);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_int_eq(r.state, STORE_ROW_DUE);
	ck_assert_int_eq(r.module, MODULE_SQS);
	ck_assert_uint_eq(r.due, 5000);
	ck_assert_mem_eq(r.replay_id, jid, 16);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "acme", 5000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 4);
	/* The rows by sink key count the new rows. */
	ck_assert_int_eq(store_keycount(st, "github", 1, MODULE_SQS, &live,
	    &dead), 1);
	ck_assert_uint_eq(live, 2);
	ck_assert_uint_eq(dead, 0);
	/* Delivered again: kept again, the record names the replay. */
	ck_assert_int_eq(deliver(st, a, 0), 1);
	ck_assert_int_eq(deliver(st, a, 1), 1);
	ck_assert_int_eq(counts(st).ahooks, 2);
	ck_assert_mem_eq(recs_of(st, a).d[1].replay_id, jid, 16);
	ck_assert_int_eq(store_keycount(st, "github", 1, MODULE_SQS, &live,
	    &dead), 1);
	ck_assert_uint_eq(live, 1);

	/* One sink only: a's sink 1. */
	memset(&rp, 0, sizeof(rp));
	rp.state = STORE_REPLAY_RUNNING;
	rp.kind = STORE_REPLAY_ARCHIVE;
	rp.created_at = time_wall_ms() + 1000;
	rp.sink = 2;
	uuidv7_new(jid);
	ck_assert_int_eq(replay_step(st, jid, &rp, 10, &moved), 0);
	/* b2 is not kept (its rows wait): only a has a sink 1. */
	ck_assert_uint_eq(rp.moved, 1);
	store_key_row(rk, a, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 0);
	store_key_row(rk, a, 1);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	store_close(st);
}
END_TEST

/* The erase's dedupe step: the tenant's entries of hooks in the range
 * alone, in bounded steps. */
START_TEST(test_dedupe_erase)
{
	struct store *st = open_ok();
	struct store_dedupe_erase e;
	struct store_batch *b;
	unsigned char id[16];
	uint64_t now = time_wall_ms();
	char key[16];
	int i, steps = 0;

	for (i = 0; i < 5; i++) {
		snprintf(key, sizeof(key), "k%d", i);
		put_dedupe(st, "acme", "github", key, now + 60000, NULL);
		put_dedupe(st, "acmf", "github", key, now + 60000, NULL);
	}
	memset(&e, 0, sizeof(e));
	e.tenant = "acme";
	e.since = 0;
	e.until = now - 60000;
	e.visits = 100;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_dedupe_erase(b, &e), 0);
	commit_ok(st, b);
	ck_assert_int_eq(e.end, 1);
	ck_assert_uint_eq(e.deleted, 0);

	memset(&e, 0, sizeof(e));
	e.tenant = "acme";
	e.since = now - 60000;
	e.until = now + 60000;
	e.visits = 2;
	while (!e.end) {
		ck_assert_ptr_nonnull(b = store_batch_begin(st));
		ck_assert_int_eq(store_batch_dedupe_erase(b, &e), 0);
		commit_ok(st, b);
		ck_assert_int_lt(++steps, 10);
	}
	ck_assert_uint_eq(e.deleted, 5);
	ck_assert_int_ge(steps, 3);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "k3", now, id),
	    0);
	ck_assert_int_eq(store_dedupe_get(st, "acmf", "github", "k3", now, id),
	    1);
	store_close(st);
}
END_TEST

static Suite *
archive_suite(void)
{
	Suite *s = suite_create("store_archive");
	TCase *tc;

	memset(body, 'b', sizeof(body));
	tc = tcase_create("archive");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_archive_off);
	tcase_add_test(tc, test_archive_keep);
	tcase_add_test(tc, test_archive_prune);
	tcase_add_test(tc, test_archive_delete);
	tcase_add_test(tc, test_archive_dead_purge);
	tcase_add_test(tc, test_archive_erase_orphan);
	tcase_add_test(tc, test_archive_replay);
	tcase_add_test(tc, test_dedupe_erase);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return storeutil_run(archive_suite());
}
