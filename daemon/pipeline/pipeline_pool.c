/* SPDX-License-Identifier: ISC */
/*
 * pipeline_pool.c: the deliver processes as the dispatch glue sees them; see
 * pipeline_int.h.
 *
 * Each process is idle, busy with one attempt (a job, a batch's request
 * or a claim check-in) or retiring.  A busy process may hold one job on
 * deck behind its attempt (common/deck.h): the process starts it itself
 * when its attempt ends, or the master takes it back.  Every attempt has a
 * deadline (dispatch.attempt_timeout_ms, from its start in the process):
 * past it the process is killed and the attempt failed
 * "attempt_timeout:<ms>".  A process that dies fails what it held.
 */
#include "config.h"

#include <inttypes.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "conf.h"
#include "deck.h"
#include "dispatch/dispatch.h"
#include "dispatch/health.h"
#include "job.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "msg.h"
#include "pipeline.h"
#include "pipeline_checkin.h"
#include "pipeline_int.h"
#include "supervisor.h"

struct worker		*pool_workers;
int			 pool_nworkers;
static int		 pool_capworkers;

static int	op_start(void *, struct drow *);
static int	op_deck(void *, struct drow *, struct drow *);
static int	op_deck_cancel(void *, struct drow *);
static struct worker *worker_find(uint32_t);
static void	timeout_cb(evutil_socket_t, short, void *);
static int	worker_deck_back(struct worker *, uint64_t *);
static void	worker_deck_next(struct worker *);

void
pool_ops(struct dispatch_ops *ops)
{
	ops->start = op_start;
	ops->deck = op_deck;
	ops->deck_cancel = op_deck_cancel;
}

struct worker *
pool_idle(void)
{
	int i;

	for (i = 0; i < pool_nworkers; i++)
		if (pool_workers[i].state == WORKER_IDLE)
			return &pool_workers[i];
	return NULL;
}

/* Build the job of r and hand it to an idle deliver process. */
static int
op_start(void *arg, struct drow *r)
{
	struct worker *w;
	enum attempt_result res;
	struct msg m;
	char detail[JOB_DETAIL_MAX];

	if ((w = pool_idle()) == NULL)
		return -1;
	if (pipeline_store_job(r, &m, &res, detail, sizeof(detail)) == -1) {
		pipeline_later(r->job, res, "%s", detail);
		return 0;
	}
	if (supervisor_send(w->serial, &m) == -1) {
		msg_free(&m);
		w->state = WORKER_RETIRING;	/* gone; reaped soon */
		pipeline_later(r->job, ATTEMPT_ERROR, "deliver process gone");
		return 0;
	}
	msg_free(&m);
	w->state = WORKER_BUSY;
	w->job = r->job;
	w->module = r->row.module;
	w->reported = 0;
	w->started_us = time_mono_us();
	pool_timer(w, env->conf->dispatch.attempt_timeout_ms);
	return 0;
}

/* Put r on deck behind ahead's attempt, in the process that runs it. */
static int
op_deck(void *arg, struct drow *r, struct drow *ahead)
{
	struct worker *w = NULL;
	enum attempt_result res;
	struct msg m;
	char detail[JOB_DETAIL_MAX];
	uint64_t started;
	int i;

	for (i = 0; i < pool_nworkers; i++)
		if (pool_workers[i].state == WORKER_BUSY &&
		    pool_workers[i].job == ahead->job) {
			w = &pool_workers[i];
			break;
		}
	if (w == NULL || w->shm == NULL || w->deck != 0 || w->reported ||
	    w->retiring || w->req != NULL || w->claim)
		return -1;
	/* A row that cannot be sent fails when it starts, not here. */
	if (pipeline_store_job(r, &m, &res, detail, sizeof(detail)) == -1)
		return -1;
	m.type = MSG_DELIVER_NEXT;
	deck_offer(w->shm, r->job);
	if (supervisor_send(w->serial, &m) == -1) {
		msg_free(&m);
		(void)deck_cancel(w->shm, r->job, &started);
		return -1;
	}
	msg_free(&m);
	w->deck = r->job;
	return 0;
}

/* Every deck the dispatch holds is some process's (whoever forgets one
 * tells the dispatch first); found in none, no process can run it, and
 * it goes back to its queue. */
static int
op_deck_cancel(void *arg, struct drow *r)
{
	uint64_t started;
	int i;

	for (i = 0; i < pool_nworkers; i++)
		if (pool_workers[i].deck == r->job)
			return worker_deck_back(&pool_workers[i],
			    &started) ? 0 : -1;
	return 0;
}

