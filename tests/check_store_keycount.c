/* SPDX-License-Identifier: ISC */
/*
 * check_store_keycount.c: the rows of each sink key kept in memory
 * (daemon/store/store_keycount.c): the walk after the open in steps, with
 * settles behind it, at it and ahead of it; an aborted batch; a purge
 * after it; and the same counts walked again after a reopen.
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

static void
counts_are(struct store *st, const char *source, uint32_t sink,
    uint8_t module, uint64_t live, uint64_t dead)
{
	uint64_t l, d;

	ck_assert_int_eq(store_keycount(st, source, sink, module, &l, &d),
	    live + dead > 0 ? 1 : 0);
	ck_assert_msg(l == live && d == dead, "%s#%u: live %llu dead %llu, "
	    "want %llu %llu", source, sink, (unsigned long long)l,
	    (unsigned long long)d, (unsigned long long)live,
	    (unsigned long long)dead);
}

static void
seed_all(struct store *st, unsigned step)
{
	int ret, n = 0;

	while ((ret = store_keycount_seed(st, step)) == 0)
		ck_assert_int_lt(++n, 1000);
	ck_assert_msg(ret == 1, "seed: %s", store_strerror(st));
}

START_TEST(test_seed_and_keep)
{
	static const struct store_row_spec two[] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 } };
	static const struct store_row_spec one[] = {
		{ 0, MODULE_HTTP, 0, 0 } };
	struct store *st = open_ok();
	struct store_batch *b;
	struct store_hook h;
	unsigned char rk[STORE_ROWKEY_LEN], dk[STORE_DEADKEY_LEN];
	uint64_t s1, s2, s3, s4, l, d, bytes = 0;

	/* Rows in key order: s1#0 s1#1 s2#0 s2#1 s3#0 s3#1 s4#0 s5#0. */
	s1 = put_rows(st, "t", "a", 1000, two, 2);
	s2 = put_rows(st, "t", "a", 1001, two, 2);
	s3 = put_rows(st, "t", "a", 1002, two, 2);
	s4 = put_rows(st, "t", "b", 1003, one, 1);
	(void)put_rows(st, "t", "b", 1004, one, 1);
	ck_assert_int_eq(store_keycount(st, "a", 0, MODULE_HTTP, &l, &d), -1);

	/* The walk passes s1#0, s1#1 and s2#0. */
	ck_assert_int_eq(store_keycount_seed(st, 3), 0);
	ck_assert_int_eq(store_keycount(st, "a", 0, MODULE_HTTP, &l, &d), -1);
	ck_assert_int_eq(deliver(st, s1, 0), 1);		/* behind */
	/* At the walk's cursor, then ahead of it. */
	ck_assert_int_eq(kill_row(st, s2, 0, 5000, "r", "e", 1), 1);
	ck_assert_int_eq(kill_row(st, s3, 1, 5001, "r", "e", 1), 1);
	(void)put_rows(st, "t", "a", 1005, one, 1);		/* ahead */
	/* An aborted batch counts nothing. */
	hook_fill(&h, "b", "x", 1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, one, 1), 0);
	store_batch_abort(b);
	seed_all(st, 3);

	counts_are(st, "a", 0, MODULE_HTTP, 2, 1);
	counts_are(st, "a", 1, MODULE_SQS, 2, 1);
	counts_are(st, "b", 0, MODULE_HTTP, 2, 0);
	counts_are(st, "a", 1, MODULE_HTTP, 0, 0);
	counts_are(st, "c", 0, MODULE_HTTP, 0, 0);

	/* Kept by the batches from then on: a purge of a dead letter, a
	 * delivery, a new hook, a dead-lettering. */
	store_key_row(rk, s2, 0);
	store_key_dead(dk, 5000, rk);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_dead_del(b, dk, &bytes), 1);
	commit_ok(st, b);
	ck_assert_int_eq(deliver(st, s4, 0), 1);
	(void)put_rows(st, "t", "b", 1006, two, 2);
	ck_assert_int_eq(kill_row(st, s3, 0, 5002, "r", "e", 1), 1);
	counts_are(st, "a", 0, MODULE_HTTP, 1, 1);
	counts_are(st, "a", 1, MODULE_SQS, 2, 1);
	counts_are(st, "b", 0, MODULE_HTTP, 2, 0);
	counts_are(st, "b", 1, MODULE_SQS, 1, 0);

	/* A reopen walks the same counts again, in one step. */
	ck_assert_int_eq(store_close(st), 0);
	st = open_ok();
	ck_assert_int_eq(store_keycount(st, "a", 0, MODULE_HTTP, &l, &d), -1);
	seed_all(st, 1000);
	counts_are(st, "a", 0, MODULE_HTTP, 1, 1);
	counts_are(st, "a", 1, MODULE_SQS, 2, 1);
	counts_are(st, "b", 0, MODULE_HTTP, 2, 0);
	counts_are(st, "b", 1, MODULE_SQS, 1, 0);
	ck_assert_int_eq(store_close(st), 0);
}
END_TEST

/* An empty store's walk ends at once; a seed with a batch open fails
 * and the next goes on. */
START_TEST(test_seed_empty)
{
	static const struct store_row_spec one[] = {
		{ 0, MODULE_HTTP, 0, 0 } };
	struct store *st = open_ok();
	struct store_batch *b;
	struct store_hook h;

	hook_fill(&h, "a", "x", 1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, one, 1), 0);
	ck_assert_int_eq(store_keycount_seed(st, 10), -1);
	commit_ok(st, b);
	ck_assert_int_eq(store_keycount_seed(st, 10), 1);
	counts_are(st, "a", 0, MODULE_HTTP, 1, 0);
	ck_assert_int_eq(store_close(st), 0);
}
END_TEST

static Suite *
keycount_suite(void)
{
	Suite *s = suite_create("store_keycount");
	TCase *tc = tcase_create("keycount");

	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_seed_and_keep);
	tcase_add_test(tc, test_seed_empty);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return storeutil_run(keycount_suite());
}
