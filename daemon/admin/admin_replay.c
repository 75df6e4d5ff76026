/* SPDX-License-Identifier: ISC */
/*
 * admin_replay.c: the replay jobs' runner; see admin_replay.h.
 *
 * One timer, every REPLAY_TICK_MS while a job runs (at once again while a
 * job has a full step's tokens left): each running job's bucket gains
 * rate x the time since its last fill, up to REPLAY_BURST_MS of its rate
 * (at least one token), and a job with a whole token takes one step of
 * at most REPLAY_STEP_MAX rows (a dlq job: one transaction of its rows
 * and its cursor, committed with a sync, so the moved count an operator
 * reads is still true after a crash) or grants that many held hooks to
 * its quarantine release.  While the pressure is too high a job waits
 * with an empty bucket (no burst when it clears) and says why (held).
 *
 * Self-pause: each job keeps the outcomes of the last REPLAY_WINDOW
 * settled deliveries of its rows (delivered, dead-lettered, parked by an
 * open breaker; a transient retry is not settled); REPLAY_PAUSE_BAD dead
 * or parked among them pause it, with the reason, at the next tick (not
 * inside the settles' loop).  Resuming it starts a new window.
 *
 * Fatal: nothing; a store error is logged and the step tried again at
 * the next tick (the job's record is only changed in memory once its
 * transaction committed).
 */
#include "config.h"

#include <sys/queue.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "admin_replay.h"
#include "clock.h"
#include "ids.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "notice.h"
#include "pipeline/pipeline.h"
#include "quarantine.h"
#include "store/store.h"

#define REPLAY_TICK_MS		100
#define REPLAY_BURST_MS		200	/* of its rate a bucket holds */
#define REPLAY_STEP_MAX		512	/* rows a step */
#define REPLAY_VISITS		4096	/* dead entries read a step */
#define REPLAY_KEEP_DONE	64	/* done or cancelled jobs kept */

struct rjob {
	TAILQ_ENTRY(rjob)	 entry;
	unsigned char		 id[UUID_LEN];
	struct store_replay	 rp;		/* as committed */
	double			 tokens;
	uint64_t		 filled;	/* mono ms of the last fill */
	char			 held[128];	/* why it waits, "" it does
						 * not */
	uint8_t			 ring[REPLAY_WINDOW];	/* outcomes */
	unsigned		 nring, pos;
	int			 pause_due;	/* the window says pause */
	/* quarantine: its release (quarantine.c's one), while it runs */
	int			 releasing;
	uint64_t		 base_moved, base_dropped;
};

static TAILQ_HEAD(, rjob) jobs = TAILQ_HEAD_INITIALIZER(jobs);
static int		 njobs;
static struct event	*ev_tick;
static int		 stopped;

static void	 tick_cb(evutil_socket_t, short, void *);
static void	 tick_arm(uint64_t);
static int	 job_load(const unsigned char *, const struct store_replay *,
		    void *);
static struct rjob *job_find(const unsigned char *);
static int	 job_save(struct rjob *, const struct store_replay *);
static void	 job_forget(struct rjob *);
static void	 job_window_reset(struct rjob *);
static int	 job_pressure_ok(struct rjob *, int, const char *, uint64_t,
		    int);
static void	 job_step_dlq(struct rjob *, uint64_t);
static void	 job_step_quarantine(struct rjob *, uint64_t);
static void	 job_pause_self(struct rjob *);
static void	 release_done(void *, json_t *);
static void	 release_sync(struct rjob *);
static const char *kind_name(int);
static void	 replay_notice(const char *, const struct store_replay *);
static const char *state_name(int);
static json_t	*job_json(const unsigned char *, const struct store_replay *,
		    const struct rjob *);
static int	 prune_fn(const unsigned char *, const struct store_replay *,
		    void *);
static int	 list_fn(const unsigned char *, const struct store_replay *,
		    void *);
static uint64_t	 cursor_u64(const unsigned char *);
static void	 cursor_set(unsigned char *, uint64_t);

