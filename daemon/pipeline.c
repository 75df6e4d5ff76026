/*
 * pipeline.c: the dispatch glue's loop turn; see pipeline.h (its parts:
 * pipeline_int.h).
 *
 * One loop turn: deliver processes' outcomes (and commits, and the wake-up
 * timer) only mark the turn; the turn itself runs from a zero timeout, after
 * libevent has read everything readable, so that every outcome of the turn
 * is settled in one store transaction: settles are written (committed
 * without a sync of their own: losing one in a crash only means the row is
 * tried again), the claims end, then the scheduler runs and the one timer
 * is armed for the time it asks for.  The settles are pipeline_store.c's,
 * the deliver processes pool.c's.
 *
 * It also answers control: stats, pressure, tick, breakers.
 */
#include "config.h"

#include <sys/queue.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "ankusad.h"
#include "batcher.h"
#include "claim.h"
#include "conf.h"
#include "dispatch.h"
#include "dlsource.h"
#include "job.h"
#include "jobfill.h"
#include "log.h"
#include "metrics.h"
#include "msg.h"
#include "pipeline.h"
#include "pipeline_int.h"
#include "store.h"
#include "supervisor.h"

/* An outcome the glue makes itself (timeouts, crashes, a hook gone). */
struct poutcome {
	uint64_t		 job;
	enum attempt_result	 res;
	char			 detail[JOB_DETAIL_MAX];
};

struct ptick {
	TAILQ_ENTRY(ptick)	 entry;
	void			(*done)(void *, uint64_t, int);
	void			*arg;
	uint64_t		 settled0;
	uint64_t		 deadline;	/* mono ms */
};

struct dispatch		*pipeline_disp;
uint64_t		 pipeline_scan_below;

static struct poutcome	*outcomes;
static size_t		 noutcomes, capoutcomes;
static struct event	*ev_turn;
static struct event	*ev_wake;
static struct event	*ev_ticks;
static int		 turn_armed;
static TAILQ_HEAD(, ptick) ticks = TAILQ_HEAD_INITIALIZER(ticks);

static void	turn_cb(evutil_socket_t, short, void *);
static void	wake_cb(evutil_socket_t, short, void *);
static void	ticks_cb(evutil_socket_t, short, void *);
static void	check_ticks(int);
static int	dls_claimed(const unsigned char *, void *);
static uint64_t	dls_queued(const char *, const char *, void *);
static void	dls_ended(void *);
static uint64_t	settled_count(void);

/* --- life --- */

void
pipeline_init(void)
{
	static const struct dlsource_ops dls_ops = {
		.claimed = dls_claimed,
		.queued = dls_queued,
		.ended = dls_ended,
	};
	struct dispatch_ops ops;

	memset(&ops, 0, sizeof(ops));
	ops.arg = NULL;
	pipeline_store_ops(&ops);
	pool_ops(&ops);
	pipeline_batch_ops(&ops);
	pipeline_claim_ops(&ops);
	pipeline_disp = dispatch_new(env->conf, &ops);
	if ((ev_turn = evtimer_new(env->base, turn_cb, NULL)) == NULL ||
	    (ev_wake = evtimer_new(env->base, wake_cb, NULL)) == NULL ||
	    (ev_ticks = evtimer_new(env->base, ticks_cb, NULL)) == NULL)
		fatalx("pipeline: evtimer_new");
	pipeline_batch_init();
	dlsource_init(&dls_ops);
	pipeline_arm();	/* rows due from before a restart */
}

static int
dls_claimed(const unsigned char *key, void *arg)
{
	return dispatch_is_claimed(pipeline_disp, key);
}

static uint64_t
dls_queued(const char *source, const char *reason, void *arg)
{
	uint64_t n = dispatch_dead_letter_queued(pipeline_disp, source, reason,
	    time_wall_ms());

	if (n > 0)
		pipeline_arm();	/* their settles are written at the turn */
	return n;
}

