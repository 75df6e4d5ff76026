/* SPDX-License-Identifier: ISC */
/*
 * check_store_rows.c: unit tests of the Berkeley DB store: due scans,
 * settling, dead letters and lanes (daemon/store/store_rows.c, store_lanes.c),
 * with the commit and sync failures of the dispatch path.
 *
 * Each case works in its own mkdtemp directory under TMPDIR and removes it.
 * The recovery case forks a child that commits and then _exit()s without
 * closing anything, as a SIGKILL would leave the environment.  Damage cases
 * edit the files with BDB or plain writes behind the store's back.
 */
#include "config.h"

#include <sys/file.h>
#include <sys/stat.h>
#include <sys/types.h>
#include <sys/wait.h>

#include <check.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <limits.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ids.h"
#include "log.h"
#include "store_logsum.h"
#include "store.h"
#include "store_int.h"
#include "store_rec.h"
#include "storeutil.h"

static Suite	*store_suite(void);


/*
 * Dispatch side: due tenants and scans, settling, lanes, dead letters.
 */

START_TEST(test_due_tenants)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_row_spec ordered = { 0, MODULE_HTTP, 1, 0x42 };
	struct tenants_seen ts;
	struct store *st;
	uint64_t due;

	st = open_ok();
	ck_assert_int_eq(store_oldest_due(st, &due), 0);
	memset(&ts, 0, sizeof(ts));
	ck_assert_int_eq(store_due_tenants(st, tenants_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 0);

	put_rows(st, "acme", "github", 1000, &row, 1);
	put_rows(st, "acme", "github", 500, &row, 1);
	put_rows(st, "acme", "stripe", 700, &row, 1);
	put_rows(st, "ac", "github", 2000, &row, 1);	/* a prefix of acme */
	put_rows(st, "beta", "github", 3000, &row, 1);
	put_rows(st, "zeta", "github", 9999, &row, 1);	/* only future */
	put_rows(st, "omega", "github", 10, &ordered, 1); /* members only */

	memset(&ts, 0, sizeof(ts));
	ck_assert_int_eq(store_due_tenants(st, tenants_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 4);
	ck_assert_str_eq(ts.tenant[0], "ac");
	ck_assert_uint_eq(ts.due[0], 2000);
	ck_assert_str_eq(ts.tenant[1], "acme");
	ck_assert_uint_eq(ts.due[1], 500);
	ck_assert_str_eq(ts.tenant[2], "beta");
	ck_assert_uint_eq(ts.due[2], 3000);
	ck_assert_str_eq(ts.tenant[3], "zeta");
	ck_assert_uint_eq(ts.due[3], 9999);

	memset(&ts, 0, sizeof(ts));
	ts.stop_after = 2;
	ck_assert_int_eq(store_due_tenants(st, tenants_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 2);

	ck_assert_int_eq(store_oldest_due(st, &due), 1);
	ck_assert_uint_eq(due, 500);

	/* A tenant's next due time after t. */
	ck_assert_int_eq(store_due_next(st, "acme", 0, &due), 1);
	ck_assert_uint_eq(due, 500);
	ck_assert_int_eq(store_due_next(st, "acme", 500, &due), 1);
	ck_assert_uint_eq(due, 700);
	ck_assert_int_eq(store_due_next(st, "acme", 999, &due), 1);
	ck_assert_uint_eq(due, 1000);
	ck_assert_int_eq(store_due_next(st, "acme", 1000, &due), 0);
	ck_assert_int_eq(store_due_next(st, "acme", UINT64_MAX, &due), 0);
	ck_assert_int_eq(store_due_next(st, "ac", 0, &due), 1);
	ck_assert_uint_eq(due, 2000);
	ck_assert_int_eq(store_due_next(st, "nobody", 0, &due), 0);
	ck_assert_int_eq(store_due_next(st, "omega", 0, &due), 0);

	/* The omega member, once promoted, is the oldest. */
	ck_assert_int_eq(lane_sweep(st, "omega", 16), 1);
	ck_assert_int_eq(store_oldest_due(st, &due), 1);
	ck_assert_uint_eq(due, 10);
	store_close(st);
}
END_TEST

START_TEST(test_due_scan)
{
	struct store_row_spec rows[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
	};
	struct store_batch *b;
	struct store_hook h;
	struct scanned sc;
	struct store *st;
	uint64_t s1, s2, s3;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 300, rows, 2);
	s2 = put_rows(st, "acme", "stripe", 100, rows, 1);
	s3 = put_rows(st, "acme", "github", 200, rows, 1);
	put_rows(st, "acme", "github", 5000, rows, 1);
	put_rows(st, "acme-x", "github", 10, rows, 1);
	put_rows(st, "acm", "github", 10, rows, 1);

	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "acme", 300, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 4);
	ck_assert_uint_eq(sc.seq[0], s2);
	ck_assert_uint_eq(sc.seq[1], s3);
	ck_assert_uint_eq(sc.seq[2], s1);
	ck_assert_uint_eq(sc.sink[2], 0);
	ck_assert_uint_eq(sc.seq[3], s1);
	ck_assert_uint_eq(sc.sink[3], 1);
	/* Decoded rows. */
	ck_assert_str_eq(sc.row[0].tenant, "acme");
	ck_assert_str_eq(sc.row[0].source, "stripe");
	ck_assert_uint_eq(sc.row[0].due, 100);
	ck_assert_uint_eq(sc.row[0].state, STORE_ROW_DUE);
	ck_assert_uint_eq(sc.row[0].body_size, 1);
	ck_assert_uint_eq(sc.row[3].sink_index, 1);
	ck_assert_uint_eq(sc.row[3].module, MODULE_SQS);
	ck_assert_uint_eq(sc.row[3].attempts, 0);
	ck_assert_str_eq(sc.row[3].last_error, "");

	/* The now cutoff is inclusive. */
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "acme", 299, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 2);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "acme", 99, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 0);
	memset(&sc, 0, sizeof(sc));
	sc.stop_after = 1;
	ck_assert_int_eq(due_scan(st, "acme", 10000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "nobody", 10000, scan_cb, &sc),
	    0);
	ck_assert_int_eq(sc.n, 0);

	/* Inside a batch: its own rows too. */
	hook_fill(&h, "github", "x", 1);
	h.received_at = 150;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, rows, 1), 0);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "acme", 300, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 5);
	ck_assert_uint_eq(sc.seq[1], h.seq);
	store_batch_abort(b);
	store_close(st);
}
END_TEST