void
replay_init(void)
{
	if ((ev_tick = evtimer_new(env->base, tick_cb, NULL)) == NULL)
		fatalx("replay: evtimer_new");
	if (store_replay_list(env->store, job_load, NULL) == -1)
		log_warnx("replay: the jobs could not be read: %s; they "
		    "resume at the next start", store_strerror(env->store));
	tick_arm(REPLAY_TICK_MS);
}

void
replay_stop(void)
{
	struct rjob *j;

	stopped = 1;
	if (ev_tick != NULL)
		evtimer_del(ev_tick);
	TAILQ_FOREACH(j, &jobs, entry)
		if (j->releasing)
			quarantine_release_end(j);
}

static int
job_load(const unsigned char *id, const struct store_replay *rp, void *arg)
{
	struct rjob *j;
	char ids[UUID_STRLEN + 1];

	if (rp->state != STORE_REPLAY_RUNNING &&
	    rp->state != STORE_REPLAY_PAUSED)
		return 0;
	if (njobs == REPLAY_MAX_ACTIVE)
		return 1;
	if ((j = calloc(1, sizeof(*j))) == NULL)
		fatal("replay");
	memcpy(j->id, id, UUID_LEN);
	j->rp = *rp;
	j->filled = time_mono_ms();
	TAILQ_INSERT_TAIL(&jobs, j, entry);
	njobs++;
	uuid_format(id, ids);
	log_info("replay: job %s (%s, %s) resumes: %" PRIu64 " moved so far",
	    ids, kind_name(rp->kind), state_name(rp->state), rp->moved);
	return 0;
}

static struct rjob *
job_find(const unsigned char *id)
{
	struct rjob *j;

	TAILQ_FOREACH(j, &jobs, entry)
		if (memcmp(j->id, id, UUID_LEN) == 0)
			return j;
	return NULL;
}

/* Write rp as j's record in a synced batch of its own; j->rp takes it
 * once it is durable.  0, or -1 (logged). */
static int
job_save(struct rjob *j, const struct store_replay *rp)
{
	struct store_batch *sb;

	if ((sb = store_batch_begin(env->store)) == NULL ||
	    store_batch_replay_put(sb, j->id, rp) == -1) {
		if (sb != NULL)
			store_batch_abort(sb);
		goto fail;
	}
	if (store_batch_commit(sb) == -1)
		goto fail;
	j->rp = *rp;
	return 0;

 fail:
	log_warnx("replay: a job's record could not be written: %s",
	    store_strerror(env->store));
	master_store_check();
	return -1;
}

/* A done or cancelled job leaves memory (its record stays). */
static void
job_forget(struct rjob *j)
{
	if (j->releasing) {
		quarantine_release_detach(j);
		j->releasing = 0;
	}
	TAILQ_REMOVE(&jobs, j, entry);
	njobs--;
	free(j);
}

static void
job_window_reset(struct rjob *j)
{
	j->nring = j->pos = 0;
	j->pause_due = 0;
}

/* The finished (done or cancelled) jobs: counted, then the oldest beyond
 * REPLAY_KEEP_DONE deleted in the new job's batch. */
struct prune {
	struct store_batch	*sb;
	uint64_t		 finished;
	uint64_t		 todel;
	int			 failed;
};

static int
prune_fn(const unsigned char *id, const struct store_replay *rp, void *arg)
{
	struct prune *p = arg;

	if (rp->state != STORE_REPLAY_DONE &&
	    rp->state != STORE_REPLAY_CANCELLED)
		return 0;
	if (p->sb == NULL) {
		p->finished++;
		return 0;
	}
	if (p->todel == 0)
		return 1;
	if (store_batch_replay_del(p->sb, id) == -1) {
		p->failed = 1;
		return 1;
	}
	p->todel--;
	return 0;
}

