/* SPDX-License-Identifier: ISC */
/*
 * check_store_hooks.c: unit tests of the Berkeley DB store: batches of hooks
 * and rows, dedupe, quarantine, and the record codecs (daemon/store/store.c,
 * store_hooks.c, store_dedupe.c, store_rec.c).
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
#include "msg.h"
#include "store_logsum.h"
#include "store.h"
#include "store_int.h"
#include "store_rec.h"
#include "storeutil.h"

static Suite	*store_suite(void);


START_TEST(test_round_trip)
{
	static const unsigned char bin[] = { 0, 1, 2, 0xff, 0, '\r', '\n' };
	struct store_row_spec rows[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_SQS, 0, 0 },
	};
	struct store_hook h[3];
	struct store_hook_rec rec;
	struct store_counts c;
	struct store_batch *b;
	struct store *st;
	struct listed l;
	struct store_header bighdr;
	unsigned char *big;
	char idbuf[UUID_STRLEN + 1], ref[16], *longval;
	int i, j;

	ck_assert_ptr_nonnull(big = malloc(BIG_BODY));
	for (i = 0; i < BIG_BODY; i++)
		big[i] = (unsigned char)(i * 7 + (i >> 9));
	st = open_ok();
	hook_fill(&h[0], "github", bin, sizeof(bin));
	hook_fill(&h[1], "stripe", big, BIG_BODY);
	h[1].flagged = 1;
	h[1].dedupe_key = NULL;
	h[1].content_type = "";
	hook_fill(&h[2], "github", "", 0);
	h[0].verification = VERIFICATION_SKIPPED;
	memset(h[0].trace, 0x5c, TRACE_CTX_LEN);
	h[0].tracestate = "rojo=00f067aa0ba902b7";
	h[1].verification = VERIFICATION_FLAGGED;
	memset(h[1].trace, 0x17, TRACE_CTX_LEN);
	/* A head larger than the listing's first read. */
	ck_assert_ptr_nonnull(longval = malloc(6001));
	memset(longval, 'v', 6000);
	longval[6000] = '\0';
	bighdr.name = "x-long";
	bighdr.value = longval;
	h[2].nheaders = 1;
	h[2].headers = &bighdr;

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_ptr_null(store_batch_begin(st));	/* one at a time */
	for (i = 0; i < 3; i++)
		ck_assert_int_eq(store_batch_put_hook(b, &h[i], rows, 2), 0);
	ck_assert_msg(store_batch_commit(b) == 0, "%s", store_strerror(st));
	ck_assert_uint_eq(h[0].seq, 1);
	ck_assert_uint_eq(h[1].seq, 2);
	ck_assert_uint_eq(h[2].seq, 3);

	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 3);
	ck_assert_uint_eq(c.rows, 6);
	ck_assert_uint_eq(c.dead, 0);
	ck_assert_int_eq(store_debug_count(st, "rows"), 6);
	ck_assert_int_eq(store_debug_count(st, "due"), 6);
	ck_assert_int_eq(store_debug_count(st, "members"), 0);
	ck_assert_int_eq(store_debug_count(st, "nonesuch"), -1);

	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 3);
	for (i = 0; i < 3; i++) {
		uuid_format(h[i].id, idbuf);
		ck_assert_uint_eq(l.info[i].seq, h[i].seq);
		ck_assert_str_eq(l.info[i].id, idbuf);
		ck_assert_str_eq(l.info[i].tenant, "acme");
		ck_assert_str_eq(l.info[i].source, h[i].source);
		ck_assert_uint_eq(l.info[i].received_at, h[i].received_at);
		ck_assert_uint_eq(l.info[i].size, h[i].body_len);
		ck_assert_uint_eq(l.info[i].rows, 2);
		ck_assert_int_eq(l.info[i].flagged, h[i].flagged);
		/* The trace id the delivery log lines carry. */
		trace_id_hex(h[i].trace, idbuf);
		ck_assert_str_eq(l.info[i].trace_id, idbuf);
	}
	ck_assert_str_eq(l.info[0].trace_id,
	    "5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c5c");

	/* Filter, after_seq and limit. */
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, "github", 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 2);
	ck_assert_uint_eq(l.info[1].seq, 3);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 1, 1, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 1);
	ck_assert_uint_eq(l.info[0].seq, 2);
	memset(&l, 0, sizeof(l));
	l.stop_after = 2;
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 2);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 3, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 0);

	/* Every field back, byte for byte. */
	for (i = 0; i < 3; i++) {
		ck_assert_int_eq(store_hook_get(st, h[i].seq, &rec), 1);
		ck_assert_mem_eq(rec.hook.id, h[i].id, UUID_LEN);
		ck_assert_str_eq(rec.hook.tenant, h[i].tenant);
		ck_assert_str_eq(rec.hook.source, h[i].source);
		ck_assert_str_eq(rec.hook.method, h[i].method);
		ck_assert_str_eq(rec.hook.path, h[i].path);
		ck_assert_str_eq(rec.hook.content_type, h[i].content_type);
		ck_assert_uint_eq(rec.hook.received_at, h[i].received_at);
		ck_assert_int_eq(rec.hook.flagged, h[i].flagged);
		ck_assert_mem_eq(rec.hook.sha256, h[i].sha256, 32);
		if (h[i].dedupe_key == NULL)
			ck_assert_ptr_null(rec.hook.dedupe_key);
		else
			ck_assert_str_eq(rec.hook.dedupe_key, h[i].dedupe_key);
		ck_assert_int_eq(rec.hook.nheaders, h[i].nheaders);
		for (j = 0; j < h[i].nheaders; j++) {
			ck_assert_str_eq(rec.hook.headers[j].name,
			    h[i].headers[j].name);
			ck_assert_str_eq(rec.hook.headers[j].value,
			    h[i].headers[j].value);
		}
		ck_assert_uint_eq(rec.hook.body_len, h[i].body_len);
		ck_assert_uint_eq(rec.body_size, h[i].body_len);
		ck_assert_int_eq(memcmp(rec.hook.body, h[i].body,
		    h[i].body_len), 0);
		ck_assert_uint_eq(rec.rows, 2);
		ck_assert_str_eq(rec.claim_ref, "");
		ck_assert_uint_eq(rec.hook.verification, h[i].verification);
		ck_assert_mem_eq(rec.hook.trace, h[i].trace, TRACE_CTX_LEN);
		ck_assert_str_eq(rec.hook.tracestate, h[i].tracestate != NULL ?
		    h[i].tracestate : "");
		store_hook_rec_free(&rec);
	}
	ck_assert_int_eq(store_hook_get(st, 99, &rec), 0);

	/* The claim reference: found without one, then with the one set. */
	memset(ref, 'x', sizeof(ref));
	ck_assert_int_eq(store_hook_claim(st, h[0].seq, ref, sizeof(ref)), 1);
	ck_assert_str_eq(ref, "");
	ck_assert_int_eq(store_hook_claim(st, 99, ref, sizeof(ref)), 0);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_hook_set_claim(b, h[0].seq, "claim-1"),
	    1);
	ck_assert_int_eq(store_batch_commit(b), 0);
	ck_assert_int_eq(store_hook_claim(st, h[0].seq, ref, sizeof(ref)), 1);
	ck_assert_str_eq(ref, "claim-1");
	ck_assert_int_eq(store_hook_claim(st, h[0].seq, NULL, 0), 1);
	store_close(st);
	free(big);
	free(longval);
}
END_TEST

START_TEST(test_seq_never_reused)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_counts c;
	struct store_hook h;
	struct store_batch *b;
	struct store *st;
	struct listed l;
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s1, s2, s3, next;

	st = open_ok();
	/* store_next_seq names the seq the next put takes (the writer's
	 * claim horizon, pipeline_step, relies on it). */
	next = store_next_seq(st);
	s1 = put_one(st, "github", "a", 1, 1);
	ck_assert_uint_eq(s1, next);
	s2 = put_one(st, "github", "b", 1, 0);		/* aborted */
	ck_assert_uint_eq(store_next_seq(st), s2 + 1);
	s3 = put_one(st, "github", "c", 1, 1);
	ck_assert_uint_gt(s2, s1);
	ck_assert_uint_gt(s3, s2);
	store_key_row(rk, s3, 7);
	ck_assert_uint_eq(store_rowkey_seq(rk), s3);

	/* A put refused (a tenant too long) fails its batch, which commit
	 * aborts; the put took no seq, so the next put gets s3 + 1. */
	hook_fill(&h, "github", "d", 1);
	h.tenant = "a-tenant-id-that-is-much-too-long-to-be-stored-as-one-"
	    "because-it-is-over-64";
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), -1);
	ck_assert_int_eq(store_batch_commit(b), -1);
	ck_assert_ptr_nonnull(strstr(store_strerror(st), "tenant"));
	next = store_next_seq(st);
	ck_assert_uint_eq(next, s3 + 1);	/* refused before taking one */
	ck_assert_uint_eq(put_one(st, "github", "e", 1, 1), next);

	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 3);
	ck_assert_uint_eq(c.rows, 3);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 3);
	ck_assert_uint_eq(l.info[0].seq, s1);
	ck_assert_uint_eq(l.info[1].seq, s3);
	ck_assert_int_eq(store_debug_count(st, "due"), 3);
	store_close(st);
}
END_TEST

