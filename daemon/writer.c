/* SPDX-License-Identifier: ISC */
/*
 * writer.c: the queue writer (group commit); see writer.h.
 *
 * A submitted hook is copied once (the frame payload, and the body from
 * its memfd) into a struct pending whose fields point into that copy.
 * Before it queues, it is charged: a verified hook to its tenant's rate
 * limit (GCRA, rate_limits.*), a hook that failed verification to its
 * source's quarantine bucket; then a hook with a dedupe key is looked up,
 * first among the hooks still queued (two hooks with one key in one batch
 * collapse: the second follows the first and is answered with its id once
 * the first is durable), then in the store.  A follower waits like any
 * queued hook and holds its copy meanwhile, so it counts against
 * batcher.max_queue and batcher.max_queue_bytes like one: a flood of
 * retries of one key is refused 503 overload as a flood of hooks is.
 *
 * The queue is FIFO.  A commit takes up to batcher.max_batch entries: one
 * store transaction holding each hook and its delivery rows (or the held
 * hook, for the quarantine pen; or a released hook and the removal of its
 * pen entry), committed without a sync and then flushed once; then every
 * edge of the batch is answered.  The commit runs in the event loop, so
 * while the disk syncs the edges' next submissions gather in the socket
 * buffers and form the next batch.  Between the commit and the sync,
 * dispatch takes a turn (pipeline_step): the deliver processes' outcomes
 * are settled and their next jobs sent, to run while the disk syncs; that
 * turn claims no row of the batch, which is not durable yet.  Not in
 * writer_flush_all, at a stop: no new jobs then.
 *
 * Rows are bound from the master's config as it is now: one row per sink
 * of the source that the edge's filters let the hook go to (the tail's
 * match set: the master never evaluates a filter), (sink index, module),
 * ordered sinks as lane members with the lane hash the edge computed
 * from the order key.  A hook that goes to no sink is answered filtered
 * with an id of its own and not stored: no row, no dedupe key, no rate
 * limit charged.  A held hook is filtered at its release, by the edge
 * that verifies it again (the filters as they are then); one that goes
 * to no sink only leaves the pen.
 */
#include "config.h"

#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>
#include <openssl/sha.h>

#include "clock.h"
#include "conf.h"
#include "dispatch/dispatch.h"
#include "ids.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "msg.h"
#include "pipeline/pipeline.h"
#include "proc.h"
#include "ratelimit.h"
#include "repl.h"
#include "series.h"
#include "store/store.h"
#include "store/store_group.h"
#include "submit.h"
#include "supervisor.h"
#include "trace.h"
#include "utf8.h"
#include "writer.h"

#define WRITER_START_DEADLINE_MS	15000	/* to start committing */
#define WRITER_DEDUPE_BUCKETS		4096
#define WRITER_SWEEP_PER_BATCH		64	/* dedupe keys per commit */
#define WRITER_SWEEP_PER_TICK		4096	/* and per timer tick */
#define WRITER_QUARANTINE_FULL_S	60	/* Retry-After when full */

enum pending_kind {
	PENDING_HOOK,		/* a hook with its rows */
	PENDING_PEN,		/* a hook held in the quarantine pen */
	PENDING_RELEASE,	/* a held hook released: hook + pen removal */
	PENDING_NOTICE,		/* an operational notice the master made
				 * (writer_notice): a hook, no edge waits */
};

struct pending {
	TAILQ_ENTRY(pending)	 entry;
	enum pending_kind	 kind;
	uint32_t		 serial;	/* the edge that waits, 0: none */
	uint64_t		 req_id;
	uint64_t		 enqueued;	/* mono ms */
	unsigned char		*payload;	/* copy of the frame payload */
	void			*body;		/* read from the memfd, or NULL */
	size_t			 bytes;		/* charged to the queue */
	const char		*verify_reason;	/* pen: why it failed */
	struct store_hook	 hook;
	struct store_header	 headers[SUBMIT_MAX_HEADERS];
	struct store_row_spec	*rows;
	int			 nrows;
	/* dedupe: the entry that holds the key, and those that follow it */
	struct pending		*dd_next;	/* in its hash bucket */
	struct pending		*followers;
	struct pending		*next_follower;
	/* release */
	struct store_hook_rec	*rec;
	uint64_t		 pen_seq;
	int			 gone;		/* purged before its commit */
	int			 dup;		/* its dedupe key is stored */
	void			(*done)(void *, int);
	void			*done_arg;
};