enum replay_rc
replay_create(const struct replay_spec *sp, unsigned char id[UUID_LEN])
{
	struct store_replay rp;
	struct prune p;
	struct rjob *j;
	char ids[UUID_STRLEN + 1];
	const char *src = sp->source != NULL ? sp->source : "";
	const char *et = sp->event_type != NULL ? sp->event_type : "";

	TAILQ_FOREACH(j, &jobs, entry)
		if (j->rp.kind == sp->kind && strcmp(j->rp.source, src) == 0 &&
		    strcmp(j->rp.event_type, et) == 0 &&
		    j->rp.since == sp->since && j->rp.until == sp->until &&
		    j->rp.sink == sp->sink &&
		    j->rp.rate == sp->rate &&
		    j->rp.max_lag_ms == sp->max_lag_ms) {
			memcpy(id, j->id, UUID_LEN);
			return REPLAY_EXISTS;
		}
	if (njobs >= REPLAY_MAX_ACTIVE)
		return REPLAY_FULL;

	memset(&rp, 0, sizeof(rp));
	rp.state = STORE_REPLAY_RUNNING;
	rp.kind = sp->kind;
	snprintf(rp.source, sizeof(rp.source), "%s", src);
	snprintf(rp.event_type, sizeof(rp.event_type), "%s", et);
	rp.since = sp->since;
	rp.until = sp->until;
	rp.rate = sp->rate;
	rp.max_lag_ms = sp->max_lag_ms;
	rp.sink = sp->sink;
	rp.created_at = time_wall_ms();
	if (sp->kind == STORE_REPLAY_QUARANTINE)
		rp.seq_below = store_next_seq(env->store);
	uuidv7_new(id);

	memset(&p, 0, sizeof(p));
	if (store_replay_list(env->store, prune_fn, &p) == -1)
		return REPLAY_STORE;
	if ((p.sb = store_batch_begin(env->store)) == NULL)
		return REPLAY_STORE;
	p.todel = p.finished > REPLAY_KEEP_DONE ? p.finished -
	    REPLAY_KEEP_DONE : 0;
	if ((p.todel > 0 &&
	    (store_replay_list(env->store, prune_fn, &p) == -1 || p.failed)) ||
	    store_batch_replay_put(p.sb, id, &rp) == -1) {
		store_batch_abort(p.sb);
		return REPLAY_STORE;
	}
	if (store_batch_commit(p.sb) == -1) {
		master_store_check();
		return REPLAY_STORE;
	}
	if ((j = calloc(1, sizeof(*j))) == NULL)
		fatal("replay");
	memcpy(j->id, id, UUID_LEN);
	j->rp = rp;
	j->filled = time_mono_ms();
	TAILQ_INSERT_TAIL(&jobs, j, entry);
	njobs++;
	uuid_format(id, ids);
	log_info("replay: job %s (%s%s%s) created at %u/s", ids,
	    kind_name(rp.kind), src[0] != '\0' ? ", source " : "", src,
	    rp.rate);
	tick_arm(0);
	return REPLAY_OK;
}

enum replay_rc
replay_change(const unsigned char id[UUID_LEN], int state, uint32_t rate,
    int64_t max_lag_ms)
{
	struct store_replay rp;
	struct rjob *j;
	char ids[UUID_STRLEN + 1];
	int ret;

	if ((j = job_find(id)) == NULL) {
		if ((ret = store_replay_get(env->store, id, &rp)) == -1)
			return REPLAY_STORE;
		return ret == 0 ? REPLAY_NOT_FOUND : REPLAY_FINISHED;
	}
	rp = j->rp;
	if (state != 0)
		rp.state = state;
	if (rate != 0)
		rp.rate = rate;
	if (max_lag_ms >= 0)
		rp.max_lag_ms = (uint32_t)max_lag_ms;
	/* Resumed: a new start, judged afresh. */
	if (rp.state == STORE_REPLAY_RUNNING &&
	    j->rp.state != STORE_REPLAY_RUNNING) {
		rp.reason[0] = '\0';
		job_window_reset(j);
		j->tokens = 0;
		j->filled = time_mono_ms();
	}
	if (job_save(j, &rp) == -1)
		return REPLAY_STORE;
	uuid_format(id, ids);
	log_info("replay: job %s %s, %u/s, max_lag_ms %u", ids,
	    state_name(rp.state), rp.rate, rp.max_lag_ms);
	if (rp.state != STORE_REPLAY_RUNNING && j->releasing)
		quarantine_release_end(j);
	if (rp.state == STORE_REPLAY_CANCELLED && !j->releasing)
		job_forget(j);
	else
		tick_arm(0);
	return REPLAY_OK;
}

