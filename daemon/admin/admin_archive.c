/* SPDX-License-Identifier: ISC */
/*
 * admin_archive.c: the search of hooks, a tenant's erase and the upkeep
 * of the delivered hooks kept; see admin_archive.h.
 *
 * The upkeep timer runs every ARCHIVE_UPKEEP_MS: it tells the store
 * whether delivered hooks are kept (retention.delivered_s, reloadable),
 * and, on a node that writes, starts the prune when the oldest kept hook
 * is older than retention.delivered_s or the archive holds more than
 * retention.max_bytes: a job of steps of ARCHIVE_PRUNE_STEP hooks, each
 * committed lazily (a crash loses a prune, which the next tick does
 * again).
 *
 * Fatal: nothing; a store error ends a job with 503 (the erase) or a
 * warning (the prune).
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "admin_api.h"
#include "admin_archive.h"
#include "clock.h"
#include "conf.h"
#include "ids.h"
#include "log.h"
#include "master.h"
#include "repl.h"
#include "steps.h"
#include "store/store.h"

#define ARCHIVE_UPKEEP_MS	1000
#define ARCHIVE_PRUNE_STEP	256	/* kept hooks deleted a step */
#define ARCHIVE_ORPHAN_MS	100	/* the erase's look at its orphans */
#define ARCHIVE_ORPHAN_MAX_MS	600000	/* and how long it waits for them */

/* A hook or held hook a page read, before its state is known. */
struct cand {
	struct store_hook_info	 h;
	int			 pen;
};

/* A page's reading of one window of seqs. */
struct page {
	const struct archive_filter *f;
	uint64_t		 lo, hi;	/* the window: [lo, hi) */
	struct cand		*c;
	size_t			 n;
	uint64_t		 oldest;	/* the least received_at read */
};

/* A row the erase left to its attempt (claimed), with its hook's id. */
struct orphan {
	unsigned char		 rk[STORE_ROWKEY_LEN];
	unsigned char		 id[UUID_LEN];
};

struct archive_job {
	struct step_job		 sj;		/* first: steps.c's */
	char			 tenant[CONF_ID_MAX + 1];
	uint64_t		 since, until;
	uint64_t		 after_seq;	/* the hooks' walk */
	int			 hooks_done;
	struct store_dedupe_erase de;		/* then the dedupe's */
	uint64_t		*seqs;
	unsigned char		(*ids)[UUID_LEN];	/* the seqs' hooks' */
	size_t			 nseqs;
	size_t			 cur;		/* the hook being erased */
	struct orphan		*orph;		/* then these, once settled */
	size_t			 norph, corph;
	uint64_t		 waited;	/* ms, for them */
	struct event		*ev;		/* the wait's */
	uint64_t		 read;
	uint64_t		 deleted, bytes;
	void			(*done)(void *, int, json_t *);
	void			*arg;
};

static struct dlq_ops	 ops;
static struct event	*ev_upkeep;
static struct steps	 jobs;
static struct step_job	 prune_job;
static int		 prune_running;

static void	 upkeep_cb(evutil_socket_t, short, void *);
static int	 prune_step(struct step_job *);
static int	 erase_step(struct step_job *);
static void	 erase_end(struct archive_job *, int);
static int	 erase_orphans(struct archive_job *);
static void	 erase_wait_cb(evutil_socket_t, short, void *);

void
archive_init(const struct dlq_ops *o)
{
	struct timeval tv = { ARCHIVE_UPKEEP_MS / 1000,
	    (ARCHIVE_UPKEEP_MS % 1000) * 1000 };

	ops = *o;
	steps_init(&jobs, env->base);
	store_archive_keep(env->store, env->conf->retention.delivered_s > 0);
	if ((ev_upkeep = event_new(env->base, -1, EV_PERSIST, upkeep_cb,
	    NULL)) == NULL)
		fatalx("archive: event_new");
	event_add(ev_upkeep, &tv);
}

