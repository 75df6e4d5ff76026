/* SPDX-License-Identifier: ISC */
/*
 * claimjob.h: the claim check-in messages (MSG_CLAIM_JOB,
 * MSG_CLAIM_OUTCOME).  enum job_result is job.h's, which includes this
 * file.
 */
#ifndef ANKUSA_CLAIMJOB_H
#define ANKUSA_CLAIMJOB_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

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

#endif
