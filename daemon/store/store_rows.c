/* SPDX-License-Identifier: ISC */
/*
 * store_rows.c: rows and their due keys: the dispatch reads (tenants with
 * work, due scans, the oldest due), settling (delivered, rescheduled,
 * dead-lettered, a stale due key dropped) and the admin walks over a
 * source's rows.  A lane's part of settling is in store_lanes.c; listing and
 * deleting dead letters and hooks in store_dlq.c.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ids.h"
#include "log.h"
#include "store.h"
#include "store_int.h"

static int	 due_del(struct store *, struct __db_txn *, const char *,
		    uint64_t, const unsigned char *);
static int	 due_oldest_fn(const char *, uint64_t, void *);
static int	 due_tenants_fn(const char *, const unsigned char *, size_t,
		    void *);
static int	 pending_page(struct store *, const char *, uint64_t *,
		    uint64_t, uint64_t, int *, int (*)(const unsigned char *,
		    const struct store_row *, void *), void *);
static int	 hook_present(struct store *, struct __db_txn *, uint64_t);

/* 1 found, 0 none, -1 on a store error, -2 a record that does not decode
 * (st->err says which). */
int
rows_read(struct store *st, struct __db_txn *txn, const unsigned char *rk,
    struct store_row *r)
{
	unsigned char val[STORE_REC_MAX];
	size_t vlen;
	int ret;

	if ((ret = store_tget(st, txn, T_ROWS, rk, STORE_ROWKEY_LEN, val,
	    sizeof(val), &vlen)) != 1)
		return ret;
	if (store_rec_row_decode(rk, STORE_ROWKEY_LEN, val, vlen, r, st->err,
	    sizeof(st->err)) == -1)
		return -2;
	return 1;
}

int
rows_write(struct store *st, struct __db_txn *txn, const unsigned char *rk,
    const struct store_row *r)
{
	unsigned char val[STORE_REC_MAX];
	size_t vlen;

	if ((vlen = store_rec_row_encode(r, val, sizeof(val))) == 0) {
		store_seterr(st, 0, "store %s: row seq %" PRIu64 " sink %u: "
		    "cannot encode", st->dir, rec_get_u64(rk),
		    rec_get_u32(rk + 8));
		return -1;
	}
	return store_put(st, txn, T_ROWS, rk, STORE_ROWKEY_LEN, val, vlen, 0);
}

/* A row with a due key: DUE, HEAD, PARKED. */
int
rows_pending(const struct store_row *r)
{
	return r->state == STORE_ROW_DUE || r->state == STORE_ROW_HEAD ||
	    r->state == STORE_ROW_PARKED;
}

int
rows_due_put(struct store *st, struct __db_txn *txn, const char *tenant,
    uint64_t due, const unsigned char *rk)
{
	unsigned char key[STORE_KEY_MAX], val[1];
	size_t klen;

	if ((klen = store_key_due(key, sizeof(key), tenant, due, rk)) == 0) {
		store_seterr(st, 0, "store %s: due key of tenant %s too long",
		    st->dir, tenant);
		return -1;
	}
	return store_put(st, txn, T_DUE, key, klen, val,
	    store_rec_empty_encode(val, sizeof(val)), 0);
}

/* 1 deleted, 0 was not there, -1 on a store error. */
static int
due_del(struct store *st, struct __db_txn *txn, const char *tenant,
    uint64_t due, const unsigned char *rk)
{
	unsigned char key[STORE_KEY_MAX];
	size_t klen;

	if ((klen = store_key_due(key, sizeof(key), tenant, due, rk)) == 0) {
		store_seterr(st, 0, "store %s: due key of tenant %s too long",
		    st->dir, tenant);
		return -1;
	}
	return store_tdel(st, txn, T_DUE, key, klen);
}

/* Split a due key: tenant length (its NUL at key[*tlen]), due, row key.
 * -1 if it is not one. */
int
rows_due_parse(const unsigned char *key, size_t klen, size_t *tlen,
    uint64_t *due, const unsigned char **rk)
{
	const unsigned char *nul;

	if ((nul = memchr(key, '\0', klen)) == NULL ||
	    (size_t)(nul - key) > STORE_NAME_MAX ||
	    klen != (size_t)(nul - key) + 1 + 8 + STORE_ROWKEY_LEN)
		return -1;
	*tlen = nul - key;
	*due = rec_get_u64(nul + 1);
	*rk = nul + 9;
	return 0;
}