static struct worker *
worker_find(uint32_t serial)
{
	int i;

	for (i = 0; i < pool_nworkers; i++)
		if (pool_workers[i].serial == serial)
			return &pool_workers[i];
	return NULL;
}

void
pipeline_worker_ready(uint32_t serial, struct deck *shm)
{
	struct worker *w;
	int n;

	if (pool_nworkers == pool_capworkers) {
		n = pool_capworkers > 0 ? pool_capworkers * 2 : 64;
		if ((w = reallocarray(pool_workers, n, sizeof(*w))) == NULL)
			fatal("pipeline");
		pool_workers = w;
		pool_capworkers = n;
	}
	w = &pool_workers[pool_nworkers++];
	memset(w, 0, sizeof(*w));
	w->serial = serial;
	w->state = WORKER_IDLE;
	w->shm = shm;
	if ((w->ev_timeout = evtimer_new(env->base, timeout_cb,
	    (void *)(uintptr_t)serial)) == NULL)
		fatalx("pipeline: evtimer_new");
	pipeline_arm();
}

void
pipeline_worker_retiring(uint32_t serial)
{
	struct worker *w = worker_find(serial);

	if (w == NULL)
		return;
	w->retiring = 1;
	if (w->state == WORKER_IDLE)
		w->state = WORKER_RETIRING;
	/* Its job on deck goes back, unless it has started. */
	if (w->deck != 0) {
		uint64_t job = w->deck, started;

		if (worker_deck_back(w, &started)) {
			dispatch_deck_done(pipeline_disp, job, 0,
			    time_sched_ms());
			pipeline_arm();
		}
	}
}

void
pipeline_worker_gone(uint32_t serial)
{
	struct worker *w = worker_find(serial);

	if (w == NULL)
		return;
	if (w->state == WORKER_BUSY && w->claim) {
		if (!w->reported)
			claim_done(w->job, NULL, pipeline_claim_release, NULL);
		w->claim = 0;
	} else if (w->state == WORKER_BUSY && w->req != NULL)
		pipeline_batch_gone(w);
	else if (w->state == WORKER_BUSY && !w->reported)
		/* A crash is a failed attempt. */
		pipeline_later_attempt(w->job, ATTEMPT_ERROR, w->started_us,
		    "deliver process died during the attempt");
	if (w->deck != 0) {
		uint64_t job = w->deck, started;
		int back;

		/* The process is gone: the word is final. */
		back = worker_deck_back(w, &started);
		dispatch_deck_done(pipeline_disp, job, !back, time_sched_ms());
		if (!back)
			pipeline_later_attempt(job, ATTEMPT_ERROR,
			    started * 1000, "deliver process died during the "
			    "attempt");
	}
	evtimer_del(w->ev_timeout);
	event_free(w->ev_timeout);
	*w = pool_workers[--pool_nworkers];
	pipeline_arm();
}

/* An attempt passed dispatch.attempt_timeout_ms: kill its process; the
 * attempt failed. */
static void
timeout_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct worker *w = worker_find((uint32_t)(uintptr_t)arg);

	if (w == NULL || w->state != WORKER_BUSY || w->reported)
		return;
	log_warnx("pipeline: job %" PRIu64 " passed %" PRIu64 " ms; killing "
	    "its deliver process", w->job,
	    env->conf->dispatch.attempt_timeout_ms);
	w->reported = 1;
	if (w->claim)
		claim_done(w->job, NULL, pipeline_claim_release, NULL);
	else {
		char why[64];

		snprintf(why, sizeof(why), "attempt_timeout:%" PRIu64,
		    env->conf->dispatch.attempt_timeout_ms);
		pool_attempt_ended(dispatch_job_row(pipeline_disp, w->job),
		    w->module, "timeout", ATTEMPT_TIMEOUT,
		    env->conf->dispatch.attempt_timeout_ms * 1000, why);
		pipeline_later_attempt(w->job, ATTEMPT_TIMEOUT, w->started_us,
		    "%s", why);
	}
	supervisor_kill(w->serial);
}

