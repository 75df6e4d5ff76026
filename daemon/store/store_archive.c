/* SPDX-License-Identifier: ISC */
/*
 * store_archive.c: delivered hooks kept (retention.delivered_s): each
 * delivered row's record (table delivered), the kept hooks' index by time
 * (table archive), their prune and their replay.
 *
 * While the archive keeps hooks (store_archive_keep), a delivered settle
 * deletes its row as without it, so that the rows, dead and pending
 * counters and every gauge read from them are what they were, and writes
 * the row's delivery (module, time, replay id) in delivered.  The hook's
 * last row does not delete it: the hook is marked kept (live rows 0, flag
 * HOOK_FLAG_KEPT), leaves the "hooks" counter for "ahooks" and "abytes",
 * and gets an archive entry at its last delivery's time.  Its body, its
 * id's entry in hookids (so GET /v1/hooks/{id} finds it) and its dedupe
 * entry (which expires as it always did) stay.  No due key, no lane
 * member: nothing dispatches a kept hook; only an archive replay gives it
 * rows again (it is then a live hook, out of the archive, until its new
 * rows are delivered and it is kept again at that time).
 *
 * A hook deleted by any path (its last row, a purge, an erase, the prune)
 * takes its delivered records and its archive entry with it, found by its
 * flags: a hook without them costs nothing more than before.
 *
 * Fatal: nothing; store errors fail the batch.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "store.h"
#include "store_int.h"

#define DELIVERED_REC_LEN	(1 + 1 + 8 + UUID_LEN)
#define ARCHIVE_KEY_LEN		16
#define ARCHIVE_REC_LEN		9
#define HOOK_SIZE_OFF		(HOOK_ROWS_OFF + 4 + 32)	/* u64 body
					 * size, after the rows and sha256 */

static int	 delivered_max(struct store *, struct __db_txn *, uint64_t,
		    int, uint64_t *);
static int	 archive_entry_del(struct store_batch *, uint64_t, uint64_t);
static int	 delivered_decode(struct store *, const unsigned char *,
		    const unsigned char *, size_t, struct store_delivered *);

void
store_archive_keep(struct store *st, int on)
{
	st->keep_delivered = on;
}

int
archive_delivered(struct store_batch *b, const unsigned char *rk,
    const struct store_row *r)
{
	unsigned char v[DELIVERED_REC_LEN], hk[8];
	size_t vlen;
	int ret;

	/* An orphan's (its hook erased while it was claimed) would outlive
	 * everything that could delete it. */
	store_key_hook(hk, rec_get_u64(rk));
	if ((ret = store_tget_head(b->st, b->txn, T_HOOKS, hk, sizeof(hk), hk,
	    0, &vlen)) != 1)
		return ret;
	v[0] = STORE_REC_VERSION;
	v[1] = r->module;
	rec_put_u64(v + 2, time_wall_ms());
	memcpy(v + 10, r->replay_id, UUID_LEN);
	return store_put(b->st, b->txn, T_DELIVERED, rk, STORE_ROWKEY_LEN, v,
	    sizeof(v), 0) == -1 ? -1 : 0;
}

/*
 * The latest delivery of hook seq's records, in txn; del: deleting them
 * on the way.  1 with *at, 0 when it has none, -1 on a store error.  A
 * hook has as many records as sinks, so the walk is short.
 */
static int
delivered_max(struct store *st, struct __db_txn *txn, uint64_t seq, int del,
    uint64_t *at)
{
	unsigned char start[STORE_ROWKEY_LEN];
	struct walk w;
	uint64_t t;
	int ret, any = 0;

	*at = 0;
	store_key_row(start, seq, 0);
	store_walk_init(&w, st, txn, T_DELIVERED, start, sizeof(start));
	while ((ret = store_walk_next(&w)) == 1) {
		if (w.klen != STORE_ROWKEY_LEN || rec_get_u64(w.key) != seq)
			break;
		if (w.vlen == DELIVERED_REC_LEN &&
		    w.val[0] == STORE_REC_VERSION) {
			t = rec_get_u64(w.val + 2);
			if (!any || t > *at)
				*at = t;
			any = 1;
		}
		if (del && store_walk_del(&w) == -1) {
			ret = -1;
			break;
		}
	}
	if (store_walk_done(&w, ret == -1 ? -1 : 0) == -1)
		return -1;
	return any;
}

/* The archive entry (at, seq) goes, and the counters with it.  0, or -1
 * on a store error; an entry not found is logged. */
