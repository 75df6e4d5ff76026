/* SPDX-License-Identifier: ISC */
/*
 * ratelimit.h: GCRA (generic cell rate algorithm) limiters, keyed by name.
 *
 * The master keeps one limiter per tenant (rate_limits.default and
 * rate_limits.tenants.<t>) and one per source for the quarantine pen.  A
 * limiter holds only its theoretical arrival time (TAT); one whose TAT has
 * passed is the same as a new one, so ratelimit_sweep() drops it and the
 * table stays bounded by the keys active within one burst window.  Time is
 * given by the caller (monotonic ms), so tests use a fake clock.
 */
#ifndef ANKUSA_RATELIMIT_H
#define ANKUSA_RATELIMIT_H

#include <stdint.h>

struct ratelimit;

struct ratelimit *ratelimit_new(void);
void	 ratelimit_free(struct ratelimit *);
/*
 * Charge one cell to key at now_ms, for a limit of rate cells per second
 * with burst cells allowed back to back.  Returns 0 if allowed (the cell
 * is charged), else the milliseconds until one cell would be allowed
 * (nothing charged).
 */
uint64_t ratelimit_charge(struct ratelimit *, const char *key, double rate,
	    uint32_t burst, uint64_t now_ms);
/* Drop limiters that are back at full burst; returns how many remain. */
size_t	 ratelimit_sweep(struct ratelimit *, uint64_t now_ms);
size_t	 ratelimit_size(const struct ratelimit *);
/* Drop key's limiter: its next charge finds a full burst. */
void	 ratelimit_forget(struct ratelimit *, const char *key);
/* Retry-After in whole seconds for a wait, rounded up, at least 1. */
uint32_t ratelimit_retry_after_s(uint64_t wait_ms);

#endif