/*
 * The upkeep and the prune.
 */

/* The cut of kept hooks by age: those kept before it go. */
static uint64_t
prune_cut(void)
{
	uint64_t now = time_wall_ms();
	uint64_t age = env->conf->retention.delivered_s * 1000;

	return now > age ? now - age : 0;
}

static void
upkeep_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct store_counts c;
	uint64_t max = env->conf->retention.max_bytes, oldest;
	int ret;

	store_archive_keep(env->store, env->conf->retention.delivered_s > 0);
	if (prune_running || env->draining || !repl_writable() ||
	    store_counts(env->store, &c) == -1 || c.ahooks == 0)
		return;
	if ((max == 0 || c.abytes <= max) &&
	    ((ret = store_archive_oldest(env->store, &oldest)) != 1 ||
	    oldest >= prune_cut()))
		return;
	prune_running = 1;
	prune_job.step = prune_step;
	steps_add(&jobs, &prune_job);
}

/* One batch of deletions: 1 when more may be left, 0 at the end (or on
 * a store error, logged: the next tick tries again). */
static int
prune_step(struct step_job *j)
{
	struct store_batch *b;
	uint64_t freed = 0;
	int n = -1;

	if (!env->draining && (b = store_batch_begin(env->store)) != NULL) {
		if ((n = store_batch_archive_prune(b, prune_cut(),
		    env->conf->retention.max_bytes, ARCHIVE_PRUNE_STEP,
		    &freed)) == -1)
			store_batch_abort(b);
		else if (store_batch_commit_lazy(b) == -1)
			n = -1;
		if (n == -1) {
			log_warnx("archive: prune: %s",
			    store_strerror(env->store));
			master_store_check();
		} else if (n > 0)
			log_debug("archive: %d kept hooks pruned, %" PRIu64
			    " bytes", n, freed);
	}
	if (n == ARCHIVE_PRUNE_STEP)
		return 1;
	steps_end(&jobs, j);
	prune_running = 0;
	return 0;
}

/*
 * The search.
 */

static int
page_take(struct page *p, const struct store_hook_info *h, int pen)
{
	const struct archive_filter *f = p->f;

	if (h->seq >= p->hi)
		return 1;
	if (h->received_at < p->oldest)
		p->oldest = h->received_at;
	if ((f->source[0] != '\0' && strcmp(f->source, h->source) != 0) ||
	    (f->tenant[0] != '\0' && strcmp(f->tenant, h->tenant) != 0) ||
	    (f->event_type[0] != '\0' &&
	    strcmp(f->event_type, h->event_type) != 0) ||
	    h->received_at < f->since || h->received_at > f->until)
		return 0;
	p->c[p->n].h = *h;
	p->c[p->n].pen = pen;
	p->n++;
	return 0;
}

static int
page_hook_fn(const struct store_hook_info *h, void *arg)
{
	return page_take(arg, h, 0);
}

static int
page_pen_fn(const struct store_quarantine_info *q, void *arg)
{
	struct store_hook_info h;

	memset(&h, 0, sizeof(h));
	h.seq = q->seq;
	memcpy(h.id, q->id, sizeof(h.id));
	memcpy(h.tenant, q->tenant, sizeof(h.tenant));
	memcpy(h.source, q->source, sizeof(h.source));
	h.received_at = q->received_at;
	h.size = q->size;
	memcpy(h.event_type, q->event_type, sizeof(h.event_type));
	return page_take(arg, &h, 1);
}

static int
dead_row_fn(const unsigned char *rk, const struct store_row *r,
    const struct store_dead_info *di, void *arg)
{
	if (r->state != STORE_ROW_DEAD)
		return 0;
	*(int *)arg = 1;
	return 1;
}