START_TEST(test_delivered)
{
	struct store_row_spec rows[3] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
		{ 2, MODULE_LOG, 0, 0 },
	};
	struct store_hook_rec rec;
	struct store_counts c;
	struct store_row r;
	struct store *st;
	struct listed l;
	unsigned char rk[STORE_ROWKEY_LEN], *big;
	uint64_t s1, s2;
	int i;

	ck_assert_ptr_nonnull(big = malloc(BIG_BODY));
	for (i = 0; i < BIG_BODY; i++)
		big[i] = (unsigned char)(i * 13 + (i >> 7));
	st = open_ok();
	s1 = put_hook_body(st, "acme", "github", 100, big, BIG_BODY, rows, 3);
	s2 = put_rows(st, "acme", "github", 200, rows, 1);

	ck_assert_int_eq(deliver(st, s1, 1), 1);
	store_key_row(rk, s1, 1);
	ck_assert_int_eq(row_get(st, rk, &r), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 3);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 2);
	ck_assert_uint_eq(c.rows, 3);
	/* The hook stays, whole, with one row fewer. */
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 1);
	ck_assert_uint_eq(rec.rows, 2);
	ck_assert_uint_eq(rec.hook.body_len, BIG_BODY);
	ck_assert_int_eq(memcmp(rec.hook.body, big, BIG_BODY), 0);
	ck_assert_str_eq(rec.hook.source, "github");
	ck_assert_int_eq(rec.hook.nheaders, 3);
	store_hook_rec_free(&rec);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 2);
	ck_assert_uint_eq(l.info[0].rows, 2);

	/* Twice: nothing to do. */
	ck_assert_int_eq(deliver(st, s1, 1), 0);
	ck_assert_int_eq(deliver(st, s1, 0), 1);
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 1);
	ck_assert_uint_eq(rec.rows, 1);
	store_hook_rec_free(&rec);
	/* The last row takes the hook with it. */
	ck_assert_int_eq(deliver(st, s1, 2), 1);
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 0);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 1);
	ck_assert_uint_eq(c.rows, 1);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);
	ck_assert_int_eq(store_debug_count(st, "hooks"), 1);
	store_close(st);

	/* Counters as committed. */
	st = open_ok();
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 1);
	ck_assert_uint_eq(c.rows, 1);
	ck_assert_int_eq(deliver(st, s2, 0), 1);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 0);
	ck_assert_uint_eq(c.rows, 0);
	ck_assert_int_eq(store_debug_count(st, "rows"), 0);
	store_close(st);
	free(big);
}
END_TEST

/* A hook's live rows (-1: no such hook). */
static int
hook_rows(struct store *st, uint64_t seq)
{
	struct store_hook_rec rec;
	int n;

	if (store_hook_get(st, seq, &rec) != 1)
		return -1;
	n = (int)rec.rows;
	store_hook_rec_free(&rec);
	return n;
}

/* Delivered with the row as its claim read it: no second read while its
 * due key proves it unchanged; a row rewritten since (its due key moved)
 * is read after all; a row gone is left alone, its hook untouched. */
START_TEST(test_delivered_known)
{
	struct store_row_spec rows[3] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
		{ 2, MODULE_LOG, 0, 0 },
	};
	struct store_batch *b;
	struct store_row r0, r1, nr;
	struct store *st;
	unsigned char rk0[STORE_ROWKEY_LEN], rk1[STORE_ROWKEY_LEN];
	unsigned char rk2[STORE_ROWKEY_LEN];
	uint64_t s1;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, rows, 3);
	store_key_row(rk0, s1, 0);
	store_key_row(rk1, s1, 1);
	store_key_row(rk2, s1, 2);
	ck_assert_int_eq(row_get(st, rk0, &r0), 1);
	ck_assert_int_eq(row_get(st, rk1, &r1), 1);
	ck_assert_int_eq(store_debug_count(st, "due"), 3);

	/* As claimed: the row and its due key go, the hook keeps 2. */
	ck_assert_int_eq(deliver_known(st, rk0, &r0), 1);
	ck_assert_int_eq(row_get(st, rk0, &nr), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 2);
	ck_assert_int_eq(hook_rows(st, s1), 2);

	/* Gone already: nothing happens, the hook keeps its count. */
	ck_assert_int_eq(deliver_known(st, rk0, &r0), 0);
	ck_assert_int_eq(hook_rows(st, s1), 2);

	/* Rewritten since (due 100 -> 700): read after all, and its real
	 * due key goes, not a stale one left behind. */
	nr = r1;
	nr.due = 700;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk1, &nr), 1);
	commit_ok(st, b);
	ck_assert_int_eq(deliver_known(st, rk1, &r1), 1);
	ck_assert_int_eq(row_get(st, rk1, &nr), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);
	ck_assert_int_eq(hook_rows(st, s1), 1);

	/* The last row takes the hook with it. */
	ck_assert_int_eq(row_get(st, rk2, &nr), 1);
	ck_assert_int_eq(deliver_known(st, rk2, &nr), 1);
	ck_assert_int_eq(hook_rows(st, s1), -1);
	ck_assert_int_eq(store_debug_count(st, "due"), 0);
	ck_assert_int_eq(store_debug_count(st, "rows"), 0);
	store_close(st);
}
END_TEST

