/* SPDX-License-Identifier: ISC */
/*
 * jqeval.h: the processes that run an edge's jq filters, each evaluation
 * with a CPU and a memory budget the kernel enforces; see jqeval.c.
 */
#ifndef ANKUSA_JQEVAL_H
#define ANKUSA_JQEVAL_H

#include <stddef.h>
#include <stdint.h>

#include <jq.h>

#include "filter.h"

/* Start the evaluator supervisor (a fork: call it before the sandbox,
 * once the programs are compiled).  The evaluators run progs[i] by its
 * number i, each evaluation with at most cpu_ms of CPU time and
 * mem_bytes of data beyond what the supervisor held when it forked it.
 * 0, or -1 (socketpair or fork failed). */
int	jqeval_start(jq_state *const *progs, int nprogs, uint64_t cpu_ms,
	    uint64_t mem_bytes);
/* Run program prog on the body (len 0: null) and wait for the answer at
 * most wall_ms by the clock: FILTER_NO or FILTER_MATCH, FILTER_ERROR (jq
 * failed, no boolean, or the evaluator died without a word),
 * FILTER_BUDGET (its CPU time, or the wall clock, ran out) or
 * FILTER_MEMORY.  An evaluator that died or was given up is replaced at
 * the next call. */
enum filter_result jqeval_run(uint32_t prog, const void *body, size_t len,
	    uint64_t wall_ms);
/* 1 once the supervisor is gone: no evaluation can run any more. */
int	jqeval_broken(void);
/* Close both channels: the supervisor and its evaluator exit. */
void	jqeval_stop(void);

#endif
