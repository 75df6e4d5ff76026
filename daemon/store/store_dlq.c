/* SPDX-License-Identifier: ISC */
/*
 * store_dlq.c: the operator's dead letters and hooks in the store (see
 * store.h): the dead table walked by dead time in bounded calls, one
 * hook's rows with their dead letters, and the deletes of a dead letter
 * and of a whole hook, which keep the counters (hooks, rows, dead,
 * lane_members) in the batch that changes them, through store_rows.c's
 * and store_lanes.c's settling parts.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "log.h"
#include "store.h"
#include "store_int.h"

#define DLQ_HOOK_ROWS	1024	/* rows of one hook a delete handles */

/* store_dead_list's caller, behind store_dead_walk. */
struct list_ctx {
	int		(*cb)(const struct store_dead_info *, void *);
	void		*arg;
	uint64_t	 limit, n;
};

/* One hook's rows, read before a delete. */
struct hook_rows {
	unsigned char	(*rk)[STORE_ROWKEY_LEN];
	size_t		 n;
};

static void	 dead_info(struct store_dead_info *, const unsigned char *,
		    const struct store_dead *);
static int	 dead_fill(struct store *, struct __db_txn *, int,
		    struct store_dead_info *);
static int	 list_fn(const struct store_dead_info *, void *);
static int	 row_keys(struct store *, struct __db_txn *, uint64_t,
		    struct hook_rows *);
static int	 row_del(struct store_batch *, const unsigned char *);
static int	 hook_drop(struct store_batch *, uint64_t);
static int	 hook_del(struct store_batch *, uint64_t,
		    int (*)(const unsigned char *, void *), void *,
		    uint64_t *, int);

/* info from a dead entry alone: its key and record. */
static void
dead_info(struct store_dead_info *info, const unsigned char *key,
    const struct store_dead *dl)
{
	memset(info, 0, sizeof(*info));
	/* rowkey first: GCC 12 with --enable-sanitizers takes the other
	 * order for an overflow (-Warray-bounds). */
	memcpy(info->rowkey, key + 8, STORE_ROWKEY_LEN);
	memcpy(info->deadkey, key, STORE_DEADKEY_LEN);
	info->seq = rec_get_u64(info->rowkey);
	info->sink_index = rec_get_u32(info->rowkey + 8);
	info->dead_at = rec_get_u64(key);
	info->attempts = dl->attempts;
	memcpy(info->reason, dl->reason, sizeof(info->reason));
	memcpy(info->last_error, dl->last_error, sizeof(info->last_error));
}

/* The row and hook fields of info, as reads asks: 0, or -1 on a store
 * error.  A row or hook gone leaves its fields empty. */
static int
dead_fill(struct store *st, struct __db_txn *txn, int reads,
    struct store_dead_info *info)
{
	struct store_hook_rec rec;
	struct store_row r;
	int rr;

	if (reads & STORE_DEAD_READ_ROW) {
		if ((rr = rows_read(st, txn, info->rowkey, &r)) == -1)
			return -1;
		/* A row that is not DEAD at this time: an orphan entry. */
		if (rr == 1 && r.state == STORE_ROW_DEAD) {
			memcpy(info->tenant, r.tenant, sizeof(info->tenant));
			memcpy(info->source, r.source, sizeof(info->source));
			info->module = r.module;
		}
	}
	if (reads & STORE_DEAD_READ_HOOK) {
		if ((rr = hooks_head_get(st, txn, T_HOOKS, info->seq,
		    &rec)) == -1)
			return -1;
		if (rr == 1) {
			uuid_format(rec.hook.id, info->hook_id);
			info->received_at = rec.hook.received_at;
			info->size = rec.body_size;
			snprintf(info->content_type,
			    sizeof(info->content_type), "%s",
			    rec.hook.content_type != NULL ?
			    rec.hook.content_type : "");
			store_hook_rec_free(&rec);
		}
	}
	return 0;
}