START_TEST(test_reschedule)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_row r, nr;
	struct tenants_seen ts;
	struct scanned sc;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, &row, 1);
	store_key_row(rk, s1, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	nr = r;
	nr.due = 5000;
	nr.attempts = 2;
	nr.first_attempt = 120;
	snprintf(nr.last_error, sizeof(nr.last_error), "http 503");
	snprintf(nr.tenant, sizeof(nr.tenant), "elsewhere");	/* ignored */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 1);
	commit_ok(st, b);

	ck_assert_int_eq(store_debug_count(st, "due"), 1);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "acme", 4999, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 0);
	ck_assert_int_eq(due_scan(st, "acme", 5000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_int_eq(sc.null[0], 0);
	ck_assert_uint_eq(sc.row[0].due, 5000);
	ck_assert_uint_eq(sc.row[0].attempts, 2);
	ck_assert_uint_eq(sc.row[0].first_attempt, 120);
	ck_assert_str_eq(sc.row[0].last_error, "http 503");
	ck_assert_str_eq(sc.row[0].tenant, "acme");
	ck_assert_uint_eq(sc.row[0].state, STORE_ROW_DUE);
	memset(&ts, 0, sizeof(ts));
	ck_assert_int_eq(store_due_tenants(st, tenants_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 1);
	ck_assert_uint_eq(ts.due[0], 5000);

	/* A breaker park. */
	nr.due = 7000;
	nr.state = STORE_ROW_PARKED;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 1);
	commit_ok(st, b);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_PARKED);
	ck_assert_uint_eq(r.due, 7000);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "acme", 7000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_uint_eq(sc.row[0].state, STORE_ROW_PARKED);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);

	/* Not a pending state: the batch fails. */
	nr.state = STORE_ROW_MEMBER;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), -1);
	ck_assert_int_eq(store_batch_commit(b), -1);
	/* No such row. */
	nr.state = STORE_ROW_DUE;
	store_key_row(rk, 99, 0);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 0);
	commit_ok(st, b);
	ck_assert_int_eq(row_get(st, rk, &r), 0);
	store_close(st);
}
END_TEST

START_TEST(test_dead)
{
	struct store_row_spec rows[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
	};
	struct store_hook_rec rec;
	struct store_counts c;
	struct store_batch *b;
	struct store_row r;
	struct scanned sc;
	struct dead_seen ds;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	char longer[STORE_ERROR_MAX + 100];
	uint64_t s1;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, rows, 2);
	ck_assert_int_eq(kill_row(st, s1, 0, 777, "retries_exhausted",
	    "http 500", 84), 1);
	store_key_row(rk, s1, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_DEAD);
	ck_assert_uint_eq(r.attempts, 84);
	ck_assert_str_eq(r.last_error, "http 500");
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 1);
	ck_assert_uint_eq(c.rows, 2);
	ck_assert_uint_eq(c.hooks, 1);
	ck_assert_int_eq(store_debug_count(st, "dead"), 1);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "acme", 10000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_uint_eq(sc.sink[0], 1);
	/* The hook stays, the dead row counted live. */
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 1);
	ck_assert_uint_eq(rec.rows, 2);
	store_hook_rec_free(&rec);

	/* Dead is final: again, or delivered, or rescheduled, nothing. */
	ck_assert_int_eq(kill_row(st, s1, 0, 778, "x", "y", 1), 0);
	ck_assert_int_eq(deliver(st, s1, 0), 0);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	r.state = STORE_ROW_DUE;
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &r), 0);
	commit_ok(st, b);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);

	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list(st, NULL, 0, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 1);
	ck_assert_str_eq(ds.info[0].reason, "retries_exhausted");
	ck_assert_str_eq(ds.info[0].last_error, "http 500");
	ck_assert_uint_eq(ds.info[0].attempts, 84);
	ck_assert_uint_eq(ds.info[0].dead_at, 777);

	/* The other row as well, with reasons too long: cut. */
	memset(longer, 'r', sizeof(longer) - 1);
	longer[sizeof(longer) - 1] = '\0';
	ck_assert_int_eq(kill_row(st, s1, 1, 800, longer, longer, 3), 1);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 2);
	ck_assert_int_eq(store_debug_count(st, "due"), 0);
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list(st, NULL, 0, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 2);
	ck_assert_uint_eq(strlen(ds.info[1].reason), STORE_ERROR_MAX);
	ck_assert_uint_eq(strlen(ds.info[1].last_error), STORE_ERROR_MAX);
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 1);
	store_hook_rec_free(&rec);
	store_close(st);

	st = open_ok();
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 2);
	ck_assert_uint_eq(c.rows, 2);
	store_close(st);
}
END_TEST

START_TEST(test_lanes)
{
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0x77 };
	struct store_batch *b;
	struct store_row r;
	struct scanned sc;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s[4];
	int i;

	st = open_ok();
	ck_assert_uint_eq(store_lane_members(st), 0);
	for (i = 0; i < 3; i++)
		s[i] = put_rows(st, "acme", "github", 100 * (i + 1), &ord, 1);
	ck_assert_uint_eq(store_lane_members(st), 3);
	ck_assert_int_eq(store_debug_count(st, "members"), 3);
	ck_assert_int_eq(store_debug_count(st, "marks"), 1);
	ck_assert_int_eq(store_debug_count(st, "due"), 0);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 0);

	/* The sweep promotes the first: a head and its due key. */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_lane_sweep(b, "acme", 0, 16), 1);
	ck_assert_uint_eq(store_lane_members(st), 2);
	commit_ok(st, b);
	ck_assert_uint_eq(store_lane_members(st), 2);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 1);
	ck_assert_int_eq(store_debug_count(st, "members"), 2);
	ck_assert_int_eq(store_debug_count(st, "marks"), 1);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "acme", 1000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_uint_eq(sc.seq[0], s[0]);
	ck_assert_uint_eq(sc.row[0].state, STORE_ROW_HEAD);
	ck_assert_uint_eq(sc.row[0].due, 100);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 0);

	/* Delivering the head promotes the next in the same batch. */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	store_key_row(rk, s[0], 0);
	ck_assert_int_eq(store_batch_row_delivered(b, rk, NULL, NULL), 1);
	store_key_row(rk, s[1], 0);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 1);
	commit_ok(st, b);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "acme", 1000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_uint_eq(sc.seq[0], s[1]);
	ck_assert_int_eq(store_debug_count(st, "marks"), 1);

	/* Dead-lettering the head promotes the last; its mark goes. */
	ck_assert_int_eq(kill_row(st, s[1], 0, 900, "permanent:410", "gone",
	    1), 1);
	store_key_row(rk, s[2], 0);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_debug_count(st, "members"), 0);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 1);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);

	/* The last head ends: an idle lane, no state left. */
	ck_assert_int_eq(deliver(st, s[2], 0), 1);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 0);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
	ck_assert_int_eq(store_debug_count(st, "hooks"), 1);	/* the dead */

	/* A member into the idle lane: the sweep makes it the head. */
	s[3] = put_rows(st, "acme", "github", 400, &ord, 1);
	ck_assert_int_eq(store_debug_count(st, "marks"), 1);
	ck_assert_int_eq(lane_sweep(st, "other", 16), 0);
	ck_assert_int_eq(lane_sweep(st, "acme", 0), 0);		/* max 0 */
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);
	store_key_row(rk, s[3], 0);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
	ck_assert_uint_eq(store_lane_members(st), 0);
	store_close(st);
}
END_TEST

