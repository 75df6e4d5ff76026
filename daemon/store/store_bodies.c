/* SPDX-License-Identifier: ISC */
/*
 * store_bodies.c: the hooks' bodies of STORE_BODY_MIN to STORE_BODY_MAX
 * bytes, each a record of bodies, a heap table (DB_HEAP: docs/DEPARTURES
 * 29), put, read and deleted in the transactions that put, read and
 * delete its hook; and, at the open of a store of schema 1, the move into
 * it of the bodies that builds before 2026-12-02 kept as log records of
 * their own (docs/DEPARTURES 16, withdrawn).
 *
 * Why a table: a body that is only a log record is gone on a replica that
 * the replication manager initialises from scratch (it receives tables and
 * the recent log), and with the log files that libdb's upgrade removes;
 * and why a heap: a heap logs a record once, where the hooks B-tree logged
 * a body again with every split that moved it, so the hooks table keeps
 * the heads only (docs/PERFORMANCE, "Bodies in a heap table").
 *
 * A bodies record: v1, u64 the hook's seq, the body.  The seq is checked
 * at every read: a heap reuses the space of deleted records, so a record
 * id that pointed at a body once may point at another's later.
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
#include "store_bdb.h"
#include "store_int.h"

#define BODY_HDR		9	/* v1, u64 seq */
/* A body record of the builds before 2026-12-02 (bdb_app_dispatch answers
 * for them at recovery): u32 type, u32 txnid 0, a zero prev LSN, the
 * hook's seq (u64 big-endian), then the body. */
#define LOGREC_BODY		(DB_user_BEGIN + 1)
#define LOGREC_SEQ		16
#define LOGREC_HDR		24
#define UPGRADE_TXN_HOOKS	256	/* bodies moved per transaction */
#define UPGRADE_LOG_TXNS	64	/* transactions between progress lines */

static void	 body_err(struct store *, uint64_t,
		    const struct store_hook_rec *, const char *, ...)
		    __attribute__((format(printf, 4, 5)));
static int	 upgrade_hook(struct store *, DB_TXN *, DBC *, DB_LOGC *,
		    DBT *, uint64_t, const struct bodies_upgrade *, int *);

/* err = "store DIR: hook seq N: its body, <where>, <what>". */
static void
body_err(struct store *st, uint64_t seq, const struct store_hook_rec *rec,
    const char *fmt, ...)
{
	char what[256], where[64];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(what, sizeof(what), fmt, ap);
	va_end(ap);
	if (rec->at.in == STORE_BODY_HEAP)
		snprintf(where, sizeof(where), "record %" PRIu32 "/%u of "
		    "bodies.db", rec->at.page, (unsigned)rec->at.indx);
	else
		snprintf(where, sizeof(where), "at %" PRIu32 "/%" PRIu32
		    " in the log", rec->at.file, rec->at.off);
	store_seterr(st, 0, "store %s: hook seq %" PRIu64 ": its body, %s, %s",
	    st->dir, seq, where, what);
}

/* Put h's body (h->seq set) into bodies in the batch; *at gets its place. */
int
bodies_put(struct store_batch *b, const struct store_hook *h,
    struct store_body_at *at)
{
	struct store *st = b->st;
	size_t need = BODY_HDR + h->body_len;
	unsigned char *nb;
	DB_HEAP_RID rid;
	DBT k, v;
	int ret;

