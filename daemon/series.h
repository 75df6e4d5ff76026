/* SPDX-License-Identifier: ISC */
/*
 * series.h: the master's per-second counters of the last hour, for the
 * console's charts (GET /v1/stats/series, admin_api_metrics.c).
 *
 * A ring of SERIES_SECONDS slots, one a second of wall time, each
 * stamped with its second: adding to a second whose slot holds an older
 * one empties the slot first, and reading a second gives 0 unless its
 * slot is stamped with it.  So a quiet hour, a stopped clock or one set
 * back never shows another hour's counts, and nothing sweeps the ring.
 * An add is a few stores; a read of the whole hour walks its 3,600
 * slots, never a table of the store.  The ring is the master's own
 * memory and starts empty at each start.
 *
 * The functions taking now_s are the ring itself (the clock a seam, for
 * tests/check_series.c); series_add stamps with the wall clock.
 */
#ifndef ANKUSA_SERIES_H
#define ANKUSA_SERIES_H

#include <stdint.h>

#include <jansson.h>

#define SERIES_SECONDS	3600

enum series_kind {
	SERIES_INGEST = 0,	/* hooks committed (accepted, flagged too) */
	SERIES_DELIVERED,	/* attempts that delivered */
	SERIES_FAILED,		/* attempts that did not */
	SERIES_DEAD,		/* rows dead-lettered */
	SERIES_2XX,		/* attempts by the class of their answer */
	SERIES_3XX,
	SERIES_4XX,
	SERIES_5XX,
	SERIES_NO_ANSWER,	/* no HTTP answer: timeout, network, a
				 * queue sink's error, a status < 200 */
	SERIES_N
};

/* Add n to kind's count of second now_s. */
void	 series_add_at(uint64_t now_s, enum series_kind, uint32_t n);
/* An attempt's outcome at now_s: delivered or failed, and the class of
 * its HTTP status (0: none). */
void	 series_attempt_at(uint64_t now_s, int ok, uint32_t status);
/* Kind's count of second s (0 when the ring no longer holds it). */
uint32_t series_get(uint64_t now_s, uint64_t s, enum series_kind);
/*
 * The last seconds (1 to SERIES_SECONDS) up to now_s included, summed in
 * steps of step seconds (1 to seconds; the first step holds what is
 * left when step does not divide seconds): {"now": now_s, "step": step,
 * "start": the first step's first second, "series": {"ingest": [...],
 * "delivered", "failed", "dead", "2xx", "3xx", "4xx", "5xx",
 * "no_answer"}}, each an array of counts, oldest first.  NULL when out
 * of memory.
 */
json_t	*series_json(uint64_t now_s, uint32_t seconds, uint32_t step);
/* The name of kind in series_json. */
const char *series_name(enum series_kind);
/* Empty the ring (tests). */
void	 series_reset(void);

/* The same at the wall clock's second. */
void	 series_add(enum series_kind, uint32_t n);
void	 series_attempt(int ok, uint32_t status);

#endif /* ANKUSA_SERIES_H */