/* --- the steps --- */

static void
tick_arm(uint64_t ms)
{
	struct timeval tv;

	if (stopped || ev_tick == NULL || TAILQ_EMPTY(&jobs))
		return;
	if (evtimer_pending(ev_tick, NULL)) {
		if (ms != 0)
			return;
		evtimer_del(ev_tick);
	}
	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(ev_tick, &tv);
}

static void
tick_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct rjob *j, *next;
	uint64_t lag = 0, now = time_mono_ms(), wait = REPLAY_TICK_MS;
	double cap, add;
	int full = 0, pr = -2;
	char why[PIPELINE_WHY_MAX] = "";

	if (stopped || env->draining)
		return;
	for (j = TAILQ_FIRST(&jobs); j != NULL; j = next) {
		next = TAILQ_NEXT(j, entry);
		if (j->pause_due && j->rp.state == STORE_REPLAY_RUNNING)
			job_pause_self(j);
		if (j->releasing)
			release_sync(j);
		if ((j->rp.state == STORE_REPLAY_DONE ||
		    j->rp.state == STORE_REPLAY_CANCELLED) && !j->releasing) {
			job_forget(j);
			continue;
		}
		if (j->rp.state != STORE_REPLAY_RUNNING) {
			j->held[0] = '\0';
			continue;
		}
		if (pr == -2)
			pr = pipeline_pressure(&lag, &full, why, sizeof(why));
		add = (double)j->rp.rate * (double)(now - j->filled) / 1000.0;
		j->filled = now;
		if (!job_pressure_ok(j, pr, why, lag, full)) {
			j->tokens = 0;
			continue;
		}
		cap = (double)j->rp.rate * REPLAY_BURST_MS / 1000.0;
		if (cap < 1)
			cap = 1;
		if ((j->tokens += add) > cap)
			j->tokens = cap;
		if (j->tokens < 1)
			continue;
		if (j->rp.kind == STORE_REPLAY_DLQ ||
		    j->rp.kind == STORE_REPLAY_ARCHIVE)
			job_step_dlq(j, time_wall_ms());
		else
			job_step_quarantine(j, time_wall_ms());
		if (j->rp.state == STORE_REPLAY_DONE)
			wait = 0;	/* forgotten at once */
		else if (j->tokens >= REPLAY_STEP_MAX)
			wait = 0;
	}
	tick_arm(wait);
}

/* 1 when j may step, else 0 with j->held saying why (pressure's why when
 * it is unavailable: pr -1). */
static int
job_pressure_ok(struct rjob *j, int pr, const char *why, uint64_t lag,
    int full)
{
	if (pr == -1) {
		snprintf(j->held, sizeof(j->held), "%s", why);
		return 0;
	}
	if (full) {
		snprintf(j->held, sizeof(j->held), "window_full");
		return 0;
	}
	if (lag > j->rp.max_lag_ms) {
		snprintf(j->held, sizeof(j->held), "lag: %" PRIu64 " ms > "
		    "max_lag_ms %u", lag, j->rp.max_lag_ms);
		return 0;
	}
	j->held[0] = '\0';
	return 1;
}

