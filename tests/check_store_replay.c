/* SPDX-License-Identifier: ISC */
/*
 * check_store_replay.c: unit tests of the store's replay jobs
 * (daemon/store/store_replay.c): the job records, and the step that moves a dlq
 * job's dead rows back to due with its cursor in the same transaction
 * (the dead counter, the filters, lanes, orphans, a restart between
 * steps).
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

static Suite	*replay_suite(void);

/* A dlq job over source (NULL: every one), created at created. */
static void
job_init(struct store_replay *rp, const char *source, uint64_t created)
{
	memset(rp, 0, sizeof(*rp));
	rp->state = STORE_REPLAY_RUNNING;
	rp->kind = STORE_REPLAY_DLQ;
	snprintf(rp->source, sizeof(rp->source), "%s",
	    source != NULL ? source : "");
	rp->rate = 1000;
	rp->max_lag_ms = 2000;
	rp->created_at = created;
}

/* One committed step; what it returned. */
static int
step(struct store *st, const unsigned char *id, struct store_replay *rp,
    uint64_t limit, uint64_t now, struct store_replay_step *s)
{
	struct store_batch *b;
	int ret;

	memset(s, 0, sizeof(*s));
	s->now = now;
	s->limit = limit;
	s->visits = 100;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ret = store_batch_replay_step(b, id, rp, s);
	ck_assert_msg(ret >= 0, "step: %s", store_strerror(st));
	commit_ok(st, b);
	return ret;
}

static void
row_is(struct store *st, uint64_t seq, uint32_t sink, uint8_t state)
{
	struct store_row r;
	unsigned char rk[STORE_ROWKEY_LEN];

	store_key_row(rk, seq, sink);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, state);
}

static int
count_jobs(const unsigned char *id, const struct store_replay *rp, void *arg)
{
	(*(int *)arg)++;
	return 0;
}

START_TEST(test_replay_records)
{
	struct store_replay rp, rp2;
	struct store_batch *b;
	struct store *st;
	unsigned char id[UUID_LEN], id2[UUID_LEN], buf[STORE_REC_MAX];
	char err[512];
	size_t vlen;
	int n = 0;

	st = open_ok();
	uuidv7_new(id);
	uuidv7_new(id2);
	ck_assert_int_eq(store_replay_get(st, id, &rp), 0);
	job_init(&rp, "github", 1234);
	rp.kind = STORE_REPLAY_QUARANTINE;
	rp.seq_below = 99;
	rp.dropped = 3;
	snprintf(rp.reason, sizeof(rp.reason), "dead_letters: 50 of 100");
	snprintf(rp.event_type, sizeof(rp.event_type), "invoice.paid");
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_replay_put(b, id, &rp), 0);
	ck_assert_int_eq(store_batch_replay_put(b, id2, &rp), 0);
	commit_ok(st, b);
	store_close(st);

	st = open_ok();
	ck_assert_int_eq(store_replay_get(st, id, &rp2), 1);
	ck_assert_mem_eq(&rp, &rp2, sizeof(rp));
	ck_assert_int_eq(store_replay_list(st, count_jobs, &n), 0);
	ck_assert_int_eq(n, 2);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_replay_del(b, id2), 1);
	ck_assert_int_eq(store_batch_replay_del(b, id2), 0);
	commit_ok(st, b);
	n = 0;
	ck_assert_int_eq(store_replay_list(st, count_jobs, &n), 0);
	ck_assert_int_eq(n, 1);
	store_close(st);

	/* Version 3 is version 4 without its sink (a u32); version 2 is 3
	 * without its event type (a u32 length and a NUL: 5 bytes for "");
	 * version 1 is version 2 without its last three fields. */
	job_init(&rp, "github", 1234);
	ck_assert_uint_gt(vlen = store_rec_replay_encode(&rp, buf,
	    sizeof(buf)), 30);
	ck_assert_uint_eq(buf[0], 4);
	buf[0] = 3;
	ck_assert_int_eq(store_rec_replay_decode(id, UUID_LEN, buf, vlen - 4,
	    &rp2, err, sizeof(err)), 0);
	ck_assert_mem_eq(&rp, &rp2, sizeof(rp));
	buf[0] = 2;
	ck_assert_int_eq(store_rec_replay_decode(id, UUID_LEN, buf, vlen - 9,
	    &rp2, err, sizeof(err)), 0);
	ck_assert_mem_eq(&rp, &rp2, sizeof(rp));
	buf[0] = 1;
	ck_assert_int_eq(store_rec_replay_decode(id, UUID_LEN, buf, vlen - 30,
	    &rp2, err, sizeof(err)), 0);
	ck_assert_mem_eq(&rp, &rp2, sizeof(rp));
	ck_assert_int_eq(store_rec_replay_decode(id, UUID_LEN, buf, vlen,
	    &rp2, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "bad length"));
	rp.kind = STORE_REPLAY_ARCHIVE;
	rp.sink = 3;
	ck_assert_uint_gt(vlen = store_rec_replay_encode(&rp, buf,
	    sizeof(buf)), 30);
	ck_assert_int_eq(store_rec_replay_decode(id, UUID_LEN, buf, vlen,
	    &rp2, err, sizeof(err)), 0);
	ck_assert_mem_eq(&rp, &rp2, sizeof(rp));
	buf[0] = 5;
	ck_assert_int_eq(store_rec_replay_decode(id, UUID_LEN, buf, vlen,
	    &rp2, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "has format version 5, this build "
	    "reads 1 to 4"));
}
END_TEST

