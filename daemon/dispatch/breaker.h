/* SPDX-License-Identifier: ISC */
/*
 * breaker.h: the circuit breaker of one sink key (the spec's "Per-sink
 * isolation").  Pure: every call is given now (ms); no clock, no I/O.
 *
 * Closed: attempts run; dispatch.breaker_failures consecutive failures
 * (transient errors and timeouts; a permanent answer does not count) open
 * it.  Open: nothing starts until open_until; rows are parked meanwhile.
 * At open_until one attempt runs as a probe (half-open); rows claimed
 * while it runs are parked for breaker_open_ms.  The probe's success
 * closes the breaker; its failure opens it again for twice as long, up to
 * breaker_max_open_ms.  Only the probe moves a breaker that is not closed:
 * an attempt that started before the open and ends after it (a straggler)
 * neither closes it nor opens it again.
 */
#ifndef ANKUSA_BREAKER_H
#define ANKUSA_BREAKER_H

#include <stdint.h>

enum breaker_state {
	BREAKER_CLOSED = 0,
	BREAKER_OPEN,
	BREAKER_HALF_OPEN,	/* open time over: one probe may run */
};

struct breaker_conf {
	uint32_t	failures;	/* 0: breakers off */
	uint64_t	open_ms;
	uint64_t	max_open_ms;
};

struct breaker {
	enum breaker_state	state;
	uint32_t		fails;		/* consecutive, while closed */
	uint32_t		opens;		/* consecutive opens */
	uint64_t		open_ms;	/* length of the current open */
	uint64_t		open_until;	/* open: when a probe may run */
	int			probing;	/* half-open: the probe runs */
};

/* What may happen to an attempt of this key now. */
enum breaker_verdict {
	BREAKER_START,		/* run it */
	BREAKER_PROBE,		/* run it as the probe */
	BREAKER_PARK,		/* park the row until *until */
};

void	breaker_init(struct breaker *);
/* Called before starting an attempt; PARK gives the time to park until. */
enum breaker_verdict breaker_may_start(struct breaker *,
	    const struct breaker_conf *, uint64_t now, uint64_t *until);
/* Whether a row claimed now must be parked (and until when), without
 * taking the probe: an open breaker parks until its open time ends, a
 * running probe parks for open_ms. */
int	breaker_parks(const struct breaker *, const struct breaker_conf *,
	    uint64_t now, uint64_t *until);
/* Outcomes of attempts; probe: the attempt was started as the probe
 * (BREAKER_PROBE).  breaker_ok returns 1 when it closed the breaker;
 * breaker_fail returns 1 when it opened it (the caller then parks the
 * key's queued rows until b->open_until). */
int	breaker_ok(struct breaker *, int probe);
int	breaker_fail(struct breaker *, const struct breaker_conf *, uint64_t now,
	    int probe);
void	breaker_permanent(struct breaker *, int probe);
/* A running probe vanished without an outcome (its row was settled by
 * something else): let another probe run. */
void	breaker_probe_lost(struct breaker *);
int	breaker_is_idle(const struct breaker *);	/* closed, no failures */
const char *breaker_state_name(enum breaker_state);

#endif
