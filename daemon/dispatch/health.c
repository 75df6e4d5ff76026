/* SPDX-License-Identifier: ISC */
/*
 * health.c: the sink keys' rings; see health.h.
 *
 * The keys are an array sorted by (source, sink index), found by binary
 * search for each attempt; each holds its ring inline, so the memory is
 * one allocation per key and nothing grows with the traffic.  A slot
 * carries the minute it counts: a slot of an older minute is emptied
 * when an attempt of its new minute comes, and passed over by the
 * windows meanwhile, so a key with no traffic needs no upkeep.
 *
 * Fatal: out of memory.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "dispatch.h"
#include "health.h"
#include "log.h"
#include "utf8.h"

#define MINUTE_MS	60000
#define NLE		14	/* buckets, the last one open */

/* The buckets' upper bounds, microseconds; the last is open. */
static const uint64_t le_us[NLE - 1] = { 1000, 5000, 10000, 25000, 50000,
	100000, 250000, 500000, 1000000, 2500000, 5000000, 10000000,
	30000000 };

struct slot {
	uint32_t	minute;		/* now / MINUTE_MS it counts */
	uint32_t	attempts;
	uint32_t	ok;
	uint32_t	le[NLE];	/* attempts by duration */
	uint32_t	max_ms;		/* the longest attempt */
};

struct hkey {
	char		 source[STORE_NAME_MAX + 1];
	uint32_t	 sink;
	uint8_t		 module;
	uint32_t	 failures;
	uint64_t	 last_ok;
	uint64_t	 last_error_at;
	char		 last_error[HEALTH_ERROR_MAX];
	struct slot	 ring[HEALTH_SLOTS];
};

struct health {
	struct hkey	*keys;
	size_t		 nkeys;
};

static int	key_cmp(const char *, uint32_t, const struct hkey *);
static void	window(const struct hkey *, uint64_t, unsigned,
		    struct health_window *);
static double	percentile(const uint32_t *, uint64_t, uint32_t, double);

struct health *
health_new(void)
{
	struct health *h;

	if ((h = calloc(1, sizeof(*h))) == NULL)
		fatal("health");
	return h;
}

void
health_free(struct health *h)
{
	if (h == NULL)
		return;
	free(h->keys);
	free(h);
}

static int
key_cmp(const char *source, uint32_t sink, const struct hkey *k)
{
	int c = strcmp(source, k->source);

	if (c != 0)
		return c;
	return sink < k->sink ? -1 : sink > k->sink;
}

static int
hkey_qcmp(const void *a, const void *b)
{
	const struct hkey *x = a;

	return key_cmp(x->source, x->sink, b);
}

ssize_t
health_find(const struct health *h, const char *source, uint32_t sink)
{
	size_t lo = 0, hi = h->nkeys, mid;
	int c;

	while (lo < hi) {
		mid = lo + (hi - lo) / 2;
		if ((c = key_cmp(source, sink, &h->keys[mid])) == 0)
			return (ssize_t)mid;
		if (c < 0)
			hi = mid;
		else
			lo = mid + 1;
	}
	return -1;
}

void
health_reconfigure(struct health *h, const struct conf *c)
{
	struct hkey *keys, *k;
	size_t n = 0;
	ssize_t old;
	int i, j;

	for (i = 0; i < c->nsources; i++)
		n += (size_t)c->sources[i].nsinks;
	if ((keys = calloc(n ? n : 1, sizeof(*keys))) == NULL)
		fatal("health");
	n = 0;
	for (i = 0; i < c->nsources; i++)
		for (j = 0; j < c->sources[i].nsinks; j++) {
			k = &keys[n++];
			snprintf(k->source, sizeof(k->source), "%s",
			    c->sources[i].id);
			k->sink = (uint32_t)j;
			k->module = dispatch_sink_module(
			    c->sources[i].sinks[j].type);
			/* A key the config named before keeps its
			 * figures while its module is the same. */
			old = health_find(h, k->source, k->sink);
			if (old != -1 && h->keys[old].module == k->module)
				*k = h->keys[old];
		}
	qsort(keys, n, sizeof(*keys), hkey_qcmp);
	free(h->keys);
	h->keys = keys;
	h->nkeys = n;
}

