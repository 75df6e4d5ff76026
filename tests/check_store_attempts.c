/* SPDX-License-Identifier: ISC */
/*
 * check_store_attempts.c: unit tests of the store's attempt log
 * (daemon/store/store_attempts.c): attempts put and listed back across a
 * reopen in key order, paged by key; the cap of a round; attempts kept
 * after their hook went and pruned after it in bounded steps, never while
 * it lives; an operator's delete taking them at once; the record codec,
 * with its strings cut between characters.
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

static Suite	*attempts_suite(void);

struct got {
	uint32_t	sink[16];
	uint64_t	round[16];
	uint32_t	n[16];
	uint8_t		outcome[16];
	uint32_t	status[16];
	uint64_t	started[16];
	uint64_t	duration[16];
	char		error[16][64];
	char		response[16][64];
	unsigned char	last[STORE_ATTEMPT_KEY_LEN];
	int		count;
};

static int
got_cb(const unsigned char *key, const struct store_attempt *a, void *arg)
{
	struct got *g = arg;

	ck_assert_int_lt(g->count, 16);
	g->sink[g->count] = a->sink_index;
	g->round[g->count] = a->round;
	g->n[g->count] = a->n;
	g->outcome[g->count] = a->outcome;
	g->status[g->count] = a->status;
	g->started[g->count] = a->started_at;
	g->duration[g->count] = a->duration_ms;
	snprintf(g->error[g->count], sizeof(g->error[0]), "%s", a->error);
	snprintf(g->response[g->count], sizeof(g->response[0]), "%s",
	    a->response);
	memcpy(g->last, key, STORE_ATTEMPT_KEY_LEN);
	g->count++;
	return 0;
}

static int
list(struct store *st, const unsigned char *id, const unsigned char *after,
    uint64_t limit, struct got *g, int *more)
{
	memset(g, 0, sizeof(*g));
	return store_attempts_list(st, id, after, limit, got_cb, g, more);
}

/* One attempt in a batch of its own. */
static void
put(struct store *st, const unsigned char *id, uint32_t sink, uint64_t round,
    uint32_t n, uint8_t outcome, uint32_t max)
{
	struct store_attempt a;
	struct store_batch *b;
	char err[32], resp[32];

	memset(&a, 0, sizeof(a));
	memcpy(a.id, id, UUID_LEN);
	a.sink_index = sink;
	a.round = round;
	a.n = n;
	a.module = MODULE_HTTP;
	a.outcome = outcome;
	a.status = outcome == STORE_ATTEMPT_OK ? 200 : 500;
	a.started_at = round + n * 1000;
	a.duration_ms = 10 + n;
	snprintf(err, sizeof(err), "http %u", a.status);
	snprintf(resp, sizeof(resp), "answer %u", n);
	a.error = err;
	a.response = resp;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_msg(store_batch_attempt_put(b, &a, max) == 0, "put: %s",
	    store_strerror(st));
	commit_ok(st, b);
}

static void
hook_id(struct store *st, uint64_t seq, unsigned char *id)
{
	struct store_hook_rec rec;

	ck_assert_int_eq(store_hook_get(st, seq, &rec), 1);
	memcpy(id, rec.hook.id, UUID_LEN);
	store_hook_rec_free(&rec);
}

static int
prune(struct store *st, uint64_t before, unsigned max)
{
	struct store_batch *b;
	int n;

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	n = store_batch_attempts_prune(b, before, max);
	ck_assert_msg(n >= 0, "prune: %s", store_strerror(st));
	commit_ok(st, b);
	return n;
}

/* Put, reopen, list in key order (sink, round, n) with every field; page
 * by the last key. */
