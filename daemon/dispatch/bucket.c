/* SPDX-License-Identifier: ISC */
/*
 * bucket.c: the sink keys' token buckets and their holds; see bucket.h.
 * A chained hash table: buckets are as many as the sink keys with a rate
 * or a hold, and a lookup is made only for a row whose sink has one.
 *
 * Fatal: out of memory.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "bucket.h"
#include "ids.h"
#include "log.h"

static size_t	 key_slot(const char *, const char *, uint32_t);

uint32_t
bucket_default_burst(double per_second)
{
	uint32_t b;

	if (per_second <= 1)
		return 1;
	if (per_second >= 1e6)
		return 1000000;
	b = (uint32_t)per_second;
	return (double)b < per_second ? b + 1 : b;
}

void
bucket_refill(struct bucket *b, uint64_t now)
{
	if (now <= b->at) {
		/* A clock stepped back: start from now, gaining nothing
		 * for the time it went back. */
		b->at = now;
		return;
	}
	if (b->per_second > 0) {
		b->tokens += (double)(now - b->at) * b->per_second / 1000.0;
		if (b->tokens > b->burst)
			b->tokens = b->burst;
	}
	b->at = now;
}

int
bucket_take(struct bucket *b, uint64_t now)
{
	if (now < b->held_until)
		return 0;
	if (b->per_second <= 0)
		return 1;
	bucket_refill(b, now);
	if (b->tokens < 1)
		return 0;
	b->tokens -= 1;
	return 1;
}

uint64_t
bucket_next(struct bucket *b, uint64_t now)
{
	uint64_t t = now, w;
	double need;

	if (b->per_second > 0) {
		bucket_refill(b, now);
		if ((need = 1 - b->tokens) > 0) {
			/* Rounded up, so that the token is there at t. */
			w = (uint64_t)(need * 1000.0 / b->per_second);
			if ((double)w * b->per_second < need * 1000.0)
				w++;
			t = now + w;
		}
	}
	return b->held_until > t ? b->held_until : t;
}

void
bucket_hold(struct bucket *b, uint64_t until)
{
	if (until > b->held_until)
		b->held_until = until;
}

void
bucket_set_rate(struct bucket *b, double per_second, uint32_t burst,
    uint64_t now)
{
	bucket_refill(b, now);
	if (per_second > 0 && b->per_second <= 0)
		b->tokens = burst;	/* newly limited: a full bucket */
	b->per_second = per_second;
	b->burst = burst;
	if (b->tokens > burst)
		b->tokens = burst;
}

void
bucket_info(struct bucket *b, uint64_t now, struct bucket_info *bi)
{
	bucket_refill(b, now);
	bi->per_second = b->per_second;
	bi->burst = b->burst;
	bi->tokens = b->per_second > 0 ? b->tokens : 0;
	bi->held_until = b->held_until > now ? b->held_until : 0;
	bi->overridden = b->overridden;
}

/* --- the table --- */

static size_t
key_slot(const char *tenant, const char *source, uint32_t sink)
{
	uint64_t h = IDS_FNV_INIT;
	unsigned char s[4];

	h = ids_fnv1a(h, tenant, strlen(tenant) + 1);
	h = ids_fnv1a(h, source, strlen(source) + 1);
	s[0] = sink >> 24;
	s[1] = sink >> 16;
	s[2] = sink >> 8;
	s[3] = sink;
	return ids_fnv1a(h, s, sizeof(s)) % BUCKET_HASH;
}

struct bucket *
buckets_find(struct buckets *bs, const char *tenant, const char *source,
    uint32_t sink)
{
	struct bucket *b;

	for (b = bs->tab[key_slot(tenant, source, sink)]; b != NULL;
	    b = b->next)
		if (b->sink == sink && strcmp(b->source, source) == 0 &&
		    strcmp(b->tenant, tenant) == 0)
			return b;
	return NULL;
}

struct bucket *
buckets_get(struct buckets *bs, const char *tenant, const char *source,
    uint32_t sink)
{
	struct bucket *b;
	size_t i;

	if ((b = buckets_find(bs, tenant, source, sink)) != NULL)
		return b;
	if ((b = calloc(1, sizeof(*b))) == NULL)
		fatal("bucket");
	snprintf(b->tenant, sizeof(b->tenant), "%s", tenant);
	snprintf(b->source, sizeof(b->source), "%s", source);
	b->sink = sink;
	i = key_slot(tenant, source, sink);
	b->next = bs->tab[i];
	bs->tab[i] = b;
	bs->n++;
	return b;
}

void
buckets_remove(struct buckets *bs, struct bucket *b)
{
	struct bucket **pp;

	for (pp = &bs->tab[key_slot(b->tenant, b->source, b->sink)];
	    *pp != NULL; pp = &(*pp)->next)
		if (*pp == b) {
			*pp = b->next;
			bs->n--;
			free(b);
			return;
		}
	fatalx("bucket: not in its table");
}

void
buckets_each(struct buckets *bs, void (*fn)(struct bucket *, void *),
    void *arg)
{
	struct bucket *b, *next;
	size_t i;

	for (i = 0; i < BUCKET_HASH; i++)
		for (b = bs->tab[i]; b != NULL; b = next) {
			next = b->next;
			fn(b, arg);
		}
}

void
buckets_clear(struct buckets *bs)
{
	struct bucket *b, *next;
	size_t i;

	for (i = 0; i < BUCKET_HASH; i++) {
		for (b = bs->tab[i]; b != NULL; b = next) {
			next = b->next;
			free(b);
		}
		bs->tab[i] = NULL;
	}
	bs->n = 0;
}
