/* SPDX-License-Identifier: ISC */
/*
 * store_settings.c: what the operator sets at runtime and the store keeps
 * (paused sink keys, rate-limit overrides: meta records "set:<name>"),
 * and the moves of manual operations over the due table (retry now, the
 * paused rows set aside and brought back).  See store.h's block "Manual
 * operations".
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "store.h"
#include "store_int.h"

#define SETTING_PREFIX	"set:"

static int	 setting_key(struct store *, const char *, char *, size_t,
		    size_t *);
static int	 move_row(struct store_batch *, struct store_due_move *,
		    const unsigned char *, uint64_t);

static int
setting_key(struct store *st, const char *name, char *key, size_t keysz,
    size_t *klen)
{
	size_t n = name != NULL ? strlen(name) : 0;

	if (n == 0 || n > STORE_SETTING_NAME_MAX ||
	    memchr(name, '\0', n) != NULL) {
		store_seterr(st, 0, "store %s: a setting's name of %zu bytes",
		    st->dir, n);
		return -1;
	}
	*klen = (size_t)snprintf(key, keysz, "%s%s", SETTING_PREFIX, name);
	return 0;
}

int
store_batch_setting_put(struct store_batch *b, const char *name,
    const void *val, size_t len)
{
	struct store *st = b->st;
	unsigned char v[1 + STORE_SETTING_VAL_MAX];
	char key[sizeof(SETTING_PREFIX) + STORE_SETTING_NAME_MAX];
	size_t klen;

	if (!store_batch_ok(b))
		return -1;
	if (setting_key(st, name, key, sizeof(key), &klen) == -1)
		goto fail;
	if (len > STORE_SETTING_VAL_MAX) {
		store_seterr(st, 0, "store %s: setting %s: a value of %zu "
		    "bytes", st->dir, name, len);
		goto fail;
	}
	v[0] = STORE_REC_VERSION;
	if (len > 0)
		memcpy(v + 1, val, len);
	if (store_put(st, b->txn, T_META, key, klen, v, len + 1, 0) == -1)
		goto fail;
	return 0;

 fail:
	b->failed = 1;
	return -1;
}

int
store_batch_setting_del(struct store_batch *b, const char *name)
{
	struct store *st = b->st;
	char key[sizeof(SETTING_PREFIX) + STORE_SETTING_NAME_MAX];
	size_t klen;
	int ret;

	if (!store_batch_ok(b))
		return -1;
	if (setting_key(st, name, key, sizeof(key), &klen) == -1 ||
	    (ret = store_tdel(st, b->txn, T_META, key, klen)) == -1) {
		b->failed = 1;
		return -1;
	}
	return ret;
}

int
store_settings_list(struct store *st, const char *prefix,
    int (*cb)(const char *, const void *, size_t, void *), void *arg)
{
	char from[sizeof(SETTING_PREFIX) + STORE_SETTING_NAME_MAX];
	char name[STORE_SETTING_NAME_MAX + 1];
	size_t flen, n;
	struct walk w;
	int ret;

	st->dberr[0] = '\0';
	if (prefix == NULL)
		prefix = "";
	if (strlen(prefix) > STORE_SETTING_NAME_MAX) {
		store_seterr(st, 0, "store %s: a settings prefix too long",
		    st->dir);
		return -1;
	}
	flen = (size_t)snprintf(from, sizeof(from), "%s%s", SETTING_PREFIX,
	    prefix);
	store_walk_init(&w, st, NULL, T_META, from, flen);
	while ((ret = store_walk_next(&w)) == 1) {
		if (w.klen < flen || memcmp(w.key, from, flen) != 0)
			break;
		n = w.klen - strlen(SETTING_PREFIX);
		if (n > STORE_SETTING_NAME_MAX || w.vlen < 1 ||
		    w.val[0] != STORE_REC_VERSION) {
			log_warnx("store %s/meta.db: setting record of %zu "
			    "bytes (version %u) skipped", st->dir, w.vlen,
			    w.vlen > 0 ? w.val[0] : 0);
			continue;
		}
		memcpy(name, w.key + strlen(SETTING_PREFIX), n);
		name[n] = '\0';
		if (memchr(name, '\0', n) != NULL)
			continue;
		store_walk_pause(&w);
		if (cb(name, w.val + 1, w.vlen - 1, arg) != 0)
			break;
	}
	return store_walk_done(&w, ret == -1 ? -1 : 0);
}

/* The row at rk, its due key at due, if it is one m names: moved to
 * m->due (a PARKED row becomes DUE, a head stays its lane's head).  1
 * moved, 0 left alone, -1 on a store error. */
