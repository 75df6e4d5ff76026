/* SPDX-License-Identifier: ISC */
/*
 * store_hookids.c: finding a hook by the id its provider and its sinks
 * know, for the admin API and ankusactl.
 *
 * A new hook's id carries the low UUID_SEQ_BITS bits of its seq
 * (common/ids.h; the writer asks for it, store_batch_put_hook writes them,
 * and flags the hook HOOK_FLAG_IDSEQ, schema 4): the hooks whose seq has
 * those bits are read, newest first, until one has the whole id and the
 * flag.  Below 2^24 hooks ever stored that is one read; each 2^24 more
 * adds one to a lookup that finds nothing, and to the lookup of an id
 * that does not carry its seq, which then asks the index below.  This
 * saves every hook a put and a delete in the index, and their log
 * records.
 *
 * The index (table hookids): a hook's 16-byte id -> its seq (u64,
 * big-endian), for the ids that do not carry their seq: hooks stored
 * before schema 4, and a hook released from the pen (its id was given
 * out with the pen's seq, and the release gives it a new one).
 *
 * An entry is written with its hook (store_batch_put_hook, a release from
 * the pen too: the same id, a new seq) and deleted with it, in the same
 * transaction.  Ids are UUIDv7, time-ordered, so entries land at the
 * tree's right edge as hooks do.  A store of schema 2 has no index: the
 * open builds it (hookids_upgrade).  No libdb here: the tables are
 * reached through store.c's wrappers.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "ids.h"
#include "log.h"
#include "store.h"
#include "store_int.h"
#include "store_rec.h"

#define HOOKIDS_UPGRADE_TXN	1024	/* entries a transaction */
#define HOOKIDS_REC_LEN		9	/* version, seq */
#define IDSEQ_SPAN		(UINT64_C(1) << UUID_SEQ_BITS)

int
hookids_put(struct store_batch *b, const unsigned char id[UUID_LEN],
    uint64_t seq)
{
	unsigned char v[HOOKIDS_REC_LEN];

	v[0] = STORE_REC_VERSION;
	rec_put_u64(v + 1, seq);
	return store_put(b->st, b->txn, T_HOOKIDS, id, UUID_LEN, v, sizeof(v),
	    0) == -1 ? -1 : 0;
}

/* The seq an entry holds: 1, 0 when there is none, -1 on damage. */
static int
hookids_get(struct store *st, struct __db_txn *txn,
    const unsigned char id[UUID_LEN], uint64_t *seq)
{
	unsigned char v[HOOKIDS_REC_LEN + 1];
	size_t vlen;
	int ret;

	if ((ret = store_tget(st, txn, T_HOOKIDS, id, UUID_LEN, v, sizeof(v),
	    &vlen)) != 1)
		return ret;
	if (rec_version(T_HOOKIDS, id, UUID_LEN, v, vlen, st->err,
	    sizeof(st->err)) == -1)
		return -1;
	if (vlen != HOOKIDS_REC_LEN)
		return rec_malformed(T_HOOKIDS, id, UUID_LEN, "not 9 bytes",
		    st->err, sizeof(st->err));
	*seq = rec_get_u64(v + 1);
	return 1;
}

/* The entry goes only while it names seq: a later hook of the same id (a
 * release) keeps its own.  0, or -1 on a store error. */
int
hookids_del(struct store_batch *b, const unsigned char id[UUID_LEN],
    uint64_t seq)
{
	uint64_t at;
	int ret;

	if ((ret = hookids_get(b->st, b->txn, id, &at)) != 1)
		return ret;
	if (at != seq)
		return 0;
	return store_tdel(b->st, b->txn, T_HOOKIDS, id, UUID_LEN) == -1 ?
	    -1 : 0;
}

/* The hook whose id is id and carries its seq: 1 (*seq), 0 none, -1 on a
 * store error. */
static int
idseq_find(struct store *st, struct __db_txn *txn,
    const unsigned char id[UUID_LEN], uint64_t *seq)
{
	unsigned char hk[8], head[HOOK_HEAD_FLAGS + 1 + UUID_LEN];
	uint64_t low = uuid_seq_low(id), top, s;
	size_t vlen;
	int ret;

	/* Past the newest seq given out (a client's from meta: its tables
	 * change under it). */
	if (store_seq_bound(st, &top) == -1)
		return -1;
	if (top == 0)
		return 0;
	top--;
	s = (top & ~(IDSEQ_SPAN - 1)) + low;
	if (s > top) {
		if (s < IDSEQ_SPAN)
			return 0;
		s -= IDSEQ_SPAN;
	}
	for (;;) {
		store_key_hook(hk, s);
		if ((ret = store_tget_head(st, txn, T_HOOKS, hk, sizeof(hk),
		    head, sizeof(head), &vlen)) == -1)
			return -1;
		if (ret == 1 && vlen == sizeof(head) &&
		    head[0] == STORE_REC_VERSION &&
		    (head[HOOK_HEAD_FLAGS] & HOOK_FLAG_IDSEQ) &&
		    memcmp(head + HOOK_HEAD_FLAGS + 1, id, UUID_LEN) == 0) {
			*seq = s;
			return 1;
		}
		if (s < IDSEQ_SPAN)
			return 0;
		s -= IDSEQ_SPAN;
	}
}