	if (need > st->bbufcap) {
		if ((nb = realloc(st->bbuf, need)) == NULL) {
			store_seterr(st, 0, "store %s: out of memory",
			    st->dir);
			return -1;
		}
		st->bbuf = nb;
		st->bbufcap = need;
	}
	st->bbuf[0] = STORE_REC_VERSION;
	rec_put_u64(st->bbuf + 1, h->seq);
	memcpy(st->bbuf + BODY_HDR, h->body, h->body_len);
	memset(&rid, 0, sizeof(rid));
	bdb_dbt_user(&k, &rid, sizeof(rid), 0);
	memset(&v, 0, sizeof(v));
	v.data = st->bbuf;
	v.size = (uint32_t)need;
	if ((ret = st->db[T_BODIES]->put(st->db[T_BODIES], b->txn, &k, &v,
	    DB_APPEND)) != 0) {
		store_seterr(st, ret, "store %s/bodies.db: hook seq %" PRIu64
		    ": write its body", st->dir, h->seq);
		return -1;
	}
	memset(at, 0, sizeof(*at));
	at->in = STORE_BODY_HEAP;
	at->page = rid.pgno;
	at->indx = rid.indx;
	return 0;
}

/* The body of the hook at seq, whose record rec says where it is, into
 * rec->body_mem (and rec->hook.body).  0, or -1 with the error naming the
 * hook and where its body was. */
int
bodies_get(struct store *st, DB_TXN *txn, uint64_t seq,
    struct store_hook_rec *rec)
{
	const unsigned char *p;
	DB_HEAP_RID rid;
	DBT k, v;
	int ret;

	switch (rec->at.in) {
	case STORE_BODY_RECORD:
		return 0;
	case STORE_BODY_LOST:
		body_err(st, seq, rec, "could not be read when the store "
		    "moved the bodies out of the log: it is lost");
		return -1;
	case STORE_BODY_HEAP:
		break;
	default:
		body_err(st, seq, rec, "was not moved out of the log, where "
		    "this build reads no body");
		return -1;
	}
	memset(&rid, 0, sizeof(rid));
	rid.pgno = rec->at.page;
	rid.indx = rec->at.indx;
	bdb_dbt_user(&k, &rid, sizeof(rid), 0);
	memset(&v, 0, sizeof(v));
	v.flags = DB_DBT_MALLOC;
	ret = st->db[T_BODIES]->get(st->db[T_BODIES], txn, &k, &v, 0);
	if (ret == DB_NOTFOUND) {
		body_err(st, seq, rec, "is gone");
		return -1;
	}
	if (ret != 0) {
		store_seterr(st, ret, "store %s/bodies.db: hook seq %" PRIu64
		    ": read its body, record %" PRIu32 "/%u", st->dir, seq,
		    rec->at.page, (unsigned)rec->at.indx);
		return -1;
	}
	p = v.data;
	if (v.size < BODY_HDR || p[0] != STORE_REC_VERSION ||
	    rec_get_u64(p + 1) != seq || v.size - BODY_HDR != rec->body_size) {
		free(v.data);
		body_err(st, seq, rec, "holds %s", v.size >= BODY_HDR &&
		    p[0] != STORE_REC_VERSION ? "a record of an unknown "
		    "version" : "another hook's body");
		return -1;
	}
	rec->body_mem = v.data;
	rec->hook.body = p + BODY_HDR;
	rec->hook.body_len = rec->body_size;
	return 0;
}

/*
 * The hook at seq is deleted in the batch: c is on its record, of which
 * head holds the first hlen bytes (at least the flags).  Its body goes
 * with it when it is in bodies.  0, or -1 on a store error.  A body
 * already gone is only logged: the hook goes all the same.
 */
