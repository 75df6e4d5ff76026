/* SPDX-License-Identifier: ISC */
/*
 * store_dedupe.c: the dedupe entries and their expiry: an entry and its
 * index entry written with a hook, the sweep of expired ones, and the
 * lookup.  The layout of dedupe and dedupe_exp is in store_rec.c's header
 * comment.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "ids.h"
#include "store.h"
#include "store_int.h"

/* The dedupe entry of h and its expiry index entry, in txn. */
int
dedupe_put(struct store *st, struct __db_txn *txn,
    const struct store_hook *h)
{
	struct store_dedupe dd;
	unsigned char dk[STORE_KEY_MAX], xk[STORE_KEY_MAX], val[64];
	size_t dklen, xklen, vlen;

	dklen = store_key_dedupe(dk, sizeof(dk), h->tenant, h->source,
	    h->dedupe_key);
	xklen = dklen == 0 ? 0 : store_key_dedupe_exp(xk, sizeof(xk),
	    h->dedupe_expires, dk, dklen);
	if (xklen == 0) {
		store_seterr(st, 0, "store %s: hook seq %" PRIu64 ": dedupe "
		    "key too long", st->dir, h->seq);
		return -1;
	}
	memset(&dd, 0, sizeof(dd));
	memcpy(dd.hook_id, h->id, UUID_LEN);
	dd.expires = h->dedupe_expires;
	vlen = store_rec_dedupe_encode(&dd, val, sizeof(val));
	if (store_put(st, txn, T_DEDUPE, dk, dklen, val, vlen, 0) == -1)
		return -1;
	vlen = store_rec_empty_encode(val, sizeof(val));
	return store_put(st, txn, T_DEDUPE_EXP, xk, xklen, val, vlen, 0);
}

int
store_batch_sweep_dedupe(struct store_batch *b, uint64_t now_ms,
    unsigned max)
{
	struct store *st = b->st;
	struct store_dedupe dd;
	struct walk w;
	unsigned char dv[64];
	size_t dvlen;
	uint64_t exp;
	unsigned n = 0;
	int ret;

	st->dberr[0] = '\0';
	if (b->failed) {
		store_seterr(st, 0, "store %s: batch already failed", st->dir);
		return -1;
	}
	if (max == 0)
		return 0;
	/* The index is only ever cut at its start: the first entry left is
	 * the oldest.  The walk keeps its cursor: nothing pauses it. */
	store_walk_init(&w, st, b->txn, T_DEDUPE_EXP, "", 0);
	while (n < max) {
		if ((ret = store_walk_next(&w)) == 0)
			break;
		if (ret == -1)
			goto fail;
		if (w.klen < 8) {
			rec_malformed(T_DEDUPE_EXP, w.key, w.klen, "short key",
			    st->err, sizeof(st->err));
			goto fail;
		}
		if (store_rec_empty_decode("dedupe_exp", w.key, w.klen, w.val,
		    w.vlen, st->err, sizeof(st->err)) == -1)
			goto fail;
		if ((exp = rec_get_u64(w.key)) > now_ms)
			break;

		/* The entry it names, unless stored again since. */
		ret = store_tget(st, b->txn, T_DEDUPE, w.key + 8, w.klen - 8,
		    dv, sizeof(dv), &dvlen);
		if (ret == -1)
			goto fail;
		if (ret == 1) {
			if (store_rec_dedupe_decode(w.key + 8, w.klen - 8, dv,
			    dvlen, &dd, st->err, sizeof(st->err)) == -1)
				goto fail;
			if (dd.expires == exp && store_tdel(st, b->txn,
			    T_DEDUPE, w.key + 8, w.klen - 8) == -1)
				goto fail;
		}
		if (store_walk_del(&w) == -1)
			goto fail;
		n++;
	}
	if (store_walk_done(&w, 0) == -1) {
		b->failed = 1;
		return -1;
	}
	return n;

 fail:
	(void)store_walk_done(&w, -1);
	b->failed = 1;
	return -1;
}

int
store_dedupe_get(struct store *st, const char *tenant, const char *source,
    const char *key, uint64_t now_ms, unsigned char id_out[UUID_LEN])
{
	struct store_dedupe dd;
	unsigned char kb[STORE_KEY_MAX], vb[64];
	size_t klen, vlen;
	int ret;

	st->dberr[0] = '\0';
	if (key == NULL || key[0] == '\0')
		return 0;
	if (tenant == NULL || source == NULL ||
	    (klen = store_key_dedupe(kb, sizeof(kb), tenant, source,
	    key)) == 0) {
		store_seterr(st, 0, "store %s: dedupe lookup with no tenant or "
		    "source, or a key too long", st->dir);
		return -1;
	}
	if ((ret = store_tget(st, store_readtxn(st), T_DEDUPE, kb, klen, vb,
	    sizeof(vb), &vlen)) != 1)
		return ret;
	if (store_rec_dedupe_decode(kb, klen, vb, vlen, &dd, st->err,
	    sizeof(st->err)) == -1)
		return -1;
	/* Expired but not swept yet: as good as gone. */
	if (dd.expires <= now_ms)
		return 0;
	memcpy(id_out, dd.hook_id, UUID_LEN);
	return 1;
}

/*
 * The erase's part: the tenant's entries from after e->at (its first at
 * first), whose hook id (a UUIDv7: its first 48 bits are the ms its edge
 * made it, the hook's receive time) is of e's range, deleted; their
 * expiry index entries are left to the sweep, which passes over an entry
 * gone.  At most e->visits read.
 */
int
store_batch_dedupe_erase(struct store_batch *b, struct store_dedupe_erase *e)
{
	struct store *st = b->st;
	struct store_dedupe dd;
	uint64_t read = 0, at;
	size_t tlen;
	struct walk w;
	int ret;

	if (!store_batch_ok(b))
		return -1;
	tlen = strlen(e->tenant);
	if (tlen > STORE_NAME_MAX) {
		e->end = 1;
		return 0;
	}
	if (e->at_len == 0)
		store_walk_init(&w, st, b->txn, T_DEDUPE, e->tenant, tlen + 1);
	else {
		store_walk_init(&w, st, b->txn, T_DEDUPE, e->at, e->at_len);
		w.at = 0;
	}
	e->end = 1;
	while ((ret = store_walk_next(&w)) == 1) {
		if (w.klen <= tlen || memcmp(w.key, e->tenant, tlen + 1) != 0)
			break;
		if (read++ == e->visits) {
			e->end = 0;
			break;
		}
		memcpy(e->at, w.key, w.klen);
		e->at_len = w.klen;
		if (store_rec_dedupe_decode(w.key, w.klen, w.val, w.vlen, &dd,
		    st->err, sizeof(st->err)) == -1)
			continue;
		at = (uint64_t)dd.hook_id[0] << 40 |
		    (uint64_t)dd.hook_id[1] << 32 |
		    (uint64_t)dd.hook_id[2] << 24 |
		    (uint64_t)dd.hook_id[3] << 16 |
		    (uint64_t)dd.hook_id[4] << 8 | dd.hook_id[5];
		if (at < e->since || at > e->until)
			continue;
		if (store_walk_del(&w) == -1) {
			ret = -1;
			break;
		}
		e->deleted++;
	}
	if (store_walk_done(&w, ret == -1 ? -1 : 0) == -1) {
		b->failed = 1;
		return -1;
	}
	return 0;
}