/* A read while a batch is open must not wait on the batch's locks. */
START_TEST(test_read_during_batch)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_hook_rec rec;
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	struct listed l;

	st = open_ok();
	put_one(st, "github", "first", 5, 1);
	hook_fill(&h, "github", "second", 6);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 2);
	ck_assert_int_eq(store_hook_get(st, 1, &rec), 1);
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_debug_count(st, "due"), 2);
	ck_assert_int_eq(store_batch_commit(b), 0);
	ck_assert_int_eq(store_debug_count(st, "due"), 2);
	store_close(st);
}
END_TEST

START_TEST(test_ordered_rows)
{
	struct store_row_spec rows[3] = {
		{ 0, MODULE_HTTP, 0, 0 },		/* unordered */
		{ 1, MODULE_HTTP, 1, 0x1234 },		/* lane A */
		{ 2, MODULE_SQS, 1, 0x1234 },		/* lane B: other sink */
	};
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	int i;

	st = open_ok();
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	for (i = 0; i < 2; i++) {
		hook_fill(&h, "github", "x", 1);
		ck_assert_int_eq(store_batch_put_hook(b, &h, rows, 3), 0);
	}
	hook_fill(&h, "github", "x", 1);
	ck_assert_int_eq(store_batch_put_hook(b, &h, rows + 1, 1), 0);
	ck_assert_int_eq(store_batch_commit(b), 0);

	ck_assert_int_eq(store_debug_count(st, "rows"), 7);
	ck_assert_int_eq(store_debug_count(st, "due"), 2);
	ck_assert_int_eq(store_debug_count(st, "members"), 5);
	ck_assert_int_eq(store_debug_count(st, "marks"), 2);
	ck_assert_int_eq(store_debug_count(st, "lanes"), 0);
	store_close(st);
}
END_TEST

START_TEST(test_dedupe_round_trip)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	unsigned char id1[UUID_LEN], id2[UUID_LEN], id3[UUID_LEN];
	unsigned char got[UUID_LEN];

	st = open_ok();
	put_dedupe(st, "acme", "github", "delivery-1", 5000, id1);
	memset(got, 0, sizeof(got));
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-1",
	    4999, got), 1);
	ck_assert_mem_eq(got, id1, UUID_LEN);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-1",
	    0, got), 1);
	/* Live only while expires > now. */
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-1",
	    5000, got), 0);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-1",
	    6000, got), 0);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-2",
	    0, got), 0);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "", 0, got),
	    0);

	/* Scope (tenant, source, key): the same key elsewhere is apart. */
	ck_assert_int_eq(store_dedupe_get(st, "beta", "github", "delivery-1",
	    0, got), 0);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "stripe", "delivery-1",
	    0, got), 0);
	put_dedupe(st, "beta", "github", "delivery-1", 9000, id2);
	put_dedupe(st, "acme", "stripe", "delivery-1", 9000, id3);
	ck_assert_int_eq(store_dedupe_get(st, "beta", "github", "delivery-1",
	    6000, got), 1);
	ck_assert_mem_eq(got, id2, UUID_LEN);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "stripe", "delivery-1",
	    6000, got), 1);
	ck_assert_mem_eq(got, id3, UUID_LEN);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-1",
	    4000, got), 1);
	ck_assert_mem_eq(got, id1, UUID_LEN);
	/* "acme"+"github" must not meet "acmeg"+"ithub". */
	ck_assert_int_eq(store_dedupe_get(st, "acmeg", "ithub", "delivery-1",
	    0, got), 0);

	/* Flagged hooks and hooks without a key write no entry. */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	hook_fill(&h, "github", "f", 1);
	h.dedupe_key = "flagged-1";
	h.dedupe_expires = 9000;
	h.flagged = 1;
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	hook_fill(&h, "github", "n", 1);
	h.dedupe_key = NULL;
	h.dedupe_expires = 9000;
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	hook_fill(&h, "github", "e", 1);
	h.dedupe_key = "";
	h.dedupe_expires = 9000;
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	ck_assert_int_eq(store_batch_commit(b), 0);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "flagged-1",
	    0, got), 0);
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 3);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 3);

	/* Stored again (the old one expired): the new id wins; the old
	 * index entry stays for the sweep. */
	put_dedupe(st, "acme", "github", "delivery-1", 20000, id3);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-1",
	    10000, got), 1);
	ck_assert_mem_eq(got, id3, UUID_LEN);
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 3);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 4);

	/* Durable. */
	store_close(st);
	st = open_ok();
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "delivery-1",
	    10000, got), 1);
	ck_assert_mem_eq(got, id3, UUID_LEN);
	ck_assert_int_eq(store_dedupe_get(st, "beta", "github", "delivery-1",
	    8999, got), 1);
	ck_assert_mem_eq(got, id2, UUID_LEN);
	store_close(st);
}
END_TEST

/* Two hooks of one batch with one key: the second sees the first. */
/*
 * store_hook_fits says yes exactly when the put succeeds: dedupe keys
 * around the length where the lookup key still fits and the expiry
 * index's (8 bytes longer) no longer does, and reasons around 63 bytes.
 */
START_TEST(test_hook_fits)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	char key[STORE_KEY_MAX + 1], reason[80], why[128];
	size_t n;
	int fits, put;

	st = open_ok();
	for (n = 990; n <= 1024; n++) {
		memset(key, 'k', n);
		key[n] = '\0';
		hook_fill(&h, "github", "d", 1);
		h.dedupe_key = key;
		fits = store_hook_fits(&h, NULL, why, sizeof(why));
		ck_assert_ptr_nonnull(b = store_batch_begin(st));
		put = store_batch_put_hook(b, &h, &row, 1);
		store_batch_abort(b);
		ck_assert_msg(fits == put, "dedupe key of %zu bytes: fits %d, "
		    "put %d", n, fits, put);
		if (fits == -1)
			ck_assert_ptr_nonnull(strstr(why, "dedupe key"));
	}
	/* 1,013 bytes ("acme", "github"): the lookup key fits, the index
	 * key does not -- the batch-wide failure of issue 22. */
	memset(key, 'k', 1013);
	key[1013] = '\0';
	h.dedupe_key = key;
	ck_assert_int_eq(store_hook_fits(&h, NULL, why, sizeof(why)), -1);
	for (n = 60; n <= 66; n++) {
		memset(reason, 'r', n);
		reason[n] = '\0';
		hook_fill(&h, "github", "d", 1);
		h.dedupe_key = NULL;
		fits = store_hook_fits(&h, reason, why, sizeof(why));
		ck_assert_ptr_nonnull(b = store_batch_begin(st));
		put = store_batch_put_quarantine(b, &h, reason);
		store_batch_abort(b);
		ck_assert_msg(fits == put, "reason of %zu bytes: fits %d, put "
		    "%d", n, fits, put);
		ck_assert_int_eq(fits, n <= STORE_QREASON_MAX ? 0 : -1);
	}
	store_close(st);
}
END_TEST

START_TEST(test_dedupe_in_batch)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	unsigned char id1[UUID_LEN], got[UUID_LEN];

	st = open_ok();
	put_dedupe(st, "acme", "github", "old", 5000, id1);

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	/* Committed entries, read inside the open batch (no lock wait). */
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "old", 1000,
	    got), 1);
	ck_assert_mem_eq(got, id1, UUID_LEN);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "new", 1000,
	    got), 0);
	hook_fill(&h, "github", "x", 1);
	h.dedupe_key = "new";
	h.dedupe_expires = 5000;
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	/* The batch's own, uncommitted. */
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "new", 1000,
	    got), 1);
	ck_assert_mem_eq(got, h.id, UUID_LEN);
	store_batch_abort(b);
	/* Gone with the batch. */
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "new", 1000,
	    got), 0);
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 1);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 1);

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "new", 1000,
	    got), 1);
	ck_assert_mem_eq(got, h.id, UUID_LEN);
	ck_assert_int_eq(store_batch_commit(b), 0);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "new", 1000,
	    got), 1);
	ck_assert_mem_eq(got, h.id, UUID_LEN);
	store_close(st);
}
END_TEST