static void
job_step_dlq(struct rjob *j, uint64_t now)
{
	struct store_replay rp = j->rp;
	struct store_replay_step s;
	struct store_batch *sb;
	char ids[UUID_STRLEN + 1];
	int ret;

	memset(&s, 0, sizeof(s));
	s.now = now;
	s.limit = (uint64_t)j->tokens;
	if (s.limit > REPLAY_STEP_MAX)
		s.limit = REPLAY_STEP_MAX;
	s.visits = REPLAY_VISITS;
	if ((sb = store_batch_begin(env->store)) == NULL)
		goto fail;
	if ((ret = rp.kind == STORE_REPLAY_ARCHIVE ?
	    store_batch_archive_replay_step(sb, j->id, &rp, &s) :
	    store_batch_replay_step(sb, j->id, &rp, &s)) == -1) {
		store_batch_abort(sb);
		goto fail;
	}
	if (store_batch_commit(sb) == -1)
		goto fail;
	j->rp = rp;
	j->tokens -= (double)s.moved;
	if (s.moved > 0) {
		metrics_add("ankusa_replay_moved_total", s.moved, "kind",
		    kind_name(rp.kind), NULL);
		pipeline_wake(now);
	}
	if (ret == 0) {
		uuid_format(j->id, ids);
		log_info("replay: job %s done: %" PRIu64 " %s moved, %" PRIu64
		    " dropped", ids, rp.moved, rp.kind == STORE_REPLAY_ARCHIVE ?
		    "hooks" : "rows", rp.dropped);
		replay_notice(ids, &rp);
	}
	return;

 fail:
	log_warnx("replay: a step failed: %s; tried again",
	    store_strerror(env->store));
	master_store_check();
}

/*
 * A quarantine job: its release runs while the job does, one granted
 * held hook per token; the counts and the position it reports are
 * written with the job each tick they changed (a hook released is gone
 * from the pen, so one checked again after a crash is only checked
 * again).  Only one release runs at a time (quarantine.c): a job waits
 * while another has it.
 */
static void
job_step_quarantine(struct rjob *j, uint64_t now)
{
	uint64_t n, after;
	char err[128];

	if (!j->releasing) {
		after = cursor_u64(j->rp.cursor);
		if (quarantine_release_paced(j->id, j->rp.source[0] != '\0' ?
		    j->rp.source : NULL, j->rp.event_type, after,
		    j->rp.seq_below, j->rp.since, j->rp.until, release_done,
		    j, err, sizeof(err)) == -1) {
			snprintf(j->held, sizeof(j->held), "%s", err);
			j->tokens = 0;
			return;
		}
		j->releasing = 1;
		j->base_moved = j->rp.moved;
		j->base_dropped = j->rp.dropped;
	}
	n = (uint64_t)j->tokens;
	if (n > REPLAY_STEP_MAX)
		n = REPLAY_STEP_MAX;
	j->tokens -= (double)quarantine_grant(j, n);
	(void)now;
}

/* The counts and position of j's release into its record, if changed. */
static void
release_sync(struct rjob *j)
{
	struct store_replay rp = j->rp;
	uint64_t seq, released, kept;

	quarantine_progress(j, &seq, &released, &kept);
	rp.moved = j->base_moved + released;
	rp.dropped = j->base_dropped + kept;
	cursor_set(rp.cursor, seq);
	if (memcmp(&rp, &j->rp, sizeof(rp)) == 0)
		return;
	if (rp.moved > j->rp.moved)
		metrics_add("ankusa_replay_moved_total", rp.moved - j->rp.moved,
		    "kind", "quarantine", NULL);
	(void)job_save(j, &rp);
}

/* j's release ended: walked to its end (the job is done unless it was
 * paused or cancelled meanwhile) or stopped. */
static void
release_done(void *arg, json_t *result)
{
	struct rjob *j = arg;
	struct store_replay rp;
	int walked = json_is_true(json_object_get(result, "walked"));
	char ids[UUID_STRLEN + 1];

	json_decref(result);
	release_sync(j);
	j->releasing = 0;
	if (walked && j->rp.state == STORE_REPLAY_RUNNING) {
		rp = j->rp;
		rp.state = STORE_REPLAY_DONE;
		if (job_save(j, &rp) == 0) {
			uuid_format(j->id, ids);
			log_info("replay: job %s done: %" PRIu64 " held hooks "
			    "released, %" PRIu64 " kept", ids, rp.moved,
			    rp.dropped);
			replay_notice(ids, &rp);
		}
	}
	/* The tick forgets a finished job: this may run inside its step. */
	tick_arm(0);
}

