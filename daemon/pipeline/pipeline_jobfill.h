/* SPDX-License-Identifier: ISC */
/*
 * pipeline_jobfill.h: an attempt's fields from its claimed row and its hook's
 * record, for a MSG_DELIVER_JOB (struct job) or one entry of a
 * MSG_BATCH_JOB (struct batch_entry).  Pure: the glue (pipeline.c) reads
 * the record and encodes the frame.
 *
 * The strings of the job or entry point into the record and into ids,
 * which must outlive the encoding.
 */
#ifndef ANKUSA_JOBFILL_H
#define ANKUSA_JOBFILL_H

#include "dispatch/dispatch.h"
#include "ids.h"
#include "job.h"
#include "store/store.h"

/* The text ids an attempt carries: its hook's, and its row's replay id
 * ("" when the row is not a replay). */
struct jobfill_ids {
	char	hook[UUID_STRLEN + 1];
	char	replay[UUID_STRLEN + 1];
};

/* j's hook and attempt fields (not its id, sink or sink index). */
void	jobfill_job(struct job *j, struct jobfill_ids *,
	    const struct drow *, const struct store_hook_rec *);
/* e's fields but its id: the attempt's job id. */
void	jobfill_entry(struct batch_entry *e, struct jobfill_ids *,
	    const struct drow *, const struct store_hook_rec *);

#endif