int
bodies_unref(struct store_batch *b, struct __dbc *c, uint64_t seq,
    const unsigned char *head, size_t hlen)
{
	struct store *st = b->st;
	unsigned char kb[8], tail[HOOK_RID_LEN];
	DB_HEAP_RID rid;
	DBT k, v;
	int ret;

	if (hlen <= HOOK_HEAD_FLAGS || !(head[HOOK_HEAD_FLAGS] &
	    HOOK_FLAG_HEAP))
		return 0;
	/* The record id is the record's last bytes, after the head. */
	store_key_hook(kb, seq);
	bdb_dbt_user(&k, kb, sizeof(kb), 0);
	bdb_dbt_user(&v, tail, sizeof(tail), 1);
	v.doff = (uint32_t)rec_hook_body_off(head);
	if ((ret = c->get(c, &k, &v, DB_CURRENT)) != 0) {
		store_seterr(st, ret, "store %s/hooks.db: read seq %" PRIu64,
		    st->dir, seq);
		return -1;
	}
	if (v.size != sizeof(tail))
		return rec_malformed(T_HOOKS, kb, sizeof(kb), "bad body "
		    "position", st->err, sizeof(st->err));
	memset(&rid, 0, sizeof(rid));
	rec_hook_rid_get(tail, &rid.pgno, &rid.indx);
	bdb_dbt_user(&k, &rid, sizeof(rid), 0);
	ret = st->db[T_BODIES]->del(st->db[T_BODIES], b->txn, &k, 0);
	if (ret == DB_NOTFOUND) {
		log_warnx("store %s: hook seq %" PRIu64 ": its body, record %"
		    PRIu32 "/%u of bodies.db, was gone before it", st->dir,
		    seq, (unsigned)rid.pgno, (unsigned)rid.indx);
		return 0;
	}
	if (ret != 0) {
		store_seterr(st, ret, "store %s/bodies.db: hook seq %" PRIu64
		    ": delete its body", st->dir, seq);
		return -1;
	}
	return 0;
}

/*
 * The upgrade from schema 1: every hook whose body is a log record of an
 * older build's (HOOK_FLAG_LOGGED) gets it back through libdb's log cursor
 * (DB_LOGC->get at the record's position), checked to be that hook's body,
 * into bodies, and its record says so; one whose record cannot be read
 * (its log file gone, the record not its body) says that instead
 * (HOOK_FLAG_LOST), is logged, and the others go on.  In transactions of
 * UPGRADE_TXN_HOOKS bodies, each synced, so an interrupted upgrade resumes
 * from the records it left (those already moved are passed over); the
 * last writes schema 2.  A damaged record (its checksum fails) panics the
 * environment inside libdb: its hook's seq is added to u->bad (grown
 * here, freed by the caller), and 1 asks the caller to close the
 * environment, open it again (recovery) and call again with the same u,
 * which marks the hooks in u->bad lost without reading them.  0 when done, -1 on a store
 * error.  Runs in store_open, before anything else reads the store.
 */