START_TEST(test_dedupe_sweep)
{
	struct store *st;
	unsigned char idb[UUID_LEN], idd[UUID_LEN], got[UUID_LEN];

	st = open_ok();
	ck_assert_int_eq(sweep(st, UINT64_MAX, 100, 1), 0);	/* empty */

	put_dedupe(st, "acme", "github", "a", 1000, NULL);
	put_dedupe(st, "acme", "github", "b", 2000, NULL);
	put_dedupe(st, "acme", "github", "c", 3000, NULL);
	put_dedupe(st, "acme", "github", "d", 10000, idd);
	put_dedupe(st, "acme", "github", "b", 8000, idb);	/* again */
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 4);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 5);

	ck_assert_int_eq(sweep(st, 500, 10, 1), 0);	/* none expired */
	ck_assert_int_eq(sweep(st, 3000, 0, 1), 0);	/* max 0 */
	/* max respected: a (1000) and b's old entry (2000) only. */
	ck_assert_int_eq(sweep(st, 3000, 2, 1), 2);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 3);
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 3);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "a", 0, got),
	    0);
	/* b stored again with a later expiry survives its old entry's sweep. */
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "b", 3000,
	    got), 1);
	ck_assert_mem_eq(got, idb, UUID_LEN);
	/* c: expiry == now is expired, swept. */
	ck_assert_int_eq(sweep(st, 3000, 10, 1), 1);
	ck_assert_int_eq(sweep(st, 3000, 10, 1), 0);
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 2);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 2);
	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "d", 9999,
	    got), 1);
	ck_assert_mem_eq(got, idd, UUID_LEN);

	/* An aborted sweep removes nothing. */
	ck_assert_int_eq(sweep(st, 20000, 10, 0), 2);
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 2);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 2);
	ck_assert_int_eq(sweep(st, 20000, 10, 1), 2);
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 0);
	ck_assert_int_eq(store_debug_count(st, "dedupe_exp"), 0);
	ck_assert_int_eq(sweep(st, UINT64_MAX, 10, 1), 0);
	store_close(st);
}
END_TEST

START_TEST(test_quarantine)
{
	static const struct store_header sig_headers[] = {
		{ "x-hub-signature-256", "sha256=00ff" },
		{ "content-type", "application/json" },
		{ "authorization", "Bearer x" },
		{ "x-empty", "" },
	};
	struct store_hook_rec rec;
	struct store_counts c;
	struct store_batch *b;
	struct store_hook h[3], bad;
	struct store_header bighdr;
	struct store *st;
	struct qlisted l;
	unsigned char *big, *val, got[UUID_LEN];
	char reason[64], small[4], idbuf[UUID_STRLEN + 1], *longval;
	char longreason[STORE_QREASON_MAX + 2];
	const char *reasons[3] = { "no_match", "timestamp_out_of_tolerance",
	    "" };
	uint64_t bytes, hooks, s1, s5;
	size_t vlen;
	int i, j;

	ck_assert_ptr_nonnull(big = malloc(100000));
	for (i = 0; i < 100000; i++)
		big[i] = (unsigned char)(i * 13);
	ck_assert_ptr_nonnull(longval = malloc(6001));
	memset(longval, 'v', 6000);
	longval[6000] = '\0';
	bighdr.name = "x-long";
	bighdr.value = longval;

	st = open_ok();
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 0);
	ck_assert_uint_eq(hooks, 0);
	s1 = put_one(st, "github", "hook", 4, 1);

	hook_fill(&h[0], "github", "a\0c", 3);
	h[0].headers = sig_headers;
	h[0].nheaders = 4;
	hook_fill(&h[1], "stripe", big, 100000);
	h[1].tenant = "beta";
	h[1].content_type = "";
	hook_fill(&h[2], "github", "", 0);	/* head over the peek */
	h[2].headers = &bighdr;
	h[2].nheaders = 1;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	for (i = 0; i < 3; i++) {
		h[i].dedupe_key = i == 1 ? "q-key" : NULL;
		h[i].dedupe_expires = 9000;
		ck_assert_int_eq(store_batch_put_quarantine(b, &h[i],
		    reasons[i]), 0);
	}
	/* Usage counts the open batch. */
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 100003);
	ck_assert_uint_eq(hooks, 3);
	ck_assert_int_eq(store_batch_commit(b), 0);
	/* Seqs from the hooks' counter. */
	ck_assert_uint_eq(h[0].seq, s1 + 1);
	ck_assert_uint_eq(h[1].seq, s1 + 2);
	ck_assert_uint_eq(h[2].seq, s1 + 3);
	s5 = put_one(st, "github", "hook", 4, 1);
	ck_assert_uint_eq(s5, s1 + 4);

	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 100003);
	ck_assert_uint_eq(hooks, 3);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.qbytes, 100003);
	ck_assert_uint_eq(c.qhooks, 3);
	ck_assert_uint_eq(c.hooks, 2);		/* held hooks are not hooks */
	ck_assert_uint_eq(c.rows, 2);
	ck_assert_int_eq(store_debug_count(st, "quarantine"), 3);
	ck_assert_int_eq(store_debug_count(st, "hooks"), 2);
	/* The two hooks' one key; held hooks write no entry. */
	ck_assert_int_eq(store_debug_count(st, "dedupe"), 1);
	ck_assert_int_eq(store_dedupe_get(st, "beta", "stripe", "q-key", 0,
	    got), 0);

	/* List: no bodies, every field. */
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_quarantine_list(st, NULL, 0, 0, qlist_cb, &l),
	    0);
	ck_assert_int_eq(l.n, 3);
	for (i = 0; i < 3; i++) {
		uuid_format(h[i].id, idbuf);
		ck_assert_uint_eq(l.info[i].seq, h[i].seq);
		ck_assert_str_eq(l.info[i].id, idbuf);
		ck_assert_str_eq(l.info[i].tenant, h[i].tenant);
		ck_assert_str_eq(l.info[i].source, h[i].source);
		ck_assert_uint_eq(l.info[i].received_at, h[i].received_at);
		ck_assert_uint_eq(l.info[i].size, h[i].body_len);
		ck_assert_str_eq(l.info[i].reason, reasons[i]);
	}
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_quarantine_list(st, "github", 0, 0, qlist_cb,
	    &l), 0);
	ck_assert_int_eq(l.n, 2);
	ck_assert_uint_eq(l.info[1].seq, h[2].seq);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_quarantine_list(st, NULL, h[0].seq, 1,
	    qlist_cb, &l), 0);
	ck_assert_int_eq(l.n, 1);
	ck_assert_uint_eq(l.info[0].seq, h[1].seq);
	memset(&l, 0, sizeof(l));
	l.stop_after = 1;
	ck_assert_int_eq(store_quarantine_list(st, NULL, 0, 0, qlist_cb, &l),
	    0);
	ck_assert_int_eq(l.n, 1);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_quarantine_list(st, "nonesuch", 0, 0,
	    qlist_cb, &l), 0);
	ck_assert_int_eq(l.n, 0);

	/* Get: every field byte for byte, all the headers, the reason. */
	for (i = 0; i < 3; i++) {
		memset(reason, 'x', sizeof(reason));
		ck_assert_int_eq(store_quarantine_get(st, h[i].seq, &rec,
		    reason, sizeof(reason)), 1);
		ck_assert_str_eq(reason, reasons[i]);
		ck_assert_str_eq(rec.reason, reasons[i]);
		ck_assert_mem_eq(rec.hook.id, h[i].id, UUID_LEN);
		ck_assert_str_eq(rec.hook.tenant, h[i].tenant);
		ck_assert_str_eq(rec.hook.source, h[i].source);
		ck_assert_str_eq(rec.hook.method, h[i].method);
		ck_assert_str_eq(rec.hook.path, h[i].path);
		ck_assert_str_eq(rec.hook.content_type, h[i].content_type);
		ck_assert_uint_eq(rec.hook.received_at, h[i].received_at);
		ck_assert_mem_eq(rec.hook.sha256, h[i].sha256, 32);
		if (h[i].dedupe_key == NULL)
			ck_assert_ptr_null(rec.hook.dedupe_key);
		else
			ck_assert_str_eq(rec.hook.dedupe_key, h[i].dedupe_key);
		ck_assert_int_eq(rec.hook.nheaders, h[i].nheaders);
		for (j = 0; j < h[i].nheaders; j++) {
			ck_assert_str_eq(rec.hook.headers[j].name,
			    h[i].headers[j].name);
			ck_assert_str_eq(rec.hook.headers[j].value,
			    h[i].headers[j].value);
		}
		ck_assert_uint_eq(rec.hook.body_len, h[i].body_len);
		ck_assert_uint_eq(rec.body_size, h[i].body_len);
		ck_assert_int_eq(memcmp(rec.hook.body, h[i].body,
		    h[i].body_len), 0);
		ck_assert_str_eq(rec.claim_ref, "");
		store_hook_rec_free(&rec);
	}
	/* A short reason buffer truncates; NULL is fine. */
	ck_assert_int_eq(store_quarantine_get(st, h[1].seq, &rec, small,
	    sizeof(small)), 1);
	ck_assert_str_eq(small, "tim");
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_quarantine_get(st, h[0].seq, &rec, NULL, 0), 1);
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_quarantine_get(st, s1, &rec, reason,
	    sizeof(reason)), 0);		/* a hook, not held */
	ck_assert_int_eq(store_quarantine_get(st, 99, &rec, reason,
	    sizeof(reason)), 0);
	ck_assert_int_eq(store_hook_get(st, h[0].seq, &rec), 0);

	/* Delete: 1, then 0; usage follows, in the batch and committed. */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_del_quarantine(b, h[2].seq), 1);
	ck_assert_int_eq(store_batch_del_quarantine(b, h[2].seq), 0);
	ck_assert_int_eq(store_batch_del_quarantine(b, 99), 0);
	ck_assert_int_eq(store_batch_del_quarantine(b, s1), 0);
	ck_assert_int_eq(store_batch_del_quarantine(b, h[1].seq), 1);
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 3);
	ck_assert_uint_eq(hooks, 1);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.qhooks, 3);		/* as committed */
	ck_assert_int_eq(store_batch_commit(b), 0);
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 3);
	ck_assert_uint_eq(hooks, 1);
	ck_assert_int_eq(store_debug_count(st, "quarantine"), 1);
	ck_assert_int_eq(store_quarantine_get(st, h[2].seq, &rec, NULL, 0), 0);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_quarantine_list(st, NULL, 0, 0, qlist_cb, &l),
	    0);
	ck_assert_int_eq(l.n, 1);
	ck_assert_uint_eq(l.info[0].seq, h[0].seq);

	/* A reason over STORE_QREASON_MAX is refused, the batch fails. */
	hook_fill(&bad, "github", "b", 1);
	memset(longreason, 'r', sizeof(longreason));
	longreason[STORE_QREASON_MAX + 1] = '\0';
	ck_assert_ptr_null(quarantine_encode(&bad, longreason,
	    &vlen));
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_quarantine(b, &bad, longreason), -1);
	ck_assert_int_eq(store_batch_commit(b), -1);
	longreason[STORE_QREASON_MAX] = '\0';
	ck_assert_ptr_nonnull(val = quarantine_encode(&bad,
	    longreason, &vlen));
	free(val);
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 3);
	ck_assert_uint_eq(hooks, 1);
	store_close(st);
	free(big);
	free(longval);
}
END_TEST

