/* SPDX-License-Identifier: ISC */
/*
 * store_replay.c: replay jobs in the store: the records of table replays
 * and the step of a dlq job, which moves dead rows back to due with the
 * job's cursor in one transaction; see store.h.  The layout of replays is
 * in store_rec.c's header comment.
 *
 * A moved row keeps its last error (what made it die, until the next
 * attempt says otherwise) and its identity; it takes the job's id as its
 * replay id, which its deliveries carry.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ids.h"
#include "log.h"
#include "store.h"
#include "store_int.h"

static int	 dead_drop(struct store_batch *, const unsigned char *);
static int	 row_revive(struct store_batch *, const unsigned char *,
		    struct store_row *, const unsigned char *, uint64_t);

int
store_batch_replay_put(struct store_batch *b, const unsigned char id[UUID_LEN],
    const struct store_replay *rp)
{
	struct store *st = b->st;
	unsigned char val[STORE_REC_MAX];
	size_t vlen;

	if (!store_batch_ok(b))
		return -1;
	if ((vlen = store_rec_replay_encode(rp, val, sizeof(val))) == 0) {
		store_seterr(st, 0, "store %s: replay job: cannot encode",
		    st->dir);
		goto fail;
	}
	if (store_put(st, b->txn, T_REPLAYS, id, UUID_LEN, val, vlen, 0) == -1)
		goto fail;
	return 0;

 fail:
	b->failed = 1;
	return -1;
}

int
store_batch_replay_del(struct store_batch *b, const unsigned char id[UUID_LEN])
{
	int ret;

	if (!store_batch_ok(b))
		return -1;
	if ((ret = store_tdel(b->st, b->txn, T_REPLAYS, id, UUID_LEN)) == -1)
		b->failed = 1;
	return ret;
}

int
store_replay_get(struct store *st, const unsigned char id[UUID_LEN],
    struct store_replay *rp)
{
	unsigned char val[STORE_REC_MAX];
	size_t vlen;
	int ret;

	st->dberr[0] = '\0';
	if ((ret = store_tget(st, store_readtxn(st), T_REPLAYS, id, UUID_LEN,
	    val, sizeof(val), &vlen)) != 1)
		return ret;
	if (store_rec_replay_decode(id, UUID_LEN, val, vlen, rp, st->err,
	    sizeof(st->err)) == -1)
		return -1;
	return 1;
}

int
store_replay_list(struct store *st,
    int (*cb)(const unsigned char *, const struct store_replay *, void *),
    void *arg)
{
	struct store_replay rp;
	unsigned char id[UUID_LEN];
	struct walk w;
	int ret;

	st->dberr[0] = '\0';
	store_walk_init(&w, st, NULL, T_REPLAYS, "", 0);
	while ((ret = store_walk_next(&w)) == 1) {
		if (w.klen != UUID_LEN) {
			log_warnx("store %s/replays.db: damaged key of %zu "
			    "bytes skipped", st->dir, w.klen);
			continue;
		}
		if (store_rec_replay_decode(w.key, w.klen, w.val, w.vlen, &rp,
		    st->err, sizeof(st->err)) == -1) {
			log_warnx("store %s: %s: skipped", st->dir, st->err);
			continue;
		}
		memcpy(id, w.key, UUID_LEN);
		store_walk_pause(&w);
		if (cb(id, &rp, arg) != 0)
			break;
	}
	return store_walk_done(&w, ret == -1 ? -1 : 0);
}

/* The dead entry dk goes, and the dead counter with it.  0, or -1. */
static int
dead_drop(struct store_batch *b, const unsigned char *dk)
{
	int ret;

	if ((ret = store_tdel(b->st, b->txn, T_DEAD, dk,
	    STORE_DEADKEY_LEN)) == -1)
		return -1;
	if (ret == 1 && b->counts.dead > 0)
		b->counts.dead--;
	return 0;
}

/* The DEAD row r at rk becomes due at now for job id, or a member of its
 * lane when it has one (a lane hash: only ordered rows are written with
 * one).  0, or -1 on a store error. */
static int
row_revive(struct store_batch *b, const unsigned char *rk,
    struct store_row *r, const unsigned char *id, uint64_t now)
{
	struct store *st = b->st;

	r->attempts = 0;
	r->first_attempt = 0;
	r->due = now;
	memcpy(r->replay_id, id, UUID_LEN);
	r->state = r->lane_hash != 0 ? STORE_ROW_MEMBER : STORE_ROW_DUE;
	if (rows_write(st, b->txn, rk, r) == -1)
		return -1;
	keycount_row(b, rk, r, 1, -1);
	if (r->state == STORE_ROW_MEMBER)
		return lane_join(b, rk, r);
	return rows_due_put(st, b->txn, r->tenant, now, rk);
}