START_TEST(test_attempts_put_list)
{
	unsigned char id[UUID_LEN], other[UUID_LEN];
	struct store *st;
	struct got g;
	int more;

	uuidv7_new(id);
	uuidv7_new(other);
	st = open_ok();
	ck_assert_int_eq(list(st, id, NULL, 0, &g, &more), 0);
	ck_assert_int_eq(g.count, 0);
	put(st, id, 1, 5000, 1, STORE_ATTEMPT_OK, 100);
	put(st, id, 0, 1000, 2, STORE_ATTEMPT_OK, 100);
	put(st, id, 0, 1000, 1, STORE_ATTEMPT_TIMEOUT, 100);
	put(st, id, 0, 900, 1, STORE_ATTEMPT_PERMANENT, 100);
	put(st, other, 0, 1000, 1, STORE_ATTEMPT_ERROR, 100);
	store_close(st);

	st = open_ok();
	ck_assert_int_eq(list(st, id, NULL, 0, &g, &more), 0);
	ck_assert_int_eq(g.count, 4);
	ck_assert_int_eq(more, 0);
	ck_assert_uint_eq(g.round[0], 900);
	ck_assert_uint_eq(g.outcome[0], STORE_ATTEMPT_PERMANENT);
	ck_assert_uint_eq(g.round[1], 1000);
	ck_assert_uint_eq(g.n[1], 1);
	ck_assert_uint_eq(g.outcome[1], STORE_ATTEMPT_TIMEOUT);
	ck_assert_uint_eq(g.status[1], 500);
	ck_assert_str_eq(g.error[1], "http 500");
	ck_assert_str_eq(g.response[1], "answer 1");
	ck_assert_uint_eq(g.started[1], 2000);
	ck_assert_uint_eq(g.duration[1], 11);
	ck_assert_uint_eq(g.n[2], 2);
	ck_assert_uint_eq(g.status[2], 200);
	ck_assert_uint_eq(g.sink[3], 1);

	/* Pages of two, by the last key. */
	ck_assert_int_eq(list(st, id, NULL, 2, &g, &more), 0);
	ck_assert_int_eq(g.count, 2);
	ck_assert_int_eq(more, 1);
	{
		unsigned char at[STORE_ATTEMPT_KEY_LEN];

		memcpy(at, g.last, sizeof(at));
		ck_assert_int_eq(list(st, id, at, 2, &g, &more), 0);
	}
	ck_assert_int_eq(g.count, 2);
	ck_assert_int_eq(more, 0);
	ck_assert_uint_eq(g.n[0], 2);
	ck_assert_uint_eq(g.sink[1], 1);
	ck_assert_int_eq(store_debug_count(st, "attempts"), 5);
	store_close(st);
}
END_TEST

/* A round keeps its newest max_per_row; max 0 puts nothing; another
 * round (a replay) has its own. */
START_TEST(test_attempts_cap)
{
	unsigned char id[UUID_LEN];
	struct store *st;
	struct got g;
	uint32_t n;

	uuidv7_new(id);
	st = open_ok();
	for (n = 1; n <= 7; n++)
		put(st, id, 0, 1000, n, STORE_ATTEMPT_ERROR, 3);
	put(st, id, 0, 2000, 1, STORE_ATTEMPT_OK, 3);
	put(st, id, 0, 3000, 1, STORE_ATTEMPT_OK, 0);
	ck_assert_int_eq(list(st, id, NULL, 0, &g, NULL), 0);
	ck_assert_int_eq(g.count, 4);
	ck_assert_uint_eq(g.n[0], 5);
	ck_assert_uint_eq(g.n[1], 6);
	ck_assert_uint_eq(g.n[2], 7);
	ck_assert_uint_eq(g.round[3], 2000);
	ck_assert_int_eq(store_debug_count(st, "attempts"), 4);
	store_close(st);
}
END_TEST

/* A hook's attempts outlive it: its last row delivered writes its entry
 * in attempts_end; the prune takes them only past the bound, in steps of
 * max records, and never a live hook's. */
START_TEST(test_attempts_retention)
{
	unsigned char id[UUID_LEN], live[UUID_LEN];
	uint64_t seq, seq2, before, after;
	struct store *st;
	struct got g;
	uint32_t n;

	st = open_ok();
	seq = put_one(st, "github", "{}", 2, 1);
	seq2 = put_one(st, "github", "{}", 2, 1);
	hook_id(st, seq, id);
	hook_id(st, seq2, live);
	for (n = 1; n <= 5; n++)
		put(st, id, 0, 1000, n, STORE_ATTEMPT_ERROR, 100);
	put(st, live, 0, 1000, 1, STORE_ATTEMPT_ERROR, 100);
	before = time_wall_ms();
	ck_assert_int_eq(store_debug_count(st, "attempts_end"), 0);
	ck_assert_int_eq(deliver(st, seq, 0), 1);
	after = time_wall_ms();
	ck_assert_int_eq(store_debug_count(st, "attempts_end"), 1);
	ck_assert_int_eq(list(st, id, NULL, 0, &g, NULL), 0);
	ck_assert_int_eq(g.count, 5);

	/* Gone at or after before: nothing older than it. */
	ck_assert_int_eq(prune(st, before, 100), 0);
	ck_assert_int_eq(store_debug_count(st, "attempts"), 6);
	/* Past it, two records a step: the entry goes with the last. */
	ck_assert_int_eq(prune(st, after + 1, 2), 2);
	ck_assert_int_eq(store_debug_count(st, "attempts"), 4);
	ck_assert_int_eq(store_debug_count(st, "attempts_end"), 1);
	ck_assert_int_eq(prune(st, after + 1, 2), 2);
	ck_assert_int_eq(prune(st, after + 1, 2), 2);
	ck_assert_int_eq(store_debug_count(st, "attempts_end"), 0);
	ck_assert_int_eq(prune(st, UINT64_MAX, 100), 0);
	ck_assert_int_eq(list(st, id, NULL, 0, &g, NULL), 0);
	ck_assert_int_eq(g.count, 0);
	/* The live hook's stays, whatever the bound. */
	ck_assert_int_eq(list(st, live, NULL, 0, &g, NULL), 0);
	ck_assert_int_eq(g.count, 1);
	store_close(st);
}
END_TEST

