/* SPDX-License-Identifier: ISC */
/*
 * check_store_dlq.c: unit tests of the operator's dead letters and hooks
 * in the store (daemon/store/store_dlq.c): the dead table walked by time in
 * bounded calls, one hook's rows, and the deletes of a dead letter and of
 * a whole hook with the counters they keep.
 *
 * Each case works in its own mkdtemp directory under TMPDIR and removes it.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "store.h"
#include "store_int.h"
#include "store_rec.h"
#include "storeutil.h"

/* One hook's rows as store_hook_rows hands them over. */
struct rows_seen {
	struct store_row	row[8];
	int			dead[8];	/* a dead letter came */
	uint64_t		dead_at[8];
	char			reason[8][64];
	int			n;
};

static int
rows_cb(const unsigned char *rk, const struct store_row *r,
    const struct store_dead_info *di, void *arg)
{
	struct rows_seen *rs = arg;

	ck_assert_int_lt(rs->n, 8);
	rs->row[rs->n] = *r;
	if (di != NULL) {
		rs->dead[rs->n] = 1;
		rs->dead_at[rs->n] = di->dead_at;
		snprintf(rs->reason[rs->n], sizeof(rs->reason[0]), "%s",
		    di->reason);
	}
	rs->n++;
	return 0;
}

static int
claimed_none(const unsigned char *rk, void *arg)
{
	return 0;
}

/* arg: the row key that is claimed. */
static int
claimed_one(const unsigned char *rk, void *arg)
{
	return memcmp(rk, arg, STORE_ROWKEY_LEN) == 0;
}

static void
counts_are(struct store *st, uint64_t hooks, uint64_t rows, uint64_t dead)
{
	struct store_counts c;

	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, hooks);
	ck_assert_uint_eq(c.rows, rows);
	ck_assert_uint_eq(c.dead, dead);
	ck_assert_int_eq(store_debug_count(st, "hooks"), (int64_t)hooks);
	ck_assert_int_eq(store_debug_count(st, "rows"), (int64_t)rows);
	ck_assert_int_eq(store_debug_count(st, "dead"), (int64_t)dead);
}

/* A DEAD row's due is its dead time: its dead entry is found by it. */
START_TEST(test_dead_row_due)
{
	struct store_row_spec rows[1] = { { 0, MODULE_HTTP, 0, 0 } };
	struct rows_seen rs;
	struct store_row r;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, rows, 1);
	ck_assert_int_eq(kill_row(st, s1, 0, 5000, "retries_exhausted",
	    "http 500", 3), 1);
	store_key_row(rk, s1, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.due, 5000);
	memset(&rs, 0, sizeof(rs));
	ck_assert_int_eq(store_hook_rows(st, s1, rows_cb, &rs), 0);
	ck_assert_int_eq(rs.n, 1);
	ck_assert_int_eq(rs.dead[0], 1);
	ck_assert_uint_eq(rs.dead_at[0], 5000);
	ck_assert_str_eq(rs.reason[0], "retries_exhausted");
	store_close(st);
}
END_TEST

