/* SPDX-License-Identifier: ISC */
/*
 * pipeline_batch.c: the dispatch glue of the batching sinks; see
 * pipeline_int.h.
 *
 * A batching sink's attempts wait in its destination's batcher
 * (batcher.c) and go to an idle deliver process as one MSG_BATCH_JOB;
 * each entry settles on its own result, and each is timed out on its own.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "conf.h"
#include "dispatch/batcher.h"
#include "dispatch/dispatch.h"
#include "job.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "msg.h"
#include "pipeline_int.h"
#include "pipeline_jobfill.h"
#include "store/store.h"
#include "supervisor.h"

#define KAFKA_BATCH_BYTES	(16ULL * 1024 * 1024)

static struct event	*ev_batch;	/* lingers and entry deadlines */
static struct batcher	*batcher;

static int	op_batch_add(void *, struct drow *);
static void	op_batch_cancel(void *, const uint64_t *, size_t, char *);
static void	batch_expired(struct batcher_entry *, void *);
static int	batch_send(struct batcher_req *, struct worker *);
static void	batch_cb(evutil_socket_t, short, void *);

void
pipeline_batch_init(void)
{
	if ((ev_batch = evtimer_new(env->base, batch_cb, NULL)) == NULL)
		fatalx("pipeline: evtimer_new");
	batcher = batcher_new();
}

void
pipeline_batch_ops(struct dispatch_ops *ops)
{
	ops->batch_add = op_batch_add;
	ops->batch_cancel = op_batch_cancel;
}

/* A broker batch's bytes: what one deliver process holds of it at once. */
#define PIPELINE_BROKER_BATCH_BYTES	(64ULL * 1024 * 1024)

/*
 * A batching sink's attempt goes to its destination's batcher.  The
 * destination is the source's sink and where it sends: one source's rows of
 * one sink share requests across tenants; two sources never do (their
 * sinks' options may differ).  Pub/Sub takes one ordering key per request.
 */
static int
op_batch_add(void *arg, struct drow *r)
{
	const struct sink_conf *sk;
	const struct tenant_window *tw;
	struct batcher_limits lim;
	enum attempt_result res;
	char dest[2048], why[JOB_DETAIL_MAX];
	uint64_t bytes, now = time_sched_ms();

	if ((sk = pipeline_store_sink(r, &res, why, sizeof(why))) == NULL) {
		pipeline_later(r->job, res, "%s", why);
		return 0;
	}
	memset(&lim, 0, sizeof(lim));
	if (sk->type == SINK_SQS) {
		snprintf(dest, sizeof(dest), "%s#%u|sqs|%s", r->row.source,
		    r->bound, sk->u.sqs.queue_url);
		lim.max_entries = 10;
		lim.max_bytes = sk->max_message_bytes;
	} else if (sk->type == SINK_REDIS) {
		/* One pipelined write of commands, a reply each
		 * (workers/sink_redis.c); the url is left out (it may
		 * hold a password, and the name is logged): the source's
		 * sink index names it. */
		snprintf(dest, sizeof(dest), "%s#%u|redis|%s|%s",
		    r->row.source, r->bound,
		    sk->u.redis.stream != NULL ? "stream" : "channel",
		    sk->u.redis.stream != NULL ? sk->u.redis.stream :
		    sk->u.redis.channel);
		lim.max_entries = SINK_REDIS_MAX_ENTRIES;
		lim.max_bytes = SINK_REDIS_MAX_BYTES;
	} else if (sk->type == SINK_NATS) {
		/* Async publishes, each settled on its own PubAck: a batch
		 * is a window of them, not one request, bounded so that a
		 * deliver process holds 16 MiB of bodies (and their
		 * messages) at most. */
		snprintf(dest, sizeof(dest), "%s#%u|nats|%s|%s", r->row.source,
		    r->bound, sk->u.nats.urls, sk->u.nats.subject);
		lim.max_entries = 256;
		lim.max_bytes = 16 * 1024 * 1024;
	} else if (sk->type == SINK_RABBITMQ) {
		/* One batch is what may await its confirms at once; the
		 * url is left out (it may hold a password): the source's
		 * sink index names it. */
		snprintf(dest, sizeof(dest), "%s#%u|rabbitmq|%s", r->row.source,
		    r->bound, sk->u.rabbitmq.exchange);
		lim.max_entries = sk->u.rabbitmq.max_inflight;
		lim.max_bytes = PIPELINE_BROKER_BATCH_BYTES;
	} else if (sk->type == SINK_KAFKA) {
		/* No request of ours to fit: the producer batches records
		 * itself.  The cap keeps a batch's bodies (one memfd to the
		 * deliver process) at a bounded size. */
		snprintf(dest, sizeof(dest), "%s#%u|kafka|%s", r->row.source,
		    r->bound, sk->u.kafka.topic);
		lim.max_entries = BATCH_MAX_ENTRIES;
		lim.max_bytes = KAFKA_BATCH_BYTES;
	} else {
		snprintf(dest, sizeof(dest), "%s#%u|pubsub|%s/%s|%s",
		    r->row.source, r->bound, sk->u.pubsub.project,
		    sk->u.pubsub.topic,
		    sk->u.pubsub.ordering_key != NULL ?
		    sk->u.pubsub.ordering_key : "");
		lim.max_entries = 1000;
		lim.max_bytes = 10000000;
	}
	lim.linger_ms = BATCHER_LINGER_MS;
	/* The claimed-row windows bound what waits; the batcher's own
	 * bounds follow them. */
	tw = conf_tenant_window(env->conf, r->row.tenant);
	lim.max_queued = env->conf->dispatch.max_inflight;
	lim.max_queued_tenant = tw->max_inflight;
	lim.max_in_flight = env->conf->dispatch.sink_concurrency;
	/* The entry's size in the request: its v1 message, base64 body or
	 * claim reference. */
	if (r->row.body_size > sk->inline_max_bytes)
		bytes = 2048;
	else
		bytes = r->row.body_size * 4 / 3 + 2048;
	if (batcher_add(batcher, dest, &lim, r->row.tenant, r->job, bytes, now,
	    now + env->conf->dispatch.attempt_timeout_ms, NULL) == -1)
		return -1;
	pipeline_arm();
	return 0;
}

