/* SPDX-License-Identifier: ISC */
/*
 * trace.h: W3C Trace Context (https://www.w3.org/TR/trace-context/) as a
 * hook carries it: the provider's traceparent and tracestate, checked by
 * the edge, else a context the edge makes; and the traceparent each
 * delivery attempt sends, with a span id of its own.
 *
 * A context travels and is stored as TRACE_CTX_LEN bytes (struct
 * trace_ctx packed: trace id, parent id, flags) and the tracestate as a
 * string; the master copies both and never reads them but to print the
 * trace id in its log lines (trace_id_hex).
 *
 * Strict: a traceparent is version 00 only, exactly
 * "00-<32 hex>-<16 hex>-<2 hex>", lowercase, with a trace id and a parent
 * id that are not all zero; anything else (a later version too) is
 * invalid and replaced by a made context.  A tracestate is kept only with
 * a valid traceparent, at most TRACE_STATE_MAX bytes and 32 list members,
 * each key=value as the specification's grammar gives them.
 */
#ifndef ANKUSA_TRACE_H
#define ANKUSA_TRACE_H

#include <stddef.h>
#include <stdint.h>

#define TRACE_ID_LEN		16
#define TRACE_SPAN_LEN		8
#define TRACE_CTX_LEN		(TRACE_ID_LEN + TRACE_SPAN_LEN + 1)
#define TRACE_PARENT_STRLEN	55	/* "00-" 32 "-" 16 "-" 2 */
#define TRACE_STATE_MAX		512	/* bytes the edge keeps */
#define TRACE_STATE_MEMBERS	32
/* A context the edge makes is sampled: ankusad records no span itself,
 * but the consumer's tracing should record the deliveries it receives
 * (a parent-based sampler drops a trace whose flags are 00). */
#define TRACE_FLAGS_MADE	0x01

struct trace_ctx {
	unsigned char	trace_id[TRACE_ID_LEN];
	unsigned char	parent_id[TRACE_SPAN_LEN];	/* the provider's span,
							 * or the edge's */
	uint8_t		flags;				/* as received */
};

/* A traceparent value of len bytes: 0 and *t when valid, -1 when not. */
int	trace_parse(const char *, size_t len, struct trace_ctx *t);
/* Whether a tracestate value (several headers joined with ",") may be
 * kept: 1 or 0. */
int	trace_state_valid(const char *, size_t len);
/* A new context: random trace and parent ids, TRACE_FLAGS_MADE. */
void	trace_new(struct trace_ctx *t);
/* A new span id, random and never all zero. */
void	trace_span_new(unsigned char span[TRACE_SPAN_LEN]);

void	trace_pack(const struct trace_ctx *, unsigned char out[TRACE_CTX_LEN]);
void	trace_unpack(const unsigned char in[TRACE_CTX_LEN], struct trace_ctx *);

/* The traceparent of an attempt: t's trace id and flags, span as its
 * parent id. */
void	trace_format(const struct trace_ctx *t,
	    const unsigned char span[TRACE_SPAN_LEN],
	    char out[TRACE_PARENT_STRLEN + 1]);
/* A trace id (a packed context starts with it) as 32 lowercase hex
 * digits. */
void	trace_id_hex(const unsigned char id[TRACE_ID_LEN],
	    char out[2 * TRACE_ID_LEN + 1]);

#endif