/*
 * A hook's body in bodies lives as long as its hook: it goes with the
 * settle of the hook's last row, and stays while a row is alive or dead-
 * lettered (the hook stays for a replay), while a claim reference is
 * added, and through a restart.  A
 * quarantined hook's body is in its quarantine record: a release puts it
 * into bodies with the new hook, and a purge leaves bodies as they were.
 * The heap's records are counted with a cursor.
 */
START_TEST(test_bodies_freed)
{
	struct store_row_spec rows[2] = {
		{ 0, MODULE_HTTP, 0, 0 }, { 1, MODULE_HTTP, 0, 0 }
	};
	struct store_hook_rec rec;
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	unsigned char body[1500];
	uint64_t s1, s2, s3, q1, q2;
	char ref[128];

	memset(body, 'h', sizeof(body));
	st = open_ok();
	/* A settle of the last row; of one of two; a dead letter. */
	s1 = put_one(st, "github", body, sizeof(body), 1);
	s2 = put_hook_body(st, "acme", "github", 1700000000000ULL, body,
	    sizeof(body), rows, 2);
	s3 = put_one(st, "github", body, sizeof(body), 1);
	ck_assert_int_eq(store_debug_count(st, "bodies"), 3);
	ck_assert_int_eq(deliver(st, s1, 0), 1);
	ck_assert_int_eq(store_debug_count(st, "bodies"), 2);
	ck_assert_int_eq(deliver(st, s2, 0), 1);
	ck_assert_int_eq(kill_row(st, s3, 0, 1700000001000ULL, "gave_up", "x",
	    3), 1);
	ck_assert_int_eq(store_debug_count(st, "bodies"), 2);
	/* A claim reference keeps the body where it is. */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_hook_set_claim(b, s2,
	    "urn:ankusa:claim:v1:acme:01H"), 1);
	commit_ok(st, b);
	ck_assert_int_eq(store_hook_claim(st, s2, ref, sizeof(ref)), 1);
	ck_assert_int_eq(store_hook_get(st, s2, &rec), 1);
	ck_assert_int_eq(rec.at.in, STORE_BODY_HEAP);
	ck_assert_uint_eq(rec.hook.body_len, sizeof(body));
	ck_assert_mem_eq(rec.hook.body, body, sizeof(body));
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_debug_count(st, "bodies"), 2);
	store_close(st);
	st = open_ok();
	ck_assert_int_eq(store_debug_count(st, "bodies"), 2);
	ck_assert_int_eq(deliver(st, s2, 1), 1);
	ck_assert_int_eq(store_hook_get(st, s2, &rec), 0);
	ck_assert_int_eq(store_debug_count(st, "bodies"), 1);
	ck_assert_int_eq(store_hook_get(st, s3, &rec), 1);
	ck_assert_mem_eq(rec.hook.body, body, sizeof(body));
	store_hook_rec_free(&rec);

	/* Quarantine: a release, then a purge. */
	q1 = put_quarantined(st, "github", body, sizeof(body), "no_match", 1);
	q2 = put_quarantined(st, "github", body, sizeof(body), "no_match", 1);
	ck_assert_int_eq(store_debug_count(st, "bodies"), 1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_quarantine_get(st, q1, &rec, NULL, 0), 1);
	h = rec.hook;
	ck_assert_int_eq(store_batch_put_hook(b, &h, rows, 1), 0);
	ck_assert_int_eq(store_batch_del_quarantine(b, q1), 1);
	commit_ok(st, b);
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_debug_count(st, "bodies"), 2);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_del_quarantine(b, q2), 1);
	commit_ok(st, b);
	ck_assert_int_eq(store_debug_count(st, "quarantine"), 0);
	ck_assert_int_eq(store_debug_count(st, "bodies"), 2);
	ck_assert_int_eq(deliver(st, h.seq, 0), 1);
	ck_assert_int_eq(store_debug_count(st, "bodies"), 1);
	ck_assert_int_eq(store_debug_count(st, "hooks"), 1);
	store_close(st);
}
END_TEST

/* Release: the held hook committed as a hook with its own id, and out of
 * the pen, in one batch. */
