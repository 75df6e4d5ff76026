/* SPDX-License-Identifier: ISC */
/*
 * quarantine.c: releasing and purging the quarantine pen; see
 * quarantine.h.
 *
 * A release walks the pen in seq order with a cursor, keeps at most
 * QUARANTINE_WINDOW held hooks out at edges at once, and ends when the
 * walk is done and every check has come back or timed out
 * (QUARANTINE_CHECK_MS: an edge that died with checks in hand leaves them
 * unanswered; they are counted as kept).  Held hooks never leave the store
 * before their release commits, so a crash mid-release loses nothing.
 *
 * A paced release (a quarantine replay job's) sends a held hook to an
 * edge only while its caller has granted one (quarantine_grant), walks
 * only the pen seqs below a bound and the receive times of a window, and
 * says how far it is: the seq below which every hook it looked at has its
 * verdict and, if it passed, its commit (a check slot stays taken until
 * then).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "conf.h"
#include "ids.h"
#include "log.h"
#include "master.h"
#include "msg.h"
#include "proc.h"
#include "quarantine.h"
#include "store/store.h"
#include "supervisor.h"
#include "writer.h"

#define QUARANTINE_WINDOW	32
#define QUARANTINE_CHECK_MS	10000
#define QUARANTINE_PURGE_CHUNK	512

struct check {
	uint64_t		 id;		/* 0: no check out */
	int			 committing;	/* passed: in the writer (the
						 * slot is taken until then) */
	uint64_t		 seq;		/* pen entry */
	uint64_t		 sent;		/* mono ms */
	struct store_hook_rec	*rec;
};

struct release {
	int		 running;
	char		 source[CONF_ID_MAX + 1];
	char		 id[UUID_STRLEN + 1];
	uint64_t	 cursor;	/* last pen seq looked at */
	int		 walked;	/* the walk reached the end */
	int		 stopped;	/* ended before it: no edge, or its
					 * caller ended it */
	int		 paced;		/* quarantine_release_paced's */
	unsigned char	 replay_id[UUID_LEN];	/* paced: its job's */
	uint64_t	 budget;	/* hooks it may still send */
	uint64_t	 below;		/* pen seqs below this only */
	uint64_t	 since, until;	/* receive times, 0: open */
	char		 event_type[STORE_EVTYPE_MAX + 1];	/* "": any */
	struct check	 checks[QUARANTINE_WINDOW];
	int		 out;		/* checks at edges */
	int		 committing;	/* passed, in the writer */
	uint64_t	 released, kept, failed;
	void		(*done)(void *, json_t *);
	void		*arg;
	struct event	*ev_timer;
	uint64_t	 started;	/* mono ms */
	uint64_t	 edge_seen;	/* mono ms an edge was last ready */
};

static struct release	 rel;
static uint64_t		 next_check_id = 1;

static int	release_start(const char *, const char *,
		    void (*)(void *, json_t *), void *, char *, size_t);
static void	release_pump(void);
static void	release_finish(void);
static void	release_timer(evutil_socket_t, short, void *);
static void	release_committed(void *, int);
static int	release_send(struct check *);
static int	collect_seq(const struct store_quarantine_info *, void *);

struct seqlist {
	uint64_t	seqs[QUARANTINE_PURGE_CHUNK];
	int		n;
	const char	*id;
	uint64_t	last;
	uint64_t	below;		/* 0: no bound */
	uint64_t	since, until;
	const char	*event_type;	/* NULL or "": any */
	int		end;		/* reached below */
	uint64_t	bytes;		/* of the seqs */
};

static int
collect_seq(const struct store_quarantine_info *qi, void *arg)
{
	struct seqlist *sl = arg;

	if (sl->below != 0 && qi->seq >= sl->below) {
		sl->end = 1;
		return 1;
	}
	sl->last = qi->seq;
	if (sl->id != NULL && sl->id[0] != '\0' && strcmp(sl->id, qi->id) != 0)
		return 0;
	if ((sl->since != 0 && qi->received_at < sl->since) ||
	    (sl->until != 0 && qi->received_at > sl->until))
		return 0;
	if (sl->event_type != NULL && sl->event_type[0] != '\0' &&
	    strcmp(sl->event_type, qi->event_type) != 0)
		return 0;
	sl->seqs[sl->n++] = qi->seq;
	sl->bytes += qi->size;
	return 0;
}

