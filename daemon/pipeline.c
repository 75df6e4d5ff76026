/*
 * pipeline.c: the dispatch glue; see pipeline.h.
 *
 * One loop turn: deliver processes' outcomes (and commits, and the wake-up
 * timer) only mark the turn; the turn itself runs from a zero timeout, after
 * libevent has read everything readable, so that every outcome of the turn
 * is settled in one store transaction: settles are written (committed
 * without a sync of their own: losing one in a crash only means the row is
 * tried again), the claims end, then the scheduler runs and the one timer
 * is armed for the time it asks for.
 *
 * Fatal: nothing; a store error fails the settles of the turn (their rows
 * stay as they were and are tried again) and is logged.
 */
#include "config.h"

#include <sys/queue.h>

#include <errno.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "ankusad.h"
#include "batcher.h"
#include "claim.h"
#include "clock.h"
#include "conf.h"
#include "deck.h"
#include "dispatch.h"
#include "dlsource.h"
#include "ids.h"
#include "job.h"
#include "jobfill.h"
#include "log.h"
#include "metrics.h"
#include "msg.h"
#include "pipeline.h"
#include "store.h"
#include "supervisor.h"

#define PIPELINE_MAX_WORKERS	512
#define PIPELINE_SWEEP_MAX	256	/* lanes per tenant visit */

enum worker_state {
	WORKER_IDLE = 1,
	WORKER_BUSY,		/* a job runs */
	WORKER_RETIRING,	/* no new jobs; exits after the one in hand */
};

struct worker {
	uint32_t	 serial;
	enum worker_state state;
	int		 retiring;
	uint64_t	 job;		/* busy: its job */
	int		 reported;	/* busy: the outcome is in (timeout) */
	uint8_t		 module;	/* busy: its sink's module */
	struct batcher_req *req;	/* busy with a batch: its request */
	int		 claim;		/* busy with a check-in job */
	uint64_t	 deck;		/* busy: the job on deck behind its
					 * job, or 0 */
	struct deck	*shm;		/* its on-deck page, or NULL */
	struct event	*ev_timeout;
};

/* A settle, copied out of the scheduler's call. */
struct psettle {
	struct dsettle		 s;
	struct store_row	 row;
	char			 reason[STORE_ERROR_MAX + 1];
	char			 last_error[STORE_ERROR_MAX + 1];
	char			 source[STORE_NAME_MAX + 1];
};

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

static struct dispatch	*disp;
static struct worker	 workers[PIPELINE_MAX_WORKERS];
static int		 nworkers;
static struct psettle	*settles;
static size_t		 nsettles, capsettles;
static struct poutcome	*outcomes;
static size_t		 noutcomes, capoutcomes;
static unsigned char	(*drops)[STORE_KEY_MAX + 2];
static size_t		 ndrops, capdrops;
static struct event	*ev_turn;
static struct event	*ev_wake;
static struct event	*ev_ticks;
static struct event	*ev_batch;	/* lingers and entry deadlines */
static struct batcher	*batcher;
static int		 turn_armed;
static uint64_t		 claim_below;	/* pipeline_step: seqs not synced */
static TAILQ_HEAD(, ptick) ticks = TAILQ_HEAD_INITIALIZER(ticks);