/* A retried or parked head stays its lane's head. */
START_TEST(test_lane_head_parked)
{
	struct store_row_spec ord = { 2, MODULE_SQS, 1, 0x99 };
	struct store_batch *b;
	struct store_row r, nr;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1, s2, s3;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, &ord, 1);
	s2 = put_rows(st, "acme", "github", 200, &ord, 1);
	s3 = put_rows(st, "acme", "github", 300, &ord, 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);

	/* A retry written as DUE stays HEAD. */
	store_key_row(rk, s1, 2);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	nr = r;
	nr.state = STORE_ROW_DUE;
	nr.due = 1000;
	nr.attempts = 1;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 1);
	commit_ok(st, b);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(r.due, 1000);
	/* Parked: PARKED, still the head. */
	nr.state = STORE_ROW_PARKED;
	nr.due = 2000;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 1);
	commit_ok(st, b);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_PARKED);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 0);
	/* Unparked as DUE: HEAD again. */
	nr.state = STORE_ROW_DUE;
	nr.due = 2500;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 1);
	commit_ok(st, b);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	/* Parked again and delivered: the lane is released. */
	nr.state = STORE_ROW_PARKED;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 1);
	commit_ok(st, b);
	ck_assert_int_eq(deliver(st, s1, 2), 1);
	store_key_row(rk, s2, 2);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(r.due, 200);
	ck_assert_uint_eq(store_lane_members(st), 1);
	/* A parked head dead-lettered: released as well. */
	nr = r;
	nr.state = STORE_ROW_PARKED;
	nr.due = 9000;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &nr), 1);
	commit_ok(st, b);
	ck_assert_int_eq(kill_row(st, s2, 2, 950, "retry_horizon:sqs", "",
	    5), 1);
	store_key_row(rk, s3, 2);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);
	store_close(st);
}
END_TEST

/* A head whose row is gone or DEAD is healed by the sweep; its stale due
 * key is reported with no row and dropped. */
START_TEST(test_lane_heal)
{
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0x55 };
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_row r;
	struct scanned sc;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN], val[STORE_REC_MAX];
	uint64_t s1, s2, s3, s4;
	size_t vlen;
	int i;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, &ord, 1);
	s2 = put_rows(st, "acme", "github", 200, &ord, 1);
	s3 = put_rows(st, "acme", "github", 300, &ord, 1);
	s4 = put_rows(st, "acme", "github", 400, &row, 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);
	store_close(st);
	store_key_row(rk, s1, 0);
	table_del("rows.db", rk, sizeof(rk));

	st = open_ok();
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan_keys(st, "acme", 1000, scan_keys_cb,
	    &sc), 0);
	ck_assert_int_eq(sc.n, 2);
	ck_assert_int_eq(sc.null[0], 1);
	ck_assert_uint_eq(sc.seq[0], s1);
	ck_assert_uint_eq(sc.due[0], 100);
	ck_assert_int_eq(sc.null[1], 0);
	ck_assert_uint_eq(sc.seq[1], s4);
	/* The plain scan reports it too, with no row. */
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "acme", 1000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 2);
	ck_assert_int_eq(sc.null[0], 1);
	ck_assert_uint_eq(sc.seq[0], s1);
	ck_assert_int_eq(due_scan_keys(st, "acme", 1000, scan_keys_cb,
	    &sc), 0);
	ck_assert_int_eq(sc.n, 4);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	/* A live key is never dropped; the stale one is. */
	ck_assert_int_eq(store_batch_due_drop(b, sc.key[3], sc.klen[3]), 0);
	ck_assert_int_eq(store_batch_due_drop(b, sc.key[2], sc.klen[2]), 1);
	ck_assert_int_eq(store_batch_due_drop(b, sc.key[2], sc.klen[2]), 0);
	/* The sweep heals the lane: the next member is its head. */
	ck_assert_int_eq(store_batch_lane_sweep(b, "acme", 0, 16), 1);
	commit_ok(st, b);
	ck_assert_int_eq(store_debug_count(st, "due"), 2);
	store_key_row(rk, s2, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 1);

	/* A head left DEAD without a release: healed the same way. */
	r.state = STORE_ROW_DEAD;
	ck_assert_uint_gt(vlen = store_rec_row_encode(&r, val, sizeof(val)),
	    0);
	store_close(st);
	table_poke("rows.db", rk, sizeof(rk), val, vlen);
	st = open_ok();
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "acme", 1000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 2);
	for (i = 0; i < sc.n; i++)
		ck_assert_int_eq(sc.null[i], sc.seq[i] == s2);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);
	store_key_row(rk, s3, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
	store_close(st);
}
END_TEST

/*
 * An orphan (a row whose hook is gone) is a terminal transition of its
 * head: settled as dispatch settles it (dead, permanent), the row is
 * dropped and its lane released in the same batch, the next member its
 * head; an orphaned member leaves its lane the same way.
 */
START_TEST(test_lane_orphan_head)
{
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0x77 };
	struct store_counts c;
	struct store_row r;
	struct scanned sc;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1, s2, s3, s4;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, &ord, 1);
	s2 = put_rows(st, "acme", "github", 200, &ord, 1);
	s3 = put_rows(st, "acme", "github", 300, &ord, 1);
	s4 = put_rows(st, "acme", "github", 400, &ord, 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);	/* s1 heads */
	st = orphan(st, s1, s3);

	ck_assert_int_eq(kill_row(st, s1, 0, 500, "permanent:hook 1 is gone",
	    "hook 1 is gone", 1), 2);
	store_key_row(rk, s1, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 0);
	store_key_row(rk, s2, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_uint_eq(store_lane_members(st), 2);
	/* The new head is due, the orphan's key gone. */
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(due_scan(st, "acme", 1000, scan_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_int_eq(sc.null[0], 0);
	ck_assert_uint_eq(sc.seq[0], s2);

	/* An orphaned member leaves its lane; the lane goes on to s4. */
	ck_assert_int_eq(kill_row(st, s3, 0, 600, "source_gone:github", "",
	    0), 2);
	ck_assert_uint_eq(store_lane_members(st), 1);
	ck_assert_int_eq(deliver(st, s2, 0), 1);
	head_alone(st, s4);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 0);
	ck_assert_uint_eq(c.rows, 1);
	ck_assert_int_eq(store_debug_count(st, "dead"), 0);
	store_close(st);
}
END_TEST

/* A member whose row is gone is dropped at promotion, not stalling. */
START_TEST(test_lane_member_gone)
{
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0x66 };
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1, s2;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, &ord, 1);
	s2 = put_rows(st, "acme", "github", 200, &ord, 1);
	store_close(st);
	store_key_row(rk, s1, 0);
	table_del("rows.db", rk, sizeof(rk));
	st = open_ok();
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);
	head_alone(st, s2);
	store_close(st);
}
END_TEST

