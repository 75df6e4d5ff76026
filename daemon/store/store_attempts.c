/* SPDX-License-Identifier: ISC */
/*
 * store_attempts.c: the attempt log in the store (tables attempts and
 * attempts_end): an attempt put in its settle's batch with the cap of its
 * round, a hook's attempts listed, dropped with it, and pruned after the
 * hook went; see store.h.  The layouts are in store_rec.c's header
 * comment.
 *
 * Keys.  An attempt's key starts with its hook's id, not its seq: the id
 * is what the API names, and it stays meaningful once the hook, its seq
 * and its hookids entry are gone, which is when an operator most wants
 * to know what the sink answered.  After the id come the sink index, the
 * round (the row's first attempt of this round, which a replay resets)
 * and the attempt's number within it, so that the attempt max_per_row
 * before the one put is a key the put can name: the cap costs one blind
 * delete, never a count or a walk.
 *
 * attempts_end holds one entry per hook gone, (time, id), written in the
 * transaction that deletes the hook: the prune walks it from its oldest
 * entry and stops at the first one still within the retention, deleting
 * each expired hook's attempts by their prefix.  A hook that lives (a row
 * pending or dead-lettered) has no entry, so its attempts stay, each
 * round capped.
 *
 * Records can be 64 KiB (the response), more than a walk's buffer
 * (STORE_REC_MAX): the reads here use a cursor with a buffer of their own,
 * and the deletes read no value at all.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "log.h"
#include "store.h"
#include "store_int.h"
#include "utf8.h"

#define END_KEY_LEN	(8 + UUID_LEN)

static const char *const outcome_names[STORE_ATTEMPT_OUTCOMES] = {
	"ok", "error", "permanent", "timeout", "egress_denied", "parked",
};

static int	 attempts_del_prefix(struct store_batch *,
		    const unsigned char[UUID_LEN], unsigned, unsigned *);
static char	*attempts_cut(const char *, size_t, char *, size_t);

const char *
store_attempt_outcome_name(unsigned o)
{
	return o < STORE_ATTEMPT_OUTCOMES ? outcome_names[o] : "?";
}

/* s cut to at most max bytes between UTF-8 characters: s itself when it
 * fits, else a copy in buf (bufsz > max) or, buf NULL, malloc'd (NULL
 * when out of memory). */
static char *
attempts_cut(const char *s, size_t max, char *buf, size_t bufsz)
{
	size_t n = strlen(s);

	if (n <= max)
		return (char *)s;
	if (buf == NULL) {
		bufsz = max + 1;
		if ((buf = malloc(bufsz)) == NULL)
			return NULL;
	}
	(void)utf8_clean(buf, bufsz, s, n);
	return buf;
}

int
store_batch_attempt_put(struct store_batch *b, const struct store_attempt *a,
    uint32_t max_per_row)
{
	static unsigned char *val;
	struct store *st = b->st;
	struct store_attempt c = *a;
	unsigned char k[STORE_ATTEMPT_KEY_LEN];
	char ebuf[STORE_ERROR_MAX + 1];
	size_t vlen;
	int rc = -1;

	if (!store_batch_ok(b))
		return -1;
	if (max_per_row == 0)
		return 0;
	if (val == NULL && (val = malloc(STORE_ATTEMPT_REC_MAX)) == NULL) {
		store_seterr(st, 0, "store %s: out of memory", st->dir);
		goto fail;
	}
	c.error = attempts_cut(a->error != NULL ? a->error : "",
	    STORE_ERROR_MAX, ebuf, sizeof(ebuf));
	if ((c.response = attempts_cut(a->response != NULL ? a->response :
	    "", STORE_ATTEMPT_RESPONSE_MAX, NULL, 0)) == NULL) {
		store_seterr(st, 0, "store %s: out of memory", st->dir);
		goto fail;
	}
	vlen = store_rec_attempt_encode(&c, val, STORE_ATTEMPT_REC_MAX);
	if (c.response != a->response)
		free((char *)c.response);
	if (vlen == 0) {
		store_seterr(st, 0, "store %s: attempt %u of sink %u: cannot "
		    "encode", st->dir, a->n, a->sink_index);
		goto fail;
	}
	store_key_attempt(k, a->id, a->sink_index, a->round, a->n);
	if (store_put(st, b->txn, T_ATTEMPTS, k, sizeof(k), val, vlen,
	    0) == -1)
		goto fail;
	/* The round's oldest beyond the cap: the one max_per_row back (a
	 * cap lowered by a reload leaves older ones to the retention). */
	if (a->n > max_per_row) {
		store_key_attempt(k, a->id, a->sink_index, a->round,
		    a->n - max_per_row);
		if (store_tdel(st, b->txn, T_ATTEMPTS, k, sizeof(k)) == -1)
			goto fail;
	}
	rc = 0;
 fail:
	if (rc == -1)
		b->failed = 1;
	return rc;
}

