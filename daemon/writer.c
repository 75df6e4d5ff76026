/*
 * writer.c: the queue writer (group commit); see writer.h.
 *
 * A submitted hook is copied once (the frame payload, and the body from
 * its memfd) into a struct pending whose fields point into that copy.  The
 * queue is FIFO.  A commit takes up to batcher.max_batch hooks: one store
 * transaction holding each hook and its delivery rows, committed without a
 * sync and then flushed once; then every edge of the batch is answered.
 * The commit runs in the event loop, so while the disk syncs the edges'
 * next submissions gather in the socket buffers and form the next batch.
 *
 * Rows are bound from the master's config as it is now: one row per sink
 * of the source, (sink index, module), ordered sinks as lane members with
 * the lane hash the edge computed from the order key.
 */
#include "config.h"

#include <sys/queue.h>

#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "ankusad.h"
#include "conf.h"
#include "ids.h"
#include "log.h"
#include "msg.h"
#include "proc.h"
#include "store.h"
#include "supervisor.h"
#include "writer.h"

#define WRITER_START_DEADLINE_MS	15000	/* to start committing */
#define WRITER_MAX_HEADERS		100
#define WRITER_MAX_LANES		CONF_MAX_SINKS

struct pending {
	TAILQ_ENTRY(pending)	 entry;
	uint32_t		 serial;	/* the edge that waits */
	uint64_t		 req_id;
	uint64_t		 enqueued;	/* mono ms */
	unsigned char		*payload;	/* copy of the frame payload */
	void			*body;		/* read from the memfd, or NULL */
	size_t			 bytes;		/* charged to the queue */
	struct store_hook	 hook;
	struct store_header	 headers[WRITER_MAX_HEADERS];
	struct store_row_spec	*rows;
	int			 nrows;
};

TAILQ_HEAD(pendingq, pending);

static struct pendingq	 queue = TAILQ_HEAD_INITIALIZER(queue);
static size_t		 nqueued;
static uint64_t		 queued_bytes;
static struct event	*ev_commit;
static int		 commit_armed;

static void	writer_answer(struct pending *, enum hook_result, uint32_t);
static void	writer_free(struct pending *);
static void	writer_arm(void);
static void	writer_commit_cb(evutil_socket_t, short, void *);
static int	writer_commit_batch(void);
static int	writer_parse(struct pending *, struct msg *,
		    const struct source_conf **);

void
writer_init(void)
{
	if ((ev_commit = evtimer_new(env->base, writer_commit_cb, NULL)) ==
	    NULL)
		fatalx("writer: evtimer_new");
}

size_t
writer_queued(void)
{
	return nqueued;
}

uint64_t
writer_queued_bytes(void)
{
	return queued_bytes;
}

static void
writer_answer(struct pending *p, enum hook_result r, uint32_t retry_after)
{
	struct msg m;
	char id[UUID_STRLEN + 1] = "";

	if (r == HOOK_ACCEPTED || r == HOOK_DUPLICATE)
		uuid_format(p->hook.id, id);
	msg_init(&m, MSG_HOOK_RESULT, p->req_id);
	msg_add_u8(&m, r);
	msg_add_str(&m, id);
	msg_add_u32(&m, retry_after);
	/* An edge that died meanwhile is gone; its client saw no 201. */
	(void)supervisor_send(p->serial, &m);
	msg_free(&m);
}

static void
writer_free(struct pending *p)
{
	free(p->payload);
	free(p->body);
	free(p->rows);
	free(p);
}

static uint8_t
writer_module(enum sink_type t)
{
	switch (t) {
	case SINK_HTTP:
		return MODULE_HTTP;
	case SINK_SQS:
		return MODULE_SQS;
	case SINK_PUBSUB:
		return MODULE_PUBSUB;
	case SINK_LOG:
		return MODULE_LOG;
	}
	fatalx("writer: sink type %d has no module", (int)t);
}

/*
 * Read MSG_HOOK_SUBMIT (field order in workers/edge.c).  Strings point into
 * p->payload.  -1 on a malformed frame.
 */
