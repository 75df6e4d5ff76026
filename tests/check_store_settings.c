/* SPDX-License-Identifier: ISC */
/*
 * check_store_settings.c: unit tests of daemon/store/store_settings.c: the
 * settings kept in meta (put, overwrite, list by prefix, delete, kept
 * across a reopen) and the moves of manual operations over the due table
 * (retry now of a tenant's source or sink, steps bounded by limit and
 * visits, rows parked by a breaker left alone, a pause's rows brought
 * back in every tenant, a hook's rows).
 *
 * Each case works in its own mkdtemp directory under TMPDIR and removes it.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "store.h"
#include "store_int.h"
#include "store_rec.h"
#include "storeutil.h"

static Suite	*settings_suite(void);

struct set_seen {
	char	name[8][STORE_SETTING_NAME_MAX + 1];
	char	val[8][STORE_SETTING_VAL_MAX + 1];
	int	n;
};

static int
set_cb(const char *name, const void *val, size_t len, void *arg)
{
	struct set_seen *s = arg;

	ck_assert_int_lt(s->n, 8);
	snprintf(s->name[s->n], sizeof(s->name[0]), "%s", name);
	memcpy(s->val[s->n], val, len);
	s->val[s->n][len] = '\0';
	s->n++;
	return 0;
}

static void
set_put(struct store *st, const char *name, const char *val)
{
	struct store_batch *b;

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_setting_put(b, name, val, strlen(val)),
	    0);
	commit_ok(st, b);
}

static int
set_del(struct store *st, const char *name)
{
	struct store_batch *b;
	int rc;

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	rc = store_batch_setting_del(b, name);
	commit_ok(st, b);
	return rc;
}

START_TEST(test_settings)
{
	struct set_seen s;
	struct store_batch *b;
	struct store *st;
	char big[STORE_SETTING_NAME_MAX + 2];

	st = open_ok();
	set_put(st, "pause:a#0", "x");
	set_put(st, "pause:b#1", "yy");
	set_put(st, "rate:t1", "r1");
	set_put(st, "pause:a#0", "z");		/* overwritten */
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(store_settings_list(st, "pause:", set_cb, &s), 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.name[0], "pause:a#0");
	ck_assert_str_eq(s.val[0], "z");
	ck_assert_str_eq(s.name[1], "pause:b#1");
	ck_assert_int_eq(set_del(st, "pause:a#0"), 1);
	ck_assert_int_eq(set_del(st, "pause:a#0"), 0);

	/* A name too long fails the batch, naming it. */
	memset(big, 'n', sizeof(big) - 1);
	big[sizeof(big) - 1] = '\0';
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_setting_put(b, big, "v", 1), -1);
	ck_assert_ptr_nonnull(strstr(store_strerror(st), "setting"));
	store_batch_abort(b);

	ck_assert_int_eq(store_close(st), 0);
	st = open_ok();
	memset(&s, 0, sizeof(s));
	ck_assert_int_eq(store_settings_list(st, "", set_cb, &s), 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_str_eq(s.name[0], "pause:b#1");
	ck_assert_str_eq(s.val[0], "yy");
	ck_assert_str_eq(s.name[1], "rate:t1");
	/* Counters untouched: settings are not hooks. */
	ck_assert_int_eq(store_counts(st, &(struct store_counts){ 0 }), 0);
	ck_assert_int_eq(store_close(st), 0);
}
END_TEST

/* Row (seq, sink) rescheduled to due in state. */
static void
resched(struct store *st, uint64_t seq, uint32_t sink, uint64_t due,
    uint8_t state)
{
	unsigned char rk[STORE_ROWKEY_LEN];
	struct store_batch *b;
	struct store_row r;

	store_key_row(rk, seq, sink);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	r.due = due;
	r.state = state;
	r.attempts = 3;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &r), 1);
	commit_ok(st, b);
}

static uint64_t
due_of(struct store *st, uint64_t seq, uint32_t sink)
{
	unsigned char rk[STORE_ROWKEY_LEN];
	struct store_row r;

	store_key_row(rk, seq, sink);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.attempts, 3);	/* no attempt spent */
	return r.due;
}

/* Steps of m until the end; how many steps. */
static int
move_all(struct store *st, struct store_due_move *m, int hook)
{
	struct store_batch *b;
	int rc, steps = 0;

	do {
		ck_assert_ptr_nonnull(b = store_batch_begin(st));
		rc = hook ? store_batch_hook_move(b, m) :
		    store_batch_due_move(b, m);
		ck_assert_msg(rc >= 0, "move: %s", store_strerror(st));
		commit_ok(st, b);
		steps++;
		ck_assert_int_lt(steps, 100);
	} while (rc == 1);
	return steps;
}

static int
skip_seq(const unsigned char *rk, void *arg)
{
	return store_rowkey_seq(rk) == *(uint64_t *)arg;
}

