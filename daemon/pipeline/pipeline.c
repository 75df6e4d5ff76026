/* SPDX-License-Identifier: ISC */
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
 * the deliver processes pipeline_pool.c's, the batchers pipeline_batch.c's and
 * the check-ins pipeline_claim.c's.
 *
 * It also answers control: stats, pressure, tick, breakers.
 */
#include "config.h"

#include <sys/queue.h>

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "conf.h"
#include "dispatch/bucket.h"
#include "dispatch/dispatch.h"
#include "dispatch/health.h"
#include "job.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "notice.h"
#include "pipeline.h"
#include "pipeline_dlsource.h"
#include "pipeline_int.h"
#include "repl.h"
#include "store/store.h"
#include "store/store_group.h"
#include "supervisor.h"

/*
 * After settles the store refused (the disk full), no scan for this long:
 * their rows stay due in the store as they were, and a scan at once would
 * claim and attempt them again, and fail their settles again, in a loop
 * (a held row was attempted 68 times in 2 s, its backoff 1 s).  Rows end
 * up tried at most once a hold, as hooks are answered Retry-After: 1.
 */
#define PIPELINE_DOUBT_RETRY_MS	250	/* a probe, while in doubt */
#define PIPELINE_STORE_HOLD_MS	1000

/*
 * On the master of a replication group every commit waits for a client's
 * acknowledgement, settles' too (Berkeley DB makes each commit record
 * permanent), and the loop waits with it.  Settled a turn at a time, as on
 * a single node, the loop spent most of its time in those waits; so a
 * group's master holds a turn's settles until the oldest is this old or
 * this many have come, and commits them together.  A row waits the longer
 * in its claim, and no more: a settle lost by a failover only means the
 * row is tried again.
 */
#define PIPELINE_GROUP_SETTLE_US	2000
#define PIPELINE_GROUP_SETTLE_MAX	512

/* An outcome the glue makes itself (timeouts, crashes, a hook gone). */
struct pmade {
	uint64_t		 job;
	enum attempt_result	 res;
	char			 detail[JOB_DETAIL_MAX];
	int			 attempt;	/* one was made: logged */
	uint64_t		 started_at;	/* then: wall ms */
	uint64_t		 duration_ms;
};

struct ptick {
	TAILQ_ENTRY(ptick)	 entry;
	void			(*done)(void *, uint64_t, const char *);
	void			*arg;
	uint64_t		 settled0;
	uint64_t		 deadline;	/* mono ms */
};

struct dispatch		*pipeline_disp;
struct health		*pipeline_hl;
uint64_t		 pipeline_scan_below;

static struct pmade	*outcomes;
static size_t		 noutcomes, capoutcomes;
static struct event	*ev_turn;
static struct event	*ev_wake;
static struct event	*ev_ticks;
static int		 turn_armed;
static uint64_t		 held_until;	/* mono ms: no scan before */
static TAILQ_HEAD(, ptick) ticks = TAILQ_HEAD_INITIALIZER(ticks);
static void		(*on_stop)(void);

static void	turn_cb(evutil_socket_t, short, void *);
static void	wake_cb(evutil_socket_t, short, void *);
static void	ticks_cb(evutil_socket_t, short, void *);
static void	check_ticks(int);
static int	dls_claimed(const unsigned char *, void *);
static void	dls_hold(const char *, int, void *);
static int	dls_up(char *, size_t, void *);
static uint64_t	dls_queued(const char *, const char *, void *);
static void	dls_ended(void *);
static uint64_t	settled_count(void);
static void	breaker_moved(void *, const char *, const char *, uint32_t,
		    uint8_t, const char *);
static void	later_add(uint64_t, enum attempt_result, const char *,
		    va_list) __attribute__((format(printf, 3, 0)));

/* --- life --- */

int	(*pipeline_disable_fn)(const char *, uint32_t, const char *);

void
pipeline_on_disable(int (*fn)(const char *, uint32_t, const char *))
{
	if (pipeline_disable_fn != NULL)
		fatalx("pipeline: a second disable hook");
	pipeline_disable_fn = fn;
}

void
pipeline_on_stop(void (*fn)(void))
{
	if (on_stop != NULL)
		fatalx("pipeline: a second stop hook");
	on_stop = fn;
}