int
bodies_upgrade(struct store *st, struct bodies_upgrade *u)
{
	unsigned char kb[8], head[HOOK_HEAD_FLAGS + 1], v5[5];
	uint64_t from = 1, last = 0, *nb;
	DB_LOGC *lc = NULL;
	DB_TXN *txn = NULL;
	DBC *c = NULL;
	DBT k, v, d;
	int ret, n, end, lost, rc = -1;

	if (u->nbad == 0 && u->moved == 0 && u->lost == 0)
		log_info("store %s: moving the hooks' bodies out of the log "
		    "into bodies.db (schema 1 to 2)", st->dir);
	memset(&d, 0, sizeof(d));
	d.flags = DB_DBT_REALLOC;
	if ((ret = st->env->log_cursor(st->env, &lc, 0)) != 0) {
		store_seterr(st, ret, "store %s: log cursor", st->dir);
		return -1;
	}
	for (;;) {
		if ((ret = st->env->txn_begin(st->env, NULL, &txn, 0)) != 0) {
			store_seterr(st, ret, "store %s: txn_begin", st->dir);
			txn = NULL;
			goto done;
		}
		if ((ret = st->db[T_HOOKS]->cursor(st->db[T_HOOKS], txn, &c,
		    0)) != 0) {
			store_seterr(st, ret, "store %s/hooks.db: cursor",
			    st->dir);
			c = NULL;
			goto done;
		}
		store_key_hook(kb, from);
		bdb_dbt_user(&k, kb, sizeof(kb), 0);
		bdb_dbt_user(&v, head, sizeof(head), 1);
		n = 0;
		for (ret = c->get(c, &k, &v, DB_SET_RANGE); ret == 0;
		    ret = c->get(c, &k, &v, DB_NEXT)) {
			if (k.size != sizeof(kb))
				continue;
			last = rec_get_u64(kb);
			if (v.size != sizeof(head) ||
			    head[0] != STORE_REC_VERSION ||
			    (head[HOOK_HEAD_FLAGS] & (HOOK_FLAG_LOGGED |
			    HOOK_FLAG_LOST)) != HOOK_FLAG_LOGGED)
				continue;
			ret = upgrade_hook(st, txn, c, lc, &d, last, u, &lost);
			if (ret == DB_RUNRECOVERY) {
				if ((nb = reallocarray(u->bad, u->nbad + 1,
				    sizeof(*u->bad))) == NULL) {
					store_seterr(st, 0, "store %s: out of "
					    "memory", st->dir);
					goto done;
				}
				u->bad = nb;
				u->bad[u->nbad++] = last;
				log_warnx("store %s: hook seq %" PRIu64 ": its "
				    "body's log record is damaged, and libdb "
				    "stopped the environment on it: opening it "
				    "again to go on", st->dir, last);
				rc = 1;
				goto done;
			}
			if (ret == -1)
				goto done;
			if (lost)
				u->lost++;
			else
				u->moved++;
			bdb_dbt_user(&k, kb, sizeof(kb), 0);
			bdb_dbt_user(&v, head, sizeof(head), 1);
			if (++n == UPGRADE_TXN_HOOKS)
				break;
		}
		if (ret != 0 && ret != DB_NOTFOUND) {
			store_seterr(st, ret, "store %s/hooks.db: read",
			    st->dir);
			goto done;
		}
		/* The last transaction says the store has no body left in
		 * the log. */
		end = ret == DB_NOTFOUND;
		v5[0] = STORE_REC_VERSION;
		rec_put_u32(v5 + 1, STORE_SCHEMA_BODIES);
		if (end && store_put(st, txn, T_META, "schema", 6, v5,
		    sizeof(v5), 0) == -1)
			goto done;
		ret = c->close(c);
		c = NULL;
		if (ret != 0) {
			store_seterr(st, ret, "store %s/hooks.db: cursor "
			    "close", st->dir);
			goto done;
		}
		ret = txn->commit(txn, 0);
		txn = NULL;
		if (ret != 0) {
			store_seterr(st, ret, "store %s: commit the bodies "
			    "moved out of the log", st->dir);
			goto done;
		}
		if (end) {
			st->schema = STORE_SCHEMA_BODIES;
			break;
		}
		from = last + 1;
		if (++u->txns % UPGRADE_LOG_TXNS == 0)
			log_info("store %s: %" PRIu64 " bodies moved out of the "
			    "log so far, up to hook seq %" PRIu64 " of %" PRIu64,
			    st->dir, u->moved, last, st->next_seq);
	}
	log_info("store %s: %" PRIu64 " bodies moved out of the log into "
	    "bodies.db%s", st->dir, u->moved, u->lost > 0 ? "; some could "
	    "not be read (logged above): their hooks stay, without them" : "");
	rc = 0;
 done:
	if (c != NULL)
		(void)c->close(c);
	if (txn != NULL)
		(void)txn->abort(txn);
	(void)lc->close(lc, 0);
	free(d.data);
	return rc;
}

/* Move the body of the hook at seq (c on its record, flagged LOGGED) out of
 * the log, or mark it lost (*lostp).  0, DB_RUNRECOVERY when the log cursor
 * stopped the environment, or -1 on a store error. */