/* A release set up, nothing sent yet.  -1 with err if one runs. */
static int
release_start(const char *source, const char *id,
    void (*done)(void *, json_t *), void *arg, char *err, size_t errlen)
{
	struct timeval tv = { 1, 0 };

	if (rel.running) {
		snprintf(err, errlen, "a release is already running");
		return -1;
	}
	memset(&rel, 0, sizeof(rel));
	rel.started = time_mono_ms();
	rel.running = 1;
	snprintf(rel.source, sizeof(rel.source), "%s", source ? source : "");
	snprintf(rel.id, sizeof(rel.id), "%s", id ? id : "");
	rel.done = done;
	rel.arg = arg;
	rel.budget = UINT64_MAX;
	rel.ev_timer = event_new(env->base, -1, EV_PERSIST, release_timer,
	    NULL);
	event_add(rel.ev_timer, &tv);
	return 0;
}

int
quarantine_release(const char *source, const char *id,
    void (*done)(void *, json_t *), void *arg, char *err, size_t errlen)
{
	if (release_start(source, id, done, arg, err, errlen) == -1)
		return -1;
	release_pump();
	return 0;
}

int
quarantine_release_paced(const unsigned char *replay_id, const char *source,
    const char *event_type, uint64_t after_seq, uint64_t below_seq,
    uint64_t since, uint64_t until,
    void (*done)(void *, json_t *), void *arg, char *err, size_t errlen)
{
	if (release_start(source, NULL, done, arg, err, errlen) == -1)
		return -1;
	rel.paced = 1;
	memcpy(rel.replay_id, replay_id, UUID_LEN);
	rel.budget = 0;
	rel.cursor = after_seq;
	rel.below = below_seq;
	rel.since = since;
	rel.until = until;
	snprintf(rel.event_type, sizeof(rel.event_type), "%s",
	    event_type != NULL ? event_type : "");
	return 0;
}

uint64_t
quarantine_grant(void *arg, uint64_t n)
{
	if (!rel.running || rel.arg != arg || rel.walked)
		return 0;
	rel.budget += n;
	release_pump();
	return n;
}

void
quarantine_progress(void *arg, uint64_t *seq, uint64_t *released,
    uint64_t *kept)
{
	uint64_t low;
	int k;

	*seq = *released = *kept = 0;
	if (rel.arg != arg)
		return;
	low = rel.cursor;
	for (k = 0; k < QUARANTINE_WINDOW; k++)
		if ((rel.checks[k].id != 0 || rel.checks[k].committing) &&
		    rel.checks[k].seq <= low)
			low = rel.checks[k].seq - 1;
	*seq = low;
	*released = rel.released;
	*kept = rel.kept + rel.failed;
}

void
quarantine_release_end(void *arg)
{
	if (!rel.running || rel.arg != arg)
		return;
	rel.walked = rel.stopped = 1;
	release_pump();
}

void
quarantine_release_detach(void *arg)
{
	if (rel.running && rel.arg == arg) {
		rel.done = NULL;
		rel.arg = NULL;
		/* A job's release stops with its job; ankusactl's goes on
		 * without its client. */
		if (rel.paced)
			rel.walked = rel.stopped = 1;
	}
}

