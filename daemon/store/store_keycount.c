/* SPDX-License-Identifier: ISC */
/*
 * store_keycount.c: the rows of each sink key (source, sink index,
 * module), live and dead, in memory: GET /v1/sinks and the
 * ankusa_sink_pending and ankusa_sink_dead gauges read them without a
 * walk of any table.
 *
 * The store keeps no per-key counter on disk (a record per key written by
 * every batch would cost each settle a put), so the counts are rebuilt
 * after each open by one walk of the rows table in bounded steps
 * (store_keycount_seed, driven by the master's loop), and kept by the
 * batches: every place that adds a row, moves one to or from the dead
 * letters or deletes one tells keycount_row, whose changes wait in the
 * batch and count once it commits (none of an aborted one).  While the
 * walk is under way a change counts only for a row the walk has passed;
 * a row ahead of it is counted by the walk as it is then, so the counts
 * are exact when the walk ends, whatever was written meanwhile.
 *
 * A replication client's tables change under it without a batch: it
 * keeps no counts (store_keycount answers -1).  A row the store cannot
 * decode is counted nowhere (the walk skips it as the writers do), nor
 * one in a state that is no delivery to make (keycount_live: a state
 * that a later schema adds counts only once it says where).
 *
 * Fatal: out of memory.
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
#include "store_rec.h"

#define KC_BUCKETS	1024

struct keycount {
	struct keycount	*next;
	char		 source[STORE_NAME_MAX + 1];
	uint32_t	 sink;
	uint8_t		 module;
	int64_t		 live;		/* rows not dead */
	int64_t		 dead;
};

struct kc_delta {
	unsigned char	 rk[STORE_ROWKEY_LEN];
	char		 source[STORE_NAME_MAX + 1];
	uint32_t	 sink;
	uint8_t		 module;
	int8_t		 dlive, ddead;
};

struct keycounts {
	struct keycount	*tab[KC_BUCKETS];
	struct kc_delta	*delta;		/* the open batch's */
	size_t		 ndelta, capdelta;
	int		 seeded;	/* the walk passed every row */
	int		 cursor_set;	/* the walk passed cursor */
	unsigned char	 cursor[STORE_ROWKEY_LEN];
};

static struct keycount *kc_get(struct keycounts *, const char *, uint32_t,
		    uint8_t, int);

static struct keycounts *
kc_of(struct store *st)
{
	if (st->kc == NULL && (st->kc = calloc(1, sizeof(*st->kc))) == NULL)
		fatal("store: key counts");
	return st->kc;
}

static struct keycount *
kc_get(struct keycounts *kc, const char *source, uint32_t sink,
    uint8_t module, int create)
{
	struct keycount *k;
	size_t b;

	b = ids_fnv1a(IDS_FNV_INIT, source, strlen(source));
	b = ids_fnv1a(b, &sink, sizeof(sink));
	b = ids_fnv1a(b, &module, sizeof(module)) % KC_BUCKETS;
	for (k = kc->tab[b]; k != NULL; k = k->next)
		if (k->sink == sink && k->module == module &&
		    strcmp(k->source, source) == 0)
			return k;
	if (!create)
		return NULL;
	if ((k = calloc(1, sizeof(*k))) == NULL)
		fatal("store: key counts");
	snprintf(k->source, sizeof(k->source), "%s", source);
	k->sink = sink;
	k->module = module;
	k->next = kc->tab[b];
	kc->tab[b] = k;
	return k;
}

int
keycount_live(int state)
{
	switch (state) {
	case STORE_ROW_DUE:
	case STORE_ROW_MEMBER:
	case STORE_ROW_HEAD:
	case STORE_ROW_PARKED:
		return 1;
	case STORE_ROW_DEAD:
		return 0;
	}
	return -1;
}