static int
upgrade_hook(struct store *st, DB_TXN *txn, DBC *c, DB_LOGC *lc, DBT *d,
    uint64_t seq, const struct bodies_upgrade *u, int *lostp)
{
	struct store_hook_rec rec;
	struct store_body_at at;
	struct store_batch b;
	const unsigned char *p;
	char id[UUID_STRLEN + 1], why[256];
	unsigned char kb[8];
	uint32_t type = 0;
	size_t i, len;
	void *val;
	DB_LSN lsn;
	DBT k, v, nv;
	int ret, rc = -1;

	store_key_hook(kb, seq);
	bdb_dbt_user(&k, kb, sizeof(kb), 0);
	memset(&v, 0, sizeof(v));
	v.flags = DB_DBT_MALLOC;
	if ((ret = c->get(c, &k, &v, DB_CURRENT)) != 0) {
		store_seterr(st, ret, "store %s/hooks.db: read seq %" PRIu64,
		    st->dir, seq);
		return -1;
	}
	if (rec_hook_decode(T_HOOKS, kb, sizeof(kb), v.data, v.size, 0, &rec,
	    st->err, sizeof(st->err)) == -1) {
		/* Damaged: it stays as it is, unreadable either way. */
		log_warnx("store %s: %s; left as it is", st->dir, st->err);
		free(v.data);
		*lostp = 1;
		return 0;
	}
	why[0] = '\0';
	for (i = 0; i < u->nbad; i++)
		if (u->bad[i] == seq)
			snprintf(why, sizeof(why), "the record is damaged (its "
			    "checksum does not hold)");
	lsn.file = rec.at.file;
	lsn.offset = rec.at.off;
	if (why[0] == '\0') {
		ret = lc->get(lc, &lsn, d, DB_SET);
		if (ret == DB_RUNRECOVERY) {
			rc = DB_RUNRECOVERY;
			goto out;
		}
		p = d->data;
		if (ret == DB_NOTFOUND)
			snprintf(why, sizeof(why), "no such record (its log "
			    "file is gone?)");
		else if (ret != 0)
			snprintf(why, sizeof(why), "%s", db_strerror(ret));
		else {
			if (d->size >= sizeof(type))
				memcpy(&type, p, sizeof(type));
			if (d->size != LOGREC_HDR + rec.body_size ||
			    type != LOGREC_BODY ||
			    rec_get_u64(p + LOGREC_SEQ) != seq)
				snprintf(why, sizeof(why), "the record there "
				    "is not its body");
		}
	}
	memset(&b, 0, sizeof(b));
	b.st = st;
	b.txn = txn;
	if (why[0] == '\0') {
		rec.hook.body = (const unsigned char *)d->data + LOGREC_HDR;
		rec.hook.body_len = rec.body_size;
		rec.hook.seq = seq;
		if (bodies_put(&b, &rec.hook, &at) == -1)
			goto out;
	} else {
		uuid_format(rec.hook.id, id);
		log_warnx("store %s: hook seq %" PRIu64 " (id %s): its body, at "
		    "%" PRIu32 "/%" PRIu32 " in the log, cannot be read: %s; "
		    "the hook stays, without it", st->dir, seq, id,
		    rec.at.file, rec.at.off, why);
		at = rec.at;
		at.in = STORE_BODY_LOST;
	}
	*lostp = why[0] != '\0';
	if ((val = rec_hook_encode(&rec.hook, rec.rows, rec.claim_ref, NULL,
	    &at, &len)) == NULL) {
		store_seterr(st, 0, "store %s: hook seq %" PRIu64 ": cannot "
		    "encode", st->dir, seq);
		goto out;
	}
	memset(&nv, 0, sizeof(nv));
	nv.data = val;
	nv.size = (uint32_t)len;
	ret = c->put(c, &k, &nv, DB_CURRENT);
	free(val);
	if (ret != 0) {
		store_seterr(st, ret, "store %s/hooks.db: rewrite seq %" PRIu64,
		    st->dir, seq);
		goto out;
	}
	rc = 0;
 out:
	store_hook_rec_free(&rec);
	free(v.data);
	return rc;
}
