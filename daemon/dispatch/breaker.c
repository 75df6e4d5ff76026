/* SPDX-License-Identifier: ISC */
/*
 * breaker.c: circuit breakers; see breaker.h for the rules.
 *
 * Open time: the n-th consecutive open lasts
 *	open_ms(n) = min(max_open_ms, open_ms * 2^(n-1))
 * so with the defaults (30 s, 300 s) a dead sink is probed after 30 s,
 * 60 s, 120 s, 240 s, then every 300 s.  A success resets n.
 */
#include "config.h"

#include <string.h>

#include "breaker.h"

static void	breaker_open(struct breaker *, const struct breaker_conf *,
		    uint64_t);

void
breaker_init(struct breaker *b)
{
	memset(b, 0, sizeof(*b));
	b->state = BREAKER_CLOSED;
}

const char *
breaker_state_name(enum breaker_state s)
{
	switch (s) {
	case BREAKER_CLOSED:
		return "closed";
	case BREAKER_OPEN:
		return "open";
	case BREAKER_HALF_OPEN:
		return "half_open";
	}
	return "unknown";
}

int
breaker_is_idle(const struct breaker *b)
{
	return b->state == BREAKER_CLOSED && b->fails == 0;
}

static void
breaker_open(struct breaker *b, const struct breaker_conf *c, uint64_t now)
{
	uint64_t ms = c->open_ms;
	uint32_t i;

	b->opens++;
	/* Double per consecutive open, stopping at the cap (and before the
	 * shift could overflow). */
	for (i = 1; i < b->opens && ms < c->max_open_ms; i++)
		ms *= 2;
	if (ms > c->max_open_ms)
		ms = c->max_open_ms;
	b->state = BREAKER_OPEN;
	b->open_ms = ms;
	b->open_until = now + ms;
	b->probing = 0;
	b->fails = 0;
}

enum breaker_verdict
breaker_may_start(struct breaker *b, const struct breaker_conf *c,
    uint64_t now, uint64_t *until)
{
	if (c->failures == 0 || b->state == BREAKER_CLOSED)
		return BREAKER_START;
	if (b->state == BREAKER_OPEN) {
		if (now < b->open_until) {
			*until = b->open_until;
			return BREAKER_PARK;
		}
		b->state = BREAKER_HALF_OPEN;
		b->probing = 0;
	}
	/* Half-open: one probe; what comes meanwhile waits open_ms. */
	if (b->probing) {
		*until = now + c->open_ms;
		return BREAKER_PARK;
	}
	b->probing = 1;
	return BREAKER_PROBE;
}

int
breaker_parks(const struct breaker *b, const struct breaker_conf *c,
    uint64_t now, uint64_t *until)
{
	if (c->failures == 0 || b->state == BREAKER_CLOSED)
		return 0;
	if (b->state == BREAKER_OPEN && now < b->open_until) {
		*until = b->open_until;
		return 1;
	}
	if (b->probing) {
		*until = now + c->open_ms;
		return 1;
	}
	return 0;
}

/* A straggler's answer (an attempt started before the breaker opened)
 * says how the sink was then, not now: only the probe's moves a breaker
 * that is open or half-open. */
int
breaker_ok(struct breaker *b, int probe)
{
	int closed = b->state != BREAKER_CLOSED;

	if (closed && !probe)
		return 0;
	b->state = BREAKER_CLOSED;
	b->fails = 0;
	b->opens = 0;
	b->probing = 0;
	return closed;
}

int
breaker_fail(struct breaker *b, const struct breaker_conf *c, uint64_t now,
    int probe)
{
	if (c->failures == 0)
		return 0;
	switch (b->state) {
	case BREAKER_CLOSED:
		if (++b->fails < c->failures)
			return 0;
		breaker_open(b, c, now);
		return 1;
	case BREAKER_HALF_OPEN:
		/* The probe failed: open again, for longer. */
		if (!probe)
			return 0;
		breaker_open(b, c, now);
		return 1;
	case BREAKER_OPEN:
		/* Already open, nothing more. */
		return 0;
	}
	return 0;
}

void
breaker_permanent(struct breaker *b, int probe)
{
	/* Not the sink's health: never counts.  A probe that got one has
	 * told nothing; the next attempt probes again. */
	if (b->state == BREAKER_HALF_OPEN && probe)
		b->probing = 0;
}

void
breaker_probe_lost(struct breaker *b)
{
	if (b->state == BREAKER_HALF_OPEN)
		b->probing = 0;
}