static void	turn_arm(void);
static void	turn_cb(evutil_socket_t, short, void *);
static void	wake_cb(evutil_socket_t, short, void *);
static void	ticks_cb(evutil_socket_t, short, void *);
static void	timeout_cb(evutil_socket_t, short, void *);
static void	flush_settles(void);
static void	check_ticks(int);
static struct worker *worker_find(uint32_t);
static void	outcome_later(uint64_t, enum attempt_result, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
static void	worker_timer(struct worker *, uint64_t);
static int	worker_deck_back(struct worker *, uint64_t *);
static void	worker_deck_next(struct worker *);
static void	batch_pump(void);
static void	claim_pump(void);
static void	claim_release(const unsigned char *, void *);
static void	batch_cb(evutil_socket_t, short, void *);
static int	dls_claimed(const unsigned char *, void *);
static uint64_t	dls_queued(const char *, const char *, void *);
static void	dls_ended(void *);
static uint64_t	settled_count(void);

/* --- dispatch_ops over the store --- */

static int
op_due_tenants(void *arg, int (*cb)(const char *, uint64_t, void *),
    void *cbarg)
{
	return store_due_tenants(env->store, cb, cbarg);
}

struct scan_ctx {
	int	(*cb)(const unsigned char *, const struct store_row *, void *);
	int	(*want)(const unsigned char *, void *);
	void	*arg;
};

static int
scan_keys_cb(const unsigned char *duekey, size_t len, uint64_t due,
    const unsigned char *rowkey, const struct store_row *row, void *arg)
{
	struct scan_ctx *sc = arg;

	if (row == NULL && len <= STORE_KEY_MAX) {
		/* A due key without its row: drop it with the settles. */
		if (ndrops == capdrops) {
			capdrops = capdrops ? capdrops * 2 : 16;
			if ((drops = reallocarray(drops, capdrops,
			    sizeof(*drops))) == NULL)
				fatal("pipeline");
		}
		drops[ndrops][0] = len >> 8;
		drops[ndrops][1] = len & 0xff;
		memcpy(drops[ndrops] + 2, duekey, len);
		ndrops++;
		turn_arm();
	}
	return sc->cb(rowkey, row, sc->arg);
}

static int
scan_want_cb(const unsigned char *rowkey, void *arg)
{
	struct scan_ctx *sc = arg;

	if (claim_below != 0 && store_rowkey_seq(rowkey) >= claim_below)
		return 0;	/* committed, not yet synced: pipeline_step */
	return sc->want(rowkey, sc->arg);
}

static int
op_due_scan(void *arg, const char *tenant, uint64_t now, uint64_t after_due,
    const unsigned char *after_key, int (*want)(const unsigned char *, void *),
    int (*cb)(const unsigned char *, const struct store_row *, void *),
    void *cbarg)
{
	struct scan_ctx sc = { cb, want, cbarg };

	return store_due_scan_from(env->store, tenant, now, after_due,
	    after_key, want != NULL ? scan_want_cb : NULL, scan_keys_cb, &sc);
}

static int
op_due_next(void *arg, const char *tenant, uint64_t after, uint64_t *due)
{
	return store_due_next(env->store, tenant, after, due);
}

static uint64_t
op_lane_members(void *arg)
{
	return store_lane_members(env->store);
}

static int
op_marked_tenants(void *arg, int (*cb)(const char *, void *), void *cbarg)
{
	return store_marked_tenants(env->store, cb, cbarg);
}

static int
op_lane_sweep(void *arg, const char *tenant, uint64_t now)
{
	struct store_batch *sb;
	int n;

	if ((sb = store_batch_begin(env->store)) == NULL)
		return -1;
	if ((n = store_batch_lane_sweep(sb, tenant, now,
	    PIPELINE_SWEEP_MAX)) == -1) {
		store_batch_abort(sb);
		return -1;
	}
	/* No sync of its own: a promotion lost in a crash is made again by
	 * the next sweep. */
	if (store_batch_commit_lazy(sb) == -1) {
		log_warnx("pipeline: lane sweep of %s: %s", tenant,
		    store_strerror(env->store));
		return -1;
	}
	if (n > 0)
		log_debug("pipeline: lane sweep of %s promoted %d", tenant, n);
	return n;
}

static double
op_random(void *arg)
{
	uint64_t r;

	ids_random(&r, sizeof(r));
	return (double)(r >> 11) / (double)(1ULL << 53);
}

/*
 * The sink r binds to as the config is now (dispatch.c binds every row
 * that has not started again after a reload; a batcher's entries waited
 * there across it): so a sink's options are never read through another
 * type's branch.  NULL with the outcome r must have instead in *res and
 * detail (sink_gone, source_gone: dead-lettered).
 */
static const struct sink_conf *
bound_sink(struct drow *r, enum attempt_result *res, char *detail,
    size_t len)
{
	const struct source_conf *src;

	if (dispatch_bind(disp, r, detail, len) == -1 ||
	    (src = conf_source(env->conf, r->row.source)) == NULL) {
		*res = ATTEMPT_UNBOUND;
		return NULL;
	}
	return &src->sinks[r->bound];
}

/*
 * The job of r as a MSG_DELIVER_JOB in m: 0, or -1 with the outcome the
 * attempt must have instead in *res and detail (the hook is gone, the
 * store erred, the row's sink is gone).
 */
static int
job_msg(struct drow *r, struct msg *m, enum attempt_result *res,
    char *detail, size_t len)
{
	const struct sink_conf *sk;
	struct store_hook_rec rec;
	struct job j;
	struct jobfill_ids ids;
	int rc;

	if ((sk = bound_sink(r, res, detail, len)) == NULL)
		return -1;
	*res = ATTEMPT_ERROR;
	memset(&rec, 0, sizeof(rec));
	if ((rc = store_hook_get(env->store, r->seq, &rec)) != 0) {
		if (rc == 1) {
			*res = ATTEMPT_PERMANENT;
			snprintf(detail, len, "hook %" PRIu64 " is gone",
			    r->seq);
		} else
			snprintf(detail, len, "store: %s",
			    store_strerror(env->store));
		return -1;
	}
	memset(&j, 0, sizeof(j));
	j.id = r->job;
	jobfill_job(&j, &ids, r, &rec);
	j.sink_index = r->bound;
	j.sink = *sk;
	rc = job_encode(m, &j);
	store_hook_rec_free(&rec);
	if (rc == -1) {
		snprintf(detail, len, "job: %s", strerror(errno));
		return -1;
	}
	return 0;
}

/* Build the job of r and hand it to an idle deliver process. */
static int
op_start(void *arg, struct drow *r)
{
	struct worker *w = NULL;
	enum attempt_result res;
	struct msg m;
	char detail[JOB_DETAIL_MAX];
	int i;

	for (i = 0; i < nworkers; i++)
		if (workers[i].state == WORKER_IDLE) {
			w = &workers[i];
			break;
		}
	if (w == NULL)
		return -1;
	if (job_msg(r, &m, &res, detail, sizeof(detail)) == -1) {
		outcome_later(r->job, res, "%s", detail);
		return 0;
	}
	if (supervisor_send(w->serial, &m) == -1) {
		msg_free(&m);
		w->state = WORKER_RETIRING;	/* gone; reaped soon */
		outcome_later(r->job, ATTEMPT_ERROR, "deliver process gone");
		return 0;
	}
	msg_free(&m);
	w->state = WORKER_BUSY;
	w->job = r->job;
	w->module = r->row.module;
	w->reported = 0;
	worker_timer(w, env->conf->dispatch.attempt_timeout_ms);
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

	for (i = 0; i < nworkers; i++)
		if (workers[i].state == WORKER_BUSY &&
		    workers[i].job == ahead->job) {
			w = &workers[i];
			break;
		}
	if (w == NULL || w->shm == NULL || w->deck != 0 || w->reported ||
	    w->retiring || w->req != NULL || w->claim)
		return -1;
	/* A row that cannot be sent fails when it starts, not here. */
	if (job_msg(r, &m, &res, detail, sizeof(detail)) == -1)
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

	for (i = 0; i < nworkers; i++)
		if (workers[i].deck == r->job)
			return worker_deck_back(&workers[i], &started) ? 0 : -1;
	return 0;
}

static void
op_settle(void *arg, const struct dsettle *s)
{
	struct psettle *p;

	if (nsettles == capsettles) {
		capsettles = capsettles ? capsettles * 2 : 64;
		if ((settles = reallocarray(settles, capsettles,
		    sizeof(*settles))) == NULL)
			fatal("pipeline");
	}
	p = &settles[nsettles++];
	memset(p, 0, sizeof(*p));
	p->s = *s;
	if (s->row != NULL) {
		p->row = *s->row;
		p->s.row = NULL;	/* the copy's address moves on realloc */
	}
	if (s->reason != NULL)
		snprintf(p->reason, sizeof(p->reason), "%s", s->reason);
	if (s->last_error != NULL)
		snprintf(p->last_error, sizeof(p->last_error), "%s",
		    s->last_error);
	if (s->source != NULL)
		snprintf(p->source, sizeof(p->source), "%s", s->source);
	p->s.reason = p->s.last_error = p->s.source = NULL;
	turn_arm();
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

	if ((sk = bound_sink(r, &res, why, sizeof(why))) == NULL) {
		outcome_later(r->job, res, "%s", why);
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
		    r->row.source, r->bound, sk->u.pubsub.project, sk->u.pubsub.topic,
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
	turn_arm();
	return 0;
}

/* A breaker that opened takes its key's waiting entries back. */
static void
op_batch_cancel(void *arg, const uint64_t *jobs, size_t n, char *taken)
{
	(void)batcher_remove_jobs(batcher, jobs, n, taken);
}

static int
op_claim_gate(void *arg, struct drow *r)
{
	return claim_gate(r);
}

/* --- life --- */

void
pipeline_init(void)
{
	static const struct dlsource_ops dls_ops = {
		.claimed = dls_claimed,
		.queued = dls_queued,
		.ended = dls_ended,
	};
	struct dispatch_ops ops = {
		.arg = NULL,
		.due_tenants = op_due_tenants,
		.due_scan = op_due_scan,
		.due_next = op_due_next,
		.lane_members = op_lane_members,
		.marked_tenants = op_marked_tenants,
		.lane_sweep = op_lane_sweep,
		.start = op_start,
		.deck = op_deck,
		.deck_cancel = op_deck_cancel,
		.settle = op_settle,
		.random = op_random,
		.batch_add = op_batch_add,
		.batch_cancel = op_batch_cancel,
		.claim_gate = op_claim_gate,
	};

	disp = dispatch_new(env->conf, &ops);
	if ((ev_turn = evtimer_new(env->base, turn_cb, NULL)) == NULL ||
	    (ev_wake = evtimer_new(env->base, wake_cb, NULL)) == NULL ||
	    (ev_ticks = evtimer_new(env->base, ticks_cb, NULL)) == NULL ||
	    (ev_batch = evtimer_new(env->base, batch_cb, NULL)) == NULL)
		fatalx("pipeline: evtimer_new");
	batcher = batcher_new();
	dlsource_init(&dls_ops);
	turn_arm();	/* rows due from before a restart */
}

static int
dls_claimed(const unsigned char *key, void *arg)
{
	return dispatch_is_claimed(disp, key);
}

static uint64_t
dls_queued(const char *source, const char *reason, void *arg)
{
	uint64_t n = dispatch_dead_letter_queued(disp, source, reason,
	    time_wall_ms());

	if (n > 0)
		turn_arm();	/* their settles are written at the turn */
	return n;
}

/* A dead_letter_source call ended: the lanes it released have new heads,
 * due at their receive time, behind the tenants' cursors; and its end may be
 * what a tick waits for. */
static void
dls_ended(void *arg)
{
	dispatch_hint(disp, 0);
	turn_arm();
}

static void
turn_arm(void)
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
	dispatch_hint(disp, min_due);
	turn_arm();
}

void
pipeline_reconfigure(void)
{
	dispatch_reconfigure(disp, env->conf);
	turn_arm();
}

void
pipeline_stop(void)
{
	dispatch_stop(disp);
	dlsource_stop();
	evtimer_del(ev_wake);
}

int
pipeline_busy(void)
{
	struct dispatch_stats st;

	dispatch_get_stats(disp, &st);
	return st.running > 0 || nsettles > 0 || noutcomes > 0;
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
	 * workers[] while we poll. */
	for (i = 0; i < nworkers; i++)
		if (workers[i].state == WORKER_BUSY && !workers[i].reported)
			serials[n++] = workers[i].serial;
	for (i = 0; i < n; i++)
		supervisor_poll(serials[i]);
	if (!turn_armed)
		return;
	evtimer_del(ev_turn);
	claim_below = seq0;
	turn_cb(-1, EV_TIMEOUT, NULL);
	claim_below = 0;
	supervisor_flush_now(KIND_DELIVER);
}

static void
wake_cb(evutil_socket_t fd, short ev, void *arg)
{
	turn_arm();
}

/* Write the turn's settles in one transaction, then end their claims. */
static void
flush_settles(void)
{
	struct store_batch *sb;
	struct psettle *p;
	size_t i, n = nsettles;
	int ok = 1, rc = 0;

	if (nsettles == 0 && ndrops == 0)
		return;
	if ((sb = store_batch_begin(env->store)) == NULL)
		ok = 0;
	for (i = 0; ok && i < ndrops; i++)
		if (store_batch_due_drop(sb, drops[i] + 2,
		    (drops[i][0] << 8) | drops[i][1]) == -1)
			ok = 0;
	for (i = 0; ok && i < n; i++) {
		p = &settles[i];
		switch (p->s.kind) {
		case SETTLE_DELIVERED:
			rc = store_batch_row_delivered(sb, p->s.key, &p->row);
			break;
		case SETTLE_RESCHEDULE:
			rc = store_batch_row_reschedule(sb, p->s.key, &p->row);
			break;
		case SETTLE_DEAD:
			rc = store_batch_row_dead(sb, p->s.key, p->s.dead_at,
			    p->reason, p->last_error, p->s.attempts);
			break;
		}
		if (rc == -1)
			ok = 0;
	}
	if (!ok) {
		if (sb != NULL)
			store_batch_abort(sb);
	} else if (store_batch_commit_lazy(sb) == -1)
		ok = 0;
	if (!ok) {
		log_warnx("pipeline: settling %zu rows failed: %s; they will "
		    "be tried again", n, store_strerror(env->store));
		ankusad_store_check();
	}
	ndrops = 0;
	for (i = 0; i < n; i++) {
		p = &settles[i];
		if (ok && p->s.kind == SETTLE_DEAD)
			metrics_add("ankusa_dispatch_dead_lettered_total", 1,
			    "source_id", p->source, "sink",
			    dispatch_module_name(p->s.module), NULL);
		dispatch_settled(disp, p->s.key, ok);
	}
	nsettles = 0;
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
		if (dispatch_job_row(disp, outcomes[i].job) != NULL)
			dispatch_outcome(disp, outcomes[i].job,
			    outcomes[i].res, 0, outcomes[i].detail,
			    time_wall_ms());
	noutcomes = 0;
	flush_settles();
	now = time_wall_ms();
	wake = dispatch_run(disp, now);
	claim_pump();
	batch_pump();
	/* The run may have parked rows or met orphans: settle them now. */
	if (nsettles > 0 || noutcomes > 0) {
		turn_arm();
	} else if (wake != UINT64_MAX) {
		uint64_t d = wake > now ? wake - now : 0;

		if (d == 0)
			turn_arm();
		else {
			tv.tv_sec = d / 1000;
			tv.tv_usec = (d % 1000) * 1000;
			evtimer_add(ev_wake, &tv);
		}
	} else
		evtimer_del(ev_wake);
	check_ticks(0);
}

static void
outcome_later(uint64_t job, enum attempt_result res, const char *fmt, ...)
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
	turn_arm();
}