/* --- self-pause --- */

void
replay_settled(enum settle_kind kind, enum settle_written how,
    const unsigned char *key, const struct store_row *row, void *arg)
{
	/* A plain retry is not settled, an orphan was none. */
	if (how == SETTLED_WRITTEN && (kind != SETTLE_RESCHEDULE ||
	    row->state == STORE_ROW_PARKED))
		replay_note(row->replay_id, kind == SETTLE_DELIVERED ?
		    REPLAY_DELIVERED : kind == SETTLE_DEAD ? REPLAY_DEAD :
		    REPLAY_PARKED);
}

void
replay_note(const unsigned char id[UUID_LEN], enum replay_outcome what)
{
	static const unsigned char zero[UUID_LEN];
	struct rjob *j;
	unsigned i, dead = 0, parked = 0;

	if (memcmp(id, zero, UUID_LEN) == 0 || (j = job_find(id)) == NULL ||
	    j->rp.state != STORE_REPLAY_RUNNING)
		return;
	j->ring[j->pos] = (uint8_t)what;
	j->pos = (j->pos + 1) % REPLAY_WINDOW;
	if (j->nring < REPLAY_WINDOW)
		j->nring++;
	for (i = 0; i < j->nring; i++) {
		if (j->ring[i] == REPLAY_DEAD)
			dead++;
		else if (j->ring[i] == REPLAY_PARKED)
			parked++;
	}
	if (dead + parked >= REPLAY_PAUSE_BAD && !j->pause_due) {
		j->pause_due = 1;
		tick_arm(0);
	}
}

static void
job_pause_self(struct rjob *j)
{
	struct store_replay rp = j->rp;
	char ids[UUID_STRLEN + 1];
	unsigned i, dead = 0, parked = 0;

	for (i = 0; i < j->nring; i++) {
		if (j->ring[i] == REPLAY_DEAD)
			dead++;
		else if (j->ring[i] == REPLAY_PARKED)
			parked++;
	}
	rp.state = STORE_REPLAY_PAUSED;
	if (dead >= parked)
		snprintf(rp.reason, sizeof(rp.reason), "dead_letters: %u of the "
		    "last %u settled deliveries were dead-lettered", dead,
		    j->nring);
	else
		snprintf(rp.reason, sizeof(rp.reason), "breaker_open: %u of "
		    "the last %u settled deliveries were parked by an open "
		    "breaker", parked, j->nring);
	if (job_save(j, &rp) == -1)
		return;		/* tried again next tick */
	j->pause_due = 0;
	if (j->releasing)
		quarantine_release_end(j);
	uuid_format(j->id, ids);
	log_warnx("replay: job %s paused itself: %s", ids, rp.reason);
}

/* --- JSON --- */

/* A cursor's big-endian u64 at p (a dead time, a seq). */
static uint64_t
cursor_u64(const unsigned char *p)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < 8; i++)
		v = v << 8 | p[i];
	return v;
}

/* A quarantine job's cursor: the pen seq, then zeros. */
static void
cursor_set(unsigned char *c, uint64_t seq)
{
	int i;

	memset(c, 0, STORE_DEADKEY_LEN);
	for (i = 7; i >= 0; i--, seq >>= 8)
		c[i] = seq & 0xff;
}

/* The notice of a job done (notice.h): replay.finished. */
static void
replay_notice(const char *id, const struct store_replay *rp)
{
	notice_emit("replay.finished", json_pack("{s:s, s:s, s:I, s:I}",
	    "id", id, "kind", kind_name(rp->kind), "moved",
	    (json_int_t)rp->moved, "dropped", (json_int_t)rp->dropped));
}

static const char *
kind_name(int kind)
{
	return kind == STORE_REPLAY_QUARANTINE ? "quarantine" :
	    kind == STORE_REPLAY_ARCHIVE ? "archive" : "dlq";
}

static const char *
state_name(int state)
{
	switch (state) {
	case STORE_REPLAY_RUNNING:
		return "running";
	case STORE_REPLAY_PAUSED:
		return "paused";
	case STORE_REPLAY_CANCELLED:
		return "cancelled";
	default:
		return "done";
	}
}

