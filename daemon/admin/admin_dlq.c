/* SPDX-License-Identifier: ISC */
/*
 * admin_dlq.c: the operator's dead letters, hooks and quarantine purges, and
 * the dead letters' upkeep; see admin_dlq.h.
 *
 * A job is a listing or a purge; the first job in line takes one step
 * from a zero timer and goes to the back, so jobs share the loop's turns
 * with each other and with everything else.  A step reads at most
 * DLQ_STEP_VISITS dead entries (DLQ_STEP_COUNT when it only counts keys)
 * and a purge deletes at most DLQ_STEP_PURGE of them in one batch.
 *
 * The upkeep timer runs every DLQ_UPKEEP_MS: the warning of
 * queue.dlq.warn_rows from the store's dead counter, and, when
 * queue.dlq.max_age_s is set and the oldest dead letter is older, a purge
 * job of everything dead before the cut (one at a time).
 *
 * Fatal: nothing; a store error ends a job with 503.
 */
#include "config.h"

#include <sys/queue.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include <openssl/evp.h>

#include "admin_api.h"
#include "admin_dlq.h"
#include "clock.h"
#include "conf.h"
#include "dispatch/dispatch.h"
#include "dispatch/pause.h"
#include "ids.h"
#include "log.h"
#include "master.h"
#include "notice.h"
#include "quarantine.h"
#include "store/store.h"
#include "utf8.h"

#define DLQ_STEP_VISITS	512	/* dead entries read a step, with rows */
#define DLQ_STEP_COUNT	4096	/* dead keys counted a step, keys alone */
#define DLQ_STEP_PURGE	256	/* dead letters deleted a step */
#define DLQ_UPKEEP_MS	1000
#define DLQ_BODY_SHOW	65536	/* a body's bytes shown at most */

enum job_kind {
	JOB_LIST = 1,
	JOB_PURGE,
	JOB_QPURGE,
	JOB_QLIST,
};

struct dlq_job {
	TAILQ_ENTRY(dlq_job)	 entry;
	enum job_kind		 kind;
	struct dlq_filter	 f;
	struct store_dead_walk	 w;		/* the list's or purge's */
	struct store_dead_walk	 cw;		/* the count's */
	int			 listed;	/* the list is complete */
	int			 counted;	/* the count is */
	json_t			*entries;
	uint64_t		 total;
	unsigned char		 last[STORE_DEADKEY_LEN];	/* listed */
	int			 more;		/* a match after last */
	/* purges */
	uint64_t		 deleted, bytes;
	unsigned char		 (*keys)[STORE_DEADKEY_LEN];
	size_t			 nkeys;
	uint64_t		 qcursor;	/* the pen's: a seq */
	uint64_t		 qlast;		/* listed */
	uint64_t		 qread;		/* read this step */
	char			 qid[UUID_STRLEN + 1];
	int			 age;		/* the upkeep's own */
	void			(*done)(void *, int, json_t *);
	void			*arg;
};

static TAILQ_HEAD(, dlq_job) jobs = TAILQ_HEAD_INITIALIZER(jobs);
static struct dlq_ops	 ops;
static struct event	*ev_step, *ev_upkeep;
static int		 over_warn;
static int		 age_running;

static void	step_cb(evutil_socket_t, short, void *);
static void	upkeep_cb(evutil_socket_t, short, void *);
static void	step_arm(void);
static struct dlq_job *job_new(enum job_kind, const struct dlq_filter *,
		    void (*)(void *, int, json_t *), void *);
static struct dlq_job *job_start(struct dlq_job *);
static void	job_end(struct dlq_job *, int, json_t *);
static int	job_step(struct dlq_job *);
static int	list_step(struct dlq_job *);
static int	purge_step(struct dlq_job *);
static int	purge_hook(struct dlq_job *);
static int	purge_end(struct dlq_job *, int);
static int	qpurge_step(struct dlq_job *);
static int	qlist_step(struct dlq_job *);
static json_t	*entry_json(const struct store_dead_info *);
static json_t	*opt_time(uint64_t);
static json_t	*opt_str(const char *);
static void	 age_done(void *, int, json_t *);