/* Send one held hook to an edge to re-verify. */
static int
release_send(struct check *ck)
{
	const struct store_hook *h = &ck->rec->hook;
	struct msg m;
	uint32_t serial = supervisor_pick_edge();
	int i;

	if (serial == 0)
		return -1;
	ck->id = next_check_id++;
	ck->sent = time_mono_ms();
	msg_init(&m, MSG_QUARANTINE_CHECK, ck->id);
	msg_add_str(&m, h->tenant);
	msg_add_str(&m, h->source);
	msg_add_str(&m, h->method);
	msg_add_str(&m, h->path);
	msg_add_str(&m, h->content_type);
	msg_add_u64(&m, h->received_at);
	msg_add_u32(&m, h->nheaders);
	for (i = 0; i < h->nheaders; i++) {
		msg_add_str(&m, h->headers[i].name);
		msg_add_str(&m, h->headers[i].value);
	}
	if (proc_add_body(&m, "held", h->body, h->body_len) == -1) {
		log_warn("quarantine: memfd");
		msg_free(&m);
		return -1;
	}
	if (supervisor_send(serial, &m) == -1) {
		msg_free(&m);
		return -1;
	}
	msg_free(&m);
	return 0;
}

static void
release_pump(void)
{
	struct seqlist sl;
	int i, k;

	/* Verifying needs an edge; right after a reload the new ones may
	 * still be starting: the timer tries again each second. */
	if (supervisor_pick_edge() == 0 && !rel.walked) {
		if (time_mono_ms() - (rel.edge_seen ? rel.edge_seen :
		    rel.started) > QUARANTINE_CHECK_MS) {
			log_warnx("quarantine: release: no edge is ready to "
			    "verify; stopping");
			rel.walked = rel.stopped = 1;
		} else
			return;
	} else
		rel.edge_seen = time_mono_ms();
	while (!rel.walked && rel.out + rel.committing < QUARANTINE_WINDOW &&
	    rel.budget > 0) {
		memset(&sl, 0, sizeof(sl));
		sl.id = rel.id;
		sl.last = rel.cursor;
		sl.below = rel.below;
		sl.since = rel.since;
		sl.until = rel.until;
		sl.event_type = rel.event_type;
		if (store_quarantine_list(env->store, rel.source[0] ?
		    rel.source : NULL, rel.cursor, QUARANTINE_WINDOW - rel.out -
		    rel.committing < rel.budget ? QUARANTINE_WINDOW - rel.out -
		    rel.committing : rel.budget, collect_seq, &sl) == -1) {
			log_warnx("quarantine: release: %s",
			    store_strerror(env->store));
			rel.walked = rel.stopped = 1;
			break;
		}
		if (sl.last == rel.cursor || sl.end)
			rel.walked = 1;
		rel.cursor = sl.last;
		for (i = 0; i < sl.n; i++) {
			struct store_hook_rec *rec;
			char reason[64];

			if ((rec = calloc(1, sizeof(*rec))) == NULL)
				fatal("quarantine");
			if (store_quarantine_get(env->store, sl.seqs[i], rec,
			    reason, sizeof(reason)) != 1) {
				free(rec);
				rel.failed++;
				continue;
			}
			if (conf_source(env->conf, rec->hook.source) == NULL) {
				/* Its source is gone: nothing to verify
				 * against, it stays held. */
				store_hook_rec_free(rec);
				free(rec);
				rel.kept++;
				continue;
			}
			for (k = 0; k < QUARANTINE_WINDOW; k++)
				if (rel.checks[k].id == 0 &&
				    !rel.checks[k].committing)
					break;
			rel.checks[k].seq = sl.seqs[i];
			rel.checks[k].rec = rec;
			if (release_send(&rel.checks[k]) == -1) {
				store_hook_rec_free(rec);
				free(rec);
				memset(&rel.checks[k], 0, sizeof(rel.checks[k]));
				rel.kept++;
				continue;
			}
			rel.out++;
			if (rel.budget != UINT64_MAX)
				rel.budget--;
		}
	}
	if (rel.walked && rel.out == 0 && rel.committing == 0)
		release_finish();
}

static void
release_finish(void)
{
	json_t *o;

	event_free(rel.ev_timer);
	rel.ev_timer = NULL;
	rel.running = 0;
	log_info("quarantine: release done: %llu released, %llu kept, "
	    "%llu failed", (unsigned long long)rel.released,
	    (unsigned long long)rel.kept, (unsigned long long)rel.failed);
	if (rel.done == NULL)
		return;
	o = json_pack("{s:I, s:I, s:I}", "released", (json_int_t)rel.released,
	    "kept", (json_int_t)rel.kept, "failed", (json_int_t)rel.failed);
	if (rel.paced)
		json_object_set_new(o, "walked", json_boolean(!rel.stopped));
	rel.done(rel.arg, o);
}