/* Filters, the bound of the job's creation, the counters, the cursor. */
START_TEST(test_replay_step)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_replay rp, rp2;
	struct store_replay_step s;
	struct store_counts c;
	struct store_row r;
	struct scanned sc;
	struct store *st;
	unsigned char id[UUID_LEN], rk[STORE_ROWKEY_LEN];
	uint64_t a, bb, cc, d, e;

	st = open_ok();
	a = put_rows(st, "acme", "github", 10, &row, 1);
	bb = put_rows(st, "acme", "stripe", 10, &row, 1);
	cc = put_rows(st, "acme", "github", 10, &row, 1);
	d = put_rows(st, "acme", "github", 10, &row, 1);
	e = put_rows(st, "acme", "github", 10, &row, 1);
	ck_assert_int_eq(kill_row(st, a, 0, 100, "retries_exhausted", "http 500",
	    84), 1);
	ck_assert_int_eq(kill_row(st, bb, 0, 200, "permanent:404", "", 1), 1);
	ck_assert_int_eq(kill_row(st, cc, 0, 300, "permanent:410", "gone", 1),
	    1);
	ck_assert_int_eq(kill_row(st, d, 0, 400, "permanent:410", "", 1), 1);
	ck_assert_int_eq(kill_row(st, e, 0, 500, "permanent:410", "", 1), 1);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 5);

	uuidv7_new(id);
	job_init(&rp, "github", 450);
	/* Two rows of github a step; stripe's is passed over. */
	ck_assert_int_eq(step(st, id, &rp, 2, 7000, &s), 1);
	ck_assert_uint_eq(s.moved, 2);
	ck_assert_uint_eq(rp.moved, 2);
	ck_assert_uint_eq(rp.state, STORE_REPLAY_RUNNING);
	store_key_row(rk, a, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_DUE);
	ck_assert_uint_eq(r.due, 7000);
	ck_assert_uint_eq(r.attempts, 0);
	ck_assert_uint_eq(r.first_attempt, 0);
	ck_assert_str_eq(r.last_error, "http 500");
	ck_assert_mem_eq(r.replay_id, id, UUID_LEN);
	row_is(st, bb, 0, STORE_ROW_DEAD);
	row_is(st, cc, 0, STORE_ROW_DUE);
	row_is(st, d, 0, STORE_ROW_DEAD);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 3);
	ck_assert_uint_eq(c.rows, 5);
	ck_assert_int_eq(store_debug_count(st, "dead"), 3);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "acme", 7000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 2);
	ck_assert_uint_eq(sc.seq[0], a);
	ck_assert_uint_eq(sc.seq[1], cc);
	/* The record is what the step wrote, cursor and all. */
	ck_assert_int_eq(store_replay_get(st, id, &rp2), 1);
	ck_assert_mem_eq(&rp, &rp2, sizeof(rp));
	ck_assert_uint_eq(rec_get_u64(rp.cursor), 300);

	/* Across a restart, from the stored record: d, then e is dead after
	 * the job's creation: the end. */
	store_close(st);
	st = open_ok();
	ck_assert_int_eq(store_replay_get(st, id, &rp), 1);
	ck_assert_int_eq(step(st, id, &rp, 2, 8000, &s), 0);
	ck_assert_uint_eq(s.moved, 1);
	ck_assert_uint_eq(rp.moved, 3);
	ck_assert_uint_eq(rp.state, STORE_REPLAY_DONE);
	row_is(st, d, 0, STORE_ROW_DUE);
	row_is(st, e, 0, STORE_ROW_DEAD);
	row_is(st, bb, 0, STORE_ROW_DEAD);
	ck_assert_int_eq(store_replay_get(st, id, &rp2), 1);
	ck_assert_uint_eq(rp2.state, STORE_REPLAY_DONE);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 2);
	store_close(st);
	st = open_ok();
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 2);

	/* A moved row that dies again is past any earlier job's bound; a
	 * job over every source with a window of dead times takes only
	 * those. */
	ck_assert_int_eq(kill_row(st, a, 0, 9000, "permanent:410", "", 1), 1);
	uuidv7_new(id);
	job_init(&rp, NULL, 10000);
	rp.since = 150;
	rp.until = 499;
	ck_assert_int_eq(step(st, id, &rp, 10, 9500, &s), 0);
	ck_assert_uint_eq(s.moved, 1);		/* stripe's at 200 */
	row_is(st, bb, 0, STORE_ROW_DUE);
	row_is(st, e, 0, STORE_ROW_DEAD);
	row_is(st, a, 0, STORE_ROW_DEAD);
	store_close(st);
}
END_TEST

