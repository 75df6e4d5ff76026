/* SPDX-License-Identifier: ISC */
/*
 * sinkq.c: sink keys and slot round-robin; see sinkq.h.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "dispatch.h"
#include "log.h"
#include "sinkq.h"

struct dsinkq *
sinkq_get(struct dtenant *t, const char *source, uint32_t sink,
    uint8_t module)
{
	struct dsinkq *q;

	TAILQ_FOREACH(q, &t->keys, all)
		if (q->sink == sink && q->module == module &&
		    strcmp(q->source, source) == 0)
			return q;
	if ((q = calloc(1, sizeof(*q))) == NULL)
		fatal("sinkq_get");
	snprintf(q->source, sizeof(q->source), "%s", source);
	q->sink = sink;
	q->module = module;
	q->t = t;
	TAILQ_INIT(&q->queue);
	breaker_init(&q->br);
	TAILQ_INSERT_TAIL(&t->keys, q, all);
	t->nkeys++;
	return q;
}

void
sinkq_maybe_free(struct dsinkq *q)
{
	if (q->claimed != 0 || q->running != 0 || q->nqueued != 0 ||
	    !breaker_is_idle(&q->br))
		return;
	if (q->in_ring)
		TAILQ_REMOVE(&q->t->ready, q, ring);
	TAILQ_REMOVE(&q->t->keys, q, all);
	q->t->nkeys--;
	free(q);
}

void
sinkq_push(struct dsinkq *q, struct drow *r)
{
	TAILQ_INSERT_TAIL(&q->queue, r, link);
	q->nqueued++;
}

struct drow *
sinkq_pop(struct dsinkq *q)
{
	struct drow *r;

	if ((r = TAILQ_FIRST(&q->queue)) == NULL)
		return NULL;
	TAILQ_REMOVE(&q->queue, r, link);
	q->nqueued--;
	return r;
}

void
sinkq_ready(struct dtenant_list *ring, struct dsinkq *q)
{
	if (q->nqueued == 0 || q->batched)
		return;		/* batching keys are served apart */
	if (!q->in_ring) {
		TAILQ_INSERT_TAIL(&q->t->ready, q, ring);
		q->in_ring = 1;
	}
	if (!q->t->in_ring) {
		TAILQ_INSERT_TAIL(ring, q->t, ring);
		q->t->in_ring = 1;
	}
}

/* Keys with nothing queued leave their tenant's ring, and a tenant with
 * no ready key left leaves the dispatch's: the walks below prune as they
 * go.  Returns whether q left. */
static int
key_prune(struct dtenant *t, struct dsinkq *q)
{
	if (q->nqueued != 0)
		return 0;
	TAILQ_REMOVE(&t->ready, q, ring);
	q->in_ring = 0;
	return 1;
}

static void
tenant_prune(struct dtenant_list *ring, struct dtenant *t)
{
	if (TAILQ_EMPTY(&t->ready)) {
		TAILQ_REMOVE(ring, t, ring);
		t->in_ring = 0;
	}
}

struct dsinkq *
sinkq_next(struct dtenant_list *ring, uint32_t cap)
{
	struct dtenant *t, *tnext, *tlast;
	struct dsinkq *q, *qnext, *qlast;

	/* One lap of the tenant ring at most; tenants and keys with nothing
	 * queued leave their rings on the way. */
	tlast = TAILQ_LAST(ring, dtenant_list);
	for (t = TAILQ_FIRST(ring); t != NULL; t = tnext) {
		tnext = t == tlast ? NULL : TAILQ_NEXT(t, ring);
		if (window_may_run(&t->win)) {
			qlast = TAILQ_LAST(&t->ready, dsinkq_list);
			for (q = TAILQ_FIRST(&t->ready); q != NULL; q = qnext) {
				qnext = q == qlast ? NULL : TAILQ_NEXT(q, ring);
				if (key_prune(t, q))
					continue;
				if (q->batched ||
				    (cap != 0 && q->running >= cap))
					continue;
				/* Both to the back: the next slot goes to
				 * another tenant, then another key. */
				TAILQ_REMOVE(&t->ready, q, ring);
				TAILQ_INSERT_TAIL(&t->ready, q, ring);
				TAILQ_REMOVE(ring, t, ring);
				TAILQ_INSERT_TAIL(ring, t, ring);
				return q;
			}
		}
		tenant_prune(ring, t);
	}
	return NULL;
}

void
sinkq_unturn(struct dtenant_list *ring, struct dsinkq *q)
{
	struct dtenant *t = q->t;

	TAILQ_REMOVE(&t->ready, q, ring);
	TAILQ_INSERT_HEAD(&t->ready, q, ring);
	TAILQ_REMOVE(ring, t, ring);
	TAILQ_INSERT_HEAD(ring, t, ring);
}

int
sinkq_waiting(struct dtenant_list *ring, struct dsinkq **sole)
{
	struct dtenant *t, *tnext;
	struct dsinkq *q, *qnext;
	int n = 0;

	*sole = NULL;
	for (t = TAILQ_FIRST(ring); t != NULL && n < 2; t = tnext) {
		tnext = TAILQ_NEXT(t, ring);
		for (q = TAILQ_FIRST(&t->ready); q != NULL && n < 2;
		    q = qnext) {
			qnext = TAILQ_NEXT(q, ring);
			if (key_prune(t, q))
				continue;
			*sole = q;
			n++;
		}
		tenant_prune(ring, t);
	}
	if (n != 1)
		*sole = NULL;
	return n;
}