void
keycount_row(struct store_batch *b, const unsigned char *rk,
    const struct store_row *r, int dlive, int ddead)
{
	struct keycounts *kc;
	struct kc_delta *d;

	if (b->st->client || r->state == 0 || r->source[0] == '\0')
		return;
	kc = kc_of(b->st);
	if (kc->ndelta == kc->capdelta) {
		kc->capdelta = kc->capdelta ? kc->capdelta * 2 : 64;
		if ((kc->delta = reallocarray(kc->delta, kc->capdelta,
		    sizeof(*kc->delta))) == NULL)
			fatal("store: key counts");
	}
	d = &kc->delta[kc->ndelta++];
	memcpy(d->rk, rk, STORE_ROWKEY_LEN);
	snprintf(d->source, sizeof(d->source), "%s", r->source);
	d->sink = r->sink_index;
	d->module = r->module;
	d->dlive = (int8_t)dlive;
	d->ddead = (int8_t)ddead;
}

void
keycount_begin(struct store *st)
{
	if (st->kc != NULL)
		st->kc->ndelta = 0;
}

void
keycount_commit(struct store *st)
{
	struct keycounts *kc = st->kc;
	struct keycount *k;
	struct kc_delta *d;
	size_t i;

	if (kc == NULL)
		return;
	for (i = 0; i < kc->ndelta; i++) {
		d = &kc->delta[i];
		/* A row ahead of the walk is counted by it. */
		if (!kc->seeded && (!kc->cursor_set ||
		    memcmp(d->rk, kc->cursor, STORE_ROWKEY_LEN) > 0))
			continue;
		k = kc_get(kc, d->source, d->sink, d->module, 1);
		k->live += d->dlive;
		k->dead += d->ddead;
	}
	kc->ndelta = 0;
}

void
keycount_free(struct store *st)
{
	struct keycount *k, *n;
	size_t b;

	if (st->kc == NULL)
		return;
	for (b = 0; b < KC_BUCKETS; b++)
		for (k = st->kc->tab[b]; k != NULL; k = n) {
			n = k->next;
			free(k);
		}
	free(st->kc->delta);
	free(st->kc);
	st->kc = NULL;
}

int
store_keycount_seed(struct store *st, unsigned max)
{
	struct keycounts *kc;
	struct keycount *k;
	struct store_row r;
	unsigned char start[STORE_ROWKEY_LEN];
	struct walk w;
	unsigned n = 0;
	int ret = 1;

	if (st->client)
		return 1;
	kc = kc_of(st);
	if (kc->seeded)
		return 1;
	if (st->batch_open) {
		store_seterr(st, 0, "store %s: key counts: a batch is open",
		    st->dir);
		return -1;
	}
	st->dberr[0] = '\0';
	/* Just after the cursor: the next sink index of its seq. */
	memset(start, 0, sizeof(start));
	if (kc->cursor_set) {
		uint64_t seq = rec_get_u64(kc->cursor);
		uint32_t sink = rec_get_u32(kc->cursor + 8);

		if (sink == UINT32_MAX)
			store_key_row(start, seq + 1, 0);
		else
			store_key_row(start, seq, sink + 1);
	}
	store_walk_init(&w, st, NULL, T_ROWS, start, sizeof(start));
	while (n < max && (ret = store_walk_next(&w)) == 1) {
		n++;
		if (w.klen != STORE_ROWKEY_LEN)
			continue;
		memcpy(kc->cursor, w.key, STORE_ROWKEY_LEN);
		kc->cursor_set = 1;
		if (store_rec_row_decode(w.key, w.klen, w.val, w.vlen, &r,
		    st->err, sizeof(st->err)) == -1 || r.source[0] == '\0')
			continue;
		if (keycount_live(r.state) == -1)
			continue;
		k = kc_get(kc, r.source, r.sink_index, r.module, 1);
		if (keycount_live(r.state))
			k->live++;
		else
			k->dead++;
	}
	if (store_walk_done(&w, ret == -1 ? -1 : 0) == -1)
		return -1;
	if (ret == 0)
		kc->seeded = 1;
	return kc->seeded;
}

int
store_keycount(struct store *st, const char *source, uint32_t sink,
    uint8_t module, uint64_t *live, uint64_t *dead)
{
	struct keycount *k;

	*live = *dead = 0;
	if (st->client || st->kc == NULL || !st->kc->seeded)
		return -1;
	if ((k = kc_get(st->kc, source, sink, module, 0)) == NULL)
		return 0;
	*live = k->live > 0 ? (uint64_t)k->live : 0;
	*dead = k->dead > 0 ? (uint64_t)k->dead : 0;
	return 1;
}