/* A step in an aborted batch leaves the rows and the record as they
 * were: rows and cursor commit together. */
START_TEST(test_replay_step_abort)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_replay rp, rp2;
	struct store_replay_step s;
	struct store_batch *b;
	struct store_counts c;
	struct store *st;
	unsigned char id[UUID_LEN];
	uint64_t a;

	st = open_ok();
	a = put_rows(st, "acme", "github", 10, &row, 1);
	ck_assert_int_eq(kill_row(st, a, 0, 100, "permanent:410", "", 1), 1);
	uuidv7_new(id);
	job_init(&rp, NULL, 1000);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_replay_put(b, id, &rp), 0);
	commit_ok(st, b);

	memset(&s, 0, sizeof(s));
	s.now = 2000;
	s.limit = 10;
	s.visits = 10;
	rp2 = rp;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_replay_step(b, id, &rp2, &s), 0);
	ck_assert_uint_eq(s.moved, 1);
	store_batch_abort(b);
	row_is(st, a, 0, STORE_ROW_DEAD);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 1);
	ck_assert_int_eq(store_replay_get(st, id, &rp2), 1);
	ck_assert_mem_eq(&rp, &rp2, sizeof(rp));
	ck_assert_int_eq(store_debug_count(st, "due"), 0);
	store_close(st);
}
END_TEST

/* An ordered row rejoins its lane behind the head as a member, and is
 * promoted when the head ends. */
START_TEST(test_replay_lane)
{
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0x42 };
	struct store_replay rp;
	struct store_replay_step s;
	struct store_counts c;
	struct store_row r;
	struct store *st;
	unsigned char id[UUID_LEN], rk[STORE_ROWKEY_LEN];
	uint64_t a, bb;

	st = open_ok();
	a = put_rows(st, "acme", "github", 10, &ord, 1);
	bb = put_rows(st, "acme", "github", 20, &ord, 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);
	row_is(st, a, 0, STORE_ROW_HEAD);
	/* The head dies: b heads the lane. */
	ck_assert_int_eq(kill_row(st, a, 0, 100, "permanent:410", "", 1), 1);
	row_is(st, bb, 0, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 0);

	uuidv7_new(id);
	job_init(&rp, NULL, 1000);
	ck_assert_int_eq(step(st, id, &rp, 10, 5000, &s), 0);
	ck_assert_uint_eq(s.moved, 1);
	row_is(st, a, 0, STORE_ROW_MEMBER);
	row_is(st, bb, 0, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 1);
	ck_assert_int_eq(store_debug_count(st, "members"), 1);
	ck_assert_int_eq(store_debug_count(st, "marks"), 1);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 0);
	ck_assert_uint_eq(c.lane_members, 1);
	/* Nothing of a is due while b heads the lane. */
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 0);
	row_is(st, a, 0, STORE_ROW_MEMBER);

	ck_assert_int_eq(deliver(st, bb, 0), 1);
	store_key_row(rk, a, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(r.due, 5000);
	ck_assert_mem_eq(r.replay_id, id, UUID_LEN);
	head_alone(st, a);
	store_close(st);
}
END_TEST