START_TEST(test_quarantine_release)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_hook_rec rec, hrec;
	struct store_counts c;
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	struct listed l;
	struct qlisted ql;
	unsigned char id[UUID_LEN], got[UUID_LEN];
	char reason[64];
	uint64_t qseq, bytes, hooks;
	int j;

	st = open_ok();
	qseq = put_quarantined(st, "github", "held body", 9, "no_match", 1);
	put_quarantined(st, "github", "other", 5, "no_match", 1);

	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_quarantine_get(st, qseq, &rec, reason,
	    sizeof(reason)), 1);
	ck_assert_str_eq(reason, "no_match");
	memcpy(id, rec.hook.id, UUID_LEN);
	h = rec.hook;
	h.dedupe_key = "rel-1";
	h.dedupe_expires = 5000;
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	ck_assert_int_eq(store_batch_del_quarantine(b, qseq), 1);
	ck_assert_msg(store_batch_commit(b) == 0, "%s", store_strerror(st));
	ck_assert_uint_gt(h.seq, qseq);		/* a new seq */

	ck_assert_int_eq(store_hook_get(st, h.seq, &hrec), 1);
	ck_assert_mem_eq(hrec.hook.id, id, UUID_LEN);
	ck_assert_uint_eq(hrec.hook.body_len, 9);
	ck_assert_mem_eq(hrec.hook.body, "held body", 9);
	ck_assert_uint_eq(hrec.hook.received_at, rec.hook.received_at);
	ck_assert_int_eq(hrec.hook.nheaders, rec.hook.nheaders);
	for (j = 0; j < rec.hook.nheaders; j++)
		ck_assert_str_eq(hrec.hook.headers[j].value,
		    rec.hook.headers[j].value);
	ck_assert_ptr_null(hrec.reason);
	ck_assert_uint_eq(hrec.rows, 1);
	store_hook_rec_free(&hrec);
	store_hook_rec_free(&rec);

	ck_assert_int_eq(store_dedupe_get(st, "acme", "github", "rel-1", 0,
	    got), 1);
	ck_assert_mem_eq(got, id, UUID_LEN);
	ck_assert_int_eq(store_quarantine_get(st, qseq, &rec, NULL, 0), 0);
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 5);
	ck_assert_uint_eq(hooks, 1);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.hooks, 1);
	ck_assert_uint_eq(c.rows, 1);
	memset(&l, 0, sizeof(l));
	ck_assert_int_eq(store_hooks_list(st, NULL, 0, 0, list_cb, &l), 0);
	ck_assert_int_eq(l.n, 1);
	memset(&ql, 0, sizeof(ql));
	ck_assert_int_eq(store_quarantine_list(st, NULL, 0, 0, qlist_cb, &ql),
	    0);
	ck_assert_int_eq(ql.n, 1);
	ck_assert_uint_ne(ql.info[0].seq, qseq);
	store_close(st);
}
END_TEST

/* The id index: a hook is found by its id while it is stored, with its
 * new seq after a release from the pen, and not once it is gone. */
START_TEST(test_hook_seq)
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_hook_rec rec;
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	unsigned char id1[UUID_LEN], id2[UUID_LEN], none[UUID_LEN];
	uint64_t s1, s2, qseq, seq;

	st = open_ok();
	s1 = put_one(st, "github", "one", 3, 1);
	s2 = put_one(st, "github", "two", 3, 1);
	ck_assert_int_eq(store_hook_get(st, s1, &rec), 1);
	memcpy(id1, rec.hook.id, UUID_LEN);
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_hook_get(st, s2, &rec), 1);
	memcpy(id2, rec.hook.id, UUID_LEN);
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_hook_seq(st, id1, &seq), 1);
	ck_assert_uint_eq(seq, s1);
	ck_assert_int_eq(store_hook_seq(st, id2, &seq), 1);
	ck_assert_uint_eq(seq, s2);
	uuidv7_new(none);
	ck_assert_int_eq(store_hook_seq(st, none, &seq), 0);

	/* Delivered: its last row goes, the hook and its entry with it. */
	ck_assert_int_eq(deliver(st, s1, 0), 1);
	ck_assert_int_eq(store_hook_seq(st, id1, &seq), 0);
	ck_assert_int_eq(store_hook_seq(st, id2, &seq), 1);

	/* Released from the pen: the same id, a new seq, found by it. */
	qseq = put_quarantined(st, "github", "held", 4, "no_match", 1);
	ck_assert_int_eq(store_quarantine_get(st, qseq, &rec, NULL, 0), 1);
	ck_assert_int_eq(store_hook_seq(st, rec.hook.id, &seq), 0);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	h = rec.hook;
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	ck_assert_int_eq(store_batch_del_quarantine(b, qseq), 1);
	/* Inside the batch, its own write is seen. */
	ck_assert_int_eq(store_hook_seq(st, rec.hook.id, &seq), 1);
	ck_assert_uint_eq(seq, h.seq);
	commit_ok(st, b);
	ck_assert_int_eq(store_hook_seq(st, rec.hook.id, &seq), 1);
	ck_assert_uint_eq(seq, h.seq);
	store_hook_rec_free(&rec);
	store_close(st);
}
END_TEST

/* A hook whose id carries its seq (id_seq, as the writer asks for every
 * new hook) gets no entry in hookids and is found by its id all the same:
 * by the low bits of its seq, the newest candidate first, checked against
 * the whole id; a hook of an older seq with the same low bits is found
 * past a newer one; an id that only shares the low bits is not found; a
 * delivered hook is gone. */
static uint64_t
put_idseq(struct store *st, unsigned char id[UUID_LEN])
{
	struct store_row_spec row = { 0, MODULE_HTTP, 0, 0 };
	struct store_batch *b;
	struct store_hook h;

	hook_fill(&h, "github", "x", 1);
	h.id_seq = 1;
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_put_hook(b, &h, &row, 1), 0);
	commit_ok(st, b);
	ck_assert_uint_eq(uuid_seq_low(h.id), h.seq &
	    ((1u << UUID_SEQ_BITS) - 1));
	memcpy(id, h.id, UUID_LEN);
	return h.seq;
}

START_TEST(test_hook_seq_in_id)
{
	unsigned char v[9] = { 1 }, a[UUID_LEN], b2[UUID_LEN], c[UUID_LEN];
	unsigned char other[UUID_LEN];
	struct store_hook_rec rec;
	struct store *st;
	uint64_t sa, sb, sc, seq, next;
	int i;

	st = open_ok();
	sa = put_idseq(st, a);
	ck_assert_int_eq(store_debug_count(st, "hookids"), 0);
	ck_assert_int_eq(store_hook_seq(st, a, &seq), 1);
	ck_assert_uint_eq(seq, sa);
	ck_assert_int_eq(store_hook_get(st, sa, &rec), 1);
	ck_assert_mem_eq(rec.hook.id, a, UUID_LEN);
	store_hook_rec_free(&rec);
	store_close(st);

	/* The counter one turn of the low bits on: the next hook has a's
	 * low bits. */
	next = sa + (1u << UUID_SEQ_BITS);
	for (i = 0; i < 8; i++)
		v[1 + i] = (unsigned char)(next >> (56 - 8 * i));
	meta_poke("next_seq", v, sizeof(v));
	st = open_ok();
	sb = put_idseq(st, b2);
	ck_assert_uint_eq(sb, next);
	ck_assert_uint_eq(uuid_seq_low(a), uuid_seq_low(b2));
	ck_assert_int_eq(store_hook_seq(st, b2, &seq), 1);
	ck_assert_uint_eq(seq, sb);
	ck_assert_int_eq(store_hook_seq(st, a, &seq), 1);
	ck_assert_uint_eq(seq, sa);
	/* The same low bits, another id: no hook. */
	memcpy(other, a, UUID_LEN);
	other[10] ^= 0x5a;
	ck_assert_int_eq(store_hook_seq(st, other, &seq), 0);
	/* A hook put the old way beside them keeps its entry. */
	sc = put_one(st, "github", "y", 1, 1);
	ck_assert_int_eq(store_debug_count(st, "hookids"), 1);
	ck_assert_int_eq(store_hook_get(st, sc, &rec), 1);
	memcpy(c, rec.hook.id, UUID_LEN);
	store_hook_rec_free(&rec);
	ck_assert_int_eq(store_hook_seq(st, c, &seq), 1);
	ck_assert_uint_eq(seq, sc);

	/* Delivered, each is gone; the old one's entry with it. */
	ck_assert_int_eq(deliver(st, sa, 0), 1);
	ck_assert_int_eq(store_hook_seq(st, a, &seq), 0);
	ck_assert_int_eq(store_hook_seq(st, b2, &seq), 1);
	ck_assert_int_eq(deliver(st, sb, 0), 1);
	ck_assert_int_eq(store_hook_seq(st, b2, &seq), 0);
	ck_assert_int_eq(deliver(st, sc, 0), 1);
	ck_assert_int_eq(store_hook_seq(st, c, &seq), 0);
	ck_assert_int_eq(store_debug_count(st, "hookids"), 0);
	store_close(st);
}
END_TEST

/* A store of schema 3: its hooks keep their entries and are found by
 * them; the open writes schema 4, and new hooks carry their seq. */
