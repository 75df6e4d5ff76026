/* SPDX-License-Identifier: ISC */
/*
 * check_store_audit.c: unit tests of the store's audit trail
 * (daemon/store/store_audit.c): entries put and read back across a
 * reopen, newest first; entries of one ms kept apart and in order; the
 * walk's filters, range, limit, visits and cursor; the prune's bound and
 * steps; long and malformed strings cut and cleaned.
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

static Suite	*audit_suite(void);

struct seen {
	struct store_audit	e[32];
	int			n;
	int			stop_after;	/* 0: never */
};

static int
seen_cb(const struct store_audit *a, void *arg)
{
	struct seen *s = arg;

	ck_assert_int_lt(s->n, 32);
	s->e[s->n++] = *a;
	return s->stop_after != 0 && s->n >= s->stop_after;
}

/* Put one entry in a batch of its own. */
static void
put(struct store *st, uint64_t at, const char *actor, const char *action,
    const char *tenant, const char *outcome)
{
	struct store_audit a;
	struct store_batch *b;

	memset(&a, 0, sizeof(a));
	a.at = at;
	snprintf(a.actor, sizeof(a.actor), "%s", actor);
	snprintf(a.action, sizeof(a.action), "%s", action);
	snprintf(a.target, sizeof(a.target), "target-%llu",
	    (unsigned long long)at);
	snprintf(a.tenant, sizeof(a.tenant), "%s", tenant);
	snprintf(a.outcome, sizeof(a.outcome), "%s", outcome);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_audit_put(b, &a), 0);
	commit_ok(st, b);
}

static void
walk_init(struct store_audit_walk *w)
{
	memset(w, 0, sizeof(*w));
	w->until = UINT64_MAX;
}

static int
walk(struct store *st, struct store_audit_walk *w, struct seen *s)
{
	memset(s, 0, sizeof(*s));
	return store_audit_walk(st, w, seen_cb, s);
}

/* Put, reopen, read back newest first with every field. */
START_TEST(test_audit_put_list)
{
	struct store_audit_walk w;
	struct seen s;
	struct store *st;

	st = open_ok();
	walk_init(&w);
	ck_assert_int_eq(walk(st, &w, &s), 0);
	ck_assert_int_eq(s.n, 0);
	ck_assert_int_eq(w.end, 1);
	put(st, 1000, "admin", "dlq.purge", "acme", "ok");
	put(st, 3000, "uid:0", "reload", "", "ok");
	put(st, 2000, "ops", "sink.pause", "acme", "not_found");
	store_close(st);

	st = open_ok();
	walk_init(&w);
	ck_assert_int_eq(walk(st, &w, &s), 0);
	ck_assert_int_eq(s.n, 3);
	ck_assert_int_eq(w.end, 1);
	ck_assert_uint_eq(s.e[0].at, 3000);
	ck_assert_str_eq(s.e[0].actor, "uid:0");
	ck_assert_str_eq(s.e[0].action, "reload");
	ck_assert_str_eq(s.e[0].tenant, "");
	ck_assert_uint_eq(s.e[1].at, 2000);
	ck_assert_str_eq(s.e[1].actor, "ops");
	ck_assert_str_eq(s.e[1].action, "sink.pause");
	ck_assert_str_eq(s.e[1].target, "target-2000");
	ck_assert_str_eq(s.e[1].tenant, "acme");
	ck_assert_str_eq(s.e[1].outcome, "not_found");
	ck_assert_uint_eq(s.e[2].at, 1000);
	ck_assert_int_eq(store_debug_count(st, "audit"), 3);
	store_close(st);
}
END_TEST

/* Entries of the same ms, in batches and in one: all kept, the later
 * first. */