/* A dead_letter_source call ended: the lanes it released have new heads,
 * due at their receive time, behind the tenants' cursors; and its end may be
 * what a tick waits for. */
static void
dls_ended(void *arg)
{
	dispatch_hint(pipeline_disp, 0);
	pipeline_arm();
}

void
pipeline_arm(void)
{
	struct timeval tv = { 0, 0 };

	if (turn_armed || ev_turn == NULL)
		return;
	turn_armed = 1;
	evtimer_add(ev_turn, &tv);
}

void
pipeline_wake(uint64_t min_due)
{
	dispatch_hint(pipeline_disp, min_due);
	pipeline_arm();
}

void
pipeline_reconfigure(void)
{
	dispatch_reconfigure(pipeline_disp, env->conf);
	pipeline_arm();
}

void
pipeline_stop(void)
{
	dispatch_stop(pipeline_disp);
	dlsource_stop();
	evtimer_del(ev_wake);
}

int
pipeline_busy(void)
{
	struct dispatch_stats st;

	dispatch_get_stats(pipeline_disp, &st);
	return st.running > 0 || pipeline_store_pending() > 0 || noutcomes > 0;
}

/*
 * The writer holds the loop for a batch's puts and its sync, about a
 * millisecond under load, and a deliver process that answered meanwhile
 * would wait for all of it before the loop reads its outcome and gives it
 * its next job.  So between the batch's commit and its sync the writer
 * calls this: the busy deliver processes' outcomes are read now, the turn
 * runs (settles, next jobs) and its jobs are written at once, to run
 * while the disk syncs; the sync makes the turn's settles durable too.
 * The batch's own rows (seq0 and up) are passed over by this turn's scan:
 * a job starts only on a synced row.  The writer's wake after the sync
 * (pipeline_wake) sends the scan back to them.
 */
void
pipeline_step(uint64_t seq0)
{
	uint32_t serials[PIPELINE_MAX_WORKERS];
	int i, n = 0;

	/* Serials first: a channel that fails takes its worker out of
	 * pool_workers[] while we poll. */
	for (i = 0; i < pool_nworkers; i++)
		if (pool_workers[i].state == WORKER_BUSY &&
		    !pool_workers[i].reported)
			serials[n++] = pool_workers[i].serial;
	for (i = 0; i < n; i++)
		supervisor_poll(serials[i]);
	if (!turn_armed)
		return;
	evtimer_del(ev_turn);
	pipeline_scan_below = seq0;
	turn_cb(-1, EV_TIMEOUT, NULL);
	pipeline_scan_below = 0;
	supervisor_flush_now(KIND_DELIVER);
}

static void
wake_cb(evutil_socket_t fd, short ev, void *arg)
{
	pipeline_arm();
}

static void
turn_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct timeval tv;
	uint64_t now, wake;
	size_t i;

	turn_armed = 0;
	/* Outcomes the glue made itself first: they may add settles. */
	for (i = 0; i < noutcomes; i++)
		if (dispatch_job_row(pipeline_disp, outcomes[i].job) != NULL)
			dispatch_outcome(pipeline_disp, outcomes[i].job,
			    outcomes[i].res, 0, outcomes[i].detail,
			    time_wall_ms());
	noutcomes = 0;
	pipeline_store_flush();
	now = time_wall_ms();
	wake = dispatch_run(pipeline_disp, now);
	pipeline_claim_pump();
	pipeline_batch_pump();
	/* The run may have parked rows or met orphans: settle them now. */
	if (pipeline_store_pending() > 0 || noutcomes > 0) {
		pipeline_arm();
	} else if (wake != UINT64_MAX) {
		uint64_t d = wake > now ? wake - now : 0;

		if (d == 0)
			pipeline_arm();
		else {
			tv.tv_sec = d / 1000;
			tv.tv_usec = (d % 1000) * 1000;
			evtimer_add(ev_wake, &tv);
		}
	} else
		evtimer_del(ev_wake);
	check_ticks(0);
}