/*
 * Dispatch reads.
 */

/* The tenants that have a key in table t (due or marks, both keyed by str
 * tenant first), each with its first key: one seek per tenant.  fn returns
 * 0 for the next tenant, > 0 to stop, < 0 to go on with the key after this
 * one (it is damaged). */
int
rows_tenants(struct store *st, int t,
    int (*fn)(const char *, const unsigned char *, size_t, void *), void *arg)
{
	char tenant[STORE_NAME_MAX + 1];
	const unsigned char *nul;
	size_t tlen;
	struct walk w;
	int ret, rv;

	st->dberr[0] = '\0';
	store_walk_init(&w, st, NULL, t, "", 0);
	while ((ret = store_walk_next(&w)) == 1) {
		if ((nul = memchr(w.key, '\0', w.klen)) == NULL ||
		    (tlen = nul - w.key) > STORE_NAME_MAX) {
			/* Not ours to judge here: step over it. */
			log_warnx("store %s/%s.db: damaged key of %zu bytes "
			    "skipped", st->dir, store_tables[t], w.klen);
			continue;
		}
		memcpy(tenant, w.key, tlen);
		tenant[tlen] = '\0';
		store_walk_pause(&w);
		if ((rv = fn(tenant, w.key, w.klen, arg)) > 0)
			break;
		if (rv < 0)
			continue;
		/* Past every key of this tenant: its id and a 1 sorts after
		 * its id and a 0 and before any longer id it prefixes. */
		w.key[tlen] = 0x01;
		store_walk_seek(&w, w.key, tlen + 1);
	}
	return store_walk_done(&w, ret == -1 ? -1 : 0);
}

static int
due_tenants_fn(const char *tenant, const unsigned char *key, size_t klen,
    void *arg)
{
	struct tenants_ctx *ctx = arg;
	const unsigned char *rk;
	uint64_t due;
	size_t tlen;

	if (rows_due_parse(key, klen, &tlen, &due, &rk) == -1) {
		log_warnx("store %s/due.db: damaged key of tenant %s skipped",
		    ctx->st->dir, tenant);
		return -1;
	}
	return ctx->due_cb(tenant, due, ctx->arg) != 0;
}

int
store_due_tenants(struct store *st,
    int (*cb)(const char *, uint64_t, void *), void *arg)
{
	struct tenants_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.st = st;
	ctx.due_cb = cb;
	ctx.arg = arg;
	return rows_tenants(st, T_DUE, due_tenants_fn, &ctx);
}

int
store_due_next(struct store *st, const char *tenant, uint64_t after,
    uint64_t *due)
{
	unsigned char key[STORE_NAME_MAX + 1 + 8];
	const unsigned char *rk;
	size_t plen, tlen;
	struct walk w;
	int ret;

	st->dberr[0] = '\0';
	if (tenant == NULL || (plen = strlen(tenant)) > STORE_NAME_MAX) {
		store_seterr(st, 0, "store %s: due lookup of a bad tenant",
		    st->dir);
		return -1;
	}
	if (after == UINT64_MAX)
		return 0;
	memcpy(key, tenant, plen + 1);
	rec_put_u64(key + plen + 1, after + 1);
	store_walk_init(&w, st, NULL, T_DUE, key, plen + 9);
	while ((ret = store_walk_next(&w)) == 1) {
		if (w.klen <= plen || memcmp(w.key, tenant, plen + 1) != 0) {
			ret = 0;
			break;
		}
		if (rows_due_parse(w.key, w.klen, &tlen, due, &rk) == 0)
			break;
		log_warnx("store %s/due.db: damaged key of tenant %s skipped",
		    st->dir, tenant);
	}
	return store_walk_done(&w, ret);
}