void
dlq_init(const struct dlq_ops *o)
{
	struct timeval tv = { DLQ_UPKEEP_MS / 1000,
	    (DLQ_UPKEEP_MS % 1000) * 1000 };

	ops = *o;
	if ((ev_step = evtimer_new(env->base, step_cb, NULL)) == NULL ||
	    (ev_upkeep = event_new(env->base, -1, EV_PERSIST, upkeep_cb,
	    NULL)) == NULL)
		fatalx("dlq: evtimer_new");
	event_add(ev_upkeep, &tv);
}

int
dlq_over_warn(void)
{
	return over_warn;
}

json_t *
dlq_store_error(void)
{
	json_t *o = json_pack("{s:s}", "error", "store_unavailable");

	json_object_set_new(o, "message", admin_str(store_strerror(
	    env->store)));
	master_store_check();
	return o;
}

static json_t *
opt_time(uint64_t ms)
{
	return ms != 0 ? json_integer((json_int_t)ms) : json_null();
}

static json_t *
opt_str(const char *s)
{
	return s != NULL && s[0] != '\0' ? admin_str(s) : json_null();
}

/*
 * The jobs.
 */

static struct dlq_job *
job_new(enum job_kind kind, const struct dlq_filter *f,
    void (*done)(void *, int, json_t *), void *arg)
{
	struct dlq_job *j;

	if ((j = calloc(1, sizeof(*j))) == NULL)
		fatal("dlq");
	j->kind = kind;
	if (f != NULL)
		j->f = *f;
	j->done = done;
	j->arg = arg;
	return j;
}

/* Its first step now: NULL when that ended it. */
static struct dlq_job *
job_start(struct dlq_job *j)
{
	TAILQ_INSERT_TAIL(&jobs, j, entry);
	if (job_step(j) != 1)
		return NULL;
	step_arm();
	return j;
}

static void
step_arm(void)
{
	struct timeval tv = { 0, 0 };

	if (!TAILQ_EMPTY(&jobs) && !evtimer_pending(ev_step, NULL))
		evtimer_add(ev_step, &tv);
}

static void
step_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct dlq_job *j;

	if ((j = TAILQ_FIRST(&jobs)) == NULL)
		return;
	if (job_step(j) == 1) {
		TAILQ_REMOVE(&jobs, j, entry);
		TAILQ_INSERT_TAIL(&jobs, j, entry);
	}
	step_arm();
}

/* 1 more to do, 0 it ended (answered). */
static int
job_step(struct dlq_job *j)
{
	switch (j->kind) {
	case JOB_LIST:
		return list_step(j);
	case JOB_PURGE:
		return purge_step(j);
	case JOB_QPURGE:
		return qpurge_step(j);
	case JOB_QLIST:
		return qlist_step(j);
	}
	fatalx("dlq: job of kind %d", j->kind);
}

static void
job_end(struct dlq_job *j, int status, json_t *answer)
{
	TAILQ_REMOVE(&jobs, j, entry);
	if (j->done != NULL)
		j->done(j->arg, status, answer);
	else
		json_decref(answer);
	json_decref(j->entries);
	free(j->keys);
	free(j);
}

void
dlq_detach(struct dlq_job *j)
{
	j->done = NULL;
	/* A listing is nobody's now; a purge stops after its step. */
	job_end(j, 0, NULL);
}

/*
 * Listing: the page first (from the cursor, rows and hooks read), then
 * the count over the whole range (keys alone without a source).
 */

static int
list_fn(const struct store_dead_info *di, void *arg)
{
	struct dlq_job *j = arg;

	if (json_array_size(j->entries) == j->f.limit) {
		j->more = 1;
		return 1;
	}
	json_array_append_new(j->entries, entry_json(di));
	memcpy(j->last, di->deadkey, STORE_DEADKEY_LEN);
	return 0;
}

static int
count_fn(const struct store_dead_info *di, void *arg)
{
	struct dlq_job *j = arg;

	j->total++;
	return 0;
}

static json_t *
entry_json(const struct store_dead_info *di)
{
	return json_pack("{s:o, s:o, s:o, s:i, s:s, s:I, s:o, s:I, s:o, s:i, "
	    "s:o, s:I, s:o}",
	    "id", opt_str(di->hook_id),
	    "source_id", opt_str(di->source),
	    "tenant_id", opt_str(di->tenant),
	    "sink", (int)di->sink_index,
	    "module", di->module != 0 ? dispatch_module_name(di->module) : "",
	    "seq", (json_int_t)di->seq,
	    "received_at", opt_time(di->received_at),
	    "dead_lettered_at", (json_int_t)di->dead_at,
	    "reason", admin_str(di->reason),
	    "attempts", (int)di->attempts,
	    "last_error", admin_str(di->last_error),
	    "size", (json_int_t)di->size,
	    "content_type", opt_str(di->content_type));
}

