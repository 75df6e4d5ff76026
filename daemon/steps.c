/* SPDX-License-Identifier: ISC */
/*
 * steps.c: jobs in bounded steps on the master's loop, in turn; see
 * steps.h.
 *
 * Fatal: an event that cannot be made.
 */
#include "config.h"

#include <sys/queue.h>
#include <sys/time.h>

#include <stddef.h>
#include <stdio.h>

#include <event2/event.h>

#include "log.h"
#include "master.h"
#include "steps.h"
#include "store/store.h"

static void	steps_cb(evutil_socket_t, short, void *);
static void	steps_arm(struct steps *);

void
steps_init(struct steps *s, struct event_base *base)
{
	TAILQ_INIT(&s->jobs);
	if ((s->ev = evtimer_new(base, steps_cb, s)) == NULL)
		fatalx("steps: evtimer_new");
}

void
steps_add(struct steps *s, struct step_job *j)
{
	TAILQ_INSERT_TAIL(&s->jobs, j, entry);
	steps_arm(s);
}

void
steps_end(struct steps *s, struct step_job *j)
{
	TAILQ_REMOVE(&s->jobs, j, entry);
}

static void
steps_arm(struct steps *s)
{
	struct timeval tv = { 0, 0 };

	if (!TAILQ_EMPTY(&s->jobs) && !evtimer_pending(s->ev, NULL))
		evtimer_add(s->ev, &tv);
}

/* One step of the first job, which then goes to the back of the line. */
static void
steps_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct steps *s = arg;
	struct step_job *j;

	if ((j = TAILQ_FIRST(&s->jobs)) == NULL)
		return;
	if (j->step(j) == 1 && TAILQ_FIRST(&s->jobs) == j) {
		TAILQ_REMOVE(&s->jobs, j, entry);
		TAILQ_INSERT_TAIL(&s->jobs, j, entry);
	}
	steps_arm(s);
}

int
steps_store_failed(char *err, size_t errlen)
{
	snprintf(err, errlen, "store: %s", store_strerror(env->store));
	master_store_check();
	return -1;
}
