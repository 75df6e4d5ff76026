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
 * The budget of one evaluation: libjq 1.6 (Debian 12) has no step limit,
 * no interrupt and no allocator hook (jq_set_input_cb feeds `input`,
 * jq_halted reports `halt`; neither runs during a loop), so nothing can
 * stop a program inside jq_next.  An evaluation therefore runs on the
 * edge's one evaluator thread while the edge's loop waits for it at most
 * http.jq_timeout_ms (wall clock).  Past that it is FILTER_BUDGET, a
 * match; the thread is left to its loop (it holds its own copy of the
 * input), every later evaluation in this edge is FILTER_BUDGET at once,
 * and the caller retires the edge (filter_stuck), which the master
 * replaces: a looping program costs one edge's thread until the edge has
 * answered what it holds.  Memory has no budget of its own in libjq: what
 * an evaluation may allocate is bounded by what it can allocate in
 * http.jq_timeout_ms, and its input by http.max_body_bytes.
 *
 * Running out of memory (ours or libjq's) is fatal.
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
	FILTER_BUDGET,		/* jq ran past its budget: a match */
};

/* What filter_sinks decided for a hook, by sink index. */
struct filter_out {
	uint64_t	 match;		/* bit i: sink i gets the hook */
	uint64_t	 errors;	/* bit i: its jq filter failed */
	uint64_t	 budget;	/* bit i: its jq filter ran out */
};

/* 1 if the event type (NULL or "": none) matches one of the patterns. */
int	filter_types_match(char *const *types, int ntypes, const char *evtype);

/* Compile every jq filter of cf (0; -1 and a log line naming the key when
 * one does not compile, which conf_parse has refused before). */
int	filter_load(const struct conf *cf);
/* Whether src's sinks need the JSON body for their filters (any jq). */
int	filter_needs_body(const struct source_conf *src);
/* Decide every sink of src (a source of the conf given to filter_load). */
void	filter_sinks(const struct source_conf *src, const char *evtype,
	    const void *body, size_t len, struct filter_out *out);
/* 1 once an evaluation ran past its budget: the edge must retire. */
int	filter_stuck(void);
/* One evaluation of a jq program's text, compiled here, for the tests:
 * budget_ms as http.jq_timeout_ms. */
enum filter_result filter_jq_once(const char *prog, const void *body,
	    size_t len, uint64_t budget_ms);

#endif
