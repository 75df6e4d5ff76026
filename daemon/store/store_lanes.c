/* SPDX-License-Identifier: ISC */
/*
 * store_lanes.c: the ordering lanes in the store: a lane's head, its members
 * waiting behind it, the marks of lanes with members, and the sweep that
 * promotes a lane's next member once its head has ended.  The layout of
 * lanes, members and marks is in store_rec.c's header comment.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store.h"
#include "store_int.h"

static int	 marked_tenants_fn(const char *, const unsigned char *, size_t,
		    void *);
static size_t	 row_lane(const struct store_row *, unsigned char *, size_t);
static int	 member_key(struct store *, const unsigned char *,
		    const struct store_row *, unsigned char *, size_t *,
		    unsigned char *, size_t *);
static int	 lane_head_get(struct store *, struct __db_txn *,
		    const unsigned char *, size_t, unsigned char *);
static int	 lane_first_member(struct store *, struct __db_txn *,
		    const unsigned char *, size_t, unsigned char *, size_t *,
		    unsigned char *);
static int	 lane_promote(struct store_batch *, const unsigned char *,
		    size_t);
static struct lane_resume *resume_find(struct store *,
		    const unsigned char *, size_t);
static void	 resume_set(struct store *, const unsigned char *, size_t,
		    const unsigned char *, size_t);

static int
marked_tenants_fn(const char *tenant, const unsigned char *key, size_t klen,
    void *arg)
{
	struct tenants_ctx *ctx = arg;

	return ctx->cb(tenant, ctx->arg) != 0;
}

int
store_marked_tenants(struct store *st, int (*cb)(const char *, void *),
    void *arg)
{
	struct tenants_ctx ctx;

	memset(&ctx, 0, sizeof(ctx));
	ctx.st = st;
	ctx.cb = cb;
	ctx.arg = arg;
	return rows_tenants(st, T_MARKS, marked_tenants_fn, &ctx);
}

uint64_t
store_lane_members(struct store *st)
{
	return st->batch_open ? st->batch.counts.lane_members :
	    st->counts.lane_members;
}

/*
 * Lanes.
 */

static size_t
row_lane(const struct store_row *r, unsigned char *lane, size_t lanesz)
{
	return store_key_lane(lane, lanesz, r->tenant, r->source,
	    r->sink_index, r->lane_hash);
}

/* The lane key of row r at rk (lane, STORE_KEY_MAX bytes) and its members
 * key (mk, STORE_KEY_MAX + 8).  0, or -1 when they do not fit. */
static int
member_key(struct store *st, const unsigned char *rk,
    const struct store_row *r, unsigned char *lane, size_t *lanelen,
    unsigned char *mk, size_t *mklen)
{
	if ((*lanelen = row_lane(r, lane, STORE_KEY_MAX)) == 0 ||
	    (*mklen = store_key_member(mk, STORE_KEY_MAX + 8, lane, *lanelen,
	    rec_get_u64(rk))) == 0) {
		store_seterr(st, 0, "store %s: lane key of seq %" PRIu64
		    " too long", st->dir, rec_get_u64(rk));
		return -1;
	}
	return 0;
}

/* The head row key in lane's lanes entry: 1, 0 none, -1 on a store error,
 * -2 a damaged entry (logged). */
static int
lane_head_get(struct store *st, struct __db_txn *txn,
    const unsigned char *lane, size_t lanelen, unsigned char *rk)
{
	unsigned char val[64];
	size_t vlen;
	int ret;

	if ((ret = store_tget(st, txn, T_LANES, lane, lanelen, val, sizeof(val),
	    &vlen)) != 1)
		return ret;
	if (store_rec_rowkey_decode("lanes", lane, lanelen, val, vlen, rk,
	    st->err, sizeof(st->err)) == -1) {
		log_warnx("store %s: %s", st->dir, st->err);
		return -2;
	}
	return 1;
}

/* Whether the row at rk is its lane's head: HEAD, or PARKED and named by
 * its lanes entry (a parked head).  1, 0, or -1 on a store error. */