int
store_due_scan_from(struct store *st, const char *tenant, uint64_t now_ms,
    uint64_t after_due, const unsigned char *after_rk,
    int (*want)(const unsigned char *, void *),
    int (*cb)(const unsigned char *, size_t, uint64_t, const unsigned char *,
    const struct store_row *, void *), void *arg)
{
	struct store_row r;
	unsigned char key[STORE_KEY_MAX], rk[STORE_ROWKEY_LEN];
	unsigned char start[STORE_KEY_MAX];
	const unsigned char *krk;
	const struct store_row *rp;
	uint64_t due;
	size_t plen, tlen, klen, slen = 0;
	struct walk w;
	int ret, rr;

	st->dberr[0] = '\0';
	if (tenant == NULL || (plen = strlen(tenant)) > STORE_NAME_MAX) {
		store_seterr(st, 0, "store %s: due scan of a bad tenant",
		    st->dir);
		return -1;
	}
	/* From the tenant's first due key, or just after the given one. */
	if (after_rk != NULL && (slen = store_key_due(start, sizeof(start),
	    tenant, after_due, after_rk)) > 0)
		store_walk_init(&w, st, NULL, T_DUE, start, slen);
	else {
		slen = 0;
		store_walk_init(&w, st, NULL, T_DUE, tenant, plen + 1);
	}
	while ((ret = store_walk_next(&w)) == 1) {
		if (w.klen <= plen || memcmp(w.key, tenant, plen + 1) != 0)
			break;
		if (slen > 0 && w.klen == slen &&
		    memcmp(w.key, start, slen) == 0)
			continue;
		if (rows_due_parse(w.key, w.klen, &tlen, &due, &krk) == -1) {
			log_warnx("store %s/due.db: damaged key of tenant %s "
			    "skipped", st->dir, tenant);
			continue;
		}
		if (due > now_ms)
			break;
		/* The caller may pass a key by its row key alone (a row it
		 * has claimed): no row read, no pause of the walk. */
		if (want != NULL && !want(krk, arg))
			continue;
		klen = w.klen;
		memcpy(key, w.key, klen);
		memcpy(rk, krk, STORE_ROWKEY_LEN);
		store_walk_pause(&w);

		rr = rows_read(st, store_readtxn(st), rk, &r);
		if (rr == -1) {
			ret = -1;
			break;
		}
		rp = &r;
		if (rr == 0) {
			log_warnx("store %s: due key tenant %s due %" PRIu64
			    " names seq %" PRIu64 " sink %u, which is gone",
			    st->dir, tenant, due, rec_get_u64(rk),
			    rec_get_u32(rk + 8));
			rp = NULL;
		} else if (rr == -2) {
			log_warnx("store %s: %s", st->dir, st->err);
			rp = NULL;
		} else if (!rows_pending(&r) || r.due != due ||
		    strcmp(r.tenant, tenant) != 0) {
			log_warnx("store %s: due key tenant %s due %" PRIu64
			    " of seq %" PRIu64 " sink %u is stale (row state "
			    "%u due %" PRIu64 ")", st->dir, tenant, due,
			    rec_get_u64(rk), rec_get_u32(rk + 8), r.state,
			    r.due);
			rp = NULL;
		}
		if (cb(key, klen, due, rk, rp, arg) != 0)
			break;
	}
	return store_walk_done(&w, ret == -1 ? -1 : 0);
}

/* arg: uint64_t[2], the smallest due so far and whether there is one. */
static int
due_oldest_fn(const char *tenant, uint64_t due, void *arg)
{
	uint64_t *min = arg;

	if (!min[1] || due < min[0])
		min[0] = due;
	min[1] = 1;
	return 0;
}

int
store_oldest_due(struct store *st, uint64_t *due)
{
	uint64_t min[2] = { 0, 0 };

	if (store_due_tenants(st, due_oldest_fn, min) == -1)
		return -1;
	if (!min[1])
		return 0;
	*due = min[0];
	return 1;
}

/*
 * Settling.
 */

/* One live row of hook seq is gone: its count drops (a partial write of
 * the four bytes, not the body), and the hook goes with its last row, and
 * its body in bodies with it; its attempts' retention starts; and its
 * delivered records and archive entry when it has them.  keep
 * (ROWS_UNREF_KEEP, a delivered row while the archive keeps hooks): the
 * hook is marked as having delivered records, and with its last row it
 * is kept instead (store_archive.c), its attempts with it.  1 when its
 * last row went (the hook deleted or kept), 0 when it stays (or was not
 * there), or -1 on a store error. */