void
pool_attempt_ended(const struct drow *r, uint8_t module,
    const char *result, enum attempt_result res, uint64_t us,
    const char *detail)
{
	const char *mname = dispatch_module_name(module);
	char idx[16];

	metrics_add("ankusa_dispatch_deliveries_total", 1, "result", result,
	    "sink", mname, NULL);
	metrics_observe("ankusa_dispatch_attempt_duration_seconds",
	    (double)us / 1e6, "sink", mname, "result", result, NULL);
	/* The sink key's, only for a key the config names (the ring knows
	 * them): its series stay bounded by the config. */
	if (r == NULL || health_attempt(pipeline_hl, r->row.source, r->bound,
	    res, us, detail, time_wall_ms()) == -1)
		return;
	snprintf(idx, sizeof(idx), "%u", r->bound);
	metrics_add("ankusa_sink_attempts_total", 1, "source_id",
	    r->row.source, "sink", idx, "module", mname, "result", result,
	    NULL);
	metrics_observe("ankusa_sink_attempt_duration_seconds",
	    (double)us / 1e6, "source_id", r->row.source, "sink", idx,
	    "module", mname, NULL);
}

enum attempt_result
pool_result(enum job_result r, const char **name)
{
	switch (r) {
	case JOB_OK:
		*name = "ok";
		return ATTEMPT_OK;
	case JOB_PERMANENT:
		*name = "permanent";
		return ATTEMPT_PERMANENT;
	case JOB_PROXY_ERROR:
		*name = "proxy_error";
		return ATTEMPT_PROXY;
	default:
		*name = "error";
		return ATTEMPT_ERROR;
	}
}

int
pipeline_outcome(uint32_t serial, struct msg *m)
{
	struct worker *w = worker_find(serial);
	struct job_outcome o;
	enum attempt_result res;
	const char *result;
	struct poutcome po;
	uint64_t ran;

	if (w == NULL || w->state != WORKER_BUSY)
		return -1;
	if (m->type == MSG_BATCH_OUTCOME)
		return pipeline_batch_outcome(w, m);
	if (m->type == MSG_CLAIM_OUTCOME)
		return pipeline_claim_outcome(w, m);
	if (job_outcome_decode(m, &o) == -1 || w->req != NULL ||
	    w->job != m->id)
		return -1;
	evtimer_del(w->ev_timeout);
	if (w->reported) {
		/* Timed out already; the kill is on its way (and its job on
		 * deck is settled when it is reaped). */
		w->state = WORKER_RETIRING;
		return 0;
	}
	res = pool_result(o.result, &result);
	ran = time_mono_us() - w->started_us;
	pool_attempt_ended(dispatch_job_row(pipeline_disp, m->id), w->module,
	    result, res, ran, o.detail);
	memset(&po, 0, sizeof(po));
	po.job = m->id;
	po.res = res;
	po.retry_after_ms = o.retry_after_ms;
	po.detail = o.detail;
	po.code = o.http_status;
	po.attempt = 1;
	po.started_at = time_wall_ms() - ran / 1000;
	po.duration_ms = o.duration_ms;
	po.response = o.response;
	pipeline_store_outcome(&po);
	worker_deck_next(w);
	pipeline_arm();
	return 0;
}

/*
 * w's attempt ended and its outcome is in: its job on deck, if it still
 * has one (a breaker that opened took it back), has started in the
 * process or goes back to its queue.  A started one takes the slot, and
 * its deadline runs from when the process started it.
 */
static void
worker_deck_next(struct worker *w)
{
	uint64_t job = w->deck, started = 0, now, ran, tmo;

	w->state = w->retiring ? WORKER_RETIRING : WORKER_IDLE;
	if (job == 0)
		return;
	if (worker_deck_back(w, &started)) {
		dispatch_deck_done(pipeline_disp, job, 0, time_sched_ms());
		return;
	}
	w->deck = 0;
	dispatch_deck_done(pipeline_disp, job, 1, time_sched_ms());
	w->state = WORKER_BUSY;
	w->job = job;
	w->reported = 0;
	now = time_mono_ms();
	w->started_us = (started < now ? started : now) * 1000;
	ran = now > started ? now - started : 0;
	tmo = env->conf->dispatch.attempt_timeout_ms;
	pool_timer(w, ran < tmo ? tmo - ran : 0);
}

/* Take w's job on deck back: 1 taken back (it will not run; w holds no
 * deck now), 0 it has started in the process, at *started (mono ms).  The
 * caller tells the dispatch. */
static int
worker_deck_back(struct worker *w, uint64_t *started)
{
	if (!deck_cancel(w->shm, w->deck, started))
		return 0;
	w->deck = 0;
	return 1;
}

/* w's attempt deadline, ms from now. */
void
pool_timer(struct worker *w, uint64_t ms)
{
	struct timeval tv;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(w->ev_timeout, &tv);
}
