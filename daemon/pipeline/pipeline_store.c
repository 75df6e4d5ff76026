/* SPDX-License-Identifier: ISC */
/*
 * pipeline_store.c: the dispatch glue's store adapter; see pipeline_int.h.
 *
 * The dispatch_ops that read the store (due scans, lanes) and the hooks an
 * attempt is built from, and the settles of one loop turn, written as one
 * store transaction (committed without a sync of their own: losing one in
 * a crash only means the row is tried again).
 *
 * Once the settles are written, each attempt's outcome and each delivered
 * hook has its delivery log line (pipeline_logline.h; log.deliveries says
 * which): the hook's id and receive time as noted when its job was built
 * (pipeline_store_hook), the outcome's code and detail as
 * pipeline_store_outcome handed them to the dispatch.  The lines of a
 * success are not limited (one a delivery, as many as the node delivers;
 * log.deliveries: failures leaves them out); the failures' are, as every
 * line outside input can repeat (log.h): a sink failing every hook of a
 * backlog must not fill the disk.
 *
 * Fatal: nothing; a store error fails the settles of the turn (their rows
 * stay as they were and are tried again) and is logged.
 */
#include "config.h"

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "clock.h"
#include "conf.h"
#include "dispatch/dispatch.h"
#include "dispatch/failstreak.h"
#include "ids.h"
#include "job.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "msg.h"
#include "netaddr.h"
#include "pipeline.h"
#include "pipeline_int.h"
#include "pipeline_jobfill.h"
#include "pipeline_logline.h"
#include "series.h"
#include "store/store.h"

#define PIPELINE_SWEEP_MAX	256	/* lanes per tenant visit */
/* Lines a second about failed attempts (deferred), and about dead letters
 * (bounced, expired): a sink that fails every hook of a backlog must not
 * fill the disk (log.h). */
#define PIPELINE_LOG_PER_SEC	20

/* An attempt's record as the attempt log gets it, beside its settle. */
struct pattempt {
	struct store_attempt	 a;		/* error, response set at
						 * the write */
	char			 error[JOB_DETAIL_MAX];
	char			*response;	/* malloc'd, or NULL */
};

/* A settle, copied out of the scheduler's call. */
struct psettle {
	struct dsettle		 s;
	enum settle_written	 how;		/* once flushed */
	struct store_row	 row;
	char			 reason[STORE_ERROR_MAX + 1];
	char			 last_error[STORE_ERROR_MAX + 1];
	char			 source[STORE_NAME_MAX + 1];
	int			 has_att;	/* an attempt made it */
	struct pattempt		 att;
	/* For its delivery log line: */
	unsigned char		 hook_id[UUID_LEN];	/* noted, if */
	uint64_t		 received_at;	/* 0: not noted */
	char			 trace[33];	/* "" unknown */
	int			 outcome;	/* made by an attempt's outcome */
	uint32_t		 code;		/* its code, 0 none */
	char			 detail[JOB_DETAIL_MAX];	/* its loggable
						 * detail */
	int			 last;		/* delivered: its hook's last
						 * row (every sink done) */
};

/* The attempt whose outcome the dispatch takes now, until its row's
 * settle takes it (pipeline_store_attempt). */
static struct {
	int			 armed;
	unsigned char		 key[STORE_ROWKEY_LEN];
	struct pattempt		 att;
}			 cur;

/* The outcome pipeline_store_outcome hands the dispatch, whose settle of
 * its row comes inside that call. */
static struct {
	uint64_t	 job;		/* 0: none */
	uint32_t	 code;
	const char	*detail;
}			 outcome_now;

static const unsigned char zero_trace[TRACE_ID_LEN];

static struct psettle	*settles;
static size_t		 nsettles, capsettles;
static uint64_t		 first_us;	/* the oldest settle's, mono */
static unsigned char	(*drops)[STORE_KEY_MAX + 2];
static size_t		 ndrops, capdrops;

/* Who hears of the settles (pipeline_on_settle). */
static struct {
	void	(*fn)(enum settle_kind, enum settle_written,
		    const unsigned char *, const struct store_row *, void *);
	void	*arg;
}			 listeners[PIPELINE_LISTENERS];
static int		 nlisteners;