/* An operator's delete of a hook takes its attempts in its transaction;
 * store_batch_attempts_drop takes one hook's, no other's. */
START_TEST(test_attempts_drop)
{
	unsigned char id[UUID_LEN], other[UUID_LEN];
	struct store_batch *b;
	struct store *st;
	struct got g;
	uint64_t seq, bytes;

	st = open_ok();
	seq = put_one(st, "github", "{}", 2, 1);
	hook_id(st, seq, id);
	uuidv7_new(other);
	put(st, id, 0, 1000, 1, STORE_ATTEMPT_ERROR, 100);
	put(st, id, 0, 1000, 2, STORE_ATTEMPT_ERROR, 100);
	put(st, other, 0, 1000, 1, STORE_ATTEMPT_ERROR, 100);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_hook_del(b, seq, NULL, NULL, &bytes), 1);
	commit_ok(st, b);
	ck_assert_int_eq(list(st, id, NULL, 0, &g, NULL), 0);
	ck_assert_int_eq(g.count, 0);
	ck_assert_int_eq(list(st, other, NULL, 0, &g, NULL), 0);
	ck_assert_int_eq(g.count, 1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_attempts_drop(b, other), 1);
	ck_assert_int_eq(store_batch_attempts_drop(b, other), 0);
	commit_ok(st, b);
	ck_assert_int_eq(store_debug_count(st, "attempts"), 0);
	store_close(st);
}
END_TEST

/* The purge of a hook's last dead letter takes its attempts; a purge
 * that leaves the hook (another row lives) leaves them. */
START_TEST(test_attempts_dead_purge)
{
	static const struct store_row_spec two[] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_HTTP, 0, 0 },
	};
	unsigned char id[UUID_LEN], dk[STORE_DEADKEY_LEN],
	    rk[STORE_ROWKEY_LEN];
	struct store_batch *b;
	struct store *st;
	struct got g;
	uint64_t seq, bytes = 0;

	st = open_ok();
	seq = put_rows(st, "acme", "github", 1000, two, 2);
	hook_id(st, seq, id);
	put(st, id, 0, 1000, 1, STORE_ATTEMPT_PERMANENT, 100);
	put(st, id, 1, 1000, 1, STORE_ATTEMPT_PERMANENT, 100);
	ck_assert_int_eq(kill_row(st, seq, 0, 5000, "permanent:http 400",
	    "http 400", 1), 1);
	ck_assert_int_eq(kill_row(st, seq, 1, 5000, "permanent:http 400",
	    "http 400", 1), 1);
	store_key_row(rk, seq, 0);
	store_key_dead(dk, 5000, rk);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_dead_del(b, dk, &bytes), 1);
	commit_ok(st, b);
	ck_assert_int_eq(list(st, id, NULL, 0, &g, NULL), 0);
	ck_assert_int_eq(g.count, 2);
	store_key_row(rk, seq, 1);
	store_key_dead(dk, 5000, rk);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_dead_del(b, dk, &bytes), 1);
	commit_ok(st, b);
	ck_assert_int_eq(list(st, id, NULL, 0, &g, NULL), 0);
	ck_assert_int_eq(g.count, 0);
	store_close(st);
}
END_TEST

/* The codec: a long error and response cut between characters at their
 * bounds; a truncated record, a bad version, a bad outcome refused. */