START_TEST(test_lane_member_dead)
{
	struct store_row_spec ord = { 1, MODULE_HTTP, 1, 0x11 };
	struct store_row r;
	struct store_counts c;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1, s2, s3, s4;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, &ord, 1);
	s2 = put_rows(st, "acme", "github", 200, &ord, 1);
	s3 = put_rows(st, "acme", "github", 300, &ord, 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);
	ck_assert_uint_eq(store_lane_members(st), 2);

	/* A member dead-lettered leaves its lane. */
	ck_assert_int_eq(kill_row(st, s2, 1, 500, "source_gone:github", "",
	    0), 1);
	store_key_row(rk, s2, 1);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_DEAD);
	ck_assert_uint_eq(store_lane_members(st), 1);
	ck_assert_int_eq(store_debug_count(st, "members"), 1);
	ck_assert_int_eq(store_debug_count(st, "marks"), 1);
	ck_assert_int_eq(store_debug_count(st, "due"), 1);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 1);

	/* The head's end skips it: the next is s3. */
	ck_assert_int_eq(deliver(st, s1, 1), 1);
	store_key_row(rk, s3, 1);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_HEAD);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);

	/* The last member dead-lettered behind a live head: no mark. */
	s4 = put_rows(st, "acme", "github", 400, &ord, 1);
	ck_assert_int_eq(store_debug_count(st, "marks"), 1);
	ck_assert_int_eq(kill_row(st, s4, 1, 600, "source_gone:github", "",
	    0), 1);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_debug_count(st, "members"), 0);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 1);
	store_close(st);
}
END_TEST

START_TEST(test_lane_members_restart)
{
	struct store_row_spec ord[2] = {
		{ 0, MODULE_HTTP, 1, 0x1 }, { 1, MODULE_HTTP, 1, 0x2 },
	};
	struct store_batch *b;
	struct store_hook h;
	struct store *st;

	st = open_ok();
	put_rows(st, "acme", "github", 100, ord, 2);
	put_rows(st, "acme", "github", 200, ord, 1);
	ck_assert_uint_eq(store_lane_members(st), 3);
	/* A batch's own members count while it is open, not after abort. */
	hook_fill(&h, "github", "x", 1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, ord, 2), 0);
	ck_assert_uint_eq(store_lane_members(st), 5);
	store_batch_abort(b);
	ck_assert_uint_eq(store_lane_members(st), 3);
	store_close(st);

	st = open_ok();
	ck_assert_uint_eq(store_lane_members(st), 3);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 2);
	ck_assert_uint_eq(store_lane_members(st), 1);
	store_close(st);

	st = open_ok();
	ck_assert_uint_eq(store_lane_members(st), 1);
	store_close(st);

	/* A store without the counter counts its members at open. */
	meta_delete("lane_members");
	st = open_ok();
	ck_assert_uint_eq(store_lane_members(st), 1);
	put_rows(st, "acme", "github", 300, ord, 1);
	ck_assert_uint_eq(store_lane_members(st), 2);
	store_close(st);
	st = open_ok();
	ck_assert_uint_eq(store_lane_members(st), 2);
	store_close(st);
}
END_TEST

START_TEST(test_marked_tenants)
{
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0x3 };
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct tenants_seen ts;
	struct store *st;

	st = open_ok();
	memset(&ts, 0, sizeof(ts));
	ck_assert_int_eq(store_marked_tenants(st, marked_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 0);
	put_rows(st, "beta", "github", 100, &ord, 1);
	put_rows(st, "acme", "github", 100, &ord, 1);
	put_rows(st, "acme", "github", 100, &ord, 1);
	ord.lane_hash = 0x4;
	put_rows(st, "acme", "github", 100, &ord, 1);
	put_rows(st, "ac", "github", 100, &ord, 1);
	put_rows(st, "zeta", "github", 100, &row, 1);
	memset(&ts, 0, sizeof(ts));
	ck_assert_int_eq(store_marked_tenants(st, marked_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 3);
	ck_assert_str_eq(ts.tenant[0], "ac");
	ck_assert_str_eq(ts.tenant[1], "acme");
	ck_assert_str_eq(ts.tenant[2], "beta");
	memset(&ts, 0, sizeof(ts));
	ts.stop_after = 1;
	ck_assert_int_eq(store_marked_tenants(st, marked_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 1);

	/* Promoted lanes with no member left lose their marks. */
	ck_assert_int_eq(lane_sweep(st, "ac", 16), 1);
	ck_assert_int_eq(lane_sweep(st, "beta", 16), 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 2);
	memset(&ts, 0, sizeof(ts));
	ck_assert_int_eq(store_marked_tenants(st, marked_cb, &ts), 0);
	ck_assert_int_eq(ts.n, 1);
	ck_assert_str_eq(ts.tenant[0], "acme");
	store_close(st);
}
END_TEST

/* The delivered row that was its hook's last says so (the hook went with
 * it); a row not there says neither. */
START_TEST(test_delivered_last)
{
	struct store_row_spec rows[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_LOG, 0, 0 }
	};
	struct store_counts c;
	struct store_batch *b;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1;
	int last = -1;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, rows, 2);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	store_key_row(rk, s1, 1);
	ck_assert_int_eq(store_batch_row_delivered(b, rk, NULL, &last), 1);
	ck_assert_int_eq(last, 0);
	store_key_row(rk, s1, 0);
	ck_assert_int_eq(store_batch_row_delivered(b, rk, NULL, &last), 1);
	ck_assert_int_eq(last, 1);
	/* Gone already: 0, and not the last. */
	ck_assert_int_eq(store_batch_row_delivered(b, rk, NULL, &last), 0);
	ck_assert_int_eq(last, 0);
	commit_ok(st, b);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 0);
	ck_assert_uint_eq(c.rows, 0);
	store_close(st);
}
END_TEST

