/* SPDX-License-Identifier: ISC */
/*
 * pipeline.h: the glue between the dispatch scheduler (dispatch.c, pure)
 * and the world: the store, the deliver processes, the event loop.
 *
 * It implements struct dispatch_ops over the real store, keeps the deliver
 * pool's idle/busy state, the job each busy process holds on deck
 * (common/deck.h), and each attempt's deadline
 * (dispatch.attempt_timeout_ms, from the attempt's start: SIGKILL, then
 * the attempt is a failure "attempt_timeout:<ms>"), writes the settles of
 * one loop turn as one store transaction, and runs the scheduler after
 * commits, settles and at the time it asked for: one timer.  It also
 * answers the dispatch functions of the control socket: tick, pressure,
 * breakers (dead_letter_source is pipeline_dlsource.c, which it sets up).
 *
 * It calls nothing above it: what the modules above want to hear of it
 * (its stop, each settle) they hear through the hooks main registers
 * (pipeline_on_stop, pipeline_on_settle), and what they ask of it
 * (pipeline_claimed, pipeline_lanes_released) they ask here.
 *
 * Its files: pipeline.c the loop turn and control's questions, pipeline_pool.c
 * the deliver processes, decks and deadlines, pipeline_store.c the store
 * adapter and the settles, pipeline_batch.c and pipeline_claim.c the
 * batching sinks' and the claim check's glue; pipeline_int.h is what they
 * share.
 */
#ifndef ANKUSA_PIPELINE_H
#define ANKUSA_PIPELINE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "dispatch/dispatch.h"
#include "dispatch/health.h"

struct deck;
struct msg;
struct dispatch_stats;

#define PIPELINE_LISTENERS	4	/* settle listeners at most */

/* Before pipeline_init: fn runs when the pipeline stops (a drain), after
 * the scheduler and dead_letter_source and before the ticks waiting are
 * answered.  One; a second is fatal. */
void	pipeline_on_stop(void (*fn)(void));
/* Before pipeline_init: fn(kind, key, row, arg) hears each settle of a
 * turn once its transaction committed (none of a turn that failed), in
 * order, before its claim ends; row is the row as written (reschedule)
 * or as it was claimed.  Listeners hear in the order they came; more
 * than PIPELINE_LISTENERS is fatal. */
void	pipeline_on_settle(void (*fn)(enum settle_kind, enum settle_written,
	    const unsigned char *, const struct store_row *, void *),
	    void *arg);
/* Before pipeline_init: fn(source, sink, reason) disables the sink key,
 * a pause with a reason (daemon/admin/admin_ops.c's ops_disable), when an
 * attempt's answer is in its sink's disable_on ("disable_on: 410") or
 * its attempts have all failed for disable_after_s ("disable_after_s:
 * 3600 of failures"): 0 the key is disabled (a synced write), -1 not
 * (the outcome then goes as it would have).  One; a second is fatal. */
void	pipeline_on_disable(int (*fn)(const char *, uint32_t, const char *));
void	pipeline_init(void);
/* New hooks were committed, their rows due at min_due or later: run the
 * scheduler at the end of this turn. */
void	pipeline_wake(uint64_t min_due);
/* The config was swapped (reload): the spec's reconfigure. */
void	pipeline_reconfigure(void);
/* Draining: claim and start nothing more; attempts running finish. */
void	pipeline_stop(void);
/* Attempts running or settles not yet written. */
int	pipeline_busy(void);
/* A dispatch turn now, while the writer's batch of hooks, whose seqs
 * start at seq0, is committed but not yet synced. */
void	pipeline_step(uint64_t seq0);

/* From the supervisor: the deliver pool (shm: the process's on-deck page,
 * common/deck.h, or NULL). */
void	pipeline_worker_ready(uint32_t serial, struct deck *shm);
void	pipeline_worker_retiring(uint32_t serial);
void	pipeline_worker_gone(uint32_t serial);
/* MSG_DELIVER_OUTCOME from a deliver process; -1 if malformed. */
int	pipeline_outcome(uint32_t serial, struct msg *);

void	pipeline_stats(struct dispatch_stats *, int *idle, int *busy);
/* An answer's why, at most (pipeline_up, pipeline_pressure). */
#define PIPELINE_WHY_MAX	512
/* Whether the pipeline runs here: 1, or 0 with why, "draining: ..." or
 * "not_master: ..." (naming the master): the dispatch functions answer
 * unavailable. */
int	pipeline_up(char *why, size_t len);
/* The spec's pressure(): 0, or -1 with why when the pipeline is down
 * (pipeline_up) or the store cannot answer ("store_unavailable: ..."). */
int	pipeline_pressure(uint64_t *lag_ms, int *window_full, char *why,
	    size_t len);
/* The spec's tick(): done(arg, settled, NULL) once nothing is claimed,
 * running or due and no dead_letter_source runs; settled is the rows
 * delivered or dead-lettered (by dispatch or dead_letter_source)
 * meanwhile.  Else done(arg, settled, err): "timed out ..." after
 * timeout_ms, "unavailable: ..." at once while the pipeline is down and
 * when it stops (a drain).  done may run before this returns. */
void	pipeline_tick(uint64_t timeout_ms,
	    void (*done)(void *, uint64_t, const char *), void *arg);
void	pipeline_tick_detach(void *arg);
/* Breakers that are not idle, as JSON objects. */
json_t	*pipeline_breakers(void);
/* A sink key the config names, as pipeline_sinks gives it: its health
 * (dispatch/health.h, as of now), its rows claimed over its tenants and
 * its breaker, the worst of its tenants' (open, then half-open). */
struct pipeline_sink {
	struct health_info	 h;
	uint32_t		 claimed;
	enum breaker_state	 breaker;
};
/* fn for each sink key of the config, in (source, sink) order. */
void	pipeline_sinks(void (*fn)(const struct pipeline_sink *, void *),
	    void *arg);
/* Sink keys with a rate or a Retry-After hold, as JSON objects (tenant,
 * source, sink, per_second, burst, tokens, overridden, held_ms). */
json_t	*pipeline_rates(void);
/* The same of one key, or NULL when it has neither a rate nor a hold (the
 * seam of GET /v1/sinks: dispatch_key_rate). */
json_t	*pipeline_key_rate(const char *tenant, const char *source,
	    uint32_t sink);
/* An operator's rate of the key was set or removed (dispatch/rateov.h). */
void	pipeline_rate_changed(const char *tenant, const char *source,
	    uint32_t sink);
void	pipeline_pause(const char *source, uint32_t sink);
/* Whether the row at key is claimed (an attempt runs on it, or is about
 * to). */
int	pipeline_claimed(const unsigned char *key);
/* Lanes behind the scheduler's cursors have new heads (a hook deleted, a
 * dead_letter_source ended): the cursors move back and it runs at the end
 * of this turn. */
void	pipeline_lanes_released(void);

#endif