START_TEST(test_schema_3_to_4)
{
	static const unsigned char v3[5] = { 1, 0, 0, 0, 3 };
	struct store_hook_rec rec;
	struct store *st;
	unsigned char old[UUID_LEN], new[UUID_LEN];
	uint64_t so, sn, seq;

	st = open_ok();
	so = put_one(st, "github", "x", 1, 1);
	ck_assert_int_eq(store_hook_get(st, so, &rec), 1);
	memcpy(old, rec.hook.id, UUID_LEN);
	ck_assert_int_eq(rec.hook.id_seq, 0);
	store_hook_rec_free(&rec);
	store_close(st);
	meta_poke("schema", v3, sizeof(v3));
	st = open_ok();
	ck_assert_int_eq(store_hook_seq(st, old, &seq), 1);
	ck_assert_uint_eq(seq, so);
	sn = put_idseq(st, new);
	ck_assert_int_eq(store_hook_get(st, sn, &rec), 1);
	ck_assert_int_eq(rec.hook.id_seq, 1);
	store_hook_rec_free(&rec);
	store_close(st);
	st = open_ok();
	ck_assert_int_eq(store_hook_seq(st, new, &seq), 1);
	ck_assert_uint_eq(seq, sn);
	ck_assert_int_eq(store_debug_count(st, "hookids"), 1);
	store_close(st);
}
END_TEST

/* A store of schema 2 has no index: the open builds it, for every hook,
 * and writes schema 4 (3's index, and nothing more to rewrite). */
START_TEST(test_hookids_upgrade)
{
	static const unsigned char v2[5] = { 1, 0, 0, 0, 2 };
	struct store_hook_rec rec;
	struct store *st;
	unsigned char ids[1100][UUID_LEN];
	uint64_t seqs[1100], seq;
	int i, n = 1100;

	st = open_ok();
	for (i = 0; i < n; i++) {
		seqs[i] = put_one(st, "github", "x", 1, 1);
		ck_assert_int_eq(store_hook_get(st, seqs[i], &rec), 1);
		memcpy(ids[i], rec.hook.id, UUID_LEN);
		store_hook_rec_free(&rec);
	}
	store_close(st);
	/* What a build before the index left: no entries, schema 2. */
	table_truncate("hookids.db");
	meta_poke("schema", v2, sizeof(v2));
	st = open_ok();
	for (i = 0; i < n; i++) {
		ck_assert_int_eq(store_hook_seq(st, ids[i], &seq), 1);
		ck_assert_uint_eq(seq, seqs[i]);
	}
	store_close(st);
	/* Schema 3 now: the next open builds nothing (a deleted entry
	 * stays deleted). */
	table_del("hookids.db", ids[0], UUID_LEN);
	st = open_ok();
	ck_assert_int_eq(store_hook_seq(st, ids[0], &seq), 0);
	ck_assert_int_eq(store_hook_seq(st, ids[1], &seq), 1);
	store_close(st);
}
END_TEST

START_TEST(test_quarantine_counters)
{
	struct store_counts c;
	struct store_batch *b;
	struct store_hook h;
	struct store *st;
	uint64_t s1, s2, bytes, hooks;

	/* A store from before the pen's counters reads them as 0. */
	st = open_ok();
	store_close(st);
	meta_delete("qhooks");
	meta_delete("qbytes");
	st = open_ok();
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 0);
	ck_assert_uint_eq(hooks, 0);
	put_one(st, "github", "hook", 4, 1);	/* leaves them absent */
	store_close(st);
	st = open_ok();

	s1 = put_quarantined(st, "github", "12345", 5, "no_match", 1);
	s2 = put_quarantined(st, "stripe", "1234567", 7, "no_match", 1);
	put_quarantined(st, "stripe", "lost", 4, "no_match", 0);
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 12);
	ck_assert_uint_eq(hooks, 2);

	/* An aborted batch changes nothing. */
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_del_quarantine(b, s1), 1);
	hook_fill(&h, "github", "abc", 3);
	ck_assert_int_eq(store_batch_put_quarantine(b, &h, "no_match"), 0);
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 10);
	ck_assert_uint_eq(hooks, 2);
	store_batch_abort(b);
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 12);
	ck_assert_uint_eq(hooks, 2);
	ck_assert_int_eq(store_debug_count(st, "quarantine"), 2);

	/* Across a restart. */
	store_close(st);
	st = open_ok();
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 12);
	ck_assert_uint_eq(hooks, 2);
	ck_assert_int_eq(store_counts(st, &c), 0);
	ck_assert_uint_eq(c.qbytes, 12);
	ck_assert_uint_eq(c.qhooks, 2);
	ck_assert_uint_eq(c.hooks, 1);
	ck_assert_ptr_nonnull(b = store_batch_begin(st));
	ck_assert_int_eq(store_batch_del_quarantine(b, s2), 1);
	ck_assert_int_eq(store_batch_commit(b), 0);
	store_close(st);
	st = open_ok();
	ck_assert_int_eq(store_quarantine_usage(st, &bytes, &hooks), 0);
	ck_assert_uint_eq(bytes, 5);
	ck_assert_uint_eq(hooks, 1);
	/* The seq counter covers the pen too. */
	ck_assert_uint_gt(put_one(st, "github", "x", 1, 1), s2);
	store_close(st);
}
END_TEST

/* Every codec: a round trip, then the same record with version 7. */
static const struct tables_case codec_cases[] = {
	{ "hooks", "hooks record seq 42 has format version 7, this build "
	    "reads 1" },
	{ "quarantine", "quarantine record seq 42 has format version 7" },
	{ "rows", "rows record seq 42 sink 3 has format version 7, this "
	    "build reads 1" },
	{ "dead", "dead record at 1000 seq 42 sink 3 has format version 7" },
	{ "dedupe", "dedupe record acme/github key \"k-1\" has format "
	    "version 7" },
	{ "replays", "replays record job " },
	{ "lanes", "lanes record lane acme/github#3 key 00000000000000ff "
	    "has format version 7" },
	{ "members", "members record lane acme/github#3 key "
	    "00000000000000ff seq 42 has format version 7" },
	{ "marks", "marks record lane acme/github#3 key 00000000000000ff "
	    "has format version 7" },
	{ "due", "due record tenant acme due 1000 seq 42 sink 3 has format "
	    "version 7" },
	{ "dedupe_exp", "dedupe_exp record expiry 5000 has format version 7" },
};

/*
 * The fields added at a hook head's end (verification, trace context,
 * tracestate, event type): written and read back; a record of a build before them
 * (the same head without them) still read, with their defaults; a bad
 * value or a head cut inside them refused.  _i: 0 hooks, 1 quarantine.
 */