static const char *
state_name(int state)
{
	switch (state) {
	case ARCHIVE_PENDING:
		return "pending";
	case ARCHIVE_DEAD:
		return "dead";
	case ARCHIVE_DELIVERED:
		return "delivered";
	case ARCHIVE_QUARANTINED:
		return "quarantined";
	}
	return "unknown";
}

/* A candidate's state: its kept mark, or a read of its rows.  -1 on a
 * store error. */
static int
cand_state(const struct cand *c)
{
	int dead = 0;

	if (c->pen)
		return ARCHIVE_QUARANTINED;
	if (c->h.kept)
		return ARCHIVE_DELIVERED;
	if (store_hook_rows(env->store, c->h.seq, dead_row_fn, &dead) == -1)
		return -1;
	return dead ? ARCHIVE_DEAD : ARCHIVE_PENDING;
}

int
archive_search(const struct archive_filter *f, json_t **out)
{
	struct page p;
	unsigned char cur[8];
	uint64_t next = 0;
	json_t *entries;
	size_t i;
	int st, more = 0;

	memset(&p, 0, sizeof(p));
	p.f = f;
	p.hi = f->before_seq;
	if (p.hi == 0 && store_seq_bound(env->store, &p.hi) == -1) {
		*out = dlq_store_error();
		return 503;
	}
	p.lo = p.hi > ARCHIVE_PAGE_SEQS + 1 ? p.hi - ARCHIVE_PAGE_SEQS : 1;
	p.oldest = UINT64_MAX;
	/* At most one of each seq in the window, in the two tables. */
	if ((p.c = calloc(p.hi - p.lo + 1, sizeof(*p.c))) == NULL)
		fatal("archive");
	if ((f->state != ARCHIVE_QUARANTINED && store_hooks_list(env->store,
	    NULL, p.lo - 1, 0, page_hook_fn, &p) == -1) ||
	    ((f->state == ARCHIVE_ANY || f->state == ARCHIVE_QUARANTINED) &&
	    store_quarantine_list(env->store, NULL, p.lo - 1, 0, page_pen_fn,
	    &p) == -1))
		goto fail;
	entries = json_array();
	/* Newest first: the pen's and the hooks' by seq. */
	while (p.n > 0) {
		size_t best = 0;

		for (i = 1; i < p.n; i++)
			if (p.c[i].h.seq > p.c[best].h.seq)
				best = i;
		if ((st = cand_state(&p.c[best])) == -1) {
			json_decref(entries);
			goto fail;
		}
		if (f->state == ARCHIVE_ANY || f->state == st) {
			if (json_array_size(entries) == f->limit) {
				more = 1;
				break;
			}
			json_array_append_new(entries, json_pack("{s:s, s:I, "
			    "s:o, s:o, s:I, s:I, s:s, s:i, s:b, s:o}",
			    "id", p.c[best].h.id,
			    "seq", (json_int_t)p.c[best].h.seq,
			    "tenant_id", admin_str(p.c[best].h.tenant),
			    "source_id", admin_str(p.c[best].h.source),
			    "received_at",
			    (json_int_t)p.c[best].h.received_at,
			    "size", (json_int_t)p.c[best].h.size,
			    "state", state_name(st),
			    "rows", (int)p.c[best].h.rows,
			    "flagged", p.c[best].h.flagged,
			    "event_type", p.c[best].h.event_type[0] != '\0' ?
			    admin_str(p.c[best].h.event_type) :
			    json_null()));
			next = p.c[best].h.seq;
		}
		p.c[best] = p.c[--p.n];
	}
	/* The next page: below the last one listed when this one is full,
	 * else below the window, unless the store's start or since (with
	 * its slack) is reached. */
	if (!more) {
		next = p.lo;
		if (p.lo <= 1 || (f->since > ARCHIVE_SINCE_SLACK_MS &&
		    p.oldest != UINT64_MAX && p.oldest < f->since -
		    ARCHIVE_SINCE_SLACK_MS))
			next = 0;
	}
	free(p.c);
	*out = json_pack("{s:o}", "entries", entries);
	if (next != 0) {
		for (i = 0; i < 8; i++)
			cur[i] = (unsigned char)(next >> (56 - 8 * i));
		json_object_set_new(*out, "next_cursor", admin_cursor(cur,
		    sizeof(cur)));
	} else
		json_object_set_new(*out, "next_cursor", json_null());
	return 200;
 fail:
	free(p.c);
	*out = dlq_store_error();
	return 503;
}