int
lane_is_head(struct store_batch *b, const unsigned char *rk,
    const struct store_row *r)
{
	unsigned char lane[STORE_KEY_MAX], hk[STORE_ROWKEY_LEN];
	size_t lanelen;
	int ret;

	if (r->state == STORE_ROW_HEAD)
		return 1;
	if (r->state != STORE_ROW_PARKED ||
	    (lanelen = row_lane(r, lane, sizeof(lane))) == 0)
		return 0;
	if ((ret = lane_head_get(b->st, b->txn, lane, lanelen, hk)) == -1)
		return -1;
	return ret == 1 && memcmp(hk, rk, STORE_ROWKEY_LEN) == 0;
}

/* The lane's first member (lowest seq): 1 with its members key and row
 * key, 0 none, -1 on a store error. */
static int
lane_first_member(struct store *st, struct __db_txn *txn,
    const unsigned char *lane, size_t lanelen, unsigned char *mkey,
    size_t *mklen, unsigned char *rk)
{
	struct walk w;
	int ret;

	store_walk_init(&w, st, txn, T_MEMBERS, lane, lanelen);
	if ((ret = store_walk_next(&w)) == 1) {
		/* Lane keys have one layout: lane + seq is a member of lane
		 * only. */
		if (w.klen != lanelen + 8 || memcmp(w.key, lane, lanelen) != 0)
			ret = 0;
		else if (store_rec_rowkey_decode("members", w.key, w.klen,
		    w.val, w.vlen, rk, st->err, sizeof(st->err)) == -1) {
			/* The key still names the member's seq, not its
			 * sink: drop the entry as one gone. */
			log_warnx("store %s: %s", st->dir, st->err);
			memset(rk, 0, STORE_ROWKEY_LEN);
		}
		if (ret == 1) {
			memcpy(mkey, w.key, w.klen);
			*mklen = w.klen;
		}
	}
	return store_walk_done(&w, ret);
}

/* A MEMBER row is settled: its members entry goes, and the lane's mark with
 * its last member.  0, or -1 on a store error. */
int
lane_leave(struct store_batch *b, const unsigned char *rk,
    const struct store_row *r)
{
	struct store *st = b->st;
	unsigned char lane[STORE_KEY_MAX], mk[STORE_KEY_MAX + 8];
	unsigned char frk[STORE_ROWKEY_LEN];
	size_t lanelen, mklen;
	int ret;

	if (member_key(st, rk, r, lane, &lanelen, mk, &mklen) == -1)
		return -1;
	if ((ret = store_tdel(st, b->txn, T_MEMBERS, mk, mklen)) == -1)
		return -1;
	if (ret == 1 && b->counts.lane_members > 0)
		b->counts.lane_members--;
	if ((ret = lane_first_member(st, b->txn, lane, lanelen, mk, &mklen,
	    frk)) == -1)
		return -1;
	if (ret == 0 && store_tdel(st, b->txn, T_MARKS, lane, lanelen) == -1)
		return -1;
	return 0;
}

/* The row r at rk joins its lane as a MEMBER (written by the caller):
 * its members entry (lane, seq) and the lane's mark, lane_members + 1;
 * the sweep promotes it when the lane has no head.  0, or -1 on a store
 * error. */
int
lane_join(struct store_batch *b, const unsigned char *rk,
    const struct store_row *r)
{
	struct store *st = b->st;
	unsigned char lane[STORE_KEY_MAX], mk[STORE_KEY_MAX + 8];
	unsigned char val[1 + STORE_ROWKEY_LEN];
	size_t lanelen, mklen;

	if (member_key(st, rk, r, lane, &lanelen, mk, &mklen) == -1)
		return -1;
	if (store_put(st, b->txn, T_MEMBERS, mk, mklen, val,
	    store_rec_rowkey_encode(rk, val, sizeof(val)), 0) == -1 ||
	    store_put(st, b->txn, T_MARKS, lane, lanelen, val,
	    store_rec_empty_encode(val, sizeof(val)), 0) == -1)
		return -1;
	b->counts.lane_members++;
	return 0;
}