int
store_dead_walk(struct store *st, struct store_dead_walk *w,
    int (*cb)(const struct store_dead_info *, void *), void *arg)
{
	struct store_dead_info *info;
	struct store_dead dl;
	unsigned char start[STORE_DEADKEY_LEN];
	uint64_t read = 0, dead_at;
	struct walk wk;
	int ret, reads = w->reads;

	st->dberr[0] = '\0';
	w->end = 0;
	if (w->source != NULL)
		reads |= STORE_DEAD_READ_ROW;
	if ((info = malloc(sizeof(*info))) == NULL) {
		store_seterr(st, 0, "store %s: out of memory", st->dir);
		return -1;
	}
	/* A key before the range (a caller's cursor): from the range. */
	if (w->have_at && rec_get_u64(w->at) < w->since_ms)
		w->have_at = 0;
	if (w->have_at)
		memcpy(start, w->at, sizeof(start));
	else {
		memset(start, 0, sizeof(start));
		rec_put_u64(start, w->since_ms);
	}
	store_walk_init(&wk, st, NULL, T_DEAD, start, sizeof(start));
	for (;;) {
		if ((ret = store_walk_next(&wk)) != 1) {
			if (ret == 0)
				w->end = 1;
			break;
		}
		if (w->have_at && wk.klen == sizeof(start) &&
		    memcmp(wk.key, start, sizeof(start)) == 0)
			continue;
		if (w->visits != 0 && read >= w->visits)
			break;
		read++;
		if (wk.klen != STORE_DEADKEY_LEN) {
			log_warnx("store %s/dead.db: damaged key of %zu bytes "
			    "skipped", st->dir, wk.klen);
			continue;
		}
		if ((dead_at = rec_get_u64(wk.key)) > w->until_ms) {
			w->end = 1;
			break;
		}
		memcpy(w->at, wk.key, STORE_DEADKEY_LEN);
		w->have_at = 1;
		if (store_rec_dead_decode(wk.key, wk.klen, wk.val, wk.vlen,
		    &dl, st->err, sizeof(st->err)) == -1) {
			log_warnx("store %s: %s: skipped", st->dir, st->err);
			continue;
		}
		store_walk_pause(&wk);
		dead_info(info, wk.key, &dl);
		if (dead_fill(st, store_readtxn(st), reads, info) == -1) {
			ret = -1;
			break;
		}
		if (w->source != NULL && strcmp(w->source, info->source) != 0)
			continue;
		if (cb(info, arg) != 0)
			break;
	}
	free(info);
	return store_walk_done(&wk, ret == -1 ? -1 : 0);
}

static int
list_fn(const struct store_dead_info *info, void *arg)
{
	struct list_ctx *ctx = arg;

	ctx->n++;
	return ctx->cb(info, ctx->arg) != 0 ||
	    (ctx->limit != 0 && ctx->n >= ctx->limit);
}

int
store_dead_list(struct store *st, const char *source, uint64_t limit,
    int (*cb)(const struct store_dead_info *, void *), void *arg)
{
	return store_dead_list_since(st, source, 0, limit, cb, arg);
}

int
store_dead_list_since(struct store *st, const char *source,
    uint64_t since_ms, uint64_t limit,
    int (*cb)(const struct store_dead_info *, void *), void *arg)
{
	struct store_dead_walk w;
	struct list_ctx ctx;

	memset(&w, 0, sizeof(w));
	w.source = source;
	w.since_ms = since_ms;
	w.until_ms = UINT64_MAX;
	w.reads = STORE_DEAD_READ_ROW | STORE_DEAD_READ_HOOK;
	ctx.cb = cb;
	ctx.arg = arg;
	ctx.limit = limit;
	ctx.n = 0;
	return store_dead_walk(st, &w, list_fn, &ctx);
}

int
store_hook_head(struct store *st, uint64_t seq, int pen,
    struct store_hook_rec *out)
{
	st->dberr[0] = '\0';
	return hooks_head_get(st, store_readtxn(st), pen ? T_QUARANTINE :
	    T_HOOKS, seq, out);
}