START_TEST(test_dead_walk)
{
	struct store_row_spec rows[1] = { { 0, MODULE_HTTP, 0, 0 } };
	struct store_dead_walk w;
	struct dead_seen ds;
	struct store *st;
	uint64_t s[6];
	int i, calls;

	st = open_ok();
	for (i = 0; i < 6; i++) {
		s[i] = put_rows(st, "acme", i % 2 ? "stripe" : "github", 100,
		    rows, 1);
		ck_assert_int_eq(kill_row(st, s[i], 0, 1000 + 100 * i, "r",
		    "e", 1), 1);
	}
	/* [1100, 1400]: four, the hook's fields read. */
	memset(&w, 0, sizeof(w));
	w.since_ms = 1100;
	w.until_ms = 1400;
	w.reads = STORE_DEAD_READ_ROW | STORE_DEAD_READ_HOOK;
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_walk(st, &w, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 4);
	ck_assert_int_eq(w.end, 1);
	ck_assert_uint_eq(ds.info[0].seq, s[1]);
	ck_assert_uint_eq(ds.info[3].dead_at, 1400);
	ck_assert_str_eq(ds.info[0].source, "stripe");
	ck_assert_uint_eq(ds.info[0].received_at, 100);
	ck_assert_uint_eq(ds.info[0].size, 1);
	ck_assert_uint_ne(ds.info[0].hook_id[0], '\0');

	/* Two visits a call: it goes on after the last key read. */
	memset(&w, 0, sizeof(w));
	w.until_ms = UINT64_MAX;
	w.visits = 2;
	memset(&ds, 0, sizeof(ds));
	for (calls = 0; !w.end && calls < 10; calls++)
		ck_assert_int_eq(store_dead_walk(st, &w, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 6);
	ck_assert_int_le(calls, 4);
	for (i = 0; i < 6; i++) {
		ck_assert_uint_eq(ds.info[i].seq, s[i]);
		/* Not asked for: not read. */
		ck_assert_str_eq(ds.info[i].source, "");
		ck_assert_str_eq(ds.info[i].hook_id, "");
	}

	/* A source: its rows read, the others passed over. */
	memset(&w, 0, sizeof(w));
	w.until_ms = UINT64_MAX;
	w.source = "stripe";
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_walk(st, &w, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 3);
	ck_assert_uint_eq(ds.info[2].seq, s[5]);

	/* Resumed from a key before the range: from the range. */
	memset(&w, 0, sizeof(w));
	w.since_ms = 1300;
	w.until_ms = UINT64_MAX;
	w.have_at = 1;
	memset(w.at, 0, sizeof(w.at));
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_walk(st, &w, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 3);
	ck_assert_uint_eq(ds.info[0].dead_at, 1300);

	/* The old listing is the same walk. */
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list_since(st, "github", 1100, 1,
	    dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 1);
	ck_assert_uint_eq(ds.info[0].seq, s[2]);
	store_close(st);
}
END_TEST

START_TEST(test_dead_del)
{
	struct store_row_spec rows[3] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
		{ 2, MODULE_LOG, 0, 0 },
	};
	struct store_hook_rec rec;
	struct store_batch *b;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN], dk[STORE_DEADKEY_LEN];
	char body[1000];
	uint64_t s1, s2, bytes = 0;

	memset(body, 'b', sizeof(body));
	st = open_ok();
	s1 = put_hook_body(st, "acme", "github", 100, body, sizeof(body),
	    rows, 2);
	s2 = put_rows(st, "acme", "github", 100, rows, 3);
	ck_assert_int_eq(kill_row(st, s1, 0, 700, "a", "", 1), 1);
	ck_assert_int_eq(kill_row(st, s1, 1, 800, "b", "", 1), 1);
	ck_assert_int_eq(kill_row(st, s2, 2, 900, "c", "", 1), 1);
	counts_are(st, 2, 5, 3);

	/* One of two dead rows: the hook stays, no bytes. */
	store_key_row(rk, s1, 0);
	store_key_dead(dk, 700, rk);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_dead_del(b, dk, &bytes), 1);
	ck_assert_int_eq(store_batch_dead_del(b, dk, &bytes), 0);
	commit_ok(st, b);
	ck_assert_uint_eq(bytes, 0);
	counts_are(st, 2, 4, 2);
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 1);
	ck_assert_uint_eq(rec.rows, 1);
	store_hook_rec_free(&rec);

	/* Its last row: the hook goes with its body. */
	store_key_row(rk, s1, 1);
	store_key_dead(dk, 800, rk);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_dead_del(b, dk, &bytes), 1);
	commit_ok(st, b);
	ck_assert_uint_eq(bytes, sizeof(body));
	counts_are(st, 1, 3, 1);
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 0);
	ck_assert_int_eq(store_debug_count(st, "bodies"), 0);

	/* A hook with pending rows keeps them; an orphan entry (its row is
	 * not DEAD at that time) goes alone. */
	store_key_row(rk, s2, 0);
	store_key_dead(dk, 50, rk);
	store_close(st);
	table_poke("dead.db", dk, sizeof(dk),
	    "\x01\0\0\0\0\0\0\0\0\0\0\0\0\0\0", 15);
	st = open_ok();
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_dead_del(b, dk, &bytes), 1);
	store_key_row(rk, s2, 2);
	store_key_dead(dk, 900, rk);
	ck_assert_int_eq(store_batch_dead_del(b, dk, &bytes), 1);
	commit_ok(st, b);
	ck_assert_uint_eq(bytes, sizeof(body));
	ck_assert_int_eq(store_debug_count(st, "rows"), 2);
	ck_assert_int_eq(store_debug_count(st, "dead"), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 2);
	ck_assert_int_eq(store_hook_get(st, s2, &rec), 1);
	ck_assert_uint_eq(rec.rows, 2);
	store_hook_rec_free(&rec);
	store_close(st);
}
END_TEST