/* --- the deliver pool --- */

static struct worker *
worker_find(uint32_t serial)
{
	int i;

	for (i = 0; i < nworkers; i++)
		if (workers[i].serial == serial)
			return &workers[i];
	return NULL;
}

void
pipeline_worker_ready(uint32_t serial, struct deck *shm)
{
	struct worker *w;

	if (nworkers == PIPELINE_MAX_WORKERS) {
		log_warnx("pipeline: too many deliver processes");
		return;
	}
	w = &workers[nworkers++];
	memset(w, 0, sizeof(*w));
	w->serial = serial;
	w->state = WORKER_IDLE;
	w->shm = shm;
	if ((w->ev_timeout = evtimer_new(env->base, timeout_cb,
	    (void *)(uintptr_t)serial)) == NULL)
		fatalx("pipeline: evtimer_new");
	turn_arm();
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
			dispatch_deck_done(disp, job, 0, time_wall_ms());
			turn_arm();
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
			claim_done(w->job, NULL, claim_release, NULL);
		w->claim = 0;
	} else if (w->state == WORKER_BUSY && w->req != NULL) {
		uint32_t i;

		/* A crash fails every attempt of its request. */
		for (i = 0; i < w->req->n; i++)
			if (!w->req->entries[i].done)
				outcome_later(w->req->entries[i].job,
				    ATTEMPT_ERROR, "deliver process died during "
				    "the request");
		batcher_done(batcher, w->req);
		w->req = NULL;
	} else if (w->state == WORKER_BUSY && !w->reported)
		/* A crash is a failed attempt. */
		outcome_later(w->job, ATTEMPT_ERROR,
		    "deliver process died during the attempt");
	if (w->deck != 0) {
		uint64_t job = w->deck, started;
		int back;

		/* The process is gone: the word is final. */
		back = worker_deck_back(w, &started);
		dispatch_deck_done(disp, job, !back, time_wall_ms());
		if (!back)
			outcome_later(job, ATTEMPT_ERROR,
			    "deliver process died during the attempt");
	}
	evtimer_del(w->ev_timeout);
	event_free(w->ev_timeout);
	*w = workers[--nworkers];
	turn_arm();
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
		claim_done(w->job, NULL, claim_release, NULL);
	else
		outcome_later(w->job, ATTEMPT_TIMEOUT,
		    "attempt_timeout:%" PRIu64,
		    env->conf->dispatch.attempt_timeout_ms);
	supervisor_kill(w->serial);
}

