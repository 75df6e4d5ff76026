/* SPDX-License-Identifier: ISC */
/*
 * submit.h: the edge's hook submission (MSG_HOOK_SUBMIT), and the part of
 * it that a quarantine verdict (MSG_QUARANTINE_VERDICT) shares: what a
 * hook is for its sinks.  The edge encodes them
 * (workers/edge_request.c), the writer decodes them (daemon/writer.c):
 * both halves of the protocol are here, so a field changes on both sides
 * at once (and MSG_PROTO_VERSION with it).
 *
 * MSG_HOOK_SUBMIT, the id the edge's request: str tenant, str source, str
 * method, str path, str content type ("" none), u64 received at (wall
 * ms), u8 verdict (enum hook_verdict), str verify reason ("" verified),
 * u8 verification (enum hook_verification), data trace context
 * (TRACE_CTX_LEN bytes, common/trace.h), str tracestate ("" none), the
 * tail, data sha256[32], u64 body length, and the body: inline data when
 * it fits MSG_INLINE_MAX, else in the frame's memfd.  The edge checked or
 * made the trace context; the master copies it, unread.
 *
 * The tail: str dedupe key ("" none), u32 n headers and n x (str name,
 * str value), u32 n lanes and n x (u32 sink index, u64 lane hash), str
 * event type ("" none; at most SUBMIT_EVTYPE_MAX bytes), u64 the sinks
 * the hook goes to (bit i: sink index i, as the edge's filters decided,
 * workers/filter.h), u64 the sinks among them whose jq filter failed and
 * u64 those whose jq filter ran past its budget (counted by the master).
 */
#ifndef ANKUSA_SUBMIT_H
#define ANKUSA_SUBMIT_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "trace.h"

struct msg;

#define SUBMIT_MAX_HEADERS	100
#define SUBMIT_MAX_LANES	CONF_MAX_SINKS
#define SUBMIT_EVTYPE_MAX	200	/* bytes of an event type */

struct submit_header {
	const char	*name;
	const char	*value;
};

/* An ordered sink's lane. */
struct submit_lane {
	uint32_t	 sink;		/* index in the source's sinks */
	uint64_t	 hash;		/* 0 only for order_key KEY_NONE */
};

/* What a hook is for its sinks. */
struct submit_tail {
	const char		*dedupe;	/* "": none */
	uint32_t		 nheaders;
	struct submit_header	 headers[SUBMIT_MAX_HEADERS];
	uint32_t		 nlanes;
	struct submit_lane	 lanes[SUBMIT_MAX_LANES];
	const char		*evtype;	/* "": none */
	uint64_t		 match;		/* sinks it goes to */
	uint64_t		 filter_errors;	/* their jq failed */
	uint64_t		 filter_budget;	/* their jq ran out */
};

struct submit {
	const char		*tenant;
	const char		*source;
	const char		*method;
	const char		*path;
	const char		*content_type;	/* "": none */
	uint64_t		 received_at;	/* wall ms */
	uint8_t			 verdict;	/* enum hook_verdict */
	const char		*verify_reason;	/* "": verified */
	uint8_t			 verification;	/* enum hook_verification */
	unsigned char		 trace[TRACE_CTX_LEN];	/* trace_pack's */
	const char		*tracestate;	/* "": none */
	struct submit_tail	 tail;
	unsigned char		 sha256[32];
	const void		*body;		/* decoded: NULL when it is
						 * in the frame's memfd */
	uint64_t		 body_len;
};

/* Build an MSG_HOOK_SUBMIT frame for request id (m is msg_init'ed here).
 * 0, or -1 with errno when the body's memfd cannot be made (m is then
 * freed). */
int	submit_encode(struct msg *m, uint64_t id, const struct submit *);
/* Read one strictly: strings and an inline body point into m.  0, or -1
 * on a malformed frame. */
int	submit_decode(struct msg *m, struct submit *);

/* The tail alone, at m's write or read position (a verdict's). */
void	submit_tail_encode(struct msg *m, const struct submit_tail *);
int	submit_tail_decode(struct msg *m, struct submit_tail *);

#endif
