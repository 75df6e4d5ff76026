/* SPDX-License-Identifier: ISC */
/*
 * pipeline_dlsource.h: the spec's dead_letter_source, for deleting a source
 * that still has a backlog: every pending row of the source is dead-lettered as
 * source_gone:<id> (what dispatch does to a deleted source's rows), and the
 * caller learns how many.
 *
 * It works in steps between the loop's other work, each its own
 * transaction of a bounded part of the rows table (store_batch_source_dead),
 * so a large backlog stalls neither ingest nor dispatch.  Claimed rows that
 * wait for a slot are dead-lettered by dispatch at the call's start; rows
 * claimed by a running attempt are left to settle; a row whose hook is
 * gone is dropped and not counted, so the count is the rows it moved.
 * It runs inside the master's loop, the only place that moves pending
 * rows, and from its start to its end dispatch claims no row of the
 * source (hold): no claim races the steps, so every pending row not
 * running at the start is dead-lettered and counted, none attempted.
 */
#ifndef ANKUSA_DLSOURCE_H
#define ANKUSA_DLSOURCE_H

#include <stddef.h>
#include <stdint.h>

struct dlsource_ops {
	/* Whether the row at key is claimed (left alone by the steps). */
	int	(*claimed)(const unsigned char *key, void *);
	/* Whether the pipeline runs: 1, or 0 with why (a call is then
	 * unavailable). */
	int	(*up)(char *why, size_t, void *);
	/* A call begins (hold 1) or ends (0): no row of source is claimed
	 * in between.  Calls for one source nest. */
	void	(*hold)(const char *source, int hold, void *);
	/* Dead-letter as reason the source's claimed rows that have not
	 * started (dispatch settles them, and counts them); how many. */
	uint64_t (*queued)(const char *source, const char *reason, void *);
	/* A call ended: the scheduler may look again (a lane released by a
	 * step has a new head, due behind the tenant's cursor). */
	void	(*ended)(void *);
	void	*arg;
};

void	dlsource_init(const struct dlsource_ops *);
/*
 * Dead-letter source's pending rows: done(arg, n, NULL) once it is done, n
 * the rows dead-lettered; or done(arg, n, err) with the reason it stopped,
 * n the rows dead-lettered by then (they stay so): "unavailable" once
 * timeout_ms have passed, while the pipeline is down (a client of a
 * replication group, a drain: ops.up) and when it stops, an unknown
 * source (neither configured nor named by any row), a store error.  done
 * may run before this returns.
 */
void	dlsource_start(const char *source, uint64_t timeout_ms,
	    void (*done)(void *, uint64_t, const char *), void *arg);
/* The caller of dlsource_start with arg is gone: its call stops, done is
 * not called. */
void	dlsource_detach(void *arg);
/* The pipeline stops (a drain): calls in progress end unavailable. */
void	dlsource_stop(void);
/* Calls in progress. */
int	dlsource_busy(void);
/* Rows dead-lettered since the start, every call together. */
uint64_t dlsource_moved(void);

#endif