TAILQ_HEAD(pendingq, pending);

static struct pendingq	 queue = TAILQ_HEAD_INITIALIZER(queue);
static size_t		 nqueued;
static uint64_t		 queued_bytes;
static size_t		 nfollowing;	/* followers of queued dedupe keys */
static uint64_t		 following_bytes;
static uint64_t		 queued_pen_bytes;	/* pen bodies not yet stored */
static struct event	*ev_commit;
static int		 commit_armed;
static struct pending	*dd_table[WRITER_DEDUPE_BUCKETS];
static struct ratelimit	*rl_tenants;	/* rate_limits, by tenant */
static struct ratelimit	*rl_pen;	/* quarantine buckets, by source */

static void	writer_answer(struct pending *, enum hook_result, uint32_t);
static void	writer_free(struct pending *);
static void	writer_enqueue(struct pending *);
static void	writer_arm(void);
static void	writer_commit_cb(evutil_socket_t, short, void *);
static int	writer_commit_batch(int);
static int	writer_fits(struct pending *, uint32_t, const char *);
static int	writer_parse(struct pending *, struct msg *, uint8_t *);
static void	writer_take_tail(struct pending *, const struct submit_tail *);
static void	writer_bind_rows(struct pending *, const struct source_conf *,
		    const struct submit_lane *, uint32_t, uint64_t);
static uint64_t	dd_hash(const struct pending *);
static struct pending *dd_find(const struct pending *);
static void	dd_insert(struct pending *);
static void	dd_remove(struct pending *);
static const char *result_outcome(enum hook_result);

void
writer_init(void)
{
	if ((ev_commit = evtimer_new(env->base, writer_commit_cb, NULL)) ==
	    NULL)
		fatalx("writer: evtimer_new");
	rl_tenants = ratelimit_new();
	rl_pen = ratelimit_new();
}

size_t
writer_queued(void)
{
	return nqueued + nfollowing;
}

uint64_t
writer_queued_bytes(void)
{
	return queued_bytes + following_bytes;
}

static const char *
result_outcome(enum hook_result r)
{
	static const char *names[HOOK_RESULT_MAX] = {
		[HOOK_ACCEPTED] = "committed",
		[HOOK_DUPLICATE] = "duplicate",
		[HOOK_OVERLOAD] = "overload",
		[HOOK_STORE_UNAVAILABLE] = "store_unavailable",
		[HOOK_DRAINING] = "draining",
		[HOOK_RATE_LIMITED] = "rate_limited",
		[HOOK_QUARANTINED] = "quarantined",
		[HOOK_QUARANTINE_LIMITED] = "quarantine_rate_limited",
		[HOOK_QUARANTINE_FULL] = "quarantine_full",
		[HOOK_UNKNOWN_SOURCE] = "unknown_source",
		[HOOK_NOT_MASTER] = "not_master",
		[HOOK_FILTERED] = "filtered",
	};

	return r < HOOK_RESULT_MAX && names[r] != NULL ? names[r] : "unknown";
}

/* Answer the waiting edge (or the release), count it, and answer the
 * hooks that followed this one's dedupe key. */