void
pipeline_later(uint64_t job, enum attempt_result res, const char *fmt, ...)
{
	va_list ap;

	if (noutcomes == capoutcomes) {
		capoutcomes = capoutcomes ? capoutcomes * 2 : 16;
		if ((outcomes = reallocarray(outcomes, capoutcomes,
		    sizeof(*outcomes))) == NULL)
			fatal("pipeline");
	}
	outcomes[noutcomes].job = job;
	outcomes[noutcomes].res = res;
	va_start(ap, fmt);
	vsnprintf(outcomes[noutcomes].detail,
	    sizeof(outcomes[noutcomes].detail), fmt, ap);
	va_end(ap);
	noutcomes++;
	pipeline_arm();
}

/* --- functions of the control socket --- */

void
pipeline_stats(struct dispatch_stats *st, int *idle, int *busy)
{
	int i;

	dispatch_get_stats(pipeline_disp, st);
	*idle = *busy = 0;
	for (i = 0; i < pool_nworkers; i++) {
		if (pool_workers[i].state == WORKER_IDLE)
			(*idle)++;
		else if (pool_workers[i].state == WORKER_BUSY)
			(*busy)++;
	}
}

int
pipeline_pressure(uint64_t *lag_ms, int *window_full)
{
	struct dispatch_stats st;
	uint64_t due, now = time_wall_ms();
	int rc;

	if ((rc = store_oldest_due(env->store, &due)) == -1)
		return -1;
	*lag_ms = rc == 1 && due < now ? now - due : 0;
	dispatch_get_stats(pipeline_disp, &st);
	*window_full = st.window_full;
	return 0;
}

/* Nothing claimed, running or due (a row waiting out a backoff is not
 * due), and no dead_letter_source moving rows. */
static int
settled_now(void)
{
	struct dispatch_stats st;
	uint64_t due;
	int rc;

	dispatch_get_stats(pipeline_disp, &st);
	if (st.claimed > 0 || st.running > 0 || pipeline_store_pending() > 0 ||
	    noutcomes > 0 || dlsource_busy())
		return 0;
	rc = store_oldest_due(env->store, &due);
	return rc == 0 || (rc == 1 && due > time_wall_ms());
}

/* The rows settled since the start: delivered or dead-lettered by
 * dispatch, and dead-lettered by dead_letter_source. */
static uint64_t
settled_count(void)
{
	struct dispatch_stats st;

	dispatch_get_stats(pipeline_disp, &st);
	return st.settled + dlsource_moved();
}

static void
check_ticks(int timer)
{
	struct ptick *t, *next;
	uint64_t now = time_mono_ms();
	int settled = -1;

	for (t = TAILQ_FIRST(&ticks); t != NULL; t = next) {
		next = TAILQ_NEXT(t, entry);
		if (settled == -1)
			settled = settled_now();
		if (!settled && now < t->deadline)
			continue;
		TAILQ_REMOVE(&ticks, t, entry);
		t->done(t->arg, settled_count() - t->settled0, !settled);
		free(t);
	}
	if (!TAILQ_EMPTY(&ticks)) {
		struct timeval tv = { 0, 100000 };

		/* Deadlines are checked at least every 100 ms. */
		evtimer_add(ev_ticks, &tv);
	}
}

static void
ticks_cb(evutil_socket_t fd, short ev, void *arg)
{
	check_ticks(1);
}

void
pipeline_tick(uint64_t timeout_ms, void (*done)(void *, uint64_t, int),
    void *arg)
{
	struct ptick *t;

	if ((t = calloc(1, sizeof(*t))) == NULL)
		fatal("pipeline");
	t->done = done;
	t->arg = arg;
	t->settled0 = settled_count();
	t->deadline = time_mono_ms() + timeout_ms;
	TAILQ_INSERT_TAIL(&ticks, t, entry);
	pipeline_arm();
}

void
pipeline_tick_detach(void *arg)
{
	struct ptick *t, *next;

	for (t = TAILQ_FIRST(&ticks); t != NULL; t = next) {
		next = TAILQ_NEXT(t, entry);
		if (t->arg == arg) {
			TAILQ_REMOVE(&ticks, t, entry);
			free(t);
		}
	}
}

