/* SPDX-License-Identifier: ISC */
/*
 * store_meta.c: the meta table of the store (store.c): its records read
 * at the open (next seq, counters, schema, store id) and checked against
 * the tables, written at a new store's first open and by each batch that
 * changes them, and the /ready probe.  See store_rec.c for the records'
 * encoding.
 */
#include "config.h"

#include <db.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "log.h"
#include "store.h"
#include "store_int.h"
#include "store_rec.h"

static int	 store_init_meta(struct store *, char *, size_t);
static int	 store_last_seq(struct store *, int, uint64_t *);
static int	 store_meta_get(struct store *, DB_TXN *, const char *,
		    unsigned char *, size_t, size_t *);
static int	 store_meta_put(struct store *, DB_TXN *, const char *,
		    const void *, size_t);
static int	 store_load_lane_members(struct store *, char *, size_t);

int
store_load_meta(struct store *st, char *err, size_t errlen)
{
	unsigned char buf[64];
	uint64_t last;
	uint32_t schema;
	size_t len;
	int ret;

	ret = store_meta_get(st, NULL, "schema", buf, sizeof(buf), &len);
	if (ret == DB_NOTFOUND) {
		DBC *c;
		DBT k, v;

		/* No schema: a new store, but only if meta is empty. */
		if ((ret = st->db[T_META]->cursor(st->db[T_META], NULL, &c,
		    0)) != 0) {
			store_seterr(st, ret, "store %s/meta.db: cursor",
			    st->dir);
			goto fail;
		}
		memset(&k, 0, sizeof(k));
		memset(&v, 0, sizeof(v));
		ret = c->get(c, &k, &v, DB_FIRST);
		c->close(c);
		if (ret == 0) {
			store_seterr(st, 0, "store %s/meta.db: damaged: no "
			    "schema record", st->dir);
			goto fail;
		}
		if (ret != DB_NOTFOUND) {
			store_seterr(st, ret, "store %s/meta.db: damaged "
			    "database file", st->dir);
			goto fail;
		}
		return store_init_meta(st, err, errlen);
	}
	if (ret != 0)
		goto fail;
	if (len != 5) {
		store_seterr(st, 0, "store %s/meta.db: damaged: meta record "
		    "\"schema\" has %zu bytes", st->dir, len);
		goto fail;
	}
	schema = rec_get_u32(buf + 1);
	if (schema > STORE_SCHEMA_VERSION) {
		store_seterr(st, 0, "store %s/meta.db: schema version %u is "
		    "newer than this build (%u); run a newer ankusad", st->dir,
		    schema, STORE_SCHEMA_VERSION);
		goto fail;
	}
	if (schema < 1) {
		store_seterr(st, 0, "store %s/meta.db: damaged: schema "
		    "version %u", st->dir, schema);
		goto fail;
	}
	/* Schema 1 may hold bodies in the log: store_open moves them
	 * (bodies_upgrade) before anything else reads the store. */
	st->schema = schema;

	if (store_meta_u64(st, "next_seq", &st->next_seq, 0, err,
	    errlen) == -1 ||
	    store_meta_u64(st, "hooks", &st->counts.hooks, 0, err, errlen) ==
	    -1 ||
	    store_meta_u64(st, "rows", &st->counts.rows, 0, err, errlen) == -1 ||
	    store_meta_u64(st, "dead", &st->counts.dead, 0, err, errlen) == -1 ||
	    store_meta_u64(st, "qhooks", &st->counts.qhooks, 1, err,
	    errlen) == -1 ||
	    store_meta_u64(st, "qbytes", &st->counts.qbytes, 1, err,
	    errlen) == -1 ||
	    store_load_lane_members(st, err, errlen) == -1 ||
	    store_meta_u64(st, "ahooks", &st->counts.ahooks, 1, err,
	    errlen) == -1 ||
	    store_meta_u64(st, "abytes", &st->counts.abytes, 1, err,
	    errlen) == -1)
		return -1;
	st->seq_saved = st->next_seq;
	ret = store_meta_get(st, NULL, "store_id", buf, sizeof(buf), &len);
	if (ret == 0 && len != 17) {
		store_seterr(st, 0, "store %s/meta.db: damaged: meta record "
		    "\"store_id\" has %zu bytes", st->dir, len);
		goto fail;
	}
	if (ret == DB_NOTFOUND)
		store_seterr(st, 0, "store %s/meta.db: damaged: no store_id "
		    "record", st->dir);
	if (ret != 0)
		goto fail;
	memcpy(st->id, buf + 1, sizeof(st->id));

	/* A seq in a table at or past next_seq would be reused: refuse.
	 * Not on a client of a replication group, whose tables change
	 * between the reads as the master's transactions are applied: the
	 * check is the master's, made at the open that makes one. */
	if (st->client)
		return 0;
	if (store_last_seq(st, T_HOOKS, &last) == -1)
		goto fail;
	if (last != 0 && last >= st->next_seq) {
		store_seterr(st, 0, "store %s/meta.db: damaged: next_seq "
		    "%" PRIu64 " but hooks.db holds seq %" PRIu64, st->dir,
		    st->next_seq, last);
		goto fail;
	}
	if (store_last_seq(st, T_QUARANTINE, &last) == -1)
		goto fail;
	if (last != 0 && last >= st->next_seq) {
		store_seterr(st, 0, "store %s/meta.db: damaged: next_seq "
		    "%" PRIu64 " but quarantine.db holds seq %" PRIu64,
		    st->dir, st->next_seq, last);
		goto fail;
	}
	return 0;

 fail:
	snprintf(err, errlen, "%s", st->err);
	return -1;
}