int
health_attempt(struct health *h, const char *source, uint32_t sink,
    enum attempt_result res, uint64_t us, const char *detail, uint64_t now)
{
	struct hkey *k;
	struct slot *s;
	uint32_t minute = (uint32_t)(now / MINUTE_MS);
	uint64_t ms = us / 1000;
	ssize_t i;
	size_t b;

	if ((i = health_find(h, source, sink)) == -1)
		return -1;
	k = &h->keys[i];
	s = &k->ring[minute % HEALTH_SLOTS];
	if (s->minute != minute) {
		memset(s, 0, sizeof(*s));
		s->minute = minute;
	}
	s->attempts++;
	for (b = 0; b < NLE - 1 && us > le_us[b]; b++)
		;
	s->le[b]++;
	if (ms > s->max_ms)
		s->max_ms = ms > UINT32_MAX ? UINT32_MAX : (uint32_t)ms;
	if (res == ATTEMPT_OK) {
		s->ok++;
		k->failures = 0;
		k->last_ok = now;
		return 0;
	}
	k->failures++;
	k->last_error_at = now;
	if (detail == NULL)
		detail = "";
	utf8_clean(k->last_error, sizeof(k->last_error), detail,
	    strlen(detail));
	return 0;
}

/*
 * The p-th quantile (0 < p < 1) of n attempts spread over the buckets:
 * the attempt of rank ceil(p n) lies in some bucket, and its duration is
 * taken as linear between that bucket's bounds (the open bucket's upper
 * bound is the longest attempt, max_ms).
 */
static double
percentile(const uint32_t *le, uint64_t n, uint32_t max_ms, double p)
{
	uint64_t rank, cum = 0;
	double lo, hi;
	size_t b;

	rank = (uint64_t)(p * (double)n);
	if ((double)rank < p * (double)n)
		rank++;
	if (rank == 0)
		rank = 1;
	for (b = 0; b < NLE; b++) {
		if (le[b] == 0 || cum + le[b] < rank) {
			cum += le[b];
			continue;
		}
		lo = b == 0 ? 0 : (double)le_us[b - 1] / 1000;
		hi = b < NLE - 1 ? (double)le_us[b] / 1000 : (double)max_ms;
		if (hi < lo)
			hi = lo;
		return lo + (hi - lo) * (double)(rank - cum) / le[b];
	}
	return (double)max_ms;
}

/* The window of the current minute and the m - 1 before it. */
static void
window(const struct hkey *k, uint64_t now, unsigned m,
    struct health_window *w)
{
	uint32_t minute = (uint32_t)(now / MINUTE_MS), max_ms = 0;
	uint32_t le[NLE];
	const struct slot *s;
	size_t i, b;

	memset(w, 0, sizeof(*w));
	memset(le, 0, sizeof(le));
	for (i = 0; i < HEALTH_SLOTS; i++) {
		s = &k->ring[i];
		if (s->attempts == 0 || s->minute > minute ||
		    minute - s->minute >= m)
			continue;
		w->attempts += s->attempts;
		w->ok += s->ok;
		for (b = 0; b < NLE; b++)
			le[b] += s->le[b];
		if (s->max_ms > max_ms)
			max_ms = s->max_ms;
	}
	if (w->attempts == 0) {
		w->ratio = w->p50_ms = w->p99_ms = -1;
		return;
	}
	w->ratio = (double)w->ok / (double)w->attempts;
	w->p50_ms = percentile(le, w->attempts, max_ms, 0.5);
	w->p99_ms = percentile(le, w->attempts, max_ms, 0.99);
}

size_t
health_nkeys(const struct health *h)
{
	return h->nkeys;
}

int
health_key(const struct health *h, size_t i, uint64_t now,
    struct health_info *hi)
{
	const struct hkey *k;

	if (i >= h->nkeys)
		return -1;
	k = &h->keys[i];
	memset(hi, 0, sizeof(*hi));
	hi->source = k->source;
	hi->sink = k->sink;
	hi->module = k->module;
	hi->last_ok = k->last_ok;
	hi->last_error_at = k->last_error_at;
	hi->last_error = k->last_error;
	hi->failures = k->failures;
	window(k, now, 5, &hi->w5);
	window(k, now, HEALTH_SLOTS, &hi->w60);
	return 0;
}

size_t
health_bytes(const struct health *h)
{
	return sizeof(*h) + h->nkeys * sizeof(struct hkey);
}
