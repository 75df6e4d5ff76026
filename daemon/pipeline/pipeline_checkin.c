/* SPDX-License-Identifier: ISC */
/*
 * pipeline_checkin.c: the claim check, the master's side; see
 * pipeline_checkin.h.
 *
 * Each hook to check in is a struct pending, with the rows that wait for
 * it.  A pending is sent at most once at a time; the pack of one job holds
 * hooks of one tenant only (packs never mix tenants) and at most
 * claim_check.pack_max_bytes of bodies (one larger body goes alone).
 * Memory: pendings exist only for claimed rows, bounded by the windows.
 */
#include "config.h"

#include <sys/queue.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "dispatch/dispatch.h"
#include "ids.h"
#include "job.h"
#include "log.h"
#include "master.h"
#include "msg.h"
#include "pack.h"
#include "pipeline_checkin.h"
#include "store/store.h"

#define CLAIM_MAX_WAITERS	CONF_MAX_SINKS

struct pending {
	TAILQ_ENTRY(pending)	 entry;
	uint64_t		 seq;
	char			 tenant[65];
	uint64_t		 size;
	uint64_t		 job;		/* 0: not sent */
	int			 skipped;	/* in the job, not in its pack */
	unsigned char		 keys[CLAIM_MAX_WAITERS][STORE_ROWKEY_LEN];
	int			 nkeys;
};

TAILQ_HEAD(pendingq, pending);

static struct pendingq	 pendings = TAILQ_HEAD_INITIALIZER(pendings);

static struct pending	*pending_find(uint64_t);
static uint64_t		 threshold(const struct source_conf *);

static struct pending *
pending_find(uint64_t seq)
{
	struct pending *p;

	TAILQ_FOREACH(p, &pendings, entry)
		if (p->seq == seq)
			return p;
	return NULL;
}

/* The smallest inline_max_bytes of the source's queue sinks; UINT64_MAX
 * when it has none. */
static uint64_t
threshold(const struct source_conf *src)
{
	uint64_t t = UINT64_MAX;
	int i;

	for (i = 0; i < src->nsinks; i++)
		if (conf_sink_queue(src->sinks[i].type) &&
		    src->sinks[i].inline_max_bytes < t)
			t = src->sinks[i].inline_max_bytes;
	return t;
}

int
claim_gate(struct drow *r)
{
	const struct source_conf *src = conf_source(env->conf, r->row.source);
	const struct sink_conf *sk;
	struct pending *p;
	char ref[2];		/* only whether the hook has one */

	if (src == NULL || r->row.body_size <= threshold(src))
		return 0;
	if (!env->conf->claim_check.enabled) {
		/* Only the queue sinks that cannot carry it are refused. */
		sk = &src->sinks[r->bound];
		if (conf_sink_queue(sk->type) &&
		    r->row.body_size > sk->inline_max_bytes)
			return 2;
		return 0;
	}
	if ((p = pending_find(r->seq)) == NULL) {
		switch (store_hook_claim(env->store, r->seq, ref,
		    sizeof(ref))) {
		case 1:
			if (ref[0] != '\0')
				return 0;	/* checked in */
			break;
		case -1:
			log_warnx("claim: hook seq %" PRIu64 ": %s", r->seq,
			    store_strerror(env->store));
			return 0;	/* its attempt will say */
		default:
			return 0;	/* gone */
		}
		if ((p = calloc(1, sizeof(*p))) == NULL)
			fatal("claim");
		p->seq = r->seq;
		p->size = r->row.body_size;
		snprintf(p->tenant, sizeof(p->tenant), "%s", r->row.tenant);
		TAILQ_INSERT_TAIL(&pendings, p, entry);
	}
	if (p->nkeys == CLAIM_MAX_WAITERS)
		return 0;
	memcpy(p->keys[p->nkeys++], r->key, STORE_ROWKEY_LEN);
	return 1;
}

