/* SPDX-License-Identifier: ISC */
/*
 * health.h: each sink key's health (issue 37, "Each destination's
 * health"): the success ratio and the attempts' p50 and p99 over the last
 * 5 minutes and the last hour, the last success, the consecutive
 * failures and the last error with its time.  Pure: every call is given
 * now (wall ms); no clock, no I/O, no table walk.
 *
 * A key is (source, sink index) as the config names it, with the sink's
 * module; only keys of the config have a ring, so their number is bounded
 * by the config and never grows from outside.  Each key keeps a ring of
 * HEALTH_SLOTS slots, one a minute, each with its attempts, its successes
 * and a small fixed histogram of the attempts' durations; a window of m
 * minutes is the current minute and the m - 1 before it.  A percentile is
 * read from the window's histogram: linear within its bucket, the
 * longest attempt seen for the last, open, bucket.
 *
 * Memory: health_bytes (docs/PERFORMANCE gives it at 1,000 keys).
 */
#ifndef ANKUSA_HEALTH_H
#define ANKUSA_HEALTH_H

#include <sys/types.h>

#include <stddef.h>
#include <stdint.h>

#include "dispatch.h"

#define HEALTH_SLOTS		60	/* minutes: the last hour */
#define HEALTH_ERROR_MAX	256	/* the last error kept, bytes */

struct conf;
struct health;

/* A window's figures. */
struct health_window {
	uint64_t	attempts;
	uint64_t	ok;
	double		ratio;		/* ok / attempts, -1 without one */
	double		p50_ms;		/* -1 without an attempt */
	double		p99_ms;
};

/* A key as health_key reads it; the strings live until the next
 * health_reconfigure or health_attempt. */
struct health_info {
	const char		*source;
	uint32_t		 sink;
	uint8_t			 module;
	uint64_t		 last_ok;	/* wall ms, 0: none */
	uint64_t		 last_error_at;	/* wall ms, 0: none */
	const char		*last_error;	/* "" without one */
	uint32_t		 failures;	/* consecutive, since the last
						 * success */
	struct health_window	 w5;		/* the last 5 minutes */
	struct health_window	 w60;		/* the last hour */
};

struct health	*health_new(void);
void		 health_free(struct health *);
/* The keys become the config's: a key it still names with the same
 * module keeps its ring and figures, the others go, new ones start
 * empty. */
void		 health_reconfigure(struct health *, const struct conf *);
/* An attempt of (source, sink) ended at now after us microseconds; detail
 * the sink's words on a failure (kept as the last error).  0, or -1 when
 * the config names no such key (nothing kept). */
int		 health_attempt(struct health *, const char *source,
		    uint32_t sink, enum attempt_result, uint64_t us,
		    const char *detail, uint64_t now);
/* The keys, in (source, sink) order. */
size_t		 health_nkeys(const struct health *);
/* The i-th key as of now: 0, or -1 past the last. */
int		 health_key(const struct health *, size_t i, uint64_t now,
		    struct health_info *);
/* The index of (source, sink), or -1. */
ssize_t		 health_find(const struct health *, const char *source,
		    uint32_t sink);
/* Bytes the keys and their rings hold. */
size_t		 health_bytes(const struct health *);

#endif