static int
archive_entry_del(struct store_batch *b, uint64_t at, uint64_t seq)
{
	struct store *st = b->st;
	unsigned char k[ARCHIVE_KEY_LEN], v[ARCHIVE_REC_LEN + 1];
	uint64_t bytes = 0;
	size_t vlen;
	int ret;

	rec_put_u64(k, at);
	rec_put_u64(k + 8, seq);
	if ((ret = store_tget(st, b->txn, T_ARCHIVE, k, sizeof(k), v,
	    sizeof(v), &vlen)) == -1)
		return -1;
	if (ret == 0) {
		log_warnx("store %s: kept hook seq %" PRIu64 " has no archive "
		    "entry at %" PRIu64, st->dir, seq, at);
		if (b->counts.ahooks > 0)
			b->counts.ahooks--;
		return 0;
	}
	if (vlen == ARCHIVE_REC_LEN && v[0] == STORE_REC_VERSION)
		bytes = rec_get_u64(v + 1);
	if (store_tdel(st, b->txn, T_ARCHIVE, k, sizeof(k)) == -1)
		return -1;
	if (b->counts.ahooks > 0)
		b->counts.ahooks--;
	b->counts.abytes = b->counts.abytes > bytes ?
	    b->counts.abytes - bytes : 0;
	return 0;
}

int
archive_keep(struct store_batch *b, struct cur *c, uint64_t seq,
    const unsigned char *head)
{
	struct store *st = b->st;
	unsigned char hk[8], h[HOOK_SIZE_OFF + 8], k[ARCHIVE_KEY_LEN];
	unsigned char v[ARCHIVE_REC_LEN], patch[1 + UUID_LEN + 8 + 4];
	uint64_t at, bytes;
	size_t vlen;
	int ret;

	/* The entry's time is its latest delivery's, which archive_forget
	 * finds again from the records alone. */
	if ((ret = delivered_max(st, b->txn, seq, 0, &at)) == -1)
		return -1;
	if (ret == 0)
		at = time_wall_ms();
	store_key_hook(hk, seq);
	if ((ret = store_tget_head(st, b->txn, T_HOOKS, hk, sizeof(hk), h,
	    sizeof(h), &vlen)) == -1)
		return -1;
	bytes = 5 + rec_get_u32(head + 1);
	if (ret == 1 && vlen == sizeof(h))
		bytes += rec_get_u64(h + HOOK_SIZE_OFF);
	/* Flags, id, received_at and rows in one partial write. */
	memcpy(patch, head + HOOK_HEAD_FLAGS, sizeof(patch));
	patch[0] |= HOOK_FLAG_DELIVERED | HOOK_FLAG_KEPT;
	rec_put_u32(patch + 1 + UUID_LEN + 8, 0);
	if (store_cur_patch(c, HOOK_HEAD_FLAGS, patch, sizeof(patch)) == -1)
		return -1;
	rec_put_u64(k, at);
	rec_put_u64(k + 8, seq);
	v[0] = STORE_REC_VERSION;
	rec_put_u64(v + 1, bytes);
	if (store_put(st, b->txn, T_ARCHIVE, k, sizeof(k), v, sizeof(v),
	    0) == -1)
		return -1;
	if (b->counts.hooks > 0)
		b->counts.hooks--;
	b->counts.ahooks++;
	b->counts.abytes += bytes;
	return 0;
}

int
archive_forget(struct store_batch *b, uint64_t seq, uint8_t flags)
{
	uint64_t at;
	int ret;

	if ((ret = delivered_max(b->st, b->txn, seq, 1, &at)) == -1)
		return -1;
	if (!(flags & HOOK_FLAG_KEPT))
		return 0;
	return archive_entry_del(b, ret == 1 ? at : 0, seq);
}

static int
delivered_decode(struct store *st, const unsigned char *key,
    const unsigned char *val, size_t vlen, struct store_delivered *d)
{
	if (rec_version(T_DELIVERED, key, STORE_ROWKEY_LEN, val, vlen,
	    st->err, sizeof(st->err)) == -1)
		return -1;
	if (vlen != DELIVERED_REC_LEN)
		return rec_malformed(T_DELIVERED, key, STORE_ROWKEY_LEN,
		    "bad length", st->err, sizeof(st->err));
	memset(d, 0, sizeof(*d));
	d->sink = rec_get_u32(key + 8);
	d->module = val[1];
	d->delivered_at = rec_get_u64(val + 2);
	memcpy(d->replay_id, val + 10, UUID_LEN);
	return 0;
}

