/* SPDX-License-Identifier: ISC */
/*
 * dispatch.h: the dispatch scheduler, the spec's Ankusa.Dispatch.
 *
 * A data structure with no I/O of its own: it is given now (wall ms), reads
 * the store and starts attempts through struct dispatch_ops, and answers
 * "wake me at T".  The glue (pipeline.c) implements the ops over the real
 * store and deliver processes and arms one timer; the unit tests implement
 * them over an in-memory store with a fake clock.
 *
 * Claims live here only (the store is not written when a row is claimed):
 * a claimed row is skipped by later scans until its settle has been
 * written, and a restart makes every claimed row due again.  Outcomes are
 * turned into settles (delivered, rescheduled, parked, dead) that the glue
 * writes as one store transaction per loop turn and then reports back with
 * dispatch_settled(), which releases the claim; the statistics count a
 * settle then, once it is written.
 *
 * Decks (dispatch.c, deck_fill): a running attempt's process may hold
 * its key's next queued row, which takes the attempt's slot when it ends.
 *
 * Memory: one struct drow per claimed row (bounded by dispatch.max_inflight),
 * one struct dtenant per tenant with claims or a breaker, one struct dsinkq
 * per sink key with claims or a breaker that is not idle.
 */
#ifndef ANKUSA_DISPATCH_H
#define ANKUSA_DISPATCH_H

#include <sys/queue.h>

#include <stddef.h>
#include <stdint.h>

#include "breaker.h"
#include "conf.h"
#include "store/store.h"
#include "window.h"

struct conf;
struct dispatch;
struct drow;

enum attempt_result {
	ATTEMPT_OK = 0,
	ATTEMPT_ERROR,		/* transient: the retry policy decides */
	ATTEMPT_PERMANENT,	/* dead-letter now; never counts for breakers */
	ATTEMPT_TIMEOUT,	/* killed at dispatch.attempt_timeout_ms */
	ATTEMPT_UNBOUND,	/* the glue found no sink to bind it to as the
				 * config is now: dead-letter with the detail
				 * as the reason; no attempt, no breaker */
	ATTEMPT_STORE,		/* the glue could not read the row's hook (the
				 * store erred): a failed attempt, but the
				 * sink was not reached: no breaker failure */
	ATTEMPT_PROXY,		/* failed at the forward proxy: a failed
				 * attempt, retried, but the destination was
				 * not reached: no breaker failure */
	ATTEMPT_DISABLE,	/* an answer in the sink's disable_on: the
				 * glue has disabled (paused) the key; the
				 * attempt counts and the row is set aside
				 * with the key's others, never dead-lettered;
				 * no breaker failure */
};

enum settle_kind {
	SETTLE_DELIVERED = 1,	/* delete the row (and the hook with its last) */
	SETTLE_RESCHEDULE,	/* rewrite the row due at row.due (retry, park) */
	SETTLE_DEAD,		/* move the row to the dead letters */
};

/* What became of a settle's write (dispatch_settled). */
enum settle_written {
	SETTLED_FAILED = 0,	/* the store refused the batch: the row is as
				 * it was, due again */
	SETTLED_WRITTEN,
	SETTLED_DROPPED,	/* a dead settle of an orphan, a row whose
				 * hook is gone: deleted, not dead-lettered
				 * (store_batch_row_dead's 2) */
};

struct dsettle {
	enum settle_kind	 kind;
	unsigned char		 key[STORE_ROWKEY_LEN];
	const struct store_row	*row;		/* RESCHEDULE: the row as it
						 * is to be written; DELIVERED
						 * and DEAD: as it was
						 * claimed */
	const char		*reason;	/* DEAD */
	const char		*last_error;	/* DEAD */
	uint32_t		 attempts;	/* DEAD */
	uint64_t		 dead_at;	/* DEAD */
	const char		*source;	/* DEAD: for the counters */
	uint8_t			 module;	/* DEAD */
	int			 retry;		/* RESCHEDULE: after a failed
						 * attempt (0: a park or a
						 * pause, no attempt made) */
	int			 expired;	/* DEAD: given up for its
						 * retry policy (attempts
						 * spent, or past its
						 * horizon), not for a
						 * permanent failure */
	const struct drow	*dr;		/* the claimed row, during the
						 * call only: its job and the
						 * glue's notes */
};

