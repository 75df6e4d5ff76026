/* SPDX-License-Identifier: ISC */
/*
 * filter.h: the sinks' filters (sources.*.sinks[].filter), run in the
 * edge: which sinks of its source a hook goes to.
 *
 * event_types: the hook's event type (evtype.h) equals a name of the
 * list, or begins with the part before the * of a pattern ending in one
 * ("invoice.*" matches "invoice.paid", not "invoice"; "*" every type); a
 * hook without a type matches no list.  Pure: filter_types_match.
 *
 * jq: the program (compiled once per configuration the edge loads,
 * filter_load) runs on the JSON body (jq's own parser, its depth limit;
 * null when the body is not JSON).  Its first output decides: true,
 * deliver; false, null or no output, do not; anything else (a number, a
 * string, an object), an error, or halt and halt_error, is FILTER_ERROR
 * and counts as a match, so a broken program never loses a hook.
 *
 * The budget of one evaluation: libjq 1.6 (Debian 12) cannot be stopped
 * inside jq_next, so the programs run in an evaluator process of the
 * edge's (workers/jqeval.c), with http.jq_timeout_ms of CPU time and
 * http.jq_max_memory_bytes of memory, which the kernel enforces; the
 * edge waits for an answer at most FILTER_WALL(http.jq_timeout_ms) by
 * the clock.  Past its CPU time (or that wall) an evaluation is
 * FILTER_BUDGET, past its memory FILTER_MEMORY, both counted as a
 * budget's and a match; the evaluator is killed for it and the next
 * evaluation has a fresh one.  The edge goes on.
 *
 * Running out of memory in the edge (not the evaluator) is fatal.
 */
#ifndef ANKUSA_FILTER_H
#define ANKUSA_FILTER_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"

enum filter_result {
	FILTER_NO = 0,		/* the sink does not want it */
	FILTER_MATCH,
	FILTER_ERROR,		/* jq failed or gave no boolean: a match */
	FILTER_BUDGET,		/* jq ran past its CPU budget: a match */
	FILTER_MEMORY,		/* jq ran past its memory budget: a match */
};

/* How long an edge waits for an evaluation of a CPU budget of ms: on a
 * loaded machine CPU time accrues slower than the clock's. */
#define FILTER_WALL(ms)		((ms) * 4 + 200)

/* What filter_sinks decided for a hook, by sink index. */
struct filter_out {
	uint64_t	 match;		/* bit i: sink i gets the hook */
	uint64_t	 errors;	/* bit i: its jq filter failed */
	uint64_t	 budget;	/* bit i: its jq filter ran out (CPU,
					 * or memory) */
	uint8_t		 result[64];	/* enum filter_result, by sink */
};

/* 1 if the event type (NULL or "": none) matches one of the patterns. */
int	filter_types_match(char *const *types, int ntypes, const char *evtype);

/* Compile every jq filter of cf and, when there is one, start the
 * evaluator processes (a fork: before the sandbox).  0; -1 and a log line
 * naming the key when one does not compile, which conf_parse has refused
 * before, or when the evaluators cannot start. */
int	filter_load(const struct conf *cf);
/* Stop the evaluators and free the programs (the tests). */
void	filter_unload(void);
/* Whether src's sinks need the JSON body for their filters (any jq). */
int	filter_needs_body(const struct source_conf *src);
/* Decide every sink of src (a source of the conf given to filter_load). */
void	filter_sinks(const struct source_conf *src, const char *evtype,
	    const void *body, size_t len, struct filter_out *out);
/* 1 once no evaluator can be had (its supervisor is gone): every jq
 * filter is then FILTER_ERROR, and the edge must retire. */
int	filter_stuck(void);
/* One evaluation of a jq program's text, compiled here, for the tests:
 * budget_ms as http.jq_timeout_ms, mem_bytes as
 * http.jq_max_memory_bytes (a filter_load before is unloaded). */
enum filter_result filter_jq_once(const char *prog, const void *body,
	    size_t len, uint64_t budget_ms, uint64_t mem_bytes);

#endif
