/* SPDX-License-Identifier: ISC */
/*
 * claim_upload.c: the deliver process's side of the claim check: one
 * MSG_CLAIM_JOB is one pack, written here and put in the store the job
 * names; see claim_upload.h.
 *
 * The pack's time is the wall clock now, its 64 random bits and each
 * claim's own 128 from getrandom(2); its claim ids follow (pack.h), and
 * each claim's reference is signed here (claimref.h) to expire
 * claim_check.ref_ttl_s from now, and renewed the same way for every
 * delivery that carries it (claim_upload_renew), so that its expiry
 * counts from the attempt, not the check-in: a retry or a replay days
 * later carries a reference good for ref_ttl_s, signed with the key in
 * force.  The store is opened per
 * job: a job carries the claim_check options as they are now, and a pack
 * is one request, so there is nothing worth keeping between jobs.  After
 * a put to a local store with claim_check.retention_days, the tenant's
 * day directories past retention are removed (an S3 bucket has lifecycle
 * rules for that).  Nothing here is fatal but running out of memory.
 */
#include "config.h"

#include <sys/types.h>

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "blob.h"
#include "claim_upload.h"
#include "claimref.h"
#include "clock.h"
#include "ids.h"
#include "job.h"
#include "log.h"
#include "pack.h"

static int	(*claim_upload_abort)(void);
static char	*claim_upload_key;
static uint64_t	 claim_upload_ttl_s;

static void	claim_upload_fail(struct claim_outcome *, enum job_result,
		    const char *, ...) __attribute__((format(printf, 3, 4)));

void
claim_upload_set_key(const char *key, uint64_t ttl_s)
{
	free(claim_upload_key);
	claim_upload_key = NULL;
	if (key != NULL && (claim_upload_key = strdup(key)) == NULL)
		fatal("claim_upload_set_key");
	claim_upload_ttl_s = ttl_s;
}

void
claim_upload_renew(char **ref)
{
	struct claimref_key ck;
	char fresh[CLAIMREF_MAX];

	if (claim_upload_key == NULL || *ref == NULL || (*ref)[0] == '\0')
		return;
	ck.key = (const unsigned char *)claim_upload_key;
	ck.keylen = strlen(claim_upload_key);
	ck.ttl_s = claim_upload_ttl_s;
	if (claimref_renew(&ck, *ref, time_wall_ms() / 1000, fresh,
	    sizeof(fresh)) == -1) {
		log_warnx("claim reference %.40s...: not one this build reads, "
		    "sent as stored", *ref);
		return;
	}
	free(*ref);
	if ((*ref = strdup(fresh)) == NULL)
		fatal("claim_upload_renew");
}

void
claim_upload_set_abort(int (*fn)(void))
{
	claim_upload_abort = fn;
}

static void
claim_upload_fail(struct claim_outcome *o, enum job_result r,
    const char *fmt, ...)
{
	va_list ap;

	o->result = r;
	va_start(ap, fmt);
	(void)vsnprintf(o->detail, sizeof(o->detail), fmt, ap);
	va_end(ap);
}

void
claim_upload_checkin(const struct claim_store *cs, const char *tenant,
    const struct claim_body *bodies, size_t n, uint64_t timeout_ms,
    struct claim_outcome *o)
{
	struct pack_body *pb;
	struct blob_store *bs;
	struct claimref_key ck;
	struct pack pk;
	unsigned char rnd[8], *secrets;
	char err[BLOB_ERR_MAX], urn[CLAIMREF_MAX];
	enum blob_status st;
	uint64_t now;
	size_t i;
	int gone;

	memset(o, 0, sizeof(*o));
	if (n == 0 || n > CLAIM_MAX_BODIES) {
		claim_upload_fail(o, JOB_PERMANENT, "claim check-in: %zu "
		    "bodies, must be 1..%d", n, CLAIM_MAX_BODIES);
		return;
	}
	if (claim_upload_key == NULL) {
		claim_upload_fail(o, JOB_PERMANENT, "claim check-in: no "
		    "claim_check.signing_key in this process's config");
		return;
	}
	if ((pb = calloc(n, sizeof(*pb))) == NULL ||
	    (secrets = malloc(n * PACK_SECRET_LEN)) == NULL)
		fatal("claim_upload_checkin");
	for (i = 0; i < n; i++) {
		pb[i].data = bodies[i].data;
		pb[i].len = bodies[i].len;
	}
	now = time_wall_ms();
	ids_random(rnd, sizeof(rnd));
	ids_random(secrets, n * PACK_SECRET_LEN);
	if (pack_write(&pk, tenant, now, rnd, secrets, pb, n, err,
	    sizeof(err)) == -1) {
		free(pb);
		free(secrets);
		claim_upload_fail(o, JOB_PERMANENT, "%s", err);
		return;
	}
	free(pb);
	explicit_bzero(secrets, n * PACK_SECRET_LEN);
	free(secrets);
	if (cs->pack_max_bytes > 0 && pk.len > cs->pack_max_bytes)
		log_debug("claim pack %s: %zu bytes, above pack_max_bytes "
		    "%" PRIu64 " (a body that large goes alone)", pk.key,
		    pk.len, cs->pack_max_bytes);

	if ((bs = blob_open(cs, err, sizeof(err))) == NULL) {
		pack_free(&pk);
		claim_upload_fail(o, JOB_PERMANENT, "%s", err);
		return;
	}
	bs->timeout_ms = timeout_ms;
	bs->abort = claim_upload_abort;
	st = blob_put(bs, pk.key, pk.buf, pk.len, err, sizeof(err));
	if (st != BLOB_OK) {
		blob_close(bs);
		pack_free(&pk);
		claim_upload_fail(o, JOB_ERROR, "%s", err);
		return;
	}
	if (cs->retention_days > 0 &&
	    (gone = blob_expire(bs, tenant, now, cs->retention_days, err,
	    sizeof(err))) != 0) {
		if (gone == -1)
			log_warnx("%s", err);
		else
			log_info("claim store: %d day(s) of tenant %s past "
			    "%" PRIu32 " days removed", gone, tenant,
			    cs->retention_days);
	}
	blob_close(bs);

	if ((o->key = strdup(pk.key)) == NULL ||
	    (o->urns = calloc(n, sizeof(*o->urns))) == NULL)
		fatal("claim_upload_checkin");
	ck.key = (const unsigned char *)claim_upload_key;
	ck.keylen = strlen(claim_upload_key);
	ck.ttl_s = claim_upload_ttl_s;
	for (i = 0; i < n; i++) {
		if (claimref_sign(&ck, tenant, pk.claim_ids[i], now / 1000, urn,
		    sizeof(urn)) == -1)
			fatalx("claim pack %s: cannot sign claim %zu", pk.key,
			    i);
		if ((o->urns[i] = strdup(urn)) == NULL)
			fatal("claim_upload_checkin");
	}
	o->nurns = n;
	o->result = JOB_OK;
	snprintf(o->detail, sizeof(o->detail), "pack %s: %zu claims, %zu "
	    "bytes", pk.id, n, pk.len);
	pack_free(&pk);
}

void
claim_upload_run(const struct claim_job *j, struct claim_outcome *o)
{
	claim_upload_checkin(&j->store, j->tenant, j->bodies, j->nbodies,
	    j->timeout_ms, o);
}