/* Checks that an edge took with it when it died are counted as kept. */
static void
release_timer(evutil_socket_t fd, short ev, void *arg)
{
	uint64_t now = time_mono_ms();
	int k;

	for (k = 0; k < QUARANTINE_WINDOW; k++) {
		struct check *ck = &rel.checks[k];

		if (ck->id == 0 || now - ck->sent < QUARANTINE_CHECK_MS)
			continue;
		log_warnx("quarantine: no verdict for held hook seq %llu; "
		    "it stays held", (unsigned long long)ck->seq);
		store_hook_rec_free(ck->rec);
		free(ck->rec);
		memset(ck, 0, sizeof(*ck));
		rel.out--;
		rel.kept++;
	}
	release_pump();
}

static void
release_committed(void *arg, int ok)
{
	struct check *ck = arg;

	memset(ck, 0, sizeof(*ck));
	rel.committing--;
	if (ok)
		rel.released++;
	else
		rel.failed++;
	if (rel.running)
		release_pump();
}

int
quarantine_verdict(uint32_t serial, struct msg *m)
{
	struct check *ck = NULL;
	const char *reason;
	uint8_t pass;
	int k;

	for (k = 0; k < QUARANTINE_WINDOW; k++)
		if (rel.running && rel.checks[k].id == m->id &&
		    rel.checks[k].id != 0)
			ck = &rel.checks[k];
	if (msg_get_u8(m, &pass) == -1 || msg_get_str(m, &reason) == -1 ||
	    (!pass && msg_end(m) == -1))
		return -1;
	if (ck == NULL)
		return 0;	/* timed out already */
	rel.out--;
	if (!pass) {
		log_info("quarantine: held hook seq %llu still fails: %s",
		    (unsigned long long)ck->seq, reason);
		store_hook_rec_free(ck->rec);
		free(ck->rec);
		rel.kept++;
	} else if (writer_release(ck->rec, ck->seq, m, rel.paced ?
	    rel.replay_id : NULL, release_committed, ck) == -1) {
		memset(ck, 0, sizeof(*ck));
		release_pump();
		return -1;
	} else {
		/* The slot is the commit's until it is done. */
		rel.committing++;
		ck->id = 0;
		ck->rec = NULL;
		ck->committing = 1;
		release_pump();
		return 0;
	}
	memset(ck, 0, sizeof(*ck));
	release_pump();
	return 0;
}

int
quarantine_purge_step(const char *source, const char *id, uint64_t *cursor,
    uint64_t *n, uint64_t *bytes, char *err, size_t errlen)
{
	struct store_batch *sb;
	struct seqlist sl;
	int i;

	memset(&sl, 0, sizeof(sl));
	sl.id = id;
	sl.last = *cursor;
	if (store_quarantine_list(env->store, source, *cursor,
	    QUARANTINE_PURGE_CHUNK, collect_seq, &sl) == -1)
		goto fail;
	if (sl.last == *cursor)
		return 0;
	*cursor = sl.last;
	if (sl.n == 0)
		return 1;
	if ((sb = store_batch_begin(env->store)) == NULL)
		goto fail;
	for (i = 0; i < sl.n; i++)
		if (store_batch_del_quarantine(sb, sl.seqs[i]) == -1) {
			store_batch_abort(sb);
			goto fail;
		}
	if (store_batch_commit(sb) == -1)
		goto fail;
	*n += sl.n;
	*bytes += sl.bytes;
	return 1;
 fail:
	snprintf(err, errlen, "store: %s", store_strerror(env->store));
	return -1;
}

int64_t
quarantine_purge(const char *source, const char *id, char *err,
    size_t errlen)
{
	uint64_t cursor = 0, n = 0, bytes = 0;
	int rc;

	while ((rc = quarantine_purge_step(source, id, &cursor, &n, &bytes,
	    err, errlen)) == 1)
		;
	return rc == -1 ? -1 : (int64_t)n;
}