/* A lazy commit (no flush) is visible at once and kept by a clean close. */
START_TEST(test_commit_lazy)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_counts c;
	struct store_row bad;
	struct store_batch *b;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, &row, 1);
	store_key_row(rk, s1, 0);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_row_delivered(b, rk, NULL, NULL), 1);
	ck_assert_int_eq(store_batch_commit_lazy(b), 0);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.rows, 0);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));	/* closed */
	store_batch_abort(b);
	store_close(st);
	st = open_ok();
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.rows, 0);
	ck_assert_uint_eq(c.hooks, 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 0);
	/* A failed batch is aborted by it, as by store_batch_commit. */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	memset(&bad, 0, sizeof(bad));
	bad.state = STORE_ROW_MEMBER;
	ck_assert_int_eq(store_batch_row_reschedule(b, rk, &bad), -1);
	ck_assert_int_eq(store_batch_commit_lazy(b), -1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	store_batch_abort(b);
	store_close(st);
}
END_TEST

static int
failing_fsync(int fd)
{
	errno = EIO;
	return -1;
}

/* A log flush that fails loses the store until a restart: no batch after
 * it is committed (it could sit behind log pages the kernel dropped), and
 * the restart's recovery keeps what was synced before. */
START_TEST(test_flush_fails)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_counts c;
	struct store_batch *b;
	struct store_hook h;
	struct store *st;

	st = open_ok();
	(void)put_one(st, "github", "synced", 6, 1);
	ck_assert_int_eq(store_lost(st), 0);
	store_set_sync_func(failing_fsync);
	hook_fill(&h, "github", "lost?", 5);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	ck_assert_int_eq(store_batch_commit(b), -1);
	store_set_sync_func(NULL);
	ck_assert_msg(strstr(store_strerror(st), "log flush") != NULL, "%s",
	    store_strerror(st));
	ck_assert_int_eq(store_lost(st), 1);
	/* Even with the disk well again: refused, naming the first cause. */
	ck_assert_ptr_null(store_batch_begin(st));
	ck_assert_msg(strstr(store_strerror(st), "restart") != NULL &&
	    strstr(store_strerror(st), "log flush") != NULL, "%s",
	    store_strerror(st));
	store_close(st);

	st = open_ok();
	ck_assert_int_eq(store_lost(st), 0);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_ge(c.hooks, 1);
	(void)put_one(st, "github", "after", 5, 1);
	store_close(st);
}
END_TEST

/* Fails the sync of a table file (a name ending in ".db"), as a disk
 * that cannot write it back; the log's syncs succeed. */
static int
failing_table_fsync(int fd)
{
	char link[64], path[PATH_MAX];
	ssize_t n;

	snprintf(link, sizeof(link), "/proc/self/fd/%d", fd);
	if ((n = readlink(link, path, sizeof(path) - 1)) > 3) {
		path[n] = '\0';
		if (strcmp(path + n - 3, ".db") == 0) {
			errno = EIO;
			return -1;
		}
	}
	return fdatasync(fd);
}

/* How many of the first 64 log files are in tmpdir. */
static int
log_files(void)
{
	uint32_t i;
	int n = 0;

	for (i = 1; i < 64; i++)
		n += log_file_exists(i);
	return n;
}

/* A checkpoint whose sync of a table fails loses the store as a failed
 * log flush does (docs/DEPARTURES 12): no batch and no checkpoint after it
 * (the next sync would "succeed" on pages the kernel dropped, and that
 * checkpoint let go of the log), its close fails, and the restart's
 * recovery keeps every committed hook. */
START_TEST(test_checkpoint_sync_fails)
{
	struct store_hook_rec rec;
	struct store *st;
	uint64_t s1, s2;
	int logs;

	st = open_ok();
	s1 = put_one(st, "github", "before", 6, 1);
	ck_assert_int_eq(store_checkpoint(st), 0);
	s2 = put_one(st, "github", "after", 5, 1);
	logs = log_files();
	store_set_sync_func(failing_table_fsync);
	ck_assert_int_eq(store_checkpoint(st), -1);
	store_set_sync_func(NULL);
	ck_assert_int_eq(store_lost(st), 1);
	ck_assert_msg(strstr(store_strerror(st), "checkpoint: fdatasync of") !=
	    NULL && strstr(store_strerror(st), ".db failed") != NULL, "%s",
	    store_strerror(st));
	/* The disk well again: still refused. */
	ck_assert_int_eq(store_checkpoint(st), -1);
	ck_assert_msg(strstr(store_strerror(st), "no checkpoint") != NULL,
	    "%s", store_strerror(st));
	ck_assert_ptr_null(store_batch_begin(st));
	ck_assert_int_eq(store_close(st), -1);
	ck_assert_int_eq(log_files(), logs);

	st = open_ok();
	ck_assert_int_eq(store_lost(st), 0);
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 1);
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_hook_get(st, s2, &rec), 1);
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_close(st), 0);
}
END_TEST

/* A close whose table sync fails is not a clean one (-1), and loses
 * nothing committed. */
START_TEST(test_close_sync_fails)
{
	struct store_hook_rec rec;
	struct store *st;
	uint64_t s1;

	st = open_ok();
	s1 = put_one(st, "github", "closing", 7, 1);
	store_set_sync_func(failing_table_fsync);
	ck_assert_int_eq(store_close(st), -1);
	store_set_sync_func(NULL);
	st = open_ok();
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 1);
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_close(st), 0);
}
END_TEST

/* The sweep visits at most max lanes, and the next goes on after them. */
START_TEST(test_lane_sweep_resume)
{
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0 };
	struct store *st;
	int i, j;

	st = open_ok();
	for (i = 0; i < 3; i++) {
		ord.lane_hash = i + 1;
		for (j = 0; j < 2; j++)
			put_rows(st, "acme", "github", 100, &ord, 1);
	}
	put_rows(st, "beta", "github", 100, &ord, 1);
	ck_assert_uint_eq(store_lane_members(st), 7);
	ck_assert_int_eq(lane_sweep(st, "acme", 2), 2);
	ck_assert_int_eq(lane_sweep(st, "beta", 2), 1);	/* its own place */
	ck_assert_int_eq(lane_sweep(st, "acme", 2), 1);	/* the third lane */
	ck_assert_int_eq(lane_sweep(st, "acme", 2), 0);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 4);
	ck_assert_int_eq(store_debug_count(st, "marks"), 3);
	ck_assert_uint_eq(store_lane_members(st), 3);
	store_close(st);
}
END_TEST