struct dlq_job *
dlq_list(const struct dlq_filter *f, void (*done)(void *, int, json_t *),
    void *arg)
{
	struct store_counts c;
	struct dlq_job *j = job_new(JOB_LIST, f, done, arg);

	j->entries = json_array();
	j->w.source = j->f.source[0] != '\0' ? j->f.source : NULL;
	j->w.since_ms = j->f.since;
	j->w.until_ms = j->f.until;
	j->w.visits = DLQ_STEP_VISITS;
	j->w.reads = STORE_DEAD_READ_ROW | STORE_DEAD_READ_HOOK;
	if (j->f.has_after) {
		memcpy(j->w.at, j->f.after, STORE_DEADKEY_LEN);
		j->w.have_at = 1;
	}
	j->cw = j->w;
	j->cw.have_at = 0;
	j->cw.reads = 0;
	j->cw.visits = j->cw.source != NULL ? DLQ_STEP_VISITS :
	    DLQ_STEP_COUNT;
	/* No filter: the store's own counter. */
	if (j->w.source == NULL && j->f.since == 0 &&
	    j->f.until == UINT64_MAX && store_counts(env->store, &c) == 0) {
		j->total = c.dead;
		j->counted = 1;
	}
	return job_start(j);
}

static int
list_step(struct dlq_job *j)
{
	json_t *o;

	if (!j->listed) {
		if (store_dead_walk(env->store, &j->w, list_fn, j) == -1)
			goto fail;
		if (j->more || j->w.end)
			j->listed = 1;
		return 1;
	}
	if (!j->counted) {
		if (store_dead_walk(env->store, &j->cw, count_fn, j) == -1)
			goto fail;
		if (!j->cw.end)
			return 1;
		j->counted = 1;
	}
	o = json_pack("{s:I, s:O}", "total", (json_int_t)j->total, "entries",
	    j->entries);
	json_object_set_new(o, "next_cursor", j->more ?
	    admin_cursor(j->last, STORE_DEADKEY_LEN) : json_null());
	job_end(j, 200, o);
	return 0;
 fail:
	job_end(j, 503, dlq_store_error());
	return 0;
}

/*
 * Purging: the keys of a step first (no cursor held), then their deletes
 * in one batch, synced.
 */

static int
key_fn(const struct store_dead_info *di, void *arg)
{
	struct dlq_job *j = arg;

	memcpy(j->keys[j->nkeys++], di->deadkey, STORE_DEADKEY_LEN);
	return j->nkeys == DLQ_STEP_PURGE;
}

struct dlq_job *
dlq_purge(const struct dlq_filter *f, void (*done)(void *, int, json_t *),
    void *arg)
{
	struct dlq_job *j = job_new(JOB_PURGE, f, done, arg);

	if ((j->keys = calloc(DLQ_STEP_PURGE, STORE_DEADKEY_LEN)) == NULL)
		fatal("dlq");
	j->w.source = j->f.source[0] != '\0' ? j->f.source : NULL;
	j->w.since_ms = j->f.since;
	j->w.until_ms = j->f.until;
	j->w.visits = DLQ_STEP_VISITS;
	return job_start(j);
}

/* The keys of the step's dead letters deleted in one batch: 0, -1. */
static int
purge_keys(struct dlq_job *j)
{
	struct store_batch *sb;
	size_t i;
	int ret;

	if (j->nkeys == 0)
		return 0;
	if ((sb = store_batch_begin(env->store)) == NULL)
		return -1;
	for (i = 0; i < j->nkeys; i++) {
		if ((ret = store_batch_dead_del(sb, j->keys[i],
		    &j->bytes)) == -1) {
			store_batch_abort(sb);
			return -1;
		}
		j->deleted += ret;
	}
	j->nkeys = 0;
	return store_batch_commit(sb);
}

/* A purge's answer: what it deleted, or (rc -1) the store's error.  0. */
static int
purge_end(struct dlq_job *j, int rc)
{
	if (rc == -1)
		job_end(j, 503, dlq_store_error());
	else
		job_end(j, 200, json_pack("{s:I, s:I}", "deleted",
		    (json_int_t)j->deleted, "bytes", (json_int_t)j->bytes));
	return 0;
}