int
store_hook_delivered(struct store *st, uint64_t seq,
    int (*cb)(const struct store_delivered *, void *), void *arg)
{
	struct store_delivered d;
	unsigned char start[STORE_ROWKEY_LEN];
	struct walk w;
	int ret;

	st->dberr[0] = '\0';
	store_key_row(start, seq, 0);
	store_walk_init(&w, st, NULL, T_DELIVERED, start, sizeof(start));
	while ((ret = store_walk_next(&w)) == 1) {
		if (w.klen != STORE_ROWKEY_LEN || rec_get_u64(w.key) != seq)
			break;
		if (delivered_decode(st, w.key, w.val, w.vlen, &d) == -1) {
			log_warnx("store %s: %s: skipped", st->dir, st->err);
			continue;
		}
		store_walk_pause(&w);
		if (cb(&d, arg) != 0)
			break;
	}
	return store_walk_done(&w, ret == -1 ? -1 : 0);
}

/*
 * The prune: the oldest entries first, while they are older than
 * before_ms or the archive holds more than max_bytes (0: no cap), each
 * hook deleted whole as its last row would have deleted it.
 */
int
store_batch_archive_prune(struct store_batch *b, uint64_t before_ms,
    uint64_t max_bytes, unsigned max, uint64_t *freed)
{
	struct store *st = b->st;
	unsigned char hk[8], k[ARCHIVE_KEY_LEN];
	uint64_t seq, at, before;
	size_t vlen;
	struct walk w;
	unsigned n = 0;
	int ret;

	if (!store_batch_ok(b))
		return -1;
	store_walk_init(&w, st, b->txn, T_ARCHIVE, "", 0);
	while (n < max && (ret = store_walk_next(&w)) == 1) {
		if (w.klen != ARCHIVE_KEY_LEN) {
			log_warnx("store %s/archive.db: damaged key of %zu "
			    "bytes skipped", st->dir, w.klen);
			continue;
		}
		at = rec_get_u64(w.key);
		if (at >= before_ms && (max_bytes == 0 ||
		    b->counts.abytes <= max_bytes))
			break;
		memcpy(k, w.key, sizeof(k));
		seq = rec_get_u64(k + 8);
		store_walk_pause(&w);
		before = b->counts.abytes;
		store_key_hook(hk, seq);
		if ((ret = store_tget_head(st, b->txn, T_HOOKS, hk,
		    sizeof(hk), hk, 0, &vlen)) == -1)
			break;
		/* The hook goes, and its entry with it; an entry whose
		 * hook is gone goes alone. */
		if (ret == 1 && (ret = rows_hook_unref(b, seq, 1)) == -1)
			break;
		if ((ret = store_tdel(st, b->txn, T_ARCHIVE, k,
		    sizeof(k))) == -1)
			break;
		if (ret == 1) {
			log_warnx("store %s: archive entry of seq %" PRIu64
			    " without its kept hook: dropped", st->dir, seq);
			if (b->counts.ahooks > 0)
				b->counts.ahooks--;
		}
		*freed += before - b->counts.abytes;
		n++;
		ret = 1;
	}
	if (store_walk_done(&w, ret == -1 ? -1 : 0) == -1) {
		b->failed = 1;
		return -1;
	}
	return (int)n;
}

/*
 * One step of an archive replay: the entries after rp->cursor (its first
 * 16 bytes; from rp->since at first) kept up to rp->until and
 * rp->created_at, in time order, at most s->visits read and s->limit hooks
 * moved.  A hook of the job's source (any, with "") gets a new DUE row
 * due at s->now for each of its delivered records (rp->sink: that sink's
 * alone; a hook without it is passed over), with the job's replay id, no
 * lane (an ordered sink's replay is not ordered), and leaves the archive:
 * live rows n, counted in hooks and rows again.
 */
int
store_batch_archive_replay_step(struct store_batch *b,
    const unsigned char id[UUID_LEN], struct store_replay *rp,
    struct store_replay_step *s)
{
	struct store *st = b->st;
	struct store_hook_rec rec;
	struct store_delivered d;
	struct store_row r;
	struct cur c;
	unsigned char k[ARCHIVE_KEY_LEN], start[8], rk[STORE_ROWKEY_LEN];
	unsigned char head[HOOK_ROWS_OFF + 4], rows[STORE_ROWKEY_LEN * 64];
	uint8_t mods[64];
	uint64_t upto, read = 0, seq;
	uint32_t n, i;
	size_t vlen;
	struct walk w, dw;
	int ret, end = 0;