/* Dead entries whose row or hook is gone are dropped and counted apart. */
START_TEST(test_replay_orphans)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_replay rp;
	struct store_replay_step s;
	struct store_counts c;
	struct store *st;
	unsigned char id[UUID_LEN], rk[STORE_ROWKEY_LEN];
	uint64_t a, bb, cc;

	st = open_ok();
	a = put_rows(st, "acme", "github", 10, &row, 1);
	bb = put_rows(st, "acme", "github", 10, &row, 1);
	cc = put_rows(st, "acme", "github", 10, &row, 1);
	ck_assert_int_eq(kill_row(st, a, 0, 100, "permanent:410", "", 1), 1);
	ck_assert_int_eq(kill_row(st, bb, 0, 200, "permanent:410", "", 1), 1);
	ck_assert_int_eq(kill_row(st, cc, 0, 300, "permanent:410", "", 1), 1);
	/* a's hook gone, b's row gone. */
	store_close(st);
	store_key_hook(rk, a);
	table_del("hooks.db", rk, 8);
	store_key_row(rk, bb, 0);
	table_del("rows.db", rk, sizeof(rk));
	st = open_ok();

	uuidv7_new(id);
	job_init(&rp, NULL, 1000);
	ck_assert_int_eq(step(st, id, &rp, 10, 5000, &s), 0);
	ck_assert_uint_eq(s.moved, 1);
	ck_assert_uint_eq(s.dropped, 2);
	ck_assert_uint_eq(rp.dropped, 2);
	row_is(st, cc, 0, STORE_ROW_DUE);
	store_key_row(rk, a, 0);
	ck_assert_int_eq(row_get(st, rk, &(struct store_row){ 0 }), 0);
	ck_assert_int_eq(store_debug_count(st, "dead"), 0);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 0);
	ck_assert_uint_eq(c.rows, 2);		/* b's was counted, c's */
	store_close(st);
}
END_TEST

/* A step reads at most visits entries, and goes on after them. */
START_TEST(test_replay_visits)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_replay rp;
	struct store_replay_step s;
	struct store_batch *b;
	struct store *st;
	unsigned char id[UUID_LEN];
	uint64_t seq[6];
	int i, ret;

	st = open_ok();
	for (i = 0; i < 6; i++) {
		seq[i] = put_rows(st, "acme", i < 5 ? "stripe" : "github", 10,
		    &row, 1);
		ck_assert_int_eq(kill_row(st, seq[i], 0, 100 + i,
		    "permanent:410", "", 1), 1);
	}
	uuidv7_new(id);
	job_init(&rp, "github", 1000);
	for (i = 0; i < 3; i++) {
		memset(&s, 0, sizeof(s));
		s.now = 5000;
		s.limit = 10;
		s.visits = 2;
		ck_assert_ptr_nonnull(b = store_batch_begin(st));
		ret = store_batch_replay_step(b, id, &rp, &s);
		commit_ok(st, b);
		ck_assert_int_eq(ret, 1);
		ck_assert_uint_eq(s.moved, i == 2 ? 1 : 0);
	}
	ck_assert_int_eq(step(st, id, &rp, 10, 5000, &s), 0);
	ck_assert_uint_eq(rp.moved, 1);
	row_is(st, seq[5], 0, STORE_ROW_DUE);
	store_close(st);
}
END_TEST

/* A hook put with a replay id (a held hook a quarantine job released):
 * each of its rows carries the job's id. */
START_TEST(test_replay_put_hook_rows)
{
	struct store_row_spec rows[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_HTTP, 1, 0x42 },
	};
	struct store_batch *b;
	struct store_hook h;
	struct store_row r;
	struct store *st;
	unsigned char id[UUID_LEN], rk[STORE_ROWKEY_LEN];
	int i;

	st = open_ok();
	uuidv7_new(id);
	hook_fill(&h, "github", "x", 1);
	memcpy(h.replay_id, id, UUID_LEN);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, rows, 2), 0);
	commit_ok(st, b);
	for (i = 0; i < 2; i++) {
		store_key_row(rk, h.seq, i);
		ck_assert_int_eq(row_get(st, rk, &r), 1);
		ck_assert_mem_eq(r.replay_id, id, UUID_LEN);
	}
	store_close(st);
}
END_TEST

static Suite *
replay_suite(void)
{
	Suite *s = suite_create("store_replay");
	TCase *tc;

	tc = tcase_create("replay");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_replay_records);
	tcase_add_test(tc, test_replay_step);
	tcase_add_test(tc, test_replay_step_abort);
	tcase_add_test(tc, test_replay_lane);
	tcase_add_test(tc, test_replay_orphans);
	tcase_add_test(tc, test_replay_visits);
	tcase_add_test(tc, test_replay_put_hook_rows);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return storeutil_run(replay_suite());
}