START_TEST(test_audit_same_ms)
{
	struct store_audit_walk w;
	struct store_audit a;
	struct store_batch *b;
	struct seen s;
	struct store *st;
	int i;

	st = open_ok();
	put(st, 5000, "a", "x", "", "ok");
	put(st, 5000, "b", "x", "", "ok");
	memset(&a, 0, sizeof(a));
	a.at = 5000;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	snprintf(a.actor, sizeof(a.actor), "c");
	ck_assert_int_eq(store_batch_audit_put(b, &a), 0);
	snprintf(a.actor, sizeof(a.actor), "d");
	ck_assert_int_eq(store_batch_audit_put(b, &a), 0);
	commit_ok(st, b);
	store_close(st);
	st = open_ok();
	put(st, 5000, "e", "x", "", "ok");
	walk_init(&w);
	ck_assert_int_eq(walk(st, &w, &s), 0);
	ck_assert_int_eq(s.n, 5);
	for (i = 0; i < 5; i++) {
		ck_assert_uint_eq(s.e[i].at, 5000);
		ck_assert_int_eq(s.e[i].actor[0], 'e' - i);
	}
	store_close(st);
}
END_TEST

/* The filters, the time range (both ends inclusive), the limit and the
 * cursor: pages in order, none twice, none missed. */
START_TEST(test_audit_filters_cursor)
{
	struct store_audit_walk w;
	struct seen s;
	struct store *st;
	uint64_t t, last;
	int pages, total;

	st = open_ok();
	for (t = 1; t <= 20; t++)
		put(st, t * 100, t % 2 ? "alice" : "bob", t % 3 ? "sink.pause" :
		    "dlq.purge", t % 4 ? "acme" : "zeta", "ok");

	walk_init(&w);
	w.actor = "alice";
	ck_assert_int_eq(walk(st, &w, &s), 0);
	ck_assert_int_eq(s.n, 10);
	ck_assert_uint_eq(s.e[0].at, 1900);
	ck_assert_uint_eq(s.e[9].at, 100);

	walk_init(&w);
	w.action = "dlq.purge";
	w.tenant = "zeta";
	ck_assert_int_eq(walk(st, &w, &s), 0);
	ck_assert_int_eq(s.n, 1);		/* t = 12 */
	ck_assert_uint_eq(s.e[0].at, 1200);

	walk_init(&w);
	w.since = 500;
	w.until = 800;
	ck_assert_int_eq(walk(st, &w, &s), 0);
	ck_assert_int_eq(s.n, 4);
	ck_assert_uint_eq(s.e[0].at, 800);
	ck_assert_uint_eq(s.e[3].at, 500);
	ck_assert_int_eq(w.end, 1);

	/* Pages of 3 of bob's (t even: 10 entries). */
	walk_init(&w);
	w.actor = "bob";
	w.limit = 3;
	last = UINT64_MAX;
	pages = total = 0;
	do {
		ck_assert_int_eq(walk(st, &w, &s), 0);
		ck_assert_int_le(s.n, 3);
		for (int i = 0; i < s.n; i++) {
			ck_assert_str_eq(s.e[i].actor, "bob");
			ck_assert_uint_lt(s.e[i].at, last);
			last = s.e[i].at;
		}
		total += s.n;
		pages++;
		ck_assert_int_lt(pages, 10);
	} while (!w.end);
	ck_assert_int_eq(total, 10);
	ck_assert_uint_eq(last, 200);

	/* A callback that stops: the next call goes on after its entry. */
	walk_init(&w);
	memset(&s, 0, sizeof(s));
	s.stop_after = 2;
	ck_assert_int_eq(store_audit_walk(st, &w, seen_cb, &s), 0);
	ck_assert_int_eq(s.n, 2);
	ck_assert_int_eq(walk(st, &w, &s), 0);
	ck_assert_uint_eq(s.e[0].at, 1800);
	store_close(st);
}
END_TEST

/* visits bounds what one call reads, whatever the filters miss; the
 * cursor then goes on where it stopped. */
START_TEST(test_audit_visits)
{
	struct store_audit_walk w;
	struct seen s;
	struct store *st;
	uint64_t t;
	int calls = 0, total = 0;

	st = open_ok();
	for (t = 1; t <= 30; t++)
		put(st, t, t == 3 ? "rare" : "common", "x", "", "ok");
	walk_init(&w);
	w.actor = "rare";
	w.visits = 7;
	do {
		ck_assert_int_eq(walk(st, &w, &s), 0);
		total += s.n;
		if (s.n == 1)
			ck_assert_uint_eq(s.e[0].at, 3);
		calls++;
		ck_assert_int_le(calls, 6);
	} while (!w.end);
	ck_assert_int_eq(total, 1);
	ck_assert_int_eq(calls, 5);	/* 7, 7, 7, 7, then 2 and the end */
	store_close(st);
}
END_TEST