int
store_hook_rows(struct store *st, uint64_t seq,
    int (*cb)(const unsigned char *, const struct store_row *,
    const struct store_dead_info *, void *), void *arg)
{
	struct store_dead_info *info;
	struct store_dead dl;
	struct store_row r;
	unsigned char start[STORE_ROWKEY_LEN], rk[STORE_ROWKEY_LEN];
	unsigned char dk[STORE_DEADKEY_LEN], val[STORE_REC_MAX];
	const struct store_dead_info *dp;
	size_t vlen;
	struct walk w;
	int ret, rr;

	st->dberr[0] = '\0';
	if ((info = malloc(sizeof(*info))) == NULL) {
		store_seterr(st, 0, "store %s: out of memory", st->dir);
		return -1;
	}
	store_key_row(start, seq, 0);
	store_walk_init(&w, st, NULL, T_ROWS, start, sizeof(start));
	while ((ret = store_walk_next(&w)) == 1) {
		if (w.klen != STORE_ROWKEY_LEN || rec_get_u64(w.key) != seq)
			break;
		if (store_rec_row_decode(w.key, w.klen, w.val, w.vlen, &r,
		    st->err, sizeof(st->err)) == -1) {
			log_warnx("store %s: %s: skipped", st->dir, st->err);
			continue;
		}
		memcpy(rk, w.key, sizeof(rk));
		store_walk_pause(&w);
		dp = NULL;
		if (r.state == STORE_ROW_DEAD) {
			store_key_dead(dk, r.due, rk);
			if ((rr = store_tget(st, store_readtxn(st), T_DEAD, dk,
			    sizeof(dk), val, sizeof(val), &vlen)) == -1) {
				ret = -1;
				break;
			}
			if (rr == 1 && store_rec_dead_decode(dk, sizeof(dk),
			    val, vlen, &dl, st->err, sizeof(st->err)) == 0) {
				dead_info(info, dk, &dl);
				dp = info;
			}
		}
		if (cb(rk, &r, dp, arg) != 0)
			break;
	}
	free(info);
	return store_walk_done(&w, ret == -1 ? -1 : 0);
}

/* The row keys of hook seq, in the batch: 0, or -1 on a store error (too
 * many rows for one delete is one). */
static int
row_keys(struct store *st, struct __db_txn *txn, uint64_t seq,
    struct hook_rows *hr)
{
	unsigned char start[STORE_ROWKEY_LEN];
	struct walk w;
	int ret;

	hr->n = 0;
	store_key_row(start, seq, 0);
	store_walk_init(&w, st, txn, T_ROWS, start, sizeof(start));
	while ((ret = store_walk_next(&w)) == 1) {
		if (w.klen != STORE_ROWKEY_LEN || rec_get_u64(w.key) != seq)
			break;
		if (hr->n == DLQ_HOOK_ROWS) {
			store_seterr(st, 0, "store %s: hook seq %" PRIu64
			    " has over %d rows", st->dir, seq, DLQ_HOOK_ROWS);
			ret = -1;
			break;
		}
		memcpy(hr->rk[hr->n++], w.key, STORE_ROWKEY_LEN);
	}
	return store_walk_done(&w, ret == -1 ? -1 : 0);
}

/* Delete the row at rk whatever its state, with its due key, lane
 * membership or dead entry, and its hook's count: 0, or -1. */
static int
row_del(struct store_batch *b, const unsigned char *rk)
{
	struct store *st = b->st;
	struct store_row r;
	unsigned char dk[STORE_DEADKEY_LEN];
	int ret, head = 0;

	switch (rows_read(st, b->txn, rk, &r)) {
	case -1:
		return -1;
	case 0:
		return 0;
	case -2:
		/* Damaged: the row goes; a due key it had is reported
		 * stale by the next scan. */
		log_warnx("store %s: %s; deleting it with its hook", st->dir,
		    st->err);
		memset(&r, 0, sizeof(r));
		break;
	default:
		if (r.state == STORE_ROW_DEAD) {
			store_key_dead(dk, r.due, rk);
			if ((ret = store_tdel(st, b->txn, T_DEAD, dk,
			    sizeof(dk))) == -1)
				return -1;
			if (ret == 1 && b->counts.dead > 0)
				b->counts.dead--;
		} else if ((head = rows_unindex(b, rk, &r)) == -1)
			return -1;
	}
	return rows_gone(b, rk, &r, head, 1) == -1 ? -1 : 0;
}

/* The hook at seq if it is still there once its rows are gone: its count
 * set to 1 and unref'd, which deletes it with its body.  0, or -1. */
static int
hook_drop(struct store_batch *b, uint64_t seq)
{
	struct cur c;
	unsigned char hk[8], head[HOOK_ROWS_OFF + 4], cnt[4];
	size_t vlen;
	int ret;

	store_key_hook(hk, seq);
	ret = store_cur_get(&c, b->st, b->txn, T_HOOKS, hk, sizeof(hk), head,
	    sizeof(head), &vlen);
	if (ret == 1) {
		/* A kept hook has no live row (store_archive.c). */
		if (!(head[HOOK_HEAD_FLAGS] & HOOK_FLAG_KEPT))
			log_warnx("store %s: hook seq %" PRIu64 " counted "
			    "more live rows than it had; deleted", b->st->dir,
			    seq);
		rec_put_u32(cnt, 1);
		if (store_cur_patch(&c, HOOK_ROWS_OFF, cnt, sizeof(cnt)) == -1)
			ret = -1;
	}
	if (store_cur_done(&c, ret == -1 ? -1 : 0) == -1)
		return -1;
	return ret == 1 && rows_hook_unref(b, seq, 1) == -1 ? -1 : 0;
}

