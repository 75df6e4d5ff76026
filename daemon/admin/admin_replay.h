/* SPDX-License-Identifier: ISC */
/*
 * admin_replay.h: replay jobs, the operator's way to deliver dead letters (kind
 * dlq), held hooks (kind quarantine) and kept delivered hooks (kind
 * archive: since and until are their last delivery's time) again, paced
 * so that a replay never buries live traffic.
 *
 * A job lives in the store (table replays, store_replay.c) from its
 * creation, and the running and paused ones in memory too (at most
 * REPLAY_MAX_ACTIVE): they are read back at start, so a job resumes after
 * a restart where its cursor says.  A running job takes steps from a
 * token bucket filled at its rate (rows or held hooks per second), only
 * while pipeline_pressure() reports a lag of at most its max_lag_ms and
 * no full window.  A dlq step moves dead rows back to due with the job's
 * cursor in one transaction (store_batch_replay_step), an archive step
 * gives kept hooks new rows so (store_batch_archive_replay_step, a token
 * a hook); a quarantine job
 * re-verifies held hooks through quarantine.c's release, one hook per
 * token.  A job whose deliveries keep dead-lettering or keep being parked
 * by an open breaker pauses itself with a reason (REPLAY_WINDOW,
 * REPLAY_PAUSE_BAD).
 */
#ifndef ANKUSA_REPLAY_H
#define ANKUSA_REPLAY_H

#include <stdint.h>

#include <jansson.h>

#include "dispatch/dispatch.h"
#include "ids.h"
#include "store/store.h"

#define REPLAY_MAX_ACTIVE	16	/* running and paused jobs */
#define REPLAY_RATE_DEFAULT	1000	/* rows a second */
#define REPLAY_RATE_MAX		100000
#define REPLAY_LAG_DEFAULT	2000	/* max_lag_ms */
#define REPLAY_LAG_MAX		86400000
#define REPLAY_WINDOW		100	/* the settled deliveries judged */
#define REPLAY_PAUSE_BAD	50	/* dead or parked of them: pause */

/* What became of a delivery of a replayed row (replay_note). */
enum replay_outcome {
	REPLAY_DELIVERED = 1,
	REPLAY_DEAD,		/* dead-lettered again */
	REPLAY_PARKED,		/* parked by an open breaker */
};

/* What a POST asks for. */
struct replay_spec {
	int		 kind;		/* enum store_replay_kind */
	const char	*source;	/* NULL: every source */
	uint64_t	 since, until;	/* wall ms, 0: open */
	uint32_t	 rate;
	uint32_t	 max_lag_ms;
	const char	*event_type;	/* quarantine: NULL or "": any */
	uint32_t	 sink;		/* archive: the sink index + 1, 0:
					 * every sink */
};

enum replay_rc {
	REPLAY_OK = 0,
	REPLAY_EXISTS,		/* an identical running or paused job */
	REPLAY_NOT_FOUND,
	REPLAY_FULL,		/* REPLAY_MAX_ACTIVE jobs already */
	REPLAY_FINISHED,	/* the job is done or cancelled: no change */
	REPLAY_STORE,		/* the store failed (store_strerror) */
};

/* Read the jobs back and start the timer; after pipeline_init. */
void	replay_init(void);
/* Draining: no step from now on (jobs stay as they are, for the next
 * start). */
void	replay_stop(void);
/* A new job (id set), or the identical running or paused one
 * (REPLAY_EXISTS, its id); REPLAY_FULL, REPLAY_STORE. */
enum replay_rc replay_create(const struct replay_spec *,
	    unsigned char id[UUID_LEN]);
/* Change a job: state (0: unchanged; RUNNING, PAUSED, CANCELLED), rate
 * (0: unchanged), max_lag_ms (< 0: unchanged).  REPLAY_OK, _NOT_FOUND,
 * _FINISHED (a done or cancelled job changes no more), _STORE. */
enum replay_rc replay_change(const unsigned char id[UUID_LEN], int state,
	    uint32_t rate, int64_t max_lag_ms);
/* A job as JSON, NULL when there is none (*rc says whether the store
 * failed: REPLAY_NOT_FOUND or REPLAY_STORE). */
json_t	*replay_json(const unsigned char id[UUID_LEN], enum replay_rc *rc);
/* Every job as a JSON array, in creation order; NULL on a store error. */
json_t	*replay_list(void);
/* A settled delivery of a row whose replay id is id (all zero: not a
 * replay; nothing is done), from the settles' commit. */
void	replay_note(const unsigned char id[UUID_LEN], enum replay_outcome);
/* A settle, as pipeline_on_settle tells it: a delivery, a dead letter or
 * a park of a replayed row is noted (replay_note); a plain retry is no
 * settled delivery, an orphan's dead settle (SETTLED_DROPPED) none. */
void	replay_settled(enum settle_kind, enum settle_written,
	    const unsigned char *, const struct store_row *, void *);

#endif