/* The prune: only entries older than its bound, max a step. */
START_TEST(test_audit_prune)
{
	struct store_audit_walk w;
	struct store_batch *b;
	struct seen s;
	struct store *st;
	uint64_t t;
	int n;

	st = open_ok();
	for (t = 1; t <= 10; t++)
		put(st, t * 1000, "a", "x", "", "ok");
	put(st, 4000, "a", "y", "", "ok");
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_audit_prune(b, 5000, 3), 3);
	commit_ok(st, b);
	ck_assert_int_eq(store_debug_count(st, "audit"), 8);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(n = store_batch_audit_prune(b, 5000, 3), 2);
	commit_ok(st, b);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_audit_prune(b, 5000, 3), 0);
	ck_assert_int_eq(store_batch_audit_prune(b, 0, 3), 0);
	commit_ok(st, b);
	walk_init(&w);
	ck_assert_int_eq(walk(st, &w, &s), 0);
	ck_assert_int_eq(s.n, 6);
	ck_assert_uint_eq(s.e[5].at, 5000);
	ck_assert_uint_eq(s.e[0].at, 10000);
	store_close(st);
}
END_TEST

/* Long strings cut between characters, bad bytes cleaned, the codec's
 * damage reports. */
START_TEST(test_audit_strings)
{
	struct store_audit_walk w;
	struct store_audit a, d;
	struct store_batch *b;
	struct seen s;
	struct store *st;
	unsigned char buf[STORE_REC_MAX], key[STORE_AUDIT_KEY_LEN] = { 0 };
	char err[256];
	size_t vlen, i;

	st = open_ok();
	memset(&a, 0, sizeof(a));
	a.at = 42;
	for (i = 0; i + 2 < sizeof(a.target); i += 2)
		memcpy(a.target + i, "\xc3\xa9", 2);	/* e acute */
	a.target[sizeof(a.target) - 1] = '\0';
	snprintf(a.outcome, sizeof(a.outcome), "bad \xff byte");
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_audit_put(b, &a), 0);
	commit_ok(st, b);
	walk_init(&w);
	ck_assert_int_eq(walk(st, &w, &s), 0);
	ck_assert_int_eq(s.n, 1);
	ck_assert_uint_le(strlen(s.e[0].target), STORE_AUDIT_TARGET_MAX);
	ck_assert_int_eq(strlen(s.e[0].target) % 2, 0);
	ck_assert_str_eq(s.e[0].outcome, "bad \\xff byte");
	store_close(st);

	snprintf(a.target, sizeof(a.target), "t");
	ck_assert_uint_gt(vlen = store_rec_audit_encode(&a, buf, sizeof(buf)),
	    9);
	ck_assert_int_eq(store_rec_audit_decode(key, sizeof(key), buf, vlen,
	    &d, err, sizeof(err)), 0);
	ck_assert_str_eq(d.target, "t");
	ck_assert_int_eq(store_rec_audit_decode(key, sizeof(key), buf, vlen - 1,
	    &d, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "audit record at"));
	ck_assert_ptr_nonnull(strstr(err, "bad length"));
	buf[0] = 9;
	ck_assert_int_eq(store_rec_audit_decode(key, sizeof(key), buf, vlen,
	    &d, err, sizeof(err)), -1);
	ck_assert_ptr_nonnull(strstr(err, "format version 9"));
}
END_TEST

static Suite *
audit_suite(void)
{
	Suite *s = suite_create("store_audit");
	TCase *tc;

	tc = tcase_create("audit");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_audit_put_list);
	tcase_add_test(tc, test_audit_same_ms);
	tcase_add_test(tc, test_audit_filters_cursor);
	tcase_add_test(tc, test_audit_visits);
	tcase_add_test(tc, test_audit_prune);
	tcase_add_test(tc, test_audit_strings);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return storeutil_run(audit_suite());
}