static int	op_due_tenants(void *, int (*)(const char *, uint64_t, void *),
		    void *);
static int	op_due_scan(void *, const char *, uint64_t, uint64_t,
		    const unsigned char *,
		    int (*)(const unsigned char *, void *),
		    int (*)(const unsigned char *, const struct store_row *,
		    void *), void *);
static int	op_due_next(void *, const char *, uint64_t, uint64_t *);
static uint64_t	op_lane_members(void *);
static int	op_marked_tenants(void *, int (*)(const char *, void *),
		    void *);
static int	op_lane_sweep(void *, const char *, uint64_t);
static void	op_settle(void *, const struct dsettle *);
static int	settle_hook_cb(const struct store_hook_info *, void *);
static void	settle_log(const struct psettle *);
static void	pipeline_store_attempt(uint64_t, enum attempt_result, uint64_t,
		    uint64_t, uint32_t, const char *, const char *);
static void	pipeline_store_attempt_done(void);
static uint32_t	settle_sink(const struct psettle *);
static enum attempt_result outcome_disable(const struct poutcome *, char *,
		    size_t, uint32_t *, int *);
static void	settle_line(const struct psettle *, enum logline_status,
		    enum log_level, const char *, const struct store_hook_info *);

static struct log_limit	 attempt_log =
			    LOG_LIMIT_INIT("pipeline: deferred deliveries",
			    PIPELINE_LOG_PER_SEC);
static struct log_limit	 dead_log =
			    LOG_LIMIT_INIT("pipeline: bounced or expired "
			    "deliveries", PIPELINE_LOG_PER_SEC);
static double	op_random(void *);

void
pipeline_store_ops(struct dispatch_ops *ops)
{
	ops->due_tenants = op_due_tenants;
	ops->due_scan = op_due_scan;
	ops->due_next = op_due_next;
	ops->lane_members = op_lane_members;
	ops->marked_tenants = op_marked_tenants;
	ops->lane_sweep = op_lane_sweep;
	ops->settle = op_settle;
	ops->random = op_random;
}

void
pipeline_on_settle(void (*fn)(enum settle_kind, enum settle_written,
    const unsigned char *, const struct store_row *, void *), void *arg)
{
	if (nlisteners == PIPELINE_LISTENERS)
		fatalx("pipeline: more than %d settle listeners",
		    PIPELINE_LISTENERS);
	listeners[nlisteners].fn = fn;
	listeners[nlisteners++].arg = arg;
}

size_t
pipeline_store_pending(void)
{
	return nsettles;
}

uint64_t
pipeline_store_since_us(void)
{
	return nsettles > 0 ? first_us : 0;
}

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
		pipeline_arm();
	}
	return sc->cb(rowkey, row, sc->arg);
}