/* A claimed row, as the glue sees it to start an attempt. */
struct drow {
	unsigned char		 key[STORE_ROWKEY_LEN];
	uint64_t		 seq;
	struct store_row	 row;
	uint32_t		 bound;		/* the sink index bound now */
	uint64_t		 job;		/* running: its job id */
	/* The glue's notes of the row's hook, made when an attempt's job
	 * is built from its record, for the delivery log lines; zero
	 * before (the dispatch never reads them). */
	unsigned char		 hook_id[UUID_LEN];
	uint64_t		 received_at;	/* wall ms, 0: not noted */
	/* its W3C trace id (common/trace.h); zero: unknown */
	unsigned char		 trace_id[TRACE_ID_LEN];
	/* private to dispatch.c and dispatch_settle.c */
	int			 state;
	int			 probe;
	int			 throttled;	/* its sink's 429 or 503 with
						 * Retry-After held its key */
	struct dtenant		*t;
	struct dsinkq		*q;
	TAILQ_ENTRY(drow)	 link;		/* its sink key's queue, running
						 * or on deck */
	struct drow		*hnext;
	struct drow		*deck;		/* running: the row on deck
						 * behind it */
	struct drow		*ahead;		/* on deck: the attempt ahead */
	uint64_t		 first0;	/* batched: first_attempt before
						 * it entered the batcher */
	uint64_t		*counts;	/* settling: the statistic its
						 * settle adds to once written */
};

struct dispatch_ops {
	void	*arg;
	/* Tenants with due keys, each with its earliest due time. */
	int	(*due_tenants)(void *, int (*)(const char *, uint64_t, void *),
		    void *);
	/* A tenant's due rows with due <= now, in due order, from just
	 * after (after_due, after_key) when after_key is not NULL; want(key)
	 * may pass over a row unread (0); the callback returns non-zero to
	 * stop.  A NULL row: a due key without its row. */
	int	(*due_scan)(void *, const char *, uint64_t, uint64_t,
		    const unsigned char *,
		    int (*)(const unsigned char *, void *),
		    int (*)(const unsigned char *, const struct store_row *,
		    void *), void *);
	/* The tenant's first due time after t: 1 and *due, or 0 if none. */
	int	(*due_next)(void *, const char *, uint64_t, uint64_t *);
	/* Members waiting in lanes, over the node (a counter). */
	uint64_t (*lane_members)(void *);
	/* Tenants with marked lanes (only called while lane_members > 0). */
	int	(*marked_tenants)(void *, int (*)(const char *, void *), void *);
	/* Promote lane members of a tenant that have no head; the count. */
	int	(*lane_sweep)(void *, const char *, uint64_t);
	/* Hand the attempt to an idle deliver process: 0, or -1 if none is
	 * idle (the row stays queued). */
	int	(*start)(void *, struct drow *);
	/* Put r on deck (common/deck.h) behind ahead, a running attempt of
	 * the same key: its process starts r when ahead's attempt ends,
	 * unless r is taken back first.  0, or -1 (r stays queued).  NULL:
	 * no decks; deck_cancel too. */
	int	(*deck)(void *, struct drow *r, struct drow *ahead);
	/* Take r back from its deck: 0 taken back (nothing was sent), -1 its
	 * attempt has started (dispatch_deck_done follows). */
	int	(*deck_cancel)(void *, struct drow *r);
	/* Queue a store write for the end of the loop turn. */
	void	(*settle)(void *, const struct dsettle *);
	/* Uniform random in [0, 1) for the retry jitter. */
	double	(*random)(void *);
	/* A batching sink's attempt: hand it to its destination's batcher
	 * (not counted against any concurrency).  0, or -1 when the batcher
	 * has no room (the row stays queued).  NULL: every sink is started
	 * one attempt at a time. */
	int	(*batch_add)(void *, struct drow *);
	/* Take back from their batcher the entries of the n jobs (ascending)
	 * that wait in no request: taken[i] = 1 for each (nothing of it was
	 * sent); a job left alone is in a request in flight, or has its
	 * outcome on the way.  NULL with batch_add NULL. */
	void	(*batch_cancel)(void *, const uint64_t *jobs, size_t n,
		    char *taken);
	/* The claim check: 0 the row may go on, 1 it waits for its hook's
	 * check-in (dispatch_claim_release follows), 2 it cannot be sent
	 * (a body above inline_max_bytes with no claim store: dead-letter).
	 * NULL: no claim check. */
	int	(*claim_gate)(void *, struct drow *);
	/* The breaker of a sink key (tenant, source, sink index) of the
	 * module moved to state ("open", "half_open", "closed"): the glue
	 * counts it and makes its notice.  NULL: not told. */
	void	(*breaker_moved)(void *, const char *tenant, const char *source,
		    uint32_t sink, uint8_t module, const char *state);
};