static int
purge_step(struct dlq_job *j)
{
	int end;

	if (j->f.has_id)
		return purge_hook(j);
	j->nkeys = 0;
	if (store_dead_walk(env->store, &j->w, key_fn, j) == -1)
		goto fail;
	end = j->w.end && j->nkeys < DLQ_STEP_PURGE;
	if (purge_keys(j) == -1)
		goto fail;
	if (!end && j->done != NULL)
		return 1;
	return purge_end(j, 0);
 fail:
	return purge_end(j, -1);
}

static int
hook_dead_fn(const unsigned char *rk, const struct store_row *r,
    const struct store_dead_info *di, void *arg)
{
	struct dlq_job *j = arg;

	if (di == NULL || di->dead_at < j->f.since ||
	    di->dead_at > j->f.until || (j->f.source[0] != '\0' &&
	    strcmp(j->f.source, r->source) != 0) ||
	    j->nkeys == DLQ_STEP_PURGE)
		return 0;
	memcpy(j->keys[j->nkeys++], di->deadkey, STORE_DEADKEY_LEN);
	return 0;
}

/* One hook's dead letters: its rows, in one step. */
static int
purge_hook(struct dlq_job *j)
{
	uint64_t seq;
	int ret;

	j->nkeys = 0;
	if ((ret = store_hook_seq(env->store, j->f.id, &seq)) == -1)
		goto fail;
	if (ret == 1 && (store_hook_rows(env->store, seq, hook_dead_fn,
	    j) == -1 || purge_keys(j) == -1))
		goto fail;
	return purge_end(j, 0);
 fail:
	return purge_end(j, -1);
}

struct dlq_job *
dlq_quarantine_purge(const char *source, const char *id,
    void (*done)(void *, int, json_t *), void *arg)
{
	struct dlq_job *j = job_new(JOB_QPURGE, NULL, done, arg);

	snprintf(j->f.source, sizeof(j->f.source), "%s",
	    source != NULL ? source : "");
	snprintf(j->qid, sizeof(j->qid), "%s", id != NULL ? id : "");
	return job_start(j);
}

static int
qpurge_step(struct dlq_job *j)
{
	char err[512];
	json_t *o;
	int rc;

	rc = quarantine_purge_step(j->f.source[0] != '\0' ? j->f.source :
	    NULL, j->qid[0] != '\0' ? j->qid : NULL, &j->qcursor, &j->deleted,
	    &j->bytes, err, sizeof(err));
	if (rc == 1 && j->done != NULL)
		return 1;
	if (rc == -1) {
		o = json_pack("{s:s}", "error", "store_unavailable");
		json_object_set_new(o, "message", admin_str(err));
		master_store_check();
		job_end(j, 503, o);
		return 0;
	}
	return purge_end(j, 0);
}

/*
 * The pen's listing: DLQ_STEP_VISITS held hooks read a step, of every
 * source, those of the one asked for kept.
 */

struct dlq_job *
dlq_quarantine_list(const struct dlq_filter *f,
    void (*done)(void *, int, json_t *), void *arg)
{
	struct dlq_job *j = job_new(JOB_QLIST, f, done, arg);

	j->qcursor = j->f.after_seq;
	j->entries = json_array();
	return job_start(j);
}

static int
qlist_fn(const struct store_quarantine_info *q, void *arg)
{
	struct dlq_job *j = arg;

	j->qread++;
	if (j->f.source[0] != '\0' && strcmp(j->f.source, q->source) != 0) {
		j->qcursor = q->seq;
		return 0;
	}
	if (json_array_size(j->entries) == j->f.limit) {
		j->more = 1;
		return 1;
	}
	j->qcursor = j->qlast = q->seq;
	json_array_append_new(j->entries, json_pack("{s:s, s:I, s:o, s:o, "
	    "s:I, s:I, s:o, s:o}", "id", q->id, "seq", (json_int_t)q->seq,
	    "tenant_id", admin_str(q->tenant), "source_id",
	    admin_str(q->source), "received_at", (json_int_t)q->received_at,
	    "size", (json_int_t)q->size, "reason", admin_str(q->reason),
	    "event_type", opt_str(q->event_type)));
	return 0;
}

