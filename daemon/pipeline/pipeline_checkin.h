/* SPDX-License-Identifier: ISC */
/*
 * pipeline_checkin.h: the spec's "Claim check", the master's side.
 *
 * A body larger than the smallest inline_max_bytes of its source's queue
 * sinks is checked in once per hook, before any of its sinks run: the rows
 * of such a hook wait (claim_gate), the hooks a scan found are packed per
 * tenant, up to claim_check.pack_max_bytes, into check-in jobs that a
 * deliver process uploads as one pack (claim_next_job), and the URN that
 * comes back is stored with each hook, which keeps its body too, so every
 * sink and every retry reuses it (claim_done).  When a pack fails its rows
 * still go on: the deliver process checks their bodies in itself before it
 * sends the request (workers/deliver.c, deliver_checkin), and without a
 * claim store the queue sink answers "claim check-in missing".
 */
#ifndef ANKUSA_CLAIM_H
#define ANKUSA_CLAIM_H

#include <stdint.h>

struct claim_outcome;
struct drow;
struct msg;

/* 0 the row goes on, 1 it waits for its hook's check-in, 2 it can never
 * be sent (no claim store for a body above a queue sink's
 * inline_max_bytes). */
int	claim_gate(struct drow *);
/* The next check-in job to send: 1 with m built (frame id job_id), 0 when
 * none waits, -1 when it could not be built (claim_done(job_id, NULL)
 * then releases its rows). */
int	claim_next_job(struct msg *m, uint64_t job_id);
/* A check-in ended: o NULL when it failed without an outcome (the process
 * died or timed out).  release(key, arg) runs for every row that waited. */
void	claim_done(uint64_t job_id, const struct claim_outcome *o,
	    void (*release)(const unsigned char *, void *), void *);

#endif