int
rows_hook_unref(struct store_batch *b, uint64_t seq, int keep)
{
	struct store *st = b->st;
	struct cur c;
	unsigned char hk[8], head[HOOK_ROWS_OFF + 4], cnt[4];
	uint32_t rows;
	size_t vlen;
	int ret, rc = -1;

	/* One cursor for the read and the delete or rewrite: one descent of
	 * the tree, not two. */
	store_key_hook(hk, seq);
	ret = store_cur_get(&c, st, b->txn, T_HOOKS, hk, sizeof(hk), head,
	    sizeof(head), &vlen);
	if (ret == 0) {
		log_warnx("store %s: hook seq %" PRIu64 " of a settled row is "
		    "gone", st->dir, seq);
		rc = 0;
		goto done;
	}
	if (ret == -1)
		goto done;
	if (rec_version(T_HOOKS, hk, sizeof(hk), head, vlen, st->err,
	    sizeof(st->err)) == -1)
		goto done;
	if (vlen != sizeof(head)) {
		(void)rec_malformed(T_HOOKS, hk, sizeof(hk), "truncated head",
		    st->err, sizeof(st->err));
		goto done;
	}
	rows = rec_get_u32(head + HOOK_ROWS_OFF);
	/* Kept, it keeps its attempts too: their retention starts when it
	 * goes, below. */
	if (keep == ROWS_UNREF_KEEP && rows <= 1) {
		if ((rc = archive_keep(b, &c, seq, head)) == 0)
			rc = 1;
		goto done;
	}
	if (rows <= 1) {
		if ((head[HOOK_HEAD_FLAGS] & (HOOK_FLAG_DELIVERED |
		    HOOK_FLAG_KEPT)) && archive_forget(b, seq,
		    head[HOOK_HEAD_FLAGS]) == -1)
			goto done;
		if (bodies_unref(b, c.c, seq, head, sizeof(head)) == -1)
			goto done;
		if (!(head[HOOK_HEAD_FLAGS] & HOOK_FLAG_IDSEQ) &&
		    hookids_del(b, head + HOOK_HEAD_FLAGS + 1, seq) == -1)
			goto done;
		/* The attempt log keeps its attempts from now on. */
		if (attempts_hook_gone(b, head + HOOK_HEAD_FLAGS + 1) == -1)
			goto done;
		if (store_cur_del(&c) == -1)
			goto done;
		/* A kept hook is counted in ahooks (archive_forget). */
		if (!(head[HOOK_HEAD_FLAGS] & HOOK_FLAG_KEPT) &&
		    b->counts.hooks > 0)
			b->counts.hooks--;
		rc = 1;
		goto done;
	}
	rec_put_u32(cnt, rows - 1);
	if (store_cur_patch(&c, HOOK_ROWS_OFF, cnt, sizeof(cnt)) == -1)
		goto done;
	if (keep == ROWS_UNREF_KEEP &&
	    !(head[HOOK_HEAD_FLAGS] & HOOK_FLAG_DELIVERED)) {
		head[HOOK_HEAD_FLAGS] |= HOOK_FLAG_DELIVERED;
		if (store_cur_patch(&c, HOOK_HEAD_FLAGS, head +
		    HOOK_HEAD_FLAGS, 1) == -1)
			goto done;
	}
	rc = 0;
 done:
	return store_cur_done(&c, rc);
}

int
store_batch_row_delivered(struct store_batch *b,
    const unsigned char rk[STORE_ROWKEY_LEN], const struct store_row *known,
    int *last)
{
	struct store *st = b->st;
	struct store_row r;
	int ret, head = 0, unref = 1;

	if (last != NULL)
		*last = 0;
	if (!store_batch_ok(b))
		return -1;
	/* The row as its claim read it: its due key is the proof that the
	 * store still holds it so (only the dispatch moves a claimed row);
	 * without that key the row is read after all. */
	if (known != NULL && rows_pending(known)) {
		r = *known;
		if ((ret = due_del(st, b->txn, r.tenant, r.due, rk)) == -1)
			goto fail;
		if (ret == 1) {
			if ((head = lane_is_head(b, rk, &r)) == -1)
				goto fail;
			goto gone;
		}
	}
	switch (rows_read(st, b->txn, rk, &r)) {
	case -1:
		goto fail;
	case 0:
		return 0;
	case -2:
		/* Delivered all the same: the row goes; its due key, if any,
		 * is reported stale by the next scan. */
		log_warnx("store %s: %s; deleting it, delivered", st->dir,
		    st->err);
		r.state = 0;
		break;
	default:
		if (r.state == STORE_ROW_DEAD) {
			log_warnx("store %s: delivered row seq %" PRIu64
			    " sink %u is dead-lettered: left alone", st->dir,
			    rec_get_u64(rk), rec_get_u32(rk + 8));
			return 0;
		}
		if ((head = rows_unindex(b, rk, &r)) == -1)
			goto fail;
	}
 gone:
	/* The archive (retention.delivered_s): the row's delivery is
	 * recorded and its hook kept at its last row. */
	if (st->keep_delivered && r.state != 0) {
		if (archive_delivered(b, rk, &r) == -1)
			goto fail;
		unref = ROWS_UNREF_KEEP;
	}
	if ((ret = rows_gone(b, rk, &r, head, unref)) == -1)
		goto fail;
	if (last != NULL)
		*last = ret == 2;
	return ret == 2 ? 1 : ret;

 fail:
	b->failed = 1;
	return -1;
}