START_TEST(test_attempts_codec)
{
	static unsigned char buf[STORE_ATTEMPT_REC_MAX];
	unsigned char id[UUID_LEN], key[STORE_ATTEMPT_KEY_LEN];
	struct store_attempt a, d;
	struct store *st;
	struct got g;
	char *err, *resp, e[256];
	size_t vlen, i;

	uuidv7_new(id);
	memset(&a, 0, sizeof(a));
	memcpy(a.id, id, UUID_LEN);
	a.n = 1;
	a.error = "boom";
	a.response = "<script>\"x\"</script>";
	store_key_attempt(key, id, 2, 77, 1);
	ck_assert_uint_gt(vlen = store_rec_attempt_encode(&a, buf,
	    sizeof(buf)), 0);
	ck_assert_int_eq(store_rec_attempt_decode(key, sizeof(key), buf, vlen,
	    &d, e, sizeof(e)), 0);
	ck_assert_uint_eq(d.sink_index, 2);
	ck_assert_uint_eq(d.round, 77);
	ck_assert_str_eq(d.response, "<script>\"x\"</script>");
	ck_assert_int_eq(store_rec_attempt_decode(key, sizeof(key), buf,
	    vlen - 1, &d, e, sizeof(e)), -1);
	ck_assert_ptr_nonnull(strstr(e, "bad length"));
	ck_assert_int_eq(store_rec_attempt_decode(key, sizeof(key) - 1, buf,
	    vlen, &d, e, sizeof(e)), -1);
	buf[2] = STORE_ATTEMPT_OUTCOMES;
	ck_assert_int_eq(store_rec_attempt_decode(key, sizeof(key), buf, vlen,
	    &d, e, sizeof(e)), -1);
	buf[0] = 9;
	ck_assert_int_eq(store_rec_attempt_decode(key, sizeof(key), buf, vlen,
	    &d, e, sizeof(e)), -1);
	ck_assert_ptr_nonnull(strstr(e, "format version 9"));

	/* Over their bounds, of two-byte characters: cut at an even
	 * length. */
	ck_assert_ptr_nonnull(err = malloc(2 * STORE_ERROR_MAX + 1));
	ck_assert_ptr_nonnull(resp = malloc(2 * STORE_ATTEMPT_RESPONSE_MAX +
	    1));
	for (i = 0; i < STORE_ERROR_MAX; i++)
		memcpy(err + 2 * i, "\xc3\xa9", 2);
	err[2 * STORE_ERROR_MAX] = '\0';
	for (i = 0; i < STORE_ATTEMPT_RESPONSE_MAX; i++)
		memcpy(resp + 2 * i, "\xc3\xa9", 2);
	resp[2 * STORE_ATTEMPT_RESPONSE_MAX] = '\0';
	st = open_ok();
	{
		struct store_batch *b;

		a.error = err;
		a.response = resp;
		ck_assert_ptr_nonnull(b = store_batch_begin(st));
		ck_assert_int_eq(store_batch_attempt_put(b, &a, 1), 0);
		commit_ok(st, b);
	}
	memset(&g, 0, sizeof(g));
	ck_assert_int_eq(store_attempts_list(st, id, NULL, 0, got_cb, &g,
	    NULL), 0);
	ck_assert_int_eq(g.count, 1);
	ck_assert_uint_eq((unsigned char)g.error[0][0], 0xc3);
	store_close(st);
	free(err);
	free(resp);
}
END_TEST

/* The cut lengths, read back whole. */
static int
len_cb(const unsigned char *key, const struct store_attempt *a, void *arg)
{
	size_t *l = arg;

	l[0] = strlen(a->error);
	l[1] = strlen(a->response);
	return 0;
}

START_TEST(test_attempts_cut)
{
	unsigned char id[UUID_LEN];
	struct store_attempt a;
	struct store_batch *b;
	struct store *st;
	char *resp;
	size_t l[2] = { 0, 0 };

	uuidv7_new(id);
	memset(&a, 0, sizeof(a));
	memcpy(a.id, id, UUID_LEN);
	a.n = 1;
	ck_assert_ptr_nonnull(resp = malloc(STORE_ATTEMPT_RESPONSE_MAX + 2));
	memset(resp, 'a', STORE_ATTEMPT_RESPONSE_MAX - 1);
	memcpy(resp + STORE_ATTEMPT_RESPONSE_MAX - 1, "\xc3\xa9", 2);
	resp[STORE_ATTEMPT_RESPONSE_MAX + 1] = '\0';
	a.error = "";
	a.response = resp;
	st = open_ok();
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_attempt_put(b, &a, 100), 0);
	commit_ok(st, b);
	ck_assert_int_eq(store_attempts_list(st, id, NULL, 0, len_cb, l,
	    NULL), 0);
	/* The last character would pass the bound: it is dropped whole. */
	ck_assert_uint_eq(l[1], STORE_ATTEMPT_RESPONSE_MAX - 1);
	store_close(st);
	free(resp);
}
END_TEST

static Suite *
attempts_suite(void)
{
	Suite *s = suite_create("store_attempts");
	TCase *tc;

	tc = tcase_create("attempts");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_attempts_put_list);
	tcase_add_test(tc, test_attempts_cap);
	tcase_add_test(tc, test_attempts_retention);
	tcase_add_test(tc, test_attempts_drop);
	tcase_add_test(tc, test_attempts_dead_purge);
	tcase_add_test(tc, test_attempts_codec);
	tcase_add_test(tc, test_attempts_cut);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return storeutil_run(attempts_suite());
}
