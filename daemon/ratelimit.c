/* SPDX-License-Identifier: ISC */
/*
 * ratelimit.c: GCRA limiters in a hash table; see ratelimit.h.
 *
 * GCRA arithmetic, in microseconds so that rates up to 10^6/s keep their
 * precision: the emission interval is T = 10^6 / rate, the burst tolerance
 * is tau = T * (burst - 1).  A cell arriving at t is allowed when
 * TAT - t <= tau (with TAT = t for a new key); then TAT = max(TAT, t) + T.
 * When refused, the wait until it would be allowed is TAT - tau - t.
 * So burst cells pass back to back, then one every T.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "log.h"
#include "ratelimit.h"

#define RL_MIN_BUCKETS	64

struct rl_entry {
	struct rl_entry	*next;
	uint64_t	 tat_us;	/* theoretical arrival time */
	char		 key[];
};

struct ratelimit {
	struct rl_entry	**buckets;
	size_t		  nbuckets;
	size_t		  n;
};

static uint64_t	rl_hash(const char *);
static void	rl_grow(struct ratelimit *);

struct ratelimit *
ratelimit_new(void)
{
	struct ratelimit *rl;

	if ((rl = calloc(1, sizeof(*rl))) == NULL ||
	    (rl->buckets = calloc(RL_MIN_BUCKETS, sizeof(*rl->buckets))) ==
	    NULL)
		fatal("ratelimit_new");
	rl->nbuckets = RL_MIN_BUCKETS;
	return rl;
}

void
ratelimit_free(struct ratelimit *rl)
{
	struct rl_entry *e, *next;
	size_t i;

	if (rl == NULL)
		return;
	for (i = 0; i < rl->nbuckets; i++)
		for (e = rl->buckets[i]; e != NULL; e = next) {
			next = e->next;
			free(e);
		}
	free(rl->buckets);
	free(rl);
}

/* The bucket of a key. */
static uint64_t
rl_hash(const char *s)
{
	return ids_fnv1a(IDS_FNV_INIT, s, strlen(s));
}

static void
rl_grow(struct ratelimit *rl)
{
	struct rl_entry **nb, *e, *next;
	size_t i, n = rl->nbuckets * 2;

	if ((nb = calloc(n, sizeof(*nb))) == NULL)
		fatal("ratelimit");
	for (i = 0; i < rl->nbuckets; i++)
		for (e = rl->buckets[i]; e != NULL; e = next) {
			next = e->next;
			e->next = nb[rl_hash(e->key) % n];
			nb[rl_hash(e->key) % n] = e;
		}
	free(rl->buckets);
	rl->buckets = nb;
	rl->nbuckets = n;
}

uint64_t
ratelimit_charge(struct ratelimit *rl, const char *key, double rate,
    uint32_t burst, uint64_t now_ms)
{
	struct rl_entry *e;
	uint64_t now = now_ms * 1000, t_us, tau, tat;
	size_t b = rl_hash(key) % rl->nbuckets;

	if (rate <= 0 || burst == 0)
		fatalx("ratelimit: rate %g burst %u for %s", rate, burst, key);
	t_us = (uint64_t)(1e6 / rate);
	if (t_us == 0)
		t_us = 1;
	tau = t_us * (burst - 1);
	for (e = rl->buckets[b]; e != NULL; e = e->next)
		if (strcmp(e->key, key) == 0)
			break;
	tat = e != NULL && e->tat_us > now ? e->tat_us : now;
	if (tat - now > tau) {
		uint64_t wait = tat - tau - now;

		return (wait + 999) / 1000;	/* ms, rounded up, >= 1 */
	}
	if (e == NULL) {
		size_t len = strlen(key) + 1;

		if ((e = malloc(sizeof(*e) + len)) == NULL)
			fatal("ratelimit");
		memcpy(e->key, key, len);
		e->next = rl->buckets[b];
		rl->buckets[b] = e;
		if (++rl->n > rl->nbuckets * 2)
			rl_grow(rl);
	}
	e->tat_us = tat + t_us;
	return 0;
}

size_t
ratelimit_sweep(struct ratelimit *rl, uint64_t now_ms)
{
	struct rl_entry **pp, *e;
	uint64_t now = now_ms * 1000;
	size_t i;

	for (i = 0; i < rl->nbuckets; i++) {
		pp = &rl->buckets[i];
		while ((e = *pp) != NULL) {
			if (e->tat_us <= now) {
				*pp = e->next;
				free(e);
				rl->n--;
			} else
				pp = &e->next;
		}
	}
	return rl->n;
}

void
ratelimit_forget(struct ratelimit *rl, const char *key)
{
	struct rl_entry **pp, *e;

	for (pp = &rl->buckets[rl_hash(key) % rl->nbuckets];
	    (e = *pp) != NULL; pp = &e->next)
		if (strcmp(e->key, key) == 0) {
			*pp = e->next;
			free(e);
			rl->n--;
			return;
		}
}

size_t
ratelimit_size(const struct ratelimit *rl)
{
	return rl->n;
}

uint32_t
ratelimit_retry_after_s(uint64_t wait_ms)
{
	uint64_t s = (wait_ms + 999) / 1000;

	return s == 0 ? 1 : (s > 86400 ? 86400 : (uint32_t)s);
}