static int
qlist_step(struct dlq_job *j)
{
	uint64_t bytes, hooks;
	json_t *o;

	j->qread = 0;
	if (store_quarantine_list(env->store, NULL, j->qcursor,
	    DLQ_STEP_VISITS, qlist_fn, j) == -1) {
		job_end(j, 503, dlq_store_error());
		return 0;
	}
	if (!j->more && j->qread == DLQ_STEP_VISITS)
		return 1;
	(void)store_quarantine_usage(env->store, &bytes, &hooks);
	o = json_pack("{s:O, s:I, s:I}", "entries", j->entries, "held",
	    (json_int_t)hooks, "bytes", (json_int_t)bytes);
	json_object_set_new(o, "next_cursor", j->more ?
	    json_sprintf("%" PRIu64, j->qlast) : json_null());
	job_end(j, 200, o);
	return 0;
}

/*
 * One hook.
 */

static const char *
state_name(uint8_t state)
{
	switch (state) {
	case STORE_ROW_DUE:
		return "due";
	case STORE_ROW_MEMBER:
		return "member";
	case STORE_ROW_HEAD:
		return "head";
	case STORE_ROW_PARKED:
		return "parked";
	case STORE_ROW_DEAD:
		return "dead";
	}
	return "unknown";
}

static int
row_json_fn(const unsigned char *rk, const struct store_row *r,
    const struct store_dead_info *di, void *arg)
{
	static const unsigned char none[UUID_LEN];
	char rid[UUID_STRLEN + 1];
	json_t *rows = arg, *o;
	const char *why = NULL;

	/* A row set aside by a pause is due at no time: "paused", due null
	 * (its due time is a mark, STORE_DUE_PAUSED); "disabled" with the
	 * reason when the daemon disabled its key. */
	if (r->due == STORE_DUE_PAUSED &&
	    (why = pause_reason(r->source, r->sink_index)) != NULL &&
	    why[0] == '\0')
		why = NULL;
	o = json_pack("{s:i, s:s, s:s, s:i, s:o, s:o, s:o}",
	    "sink", (int)r->sink_index,
	    "module", dispatch_module_name(r->module),
	    "state", why != NULL ? "disabled" : r->due == STORE_DUE_PAUSED ?
	    "paused" : state_name(r->state),
	    "attempts", (int)r->attempts,
	    "first_attempt", opt_time(r->first_attempt),
	    "due", r->state == STORE_ROW_DEAD ||
	    r->state == STORE_ROW_MEMBER || r->due == STORE_DUE_PAUSED ?
	    json_null() : opt_time(r->due),
	    "last_error", opt_str(r->last_error));
	if (why != NULL)
		json_object_set_new(o, "disabled_reason", json_string(why));
	if (r->state == STORE_ROW_DEAD) {
		json_object_set_new(o, "dead_reason", di != NULL ?
		    admin_str(di->reason) : json_null());
		json_object_set_new(o, "dead_lettered_at", di != NULL ?
		    json_integer((json_int_t)di->dead_at) : json_null());
	}
	if (memcmp(r->replay_id, none, UUID_LEN) != 0) {
		uuid_format(r->replay_id, rid);
		json_object_set_new(o, "replay_id", json_string(rid));
	} else
		json_object_set_new(o, "replay_id", json_null());
	json_array_append_new(rows, o);
	return 0;
}

/* A kept delivery: the row it was, delivered, or the delivery before a
 * live row of the same sink (a replay's). */
static int
delivered_json_fn(const struct store_delivered *d, void *arg)
{
	static const unsigned char none[UUID_LEN];
	char rid[UUID_STRLEN + 1];
	json_t *rows = arg, *o, *at;
	size_t i;

	at = json_integer((json_int_t)d->delivered_at);
	for (i = 0; i < json_array_size(rows); i++) {
		o = json_array_get(rows, i);
		if (json_integer_value(json_object_get(o, "sink")) ==
		    (json_int_t)d->sink) {
			json_object_set_new(o, "delivered_at", at);
			return 0;
		}
	}
	if (memcmp(d->replay_id, none, UUID_LEN) != 0)
		uuid_format(d->replay_id, rid);
	o = json_pack("{s:i, s:s, s:s, s:o, s:o, s:o, s:o, s:o}",
	    "sink", (int)d->sink,
	    "module", dispatch_module_name(d->module),
	    "state", "delivered",
	    "first_attempt", json_null(),
	    "due", json_null(),
	    "last_error", json_null(),
	    "delivered_at", at,
	    "replay_id", memcmp(d->replay_id, none, UUID_LEN) != 0 ?
	    json_string(rid) : json_null());
	/* In sink order, among the live rows. */
	for (i = 0; i < json_array_size(rows); i++)
		if (json_integer_value(json_object_get(json_array_get(rows, i),
		    "sink")) > (json_int_t)d->sink)
			break;
	json_array_insert_new(rows, i, o);
	return 0;
}