static int
scan_want_cb(const unsigned char *rowkey, void *arg)
{
	struct scan_ctx *sc = arg;

	if (pipeline_scan_below != 0 &&
	    store_rowkey_seq(rowkey) >= pipeline_scan_below)
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
const struct sink_conf *
pipeline_store_sink(struct drow *r, enum attempt_result *res, char *detail,
    size_t len)
{
	const struct source_conf *src;

	if (dispatch_bind(pipeline_disp, r, detail, len) == -1 ||
	    (src = conf_source(env->conf, r->row.source)) == NULL) {
		*res = ATTEMPT_UNBOUND;
		return NULL;
	}
	return &src->sinks[r->bound];
}

/*
 * r's hook into rec: 0, or -1 with the outcome the attempt must have
 * instead in *res and detail (the hook is gone, the store erred).
 */
int
pipeline_store_hook(struct drow *r, struct store_hook_rec *rec,
    enum attempt_result *res, char *detail, size_t len)
{
	int rc;

	if ((rc = store_hook_get(env->store, r->seq, rec)) == 1) {
		/* Noted for the delivery log lines: the hook may be gone
		 * by its settle. */
		memcpy(r->hook_id, rec->hook.id, UUID_LEN);
		r->received_at = rec->hook.received_at;
		memcpy(r->trace_id, rec->hook.trace, TRACE_ID_LEN);
		return 0;
	}
	if (rc == 0) {
		*res = ATTEMPT_PERMANENT;
		snprintf(detail, len, "hook %" PRIu64 " is gone", r->seq);
	} else {
		*res = ATTEMPT_STORE;
		snprintf(detail, len, "store: %s", store_strerror(env->store));
	}
	return -1;
}

/*
 * The job of r as a MSG_DELIVER_JOB in m: 0, or -1 with the outcome the
 * attempt must have instead in *res and detail (the hook is gone, the
 * store erred, the row's sink is gone).
 */
int
pipeline_store_job(struct drow *r, struct msg *m, enum attempt_result *res,
    char *detail, size_t len)
{
	const struct sink_conf *sk;
	struct store_hook_rec rec;
	struct job j;
	struct jobfill_ids ids;
	int rc;

	if ((sk = pipeline_store_sink(r, res, detail, len)) == NULL)
		return -1;
	memset(&rec, 0, sizeof(rec));
	if (pipeline_store_hook(r, &rec, res, detail, len) == -1)
		return -1;
	*res = ATTEMPT_ERROR;
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

static void
op_settle(void *arg, const struct dsettle *s)
{
	struct psettle *p;

	if (nsettles == 0)
		first_us = time_mono_us();
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
	/* The settle of the row whose attempt ended carries its record
	 * (a park of others on the way carries none). */
	if (cur.armed && memcmp(cur.key, s->key, STORE_ROWKEY_LEN) == 0) {
		p->has_att = 1;
		p->att = cur.att;
		cur.armed = 0;
		cur.att.response = NULL;
	}
	if (s->dr != NULL) {
		memcpy(p->hook_id, s->dr->hook_id, UUID_LEN);
		p->received_at = s->dr->received_at;
		if (memcmp(s->dr->trace_id, zero_trace, TRACE_ID_LEN) != 0)
			trace_id_hex(s->dr->trace_id, p->trace);
		if (outcome_now.job != 0 && s->dr->job == outcome_now.job) {
			p->outcome = 1;
			p->code = outcome_now.code;
			job_detail_loggable(outcome_now.detail, p->detail,
			    sizeof(p->detail));
		}
	}
	p->s.dr = NULL;
	pipeline_arm();
}

static void
pipeline_store_attempt(uint64_t job, enum attempt_result res,
    uint64_t started_at, uint64_t duration_ms, uint32_t status,
    const char *detail, const char *response)
{
	struct store_attempt *a = &cur.att.a;
	struct drow *r;
	uint8_t outcome;

	pipeline_store_attempt_done();
	switch (res) {
	case ATTEMPT_OK:
		outcome = STORE_ATTEMPT_OK;
		break;
	case ATTEMPT_DISABLE:
		outcome = STORE_ATTEMPT_PERMANENT;
		break;
	case ATTEMPT_PERMANENT:
		outcome = strncmp(detail, NETADDR_DENIED_PREFIX,
		    sizeof(NETADDR_DENIED_PREFIX) - 1) == 0 ?
		    STORE_ATTEMPT_EGRESS_DENIED : STORE_ATTEMPT_PERMANENT;
		break;
	case ATTEMPT_TIMEOUT:
		outcome = STORE_ATTEMPT_TIMEOUT;
		break;
	case ATTEMPT_ERROR:
	case ATTEMPT_PROXY:	/* its detail says proxy_error */
		outcome = STORE_ATTEMPT_ERROR;
		break;
	default:
		return;		/* no attempt reached a sink */
	}
	if (env->conf->attempts.max_per_row == 0 ||
	    (r = dispatch_job_row(pipeline_disp, job)) == NULL)
		return;
	memset(&cur.att, 0, sizeof(cur.att));
	memcpy(cur.key, r->key, STORE_ROWKEY_LEN);
	memcpy(a->id, r->hook_id, UUID_LEN);
	a->sink_index = r->row.sink_index;
	a->round = r->row.first_attempt;
	a->n = r->row.attempts + 1;
	a->module = r->row.module;
	a->outcome = outcome;
	a->status = status;
	a->started_at = started_at;
	a->duration_ms = duration_ms;
	snprintf(cur.att.error, sizeof(cur.att.error), "%s", detail);
	if (response != NULL && (cur.att.response = strdup(response)) ==
	    NULL)
		fatal("pipeline");
	cur.armed = 1;
}

void
pipeline_store_attempt_opened(void)
{
	if (cur.armed)
		cur.att.a.outcome = STORE_ATTEMPT_PARKED;
}

static void
pipeline_store_attempt_done(void)
{
	cur.armed = 0;
	free(cur.att.response);
	cur.att.response = NULL;
}

/*
 * The attempt record is staged (pipeline_store_attempt) before the
 * dispatch takes the outcome, whose settle of the row takes it (op_settle),
 * and dropped after, when no settle did.
 */
void
pipeline_store_outcome(const struct poutcome *o)
{
	uint64_t now = time_sched_ms();
	enum attempt_result res = o->res;
	char source[STORE_NAME_MAX + 1], why[64];
	uint32_t sink = 0;
	int later = 0;

	source[0] = '\0';
	if (o->attempt) {
		series_attempt(o->res == ATTEMPT_OK, o->code);
		res = outcome_disable(o, source, sizeof(source), &sink,
		    &later);
		pipeline_store_attempt(o->job, res, o->started_at,
		    o->duration_ms, o->code, o->detail, o->response);
	}
	/* A sink that asks for time holds its key (dispatch_rate.c). */
	if (res == ATTEMPT_ERROR && o->retry_after_ms > 0 &&
	    (o->code == 429 || o->code == 503))
		dispatch_throttle(pipeline_disp, o->job, o->retry_after_ms, now);
	outcome_now.job = o->job;
	outcome_now.code = o->code;
	outcome_now.detail = o->detail;
	dispatch_outcome(pipeline_disp, o->job, res, o->retry_after_ms,
	    o->detail, now);
	outcome_now.job = 0;
	pipeline_store_attempt_done();
	if (later > 0) {
		snprintf(why, sizeof(why), "disable_after_s: %d of failures",
		    later);
		(void)pipeline_disable_fn(source, sink, why);
	}
}

/*
 * Whether o's attempt disables its sink key (ankusad(8), DELIVERIES):
 * an answer in the sink's disable_on disables it now, before the
 * dispatch takes the outcome (ATTEMPT_DISABLE: the row is held with the
 * others, not dead-lettered), and only once the disable is stored; a
 * failure past the sink's disable_after_s streak (failstreak.c) after
 * the outcome (*later: its seconds), the row settling as it would have.
 * The key into source and *sink.  The result the dispatch is to take.
 */
static enum attempt_result
outcome_disable(const struct poutcome *o, char *source, size_t len,
    uint32_t *sink, int *later)
{
	const struct source_conf *src;
	const struct sink_conf *sk;
	struct drow *r;
	char why[64];

	if (pipeline_disable_fn == NULL ||
	    (r = dispatch_job_row(pipeline_disp, o->job)) == NULL ||
	    (src = conf_source(env->conf, r->row.source)) == NULL ||
	    r->bound >= (uint32_t)src->nsinks)
		return o->res;
	sk = &src->sinks[r->bound];
	snprintf(source, len, "%s", r->row.source);
	*sink = r->row.sink_index;
	if (o->res == ATTEMPT_OK) {
		failstreak_ok(source, *sink);
		return o->res;
	}
	if (o->res != ATTEMPT_ERROR && o->res != ATTEMPT_TIMEOUT &&
	    o->res != ATTEMPT_PERMANENT)
		return o->res;
	if (o->code != 0 && conf_disable_status(sk, o->code)) {
		snprintf(why, sizeof(why), "disable_on: %u", o->code);
		failstreak_ok(source, *sink);
		if (pipeline_disable_fn(source, *sink, why) == 0)
			return ATTEMPT_DISABLE;
		return o->res;
	}
	if (failstreak_fail(source, *sink, time_wall_ms(),
	    sk->disable_after_s * 1000))
		*later = (int)sk->disable_after_s;
	return o->res;
}

static int
settle_hook_cb(const struct store_hook_info *h, void *arg)
{
	*(struct store_hook_info *)arg = *h;
	return 1;
}

/* The sink index of p's row, from its key (seq, then sink). */
static uint32_t
settle_sink(const struct psettle *p)
{
	return (uint32_t)p->s.key[8] << 24 | (uint32_t)p->s.key[9] << 16 |
	    (uint32_t)p->s.key[10] << 8 | p->s.key[11];
}

/*
 * The delivery log lines of a settle once it is written (log.deliveries
 * says which): sent (info) and, when the row was its hook's last, the
 * hook's delivered line; deferred, bounced or expired (warnings, limited);
 * and the warning of an orphan dropped.  A park or a pause made no
 * attempt: no line (the breaker's line or the operator's command says why
 * the row waits).  A row whose hook was not noted (it failed before an
 * attempt: its sink gone, a dead_letter_source) has its hook's head read
 * from the store, only for a line the limit lets out.
 */
static void
settle_log(const struct psettle *p)
{
	const char *ld = env->conf->log_deliveries;
	struct store_hook_info h;
	uint64_t seq = store_rowkey_seq(p->s.key);
	char id[UUID_STRLEN + 32];
	enum logline_status st;
	uint32_t sink;
	int all = ld == NULL || strcmp(ld, "all") == 0;

	if (ld != NULL && strcmp(ld, "none") == 0 &&
	    p->how != SETTLED_DROPPED)
		return;
	if (p->s.kind == SETTLE_DELIVERED) {
		if (!all)
			return;
		settle_line(p, LOGLINE_SENT, LOG_LEVEL_INFO, "", NULL);
		if (p->last)
			settle_line(p, LOGLINE_DELIVERED, LOG_LEVEL_INFO, "",
			    NULL);
		return;
	}
	if ((p->s.kind == SETTLE_RESCHEDULE && !p->s.retry) ||
	    !log_limit_take(p->s.kind == SETTLE_DEAD ? &dead_log :
	    &attempt_log, LOG_LEVEL_WARN))
		return;
	memset(&h, 0, sizeof(h));
	if (p->received_at == 0 && (seq == 0 || store_hooks_list(env->store,
	    NULL, seq - 1, 1, settle_hook_cb, &h) == -1 || h.seq != seq)) {
		snprintf(h.id, sizeof(h.id), "-");
		snprintf(h.tenant, sizeof(h.tenant), "?");
	}
	if (p->s.kind == SETTLE_RESCHEDULE) {
		settle_line(p, LOGLINE_DEFERRED, LOG_LEVEL_WARN,
		    p->row.last_error, &h);
		return;
	}
	if (p->how != SETTLED_DROPPED) {
		st = p->s.expired ? LOGLINE_EXPIRED : LOGLINE_BOUNCED;
		settle_line(p, st, LOG_LEVEL_WARN, p->reason, &h);
		return;
	}
	sink = settle_sink(p);
	if (p->received_at != 0)
		uuid_format(p->hook_id, id);
	else if (h.seq == seq && seq != 0)
		snprintf(id, sizeof(id), "%s", h.id);
	else
		snprintf(id, sizeof(id), "seq %" PRIu64, seq);
	log_warnx("pipeline: hook %s sink %s/%s#%u (%s): dropped: its "
	    "hook is gone", id, p->row.tenant, p->source, sink,
	    dispatch_module_name(p->s.module));
}

/*
 * One delivery line of p with status st at level l: why is its reason when
 * no attempt's outcome made the settle (a dead letter's reason, a row's
 * last error); h the hook's head read from the store when p's hook was not
 * noted.
 */
static void
settle_line(const struct psettle *p, enum logline_status st,
    enum log_level l, const char *why, const struct store_hook_info *h)
{
	char line[LOGLINE_MAX], id[UUID_STRLEN + 1], reason[JOB_DETAIL_MAX];
	struct logline ll;
	uint64_t now = time_wall_ms(), at;

	memset(&ll, 0, sizeof(ll));
	if (p->received_at != 0) {
		uuid_format(p->hook_id, id);
		ll.hook = id;
		at = p->received_at;
	} else {
		ll.hook = h != NULL ? h->id : "-";
		at = h != NULL ? h->received_at : 0;
	}
	ll.source = p->row.source;
	ll.sink = settle_sink(p);
	ll.module = dispatch_module_name(p->row.module);
	/* A delivered row is as it was claimed: the attempt that delivered
	 * it is not counted in it. */
	ll.attempt = p->s.kind == SETTLE_DELIVERED ? p->row.attempts + 1 :
	    p->s.kind == SETTLE_DEAD ? p->s.attempts : p->row.attempts;
	ll.status = st;
	ll.delay_ms = at != 0 && now > at ? now - at : 0;
	ll.code = p->code;
	ll.trace = p->trace;
	ll.reason = p->outcome ? p->detail : job_detail_loggable(why, reason,
	    sizeof(reason));
	log_fields(l, logline_format(line, &ll, log_json()));
}

/* Write the turn's settles in one transaction, then end their claims: 0,
 * or -1 when the store refused them (their rows stay as they were). */
int
pipeline_store_flush(void)
{
	struct store_batch *sb;
	struct psettle *p;
	size_t i, n = nsettles;
	int k, ok = 1, rc = 0;

	if (nsettles == 0 && ndrops == 0)
		return 0;
	if ((sb = store_batch_begin(env->store)) == NULL)
		ok = 0;
	for (i = 0; ok && i < ndrops; i++)
		if (store_batch_due_drop(sb, drops[i] + 2,
		    (drops[i][0] << 8) | drops[i][1]) == -1)
			ok = 0;
	for (i = 0; ok && i < n; i++) {
		p = &settles[i];
		p->how = SETTLED_WRITTEN;
		switch (p->s.kind) {
		case SETTLE_DELIVERED:
			rc = store_batch_row_delivered(sb, p->s.key, &p->row,
			    &p->last);
			break;
		case SETTLE_RESCHEDULE:
			rc = store_batch_row_reschedule(sb, p->s.key, &p->row);
			break;
		case SETTLE_DEAD:
			/* 2: an orphan, dropped. */
			if ((rc = store_batch_row_dead(sb, p->s.key,
			    p->s.dead_at, p->reason, p->last_error,
			    p->s.attempts)) == 2)
				p->how = SETTLED_DROPPED;
			break;
		}
		if (rc == -1)
			ok = 0;
		/* Its attempt, with the settle that found its row. */
		if (ok && rc == 1 && p->has_att) {
			p->att.a.error = p->att.error;
			p->att.a.response = p->att.response != NULL ?
			    p->att.response : "";
			if (store_batch_attempt_put(sb, &p->att.a,
			    env->conf->attempts.max_per_row) == -1)
				ok = 0;
		}
	}
	if (!ok) {
		if (sb != NULL)
			store_batch_abort(sb);
	} else if (store_batch_commit_lazy(sb) == -1)
		ok = 0;
	if (!ok) {
		log_warnx("pipeline: settling %zu rows failed: %s; they will "
		    "be tried again", n, store_strerror(env->store));
		master_store_check();
	}
	ndrops = 0;
	/* The turn's delivery lines in few writes, not one a line. */
	log_hold();
	for (i = 0; i < n; i++) {
		p = &settles[i];
		free(p->att.response);
		p->att.response = NULL;
		if (!ok)
			p->how = SETTLED_FAILED;
		if (p->how == SETTLED_WRITTEN && p->s.kind == SETTLE_DEAD) {
			metrics_add("ankusa_dispatch_dead_lettered_total", 1,
			    "source_id", p->source, "sink",
			    dispatch_module_name(p->s.module), NULL);
			series_add(SERIES_DEAD, 1);
		}
		if (ok)
			settle_log(p);
		for (k = 0; ok && k < nlisteners; k++)
			listeners[k].fn(p->s.kind, p->how, p->s.key, &p->row,
			    listeners[k].arg);
		dispatch_settled(pipeline_disp, p->s.key, p->how);
	}
	log_release();
	nsettles = 0;
	return ok ? 0 : -1;
}