static void
writer_answer(struct pending *p, enum hook_result r, uint32_t retry_after)
{
	struct pending *f;
	struct msg m;
	char id[UUID_STRLEN + 1] = "";
	uint64_t now;

	if (p->kind == PENDING_RELEASE) {
		p->done(p->done_arg, r == HOOK_ACCEPTED);
		return;
	}
	if (p->kind == PENDING_NOTICE) {
		if (r != HOOK_ACCEPTED)
			log_warnx("writer: a notice to %s was not stored: %s",
			    p->hook.source, result_outcome(r));
		return;
	}
	if (r == HOOK_ACCEPTED || r == HOOK_DUPLICATE ||
	    r == HOOK_QUARANTINED || r == HOOK_FILTERED)
		uuid_format(p->hook.id, id);
	/* A source the config does not know is no label value. */
	metrics_ingest(r == HOOK_UNKNOWN_SOURCE ? "other" : p->hook.source,
	    r == HOOK_ACCEPTED && p->hook.flagged ? "flagged" :
	    result_outcome(r));
	if (r == HOOK_ACCEPTED)
		series_add(SERIES_INGEST, 1);
	now = time_wall_ms();
	if (p->hook.received_at != 0)
		metrics_observe("ankusa_ingest_duration_seconds",
		    now > p->hook.received_at ? (double)(now -
		    p->hook.received_at) / 1000 : 0, NULL);
	msg_init(&m, MSG_HOOK_RESULT, p->req_id);
	msg_add_u8(&m, r);
	msg_add_str(&m, r == HOOK_NOT_MASTER ? repl_master() : id);
	msg_add_u32(&m, retry_after);
	/* An edge that died meanwhile is gone; its client saw no 201. */
	(void)supervisor_send(p->serial, &m);
	msg_free(&m);

	while ((f = p->followers) != NULL) {
		p->followers = f->next_follower;
		nfollowing--;
		following_bytes -= f->bytes;
		if (r == HOOK_ACCEPTED) {
			memcpy(f->hook.id, p->hook.id, UUID_LEN);
			writer_answer(f, HOOK_DUPLICATE, 0);
		} else
			writer_answer(f, r, retry_after);
		writer_free(f);
	}
}

static void
writer_free(struct pending *p)
{
	if (p->rec != NULL) {
		store_hook_rec_free(p->rec);
		free(p->rec);
	}
	free(p->payload);
	free(p->body);
	free(p->rows);
	free(p);
}

/* --- dedupe keys of queued hooks --- */

static uint64_t
dd_hash(const struct pending *p)
{
	const char *parts[3] = { p->hook.tenant, p->hook.source,
	    p->hook.dedupe_key };
	uint64_t h = IDS_FNV_INIT;
	int i;

	/* Each part with its NUL, so ("ab","c") and ("a","bc") differ. */
	for (i = 0; i < 3; i++)
		h = ids_fnv1a(h, parts[i], strlen(parts[i]) + 1);
	return h;
}

static struct pending *
dd_find(const struct pending *p)
{
	struct pending *q;

	for (q = dd_table[dd_hash(p) % WRITER_DEDUPE_BUCKETS]; q != NULL;
	    q = q->dd_next)
		if (strcmp(q->hook.tenant, p->hook.tenant) == 0 &&
		    strcmp(q->hook.source, p->hook.source) == 0 &&
		    strcmp(q->hook.dedupe_key, p->hook.dedupe_key) == 0)
			return q;
	return NULL;
}

static void
dd_insert(struct pending *p)
{
	size_t b = dd_hash(p) % WRITER_DEDUPE_BUCKETS;

	p->dd_next = dd_table[b];
	dd_table[b] = p;
}

static void
dd_remove(struct pending *p)
{
	struct pending **pp;

	if (p->hook.dedupe_key == NULL || p->kind != PENDING_HOOK)
		return;
	for (pp = &dd_table[dd_hash(p) % WRITER_DEDUPE_BUCKETS]; *pp != NULL;
	    pp = &(*pp)->dd_next)
		if (*pp == p) {
			*pp = p->dd_next;
			return;
		}
}

/* --- parsing --- */

/*
 * The tail of MSG_HOOK_SUBMIT and MSG_QUARANTINE_VERDICT (common/submit.h)
 * into p: the dedupe key, the headers; binds the rows.
 */
static void
writer_take_tail(struct pending *p, const struct submit_tail *t)
{
	const struct source_conf *src;
	uint32_t i;

	for (i = 0; i < t->nheaders; i++) {
		p->headers[i].name = t->headers[i].name;
		p->headers[i].value = t->headers[i].value;
	}
	p->hook.dedupe_key = t->dedupe[0] != '\0' ? t->dedupe : NULL;
	p->hook.headers = p->headers;
	p->hook.nheaders = t->nheaders;
	p->hook.event_type = t->evtype;
	metrics_filter_errors(p->hook.source, t->filter_errors,
	    t->filter_budget);
	if ((src = conf_source(env->conf, p->hook.source)) != NULL)
		writer_bind_rows(p, src, t->lanes, t->nlanes, t->match);
}