START_TEST(test_hook_del)
{
	struct store_row_spec rows[3] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_HTTP, 1, 0x77 },
		{ 2, MODULE_SQS, 0, 0 },
	};
	struct store_hook_rec rec;
	struct store_batch *b;
	struct store_row r;
	struct rows_seen rs;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN], id[UUID_LEN];
	char body[600];
	uint64_t s1, s2, bytes;

	memset(body, 'b', sizeof(body));
	st = open_ok();
	/* s1: sink 0 due, sink 1 its lane's head, sink 2 dead; s2: a
	 * member behind s1's head. */
	s1 = put_hook_body(st, "acme", "github", 100, body, sizeof(body),
	    rows, 3);
	s2 = put_rows(st, "acme", "github", 200, rows, 2);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);
	ck_assert_int_eq(kill_row(st, s1, 2, 900, "permanent:410", "gone",
	    1), 1);
	counts_are(st, 2, 5, 1);
	memset(&rs, 0, sizeof(rs));
	ck_assert_int_eq(store_hook_rows(st, s1, rows_cb, &rs), 0);
	ck_assert_int_eq(rs.n, 3);
	ck_assert_uint_eq(rs.row[0].state, STORE_ROW_DUE);
	ck_assert_uint_eq(rs.row[1].state, STORE_ROW_HEAD);
	ck_assert_uint_eq(rs.row[2].state, STORE_ROW_DEAD);
	ck_assert_int_eq(rs.dead[2], 1);
	ck_assert_str_eq(rs.reason[2], "permanent:410");
	ck_assert_int_eq(store_hook_head(st, s1, 0, &rec), 1);
	ck_assert_uint_eq(rec.body_size, sizeof(body));
	memcpy(id, rec.hook.id, sizeof(id));
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_hook_seq(st, id, &bytes), 1);
	ck_assert_uint_eq(bytes, s1);

	/* A claimed row: nothing changes. */
	store_key_row(rk, s1, 1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_hook_del(b, s1, claimed_one, rk, &bytes),
	    2);
	commit_ok(st, b);
	counts_are(st, 2, 5, 1);

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_hook_del(b, s1, claimed_none, NULL,
	    &bytes), 1);
	commit_ok(st, b);
	ck_assert_uint_eq(bytes, sizeof(body));
	counts_are(st, 1, 2, 0);
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 0);
	ck_assert_int_eq(store_debug_count(st, "bodies"), 0);
	/* s2's member is its lane's head now, due. */
	store_key_row(rk, s2, 1);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 2);
	ck_assert_int_eq(store_debug_count(st, "members"), 0);

	/* Gone from the id index too, and then 0. */
	ck_assert_int_eq(store_hook_seq(st, id, &bytes), 0);

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_hook_del(b, s1, NULL, NULL, &bytes), 0);
	commit_ok(st, b);
	store_close(st);
	st = open_ok();
	counts_are(st, 1, 2, 0);
	store_close(st);
}
END_TEST

static Suite *
dlq_suite(void)
{
	Suite *s = suite_create("store_dlq");
	TCase *tc;

	tc = tcase_create("dlq");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dead_row_due);
	tcase_add_test(tc, test_dead_walk);
	tcase_add_test(tc, test_dead_del);
	tcase_add_test(tc, test_hook_del);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return storeutil_run(dlq_suite());
}
