/* SPDX-License-Identifier: ISC */
/*
 * sinkq.h: the spec's "Per-sink isolation": one queue per sink key
 * {tenant, source, sink index, module}, and the choice of the next
 * attempt to start: round-robin across tenants first, then across each
 * tenant's keys, within dispatch.concurrency, each tenant's concurrency and
 * dispatch.sink_concurrency.  A key carries its breaker, so the cap and the
 * breaker are per tenant.  Private to the dispatch modules.
 */
#ifndef ANKUSA_SINKQ_H
#define ANKUSA_SINKQ_H

#include <sys/queue.h>

#include <stdint.h>

#include "breaker.h"
#include "window.h"

struct drow;

TAILQ_HEAD(drowq, drow);

struct dsinkq {
	char			 source[65];
	uint32_t		 sink;		/* the row's bound sink index */
	uint8_t			 module;
	int			 batched;	/* its attempts go to a batcher */
	struct dtenant		*t;
	struct drowq		 queue;		/* claimed, waiting for a slot */
	uint32_t		 nqueued;
	uint32_t		 running;
	uint32_t		 claimed;	/* rows of this key, any state */
	struct breaker		 br;
	int			 in_ring;
	TAILQ_ENTRY(dsinkq)	 ring;		/* its tenant's ready keys */
	TAILQ_ENTRY(dsinkq)	 all;		/* its tenant's keys */
};

TAILQ_HEAD(dsinkq_list, dsinkq);

struct dtenant {
	char			 name[65];
	struct window		 win;		/* this tenant's window */
	struct dsinkq_list	 keys;		/* every key */
	struct dsinkq_list	 ready;		/* keys with queued rows, RR */
	int			 in_ring;
	TAILQ_ENTRY(dtenant)	 ring;		/* tenants with ready keys, RR */
	TAILQ_ENTRY(dtenant)	 all;
	uint32_t		 nkeys;
	/* from the last scan */
	int			 exhausted;	/* no unclaimed row was due */
	/* The scan cursor: the due key of the last row claimed.  Rows
	 * before it are claimed, so a scan starts after it instead of
	 * reading its way past every claimed row again. */
	int			 cur_set;
	uint64_t		 cur_due;
	unsigned char		 cur_key[12];
	uint64_t		 cur_since;	/* set at, wall ms */
	int			 cur_held;	/* the last row passed was of a
						 * held source (not claimed) */
	/* Rows passed for want of their key's token (dispatch_rate.c):
	 * when the next token comes (rate_wake; rate_retry: at the next
	 * run, the last rate scan stopped at a full window), and where the
	 * rate scan starts: just after (rate_due, rate_key), or at the
	 * tenant's first row (rate_from 0). */
	int			 rate_pending;
	int			 rate_retry;
	uint64_t		 rate_wake;
	int			 rate_from;
	uint64_t		 rate_due;
	unsigned char		 rate_key[12];
};

TAILQ_HEAD(dtenant_list, dtenant);

struct dsinkq	*sinkq_get(struct dtenant *, const char *source,
		    uint32_t sink, uint8_t module);
/* Free a key that holds nothing: no rows and an idle breaker. */
void		 sinkq_maybe_free(struct dsinkq *);
void		 sinkq_push(struct dsinkq *, struct drow *);
struct drow	*sinkq_pop(struct dsinkq *);
/* Ready rings: a key with queued rows is in its tenant's ring, a tenant
 * with ready keys in the dispatch's ring. */
void		 sinkq_ready(struct dtenant_list *, struct dsinkq *);
/*
 * The next key to start from (keys that batch are not: see dispatch.c):
 * round-robin over the tenants of ring whose window may run, then over
 * that tenant's ready keys whose running count is under cap (0: no cap).
 * Moves both to the back of their rings.  NULL if no key may start.
 */
struct dsinkq	*sinkq_next(struct dtenant_list *ring, uint32_t cap);
/* The key sinkq_next gave could not start (no idle deliver process): it
 * and its tenant go back to the front of their rings, so the next slot
 * is still theirs. */
void		 sinkq_unturn(struct dtenant_list *ring, struct dsinkq *);
/* How many keys of ring have queued rows: 0, 1 (*sole is the key) or 2
 * for two or more.  Keys and tenants with nothing queued leave their
 * rings on the way. */
int		 sinkq_waiting(struct dtenant_list *ring, struct dsinkq **sole);

#endif