START_TEST(test_codec_added_fields)
{
	const char *table = _i == 0 ? "hooks" : "quarantine";
	struct store_hook_rec rec;
	struct store_hook h;
	unsigned char key[8], *val, *old;
	char err[512];
	size_t vlen, added, headend, oldlen;
	uint32_t headlen;
	int flagged;

	for (flagged = 0; flagged < 2; flagged++) {
		hook_fill(&h, "github", "\0body\0", 6);
		h.flagged = flagged;
		h.verification = flagged ? VERIFICATION_FLAGGED :
		    VERIFICATION_OK;
		memset(h.trace, 0x42, TRACE_CTX_LEN);
		h.tracestate = "congo=t61rcWkgMzE";
		store_key_hook(key, 7);
		val = _i == 0 ? hook_encode(&h, 1, "", &vlen) :
		    quarantine_encode(&h, "no_match", &vlen);
		ck_assert_ptr_nonnull(val);
		ck_assert_int_eq(hook_decode(table, key, 8, val, vlen, &rec,
		    err, sizeof(err)), 0);
		ck_assert_uint_eq(rec.hook.verification, h.verification);
		ck_assert_mem_eq(rec.hook.trace, h.trace, TRACE_CTX_LEN);
		ck_assert_str_eq(rec.hook.tracestate, "congo=t61rcWkgMzE");
		ck_assert_uint_eq(rec.hook.body_len, 6);
		store_hook_rec_free(&rec);

		/* The older layout: the head without the added bytes (u8,
		 * 25 bytes, a u32 length, the tracestate and its NUL; the
		 * event type "", a u32 length and a NUL). */
		added = 1 + TRACE_CTX_LEN + 4 + strlen(h.tracestate) + 1 +
		    4 + 1;
		headlen = rec_get_u32(val + 1);
		headend = 5 + headlen;
		ck_assert_ptr_nonnull(old = malloc(vlen));
		memcpy(old, val, headend - added);
		memcpy(old + headend - added, val + headend, vlen - headend);
		oldlen = vlen - added;
		rec_put_u32(old + 1, headlen - added);
		ck_assert_msg(hook_decode(table, key, 8, old, oldlen, &rec,
		    err, sizeof(err)) == 0, "%s", err);
		ck_assert_uint_eq(rec.hook.verification, flagged ?
		    VERIFICATION_FLAGGED : _i == 1 ? VERIFICATION_FAILED :
		    VERIFICATION_SKIPPED);
		/* The hook id as the trace id: one trace for every attempt. */
		ck_assert_mem_eq(rec.hook.trace, h.id, TRACE_ID_LEN);
		ck_assert_mem_eq(rec.hook.trace + TRACE_ID_LEN,
		    h.id + UUID_LEN - TRACE_SPAN_LEN, TRACE_SPAN_LEN);
		ck_assert_uint_eq(rec.hook.trace[TRACE_CTX_LEN - 1], 0x01);
		ck_assert_str_eq(rec.hook.tracestate, "");
		ck_assert_mem_eq(rec.hook.body, "\0body\0", 6);
		if (_i == 1)
			ck_assert_str_eq(rec.reason, "no_match");
		store_hook_rec_free(&rec);

		/* Cut inside the added fields: damage. */
		memcpy(old, val, headend - 3);
		memcpy(old + headend - 3, val + headend, vlen - headend);
		rec_put_u32(old + 1, headlen - 3);
		ck_assert_int_eq(hook_decode(table, key, 8, old, vlen - 3,
		    &rec, err, sizeof(err)), -1);
		ck_assert_ptr_nonnull(strstr(err, "damaged"));
		free(old);

		/* A verification this build does not know. */
		val[headend - added] = VERIFICATION_MAX;
		ck_assert_int_eq(hook_decode(table, key, 8, val, vlen, &rec,
		    err, sizeof(err)), -1);
		free(val);
	}
	/* An event type: read back; a head that ends before it (a build
	 * before the event types) reads as none; cut inside, damage. */
	hook_fill(&h, "github", "b", 1);
	h.event_type = "invoice.paid";
	store_key_hook(key, 8);
	val = _i == 0 ? hook_encode(&h, 1, "", &vlen) :
	    quarantine_encode(&h, "no_match", &vlen);
	ck_assert_ptr_nonnull(val);
	ck_assert_int_eq(hook_decode(table, key, 8, val, vlen, &rec, err,
	    sizeof(err)), 0);
	ck_assert_str_eq(rec.hook.event_type, "invoice.paid");
	store_hook_rec_free(&rec);
	added = 4 + strlen(h.event_type) + 1;
	headlen = rec_get_u32(val + 1);
	headend = 5 + headlen;
	ck_assert_ptr_nonnull(old = malloc(vlen));
	memcpy(old, val, headend - added);
	memcpy(old + headend - added, val + headend, vlen - headend);
	rec_put_u32(old + 1, headlen - added);
	ck_assert_msg(hook_decode(table, key, 8, old, vlen - added, &rec,
	    err, sizeof(err)) == 0, "%s", err);
	ck_assert_str_eq(rec.hook.event_type, "");
	ck_assert_str_eq(rec.hook.tracestate, "");
	store_hook_rec_free(&rec);
	memcpy(old, val, headend - 3);
	memcpy(old + headend - 3, val + headend, vlen - headend);
	rec_put_u32(old + 1, headlen - 3);
	ck_assert_int_eq(hook_decode(table, key, 8, old, vlen - 3, &rec, err,
	    sizeof(err)), -1);
	free(old);
	free(val);
	{
		char big[STORE_EVTYPE_MAX + 2];

		memset(big, 'e', sizeof(big) - 1);
		big[sizeof(big) - 1] = '\0';
		h.event_type = big;
		ck_assert_int_eq(store_hook_fits(&h, NULL, err, sizeof(err)),
		    -1);
		ck_assert_ptr_nonnull(strstr(err, "event type"));
		ck_assert_ptr_null(hook_encode(&h, 1, "", &vlen));
		h.event_type = NULL;
	}

	/* A tracestate the edge would not have kept is not stored. */
	hook_fill(&h, "github", "b", 1);
	{
		char big[TRACE_STATE_MAX + 2];

		memset(big, 'v', sizeof(big) - 1);
		big[0] = 'k';
		big[1] = '=';
		big[sizeof(big) - 1] = '\0';
		h.tracestate = big;
		ck_assert_int_eq(store_hook_fits(&h, NULL, err, sizeof(err)),
		    -1);
		ck_assert_ptr_nonnull(strstr(err, "tracestate"));
		ck_assert_ptr_null(hook_encode(&h, 1, "", &vlen));
	}
}
END_TEST