/* Take the pending row r at rk out of the due keys, or out of its lane's
 * members: 1 when it is its lane's head (rows_gone releases the lane), 0,
 * or -1 on a store error. */
int
rows_unindex(struct store_batch *b, const unsigned char *rk,
    const struct store_row *r)
{
	int ret, head;

	if ((head = lane_is_head(b, rk, r)) == -1)
		return -1;
	if (r->state == STORE_ROW_MEMBER)
		ret = lane_leave(b, rk, r);
	else
		ret = due_del(b->st, b->txn, r->tenant, r->due, rk);
	return ret == -1 ? -1 : head;
}

/* Delete the row at rk, unindexed already, with its count and (unref) its
 * hook's (ROWS_UNREF_KEEP: as rows_hook_unref keeps it), and release its
 * lane if it was the head.  1, 2 when it was its hook's last (unref), 0
 * when the row was not there, or -1 on a store error. */
int
rows_gone(struct store_batch *b, const unsigned char *rk,
    const struct store_row *r, int head, int unref)
{
	int ret, went = 0;

	if ((ret = store_tdel(b->st, b->txn, T_ROWS, rk,
	    STORE_ROWKEY_LEN)) == -1)
		return -1;
	if (ret == 0)
		return 0;	/* a due key without its row */
	if (unref && (went = rows_hook_unref(b, rec_get_u64(rk),
	    unref)) == -1)
		return -1;
	if (b->counts.rows > 0)
		b->counts.rows--;
	if (keycount_live(r->state) == 1)
		keycount_row(b, rk, r, -1, 0);
	else if (keycount_live(r->state) == 0)
		keycount_row(b, rk, r, 0, -1);
	if (head && lane_release(b, rk, r) == -1)
		return -1;
	return went ? 2 : 1;
}

int
store_batch_row_reschedule(struct store_batch *b,
    const unsigned char rk[STORE_ROWKEY_LEN], const struct store_row *nr)
{
	struct store *st = b->st;
	struct store_row r;
	int head;

	if (!store_batch_ok(b))
		return -1;
	if (!rows_pending(nr)) {
		store_seterr(st, 0, "store %s: row seq %" PRIu64 " sink %u "
		    "rescheduled in state %u", st->dir, rec_get_u64(rk),
		    rec_get_u32(rk + 8), nr->state);
		goto fail;
	}
	switch (rows_read(st, b->txn, rk, &r)) {
	case -1:
		goto fail;
	case 0:
		return 0;
	case -2:
		/* Rewritten whole from nr; the old due key, unknown, is
		 * reported stale by the next scan. */
		log_warnx("store %s: %s; rewritten", st->dir, st->err);
		r = *nr;
		break;
	default:
		if (!rows_pending(&r)) {
			log_warnx("store %s: rescheduled row seq %" PRIu64
			    " sink %u is in state %u: left alone", st->dir,
			    rec_get_u64(rk), rec_get_u32(rk + 8), r.state);
			return 0;
		}
		if ((head = lane_is_head(b, rk, &r)) == -1 ||
		    due_del(st, b->txn, r.tenant, r.due, rk) == -1)
			goto fail;
		r.due = nr->due;
		r.attempts = nr->attempts;
		r.first_attempt = nr->first_attempt;
		snprintf(r.last_error, sizeof(r.last_error), "%s",
		    nr->last_error);
		/* A head stays the head of its lane until it ends. */
		r.state = head && nr->state == STORE_ROW_DUE ? STORE_ROW_HEAD :
		    nr->state;
	}
	if (rows_write(st, b->txn, rk, &r) == -1 ||
	    rows_due_put(st, b->txn, r.tenant, r.due, rk) == -1)
		goto fail;
	return 1;

 fail:
	b->failed = 1;
	return -1;
}