static enum attempt_result
attempt_result(enum job_result r, const char **name)
{
	switch (r) {
	case JOB_OK:
		*name = "ok";
		return ATTEMPT_OK;
	case JOB_PERMANENT:
		*name = "permanent";
		return ATTEMPT_PERMANENT;
	default:
		*name = "error";
		return ATTEMPT_ERROR;
	}
}

/* MSG_BATCH_OUTCOME: each entry settles its own row on its own result;
 * entries that timed out meanwhile were settled already. */
static int
batch_outcome(struct worker *w, struct msg *m)
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
		res = attempt_result(o.r[i].result, &name);
		metrics_add("ankusa_dispatch_deliveries_total", 1, "result",
		    name, "sink", dispatch_module_name(w->module), NULL);
		if (dispatch_job_row(disp, o.r[i].id) != NULL)
			dispatch_outcome(disp, o.r[i].id, res,
			    o.r[i].retry_after_ms, o.r[i].detail,
			    time_wall_ms());
	}
	/* An entry the process did not answer failed. */
	for (k = 0; k < req->n; k++)
		if (!req->entries[k].done) {
			req->entries[k].done = 1;
			outcome_later(req->entries[k].job, ATTEMPT_ERROR,
			    "no result for this entry");
		}
	batch_outcome_free(&o);
	batcher_done(batcher, req);
	w->req = NULL;
	w->state = w->retiring ? WORKER_RETIRING : WORKER_IDLE;
	turn_arm();
	return 0;
}