int
store_batch_hook_del(struct store_batch *b, uint64_t seq,
    int (*claimed)(const unsigned char *, void *), void *arg,
    uint64_t *bytes)
{
	return hook_del(b, seq, claimed, arg, bytes, 0);
}

int
store_batch_hook_erase(struct store_batch *b, uint64_t seq,
    int (*claimed)(const unsigned char *, void *), void *arg,
    uint64_t *bytes)
{
	return hook_del(b, seq, claimed, arg, bytes, 1);
}

/* store_batch_hook_del, or (orphans) store_batch_hook_erase: the claimed
 * rows stay, orphans, instead of refusing. */
static int
hook_del(struct store_batch *b, uint64_t seq,
    int (*claimed)(const unsigned char *, void *), void *arg,
    uint64_t *bytes, int orphans)
{
	struct store *st = b->st;
	struct store_hook_rec rec;
	struct hook_rows hr;
	unsigned char id[UUID_LEN];
	size_t i;
	int ret, rc = -1;

	if (!store_batch_ok(b))
		return -1;
	*bytes = 0;
	if ((ret = hooks_head_get(st, b->txn, T_HOOKS, seq, &rec)) != 1) {
		if (ret == -1)
			b->failed = 1;
		return ret;
	}
	*bytes = rec.body_size;
	memcpy(id, rec.hook.id, UUID_LEN);
	store_hook_rec_free(&rec);
	if ((hr.rk = calloc(DLQ_HOOK_ROWS, STORE_ROWKEY_LEN)) == NULL) {
		store_seterr(st, 0, "store %s: out of memory", st->dir);
		goto fail;
	}
	if (row_keys(st, b->txn, seq, &hr) == -1)
		goto fail;
	/* A claimed row is in an attempt's hands: refuse before any
	 * write, or leave it to its settle, which finds its hook gone. */
	for (i = 0; !orphans && claimed != NULL && i < hr.n; i++)
		if (claimed(hr.rk[i], arg)) {
			free(hr.rk);
			return 2;
		}
	for (i = 0; i < hr.n; i++)
		if ((!orphans || claimed == NULL || !claimed(hr.rk[i], arg)) &&
		    row_del(b, hr.rk[i]) == -1)
			goto fail;
	/* A live count above its rows (a count lost): it goes all the
	 * same. */
	if (hook_drop(b, seq) == -1)
		goto fail;
	/* An operator's delete takes the attempt log's record with it. */
	if (store_batch_attempts_drop(b, id) == -1)
		goto fail;
	rc = 1;
 fail:
	free(hr.rk);
	if (rc == -1)
		b->failed = 1;
	return rc;
}

int
store_batch_dead_del(struct store_batch *b,
    const unsigned char key[STORE_DEADKEY_LEN], uint64_t *bytes)
{
	struct store *st = b->st;
	struct store_hook_rec rec;
	struct store_row r;
	const unsigned char *rk = key + 8;
	unsigned char id[UUID_LEN];
	int ret, gone;

	if (!store_batch_ok(b))
		return -1;
	if ((ret = store_tdel(st, b->txn, T_DEAD, key,
	    STORE_DEADKEY_LEN)) != 1)
		goto out;
	if (b->counts.dead > 0)
		b->counts.dead--;
	/* The row only when this entry is its dead letter. */
	if ((ret = rows_read(st, b->txn, rk, &r)) == -1)
		goto out;
	if (ret != 1 || r.state != STORE_ROW_DEAD ||
	    r.due != rec_get_u64(key))
		return 1;
	if ((ret = hooks_head_get(st, b->txn, T_HOOKS, rec_get_u64(rk),
	    &rec)) == -1)
		goto out;
	gone = 0;
	if (ret == 1) {
		if ((gone = rec.rows <= 1))
			*bytes += rec.body_size;
		memcpy(id, rec.hook.id, UUID_LEN);
		store_hook_rec_free(&rec);
	}
	if ((ret = rows_gone(b, rk, &r, 0, 1)) == -1)
		goto out;
	/* A purge that takes the hook takes its attempts. */
	if (gone && (ret = store_batch_attempts_drop(b, id)) == -1)
		goto out;
	return 1;
 out:
	if (ret == -1)
		b->failed = 1;
	return ret;
}