START_TEST(test_due_move)
{
	struct store_row_spec two[2] = { { 0, MODULE_HTTP, 0, 0 },
	    { 1, MODULE_HTTP, 0, 0 } };
	struct store_due_move m;
	struct scanned sc;
	struct store *st;
	uint64_t a1, a2, a3, o1, b1, skipped;

	st = open_ok();
	a1 = put_rows(st, "t1", "a", 1000, two, 2);
	a2 = put_rows(st, "t1", "a", 1000, two, 2);
	a3 = put_rows(st, "t1", "a", 1000, two, 2);
	o1 = put_rows(st, "t2", "a", 1000, two, 2);
	b1 = put_rows(st, "t1", "b", 1000, two, 1);
	resched(st, a1, 0, 50000, STORE_ROW_DUE);	/* backing off */
	resched(st, a1, 1, 60000, STORE_ROW_DUE);
	resched(st, a2, 0, 55000, STORE_ROW_PARKED);	/* a breaker's */
	resched(st, a2, 1, STORE_DUE_PAUSED, STORE_ROW_PARKED);
	resched(st, a3, 0, 70000, STORE_ROW_DUE);
	resched(st, a3, 1, 1500, STORE_ROW_DUE);	/* due already */
	resched(st, o1, 0, 50000, STORE_ROW_DUE);	/* another tenant */
	resched(st, o1, 1, STORE_DUE_PAUSED, STORE_ROW_PARKED);
	resched(st, b1, 0, 50000, STORE_ROW_DUE);	/* another source */

	/* Retry now of t1's source a, sink 1: one row. */
	memset(&m, 0, sizeof(m));
	m.tenant = "t1";
	m.source = "a";
	m.sink = 1;
	m.from = 2001;
	m.to = STORE_DUE_PAUSED - 1;
	m.keep_parked = 1;
	m.due = 2000;
	move_all(st, &m, 0);
	ck_assert_uint_eq(m.moved, 1);
	ck_assert_uint_eq(due_of(st, a1, 1), 2000);
	ck_assert_uint_eq(due_of(st, a1, 0), 50000);

	/* Of every sink, a row at a time (limit 1), one claimed row left
	 * alone: two rows moved, in more than one step. */
	memset(m.at, 0, sizeof(m.at));
	m.at_len = 0;
	m.moved = 0;
	m.any_sink = 1;
	m.limit = 1;
	skipped = a3;
	m.skip = skip_seq;
	m.arg = &skipped;
	ck_assert_int_ge(move_all(st, &m, 0), 2);
	ck_assert_uint_eq(m.moved, 1);
	ck_assert_uint_eq(due_of(st, a1, 0), 2000);
	ck_assert_uint_eq(due_of(st, a3, 0), 70000);	/* skipped */
	ck_assert_uint_eq(due_of(st, a2, 0), 55000);	/* breaker's */
	ck_assert_uint_eq(due_of(st, a2, 1), STORE_DUE_PAUSED);
	ck_assert_uint_eq(due_of(st, o1, 0), 50000);	/* tenant t2 */
	ck_assert_uint_eq(due_of(st, b1, 0), 50000);	/* source b */
	ck_assert_uint_eq(due_of(st, a3, 1), 1500);

	/* The due scan sees the moved rows as due, in state DUE. */
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "t1", 2000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 3);

	/* A resume of a#1 in every tenant, a key read a step (visits 1):
	 * the paused rows of t1 and t2 come back, DUE. */
	memset(&m, 0, sizeof(m));
	m.source = "a";
	m.sink = 1;
	m.from = m.to = STORE_DUE_PAUSED;
	m.due = 3000;
	m.visits = 1;
	ck_assert_int_ge(move_all(st, &m, 0), 2);
	ck_assert_uint_eq(m.moved, 2);
	ck_assert_uint_eq(due_of(st, a2, 1), 3000);
	ck_assert_uint_eq(due_of(st, o1, 1), 3000);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "t2", 3000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_uint_eq(sc.row[0].state, STORE_ROW_DUE);
	ck_assert_int_eq(store_close(st), 0);
}
END_TEST

START_TEST(test_hook_move)
{
	struct store_row_spec two[2] = { { 0, MODULE_HTTP, 0, 0 },
	    { 1, MODULE_HTTP, 0, 0 } };
	struct store_due_move m;
	struct store *st;
	uint64_t a1, a2;

	st = open_ok();
	a1 = put_rows(st, "t1", "a", 1000, two, 2);
	a2 = put_rows(st, "t1", "a", 1000, two, 2);
	resched(st, a1, 0, 50000, STORE_ROW_DUE);
	resched(st, a1, 1, 55000, STORE_ROW_PARKED);
	resched(st, a2, 0, 50000, STORE_ROW_DUE);
	resched(st, a2, 1, 50000, STORE_ROW_DUE);
	memset(&m, 0, sizeof(m));
	m.tenant = "t1";
	m.source = "a";
	m.any_sink = 1;
	m.seq = a1;
	m.from = 2001;
	m.to = STORE_DUE_PAUSED - 1;
	m.keep_parked = 1;
	m.due = 2000;
	ck_assert_int_eq(move_all(st, &m, 1), 1);
	ck_assert_uint_eq(m.moved, 1);
	ck_assert_uint_eq(due_of(st, a1, 0), 2000);
	ck_assert_uint_eq(due_of(st, a1, 1), 55000);
	ck_assert_uint_eq(due_of(st, a2, 0), 50000);
	/* Another tenant's name: nothing. */
	m.moved = 0;
	m.seq = a2;
	m.tenant = "t9";
	move_all(st, &m, 1);
	ck_assert_uint_eq(m.moved, 0);
	ck_assert_int_eq(store_close(st), 0);
}
END_TEST

static Suite *
settings_suite(void)
{
	Suite *s = suite_create("store_settings");
	TCase *tc;

	tc = tcase_create("settings");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_settings);
	tcase_add_test(tc, test_due_move);
	tcase_add_test(tc, test_hook_move);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return storeutil_run(settings_suite());
}