START_TEST(test_codec_versions)
{
	const struct tables_case *tc = &codec_cases[_i];
	struct store_hook_rec hrec;
	struct store_hook h;
	struct store_row r, r2;
	struct store_dead dl, dl2;
	struct store_dedupe dd, dd2;
	struct store_replay rp, rp2;
	unsigned char key[STORE_KEY_MAX], lane[STORE_KEY_MAX];
	unsigned char rk[STORE_ROWKEY_LEN], rk2[STORE_ROWKEY_LEN];
	unsigned char buf[STORE_REC_MAX], *val = buf;
	char err[512];
	size_t klen = 0, vlen = 0, lanelen;
	int ret = -1;

	store_key_row(rk, 42, 3);
	lanelen = store_key_lane(lane, sizeof(lane), "acme", "github", 3, 0xff);
	ck_assert_uint_gt(lanelen, 0);
	err[0] = '\0';

	if (strcmp(tc->table, "hooks") == 0 ||
	    strcmp(tc->table, "quarantine") == 0) {
		hook_fill(&h, "github", "\0body\0", 6);
		store_key_hook(key, 42);
		klen = 8;
		if (strcmp(tc->table, "hooks") == 0) {
			ck_assert_ptr_nonnull(val = hook_encode(&h,
			    2, "urn:ankusa:claim:v1:acme:01H", &vlen));
			ck_assert_int_eq(hook_decode(tc->table, key,
			    klen, val, vlen, &hrec, err, sizeof(err)), 0);
			ck_assert_str_eq(hrec.claim_ref,
			    "urn:ankusa:claim:v1:acme:01H");
			/* A reference with the body: both kept. */
			ck_assert_ptr_nonnull(hrec.hook.body);
			ck_assert_uint_eq(hrec.hook.body_len, 6);
			ck_assert_int_eq(memcmp(hrec.hook.body, "\0body\0", 6),
			    0);
			ck_assert_ptr_null(hrec.reason);
			store_hook_rec_free(&hrec);
			free(val);
			/* A reference without a body: checked in, dropped
			 * (its size kept). */
			h.body = NULL;
			ck_assert_ptr_nonnull(val = hook_encode(&h,
			    2, "urn:ankusa:claim:v1:acme:01H", &vlen));
			ck_assert_int_eq(hook_decode(tc->table, key,
			    klen, val, vlen, &hrec, err, sizeof(err)), 0);
			ck_assert_ptr_null(hrec.hook.body);
		} else {
			ck_assert_ptr_nonnull(val =
			    quarantine_encode(&h, "no_match",
			    &vlen));
			ck_assert_int_eq(hook_decode(tc->table, key,
			    klen, val, vlen, &hrec, err, sizeof(err)), 0);
			ck_assert_str_eq(hrec.claim_ref, "");
			ck_assert_str_eq(hrec.reason, "no_match");
			ck_assert_uint_eq(hrec.hook.body_len, 6);
			ck_assert_mem_eq(hrec.hook.body, "\0body\0", 6);
		}
		ck_assert_uint_eq(hrec.body_size, 6);
		ck_assert_int_eq(hrec.hook.nheaders, 3);
		store_hook_rec_free(&hrec);
		/* A truncated one is damage, not a shorter hook. */
		ck_assert_int_eq(hook_decode(tc->table, key, klen,
		    val, vlen - 1, &hrec, err, sizeof(err)), -1);
		val[0] = 7;
		ret = hook_decode(tc->table, key, klen, val, vlen,
		    &hrec, err, sizeof(err));
		free(val);
	} else if (strcmp(tc->table, "rows") == 0) {
		memset(&r, 0, sizeof(r));
		strcpy(r.tenant, "acme");
		strcpy(r.source, "github");
		r.sink_index = 3;
		r.module = MODULE_PUBSUB;
		r.attempts = 7;
		r.first_attempt = 11;
		r.due = 12;
		strcpy(r.last_error, "http 503");
		r.lane_hash = 0xdeadbeefcafeULL;
		r.state = STORE_ROW_PARKED;
		memset(r.replay_id, 0x42, UUID_LEN);
		r.body_size = 1 << 20;
		memcpy(key, rk, sizeof(rk));
		klen = sizeof(rk);
		ck_assert_uint_gt(vlen = store_rec_row_encode(&r, buf,
		    sizeof(buf)), 0);
		ck_assert_int_eq(store_rec_row_decode(key, klen, buf, vlen,
		    &r2, err, sizeof(err)), 0);
		ck_assert_mem_eq(&r, &r2, sizeof(r));
		buf[0] = 7;
		ret = store_rec_row_decode(key, klen, buf, vlen, &r2, err,
		    sizeof(err));
	} else if (strcmp(tc->table, "dead") == 0) {
		memset(&dl, 0, sizeof(dl));
		strcpy(dl.reason, "retries_exhausted");
		strcpy(dl.last_error, "timeout");
		dl.attempts = 84;
		store_key_dead(key, 1000, rk);
		klen = STORE_DEADKEY_LEN;
		ck_assert_uint_gt(vlen = store_rec_dead_encode(&dl, buf,
		    sizeof(buf)), 0);
		ck_assert_int_eq(store_rec_dead_decode(key, klen, buf, vlen,
		    &dl2, err, sizeof(err)), 0);
		ck_assert_mem_eq(&dl, &dl2, sizeof(dl));
		buf[0] = 7;
		ret = store_rec_dead_decode(key, klen, buf, vlen, &dl2, err,
		    sizeof(err));
	} else if (strcmp(tc->table, "dedupe") == 0) {
		memset(&dd, 0, sizeof(dd));
		memset(dd.hook_id, 9, UUID_LEN);
		dd.expires = 5000;
		ck_assert_uint_gt(klen = store_key_dedupe(key, sizeof(key),
		    "acme", "github", "k-1"), 0);
		ck_assert_uint_gt(vlen = store_rec_dedupe_encode(&dd, buf,
		    sizeof(buf)), 0);
		ck_assert_int_eq(store_rec_dedupe_decode(key, klen, buf, vlen,
		    &dd2, err, sizeof(err)), 0);
		ck_assert_mem_eq(&dd, &dd2, sizeof(dd));
		buf[0] = 7;
		ret = store_rec_dedupe_decode(key, klen, buf, vlen, &dd2, err,
		    sizeof(err));
	} else if (strcmp(tc->table, "replays") == 0) {
		memset(&rp, 0, sizeof(rp));
		rp.state = STORE_REPLAY_PAUSED;
		rp.kind = STORE_REPLAY_DLQ;
		strcpy(rp.source, "github");
		rp.since = 1;
		rp.until = 2;
		rp.rate = 1000;
		rp.max_lag_ms = 2000;
		rp.created_at = 3;
		rp.moved = 4;
		store_key_dead(rp.cursor, 1000, rk);
		uuidv7_new(key);
		klen = UUID_LEN;
		ck_assert_uint_gt(vlen = store_rec_replay_encode(&rp, buf,
		    sizeof(buf)), 0);
		ck_assert_int_eq(store_rec_replay_decode(key, klen, buf, vlen,
		    &rp2, err, sizeof(err)), 0);
		ck_assert_mem_eq(&rp, &rp2, sizeof(rp));
		buf[0] = 7;
		ret = store_rec_replay_decode(key, klen, buf, vlen, &rp2, err,
		    sizeof(err));
	} else if (strcmp(tc->table, "lanes") == 0 ||
	    strcmp(tc->table, "members") == 0) {
		memcpy(key, lane, lanelen);
		klen = lanelen;
		if (strcmp(tc->table, "members") == 0)
			ck_assert_uint_gt(klen = store_key_member(key,
			    sizeof(key), lane, lanelen, 42), 0);
		ck_assert_uint_gt(vlen = store_rec_rowkey_encode(rk, buf,
		    sizeof(buf)), 0);
		ck_assert_int_eq(store_rec_rowkey_decode(tc->table, key, klen,
		    buf, vlen, rk2, err, sizeof(err)), 0);
		ck_assert_mem_eq(rk, rk2, sizeof(rk));
		buf[0] = 7;
		ret = store_rec_rowkey_decode(tc->table, key, klen, buf, vlen,
		    rk2, err, sizeof(err));
	} else {
		if (strcmp(tc->table, "marks") == 0) {
			memcpy(key, lane, lanelen);
			klen = lanelen;
		} else if (strcmp(tc->table, "due") == 0)
			klen = store_key_due(key, sizeof(key), "acme", 1000,
			    rk);
		else {
			unsigned char dk[STORE_KEY_MAX];
			size_t dklen;

			dklen = store_key_dedupe(dk, sizeof(dk), "acme",
			    "github", "k-1");
			klen = store_key_dedupe_exp(key, sizeof(key), 5000,
			    dk, dklen);
		}
		ck_assert_uint_gt(klen, 0);
		ck_assert_uint_eq(vlen = store_rec_empty_encode(buf,
		    sizeof(buf)), 1);
		ck_assert_int_eq(store_rec_empty_decode(tc->table, key, klen,
		    buf, vlen, err, sizeof(err)), 0);
		buf[0] = 7;
		ret = store_rec_empty_decode(tc->table, key, klen, buf, vlen,
		    err, sizeof(err));
	}
	ck_assert_int_eq(ret, -1);
	ck_assert_msg(strncmp(err, tc->want, strlen(tc->want)) == 0,
	    "error: %s", err);
	ck_assert_ptr_nonnull(strstr(err, "format version 7, this build "
	    "reads 1"));
}
END_TEST

START_TEST(test_key_order)
{
	unsigned char a[STORE_KEY_MAX], b[STORE_KEY_MAX];
	unsigned char rk1[STORE_ROWKEY_LEN], rk2[STORE_ROWKEY_LEN];
	size_t la, lb;

	/* Big-endian: 255 sorts before 256, as numbers. */
	store_key_row(rk1, 255, 9);
	store_key_row(rk2, 256, 0);
	ck_assert_int_lt(memcmp(rk1, rk2, sizeof(rk1)), 0);
	la = store_key_due(a, sizeof(a), "acme", 0x00ff, rk2);
	lb = store_key_due(b, sizeof(b), "acme", 0x0100, rk1);
	ck_assert_uint_eq(la, lb);
	ck_assert_int_lt(memcmp(a, b, la), 0);
	/* A key that does not fit is refused, not cut. */
	ck_assert_uint_eq(store_key_due(a, 10, "acme", 1, rk1), 0);
}
END_TEST

static Suite *
store_suite(void)
{
	Suite *s = suite_create("store");
	TCase *tc;

	tc = tcase_create("batches");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_round_trip);
	tcase_add_test(tc, test_seq_never_reused);
	tcase_add_test(tc, test_ordered_rows);
	tcase_add_test(tc, test_read_during_batch);
	suite_add_tcase(s, tc);

	tc = tcase_create("dedupe");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_dedupe_round_trip);
	tcase_add_test(tc, test_dedupe_in_batch);
	tcase_add_test(tc, test_hook_fits);
	tcase_add_test(tc, test_dedupe_sweep);
	suite_add_tcase(s, tc);

	tc = tcase_create("quarantine");
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_quarantine);
	tcase_add_test(tc, test_quarantine_release);
	tcase_add_test(tc, test_quarantine_counters);
	tcase_add_test(tc, test_hook_seq);
	tcase_add_test(tc, test_hook_seq_in_id);
	tcase_add_test(tc, test_schema_3_to_4);
	tcase_add_test(tc, test_hookids_upgrade);
	tcase_add_test(tc, test_bodies_freed);
	suite_add_tcase(s, tc);

	tc = tcase_create("codecs");
	tcase_set_timeout(tc, 10);
	tcase_add_loop_test(tc, test_codec_versions, 0,
	    sizeof(codec_cases) / sizeof(codec_cases[0]));
	tcase_add_test(tc, test_key_order);
	tcase_add_loop_test(tc, test_codec_added_fields, 0, 2);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	return storeutil_run(store_suite());
}