static void
writer_bind_rows(struct pending *p, const struct source_conf *src,
    const struct submit_lane *lanes, uint32_t nlanes, uint64_t match)
{
	struct store_row_spec *r;
	uint32_t i;
	int k;

	if ((p->rows = calloc(src->nsinks, sizeof(*p->rows))) == NULL)
		fatal("writer");
	p->nrows = 0;
	for (k = 0; k < src->nsinks && k < 64; k++) {
		if ((match >> k & 1) == 0)
			continue;
		r = &p->rows[p->nrows++];
		r->sink_index = k;
		if ((r->module = dispatch_sink_module(
		    src->sinks[k].type)) == 0)
			fatalx("writer: sink type %d has no module",
			    (int)src->sinks[k].type);
		r->ordered = src->sinks[k].ordered;
		for (i = 0; i < nlanes; i++)
			if (lanes[i].sink == (uint32_t)k)
				r->lane_hash = lanes[i].hash;
	}
}

/*
 * A hook that the store would refuse must not join a batch, where it would
 * abort every other hook of it (all answered 503).  An edge caps what it
 * sends below what the store takes (a dedupe key at KEYS_DEDUPE_MAX, its
 * reasons are its own short names), so such a frame broke the protocol:
 * -1, and the caller recycles the edge.  The frame's other hooks, queued
 * or in flight, are not touched.
 */
static int
writer_fits(struct pending *p, uint32_t serial, const char *reason)
{
	char why[128];

	/* A reason is the edge's own name for a failure (verify.c), shown
	 * in listings: text that is not UTF-8 is no name of ours. */
	if (reason != NULL && !utf8_valid(reason, strlen(reason)))
		snprintf(why, sizeof(why), "a reason that is not UTF-8");
	else if (store_hook_fits(&p->hook, reason, why, sizeof(why)) == 0)
		return 0;
	log_warnx("writer: hook for %s from child %u refused: %s",
	    p->hook.source, serial, why);
	return -1;
}

/*
 * Read MSG_HOOK_SUBMIT (common/submit.h).  Strings point into p->payload.
 * -1 on a malformed frame.
 */
static int
writer_parse(struct pending *p, struct msg *m, uint8_t *verdict)
{
	struct submit s;

	if (submit_decode(m, &s) == -1 ||
	    s.body_len > env->conf->http.max_body_bytes)
		return -1;
	if (s.body == NULL) {
		if ((p->body = proc_read_fd(m->fd, s.body_len)) == NULL) {
			log_warn("writer: hook body from memfd");
			return -1;
		}
		s.body = p->body;
	}
	if (!conf_valid_id(s.tenant) || !conf_valid_id(s.source))
		return -1;
	p->hook.tenant = s.tenant;
	p->hook.source = s.source;
	p->hook.method = s.method;
	p->hook.path = s.path;
	p->hook.content_type = s.content_type;
	p->hook.received_at = s.received_at;
	*verdict = s.verdict;
	p->verify_reason = s.verify_reason;
	/* The edge checked or made these; kept as they came. */
	p->hook.verification = s.verification;
	memcpy(p->hook.trace, s.trace, sizeof(p->hook.trace));
	p->hook.tracestate = s.tracestate;
	writer_take_tail(p, &s.tail);
	p->hook.body = s.body;
	p->hook.body_len = s.body_len;
	memcpy(p->hook.sha256, s.sha256, sizeof(s.sha256));
	return 0;
}