/* The hook's stored headers (the ones its source forwards) as
 * [{"name","value"}]: the edge takes only visible ASCII in them, and
 * admin_str cleans anything else a record might hold. */
static json_t *
headers_json(const struct store_hook *h)
{
	json_t *a = json_array();
	int i;

	for (i = 0; i < h->nheaders; i++)
		json_array_append_new(a, json_pack("{s:o, s:o}",
		    "name", admin_str(h->headers[i].name),
		    "value", admin_str(h->headers[i].value)));
	return a;
}

/*
 * The body of hook seq into o: "body" (UTF-8 as it is, else base64 with
 * "body_encoding":"base64"), cut at DLQ_BODY_SHOW bytes of the body (a
 * UTF-8 body between two characters) with "body_truncated":true, and
 * "headers", the ones stored with it.  0, or -1 on a store error.
 */
static int
body_json(uint64_t seq, json_t *o)
{
	struct store_hook_rec rec;
	const unsigned char *p;
	unsigned char *enc;
	size_t n;
	int ret, text;

	if ((ret = store_hook_get(env->store, seq, &rec)) != 1)
		return ret == 0 ? 0 : -1;
	json_object_set_new(o, "headers", headers_json(&rec.hook));
	p = rec.hook.body;
	n = rec.hook.body_len;
	if (rec.claim_ref != NULL && rec.claim_ref[0] != '\0' && n == 0) {
		/* Checked in: the claim store has it. */
		json_object_set_new(o, "body", json_null());
		json_object_set_new(o, "body_encoding", json_null());
		json_object_set_new(o, "body_truncated", json_false());
		store_hook_rec_free(&rec);
		return 0;
	}
	text = utf8_valid((const char *)p, n);
	json_object_set_new(o, "body_truncated", json_boolean(n >
	    DLQ_BODY_SHOW));
	if (n > DLQ_BODY_SHOW) {
		n = DLQ_BODY_SHOW;
		/* Not into a character: back to its first byte. */
		while (text && n > 0 && (p[n] & 0xc0) == 0x80)
			n--;
	}
	if (text) {
		json_object_set_new(o, "body", json_stringn((const char *)p,
		    n));
		json_object_set_new(o, "body_encoding", json_string("utf8"));
	} else {
		if ((enc = malloc(4 * ((n + 2) / 3) + 1)) == NULL)
			fatal("dlq");
		EVP_EncodeBlock(enc, p, (int)n);
		json_object_set_new(o, "body", json_string((char *)enc));
		json_object_set_new(o, "body_encoding",
		    json_string("base64"));
		free(enc);
	}
	store_hook_rec_free(&rec);
	return 0;
}

int
dlq_hook_show(const unsigned char id[UUID_LEN], int body, json_t **out)
{
	struct store_hook_rec rec;
	char ids[UUID_STRLEN + 1];
	uint64_t seq;
	json_t *rows;
	int ret;

	if ((ret = store_hook_seq(env->store, id, &seq)) == 1)
		ret = store_hook_head(env->store, seq, 0, &rec);
	if (ret == -1) {
		*out = dlq_store_error();
		return 503;
	}
	if (ret == 0) {
		*out = json_pack("{s:s}", "error", "not_found");
		return 404;
	}
	rows = json_array();
	if (store_hook_rows(env->store, seq, row_json_fn, rows) == -1 ||
	    store_hook_delivered(env->store, seq, delivered_json_fn,
	    rows) == -1) {
		store_hook_rec_free(&rec);
		json_decref(rows);
		*out = dlq_store_error();
		return 503;
	}
	uuid_format(rec.hook.id, ids);
	*out = json_pack("{s:s, s:I, s:o, s:o, s:I, s:I, s:o, s:b, s:o, "
	    "s:o, s:o, s:b, s:o}",
	    "id", ids,
	    "seq", (json_int_t)seq,
	    "tenant_id", admin_str(rec.hook.tenant),
	    "source_id", admin_str(rec.hook.source),
	    "received_at", (json_int_t)rec.hook.received_at,
	    "size", (json_int_t)rec.body_size,
	    "content_type", opt_str(rec.hook.content_type),
	    "flagged", rec.hook.flagged,
	    "dedupe_key", opt_str(rec.hook.dedupe_key),
	    "claim_ref", opt_str(rec.claim_ref),
	    "event_type", opt_str(rec.hook.event_type),
	    "kept", rec.kept,
	    "rows", rows);
	store_hook_rec_free(&rec);
	if (body && body_json(seq, *out) == -1) {
		json_decref(*out);
		*out = dlq_store_error();
		return 503;
	}
	return 200;
}