START_TEST(test_dead_list)
{
	struct store_row_spec rows[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
	};
	struct dead_seen ds;
	struct store_hook h;
	struct store_batch *b;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	char idbuf[UUID_STRLEN + 1];
	uint64_t sa, sb, sc;

	st = open_ok();
	hook_fill(&h, "github", "a", 1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, rows, 2), 0);
	commit_ok(st, b);
	sa = h.seq;
	sb = put_rows(st, "acme", "stripe", 100, rows, 1);
	sc = put_rows(st, "acme", "github", 100, rows, 1);
	ck_assert_int_eq(kill_row(st, sa, 0, 300, "permanent:400", "bad", 1),
	    1);
	ck_assert_int_eq(kill_row(st, sb, 0, 100, "retries_exhausted", "e",
	    84), 1);
	ck_assert_int_eq(kill_row(st, sc, 0, 200, "attempt_timeout:30000",
	    "t", 2), 1);
	ck_assert_int_eq(kill_row(st, sa, 1, 400, "sink_gone:1:sqs", "", 0),
	    1);

	/* Oldest first. */
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list(st, NULL, 0, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 4);
	ck_assert_uint_eq(ds.info[0].seq, sb);
	ck_assert_uint_eq(ds.info[1].seq, sc);
	ck_assert_uint_eq(ds.info[2].seq, sa);
	ck_assert_uint_eq(ds.info[3].seq, sa);
	ck_assert_uint_eq(ds.info[3].sink_index, 1);
	/* Every field of one. */
	uuid_format(h.id, idbuf);
	ck_assert_str_eq(ds.info[2].hook_id, idbuf);
	ck_assert_str_eq(ds.info[2].tenant, "acme");
	ck_assert_str_eq(ds.info[2].source, "github");
	ck_assert_uint_eq(ds.info[2].module, MODULE_HTTP);
	ck_assert_uint_eq(ds.info[2].sink_index, 0);
	ck_assert_str_eq(ds.info[2].reason, "permanent:400");
	ck_assert_str_eq(ds.info[2].last_error, "bad");
	ck_assert_uint_eq(ds.info[2].attempts, 1);
	ck_assert_uint_eq(ds.info[2].dead_at, 300);
	store_key_row(rk, sa, 0);
	ck_assert_mem_eq(ds.info[2].rowkey, rk, sizeof(rk));
	ck_assert_uint_eq(ds.info[3].module, MODULE_SQS);

	/* Source filter, limit, since, stop. */
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list(st, "github", 0, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 3);
	ck_assert_uint_eq(ds.info[0].seq, sc);
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list(st, "stripe", 0, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 1);
	ck_assert_str_eq(ds.info[0].reason, "retries_exhausted");
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list(st, "github", 2, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 2);
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list_since(st, NULL, 250, 0, dead_cb,
	    &ds), 0);
	ck_assert_int_eq(ds.n, 2);
	ck_assert_uint_eq(ds.info[0].dead_at, 300);
	memset(&ds, 0, sizeof(ds));
	ds.stop_after = 1;
	ck_assert_int_eq(store_dead_list(st, NULL, 0, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 1);
	memset(&ds, 0, sizeof(ds));
	ck_assert_int_eq(store_dead_list(st, "none", 0, dead_cb, &ds), 0);
	ck_assert_int_eq(ds.n, 0);
	store_close(st);
}
END_TEST

START_TEST(test_pending_rows)
{
	struct store_row_spec two[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
	};
	struct store_row_spec mixed[2] = {
		{ 0, MODULE_HTTP, 1, 0x5 }, { 1, MODULE_SQS, 0, 0 },
	};
	struct scanned sc;
	struct store *st;
	uint64_t s1, s3, s4, s5;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, two, 2);
	put_rows(st, "acme", "stripe", 100, two, 2);
	s3 = put_rows(st, "acme", "github", 100, two, 2);
	s4 = put_rows(st, "acme", "github", 100, mixed, 2);
	s5 = put_rows(st, "acme", "github", 100, two, 1);
	ck_assert_int_eq(kill_row(st, s3, 1, 50, "permanent:x", "", 1), 1);

	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", 0, 0,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 6);

	/* Pages of 2: never split a hook. */
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", 0, 2,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 2);
	ck_assert_uint_eq(sc.seq[0], s1);
	ck_assert_uint_eq(sc.seq[1], s1);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", s1, 2,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 3);
	ck_assert_uint_eq(sc.seq[0], s3);
	ck_assert_uint_eq(sc.sink[0], 0);
	ck_assert_uint_eq(sc.seq[1], s4);
	ck_assert_uint_eq(sc.row[1].state, STORE_ROW_MEMBER);
	ck_assert_uint_eq(sc.seq[2], s4);
	ck_assert_uint_eq(sc.row[2].state, STORE_ROW_DUE);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", s4, 2,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_uint_eq(sc.seq[0], s5);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", s5, 2,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 0);
	memset(&sc, 0, sizeof(sc));
	sc.stop_after = 1;
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", 0, 0,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);

	/* dead_letter_source over the pages: nothing pending after. */
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", 0, 0,
	    pending_cb, &sc), 0);
	kill_scanned(st, &sc);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", 0, 0,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 0);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "stripe", 0, 0,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 2);
	store_close(st);
}
END_TEST

/* The one row a dead_letter_source step must leave: claimed. */
static uint64_t claimed_seq;

static int
claimed_cb(const unsigned char *rk, void *arg)
{
	return store_rowkey_seq(rk) == claimed_seq;
}

/* One dead_letter_source step in its own committed batch: its answer. */
static int
dls_step(struct store *st, struct store_dls *s)
{
	struct store_batch *b;
	int ret;

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ret = store_batch_source_dead(b, s);
	ck_assert_msg(ret >= 0, "step: %s", store_strerror(st));
	commit_ok(st, b);
	return ret;
}