int
writer_submit(uint32_t serial, struct msg *m)
{
	const struct conf *c = env->conf;
	const struct source_conf *src;
	const struct rate_limit *rl;
	struct pending *p, *lead;
	uint64_t wait, now = time_mono_ms();
	uint8_t verdict;
	int rc;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		fatal("writer");
	p->serial = serial;
	p->req_id = m->id;
	/* Own a copy of the payload; the parsed strings point into it. */
	if ((p->payload = malloc(m->len + 1)) == NULL)
		fatal("writer");
	memcpy(p->payload, m->buf, m->len);
	m->buf = p->payload;
	if (writer_parse(p, m, &verdict) == -1 || writer_fits(p, serial,
	    verdict == VERDICT_QUARANTINE ? p->verify_reason : NULL) == -1) {
		writer_free(p);
		return -1;
	}
	p->bytes = m->len + (p->body != NULL ? p->hook.body_len : 0);
	p->kind = verdict == VERDICT_QUARANTINE ? PENDING_PEN : PENDING_HOOK;

	if ((src = conf_source(c, p->hook.source)) == NULL) {
		/* Removed by a reload after the edge resolved it. */
		writer_answer(p, HOOK_UNKNOWN_SOURCE, 0);
		goto done;
	}
	if (env->draining) {
		writer_answer(p, HOOK_DRAINING, 1);
		goto done;
	}
	/* A client of a replication group stores nothing. */
	if (!repl_writable()) {
		writer_answer(p, HOOK_NOT_MASTER, 1);
		goto done;
	}
	if (writer_queued() >= c->batcher.max_queue ||
	    writer_queued_bytes() + p->bytes > c->batcher.max_queue_bytes) {
		writer_answer(p, HOOK_OVERLOAD, 1);
		goto done;
	}

	/* No sink wants it (held hooks are filtered at their release). */
	if (verdict != VERDICT_QUARANTINE && p->nrows == 0) {
		if (verdict == VERDICT_FLAGGED)
			metrics_verify_failure(src->id,
			    conf_verify_type_name(src->verify.type));
		uuidv7_new(p->hook.id);
		writer_answer(p, HOOK_FILTERED, 0);
		goto done;
	}

	if (verdict != VERDICT_OK) {
		/* Failed verification: the source's quarantine bucket pays,
		 * never the tenant's rate limit. */
		metrics_verify_failure(src->id,
		    conf_verify_type_name(src->verify.type));
		wait = ratelimit_charge(rl_pen, src->id, c->quarantine.rate,
		    c->quarantine.burst, now);
		if (wait != 0) {
			writer_answer(p, HOOK_QUARANTINE_LIMITED,
			    ratelimit_retry_after_s(wait));
			goto done;
		}
		if (verdict == VERDICT_FLAGGED) {
			p->hook.flagged = 1;
			p->hook.dedupe_key = NULL;
		} else {
			uint64_t used = 0, held = 0;

			if (store_quarantine_usage(env->store, &used, &held) ==
			    -1 || used + queued_pen_bytes + p->hook.body_len >
			    c->quarantine.max_bytes) {
				writer_answer(p, HOOK_QUARANTINE_FULL,
				    WRITER_QUARANTINE_FULL_S);
				goto done;
			}
			queued_pen_bytes += p->hook.body_len;
		}
		uuidv7_new(p->hook.id);
		writer_enqueue(p);
		return 0;
	}

	/* Verified: the tenant's rate limit, then dedupe. */
	rl = writer_rate_limit(c, p->hook.tenant, NULL);
	if (rl != NULL && rl->set && (wait = ratelimit_charge(rl_tenants,
	    p->hook.tenant, rl->rate, rl->burst, now)) != 0) {
		metrics_rate_limited(p->hook.tenant);
		writer_answer(p, HOOK_RATE_LIMITED,
		    ratelimit_retry_after_s(wait));
		goto done;
	}
	if (p->hook.dedupe_key != NULL) {
		p->hook.dedupe_expires = p->hook.received_at +
		    src->dedupe.ttl_seconds * 1000;
		if ((lead = dd_find(p)) != NULL) {
			/* Same key queued: answered with its id once it is
			 * durable; counted as queued until then. */
			p->next_follower = lead->followers;
			lead->followers = p;
			nfollowing++;
			following_bytes += p->bytes;
			return 0;
		}
		rc = store_dedupe_get(env->store, p->hook.tenant,
		    p->hook.source, p->hook.dedupe_key, time_wall_ms(),
		    p->hook.id);
		if (rc == 1) {
			writer_answer(p, HOOK_DUPLICATE, 0);
			goto done;
		}
		if (rc == -1) {
			log_warnx("writer: dedupe lookup: %s",
			    store_strerror(env->store));
			writer_answer(p, HOOK_STORE_UNAVAILABLE, 1);
			goto done;
		}
		dd_insert(p);
	}
	uuidv7_new(p->hook.id);
	writer_enqueue(p);
	return 0;
 done:
	writer_free(p);
	return 0;
}