/*
 * The erase.
 */

struct archive_job *
archive_erase(const char *tenant, uint64_t since, uint64_t until,
    void (*done)(void *, int, json_t *), void *arg)
{
	struct archive_job *j;

	if ((j = calloc(1, sizeof(*j))) == NULL ||
	    (j->seqs = calloc(ARCHIVE_ERASE_VISITS, sizeof(*j->seqs))) ==
	    NULL || (j->ids = calloc(ARCHIVE_ERASE_VISITS,
	    sizeof(*j->ids))) == NULL ||
	    (j->ev = evtimer_new(env->base, erase_wait_cb, j)) == NULL)
		fatal("archive");
	snprintf(j->tenant, sizeof(j->tenant), "%s", tenant);
	j->since = since;
	j->until = until;
	j->de.tenant = j->tenant;
	j->de.since = since;
	j->de.until = until;
	j->de.visits = ARCHIVE_ERASE_VISITS;
	j->done = done;
	j->arg = arg;
	j->sj.step = erase_step;
	steps_add(&jobs, &j->sj);
	return j;
}

void *
archive_detach(struct archive_job *j)
{
	void *arg = j->arg;

	/* A right to erasure is not withdrawn by a closed connection: the
	 * job goes on to its end, answering nobody. */
	j->done = NULL;
	return arg;
}

static int
erase_hook_fn(const struct store_hook_info *h, void *arg)
{
	struct archive_job *j = arg;

	j->read++;
	j->after_seq = h->seq;
	if (strcmp(h->tenant, j->tenant) == 0 && h->received_at >= j->since &&
	    h->received_at <= j->until &&
	    uuid_parse(h->id, j->ids[j->nseqs]) == 0)
		j->seqs[j->nseqs++] = h->seq;
	return 0;
}

/* ops.claimed, noting each row it names as an orphan of the hook being
 * erased. */
static int
erase_claimed(const unsigned char *rk, void *arg)
{
	struct archive_job *j = arg;
	struct orphan *o;

	if (!ops.claimed(rk, ops.arg))
		return 0;
	if (j->norph == j->corph) {
		j->corph = j->corph == 0 ? 16 : 2 * j->corph;
		if ((o = reallocarray(j->orph, j->corph, sizeof(*o))) == NULL)
			fatal("archive");
		j->orph = o;
	}
	memcpy(j->orph[j->norph].rk, rk, STORE_ROWKEY_LEN);
	memcpy(j->orph[j->norph].id, j->ids[j->cur], UUID_LEN);
	j->norph++;
	return 1;
}

/* One step: a page of hooks read and its tenant's deleted, then steps of
 * dedupe entries, each in a synced batch.  1 more to do, 0 answered. */
