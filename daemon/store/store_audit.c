/* SPDX-License-Identifier: ISC */
/*
 * store_audit.c: the audit trail in the store (table audit): putting an
 * entry, the newest-first walk a listing pages through, and the prune of
 * old entries in bounded steps; see store.h.  The layout of audit is in
 * store_rec.c's header comment.
 *
 * The key is the entry's time and its number within that ms, both
 * inverted, so that key order is newest first: a listing seeks to its
 * until and walks forward, and stops at the first entry before its since;
 * the prune seeks to its bound and deletes forward from there.  Neither
 * reads an entry outside what it returns or deletes, but the filters'
 * misses, which a listing's visits bound.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "store.h"
#include "store_int.h"
#include "utf8.h"

static void	 audit_key(unsigned char[STORE_AUDIT_KEY_LEN], uint64_t,
		    uint32_t);
static int	 audit_next_n(struct store_batch *, uint64_t, uint32_t *);
static void	 audit_clean(char *, size_t, const char *);

/* The key of entry n of ms at. */
static void
audit_key(unsigned char k[STORE_AUDIT_KEY_LEN], uint64_t at, uint32_t n)
{
	rec_put_u64(k, ~at);
	rec_put_u32(k + 8, ~n);
}

/* The number the next entry of ms at takes: one past the largest stored,
 * which is the first key of that ms (numbers are inverted).  0, or -1 on
 * a store error. */
static int
audit_next_n(struct store_batch *b, uint64_t at, uint32_t *n)
{
	unsigned char k[STORE_AUDIT_KEY_LEN];
	struct walk w;
	int ret;

	*n = 0;
	audit_key(k, at, UINT32_MAX);
	store_walk_init(&w, b->st, b->txn, T_AUDIT, k, sizeof(k));
	if ((ret = store_walk_next(&w)) == 1 && w.klen == sizeof(k) &&
	    memcmp(w.key, k, 8) == 0) {
		if (~rec_get_u32(w.key + 8) == UINT32_MAX) {
			store_seterr(b->st, 0, "store %s/audit.db: ms %" PRIu64
			    " has every entry number taken", b->st->dir, at);
			ret = -1;
		} else
			*n = ~rec_get_u32(w.key + 8) + 1;
	}
	return store_walk_done(&w, ret == -1 ? -1 : 0);
}

/* src cut to fit dst (between characters) and made UTF-8. */
static void
audit_clean(char *dst, size_t dstsz, const char *src)
{
	(void)utf8_clean(dst, dstsz, src, strlen(src));
}

int
store_batch_audit_put(struct store_batch *b, const struct store_audit *e)
{
	struct store *st = b->st;
	struct store_audit a;
	unsigned char k[STORE_AUDIT_KEY_LEN], val[STORE_REC_MAX];
	size_t vlen;
	uint32_t n;

	if (!store_batch_ok(b))
		return -1;
	a.at = e->at;
	audit_clean(a.actor, sizeof(a.actor), e->actor);
	audit_clean(a.action, sizeof(a.action), e->action);
	audit_clean(a.target, sizeof(a.target), e->target);
	audit_clean(a.tenant, sizeof(a.tenant), e->tenant);
	audit_clean(a.outcome, sizeof(a.outcome), e->outcome);
	if ((vlen = store_rec_audit_encode(&a, val, sizeof(val))) == 0) {
		store_seterr(st, 0, "store %s: audit entry: cannot encode",
		    st->dir);
		goto fail;
	}
	if (audit_next_n(b, a.at, &n) == -1)
		goto fail;
	audit_key(k, a.at, n);
	if (store_put(st, b->txn, T_AUDIT, k, sizeof(k), val, vlen, 0) == -1)
		goto fail;
	return 0;

 fail:
	b->failed = 1;
	return -1;
}

int
store_audit_walk(struct store *st, struct store_audit_walk *w,
    int (*cb)(const struct store_audit *, void *), void *arg)
{
	struct store_audit a;
	unsigned char start[STORE_AUDIT_KEY_LEN];
	uint64_t read = 0, handed = 0;
	struct walk wk;
	int ret;

	st->dberr[0] = '\0';
	w->end = 0;
	/* A cursor newer than the range (a caller's): from the range. */
	if (w->have_at && ~rec_get_u64(w->at) > w->until)
		w->have_at = 0;
	if (w->have_at)
		memcpy(start, w->at, sizeof(start));
	else
		audit_key(start, w->until, UINT32_MAX);
	store_walk_init(&wk, st, NULL, T_AUDIT, start, sizeof(start));
	if (w->have_at)
		wk.at = 0;	/* after the last key read */
	for (;;) {
		if ((ret = store_walk_next(&wk)) != 1) {
			if (ret == 0)
				w->end = 1;
			break;
		}
		if ((w->visits != 0 && read >= w->visits) ||
		    (w->limit != 0 && handed >= w->limit))
			break;
		read++;
		if (wk.klen != STORE_AUDIT_KEY_LEN) {
			log_warnx("store %s/audit.db: damaged key of %zu bytes "
			    "skipped", st->dir, wk.klen);
			continue;
		}
		if (~rec_get_u64(wk.key) < w->since) {
			w->end = 1;
			break;
		}
		memcpy(w->at, wk.key, STORE_AUDIT_KEY_LEN);
		w->have_at = 1;
		if (store_rec_audit_decode(wk.key, wk.klen, wk.val, wk.vlen,
		    &a, st->err, sizeof(st->err)) == -1) {
			log_warnx("store %s: %s: skipped", st->dir, st->err);
			continue;
		}
		if ((w->actor != NULL && strcmp(w->actor, a.actor) != 0) ||
		    (w->action != NULL && strcmp(w->action, a.action) != 0) ||
		    (w->tenant != NULL && strcmp(w->tenant, a.tenant) != 0))
			continue;
		handed++;
		store_walk_pause(&wk);
		if (cb(&a, arg) != 0)
			break;
	}
	return store_walk_done(&wk, ret == -1 ? -1 : 0);
}

int
store_batch_audit_prune(struct store_batch *b, uint64_t before_ms,
    unsigned max)
{
	unsigned char k[STORE_AUDIT_KEY_LEN];
	struct walk w;
	unsigned n = 0;
	int ret = 0;

	if (!store_batch_ok(b))
		return -1;
	if (before_ms == 0 || max == 0)
		return 0;
	/* The newest entry older than before_ms, and all after it. */
	audit_key(k, before_ms - 1, UINT32_MAX);
	store_walk_init(&w, b->st, b->txn, T_AUDIT, k, sizeof(k));
	while (n < max && (ret = store_walk_next(&w)) == 1) {
		if (store_walk_del(&w) == -1) {
			ret = -1;
			break;
		}
		n++;
	}
	if (store_walk_done(&w, ret == -1 ? -1 : 0) == -1) {
		b->failed = 1;
		return -1;
	}
	return (int)n;
}