int
pipeline_outcome(uint32_t serial, struct msg *m)
{
	struct worker *w = worker_find(serial);
	struct job_outcome o;
	enum attempt_result res;
	const char *result;

	if (w == NULL || w->state != WORKER_BUSY)
		return -1;
	if (m->type == MSG_BATCH_OUTCOME)
		return batch_outcome(w, m);
	if (m->type == MSG_CLAIM_OUTCOME) {
		struct claim_outcome co;

		if (!w->claim || w->job != m->id ||
		    claim_outcome_decode(m, &co) == -1)
			return -1;
		evtimer_del(w->ev_timeout);
		w->claim = 0;
		w->state = w->retiring ? WORKER_RETIRING : WORKER_IDLE;
		if (!w->reported)
			claim_done(m->id, &co, claim_release, NULL);
		claim_outcome_free(&co);
		turn_arm();
		return 0;
	}
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
	res = attempt_result(o.result, &result);
	metrics_add("ankusa_dispatch_deliveries_total", 1, "result", result,
	    "sink", dispatch_module_name(w->module), NULL);
	dispatch_outcome(disp, m->id, res, o.retry_after_ms, o.detail,
	    time_wall_ms());
	worker_deck_next(w);
	turn_arm();
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
		dispatch_deck_done(disp, job, 0, time_wall_ms());
		return;
	}
	w->deck = 0;
	dispatch_deck_done(disp, job, 1, time_wall_ms());
	w->state = WORKER_BUSY;
	w->job = job;
	w->reported = 0;
	now = time_mono_ms();
	ran = now > started ? now - started : 0;
	tmo = env->conf->dispatch.attempt_timeout_ms;
	worker_timer(w, ran < tmo ? tmo - ran : 0);
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
static void
worker_timer(struct worker *w, uint64_t ms)
{
	struct timeval tv;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(w->ev_timeout, &tv);
}