static void
breaker_json(const char *tenant, const char *source, uint32_t sink,
    uint8_t module, const struct breaker *b, void *arg)
{
	json_t *a = arg;
	uint64_t now = time_wall_ms();

	json_array_append_new(a, json_pack("{s:s, s:s, s:i, s:s, s:s, s:i, "
	    "s:i, s:I}", "tenant", tenant, "source", source, "sink", (int)sink,
	    "module", dispatch_module_name(module), "state",
	    breaker_state_name(b->state), "failures", (int)b->fails, "opens",
	    (int)b->opens, "reopen_in_ms", (json_int_t)(b->state ==
	    BREAKER_OPEN && b->open_until > now ? b->open_until - now : 0)));
}

json_t *
pipeline_breakers(void)
{
	json_t *a = json_array();

	dispatch_breakers(pipeline_disp, breaker_json, a);
	return a;
}

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
	uint64_t bytes, now = time_wall_ms();

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
	enum attempt_result res;
	const char *name;
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
		metrics_add("ankusa_dispatch_deliveries_total", 1, "result",
		    name, "sink", dispatch_module_name(w->module), NULL);
		if (dispatch_job_row(pipeline_disp, o.r[i].id) != NULL)
			dispatch_outcome(pipeline_disp, o.r[i].id, res,
			    o.r[i].retry_after_ms, o.r[i].detail,
			    time_wall_ms());
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
			pipeline_later(w->req->entries[i].job,
			    ATTEMPT_ERROR, "deliver process died during "
			    "the request");
	batcher_done(batcher, w->req);
	w->req = NULL;
}

static void
batch_expired(struct batcher_entry *e, void *arg)
{
	pipeline_later(e->job, ATTEMPT_TIMEOUT, "attempt_timeout:%" PRIu64,
	    env->conf->dispatch.attempt_timeout_ms);
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
	uint64_t now = time_wall_ms(), next, dl;
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

static int	op_claim_gate(void *, struct drow *);

void
pipeline_claim_ops(struct dispatch_ops *ops)
{
	ops->claim_gate = op_claim_gate;
}

static int
op_claim_gate(void *arg, struct drow *r)
{
	return claim_gate(r);
}

void
pipeline_claim_release(const unsigned char *key, void *arg)
{
	dispatch_claim_release(pipeline_disp, key);
	pipeline_arm();
}

int
pipeline_claim_outcome(struct worker *w, struct msg *m)
{
	struct claim_outcome co;

	if (!w->claim || w->job != m->id ||
	    claim_outcome_decode(m, &co) == -1)
		return -1;
	evtimer_del(w->ev_timeout);
	w->claim = 0;
	w->state = w->retiring ? WORKER_RETIRING : WORKER_IDLE;
	if (!w->reported)
		claim_done(m->id, &co, pipeline_claim_release, NULL);
	claim_outcome_free(&co);
	pipeline_arm();
	return 0;
}

/* Check-in jobs to idle deliver processes, one pack each. */
void
pipeline_claim_pump(void)
{
	static uint64_t next_id = 1;
	struct worker *w;
	struct msg m;
	uint64_t id;
	int rc;

	for (;;) {
		if ((w = pool_idle()) == NULL)
			return;
		id = next_id++;
		if ((rc = claim_next_job(&m, id)) == 0)
			return;
		if (rc == -1) {
			claim_done(id, NULL, pipeline_claim_release, NULL);
			continue;
		}
		if (supervisor_send(w->serial, &m) == -1) {
			msg_free(&m);
			w->state = WORKER_RETIRING;
			claim_done(id, NULL, pipeline_claim_release, NULL);
			continue;
		}
		msg_free(&m);
		w->state = WORKER_BUSY;
		w->claim = 1;
		w->job = id;
		w->reported = 0;
		pool_timer(w, env->conf->dispatch.attempt_timeout_ms);
	}
}