int
store_attempts_list(struct store *st, const unsigned char id[UUID_LEN],
    const unsigned char *after, uint64_t limit,
    int (*cb)(const unsigned char *, const struct store_attempt *, void *),
    void *arg, int *more)
{
	struct store_attempt a;
	struct cur c;
	unsigned char k[STORE_ATTEMPT_KEY_LEN], *val;
	uint64_t handed = 0;
	size_t klen, vlen;
	int how, ret, rc = -1, i;

	st->dberr[0] = '\0';
	if (more != NULL)
		*more = 0;
	if ((val = malloc(STORE_ATTEMPT_REC_MAX)) == NULL) {
		store_seterr(st, 0, "store %s: out of memory", st->dir);
		return -1;
	}
	if (store_cur_open(&c, st, store_readtxn(st), T_ATTEMPTS) == -1) {
		free(val);
		return -1;
	}
	/* Keys are all of one length, and the seek is by a whole key: the
	 * id and zeros (no attempt is numbered 0), or the least key above
	 * after, which is after plus one. */
	if (after != NULL) {
		memcpy(k, after, sizeof(k));
		for (i = sizeof(k) - 1; i >= 0 && ++k[i] == 0; i--)
			;
	} else {
		memset(k, 0, sizeof(k));
		memcpy(k, id, UUID_LEN);
	}
	how = STORE_CUR_RANGE;
	for (;;) {
		ret = store_cur_step(&c, how, k, sizeof(k), &klen, val,
		    STORE_ATTEMPT_REC_MAX, &vlen);
		how = STORE_CUR_NEXT;
		if (ret == -1)
			goto done;
		if (ret == 0 || klen < UUID_LEN || memcmp(k, id, UUID_LEN) != 0)
			break;
		if (limit != 0 && handed >= limit) {
			if (more != NULL)
				*more = 1;
			break;
		}
		if (store_rec_attempt_decode(k, klen, val, vlen, &a, st->err,
		    sizeof(st->err)) == -1) {
			log_warnx("store %s: %s: skipped", st->dir, st->err);
			continue;
		}
		handed++;
		if (cb(k, &a, arg) != 0)
			break;
	}
	rc = 0;
 done:
	free(val);
	return store_cur_done(&c, rc);
}

/* Delete hook id's attempts, at most max (0: all), counting them in *n:
 * 1 when none is left, 0 when max stopped it, -1 on a store error. */
static int
attempts_del_prefix(struct store_batch *b, const unsigned char id[UUID_LEN],
    unsigned max, unsigned *n)
{
	struct cur c;
	unsigned char k[STORE_ATTEMPT_KEY_LEN], v[1];
	size_t klen, vlen;
	int how = STORE_CUR_RANGE, ret, rc = 1;

	if (store_cur_open(&c, b->st, b->txn, T_ATTEMPTS) == -1)
		return -1;
	/* The first key of id: it and zeros (store_attempts_list). */
	memset(k, 0, sizeof(k));
	memcpy(k, id, UUID_LEN);
	for (;;) {
		/* The key alone: a value's first byte at most. */
		if ((ret = store_cur_step(&c, how, k, sizeof(k), &klen, v, 0,
		    &vlen)) == -1) {
			rc = -1;
			break;
		}
		how = STORE_CUR_NEXT;
		if (ret == 0 || klen < UUID_LEN || memcmp(k, id, UUID_LEN) != 0)
			break;
		if (max != 0 && *n >= max) {
			rc = 0;
			break;
		}
		if (store_cur_del(&c) == -1) {
			rc = -1;
			break;
		}
		(*n)++;
	}
	return store_cur_done(&c, rc);
}

int
store_batch_attempts_drop(struct store_batch *b,
    const unsigned char id[UUID_LEN])
{
	unsigned n = 0;

	if (!store_batch_ok(b))
		return -1;
	if (attempts_del_prefix(b, id, 0, &n) == -1) {
		b->failed = 1;
		return -1;
	}
	return (int)n;
}

int
attempts_hook_gone(struct store_batch *b, const unsigned char id[UUID_LEN])
{
	unsigned char k[END_KEY_LEN], val[1];

	rec_put_u64(k, time_wall_ms());
	memcpy(k + 8, id, UUID_LEN);
	return store_put(b->st, b->txn, T_ATTEMPTS_END, k, sizeof(k), val,
	    store_rec_empty_encode(val, sizeof(val)), 0);
}

int
store_batch_attempts_prune(struct store_batch *b, uint64_t before_ms,
    unsigned max)
{
	struct store *st = b->st;
	struct walk w;
	unsigned char id[UUID_LEN];
	unsigned n = 0;
	int ret = 0, all;

	if (!store_batch_ok(b))
		return -1;
	if (before_ms == 0 || max == 0)
		return 0;
	store_walk_init(&w, st, b->txn, T_ATTEMPTS_END, "", 0);
	while (n < max && (ret = store_walk_next(&w)) == 1) {
		if (w.klen != END_KEY_LEN) {
			log_warnx("store %s/attempts_end.db: damaged key of "
			    "%zu bytes deleted", st->dir, w.klen);
		} else {
			if (rec_get_u64(w.key) >= before_ms)
				break;
			memcpy(id, w.key + 8, UUID_LEN);
			/* The attempts first, with the walk paused: its
			 * entry goes once none is left. */
			store_walk_pause(&w);
			if ((all = attempts_del_prefix(b, id, max, &n)) == -1) {
				ret = -1;
				break;
			}
			if (!all)
				break;
			store_walk_seek(&w, w.key, w.klen);
			if ((ret = store_walk_next(&w)) != 1)
				break;
		}
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