/* --- functions of the control socket --- */

void
pipeline_stats(struct dispatch_stats *st, int *idle, int *busy)
{
	int i;

	dispatch_get_stats(disp, st);
	*idle = *busy = 0;
	for (i = 0; i < nworkers; i++) {
		if (workers[i].state == WORKER_IDLE)
			(*idle)++;
		else if (workers[i].state == WORKER_BUSY)
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
	dispatch_get_stats(disp, &st);
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

	dispatch_get_stats(disp, &st);
	if (st.claimed > 0 || st.running > 0 || nsettles > 0 ||
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

	dispatch_get_stats(disp, &st);
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
	turn_arm();
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

	dispatch_breakers(disp, breaker_json, a);
	return a;
}

/* --- batches --- */

static void
batch_expired(struct batcher_entry *e, void *arg)
{
	outcome_later(e->job, ATTEMPT_TIMEOUT, "attempt_timeout:%" PRIu64,
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
		int got;

		if (e->done)
			continue;
		if ((r = dispatch_job_row(disp, e->job)) == NULL) {
			e->done = 1;
			continue;
		}
		if ((sk = bound_sink(r, &res, why, sizeof(why))) == NULL) {
			e->done = 1;
			outcome_later(e->job, res, "%s", why);
			continue;
		}
		if (sink == NULL)
			sink = sk;
		else if (sk != sink) {
			/* Bound elsewhere by a reload since it was added
			 * (two sinks of its module): not this request's. */
			e->done = 1;
			outcome_later(e->job, ATTEMPT_ERROR, "config changed");
			continue;
		}
		if ((got = store_hook_get(env->store, r->seq, &recs[n])) != 0) {
			e->done = 1;
			if (got == 1)
				outcome_later(e->job, ATTEMPT_PERMANENT,
				    "hook %" PRIu64 " is gone", r->seq);
			else
				outcome_later(e->job, ATTEMPT_ERROR,
				    "store: %s", store_strerror(env->store));
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
					outcome_later(req->entries[i].job,
					    ATTEMPT_ERROR, "batch: %s",
					    strerror(errno));
				}
		} else if (supervisor_send(w->serial, &m) == -1) {
			msg_free(&m);
			for (i = 0; i < req->n; i++)
				if (!req->entries[i].done) {
					req->entries[i].done = 1;
					outcome_later(req->entries[i].job,
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
static void
batch_pump(void)
{
	struct batcher_req *req;
	struct timeval tv;
	uint64_t now = time_wall_ms(), next, dl;
	int i;

	dl = batcher_expire(batcher, now, batch_expired, NULL);
	for (i = 0; i < nworkers; i++)
		if (workers[i].state == WORKER_BUSY && workers[i].req != NULL &&
		    batcher_all_done(workers[i].req) && !workers[i].reported) {
			log_warnx("pipeline: batch %" PRIu64 ": every entry "
			    "timed out; killing its deliver process",
			    workers[i].job);
			workers[i].reported = 1;
			supervisor_kill(workers[i].serial);
		}
	for (;;) {
		struct worker *w = NULL;

		for (i = 0; i < nworkers; i++)
			if (workers[i].state == WORKER_IDLE) {
				w = &workers[i];
				break;
			}
		if (w == NULL || (req = batcher_take(batcher, now)) == NULL)
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
	turn_arm();
}

/* --- the claim check --- */

static void
claim_release(const unsigned char *key, void *arg)
{
	dispatch_claim_release(disp, key);
	turn_arm();
}

/* Check-in jobs to idle deliver processes, one pack each. */
static void
claim_pump(void)
{
	static uint64_t next_id = 1;
	struct worker *w;
	struct msg m;
	uint64_t id;
	int i, rc;

	for (;;) {
		w = NULL;
		for (i = 0; i < nworkers; i++)
			if (workers[i].state == WORKER_IDLE) {
				w = &workers[i];
				break;
			}
		if (w == NULL)
			return;
		id = next_id++;
		if ((rc = claim_next_job(&m, id)) == 0)
			return;
		if (rc == -1) {
			claim_done(id, NULL, claim_release, NULL);
			continue;
		}
		if (supervisor_send(w->serial, &m) == -1) {
			msg_free(&m);
			w->state = WORKER_RETIRING;
			claim_done(id, NULL, claim_release, NULL);
			continue;
		}
		msg_free(&m);
		w->state = WORKER_BUSY;
		w->claim = 1;
		w->job = id;
		w->reported = 0;
		worker_timer(w, env->conf->dispatch.attempt_timeout_ms);
	}
}