void
pipeline_init(void)
{
	static const struct dlsource_ops dls_ops = {
		.claimed = dls_claimed,
		.up = dls_up,
		.hold = dls_hold,
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
	ops.breaker_moved = breaker_moved;
	pipeline_disp = dispatch_new(env->conf, &ops);
	pipeline_hl = health_new();
	health_reconfigure(pipeline_hl, env->conf);
	if ((ev_turn = evtimer_new(env->base, turn_cb, NULL)) == NULL ||
	    (ev_wake = evtimer_new(env->base, wake_cb, NULL)) == NULL ||
	    (ev_ticks = evtimer_new(env->base, ticks_cb, NULL)) == NULL)
		fatalx("pipeline: evtimer_new");
	pipeline_batch_init();
	dlsource_init(&dls_ops);
	pipeline_arm();	/* rows due from before a restart */
}

static void
breaker_moved(void *arg, const char *tenant, const char *source,
    uint32_t sink, uint8_t module, const char *state)
{
	if (strcmp(state, "open") == 0)
		pipeline_store_attempt_opened();
	metrics_add("ankusa_dispatch_breaker_transitions_total", 1, "sink",
	    dispatch_module_name(module), "state", state, NULL);
	/* Opened and closed are the operator's news; half open is the
	 * breaker's own step between them. */
	if (strcmp(state, "open") == 0 || strcmp(state, "closed") == 0)
		notice_emit(strcmp(state, "open") == 0 ? "breaker.opened" :
		    "breaker.closed", notice_sink_data(tenant, source, sink,
		    module, NULL));
}

static int
dls_claimed(const unsigned char *key, void *arg)
{
	return dispatch_is_claimed(pipeline_disp, key);
}

static int
dls_up(char *why, size_t len, void *arg)
{
	return pipeline_up(why, len);
}

static void
dls_hold(const char *source, int hold, void *arg)
{
	if (hold)
		dispatch_hold_source(pipeline_disp, source);
	else
		dispatch_release_source(pipeline_disp, source);
}

static uint64_t
dls_queued(const char *source, const char *reason, void *arg)
{
	uint64_t n = dispatch_dead_letter_queued(pipeline_disp, source, reason,
	    time_sched_ms());

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
	pipeline_lanes_released();
}

void
pipeline_lanes_released(void)
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
	/* A client of a replication group dispatches nothing: the master
	 * does (daemon/repl.c). */
	if (!repl_writable())
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

/* Manual operations (daemon/admin/admin_ops.c): a key paused, whose claimed
 * rows dispatch sets aside now; whether a row is claimed. */
void
pipeline_pause(const char *source, uint32_t sink)
{
	dispatch_pause_key(pipeline_disp, source, sink, time_sched_ms());
	pipeline_arm();		/* their settles are written at the turn */
}

int
pipeline_claimed(const unsigned char *key)
{
	return dispatch_is_claimed(pipeline_disp, key);
}

void
pipeline_reconfigure(void)
{
	dispatch_reconfigure(pipeline_disp, env->conf);
	health_reconfigure(pipeline_hl, env->conf);
	pipeline_arm();
}

void
pipeline_stop(void)
{
	struct ptick *t;
	char why[PIPELINE_WHY_MAX], err[PIPELINE_WHY_MAX + 16];

	dispatch_stop(pipeline_disp);
	dlsource_stop();
	if (on_stop != NULL)
		on_stop();
	evtimer_del(ev_wake);
	/* Nothing is claimed any more: a tick would wait for its timeout. */
	(void)pipeline_up(why, sizeof(why));
	snprintf(err, sizeof(err), "unavailable: %s", why);
	while ((t = TAILQ_FIRST(&ticks)) != NULL) {
		TAILQ_REMOVE(&ticks, t, entry);
		t->done(t->arg, settled_count() - t->settled0, err);
		free(t);
	}
}

/*
 * Whether the pipeline runs on this node: 1, or 0 with why (for the
 * dispatch functions' "unavailable"): a client of a replication group
 * dispatches nothing (its master does), and a daemon that drains claims
 * nothing more.
 */
int
pipeline_up(char *why, size_t len)
{
	if (env->draining) {
		snprintf(why, len, "draining: the daemon is stopping");
		return 0;
	}
	if (!repl_writable()) {
		snprintf(why, len, "not_master: this node is a client of its "
		    "replication group, whose master (%s) dispatches",
		    repl_master()[0] != '\0' ? repl_master() : "none known");
		return 0;
	}
	return 1;
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
	static uint32_t *serials;
	static int cap;
	uint32_t *ns;
	int i, n = 0;

	if (cap < pool_nworkers) {
		if ((ns = reallocarray(serials, pool_nworkers,
		    sizeof(*ns))) == NULL)
			fatal("pipeline");
		serials = ns;
		cap = pool_nworkers;
	}
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

/* How long the settles of this turn may wait yet (us), 0 for now. */
static uint64_t
settle_defer_us(void)
{
	uint64_t since, age;

	if (store_role(env->store) != STORE_ROLE_MASTER || env->draining ||
	    pipeline_store_pending() >= PIPELINE_GROUP_SETTLE_MAX ||
	    (since = pipeline_store_since_us()) == 0)
		return 0;
	age = time_mono_us() - since;
	return age >= PIPELINE_GROUP_SETTLE_US ? 0 :
	    PIPELINE_GROUP_SETTLE_US - age;
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
	uint64_t now, wake, defer;
	size_t i;

	turn_armed = 0;
	/* A master whose last commit no quorum acknowledged may be cut off
	 * from its group, which elects another: it claims nothing until a
	 * probe's commit is acknowledged again.  Not while it stops, which
	 * claims nothing anyway: the outcomes of the attempts that ended are
	 * written (in its log at least, as a single node's would be) and
	 * the drain ends with the attempts, not past its grace with their
	 * outcomes unwritten. */
	if (!env->draining && store_in_doubt(env->store) &&
	    store_ready_probe(env->store, time_wall_ms()) == -1) {
		tv.tv_sec = 0;
		tv.tv_usec = PIPELINE_DOUBT_RETRY_MS * 1000;
		turn_armed = 1;
		evtimer_add(ev_turn, &tv);
		return;
	}
	/* Outcomes the glue made itself first: they may add settles. */
	for (i = 0; i < noutcomes; i++) {
		struct poutcome po;

		if (dispatch_job_row(pipeline_disp, outcomes[i].job) == NULL)
			continue;
		memset(&po, 0, sizeof(po));
		po.job = outcomes[i].job;
		po.res = outcomes[i].res;
		po.detail = outcomes[i].detail;
		po.attempt = outcomes[i].attempt;
		po.started_at = outcomes[i].started_at;
		po.duration_ms = outcomes[i].duration_ms;
		pipeline_store_outcome(&po);
	}
	noutcomes = 0;
	if ((defer = settle_defer_us()) == 0 && pipeline_store_flush() == -1)
		held_until = time_mono_ms() + PIPELINE_STORE_HOLD_MS;
	if ((now = time_mono_ms()) < held_until) {
		tv.tv_sec = (held_until - now) / 1000;
		tv.tv_usec = ((held_until - now) % 1000) * 1000;
		evtimer_add(ev_wake, &tv);
		check_ticks(0);
		return;
	}
	now = time_sched_ms();
	wake = dispatch_run(pipeline_disp, now);
	pipeline_claim_pump();
	pipeline_batch_pump();
	/* The run may have parked rows or met orphans: settle them now, or
	 * with the others held (settle_defer_us). */
	if (noutcomes > 0 || (pipeline_store_pending() > 0 &&
	    (defer = settle_defer_us()) == 0)) {
		pipeline_arm();
	} else if (pipeline_store_pending() > 0 && (wake == UINT64_MAX ||
	    wake > now + defer / 1000)) {
		tv.tv_sec = 0;
		tv.tv_usec = defer;
		evtimer_add(ev_wake, &tv);
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

	va_start(ap, fmt);
	later_add(job, res, fmt, ap);
	va_end(ap);
}

void
pipeline_later_attempt(uint64_t job, enum attempt_result res,
    uint64_t started_us, const char *fmt, ...)
{
	uint64_t ran = time_mono_us() - started_us;
	va_list ap;

	va_start(ap, fmt);
	later_add(job, res, fmt, ap);
	va_end(ap);
	outcomes[noutcomes - 1].attempt = 1;
	outcomes[noutcomes - 1].duration_ms = ran / 1000;
	outcomes[noutcomes - 1].started_at = time_wall_ms() - ran / 1000;
}

static void
later_add(uint64_t job, enum attempt_result res, const char *fmt, va_list ap)
{
	if (noutcomes == capoutcomes) {
		capoutcomes = capoutcomes ? capoutcomes * 2 : 16;
		if ((outcomes = reallocarray(outcomes, capoutcomes,
		    sizeof(*outcomes))) == NULL)
			fatal("pipeline");
	}
	memset(&outcomes[noutcomes], 0, sizeof(outcomes[noutcomes]));
	outcomes[noutcomes].job = job;
	outcomes[noutcomes].res = res;
	vsnprintf(outcomes[noutcomes].detail,
	    sizeof(outcomes[noutcomes].detail), fmt, ap);
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
pipeline_pressure(uint64_t *lag_ms, int *window_full, char *why,
    size_t len)
{
	struct dispatch_stats st;
	uint64_t due, now = time_sched_ms();
	int rc;

	if (!pipeline_up(why, len))
		return -1;
	if ((rc = store_oldest_due(env->store, &due)) == -1) {
		snprintf(why, len, "store_unavailable: %s",
		    store_strerror(env->store));
		return -1;
	}
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
	return rc == 0 || (rc == 1 && due > time_sched_ms());
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
		t->done(t->arg, settled_count() - t->settled0, settled ? NULL :
		    "timed out before everything settled");
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
pipeline_tick(uint64_t timeout_ms,
    void (*done)(void *, uint64_t, const char *), void *arg)
{
	struct ptick *t;
	char why[PIPELINE_WHY_MAX], err[PIPELINE_WHY_MAX + 16];

	if (!pipeline_up(why, sizeof(why))) {
		snprintf(err, sizeof(err), "unavailable: %s", why);
		done(arg, 0, err);
		return;
	}
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
	uint64_t now = time_sched_ms();

	json_array_append_new(a, json_pack("{s:s, s:s, s:i, s:s, s:s, s:i, "
	    "s:i, s:I}", "tenant", tenant, "source", source, "sink", (int)sink,
	    "module", dispatch_module_name(module), "state",
	    breaker_state_name(b->state), "failures", (int)b->fails, "opens",
	    (int)b->opens, "reopen_in_ms", (json_int_t)(b->state ==
	    BREAKER_OPEN && b->open_until > now ? b->open_until - now : 0)));
}

/* A key's rate, tokens and hold as the admin API and status show them. */
static json_t *
rate_obj(const char *tenant, const char *source, uint32_t sink,
    const struct bucket_info *bi)
{
	uint64_t now = time_sched_ms();

	return json_pack("{s:s, s:s, s:i, s:f, s:i, s:f, s:b, s:I}",
	    "tenant", tenant, "source", source, "sink", (int)sink,
	    "per_second", bi->per_second, "burst", (int)bi->burst, "tokens",
	    bi->tokens, "overridden", bi->overridden, "held_ms",
	    (json_int_t)(bi->held_until > now ? bi->held_until - now : 0));
}

static void
rate_json(const char *tenant, const char *source, uint32_t sink,
    const struct bucket_info *bi, void *arg)
{
	json_array_append_new(arg, rate_obj(tenant, source, sink, bi));
}

json_t *
pipeline_rates(void)
{
	json_t *a = json_array();

	dispatch_rates(pipeline_disp, time_sched_ms(), rate_json, a);
	return a;
}

json_t *
pipeline_key_rate(const char *tenant, const char *source, uint32_t sink)
{
	struct bucket_info bi;

	if (dispatch_key_rate(pipeline_disp, tenant, source, sink,
	    time_sched_ms(), &bi) == -1)
		return NULL;
	return rate_obj(tenant, source, sink, &bi);
}

void
pipeline_rate_changed(const char *tenant, const char *source, uint32_t sink)
{
	dispatch_rate_changed(pipeline_disp, tenant, source, sink,
	    time_sched_ms());
	pipeline_arm();
}

json_t *
pipeline_breakers(void)
{
	json_t *a = json_array();

	dispatch_breakers(pipeline_disp, breaker_json, a);
	return a;
}

/* A breaker's state as a rank: the worse, the higher. */
static int
breaker_rank(enum breaker_state s)
{
	return s == BREAKER_OPEN ? 2 : s == BREAKER_HALF_OPEN ? 1 : 0;
}

static void
sink_key_fn(const char *tenant, const char *source, uint32_t sink,
    uint8_t module, uint32_t claimed, const struct breaker *b, void *arg)
{
	struct pipeline_sink *v = arg;
	ssize_t i;

	if ((i = health_find(pipeline_hl, source, sink)) == -1 ||
	    v[i].h.module != module)
		return;
	v[i].claimed += claimed;
	if (breaker_rank(b->state) > breaker_rank(v[i].breaker))
		v[i].breaker = b->state;
}

void
pipeline_sinks(void (*fn)(const struct pipeline_sink *, void *), void *arg)
{
	struct pipeline_sink *v;
	uint64_t now = time_wall_ms();
	size_t i, n = health_nkeys(pipeline_hl);

	if (n == 0)
		return;
	if ((v = calloc(n, sizeof(*v))) == NULL)
		fatal("pipeline: sinks");
	for (i = 0; i < n; i++) {
		health_key(pipeline_hl, i, now, &v[i].h);
		v[i].breaker = BREAKER_CLOSED;
	}
	dispatch_keys(pipeline_disp, sink_key_fn, v);
	for (i = 0; i < n; i++)
		fn(&v[i], arg);
	free(v);
}
