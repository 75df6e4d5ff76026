/* SPDX-License-Identifier: ISC */
/*
 * prune.h: a prune of the store in bounded steps on the master's loop
 * (steps.h): one batch of at most max deletions a loop pass, committed
 * without a sync of its own (a prune lost in a crash is made again),
 * until a batch deletes fewer than max.  The audit trail's and the
 * attempt log's, each started after a checkpoint; a start while it runs,
 * on a client of a replication group or while draining does nothing.
 */
#ifndef ANKUSA_PRUNE_H
#define ANKUSA_PRUNE_H

#include <stdint.h>

#include "steps.h"

struct store_batch;

struct prune {
	struct step_job	 job;		/* first: steps.h's */
	const char	*name;		/* "audit", its lines' prefix */
	const char	*what;		/* "entries older than ...", the
					 * debug line's */
	unsigned	 max;		/* deletions a batch */
	/* One batch's deletions as of now (wall ms): how many, or -1 on a
	 * store error (the batch is then aborted). */
	int		(*fn)(struct store_batch *, uint64_t, unsigned);
	int		 running;
};

/* Start p unless it runs: its first step at the next loop pass. */
void	prune_start(struct prune *);

#endif
