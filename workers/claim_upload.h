/* SPDX-License-Identifier: ISC */
/*
 * claim_upload.h: checking bodies in to the claim store, in a deliver
 * process: one pack per call (common/pack.h), uploaded whole (blob.h).
 */
#ifndef ANKUSA_CLAIM_UPLOAD_H
#define ANKUSA_CLAIM_UPLOAD_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

struct msg;

/* The key that signs the references (claimref.h) and their lifetime,
 * from this process's part of the config (claim_check.signing_key and
 * ref_ttl_s); copied.  Until it is set a check-in fails permanently. */
void	claim_upload_set_key(const char *key, uint64_t ttl_s);

/*
 * A claim reference stored with a hook, renewed for the delivery about to
 * carry it (claimref_renew: signed with the key now, expiring ref_ttl_s
 * from now; a v1 reference becomes a v2 one).  *ref is replaced; one that
 * is not a reference, or with no key set, is left as it is.
 */
void	claim_upload_renew(char **ref);

/* The watch called during an upload; nonzero aborts it (deliver.c: is
 * the master still there?). */
void	claim_upload_set_abort(int (*)(void));

/*
 * Write bodies[0..n) of tenant as one pack and put it in the store, the
 * whole within timeout_ms (0: none).  Fills o: JOB_OK with the pack's key
 * and one signed v2 reference per body, in order; JOB_ERROR when the
 * store failed (try again); JOB_PERMANENT when this can never succeed
 * (too many bodies or bytes for one pack, a bad store config, no signing
 * key).  The caller frees o with
 * claim_outcome_free and times it.  For MSG_CLAIM_JOB, and for a sink
 * that checks a body in on its own.
 */
void	claim_upload_checkin(const struct claim_store *, const char *tenant,
	    const struct claim_body *bodies, size_t n, uint64_t timeout_ms,
	    struct claim_outcome *o);
/* The same for a decoded MSG_CLAIM_JOB. */
void	claim_upload_run(const struct claim_job *, struct claim_outcome *);

#endif