static int
store_init_meta(struct store *st, char *err, size_t errlen)
{
	unsigned char v[17];
	uint64_t last;
	DB_TXN *txn;
	int ret;

	if (store_last_seq(st, T_HOOKS, &last) == -1)
		goto fail;
	if (last != 0) {
		store_seterr(st, 0, "store %s/meta.db: damaged: empty, but "
		    "hooks.db holds hooks", st->dir);
		goto fail;
	}
	ids_random(st->id, sizeof(st->id));
	st->schema = STORE_SCHEMA_VERSION;
	st->next_seq = st->seq_saved = 1;
	memset(&st->counts, 0, sizeof(st->counts));
	if ((ret = st->env->txn_begin(st->env, NULL, &txn, 0)) != 0) {
		store_seterr(st, ret, "store %s: txn_begin", st->dir);
		goto fail;
	}
	v[0] = STORE_REC_VERSION;
	rec_put_u32(v + 1, STORE_SCHEMA_VERSION);
	if (store_meta_put(st, txn, "schema", v, 5) == -1)
		goto abort;
	v[0] = STORE_REC_VERSION;
	memcpy(v + 1, st->id, sizeof(st->id));
	if (store_meta_put(st, txn, "store_id", v, 17) == -1 ||
	    store_meta_put_u64(st, txn, "next_seq", 1) == -1 ||
	    store_meta_put_u64(st, txn, "hooks", 0) == -1 ||
	    store_meta_put_u64(st, txn, "rows", 0) == -1 ||
	    store_meta_put_u64(st, txn, "dead", 0) == -1 ||
	    store_meta_put_u64(st, txn, "qhooks", 0) == -1 ||
	    store_meta_put_u64(st, txn, "qbytes", 0) == -1 ||
	    store_meta_put_u64(st, txn, "lane_members", 0) == -1)
		goto abort;
	if ((ret = txn->commit(txn, 0)) != 0) {
		store_seterr(st, ret, "store %s/meta.db: create", st->dir);
		goto fail;
	}
	log_info("store %s: created", st->dir);
	return 0;

 abort:
	txn->abort(txn);
 fail:
	snprintf(err, errlen, "%s", st->err);
	return -1;
}

/* The highest seq key of hooks or quarantine, 0 when empty. */
static int
store_last_seq(struct store *st, int t, uint64_t *seq)
{
	unsigned char kb[8];
	DBC *c;
	DBT k, v;
	int ret;

	*seq = 0;
	if ((ret = st->db[t]->cursor(st->db[t], NULL, &c, 0)) != 0)
		goto fail;
	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = kb;
	k.ulen = sizeof(kb);
	k.flags = DB_DBT_USERMEM;
	v.flags = DB_DBT_PARTIAL;
	ret = c->get(c, &k, &v, DB_LAST);
	c->close(c);
	if (ret == DB_NOTFOUND)
		return 0;
	if (ret != 0)
		goto fail;
	if (k.size != 8) {
		store_seterr(st, 0, "store %s/%s.db: damaged: key of %u bytes",
		    st->dir, store_tables[t], k.size);
		return -1;
	}
	*seq = rec_get_u64(kb);
	return 0;

 fail:
	store_seterr(st, ret, "store %s/%s.db: damaged database file",
	    st->dir, store_tables[t]);
	return -1;
}