static int
move_row(struct store_batch *b, struct store_due_move *m,
    const unsigned char *rk, uint64_t due)
{
	struct store_row r;
	int ret;

	if (m->seq != 0 && rec_get_u64(rk) != m->seq)
		return 0;
	if (m->any_sink == 0 && rec_get_u32(rk + 8) != m->sink)
		return 0;
	if (m->skip != NULL && m->skip(rk, m->arg))
		return 0;
	if ((ret = rows_read(b->st, b->txn, rk, &r)) == -1)
		return -1;
	if (ret != 1 || !rows_pending(&r) || r.due != due ||
	    (m->source != NULL && strcmp(r.source, m->source) != 0) ||
	    (m->tenant != NULL && strcmp(r.tenant, m->tenant) != 0) ||
	    (m->keep_parked && r.state == STORE_ROW_PARKED))
		return 0;	/* gone or stale: the due scan heals it */
	r.due = m->due;
	if (r.state == STORE_ROW_PARKED)
		r.state = STORE_ROW_DUE;
	if ((ret = store_batch_row_reschedule(b, rk, &r)) == 1)
		m->moved++;
	return ret;
}

int
store_batch_due_move(struct store_batch *b, struct store_due_move *m)
{
	struct store *st = b->st;
	unsigned char key[STORE_KEY_MAX], rk[STORE_ROWKEY_LEN];
	const unsigned char *krk;
	uint64_t due, visits = 0, moved0 = m->moved;
	size_t tlen, klen, plen = 0;
	struct walk w;
	int ret, more = 0;

	if (!store_batch_ok(b))
		return -1;
	if (m->tenant != NULL && (plen = strlen(m->tenant)) > STORE_NAME_MAX) {
		store_seterr(st, 0, "store %s: due move of a bad tenant",
		    st->dir);
		b->failed = 1;
		return -1;
	}
	if (m->at_len > 0)
		store_walk_init(&w, st, b->txn, T_DUE, m->at, m->at_len);
	else if (m->tenant != NULL) {
		klen = store_key_due(key, sizeof(key), m->tenant, m->from,
		    (const unsigned char *)"\0\0\0\0\0\0\0\0\0\0\0\0");
		store_walk_init(&w, st, b->txn, T_DUE, key, klen);
	} else
		store_walk_init(&w, st, b->txn, T_DUE, "", 0);
	while ((ret = store_walk_next(&w)) == 1) {
		if (m->tenant != NULL && (w.klen <= plen ||
		    memcmp(w.key, m->tenant, plen + 1) != 0))
			break;
		if (m->at_len > 0 && w.klen == m->at_len &&
		    memcmp(w.key, m->at, m->at_len) == 0)
			continue;
		if (m->visits > 0 && visits++ >= m->visits) {
			more = 1;
			break;
		}
		if (rows_due_parse(w.key, w.klen, &tlen, &due, &krk) == -1) {
			memcpy(m->at, w.key, w.klen);
			m->at_len = w.klen;
			continue;	/* the due scan reports it */
		}
		if (due < m->from || due > m->to) {
			if (m->tenant != NULL && due > m->to)
				break;
			/* Another tenant's range: its first key at from, or
			 * past it. */
			memcpy(key, w.key, tlen + 1);
			if (due < m->from) {
				rec_put_u64(key + tlen + 1, m->from);
				memset(key + tlen + 9, 0, STORE_ROWKEY_LEN);
				klen = tlen + 9 + STORE_ROWKEY_LEN;
			} else {
				key[tlen] = 0x01;
				klen = tlen + 1;
			}
			/* The next step starts there too: a step spent on
			 * seeks alone still goes forward. */
			memcpy(m->at, key, klen);
			m->at_len = klen;
			store_walk_seek(&w, key, klen);
			continue;
		}
		memcpy(rk, krk, STORE_ROWKEY_LEN);
		klen = w.klen;
		memcpy(key, w.key, klen);
		store_walk_pause(&w);
		if (move_row(b, m, rk, due) == -1) {
			ret = -1;
			break;
		}
		memcpy(m->at, key, klen);
		m->at_len = klen;
		if (m->limit > 0 && m->moved - moved0 >= m->limit) {
			more = 1;
			break;
		}
	}
	if (ret == -1)
		b->failed = 1;
	return store_walk_done(&w, ret == -1 ? -1 : more);
}

int
store_batch_hook_move(struct store_batch *b, struct store_due_move *m)
{
	struct store *st = b->st;
	unsigned char from[8], rk[STORE_ROWKEY_LEN];
	struct store_row r;
	struct walk w;
	int ret, rr;

	if (!store_batch_ok(b))
		return -1;
	rec_put_u64(from, m->seq);
	store_walk_init(&w, st, b->txn, T_ROWS, from, sizeof(from));
	while ((ret = store_walk_next(&w)) == 1) {
		if (w.klen != STORE_ROWKEY_LEN || memcmp(w.key, from, 8) != 0)
			break;
		memcpy(rk, w.key, STORE_ROWKEY_LEN);
		if (store_rec_row_decode(rk, STORE_ROWKEY_LEN, w.val, w.vlen,
		    &r, st->err, sizeof(st->err)) == -1)
			continue;
		if (!rows_pending(&r) || r.due < m->from || r.due > m->to)
			continue;
		store_walk_pause(&w);
		if ((rr = move_row(b, m, rk, r.due)) == -1) {
			ret = -1;
			break;
		}
	}
	if (ret == -1)
		b->failed = 1;
	return store_walk_done(&w, ret == -1 ? -1 : 0);
}