int
store_batch_replay_step(struct store_batch *b,
    const unsigned char id[UUID_LEN], struct store_replay *rp,
    struct store_replay_step *s)
{
	struct store *st = b->st;
	struct store_row r;
	unsigned char dk[STORE_DEADKEY_LEN], hk[8];
	const unsigned char *rk;
	uint64_t upto, read = 0;
	size_t vlen;
	struct walk w;
	int ret, rr, end = 0;

	if (!store_batch_ok(b))
		return -1;
	s->moved = s->dropped = 0;
	if (rp->kind != STORE_REPLAY_DLQ) {
		store_seterr(st, 0, "store %s: replay step of a job of kind %u",
		    st->dir, rp->kind);
		goto fail;
	}
	upto = replay_step_start(b, rp, T_DEAD, STORE_DEADKEY_LEN, &w);
	while (s->moved < s->limit && read < s->visits) {
		if ((ret = store_walk_next(&w)) == -1)
			goto fail_walk;
		if (ret == 0) {
			end = 1;
			break;
		}
		if (w.klen != STORE_DEADKEY_LEN) {
			log_warnx("store %s/dead.db: damaged key of %zu bytes "
			    "skipped", st->dir, w.klen);
			continue;
		}
		/* Keys sort by dead time: past the bound, the job is done
		 * (rows that die again later are not its rows). */
		if (rec_get_u64(w.key) > upto) {
			end = 1;
			break;
		}
		read++;
		memcpy(dk, w.key, sizeof(dk));
		memcpy(rp->cursor, dk, sizeof(dk));
		rk = dk + 8;
		store_walk_pause(&w);

		if ((rr = rows_read(st, b->txn, rk, &r)) == -1)
			goto fail_walk;
		if (rr != 1 || r.state != STORE_ROW_DEAD) {
			log_warnx("store %s: dead entry of seq %" PRIu64 " sink "
			    "%u dropped: its row is %s", st->dir,
			    rec_get_u64(rk), rec_get_u32(rk + 8), rr == 0 ?
			    "gone" : rr == -2 ? "damaged" : "not dead");
			if (dead_drop(b, dk) == -1)
				goto fail_walk;
			s->dropped++;
			continue;
		}
		if (rp->source[0] != '\0' && strcmp(r.source, rp->source) != 0)
			continue;
		store_key_hook(hk, rec_get_u64(rk));
		if ((ret = store_tget_head(st, b->txn, T_HOOKS, hk, sizeof(hk),
		    hk, 0, &vlen)) == -1)
			goto fail_walk;
		if (ret == 0) {
			/* An orphan could never be delivered: it goes. */
			log_warnx("store %s: dead row seq %" PRIu64 " sink %u "
			    "dropped: its hook is gone", st->dir,
			    rec_get_u64(rk), rec_get_u32(rk + 8));
			if (store_tdel(st, b->txn, T_ROWS, rk,
			    STORE_ROWKEY_LEN) == -1 || dead_drop(b, dk) == -1)
				goto fail_walk;
			if (b->counts.rows > 0)
				b->counts.rows--;
			keycount_row(b, rk, &r, 0, -1);
			s->dropped++;
			continue;
		}
		if (row_revive(b, rk, &r, id, s->now) == -1 ||
		    dead_drop(b, dk) == -1)
			goto fail_walk;
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

/* A step's start: the walk of table t (keys of keylen bytes, a u64 time
 * first) after the job's cursor, or from its since at first; the last
 * time it goes to (its until, its creation time). */
uint64_t
replay_step_start(struct store_batch *b, const struct store_replay *rp,
    int t, size_t keylen, struct walk *w)
{
	static const unsigned char zero[STORE_DEADKEY_LEN];
	unsigned char start[8];
	uint64_t upto = rp->created_at;

	if (rp->until != 0 && rp->until < upto)
		upto = rp->until;
	if (memcmp(rp->cursor, zero, keylen) == 0) {
		rec_put_u64(start, rp->since);
		store_walk_init(w, b->st, b->txn, t, start, sizeof(start));
	} else {
		store_walk_init(w, b->st, b->txn, t, rp->cursor, keylen);
		w->at = 0;	/* after the last key passed */
	}
	return upto;
}

/* A step's end: its counts into the job, DONE at its end, the job
 * written in the step's batch.  1 more may follow, 0 done, -1 on a store
 * error (the batch failed). */
int
replay_step_save(struct store_batch *b, const unsigned char *id,
    struct store_replay *rp, const struct store_replay_step *s, int end)
{
	rp->moved += s->moved;
	rp->dropped += s->dropped;
	if (end)
		rp->state = STORE_REPLAY_DONE;
	if (store_batch_replay_put(b, id, rp) == -1) {
		b->failed = 1;
		return -1;
	}
	return !end;
}