static int
writer_parse(struct pending *p, struct msg *m, const struct source_conf **srcp)
{
	const struct source_conf *src;
	const char *dedupe;
	const void *sha, *data;
	uint64_t lane_hash[WRITER_MAX_LANES], body_len;
	uint32_t nheaders, nlanes, lane_sink[WRITER_MAX_LANES], i;
	uint8_t flagged;
	size_t shalen, datalen;
	int k;

	if (msg_get_str(m, &p->hook.tenant) == -1 ||
	    msg_get_str(m, &p->hook.source) == -1 ||
	    msg_get_str(m, &p->hook.method) == -1 ||
	    msg_get_str(m, &p->hook.path) == -1 ||
	    msg_get_str(m, &p->hook.content_type) == -1 ||
	    msg_get_u64(m, &p->hook.received_at) == -1 ||
	    msg_get_u8(m, &flagged) == -1 ||
	    msg_get_str(m, &dedupe) == -1 ||
	    msg_get_u32(m, &nheaders) == -1 || nheaders > WRITER_MAX_HEADERS)
		return -1;
	for (i = 0; i < nheaders; i++)
		if (msg_get_str(m, &p->headers[i].name) == -1 ||
		    msg_get_str(m, &p->headers[i].value) == -1)
			return -1;
	if (msg_get_u32(m, &nlanes) == -1 || nlanes > WRITER_MAX_LANES)
		return -1;
	for (i = 0; i < nlanes; i++)
		if (msg_get_u32(m, &lane_sink[i]) == -1 ||
		    msg_get_u64(m, &lane_hash[i]) == -1)
			return -1;
	if (msg_get_data(m, &sha, &shalen) == -1 || shalen != 32 ||
	    msg_get_u64(m, &body_len) == -1 ||
	    body_len > env->conf->http.max_body_bytes)
		return -1;
	if (m->fd == -1) {
		if (msg_get_data(m, &data, &datalen) == -1 ||
		    datalen != body_len)
			return -1;
		p->hook.body = data;
	} else {
		if ((p->body = proc_read_fd(m->fd, body_len)) == NULL) {
			log_warn("writer: hook body from memfd");
			return -1;
		}
		p->hook.body = p->body;
	}
	if (msg_end(m) == -1)
		return -1;
	if (!conf_valid_id(p->hook.tenant) || !conf_valid_id(p->hook.source))
		return -1;

	p->hook.body_len = body_len;
	memcpy(p->hook.sha256, sha, 32);
	p->hook.flagged = flagged != 0;
	p->hook.dedupe_key = dedupe[0] != '\0' ? dedupe : NULL;
	p->hook.headers = p->headers;
	p->hook.nheaders = nheaders;

	/* Bind rows to the source as it is now. */
	*srcp = src = conf_source(env->conf, p->hook.source);
	if (src == NULL)
		return 0;
	if ((p->rows = calloc(src->nsinks, sizeof(*p->rows))) == NULL)
		fatal("writer");
	p->nrows = src->nsinks;
	for (k = 0; k < src->nsinks; k++) {
		p->rows[k].sink_index = k;
		p->rows[k].module = writer_module(src->sinks[k].type);
		p->rows[k].ordered = src->sinks[k].ordered;
		for (i = 0; i < nlanes; i++)
			if (lane_sink[i] == (uint32_t)k)
				p->rows[k].lane_hash = lane_hash[i];
	}
	return 0;
}

int
writer_submit(uint32_t serial, struct msg *m)
{
	const struct source_conf *src = NULL;
	struct pending *p;
	const struct conf *c = env->conf;

	if ((p = calloc(1, sizeof(*p))) == NULL)
		fatal("writer");
	p->serial = serial;
	p->req_id = m->id;
	/* Own a copy of the payload; the parsed strings point into it. */
	if ((p->payload = malloc(m->len + 1)) == NULL)
		fatal("writer");
	memcpy(p->payload, m->buf, m->len);
	m->buf = p->payload;
	if (writer_parse(p, m, &src) == -1) {
		writer_free(p);
		return -1;
	}
	p->bytes = m->len + (p->body != NULL ? p->hook.body_len : 0);

	if (src == NULL) {
		/* Removed by a reload after the edge resolved it. */
		writer_answer(p, HOOK_UNKNOWN_SOURCE, 0);
		writer_free(p);
		return 0;
	}
	if (env->draining) {
		writer_answer(p, HOOK_DRAINING, 1);
		writer_free(p);
		return 0;
	}
	if (nqueued >= c->batcher.max_queue ||
	    queued_bytes + p->bytes > c->batcher.max_queue_bytes) {
		writer_answer(p, HOOK_OVERLOAD, 1);
		writer_free(p);
		return 0;
	}
	uuidv7_new(p->hook.id);
	p->enqueued = time_mono_ms();
	TAILQ_INSERT_TAIL(&queue, p, entry);
	nqueued++;
	queued_bytes += p->bytes;
	writer_arm();
	return 0;
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
	(void)writer_commit_batch();
	writer_arm();
}

void
writer_flush_all(void)
{
	evtimer_del(ev_commit);
	commit_armed = 0;
	while (nqueued > 0)
		if (writer_commit_batch() == -1)
			break;
	/* What could not be stored is answered 503 by now. */
}

/*
 * Commit one batch from the head of the queue.  Hooks that waited past the
 * start deadline are answered 503 and dropped first.  0, or -1 when the
 * store refused (every hook of the batch answered 503 store_unavailable).
 */
static int
writer_commit_batch(void)
{
	struct pendingq batch = TAILQ_HEAD_INITIALIZER(batch);
	struct store_batch *sb;
	struct pending *p;
	uint64_t now = time_mono_ms(), t0;
	uint32_t n = 0, max = env->conf->batcher.max_batch;
	int rc = 0;

	while (n < max && (p = TAILQ_FIRST(&queue)) != NULL) {
		TAILQ_REMOVE(&queue, p, entry);
		nqueued--;
		queued_bytes -= p->bytes;
		if (now - p->enqueued > WRITER_START_DEADLINE_MS) {
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
	if ((sb = store_batch_begin(env->store)) == NULL)
		rc = -1;
	TAILQ_FOREACH(p, &batch, entry) {
		if (rc == -1)
			break;
		if (store_batch_put_hook(sb, &p->hook, p->rows, p->nrows) ==
		    -1) {
			store_batch_abort(sb);
			rc = -1;
		}
	}
	if (rc == 0 && store_batch_commit(sb) == -1)
		rc = -1;

	if (rc == -1) {
		if (env->store_ok)
			log_warnx("writer: commit of %u hooks failed: %s; "
			    "answering 503", n, store_strerror(env->store));
		env->store_ok = 0;
	} else {
		if (!env->store_ok)
			log_info("writer: store commits again");
		env->store_ok = 1;
		log_debug("writer: committed %u hooks in %llu ms", n,
		    (unsigned long long)(time_mono_ms() - t0));
	}
	while ((p = TAILQ_FIRST(&batch)) != NULL) {
		TAILQ_REMOVE(&batch, p, entry);
		if (rc == 0)
			writer_answer(p, HOOK_ACCEPTED, 0);
		else
			writer_answer(p, HOOK_STORE_UNAVAILABLE, 1);
		writer_free(p);
	}
	return rc;
}
