/* SPDX-License-Identifier: ISC */
/*
 * batcher.h: the master's side of batched sinks (sqs, google_pubsub), the
 * spec's "Batching sinks".  Pure: every call is given now (ms); no clock,
 * no I/O.  Private to the dispatch modules.
 *
 * An attempt of a batched sink waits in the batcher of its destination (a
 * string the caller builds: "sqs|<queue_url>", "pubsub|<project>/<topic>|
 * <ordering key>") until a request carries it.  Such attempts are not
 * counted against dispatch.sink_concurrency, a tenant's concurrency or
 * dispatch.concurrency: that would cap a batch at that many entries.  The
 * claimed-row windows bound how many wait; the batcher bounds its own queue
 * (max_queued per destination, max_queued_tenant of one tenant per
 * destination) and counts sink_concurrency as requests in flight per
 * destination (max_in_flight).
 *
 * Entries are grouped per destination in arrival order.  A destination has
 * at most one open (filling) batch, plus closed ones waiting for the
 * in-flight cap.  A batch closes when full (max_entries, or max_bytes
 * summed) or linger_ms after its first entry; an entry bigger than
 * max_bytes alone is accepted and travels alone.  Entries of different
 * tenants may share a batch; entries of different destinations never do.
 *
 * Each attempt stays its own: it has its own deadline (counted by the
 * caller from when it entered the batcher), times out on its own
 * (batcher_expire), settles its own row on its own entry's result and moves
 * its own key's breaker (the caller's business: a key whose breaker is open
 * adds nothing, and one whose breaker opens takes its queued entries back
 * with batcher_remove_jobs, so it never has an entry in another tenant's
 * batch).
 *
 * Memory is bounded by the queue limits: a batch's entry array grows with
 * its entries, and a destination holding nothing is freed.  Inconsistency
 * (batcher_done of a batch not in flight) is fatalx.
 */
#ifndef ANKUSA_BATCHER_H
#define ANKUSA_BATCHER_H

#include <sys/queue.h>

#include <stdint.h>

/* Recommended linger (ms): see batcher.c. */
#define BATCHER_LINGER_MS	10

/* A destination's limits, given again at each batcher_add (a reload may
 * change them; the latest apply from then on). */
struct batcher_limits {
	uint32_t max_entries;		/* per request: 10 for SQS, 1000 for
					 * Pub/Sub; 0 is taken as 1 */
	uint64_t max_bytes;		/* per request, summed entry sizes;
					 * 0: no cap */
	uint64_t linger_ms;		/* a batch with entries closes this
					 * long after its first entry */
	uint32_t max_queued;		/* entries waiting (not in flight)
					 * per destination; 0: no cap */
	uint32_t max_queued_tenant;	/* of one tenant per destination;
					 * 0: no cap */
	uint32_t max_in_flight;		/* requests in flight per
					 * destination; 0: no cap */
};

struct batcher_entry {
	uint64_t	 job;		/* the attempt's id */
	char		 tenant[65];
	uint64_t	 bytes;
	uint64_t	 added;		/* ms */
	uint64_t	 deadline;	/* ms: timed out at or past it */
	int		 done;		/* its outcome is given (timed out) */
	void		*arg;		/* the caller's */
};

struct bdest;

struct batcher_req {
	uint64_t		 id;		/* unique, from 1 */
	const char		*dest;		/* lives as long as the batch */
	struct batcher_entry	*entries;	/* arrival order */
	uint32_t		 n;
	uint64_t		 bytes;		/* sum of entries' bytes */
	int			 in_flight;
	/* private */
	struct bdest		*d;		/* its destination */
	uint32_t		 cap;		/* entries allocated */
	uint64_t		 opened;	/* its first entry's time */
	int			 closed;	/* full: takes no more */
	TAILQ_ENTRY(batcher_req) link;		/* d's queued or in-flight list */
};

struct batcher;

struct batcher	*batcher_new(void);
/* Frees everything, in-flight batches too. */
void		 batcher_free(struct batcher *);
/*
 * Queue an attempt for dest with the destination's limits.  0 queued; -1
 * no room (queue bound or per-tenant bound): the caller keeps the row and
 * tries later.  An entry bigger than max_bytes alone is still accepted,
 * alone in its batch.  A tenant name is cut at 64 bytes.
 */
int		 batcher_add(struct batcher *, const char *dest,
		    const struct batcher_limits *, const char *tenant,
		    uint64_t job, uint64_t bytes, uint64_t now,
		    uint64_t deadline, void *arg);
/*
 * The next request to send: a queued batch that is full or past its
 * linger, of a destination under its in-flight cap; it is marked in flight
 * and its entries leave the queue counts.  NULL if none.  Calling it
 * repeatedly yields every ready batch, round-robin across destinations.
 */
struct batcher_req	*batcher_take(struct batcher *, uint64_t now);
/*
 * When to call batcher_take again: now if a batch is ready at a
 * destination under its cap, else the earliest end of a linger there;
 * UINT64_MAX if none (nothing queued, or only at destinations at their
 * cap, where batcher_done is the event to take again after).
 */
uint64_t	 batcher_next_ready(const struct batcher *, uint64_t now);
/* The request ended (every entry's outcome handled by the caller): free
 * it; its destination has one request fewer in flight. */
void		 batcher_done(struct batcher *, struct batcher_req *);
/*
 * Entries at or past their deadline, queued or in flight and not done: cb
 * for each (the caller records a timeout; cb must not call the batcher);
 * the entry is marked done, and a queued one then leaves its batch (and
 * the queue counts; a batch left empty is freed).  Returns the earliest
 * deadline still pending (UINT64_MAX none).
 */
uint64_t	 batcher_expire(struct batcher *, uint64_t now,
		    void (*cb)(struct batcher_entry *, void *), void *);
/* Every entry of an in-flight request is done: its process may be
 * killed. */
int		 batcher_all_done(const struct batcher_req *);
/*
 * Drop the queued (not in flight) entries of the n jobs, given in
 * ascending order (their rows were taken back: a breaker that opened parks
 * them); taken[i] is set to 1 for jobs[i] dropped and left alone for one
 * in flight or not found (taken may be NULL).  Returns how many were
 * dropped.  One pass over the queued entries, so a breaker that opens over
 * a large backlog costs entries * log n, not entries * n.
 */
uint32_t	 batcher_remove_jobs(struct batcher *, const uint64_t *jobs,
		    size_t n, char *taken);
/* Counts for status and tests; NULL matches all. */
uint32_t	 batcher_queued(const struct batcher *, const char *dest,
		    const char *tenant);
uint32_t	 batcher_in_flight(const struct batcher *, const char *dest);

#endif