/* A breaker that opened takes its key's waiting entries back. */
static void
op_batch_cancel(void *arg, const uint64_t *jobs, size_t n, char *taken)
{
	(void)batcher_remove_jobs(batcher, jobs, n, taken);
}

/* MSG_BATCH_OUTCOME: each entry settles its own row on its own result;
 * entries that timed out meanwhile were settled already. */
int
pipeline_batch_outcome(struct worker *w, struct msg *m)
{
	struct batch_outcome o;
	struct batcher_req *req = w->req;
	struct drow *r;
	enum attempt_result res;
	const char *name;
	struct poutcome po;
	uint64_t ran;
	uint32_t i, k;

	if (req == NULL || w->job != m->id || batch_outcome_decode(m, &o) == -1)
		return -1;
	for (i = 0; i < o.n; i++) {
		for (k = 0; k < req->n; k++)
			if (req->entries[k].job == o.r[i].id)
				break;
		if (k == req->n || req->entries[k].done)
			continue;
		req->entries[k].done = 1;
		res = pool_result(o.r[i].result, &name);
		ran = time_mono_us() - w->started_us;
		r = dispatch_job_row(pipeline_disp, o.r[i].id);
		pool_attempt_ended(r, w->module, name, res, ran, o.r[i].detail);
		if (r == NULL)
			continue;
		/* The request's status and time are each entry's. */
		memset(&po, 0, sizeof(po));
		po.job = o.r[i].id;
		po.res = res;
		po.retry_after_ms = o.r[i].retry_after_ms;
		po.detail = o.r[i].detail;
		po.code = o.http_status;
		po.attempt = 1;
		po.started_at = time_wall_ms() - ran / 1000;
		po.duration_ms = o.duration_ms;
		pipeline_store_outcome(&po);
	}
	/* An entry the process did not answer failed. */
	for (k = 0; k < req->n; k++)
		if (!req->entries[k].done) {
			req->entries[k].done = 1;
			pipeline_later(req->entries[k].job, ATTEMPT_ERROR,
			    "no result for this entry");
		}
	batch_outcome_free(&o);
	batcher_done(batcher, req);
	w->req = NULL;
	w->state = w->retiring ? WORKER_RETIRING : WORKER_IDLE;
	pipeline_arm();
	return 0;
}

void
pipeline_batch_gone(struct worker *w)
{
	uint32_t i;

	/* A crash fails every attempt of its request. */
	for (i = 0; i < w->req->n; i++)
		if (!w->req->entries[i].done)
			pipeline_later_attempt(w->req->entries[i].job,
			    ATTEMPT_ERROR, w->started_us, "deliver process "
			    "died during the request");
	batcher_done(batcher, w->req);
	w->req = NULL;
}

static void
batch_expired(struct batcher_entry *e, void *arg)
{
	struct drow *r = dispatch_job_row(pipeline_disp, e->job);
	char why[64];

	snprintf(why, sizeof(why), "attempt_timeout:%" PRIu64,
	    env->conf->dispatch.attempt_timeout_ms);
	if (r != NULL)
		pool_attempt_ended(r, r->row.module, "timeout",
		    ATTEMPT_TIMEOUT,
		    env->conf->dispatch.attempt_timeout_ms * 1000, why);
	/* An attempt all the same (its row counts it): logged as one that
	 * ran its whole time. */
	pipeline_later_attempt(e->job, ATTEMPT_TIMEOUT, time_mono_us() -
	    env->conf->dispatch.attempt_timeout_ms * 1000, "%s", why);
}

/* Build a request's MSG_BATCH_JOB and hand it to w.  -1: nothing sent
 * (every entry has its outcome by then). */
