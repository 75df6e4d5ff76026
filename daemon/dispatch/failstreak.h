/* SPDX-License-Identifier: ISC */
/*
 * failstreak.h: how long each sink key (source, sink index, in every
 * tenant, as a pause is) has failed every attempt, for its sink entry's
 * disable_after_s (issue 38, section 5).  Pure: no clock but the now it
 * is given.  In memory only: a restart starts every streak again, so a
 * key is disabled disable_after_s after the first failure this process
 * saw at the earliest.
 */
#ifndef ANKUSA_FAILSTREAK_H
#define ANKUSA_FAILSTREAK_H

#include <stdint.h>

/* A failed attempt of (source, sink) at now (wall ms): 1 when every
 * attempt of the key has failed since after_ms or more before now (the
 * streak is then forgotten: the caller disables the key), else 0;
 * after_ms 0 is never (nothing is kept). */
int	failstreak_fail(const char *source, uint32_t sink, uint64_t now,
	    uint64_t after_ms);
/* A successful attempt, or a resume: the key's streak ends. */
void	failstreak_ok(const char *source, uint32_t sink);
/* Keys with a streak running. */
int	failstreak_count(void);
void	failstreak_clear(void);

#endif