int
store_hook_seq(struct store *st, const unsigned char id[UUID_LEN],
    uint64_t *seq)
{
	int ret;

	if ((ret = idseq_find(st, store_readtxn(st), id, seq)) != 0)
		return ret;
	return hookids_get(st, store_readtxn(st), id, seq);
}

/*
 * Schema 2 to 3: an entry for every stored hook, in synced transactions
 * of HOOKIDS_UPGRADE_TXN hooks; the last writes schema 3.  Entries are
 * put, not added, so an upgrade cut short goes on from the start and
 * writes the same again.  0, or -1 on a store error.
 */
int
hookids_upgrade(struct store *st)
{
	struct store_batch *b;
	struct walk w;
	unsigned char from[8], v5[5];
	uint64_t seq = 0, n = 0;
	int ret, i;

	log_info("store %s: indexing the hooks by id (schema 2 to 3)",
	    st->dir);
	store_key_hook(from, 0);
	for (;;) {
		if ((b = store_batch_begin(st)) == NULL)
			return -1;
		store_walk_init(&w, st, b->txn, T_HOOKS, from, sizeof(from));
		for (i = 0; i < HOOKIDS_UPGRADE_TXN &&
		    (ret = store_walk_next(&w)) == 1; i++) {
			if (w.klen != 8)
				continue;
			seq = rec_get_u64(w.key);
			/* The head: version, head length, flags, then
			 * the id. */
			if (w.vlen < HOOK_HEAD_FLAGS + 1 + UUID_LEN ||
			    w.val[0] != STORE_REC_VERSION) {
				log_warnx("store %s: hook seq %" PRIu64 ": "
				    "damaged head, not indexed by id",
				    st->dir, seq);
				continue;
			}
			if (hookids_put(b, w.val + HOOK_HEAD_FLAGS + 1,
			    seq) == -1)
				break;
			n++;
		}
		if (i == HOOKIDS_UPGRADE_TXN)
			ret = 1;
		if (store_walk_done(&w, ret == -1 ? -1 : 0) == -1 ||
		    ret == -1 || !store_batch_ok(b)) {
			store_batch_abort(b);
			return -1;
		}
		if (ret == 0) {
			v5[0] = STORE_REC_VERSION;
			rec_put_u32(v5 + 1, STORE_SCHEMA_VERSION);
			if (store_put(st, b->txn, T_META, "schema", 6, v5,
			    sizeof(v5), 0) == -1) {
				store_batch_abort(b);
				return -1;
			}
		}
		if (store_batch_commit(b) == -1)
			return -1;
		if (ret == 0)
			break;
		store_key_hook(from, seq + 1);
	}
	st->schema = STORE_SCHEMA_VERSION;
	log_info("store %s: %" PRIu64 " hooks indexed by id", st->dir, n);
	return 0;
}

/*
 * Schema 3 to 4: nothing to rewrite (hooks stored before keep their
 * entries, and are found by them), only the number, so that a build that
 * cannot read HOOK_FLAG_IDSEQ refuses the store at its open instead of
 * calling its new hooks damaged.  0, or -1 on a store error.
 */
int
hookids_schema_idseq(struct store *st)
{
	struct store_batch *b;
	unsigned char v5[5];

	if ((b = store_batch_begin(st)) == NULL)
		return -1;
	v5[0] = STORE_REC_VERSION;
	rec_put_u32(v5 + 1, STORE_SCHEMA_VERSION);
	if (store_put(st, b->txn, T_META, "schema", 6, v5, sizeof(v5), 0) ==
	    -1) {
		store_batch_abort(b);
		return -1;
	}
	if (store_batch_commit(b) == -1)
		return -1;
	st->schema = STORE_SCHEMA_VERSION;
	log_info("store %s: schema %u: new hooks' ids carry their seq",
	    st->dir, STORE_SCHEMA_VERSION);
	return 0;
}