int
writer_release(struct store_hook_rec *rec, uint64_t pen_seq, struct msg *m,
    const unsigned char *replay_id, void (*done)(void *, int), void *arg)
{
	const struct source_conf *src;
	struct submit_tail t;
	struct pending *p;

	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (p->payload = malloc(m->len + 1)) == NULL)
		fatal("writer");
	p->kind = PENDING_RELEASE;
	p->rec = rec;
	p->pen_seq = pen_seq;
	p->done = done;
	p->done_arg = arg;
	memcpy(p->payload, m->buf, m->len);
	m->buf = p->payload;
	/* The held hook, as it was received; the edge's verdict gives what
	 * a fresh submission would: dedupe key, forwarded headers, lanes. */
	p->hook = rec->hook;
	p->hook.flagged = 0;
	/* Its id was given out when it was held: it keeps it, indexed. */
	p->hook.id_seq = 0;
	/* It passed the check it was released by, against the source as it
	 * is now (its trace context stays the one it came with). */
	src = conf_source(env->conf, p->hook.source);
	p->hook.verification = src != NULL && src->verify.type == VERIFY_NONE ?
	    VERIFICATION_SKIPPED : VERIFICATION_OK;
	if (replay_id != NULL)
		memcpy(p->hook.replay_id, replay_id, UUID_LEN);
	if (submit_tail_decode(m, &t) == -1 || msg_end(m) == -1) {
		writer_free(p);
		return -1;
	}
	writer_take_tail(p, &t);
	if (writer_fits(p, 0, NULL) == -1) {
		writer_free(p);
		return -1;
	}
	if (p->hook.dedupe_key != NULL) {
		p->hook.dedupe_expires = p->hook.received_at +
		    (src != NULL ? src->dedupe.ttl_seconds * 1000 : 0);
		/* The provider's retry may have been stored meanwhile: then
		 * the held copy only leaves the pen. */
		if (store_dedupe_get(env->store, p->hook.tenant,
		    p->hook.source, p->hook.dedupe_key, time_wall_ms(),
		    p->hook.id) == 1)
			p->dup = 1;
	}
	p->bytes = m->len + p->hook.body_len;
	writer_enqueue(p);
	return 0;
}

/*
 * A notice's body, JSON the master made (daemon/notice.c), as a hook of
 * the reserved source: rows for each of its sinks, no dedupe, no rate
 * limit (the tenant is the master's own), a trace of its own.  It is
 * queued like a hook and committed with the next batch; one the queue
 * cannot take, or a commit refused, is logged and lost (it was never
 * acknowledged to anyone).
 */
int
writer_notice(const char *tenant, const char *source, const void *body,
    size_t len)
{
	const struct source_conf *src;
	struct trace_ctx tc;
	struct pending *p;
	static const char ctype[] = "application/json";
	size_t tl = strlen(tenant) + 1, sl = strlen(source) + 1;
	char *b;

	if ((src = conf_source(env->conf, source)) == NULL ||
	    env->draining || !repl_writable() ||
	    writer_queued() >= env->conf->batcher.max_queue ||
	    writer_queued_bytes() + tl + sl + len >
	    env->conf->batcher.max_queue_bytes)
		return -1;
	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (p->payload = malloc(tl + sl)) == NULL ||
	    (p->body = malloc(len > 0 ? len : 1)) == NULL)
		fatal("writer");
	b = (char *)p->payload;
	memcpy(b, tenant, tl);
	memcpy(b + tl, source, sl);
	memcpy(p->body, body, len);
	p->kind = PENDING_NOTICE;
	p->hook.tenant = b;
	p->hook.source = b + tl;
	p->hook.received_at = time_wall_ms();
	p->hook.method = "POST";
	p->hook.path = "";
	p->hook.content_type = ctype;
	p->hook.body = p->body;
	p->hook.body_len = len;
	SHA256(p->body, len, p->hook.sha256);
	p->hook.verification = VERIFICATION_OK;
	trace_new(&tc);
	trace_pack(&tc, p->hook.trace);
	p->bytes = tl + sl + len;
	writer_bind_rows(p, src, NULL, 0, UINT64_MAX);	/* no filters */
	uuidv7_new(p->hook.id);
	writer_enqueue(p);
	return 0;
}