/* Promote the lane's first live member to its head (the lane has none):
 * members whose row is gone, damaged or not a MEMBER are dropped on the
 * way.  The mark goes once no member is left.  1 promoted, 0 no member
 * left, -1 on a store error. */
static int
lane_promote(struct store_batch *b, const unsigned char *lane,
    size_t lanelen)
{
	struct store *st = b->st;
	struct store_row r;
	unsigned char mk[STORE_KEY_MAX + 1], rk[STORE_ROWKEY_LEN];
	unsigned char val[1 + STORE_ROWKEY_LEN];
	char desc[256];
	size_t mklen;
	int ret, promoted = 0;

	for (;;) {
		if ((ret = lane_first_member(st, b->txn, lane, lanelen, mk,
		    &mklen, rk)) == -1)
			return -1;
		if (ret == 0)
			break;
		if (promoted)
			return 1;	/* and members left: the mark stays */
		if (store_tdel(st, b->txn, T_MEMBERS, mk, mklen) == -1)
			return -1;
		if (b->counts.lane_members > 0)
			b->counts.lane_members--;
		if ((ret = rows_read(st, b->txn, rk, &r)) == -1)
			return -1;
		if (ret != 1 || r.state != STORE_ROW_MEMBER) {
			rec_key_describe(T_MEMBERS, mk, mklen, desc,
			    sizeof(desc));
			log_warnx("store %s: member %s dropped: its row is %s",
			    st->dir, desc, ret == 0 ? "gone" : ret == -2 ?
			    "damaged" : "not a member");
			continue;
		}
		r.state = STORE_ROW_HEAD;
		if (rows_write(st, b->txn, rk, &r) == -1 ||
		    store_put(st, b->txn, T_LANES, lane, lanelen, val,
		    store_rec_rowkey_encode(rk, val, sizeof(val)), 0) == -1 ||
		    rows_due_put(st, b->txn, r.tenant, r.due, rk) == -1)
			return -1;
		promoted = 1;
	}
	if (store_tdel(st, b->txn, T_MARKS, lane, lanelen) == -1)
		return -1;
	return promoted;
}

/* The head at rk (its row r) ended: its lane goes to the next member.  A
 * lanes entry naming another row is left alone (that row is the head).
 * 0, or -1 on a store error. */
int
lane_release(struct store_batch *b, const unsigned char *rk,
    const struct store_row *r)
{
	struct store *st = b->st;
	unsigned char lane[STORE_KEY_MAX], hk[STORE_ROWKEY_LEN];
	size_t lanelen;
	int ret;

	if ((lanelen = row_lane(r, lane, sizeof(lane))) == 0) {
		store_seterr(st, 0, "store %s: lane key of seq %" PRIu64
		    " too long", st->dir, rec_get_u64(rk));
		return -1;
	}
	if ((ret = lane_head_get(st, b->txn, lane, lanelen, hk)) == -1)
		return -1;
	if (ret == 1 && memcmp(hk, rk, STORE_ROWKEY_LEN) != 0)
		return 0;
	if (store_tdel(st, b->txn, T_LANES, lane, lanelen) == -1 ||
	    lane_promote(b, lane, lanelen) == -1)
		return -1;
	return 0;
}