/* Run dead_letter_source steps to the end: the steps it took. */
static int
dls_run(struct store *st, struct store_dls *s, uint64_t *moved,
    uint64_t *dropped, int *seen)
{
	int ret, steps = 0;

	*moved = *dropped = 0;
	*seen = 0;
	do {
		ret = dls_step(st, s);
		*moved += s->moved;
		*dropped += s->dropped;
		*seen |= s->seen;
		steps++;
		ck_assert_int_lt(steps, 100);
	} while (ret == 1);
	return steps;
}

/*
 * dead_letter_source's steps: pages that never split a hook, rows of
 * other sources bounding a step too; a row whose hook is gone is dropped,
 * not counted (a lane's head among them: its lane is released); a claimed
 * row is left; the count is the rows moved.
 */
START_TEST(test_source_dead_step)
{
	struct store_row_spec two[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
	};
	struct store_row_spec one = { 0, MODULE_HTTP, 0, 0 };
	struct store_row_spec ord = { 0, MODULE_HTTP, 1, 0x7 };
	struct store_dls s;
	struct store_counts c;
	struct store_row r;
	struct scanned sc;
	struct store *st;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1, s3, s4, s5, s6, s7, s8, moved, dropped;
	int seen;

	st = open_ok();
	s1 = put_rows(st, "acme", "github", 100, two, 2);
	put_rows(st, "acme", "stripe", 100, &one, 1);
	s3 = put_rows(st, "acme", "github", 100, &ord, 1);
	s4 = put_rows(st, "acme", "github", 100, &ord, 1);
	s5 = put_rows(st, "acme", "github", 100, &ord, 1);
	s6 = put_rows(st, "acme", "github", 100, &one, 1);
	s7 = put_rows(st, "acme", "github", 100, &one, 1);
	s8 = put_rows(st, "acme", "github", 100, &one, 1);
	ck_assert_int_eq(lane_sweep(st, "acme", 16), 1);	/* s3 heads */
	ck_assert_int_eq(kill_row(st, s8, 0, 50, "permanent:x", "", 1), 1);
	st = orphan(st, s5, s6);

	/* A page of 2 rows is s1's hook, whole. */
	memset(&s, 0, sizeof(s));
	s.source = "github";
	s.reason = "source_gone:github";
	s.dead_at = 1000;
	s.limit = 2;
	s.skip = claimed_cb;
	claimed_seq = s7;
	ck_assert_int_eq(dls_step(st, &s), 1);
	ck_assert_uint_eq(s.moved, 2);
	ck_assert_uint_eq(s.dropped, 0);
	ck_assert_uint_eq(s.after_seq, s1);
	ck_assert_int_eq(s.seen, 1);
	store_key_row(rk, s1, 1);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_DEAD);

	/* The rest: s3 and s4 moved (each release makes the next member
	 * the head), s5 (the head by then) and s6 dropped, s7 left to its
	 * attempt, s8 dead already. */
	ck_assert_int_ge(dls_run(st, &s, &moved, &dropped, &seen), 2);
	ck_assert_uint_eq(moved, 2);
	ck_assert_uint_eq(dropped, 2);
	ck_assert_int_eq(seen, 1);
	store_key_row(rk, s3, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_DEAD);
	store_key_row(rk, s4, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 1);
	ck_assert_uint_eq(r.state, STORE_ROW_DEAD);
	store_key_row(rk, s5, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 0);
	store_key_row(rk, s6, 0);
	ck_assert_int_eq(row_get(st, rk, &r), 0);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 0);
	ck_assert_int_eq(store_debug_count(st, "members"), 0);
	ck_assert_int_eq(store_debug_count(st, "marks"), 0);
	ck_assert_uint_eq(store_lane_members(st), 0);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.dead, 5);
	ck_assert_uint_eq(c.rows, 7);
	memset(&sc, 0, sizeof(sc));
	ck_assert_int_eq(store_pending_rows_of_source(st, "github", 0, 0,
	    pending_cb, &sc), 0);
	ck_assert_int_eq(sc.n, 1);
	ck_assert_uint_eq(sc.seq[0], s7);
	/* Due: s7 and stripe's row, nothing stale. */
	ck_assert_int_eq(store_debug_count(st, "due"), 2);

	/* Again: nothing moves, but the source is known (its dead rows). */
	s.after_seq = 0;
	ck_assert_int_eq(dls_run(st, &s, &moved, &dropped, &seen), 1);
	ck_assert_uint_eq(moved + dropped, 0);
	ck_assert_int_eq(seen, 1);

	/* A bound on the rows read: a step a hook, whatever its source (six
	 * hooks have rows left). */
	s.after_seq = 0;
	s.limit = 0;
	s.visits = 1;
	ck_assert_int_eq(dls_run(st, &s, &moved, &dropped, &seen), 6);
	s.source = "nosuch";
	s.after_seq = 0;
	ck_assert_int_eq(dls_run(st, &s, &moved, &dropped, &seen), 6);
	ck_assert_int_eq(seen, 0);
	ck_assert_uint_eq(moved + dropped, 0);
	store_close(st);
}
END_TEST

static Suite *
store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc;

	tc = tcase_create("dispatch");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_due_tenants);
	tcase_add_test(tc, test_due_scan);
	tcase_add_test(tc, test_delivered);
	tcase_add_test(tc, test_delivered_known);
	tcase_add_test(tc, test_reschedule);
	tcase_add_test(tc, test_dead);
	tcase_add_test(tc, test_dead_list);
	tcase_add_test(tc, test_pending_rows);
	tcase_add_test(tc, test_source_dead_step);
	tcase_add_test(tc, test_commit_lazy);
	tcase_add_test(tc, test_delivered_last);
	tcase_add_test(tc, test_flush_fails);
	tcase_add_test(tc, test_checkpoint_sync_fails);
	tcase_add_test(tc, test_close_sync_fails);
	suite_add_tcase(s, tc);

	tc = tcase_create("lanes");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_lanes);
	tcase_add_test(tc, test_lane_head_parked);
	tcase_add_test(tc, test_lane_heal);
	tcase_add_test(tc, test_lane_orphan_head);
	tcase_add_test(tc, test_lane_member_gone);
	tcase_add_test(tc, test_lane_member_dead);
	tcase_add_test(tc, test_lane_members_restart);
	tcase_add_test(tc, test_lane_sweep_resume);
	tcase_add_test(tc, test_marked_tenants);
	suite_add_tcase(s, tc);

	return s;
}

int
main(void)
{
	return storeutil_run(store_suite());
}
