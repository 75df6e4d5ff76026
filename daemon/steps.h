/* SPDX-License-Identifier: ISC */
/*
 * steps.h: jobs that work in bounded steps on the master's loop, in turn:
 * one step of the first job a loop pass (a zero timer), so that what
 * became ready meanwhile (edges' hooks, outcomes, admin and control
 * requests) runs between two steps, and the job then goes to the back of
 * the line.  A job is a struct step_job embedded first in the caller's
 * own struct.
 */
#ifndef ANKUSA_STEPS_H
#define ANKUSA_STEPS_H

#include <sys/queue.h>

#include <stddef.h>

struct event;
struct event_base;

struct step_job {
	TAILQ_ENTRY(step_job)	 entry;
	/* One step: 1 more to do, 0 the job ended (steps_end called: it
	 * may be freed). */
	int			(*step)(struct step_job *);
};

TAILQ_HEAD(step_list, step_job);

struct steps {
	struct step_list	 jobs;		/* in turn, first steps next */
	struct event		*ev;
};

void	steps_init(struct steps *, struct event_base *);
/* In line, last; its steps start at the next loop pass. */
void	steps_add(struct steps *, struct step_job *);
/* Out of line (before it is freed). */
void	steps_end(struct steps *, struct step_job *);
/* A step that met a store error: the error into err ("store: ..."), the
 * master's check of a lost store (master_store_check), and -1, what the
 * step returns. */
int	steps_store_failed(char *err, size_t errlen);

#endif