int
claim_next_job(struct msg *m, uint64_t job_id)
{
	const struct conf *c = env->conf;
	struct store_hook_rec *recs;
	struct claim_body *bodies;
	struct claim_job j;
	struct pending *p, *first = NULL;
	uint64_t bytes = 0;
	uint32_t n = 0, i;
	int rc;

	TAILQ_FOREACH(p, &pendings, entry)
		if (p->job == 0) {
			first = p;
			break;
		}
	if (first == NULL)
		return 0;
	if ((recs = calloc(CLAIM_MAX_BODIES, sizeof(*recs))) == NULL ||
	    (bodies = calloc(CLAIM_MAX_BODIES, sizeof(*bodies))) == NULL)
		fatal("claim");
	for (p = first; p != NULL && n < CLAIM_MAX_BODIES;
	    p = TAILQ_NEXT(p, entry)) {
		if (p->job != 0 || strcmp(p->tenant, first->tenant) != 0)
			continue;
		/* pack_max_bytes bounds the pack: bodies and their ZIP
		 * framing (one larger body still goes, alone). */
		if (n > 0 && bytes + p->size + PACK_CLAIM_OVERHEAD +
		    PACK_FIXED_OVERHEAD > c->claim_check.pack_max_bytes)
			break;
		if ((rc = store_hook_get(env->store, p->seq, &recs[n])) != 1) {
			/* Gone or unreadable: its rows go on and meet it. */
			log_warnx("claim: hook seq %" PRIu64 " unreadable for "
			    "check-in", p->seq);
			p->job = job_id;
			p->skipped = 1;
			continue;
		}
		bodies[n].data = recs[n].hook.body;
		bodies[n].len = recs[n].hook.body_len;
		bytes += recs[n].hook.body_len + PACK_CLAIM_OVERHEAD;
		p->job = job_id;
		n++;
	}
	rc = 0;
	if (n > 0) {
		memset(&j, 0, sizeof(j));
		j.id = job_id;
		claim_store_from_conf(&j.store, c);
		j.tenant = first->tenant;
		j.timeout_ms = c->dispatch.attempt_timeout_ms;
		j.bodies = bodies;
		j.nbodies = n;
		if (claim_job_encode(m, &j) == -1) {
			log_warn("claim: check-in job %" PRIu64, job_id);
			rc = -1;
		} else
			rc = 1;
	} else if (first->job == job_id)
		rc = -1;	/* only unreadable hooks: release them */
	for (i = 0; i < n; i++)
		store_hook_rec_free(&recs[i]);
	free(recs);
	free(bodies);
	return rc;
}

void
claim_done(uint64_t job_id, const struct claim_outcome *o,
    void (*release)(const unsigned char *, void *), void *arg)
{
	struct store_batch *sb = NULL;
	struct pending *p, *next;
	uint32_t i = 0;
	int k, ok = o != NULL && o->result == JOB_OK;

	if (ok && (sb = store_batch_begin(env->store)) == NULL)
		ok = 0;
	TAILQ_FOREACH(p, &pendings, entry) {
		if (p->job != job_id)
			continue;
		if (p->skipped)
			continue;
		if (ok && (i >= o->nurns || store_batch_hook_set_claim(sb,
		    p->seq, o->urns[i]) == -1))
			ok = 0;
		i++;
	}
	if (ok && i != o->nurns)
		ok = 0;		/* not one URN per body: trust none */
	if (sb != NULL) {
		if (!ok)
			store_batch_abort(sb);
		else if (store_batch_commit_lazy(sb) == -1)
			ok = 0;
	}
	if (ok)
		log_debug("claim: job %" PRIu64 ": %u bodies checked in as %s",
		    job_id, i, o->key);
	else
		log_warnx("claim: check-in job %" PRIu64 " failed: %s; its "
		    "rows go on without a claim", job_id, o != NULL ?
		    o->detail : "no outcome");
	for (p = TAILQ_FIRST(&pendings); p != NULL; p = next) {
		next = TAILQ_NEXT(p, entry);
		if (p->job != job_id)
			continue;
		TAILQ_REMOVE(&pendings, p, entry);
		for (k = 0; k < p->nkeys; k++)
			release(p->keys[k], arg);
		free(p);
	}
}