int
store_batch_row_dead(struct store_batch *b,
    const unsigned char rk[STORE_ROWKEY_LEN], uint64_t dead_at,
    const char *reason, const char *last_error, uint32_t attempts)
{
	struct store *st = b->st;
	struct store_row r;
	struct store_dead dl;
	unsigned char dk[STORE_DEADKEY_LEN], val[STORE_REC_MAX];
	size_t vlen;
	int ret, head;

	if (!store_batch_ok(b))
		return -1;
	switch (rows_read(st, b->txn, rk, &r)) {
	case -1:
		goto fail;
	case 0:
		return 0;
	case -2:
		log_warnx("store %s: %s; cannot dead-letter it", st->dir,
		    st->err);
		return 0;
	}
	if (r.state == STORE_ROW_DEAD)
		return 0;
	if ((ret = hook_present(st, b->txn, rec_get_u64(rk))) == -1 ||
	    (head = rows_unindex(b, rk, &r)) == -1)
		goto fail;
	if (ret == 0) {
		/* An orphan: a dead letter could never be replayed. */
		if ((ret = rows_gone(b, rk, &r, head, 0)) == -1)
			goto fail;
		return ret == 1 ? 2 : 0;
	}

	memset(&dl, 0, sizeof(dl));
	snprintf(dl.reason, sizeof(dl.reason), "%s",
	    reason != NULL ? reason : "");
	snprintf(dl.last_error, sizeof(dl.last_error), "%s",
	    last_error != NULL ? last_error : "");
	dl.attempts = attempts;
	/* Its due is its dead time: the row names its dead entry. */
	r.state = STORE_ROW_DEAD;
	r.due = dead_at;
	r.attempts = attempts;
	memcpy(r.last_error, dl.last_error, sizeof(r.last_error));
	store_key_dead(dk, dead_at, rk);
	if ((vlen = store_rec_dead_encode(&dl, val, sizeof(val))) == 0) {
		store_seterr(st, 0, "store %s: dead letter of seq %" PRIu64
		    " sink %u: cannot encode", st->dir, rec_get_u64(rk),
		    rec_get_u32(rk + 8));
		goto fail;
	}
	if (rows_write(st, b->txn, rk, &r) == -1 ||
	    store_put(st, b->txn, T_DEAD, dk, sizeof(dk), val, vlen, 0) == -1)
		goto fail;
	b->counts.dead++;
	keycount_row(b, rk, &r, -1, 1);
	if (head && lane_release(b, rk, &r) == -1)
		goto fail;
	return 1;

 fail:
	b->failed = 1;
	return -1;
}

int
store_batch_due_drop(struct store_batch *b, const unsigned char *key,
    size_t klen)
{
	struct store *st = b->st;
	struct store_row r;
	const unsigned char *rk;
	uint64_t due;
	size_t tlen;
	int ret;

	if (!store_batch_ok(b))
		return -1;
	if (rows_due_parse(key, klen, &tlen, &due, &rk) == 0) {
		/* Only a stale key: dropping a live one would lose its row
		 * for good. */
		if ((ret = rows_read(st, b->txn, rk, &r)) == -1)
			goto fail;
		if (ret == 1 && rows_pending(&r) && r.due == due &&
		    strlen(r.tenant) == tlen &&
		    memcmp(r.tenant, key, tlen) == 0) {
			log_warnx("store %s: due key of seq %" PRIu64 " sink "
			    "%u is live: not dropped", st->dir, rec_get_u64(rk),
			    rec_get_u32(rk + 8));
			return 0;
		}
	}
	if ((ret = store_tdel(st, b->txn, T_DUE, key, klen)) == -1)
		goto fail;
	return ret;

 fail:
	b->failed = 1;
	return -1;
}

/*
 * Admin walks.
 */