struct dispatch_stats {
	uint32_t	claimed;	/* rows claimed, any state */
	uint64_t	claimed_bytes;
	uint32_t	queued;		/* claimed, waiting for a slot */
	uint32_t	running;
	uint32_t	decked;		/* on deck behind a running attempt */
	uint32_t	batched;	/* waiting in a batcher or its request */
	uint32_t	claimwait;	/* waiting for their hook's check-in */
	uint32_t	settling;	/* outcome in, settle not yet written */
	uint32_t	tenants;
	uint32_t	sinkqs;
	uint32_t	breakers_open;
	int		window_full;
	/* Settles written, ever (a refused one counts when redone, a
	 * dropped orphan nowhere): */
	uint64_t	settled;	/* delivered or dead-lettered */
	uint64_t	delivered;
	uint64_t	dead;
	uint64_t	parked;
	uint64_t	retried;
	uint64_t	set_aside;	/* rows of paused keys set aside */
};

struct dispatch *dispatch_new(const struct conf *, const struct dispatch_ops *);
void	dispatch_free(struct dispatch *);
/* Take concurrency, sink_concurrency, windows and breaker settings from
 * conf (which must outlive the dispatch or be replaced again). */
void	dispatch_reconfigure(struct dispatch *, const struct conf *);
/* Claim what is due and start what may run.  Returns the wall time to run
 * again (UINT64_MAX: only when an event comes). */
uint64_t dispatch_run(struct dispatch *, uint64_t now);
/* An attempt ended; detail is the sink's words ("http 503"). */
void	dispatch_outcome(struct dispatch *, uint64_t job, enum attempt_result,
	    uint64_t retry_after_ms, const char *detail, uint64_t now);
/* The attempt ahead of the row on deck as job ended (its outcome is in):
 * that row's attempt started (started 1; it takes the slot of the one
 * ahead) or it was taken back (0: to the head of its key's queue). */
void	dispatch_deck_done(struct dispatch *, uint64_t job, int started,
	    uint64_t now);
/* The settle of key was written, dropped or failed: the claim ends. */
void	dispatch_settled(struct dispatch *, const unsigned char *key,
	    enum settle_written);
/* The check-in of a row's hook ended (well or not): the row goes on to
 * its sink's queue. */
void	dispatch_claim_release(struct dispatch *, const unsigned char *key);
/* Rows were committed due at min_due or later: a tenant's scan cursor
 * past it moves back (a hook received before others may commit after
 * them). */
void	dispatch_hint(struct dispatch *, uint64_t min_due);
/* Draining: claim and start nothing more. */
void	dispatch_stop(struct dispatch *);
int	dispatch_is_claimed(struct dispatch *, const unsigned char *key);
/* dead_letter_source: dead-letter as reason the source's claimed rows
 * that have not started (waiting for a slot or a check-in, decks taken
 * back, entries waiting in a batcher); those of running attempts, started
 * decks and requests in flight settle as they are.  How many. */
