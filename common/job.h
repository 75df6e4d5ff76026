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

#define JOB_MAX_HEADERS		1024	/* forwarded or configured, each */
#define JOB_DETAIL_MAX		256	/* outcome detail, with its NUL */
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
	JOB_RESULT_MAX
};

struct job_outcome {
	enum job_result	 result;
	uint64_t	 retry_after_ms;	/* 0: none; the sink's Retry-After */
	uint32_t	 http_status;		/* 0: no HTTP answer */
	uint64_t	 duration_ms;		/* of the attempt */
	char		 detail[JOB_DETAIL_MAX];	/* "http 503", curl's text */
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
/* Build an MSG_DELIVER_OUTCOME frame for job id (m is msg_init'ed here). */
void	job_outcome_encode(struct msg *m, uint64_t id,
	    const struct job_outcome *o);
/* Read an outcome strictly; 0, or -1 for a frame that is not one. */
int	job_outcome_decode(struct msg *m, struct job_outcome *o);
const char *job_result_name(enum job_result);	/* ok, error, permanent */


/*
 * A claim check-in (MSG_CLAIM_JOB): the bodies of one tenant, to be
 * written as one claim pack (common/pack.h) and uploaded to the claim
 * store; its outcome (MSG_CLAIM_OUTCOME) gives every body's URN, in the
 * job's order.  The store's options (the claim_check section, secrets
 * included) travel in the job like a sink's.  The bodies travel
 * concatenated in one memfd, always passed; the frame gives each one's
 * offset and length in it.  At most CLAIM_MAX_BODIES per job, so that
 * the outcome's URNs fit in one frame.  Ownership as for a job.
 */
#define CLAIM_MAX_BODIES	32768

/* The claim_check section, as a job carries it. */
struct claim_store {
	char		*type;			/* "local" or "s3" */
	char		*root;			/* local: the directory */
	char		*bucket;		/* s3 */
	char		*region;		/* s3; NULL: us-east-1 */
	char		*endpoint;		/* s3; NULL: AWS's */
	char		*access_key_id;		/* s3; NULL: AWS_* env */
	char		*secret_access_key;
	char		*session_token;
	uint64_t	 pack_max_bytes;
	uint32_t	 retention_days;	/* local; 0: keep */
};

struct claim_body {
	const unsigned char	*data;
	size_t			 len;
};

struct claim_job {
	uint64_t		 id;		/* the frame id */
	struct claim_store	 store;
	char			*tenant;
	uint64_t		 timeout_ms;	/* for the upload; 0: none */
	struct claim_body	*bodies;
	uint32_t		 nbodies;	/* 1..CLAIM_MAX_BODIES */
	unsigned char		*buf;		/* decoded: the memfd's bytes */
	size_t			 buflen;
};

struct claim_outcome {
	enum job_result	 result;	/* ok; error: try again; permanent */
	uint64_t	 duration_ms;
	char		 detail[JOB_DETAIL_MAX];
	char		*key;		/* the pack's storage key; "" if none */
	char		**urns;		/* nurns: one per body, or none */
	uint32_t	 nurns;
};

/* The claim_check section of a config, aliased (nothing to free). */
void	claim_store_from_conf(struct claim_store *, const struct conf *);
/* Build an MSG_CLAIM_JOB frame (m is msg_init'ed here with j->id).  0, or
 * -1 with errno: EINVAL for no bodies or more than CLAIM_MAX_BODIES, or
 * the memfd's (m is then freed). */
int	claim_job_encode(struct msg *m, const struct claim_job *j);
/* Read a job strictly, the memfd read whole; 0, or -1 (j left empty). */
int	claim_job_decode(struct msg *m, struct claim_job *j);
void	claim_job_free(struct claim_job *j);

/* Build an MSG_CLAIM_OUTCOME frame for job id (m is msg_init'ed here). */
void	claim_outcome_encode(struct msg *m, uint64_t id,
	    const struct claim_outcome *o);
/* Read one strictly (strings allocated); 0, or -1 (nothing to free). */
int	claim_outcome_decode(struct msg *m, struct claim_outcome *o);
void	claim_outcome_free(struct claim_outcome *o);

/*
 * The batch messages of a deliver process.  Included here,
 * after the types they use, so that every file that speaks to a deliver
 * process needs job.h alone.
 */
#include "batch.h"

#endif