	if (!store_batch_ok(b))
		return -1;
	s->moved = s->dropped = 0;
	if (rp->kind != STORE_REPLAY_ARCHIVE) {
		store_seterr(st, 0, "store %s: archive step of a job of kind "
		    "%u", st->dir, rp->kind);
		goto fail;
	}
	upto = replay_step_start(b, rp, T_ARCHIVE, ARCHIVE_KEY_LEN, &w);
	while (s->moved < s->limit && read < s->visits) {
		if ((ret = store_walk_next(&w)) == -1)
			goto fail_walk;
		if (ret == 0 || (w.klen == ARCHIVE_KEY_LEN &&
		    rec_get_u64(w.key) > upto)) {
			end = 1;
			break;
		}
		if (w.klen != ARCHIVE_KEY_LEN)
			continue;
		read++;
		memcpy(k, w.key, sizeof(k));
		memcpy(rp->cursor, k, sizeof(k));
		seq = rec_get_u64(k + 8);
		store_walk_pause(&w);

		if ((ret = hooks_head_get(st, b->txn, T_HOOKS, seq,
		    &rec)) == -1)
			goto fail_walk;
		if (ret == 0 || !rec.kept) {
			if (ret == 1)
				store_hook_rec_free(&rec);
			s->dropped++;
			continue;
		}
		if (rp->source[0] != '\0' &&
		    strcmp(rec.hook.source, rp->source) != 0) {
			store_hook_rec_free(&rec);
			continue;
		}
		/* Its deliveries, the sinks to send to again. */
		n = 0;
		store_key_row(rk, seq, 0);
		store_walk_init(&dw, st, b->txn, T_DELIVERED, rk, sizeof(rk));
		while ((ret = store_walk_next(&dw)) == 1 && n < 64) {
			if (dw.klen != STORE_ROWKEY_LEN ||
			    rec_get_u64(dw.key) != seq)
				break;
			if (delivered_decode(st, dw.key, dw.val, dw.vlen,
			    &d) == -1 || (rp->sink != 0 &&
			    d.sink != rp->sink - 1))
				continue;
			memcpy(rows + n * STORE_ROWKEY_LEN, dw.key,
			    STORE_ROWKEY_LEN);
			mods[n++] = d.module;
		}
		if (store_walk_done(&dw, ret == -1 ? -1 : 0) == -1) {
			store_hook_rec_free(&rec);
			goto fail_walk;
		}
		if (n == 0) {
			store_hook_rec_free(&rec);
			continue;
		}
		memset(&r, 0, sizeof(r));
		snprintf(r.tenant, sizeof(r.tenant), "%s", rec.hook.tenant);
		snprintf(r.source, sizeof(r.source), "%s", rec.hook.source);
		r.body_size = rec.body_size;
		store_hook_rec_free(&rec);
		r.due = s->now;
		r.state = STORE_ROW_DUE;
		memcpy(r.replay_id, id, UUID_LEN);
		for (i = 0; i < n; i++) {
			r.module = mods[i];
			r.sink_index = rec_get_u32(rows + i * STORE_ROWKEY_LEN +
			    8);
			if (rows_write(st, b->txn, rows + i * STORE_ROWKEY_LEN,
			    &r) == -1 || rows_due_put(st, b->txn, r.tenant,
			    r.due, rows + i * STORE_ROWKEY_LEN) == -1)
				goto fail_walk;
			keycount_row(b, rows + i * STORE_ROWKEY_LEN, &r, 1, 0);
		}
		/* Out of the archive: live again with n rows. */
		if (archive_entry_del(b, rec_get_u64(k), seq) == -1)
			goto fail_walk;
		store_key_hook(start, seq);
		if ((ret = store_cur_get(&c, st, b->txn, T_HOOKS, start,
		    sizeof(start), head, sizeof(head), &vlen)) == 1) {
			head[HOOK_HEAD_FLAGS] &= ~HOOK_FLAG_KEPT;
			rec_put_u32(head + HOOK_ROWS_OFF, n);
			ret = store_cur_patch(&c, HOOK_HEAD_FLAGS, head +
			    HOOK_HEAD_FLAGS, sizeof(head) - HOOK_HEAD_FLAGS);
		}
		if (store_cur_done(&c, ret == -1 ? -1 : 0) == -1)
			goto fail_walk;
		b->counts.hooks++;
		b->counts.rows += n;
		s->moved++;
	}
	if (store_walk_done(&w, 0) == -1)
		goto fail;
	return replay_step_save(b, id, rp, s, end);

 fail_walk:
	store_walk_done(&w, -1);
 fail:
	b->failed = 1;
	return -1;
}

int
store_archive_oldest(struct store *st, uint64_t *at)
{
	struct walk w;
	int ret;

	st->dberr[0] = '\0';
	store_walk_init(&w, st, NULL, T_ARCHIVE, "", 0);
	while ((ret = store_walk_next(&w)) == 1)
		if (w.klen == ARCHIVE_KEY_LEN) {
			*at = rec_get_u64(w.key);
			break;
		}
	return store_walk_done(&w, ret);
}