static void
writer_enqueue(struct pending *p)
{
	p->enqueued = time_mono_ms();
	TAILQ_INSERT_TAIL(&queue, p, entry);
	nqueued++;
	queued_bytes += p->bytes;
	writer_arm();
}

/*
 * Arm the commit: after batcher.max_delay_ms when a batch starts to
 * gather, at once when a full batch is waiting.  A zero timeout runs after
 * libevent has polled, so every frame already readable joins the batch.
 */
static void
writer_arm(void)
{
	struct timeval tv = { 0, 0 };
	uint64_t d = env->conf->batcher.max_delay_ms;

	if (nqueued >= env->conf->batcher.max_batch) {
		evtimer_add(ev_commit, &tv);
		commit_armed = 1;
		return;
	}
	if (commit_armed || nqueued == 0)
		return;
	tv.tv_sec = d / 1000;
	tv.tv_usec = (d % 1000) * 1000;
	evtimer_add(ev_commit, &tv);
	commit_armed = 1;
}

static void
writer_commit_cb(evutil_socket_t fd, short ev, void *arg)
{
	commit_armed = 0;
	(void)writer_commit_batch(1);
	writer_arm();
}

void
writer_flush_all(void)
{
	evtimer_del(ev_commit);
	commit_armed = 0;
	while (nqueued > 0)
		if (writer_commit_batch(0) == -1)
			break;
	/* What could not be stored is answered 503 by now; what is left
	 * (the store refused) is answered too. */
	writer_refuse_all();
}

void
writer_refuse_all(void)
{
	while (nqueued > 0) {
		struct pending *p = TAILQ_FIRST(&queue);

		TAILQ_REMOVE(&queue, p, entry);
		nqueued--;
		queued_bytes -= p->bytes;
		if (p->kind == PENDING_PEN)
			queued_pen_bytes -= p->hook.body_len;
		dd_remove(p);
		writer_answer(p, HOOK_STORE_UNAVAILABLE, 1);
		writer_free(p);
	}
}

void
writer_sweep(void)
{
	struct store_batch *sb;
	int n;

	ratelimit_sweep(rl_tenants, time_mono_ms());
	ratelimit_sweep(rl_pen, time_mono_ms());
	if ((sb = store_batch_begin(env->store)) == NULL)
		return;
	n = store_batch_sweep_dedupe(sb, time_wall_ms(),
	    WRITER_SWEEP_PER_TICK);
	if (n == -1) {
		store_batch_abort(sb);
		return;
	}
	if (store_batch_commit(sb) == -1)
		log_warnx("writer: dedupe sweep: %s",
		    store_strerror(env->store));
	else if (n > 0)
		log_debug("writer: swept %d expired dedupe keys", n);
}

void
writer_rate_reset(const char *tenant)
{
	if (rl_tenants != NULL)
		ratelimit_forget(rl_tenants, tenant);
}

static int
writer_put(struct store_batch *sb, struct pending *p)
{
	switch (p->kind) {
	case PENDING_HOOK:
	case PENDING_NOTICE:
		/* A new id, given out only once this batch is durable: it
		 * carries the hook's seq (no hookids entry). */
		p->hook.id_seq = 1;
		return store_batch_put_hook(sb, &p->hook, p->rows, p->nrows);
	case PENDING_PEN:
		return store_batch_put_quarantine(sb, &p->hook,
		    p->verify_reason);
	case PENDING_RELEASE:
		switch (store_batch_del_quarantine(sb, p->pen_seq)) {
		case 1:
			/* A duplicate, or filtered: it only leaves the pen. */
			if (p->dup || p->nrows == 0)
				return 0;
			return store_batch_put_hook(sb, &p->hook, p->rows,
			    p->nrows);
		case 0:
			p->gone = 1;	/* purged meanwhile: nothing to do */
			return 0;
		}
		return -1;
	}
	return -1;
}