static json_t *
opt_ms(uint64_t v)
{
	return v != 0 ? json_integer((json_int_t)v) : json_null();
}

static json_t *
job_json(const unsigned char *id, const struct store_replay *rp,
    const struct rjob *j)
{
	static const unsigned char zero[STORE_DEADKEY_LEN];
	char ids[UUID_STRLEN + 1];
	json_t *o, *cur = json_null();

	uuid_format(id, ids);
	if (memcmp(rp->cursor, zero, sizeof(zero)) != 0) {
		if (rp->kind == STORE_REPLAY_DLQ)
			cur = json_pack("{s:I, s:I, s:I}", "dead_at",
			    (json_int_t)cursor_u64(rp->cursor), "seq",
			    (json_int_t)cursor_u64(rp->cursor + 8), "sink",
			    (json_int_t)(cursor_u64(rp->cursor + 12) &
			    0xffffffff));
		else if (rp->kind == STORE_REPLAY_ARCHIVE)
			cur = json_pack("{s:I, s:I}", "kept_at",
			    (json_int_t)cursor_u64(rp->cursor), "seq",
			    (json_int_t)cursor_u64(rp->cursor + 8));
		else
			cur = json_pack("{s:I}", "seq",
			    (json_int_t)cursor_u64(rp->cursor));
	}
	o = json_pack("{s:s, s:s, s:s, s:o, s:o, s:o, s:i, s:i, s:I, s:I, "
	    "s:I, s:o, s:b}", "id", ids, "kind", kind_name(rp->kind), "state",
	    state_name(rp->state), "source_id", rp->source[0] != '\0' ?
	    json_string(rp->source) : json_null(), "since", opt_ms(rp->since),
	    "until", opt_ms(rp->until), "rate", (int)rp->rate, "max_lag_ms",
	    (int)rp->max_lag_ms, "created_at", (json_int_t)rp->created_at,
	    "moved", (json_int_t)rp->moved, "dropped", (json_int_t)rp->dropped,
	    "cursor", cur, "done", rp->state == STORE_REPLAY_DONE);
	if (o == NULL)
		return NULL;
	if (rp->kind == STORE_REPLAY_ARCHIVE)
		json_object_set_new(o, "sink", rp->sink != 0 ?
		    json_integer((json_int_t)rp->sink - 1) : json_null());
	json_object_set_new(o, "reason", rp->reason[0] != '\0' ?
	    json_string(rp->reason) : json_null());
	json_object_set_new(o, "event_type", rp->event_type[0] != '\0' ?
	    json_string(rp->event_type) : json_null());
	json_object_set_new(o, "held", j != NULL && j->held[0] != '\0' &&
	    rp->state == STORE_REPLAY_RUNNING ? json_string(j->held) :
	    json_null());
	return o;
}

json_t *
replay_json(const unsigned char id[UUID_LEN], enum replay_rc *rc)
{
	struct store_replay rp;
	struct rjob *j;
	int ret;

	*rc = REPLAY_OK;
	if ((j = job_find(id)) != NULL)
		return job_json(j->id, &j->rp, j);
	if ((ret = store_replay_get(env->store, id, &rp)) != 1) {
		*rc = ret == 0 ? REPLAY_NOT_FOUND : REPLAY_STORE;
		return NULL;
	}
	return job_json(id, &rp, NULL);
}

static int
list_fn(const unsigned char *id, const struct store_replay *rp, void *arg)
{
	struct rjob *j = job_find(id);
	json_t *o;

	/* The jobs in memory are ahead of their records only between a
	 * commit and its copy: the same, but for held. */
	if ((o = job_json(id, j != NULL ? &j->rp : rp, j)) != NULL)
		json_array_append_new(arg, o);
	return 0;
}

json_t *
replay_list(void)
{
	json_t *a = json_array();

	if (store_replay_list(env->store, list_fn, a) == -1) {
		json_decref(a);
		return NULL;
	}
	return a;
}