uint64_t dispatch_dead_letter_queued(struct dispatch *, const char *source,
	    const char *reason, uint64_t now);
/* dead_letter_source runs for source: from the hold to its release no row
 * of it is claimed (the spec's "no claim can race it"), so none is
 * attempted behind the call's walk.  Holds nest: one a call. */
void	dispatch_hold_source(struct dispatch *, const char *source);
void	dispatch_release_source(struct dispatch *, const char *source);
/* (source, sink) was paused (daemon/dispatch/pause.h): its claimed rows that
 * have not started are set aside (due at STORE_DUE_PAUSED), in every tenant;
 * later claims of its rows are set aside as they come. */
void	dispatch_pause_key(struct dispatch *, const char *source,
	    uint32_t sink, uint64_t now);
/* The row of a running or batched attempt, or NULL (settled meanwhile). */
struct drow *dispatch_job_row(struct dispatch *, uint64_t job);
/* Bind r (r->bound) to a sink of its source as the config of the last
 * dispatch_reconfigure is: 0, or -1 with the dead-letter reason
 * (sink_gone:<index>:<module>, source_gone:<source>) in why. */
int	dispatch_bind(struct dispatch *, struct drow *r, char *why, size_t);
/* Whether a module's sink batches (SQS, Pub/Sub). */
int	dispatch_module_batches(uint8_t module);
void	dispatch_get_stats(struct dispatch *, struct dispatch_stats *);
/* Every sink key with a breaker that is not idle. */
void	dispatch_breakers(struct dispatch *, void (*)(const char *tenant,
	    const char *source, uint32_t sink, uint8_t module,
	    const struct breaker *, void *), void *);
/* Every sink key the scheduler holds (claims or a breaker that is not
 * idle), with its rows claimed (any state). */
void	dispatch_keys(struct dispatch *, void (*)(const char *tenant,
	    const char *source, uint32_t sink, uint8_t module,
	    uint32_t claimed, const struct breaker *, void *), void *);

/*
 * Rates (dispatch_rate.c, bucket.h): a sink's rate, an operator's override
 * of it per key, and a sink's Retry-After holding the key.
 */
struct bucket_info;
/* The running attempt job got a 429 or 503 with Retry-After: its key
 * takes no row before now + retry_after_ms (at most 1 h), and the answer
 * will not count toward its breaker.  Called before its dispatch_outcome. */
void	dispatch_throttle(struct dispatch *, uint64_t job,
	    uint64_t retry_after_ms, uint64_t now);
/* The key's rate, tokens and hold at now: 0, or -1 when it has neither a
 * rate nor a hold (info zeroed). */
int	dispatch_key_rate(struct dispatch *, const char *tenant,
	    const char *source, uint32_t sink, uint64_t now,
	    struct bucket_info *);
/* An operator's rate of the key was set or removed (rateov.h): its bucket
 * takes the rate in force, and its tenant's rows passed over are looked
 * at again. */
void	dispatch_rate_changed(struct dispatch *, const char *tenant,
	    const char *source, uint32_t sink, uint64_t now);
/* Every key with a rate or a hold. */
void	dispatch_rates(struct dispatch *, uint64_t now, void (*)(
	    const char *tenant, const char *source, uint32_t sink,
	    const struct bucket_info *, void *), void *);

/* The retry policy of the contracts: the delay before attempt n+1 after
 * n attempts, before jitter and the retry_after floor. */
uint64_t dispatch_backoff(uint64_t base_ms, uint64_t max_ms, uint32_t attempts);
/* The same of a policy: its schedule_ms step (the last repeating), else
 * dispatch_backoff. */
uint64_t dispatch_retry_delay(const struct retry_policy *, uint32_t attempts);
const char *dispatch_module_name(uint8_t module);
/* The module rows of a sink of type t are bound to (0: none such). */
uint8_t	dispatch_sink_module(enum sink_type t);

#endif