static int
batch_send(struct batcher_req *req, struct worker *w)
{
	const struct sink_conf *sink = NULL, *sk;
	struct store_hook_rec *recs;
	struct batch_entry *be;
	struct claim_store cstore;
	struct batch b;
	struct drow *r;
	struct msg m;
	enum attempt_result res;
	struct jobfill_ids *ids;
	char why[JOB_DETAIL_MAX];
	uint32_t i, n = 0;
	int rc = -1;

	recs = calloc(req->n, sizeof(*recs));
	be = calloc(req->n, sizeof(*be));
	ids = calloc(req->n, sizeof(*ids));
	if (recs == NULL || be == NULL || ids == NULL)
		fatal("pipeline");
	for (i = 0; i < req->n; i++) {
		struct batcher_entry *e = &req->entries[i];

		if (e->done)
			continue;
		if ((r = dispatch_job_row(pipeline_disp, e->job)) == NULL) {
			e->done = 1;
			continue;
		}
		if ((sk = pipeline_store_sink(r, &res, why,
		    sizeof(why))) == NULL) {
			e->done = 1;
			pipeline_later(e->job, res, "%s", why);
			continue;
		}
		if (sink == NULL)
			sink = sk;
		else if (sk != sink) {
			/* Bound elsewhere by a reload since it was added
			 * (two sinks of its module): not this request's. */
			e->done = 1;
			pipeline_later(e->job, ATTEMPT_ERROR, "config changed");
			continue;
		}
		if (pipeline_store_hook(r, &recs[n], &res, why,
		    sizeof(why)) == -1) {
			e->done = 1;
			pipeline_later(e->job, res, "%s", why);
			continue;
		}
		be[n].id = e->job;
		jobfill_entry(&be[n], &ids[n], r, &recs[n]);
		n++;
	}
	if (n > 0) {
		memset(&b, 0, sizeof(b));
		b.id = req->id;
		b.sink = *sink;
		if (env->conf->claim_check.enabled) {
			claim_store_from_conf(&cstore, env->conf);
			b.claim = &cstore;
		}
		b.entries = be;
		b.nentries = n;
		if (batch_encode(&m, &b) == -1) {
			log_warn("pipeline: batch %" PRIu64, req->id);
			for (i = 0; i < req->n; i++)
				if (!req->entries[i].done) {
					req->entries[i].done = 1;
					pipeline_later(req->entries[i].job,
					    ATTEMPT_ERROR, "batch: %s",
					    strerror(errno));
				}
		} else if (supervisor_send(w->serial, &m) == -1) {
			msg_free(&m);
			for (i = 0; i < req->n; i++)
				if (!req->entries[i].done) {
					req->entries[i].done = 1;
					pipeline_later(req->entries[i].job,
					    ATTEMPT_ERROR,
					    "deliver process gone");
				}
			w->state = WORKER_RETIRING;
		} else {
			msg_free(&m);
			w->module = dispatch_sink_module(sink->type);
			metrics_add("ankusa_dispatch_batches_total", 1, "sink",
			    dispatch_module_name(w->module), NULL);
			metrics_add("ankusa_dispatch_batch_entries_total", n,
			    "sink", dispatch_module_name(w->module), NULL);
			w->state = WORKER_BUSY;
			w->job = req->id;
			w->req = req;
			w->reported = 0;
			w->started_us = time_mono_us();
			rc = 0;
		}
	}
	for (i = 0; i < n; i++)
		store_hook_rec_free(&recs[i]);
	free(recs);
	free(be);
	free(ids);
	return rc;
}

/*
 * Expire entries past their deadline (each attempt is timed out on its
 * own), kill the process of a request whose every entry has timed out,
 * send what is ready to idle deliver processes, and arm the timer for the
 * next linger or deadline.
 */
void
pipeline_batch_pump(void)
{
	struct batcher_req *req;
	struct timeval tv;
	uint64_t now = time_sched_ms(), next, dl;
	int i;

	dl = batcher_expire(batcher, now, batch_expired, NULL);
	for (i = 0; i < pool_nworkers; i++)
		if (pool_workers[i].state == WORKER_BUSY &&
		    pool_workers[i].req != NULL &&
		    batcher_all_done(pool_workers[i].req) &&
		    !pool_workers[i].reported) {
			log_warnx("pipeline: batch %" PRIu64 ": every entry "
			    "timed out; killing its deliver process",
			    pool_workers[i].job);
			pool_workers[i].reported = 1;
			supervisor_kill(pool_workers[i].serial);
		}
	for (;;) {
		struct worker *w;

		if ((w = pool_idle()) == NULL ||
		    (req = batcher_take(batcher, now)) == NULL)
			break;
		if (batch_send(req, w) == -1)
			batcher_done(batcher, req);
	}
	next = batcher_next_ready(batcher, now);
	if (dl < next)
		next = dl;
	if (next == UINT64_MAX) {
		evtimer_del(ev_batch);
		return;
	}
	next = next > now ? next - now : 1;
	tv.tv_sec = next / 1000;
	tv.tv_usec = (next % 1000) * 1000;
	evtimer_add(ev_batch, &tv);
}

static void
batch_cb(evutil_socket_t fd, short ev, void *arg)
{
	pipeline_arm();
}