int
store_batch_lane_sweep(struct store_batch *b, const char *tenant,
    uint64_t now_ms, unsigned max)
{
	struct store *st = b->st;
	struct store_row r;
	struct lane_resume *res;
	unsigned char lane[STORE_KEY_MAX], hk[STORE_ROWKEY_LEN];
	unsigned char mk[STORE_KEY_MAX + 1], frk[STORE_ROWKEY_LEN];
	size_t plen, lanelen = 0, mklen;
	unsigned visited = 0;
	struct walk w;
	int ret, promoted = 0, alive;

	(void)now_ms;
	if (!store_batch_ok(b))
		return -1;
	if (tenant == NULL || (plen = strlen(tenant)) > STORE_NAME_MAX) {
		store_seterr(st, 0, "store %s: lane sweep of a bad tenant",
		    st->dir);
		goto fail;
	}
	if (max == 0)
		return 0;
	store_walk_init(&w, st, b->txn, T_MARKS, tenant, plen + 1);
	if ((res = resume_find(st, (const unsigned char *)tenant,
	    plen + 1)) != NULL) {
		store_walk_seek(&w, res->key, res->len);
		w.at = 0;	/* after the last lane visited */
	}
	while (visited < max) {
		if ((ret = store_walk_next(&w)) == -1)
			goto fail_walk;
		if (ret == 0 || w.klen <= plen ||
		    memcmp(w.key, tenant, plen + 1) != 0) {
			lanelen = 0;	/* the tenant's end: start over next */
			break;
		}
		lanelen = w.klen;
		memcpy(lane, w.key, lanelen);
		store_walk_pause(&w);
		visited++;

		if ((ret = lane_head_get(st, b->txn, lane, lanelen,
		    hk)) == -1)
			goto fail_walk;
		alive = 0;
		if (ret == 1) {
			if ((ret = rows_read(st, b->txn, hk, &r)) == -1)
				goto fail_walk;
			alive = ret == 1 && rows_pending(&r);
			if (!alive)
				log_warnx("store %s: lane head seq %" PRIu64
				    " sink %u is %s: releasing its lane",
				    st->dir, rec_get_u64(hk),
				    rec_get_u32(hk + 8),
				    ret == 0 ? "gone" : ret == -2 ?
				    "damaged" : "no longer pending");
		} else if (ret == -2)
			log_warnx("store %s: damaged lanes entry: releasing "
			    "its lane", st->dir);
		if (alive) {
			/* A live head: nothing to do unless no member is
			 * left behind it. */
			if ((ret = lane_first_member(st, b->txn, lane,
			    lanelen, mk, &mklen, frk)) == -1)
				goto fail_walk;
			if (ret == 0 && store_tdel(st, b->txn, T_MARKS, lane,
			    lanelen) == -1)
				goto fail_walk;
			continue;
		}
		if (store_tdel(st, b->txn, T_LANES, lane, lanelen) == -1 ||
		    (ret = lane_promote(b, lane, lanelen)) == -1)
			goto fail_walk;
		promoted += ret;
	}
	if (store_walk_done(&w, 0) == -1)
		goto fail;
	resume_set(st, (const unsigned char *)tenant, plen + 1, lane,
	    visited == max ? lanelen : 0);
	return promoted;

 fail_walk:
	store_walk_done(&w, -1);
 fail:
	b->failed = 1;
	return -1;
}

/* The resume point of the tenant whose marks keys start with prefix. */
static struct lane_resume *
resume_find(struct store *st, const unsigned char *prefix, size_t plen)
{
	struct lane_resume *r;

	for (r = st->resume; r != NULL; r = r->next)
		if (r->len > plen && memcmp(r->key, prefix, plen) == 0)
			return r;
	return NULL;
}

/* Remember lane (len 0: forget) as where the tenant's sweep goes on.  Out
 * of memory only costs fairness: the next sweep starts over. */
static void
resume_set(struct store *st, const unsigned char *prefix, size_t plen,
    const unsigned char *lane, size_t len)
{
	struct lane_resume *r, **rp;

	for (rp = &st->resume; (r = *rp) != NULL; rp = &r->next)
		if (r->len > plen && memcmp(r->key, prefix, plen) == 0)
			break;
	if (len == 0 || len > sizeof(r->key)) {
		if (r != NULL) {
			*rp = r->next;
			free(r);
		}
		return;
	}
	if (r == NULL) {
		if ((r = calloc(1, sizeof(*r))) == NULL)
			return;
		r->next = st->resume;
		st->resume = r;
	}
	memcpy(r->key, lane, len);
	r->len = len;
}