static int
erase_step(struct step_job *sj)
{
	struct archive_job *j = (struct archive_job *)sj;
	struct store_batch *b;
	uint64_t bytes;
	size_t i;
	int ret;

	if (j->hooks_done && j->de.end)
		return erase_orphans(j);
	j->nseqs = 0;
	j->read = 0;
	if (!j->hooks_done && store_hooks_list(env->store, NULL, j->after_seq,
	    ARCHIVE_ERASE_VISITS, erase_hook_fn, j) == -1)
		goto fail;
	if (j->read < ARCHIVE_ERASE_VISITS)
		j->hooks_done = 1;
	if ((b = store_batch_begin(env->store)) == NULL)
		goto fail;
	/* A claimed row stays, an orphan: its attempt's settle finds no
	 * hook, and nothing of it is delivered or kept after that; the
	 * erase ends once they have settled (erase_orphans).  The hook's
	 * attempts go with it. */
	for (i = 0; i < j->nseqs; i++) {
		j->cur = i;
		if ((ret = store_batch_hook_erase(b, j->seqs[i], erase_claimed,
		    j, &bytes)) == -1)
			goto abort;
		if (ret == 1) {
			j->deleted++;
			j->bytes += bytes;
		}
	}
	if (j->hooks_done && !j->de.end &&
	    store_batch_dedupe_erase(b, &j->de) == -1)
		goto abort;
	if (store_batch_commit(b) == -1)
		goto fail;
	if (j->nseqs > 0)
		ops.changed(ops.arg);
	if (!j->hooks_done || !j->de.end)
		return 1;
	return erase_orphans(j);
 abort:
	store_batch_abort(b);
 fail:
	erase_end(j, 503);
	return 0;
}

/*
 * The orphans, once no attempt holds them: the rows a settle rescheduled
 * (dropped as the orphans they are) and the attempts their settles wrote,
 * so that nothing of the erased hooks is left.  Until then the job looks
 * again every ARCHIVE_ORPHAN_MS, off the steps' line.  0: it waits, or it
 * answered.
 */
static int
erase_orphans(struct archive_job *j)
{
	struct store_batch *b;
	size_t i;

	for (i = 0; i < j->norph; i++)
		if (ops.claimed(j->orph[i].rk, ops.arg))
			break;
	if (i < j->norph && j->waited < ARCHIVE_ORPHAN_MAX_MS) {
		struct timeval tv = { 0, ARCHIVE_ORPHAN_MS * 1000 };

		steps_end(&jobs, &j->sj);
		j->waited += ARCHIVE_ORPHAN_MS;
		evtimer_add(j->ev, &tv);
		return 0;
	}
	if (i < j->norph)
		log_warnx("archive: tenant %s: a row of an erased hook is "
		    "still claimed after %d s: its attempt's record may stay",
		    j->tenant, ARCHIVE_ORPHAN_MAX_MS / 1000);
	if (j->norph > 0) {
		if ((b = store_batch_begin(env->store)) == NULL)
			goto fail;
		for (i = 0; i < j->norph; i++)
			if ((!ops.claimed(j->orph[i].rk, ops.arg) &&
			    store_batch_row_dead(b, j->orph[i].rk,
			    time_wall_ms(), "erased", NULL, 0) == -1) ||
			    store_batch_attempts_drop(b, j->orph[i].id) == -1) {
				store_batch_abort(b);
				goto fail;
			}
		if (store_batch_commit(b) == -1)
			goto fail;
	}
	log_info("archive: tenant %s erased: %" PRIu64 " hooks, %" PRIu64
	    " body bytes, %" PRIu64 " dedupe entries, %zu rows left to their "
	    "attempts", j->tenant, j->deleted, j->bytes, j->de.deleted,
	    j->norph);
	erase_end(j, 200);
	return 0;
 fail:
	erase_end(j, 503);
	return 0;
}

/* A look at the orphans again, in the steps' line. */
static void
erase_wait_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct archive_job *j = arg;

	steps_add(&jobs, &j->sj);
}

static void
erase_end(struct archive_job *j, int status)
{
	json_t *o;

	steps_end(&jobs, &j->sj);
	if (status == 200)
		o = json_pack("{s:I, s:I}", "deleted", (json_int_t)j->deleted,
		    "bytes", (json_int_t)j->bytes);
	else
		o = dlq_store_error();
	if (j->done != NULL)
		j->done(j->arg, status, o);
	else
		json_decref(o);
	event_free(j->ev);
	free(j->orph);
	free(j->ids);
	free(j->seqs);
	free(j);
}
