/* SPDX-License-Identifier: ISC */
/*
 * job.h: one delivery attempt as it travels from the master to a deliver
 * process (MSG_DELIVER_JOB), and the attempt's outcome on the way back
 * (MSG_DELIVER_OUTCOME).
 *
 * A job carries everything the attempt needs, so a deliver process never
 * opens the store and never reads the config: the hook (ids, headers to
 * forward, body or claim reference) and the sink's options from the
 * source as it is now, secrets included.  The frame id is the job id; the
 * outcome answers with the same id.
 *
 * Ownership: a job the master builds points at the master's own memory
 * (store records, the config's struct sink_conf copied by value) and is
 * only encoded, never freed with job_free.  A job from job_decode owns
 * every byte it points at; job_free releases it.
 */
#ifndef ANKUSA_JOB_H
#define ANKUSA_JOB_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "trace.h"

#define JOB_MAX_HEADERS		1024	/* forwarded or configured, each */
#define JOB_DETAIL_MAX		256	/* outcome detail, with its NUL */
#define JOB_RESPONSE_MAX	65536	/* an outcome's excerpt */
#define JOB_MAX_BODY		(1ULL << 32)	/* refused above: 4 GiB */

struct msg;

struct job {
	uint64_t		 id;		/* the frame id; unique in a run */
	char			*hook_id;	/* UUIDv7, text */
	char			*tenant;
	char			*source;
	uint64_t		 received_at;	/* wall ms */
	char			*content_type;	/* "" none */
	struct header_kv	*headers;	/* forwarded, lower-case names */
	int			 nheaders;
	char			*dedupe_key;	/* "" none */
	char			*replay_id;	/* "" none */
	uint32_t		 attempt;	/* 1-based */
	char			*claim_ref;	/* "" none: the body is here */
	uint8_t			 verification;	/* enum hook_verification */
	unsigned char		 trace[TRACE_CTX_LEN];	/* the hook's trace
						 * context (common/trace.h) */
	char			*tracestate;	/* "" none */
	unsigned char		 sha256[32];	/* of the body, as the edge
						 * took it (stored with the
						 * hook) */
	unsigned char		 span[TRACE_SPAN_LEN];	/* this attempt's span
						 * id: the deliver process
						 * makes it (not in the
						 * frame) */
	unsigned char		*body;		/* raw, byte for byte */
	size_t			 bodylen;
	uint32_t		 sink_index;	/* in the source, for logs */
	struct sink_conf	 sink;		/* the sink's options, now */
	/* job_decode's copy of the frame: the strings above, the headers'
	 * names and values, the sink's options and an inline body (up to
	 * MSG_INLINE_MAX bytes; a longer one came in a memfd) point into
	 * it. */
	unsigned char		*frame;
	size_t			 framelen;
};

enum job_result {
	JOB_OK = 0,		/* delivered: the row goes */
	JOB_ERROR,		/* transient: the retry policy decides */
	JOB_PERMANENT,		/* dead-letter now; no breaker count */
	JOB_PROXY_ERROR,	/* transient, at the forward proxy (refused,
				 * 407, its own 5xx to CONNECT): the retry
				 * policy decides; the destination's breaker
				 * is not charged.  detail "proxy_error: .." */
	JOB_RESULT_MAX
};

struct job_outcome {
	enum job_result	 result;
	uint64_t	 retry_after_ms;	/* 0: none; the sink's Retry-After */
	uint32_t	 http_status;		/* 0: no HTTP answer */
	uint64_t	 duration_ms;		/* of the attempt */
	char		 detail[JOB_DETAIL_MAX];	/* "http 503", curl's text */
	/* NULL none: the answer's start, made UTF-8 without controls by
	 * the sink (utf8_excerpt), at most JOB_RESPONSE_MAX bytes; decoded,
	 * it points into the frame. */
	const char	*response;
};

/* Build an MSG_DELIVER_JOB frame (m is msg_init'ed here with j->id).  A
 * body above MSG_INLINE_MAX goes into a memfd the frame carries.  0, or -1
 * with errno if the memfd cannot be made (m is then freed). */
int	job_encode(struct msg *m, const struct job *j);
/* Read a job strictly (msg_end included), out of one copy of the frame
 * (its strings, the sink's options among them, point into it) and
 * reading a passed body descriptor.  0, or -1 for a frame that is not
 * exactly a job (j is then left empty: nothing to free). */
int	job_decode(struct msg *m, struct job *j);
void	job_free(struct job *j);

/* printf-style detail into o->detail, truncated to fit. */
void	job_outcome_set(struct job_outcome *o, enum job_result,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The dead-letter reason of a permanent outcome with this detail:
 * "permanent:<detail>", or the detail itself when it is a reason of its
 * own ("egress_denied:<address>", common/netaddr.h). */
void	job_dead_reason(char *why, size_t sz, const char *detail);
/* Build an MSG_DELIVER_OUTCOME frame for job id (m is msg_init'ed here). */
void	job_outcome_encode(struct msg *m, uint64_t id,
	    const struct job_outcome *o);
/* Read an outcome strictly; 0, or -1 for a frame that is not one. */
int	job_outcome_decode(struct msg *m, struct job_outcome *o);
const char *job_result_name(enum job_result);	/* ok, error, permanent */
/* What a log may print of an outcome's detail: its part up to the first
 * ": ", which the deliver process writes (a status, a sink's error code),
 * never what follows (a sink's own words, from its answer); into buf (at
 * most len - 1 bytes), which it returns. */
const char *job_detail_loggable(const char *detail, char *buf, size_t len);


/*
 * The other two message families of a deliver process.  Included here,
 * after the types they use, so that every file that speaks to a deliver
 * process needs job.h alone.
 */
#include "batch.h"
#include "claimjob.h"

#endif