int
store_pending_rows_of_source(struct store *st, const char *source,
    uint64_t after_seq, uint64_t limit,
    int (*cb)(const unsigned char *, const struct store_row *, void *),
    void *arg)
{
	int seen;

	return pending_page(st, source, &after_seq, limit, 0, &seen, cb,
	    arg) == -1 ? -1 : 0;
}

/*
 * The walk of store_pending_rows_of_source from *after_seq: once limit rows
 * went to cb or visits rows were read (0: no bound), it ends with the hook
 * it is in, and *after_seq is then that hook's seq.  *seen is set once a
 * row of source is read, DEAD or not.  1 the page ended (or cb stopped
 * it), 0 the table did, -1 on a store error.
 */
static int
pending_page(struct store *st, const char *source, uint64_t *after_seq,
    uint64_t limit, uint64_t visits, int *seen,
    int (*cb)(const unsigned char *, const struct store_row *, void *),
    void *arg)
{
	struct store_row r;
	unsigned char start[STORE_ROWKEY_LEN], rk[STORE_ROWKEY_LEN];
	uint64_t n = 0, read = 0, last = *after_seq;
	struct walk w;
	int ret, full = 0;

	st->dberr[0] = '\0';
	*seen = 0;
	if (source == NULL || *after_seq == UINT64_MAX)
		return 0;
	store_key_row(start, *after_seq + 1, 0);
	store_walk_init(&w, st, NULL, T_ROWS, start, sizeof(start));
	while ((ret = store_walk_next(&w)) == 1) {
		if (w.klen != STORE_ROWKEY_LEN) {
			log_warnx("store %s/rows.db: damaged key of %zu bytes "
			    "skipped", st->dir, w.klen);
			continue;
		}
		/* A full page ends with the hook it is in. */
		if (full && rec_get_u64(w.key) != last)
			break;
		last = rec_get_u64(w.key);
		if (visits != 0 && ++read >= visits)
			full = 1;
		if (store_rec_row_decode(w.key, w.klen, w.val, w.vlen, &r,
		    st->err, sizeof(st->err)) == -1) {
			log_warnx("store %s: %s: skipped", st->dir, st->err);
			continue;
		}
		if (strcmp(r.source, source) != 0)
			continue;
		*seen = 1;
		if (r.state == STORE_ROW_DEAD)
			continue;
		memcpy(rk, w.key, sizeof(rk));
		store_walk_pause(&w);
		if (cb(rk, &r, arg) != 0)
			break;
		if (limit != 0 && ++n >= limit)
			full = 1;
	}
	*after_seq = last;
	return store_walk_done(&w, ret);
}

/* Whether hook seq is stored: 1, 0, or -1 on a store error.  Reads no
 * byte of the record. */
static int
hook_present(struct store *st, struct __db_txn *txn, uint64_t seq)
{
	unsigned char hk[8];
	size_t vlen;

	store_key_hook(hk, seq);
	return store_tget_head(st, txn, T_HOOKS, hk, sizeof(hk), hk, 0, &vlen);
}

struct dls_walk {
	struct store_batch	*b;
	struct store_dls	*s;
	int			 failed;
};

static int
dls_row(const unsigned char *rk, const struct store_row *r, void *arg)
{
	struct dls_walk *w = arg;
	struct store_dls *s = w->s;
	int ret;

	if (s->skip != NULL && s->skip(rk, s->arg))
		return 0;
	if ((ret = store_batch_row_dead(w->b, rk, s->dead_at, s->reason,
	    r->last_error, r->attempts)) == -1) {
		w->failed = 1;
		return 1;
	}
	if (ret == 1) {
		s->moved++;
		if (r->module < STORE_MODULES)
			s->moved_by[r->module]++;
	} else if (ret == 2)
		s->dropped++;
	return 0;
}

int
store_batch_source_dead(struct store_batch *b, struct store_dls *s)
{
	struct dls_walk w;
	int ret;

	if (!store_batch_ok(b))
		return -1;
	memset(&w, 0, sizeof(w));
	w.b = b;
	w.s = s;
	s->moved = s->dropped = 0;
	memset(s->moved_by, 0, sizeof(s->moved_by));
	ret = pending_page(b->st, s->source, &s->after_seq, s->limit,
	    s->visits, &s->seen, dls_row, &w);
	if (ret == -1 || w.failed) {
		b->failed = 1;
		return -1;
	}
	return ret;
}
