/* SPDX-License-Identifier: ISC */
/*
 * batch.h: the batch messages (MSG_BATCH_JOB, MSG_BATCH_OUTCOME).  The
 * attempt's own types (struct job, enum job_result) are job.h's, which
 * includes this file.
 */
#ifndef ANKUSA_BATCH_H
#define ANKUSA_BATCH_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "job.h"

/*
 * A batch: several attempts of one sink in one frame (MSG_BATCH_JOB), for
 * the batching sinks (sqs, google_pubsub), and their outcomes, one per
 * entry, in one frame back (MSG_BATCH_OUTCOME).  The frame id is the batch
 * id; each entry carries its own entry id (the master's job id of that
 * attempt), by which its outcome is matched.
 *
 * Every entry carries its body, also when it has a claim reference (the
 * queue message still states the body's size and sha256); the bodies
 * travel concatenated in entry order, in one memfd or, when they total at
 * most MSG_INLINE_MAX, inline.  Ownership as for a job: a batch the
 * master builds points at its own memory and is only encoded; one from
 * batch_decode owns everything and batch_free releases it.
 */
#define BATCH_MAX_ENTRIES	1000
/* A redis batch (workers/sink_redis.c): its commands go in one pipelined
 * write; the bound keeps a lost connection's cost and the server's query
 * buffer small. */
#define SINK_REDIS_MAX_ENTRIES	500
#define SINK_REDIS_MAX_BYTES	(16 * 1024 * 1024)

struct batch_entry {
	uint64_t		 id;		/* entry id: the attempt's job id */
	char			*hook_id;
	char			*tenant;
	char			*source;
	uint64_t		 received_at;	/* wall ms */
	char			*content_type;	/* "" none */
	struct header_kv	*headers;	/* forwarded, lower-case names */
	int			 nheaders;
	char			*dedupe_key;	/* "" none */
	char			*replay_id;	/* "" none */
	uint32_t		 attempt;	/* 1-based */
	char			*claim_ref;	/* "" none: not checked in */
	uint8_t			 verification;	/* enum hook_verification */
	unsigned char		 trace[TRACE_CTX_LEN];	/* the hook's trace
						 * context (common/trace.h) */
	char			*tracestate;	/* "" none */
	unsigned char		 span[TRACE_SPAN_LEN];	/* the attempt's, as a
						 * job's */
	char			*order_key;	/* the entry's lane key, "" none */
	const unsigned char	*body;		/* raw; decoded: into b->bodies */
	size_t			 bodylen;
};

struct claim_store;

struct batch {
	uint64_t		 id;		/* the frame id */
	struct sink_conf	 sink;		/* the sink's options, once */
	/* The claim store, when claim_check is configured: a body above
	 * inline_max_bytes whose hook has no claim reference (its pack
	 * failed) is checked in by the attempt itself. */
	struct claim_store	*claim;		/* NULL: none */
	struct batch_entry	*entries;
	uint32_t		 nentries;	/* 1..BATCH_MAX_ENTRIES */
	unsigned char		*bodies;	/* decoded: all bodies, in order */
	size_t			 bodieslen;
};

/* One entry's outcome. */
struct batch_result {
	uint64_t	 id;			/* the entry id */
	enum job_result	 result;
	uint64_t	 retry_after_ms;	/* 0: none */
	char		 detail[JOB_DETAIL_MAX];
};

struct batch_outcome {
	uint32_t		 n;
	struct batch_result	*r;		/* n of them, in entry order */
	uint32_t		 http_status;	/* the last request's, 0 none */
	uint64_t		 duration_ms;	/* of the whole batch */
};

/* Build an MSG_BATCH_JOB frame (m is msg_init'ed here with b->id).  0, or
 * -1 with errno: EINVAL for no entries or more than BATCH_MAX_ENTRIES,
 * EMSGSIZE for a frame above MSG_MAX_PAYLOAD, or the memfd's (m is then
 * freed). */
int	batch_encode(struct msg *m, const struct batch *b);
/* Read a batch strictly; 0, or -1 for a frame that is not exactly one (b
 * is then left empty). */
int	batch_decode(struct msg *m, struct batch *b);
void	batch_free(struct batch *b);
/* A batch of one: e aliases j's fields (nothing to free). */
void	batch_entry_from_job(struct batch_entry *e, const struct job *j);

/* o->r gets n zeroed results with the ids of b's entries (calloc). */
void	batch_outcome_init(struct batch_outcome *o, const struct batch *b);
void	batch_outcome_set(struct batch_result *r, enum job_result,
	    const char *fmt, ...) __attribute__((format(printf, 3, 4)));
/* The same result (retry_after_ms with it when it is JOB_ERROR) for the
 * entries idx[0..n) of o. */
void	batch_outcome_set_many(struct batch_outcome *o, const uint32_t *idx,
	    uint32_t n, enum job_result, uint64_t retry_after_ms,
	    const char *detail);
/* Build an MSG_BATCH_OUTCOME frame for batch id (m is msg_init'ed here). */
void	batch_outcome_encode(struct msg *m, uint64_t id,
	    const struct batch_outcome *o);
/* Read one strictly (o->r allocated); 0, or -1 (nothing to free). */
int	batch_outcome_decode(struct msg *m, struct batch_outcome *o);
void	batch_outcome_free(struct batch_outcome *o);

#endif