/*
 * Commit one batch from the head of the queue.  Hooks that waited past the
 * start deadline are answered 503 and dropped first.  0, or -1 when the
 * store refused (every hook of the batch answered 503 store_unavailable).
 * With step, dispatch takes a turn between the batch's commit and its sync
 * (pipeline_step), claiming no row of the batch.
 */
static int
writer_commit_batch(int step)
{
	struct pendingq batch = TAILQ_HEAD_INITIALIZER(batch);
	struct store_batch *sb;
	struct pending *p;
	uint64_t now = time_mono_ms(), t0, c0, s0 = 0, s1 = 0;
	uint64_t seq0;
	uint32_t n = 0, max = env->conf->batcher.max_batch;
	int rc = 0, in_doubt = 0;

	while (n < max && (p = TAILQ_FIRST(&queue)) != NULL) {
		TAILQ_REMOVE(&queue, p, entry);
		nqueued--;
		queued_bytes -= p->bytes;
		if (p->kind == PENDING_PEN)
			queued_pen_bytes -= p->hook.body_len;
		if (now - p->enqueued > WRITER_START_DEADLINE_MS) {
			dd_remove(p);
			writer_answer(p, HOOK_OVERLOAD, 1);
			writer_free(p);
			continue;
		}
		TAILQ_INSERT_TAIL(&batch, p, entry);
		n++;
	}
	if (n == 0)
		return 0;

	t0 = time_mono_ms();
	c0 = time_mono_us();
	seq0 = store_next_seq(env->store);
	if ((sb = store_batch_begin(env->store)) == NULL)
		rc = -1;
	TAILQ_FOREACH(p, &batch, entry) {
		if (rc == -1)
			break;
		if (writer_put(sb, p) == -1) {
			store_batch_abort(sb);
			rc = -1;
		}
	}
	if (rc == 0 && store_batch_sweep_dedupe(sb, time_wall_ms(),
	    WRITER_SWEEP_PER_BATCH) == -1) {
		store_batch_abort(sb);
		rc = -1;
	}
	if (rc == 0 && store_batch_commit_lazy(sb) == -1) {
		rc = -1;
		/* Committed here but not acknowledged by a quorum of the
		 * replication group: the hooks are in the store, as far as
		 * this node's dispatch goes, and each answer is a 503. */
		in_doubt = store_in_doubt(env->store);
	}
	if ((rc == 0 || in_doubt) && step) {
		s0 = time_mono_us();
		pipeline_step(seq0);
		s1 = time_mono_us();
	}
	if ((rc == 0 || in_doubt) && store_log_flush(env->store) == -1)
		rc = -1;
	if (rc == 0)
		metrics_observe("ankusa_wal_commit_duration_seconds",
		    (double)(time_mono_us() - c0 - (s1 - s0)) / 1e6, NULL);

	if (rc == -1) {
		if (env->store_ok)
			log_warnx("writer: commit of %u hooks failed: %s; "
			    "answering 503", n, store_strerror(env->store));
		env->store_ok = 0;
	} else {
		if (!env->store_ok)
			log_info("writer: store commits again");
		env->store_ok = 1;
		{
			uint64_t min_due = UINT64_MAX;

			TAILQ_FOREACH(p, &batch, entry)
				if (p->hook.received_at < min_due)
					min_due = p->hook.received_at;
			pipeline_wake(min_due);
		}
		log_debug("writer: committed %u hooks in %llu ms", n,
		    (unsigned long long)(time_mono_ms() - t0));
	}
	while ((p = TAILQ_FIRST(&batch)) != NULL) {
		TAILQ_REMOVE(&batch, p, entry);
		dd_remove(p);
		if (rc == -1 || p->gone)
			writer_answer(p, HOOK_STORE_UNAVAILABLE, 1);
		else if (p->kind == PENDING_PEN)
			writer_answer(p, HOOK_QUARANTINED, 0);
		else
			writer_answer(p, HOOK_ACCEPTED, 0);
		writer_free(p);
	}
	if (rc == -1)
		master_store_check();
	return rc;
}