static int
store_meta_get(struct store *st, DB_TXN *txn, const char *name,
    unsigned char *buf, size_t bufsz, size_t *lenp)
{
	DBT k, v;
	int ret;

	memset(&k, 0, sizeof(k));
	memset(&v, 0, sizeof(v));
	k.data = (void *)name;
	k.size = strlen(name);
	v.data = buf;
	v.ulen = bufsz;
	v.flags = DB_DBT_USERMEM;
	ret = st->db[T_META]->get(st->db[T_META], txn, &k, &v, 0);
	if (ret == DB_NOTFOUND)
		return ret;
	if (ret == DB_BUFFER_SMALL) {
		store_seterr(st, 0, "store %s/meta.db: damaged: meta record "
		    "\"%s\" has %u bytes", st->dir, name, v.size);
		return -1;
	}
	if (ret != 0) {
		store_seterr(st, ret, "store %s/meta.db: read \"%s\"",
		    st->dir, name);
		return -1;
	}
	if (v.size < 1 || buf[0] != STORE_REC_VERSION) {
		store_seterr(st, 0, "store %s/meta.db: meta record \"%s\" has "
		    "format version %u, this build reads %u", st->dir, name,
		    v.size < 1 ? 0 : buf[0], STORE_REC_VERSION);
		return -1;
	}
	*lenp = v.size;
	return 0;
}

/*
 * A u64 meta record.  0 with *val; 1 when it is missing and missing_ok (a
 * counter added after schema 1 shipped: a store from before it has no
 * record; a missing "hooks" is damage, missing_ok 0); -1 on damage.
 */
int
store_meta_u64(struct store *st, const char *name, uint64_t *val,
    int missing_ok, char *err, size_t errlen)
{
	unsigned char buf[16];
	size_t len;
	int ret;

	ret = store_meta_get(st, NULL, name, buf, sizeof(buf), &len);
	if (ret == 0 && len == 9) {
		*val = rec_get_u64(buf + 1);
		return 0;
	}
	if (ret == DB_NOTFOUND && missing_ok) {
		*val = 0;
		return 1;
	}
	if (ret == DB_NOTFOUND)
		store_seterr(st, 0, "store %s/meta.db: damaged: no \"%s\" "
		    "record", st->dir, name);
	else if (ret == 0)
		store_seterr(st, 0, "store %s/meta.db: damaged: meta record "
		    "\"%s\" has %zu bytes", st->dir, name, len);
	snprintf(err, errlen, "%s", st->err);
	return -1;
}

/* meta "lane_members"; a store from before it has none: count members
 * once (a walk at open) and write it with the next commit. */
static int
store_load_lane_members(struct store *st, char *err, size_t errlen)
{
	int64_t n;
	int ret;

	ret = store_meta_u64(st, "lane_members", &st->counts.lane_members, 1,
	    err, errlen);
	if (ret != 1)
		return ret;
	if ((n = store_debug_count(st, "members")) < 0) {
		snprintf(err, errlen, "%s", st->err);
		return -1;
	}
	st->counts.lane_members = n;
	st->lm_unsaved = 1;
	return 0;
}

static int
store_meta_put(struct store *st, DB_TXN *txn, const char *name,
    const void *val, size_t len)
{
	return store_put(st, txn, T_META, name, strlen(name), val, len, 0);
}

int
store_meta_put_u64(struct store *st, DB_TXN *txn, const char *name,
    uint64_t n)
{
	unsigned char v[9];

	v[0] = STORE_REC_VERSION;
	rec_put_u64(v + 1, n);
	return store_meta_put(st, txn, name, v, sizeof(v));
}

/* A synced write of meta "probe" (the time), for the admin API's /ready:
 * 0 when it is durable, -1 (store_strerror) when the store cannot take
 * one now. */
int
store_ready_probe(struct store *st, uint64_t now_ms)
{
	struct store_batch *b;

	if ((b = store_batch_begin(st)) == NULL)
		return -1;
	if (store_meta_put_u64(st, b->txn, "probe", now_ms) != 0) {
		store_batch_abort(b);
		return -1;
	}
	return store_batch_commit(b);
}

int
store_probe_ms(struct store *st, uint64_t *ms)
{
	char err[256];

	return store_meta_u64(st, "probe", ms, 1, err, sizeof(err)) == -1 ?
	    -1 : 0;
}
