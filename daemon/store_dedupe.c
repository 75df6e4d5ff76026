/*
 * store_dedupe.c: the dedupe entries and their expiry: an entry and its
 * index entry written with a hook, the sweep of expired ones, and the
 * lookup.  The layout of dedupe and dedupe_exp is in store_rec.c's header
 * comment.
 */
#include "config.h"

#include <db.h>
#include <errno.h>
#include <inttypes.h>
#include <string.h>
#include <unistd.h>

#include "ids.h"
#include "store.h"
#include "store_int.h"

/* The dedupe entry of h and its expiry index entry, in txn. */
int
dedupe_put(struct store *st, DB_TXN *txn, const struct store_hook *h)
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
	unsigned char xk[STORE_KEY_MAX], xv[16], dv[64];
	uint64_t exp;
	unsigned n = 0;
	DBC *c;
	DBT k, v, dk, dvt;
	int ret;

	st->dberr[0] = '\0';
	if (b->failed) {
		store_seterr(st, 0, "store %s: batch already failed", st->dir);
		return -1;
	}
	if (max == 0)
		return 0;
	if ((ret = st->db[T_DEDUPE_EXP]->cursor(st->db[T_DEDUPE_EXP], b->txn,
	    &c, 0)) != 0) {
		store_seterr(st, ret, "store %s/dedupe_exp.db: cursor",
		    st->dir);
		b->failed = 1;
		return -1;
	}
	while (n < max) {
		memset(&k, 0, sizeof(k));
		memset(&v, 0, sizeof(v));
		k.data = xk;
		k.ulen = sizeof(xk);
		k.flags = DB_DBT_USERMEM;
		v.data = xv;
		v.ulen = sizeof(xv);
		v.flags = DB_DBT_USERMEM;
		/* The index is only ever cut at its start: the first entry
		 * left is the oldest. */
		ret = c->get(c, &k, &v, DB_NEXT);
		if (ret == DB_NOTFOUND)
			break;
		if (ret != 0) {
			store_seterr(st, ret, "store %s/dedupe_exp.db: read",
			    st->dir);
			goto fail;
		}
		if (k.size < 8) {
			rec_malformed(T_DEDUPE_EXP, xk, k.size, "short key",
			    st->err, sizeof(st->err));
			goto fail;
		}
		if (store_rec_empty_decode("dedupe_exp", xk, k.size, xv,
		    v.size, st->err, sizeof(st->err)) == -1)
			goto fail;
		if ((exp = rec_get_u64(xk)) > now_ms)
			break;

		/* The entry it names, unless stored again since. */
		memset(&dk, 0, sizeof(dk));
		memset(&dvt, 0, sizeof(dvt));
		dk.data = xk + 8;
		dk.size = k.size - 8;
		dvt.data = dv;
		dvt.ulen = sizeof(dv);
		dvt.flags = DB_DBT_USERMEM;
		ret = st->db[T_DEDUPE]->get(st->db[T_DEDUPE], b->txn, &dk,
		    &dvt, 0);
		if (ret == DB_BUFFER_SMALL) {
			rec_malformed(T_DEDUPE, xk + 8, k.size - 8,
			    "bad length", st->err, sizeof(st->err));
			goto fail;
		}
		if (ret != 0 && ret != DB_NOTFOUND) {
			store_seterr(st, ret, "store %s/dedupe.db: read",
			    st->dir);
			goto fail;
		}
		if (ret == 0) {
			if (store_rec_dedupe_decode(xk + 8, k.size - 8, dv,
			    dvt.size, &dd, st->err, sizeof(st->err)) == -1)
				goto fail;
			if (dd.expires == exp && (ret =
			    st->db[T_DEDUPE]->del(st->db[T_DEDUPE], b->txn,
			    &dk, 0)) != 0) {
				store_seterr(st, ret, "store %s/dedupe.db: "
				    "delete", st->dir);
				goto fail;
			}
		}
		if ((ret = c->del(c, 0)) != 0) {
			store_seterr(st, ret, "store %s/dedupe_exp.db: delete "
			    "expiry %" PRIu64, st->dir, exp);
			goto fail;
		}
		n++;
	}
	if ((ret = c->close(c)) != 0) {
		store_seterr(st, ret, "store %s/dedupe_exp.db: cursor close",
		    st->dir);
		b->failed = 1;
		return -1;
	}
	return n;

 fail:
	c->close(c);
	b->failed = 1;
	return -1;
}

int
store_dedupe_get(struct store *st, const char *tenant, const char *source,
    const char *key, uint64_t now_ms, unsigned char id_out[UUID_LEN])
{
	struct store_dedupe dd;
	unsigned char kb[STORE_KEY_MAX], vb[64];
	size_t klen;
	DBT k, v;
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
	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = kb;
	k.size = klen;
	v.data = vb;
	v.ulen = sizeof(vb);
	v.flags = DB_DBT_USERMEM;
	ret = st->db[T_DEDUPE]->get(st->db[T_DEDUPE], store_readtxn(st), &k,
	    &v, 0);
	if (ret == DB_NOTFOUND)
		return 0;
	if (ret == DB_BUFFER_SMALL)
		return rec_malformed(T_DEDUPE, kb, klen, "bad length", st->err,
		    sizeof(st->err));
	if (ret != 0) {
		store_seterr(st, ret, "store %s/dedupe.db: read", st->dir);
		return -1;
	}
	if (store_rec_dedupe_decode(kb, klen, vb, v.size, &dd, st->err,
	    sizeof(st->err)) == -1)
		return -1;
	/* Expired but not swept yet: as good as gone. */
	if (dd.expires <= now_ms)
		return 0;
	memcpy(id_out, dd.hook_id, UUID_LEN);
	return 1;
}