int
dlq_hook_delete(const unsigned char id[UUID_LEN], json_t **out)
{
	struct store_batch *sb;
	uint64_t seq, bytes = 0;
	int ret;

	if ((ret = store_hook_seq(env->store, id, &seq)) == 0) {
		*out = json_pack("{s:s}", "error", "not_found");
		return 404;
	}
	if (ret == -1 || (sb = store_batch_begin(env->store)) == NULL)
		goto fail;
	if ((ret = store_batch_hook_del(sb, seq, ops.claimed, ops.arg,
	    &bytes)) == -1) {
		store_batch_abort(sb);
		goto fail;
	}
	if (ret != 1) {
		store_batch_abort(sb);
		if (ret == 0) {
			*out = json_pack("{s:s}", "error", "not_found");
			return 404;
		}
		*out = json_pack("{s:s, s:s}", "error", "hook_claimed",
		    "message", "a row of the hook is claimed by an attempt; "
		    "try again once it settles");
		return 409;
	}
	if (store_batch_commit(sb) == -1)
		goto fail;
	ops.changed(ops.arg);
	*out = json_pack("{s:i, s:I}", "deleted", 1, "bytes",
	    (json_int_t)bytes);
	return 200;
 fail:
	*out = dlq_store_error();
	return 503;
}

/*
 * Upkeep.
 */

static int
first_fn(const struct store_dead_info *di, void *arg)
{
	*(int *)arg = 1;
	return 1;
}

static void
age_done(void *arg, int status, json_t *answer)
{
	json_t *n = json_object_get(answer, "deleted");

	age_running = 0;
	if (status == 200 && json_integer_value(n) > 0)
		log_info("dlq: %" JSON_INTEGER_FORMAT " dead letters older "
		    "than queue.dlq.max_age_s purged (%" JSON_INTEGER_FORMAT
		    " body bytes freed)", json_integer_value(n),
		    json_integer_value(json_object_get(answer, "bytes")));
	else if (status != 200)
		log_warnx("dlq: the purge of old dead letters failed: %s",
		    json_string_value(json_object_get(answer, "message")));
	json_decref(answer);
}

static void
upkeep_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct store_counts c;
	struct store_dead_walk w;
	struct dlq_filter f;
	uint64_t warn = env->conf->dlq.warn_rows;
	uint64_t age = env->conf->dlq.max_age_s, now = time_wall_ms();
	int any = 0;

	if (env->draining || store_counts(env->store, &c) == -1)
		return;
	if (warn != 0 && c.dead > warn && !over_warn) {
		log_warnx("dlq: %" PRIu64 " dead letters, over "
		    "queue.dlq.warn_rows (%" PRIu64 ")", c.dead, warn);
		over_warn = 1;
		/* Once a crossing: over_warn falls again below it. */
		notice_emit("dlq.threshold", json_pack("{s:I, s:I}", "rows",
		    (json_int_t)c.dead, "warn_rows", (json_int_t)warn));
	} else if (over_warn && (warn == 0 || c.dead <= warn)) {
		log_info("dlq: %" PRIu64 " dead letters, no longer over "
		    "queue.dlq.warn_rows", c.dead);
		over_warn = 0;
	}
	if (age == 0 || age_running || c.dead == 0 || now / 1000 <= age)
		return;
	/* One seek: is the oldest dead letter past the cut? */
	memset(&w, 0, sizeof(w));
	w.until_ms = now - age * 1000;
	w.visits = 1;
	if (store_dead_walk(env->store, &w, first_fn, &any) == -1 || !any)
		return;
	memset(&f, 0, sizeof(f));
	f.until = w.until_ms;
	age_running = 1;
	(void)dlq_purge(&f, age_done, NULL);
}
