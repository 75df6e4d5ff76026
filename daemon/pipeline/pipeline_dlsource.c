/* SPDX-License-Identifier: ISC */
/*
 * pipeline_dlsource.c: the spec's dead_letter_source; see pipeline_dlsource.h.
 *
 * Each call is a cursor over the rows table (a hook's seq).  One step a
 * loop pass, from a zero timer, so that what became ready meanwhile (edges'
 * hooks, outcomes, other control requests) runs between two steps; calls
 * in progress take their steps in turn.  A step reads at most
 * DLSOURCE_VISITS rows and moves at most DLSOURCE_PAGE (plus the rest of
 * the hook it ends in) in one transaction, committed with a sync so the
 * count a caller is given stays true after a crash.
 *
 * Fatal: nothing; a store error ends the call with the error.
 */
#include "config.h"

#include <sys/queue.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>

#include "clock.h"
#include "conf.h"
#include "dispatch/dispatch.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "pipeline_dlsource.h"
#include "steps.h"
#include "store/store.h"

#define DLSOURCE_PAGE	256	/* rows dead-lettered a step */
#define DLSOURCE_VISITS	4096	/* rows read a step */

struct dlcall {
	struct step_job		 sj;		/* first: in line */
	char			 source[CONF_ID_MAX + 1];
	char			 reason[CONF_ID_MAX + 16];
	uint64_t		 deadline;	/* mono ms */
	uint64_t		 after_seq;	/* the cursor */
	uint64_t		 moved;
	uint64_t		 dropped;
	int			 seen;		/* a row of the source was read */
	void			(*done)(void *, uint64_t, const char *);
	void			*arg;
};

static struct steps	 calls;
static struct dlsource_ops ops;
static uint64_t		 moved_total;

static int	step(struct step_job *);
static void	call_end(struct dlcall *, const char *);
static int	call_step(struct dlcall *, char *, size_t);

void
dlsource_init(const struct dlsource_ops *o)
{
	ops = *o;
	steps_init(&calls, env->base);
}

void
dlsource_start(const char *source, uint64_t timeout_ms,
    void (*done)(void *, uint64_t, const char *), void *arg)
{
	struct dlcall *c;
	char why[512], err[540];

	if (!ops.up(why, sizeof(why), ops.arg)) {
		snprintf(err, sizeof(err), "unavailable: %s", why);
		done(arg, 0, err);
		return;
	}
	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("dlsource");
	snprintf(c->source, sizeof(c->source), "%s", source);
	snprintf(c->reason, sizeof(c->reason), "source_gone:%s", source);
	c->deadline = time_mono_ms() + timeout_ms;
	c->done = done;
	c->arg = arg;
	c->sj.step = step;
	log_info("dlsource: dead-lettering the pending rows of source %s",
	    source);
	/* From here to call_end dispatch claims nothing of the source. */
	ops.hold(c->source, 1, ops.arg);
	/* Claimed but not started: pending too, and settled by dispatch
	 * (which counts them for tick: not in moved_total). */
	c->moved = ops.queued(source, c->reason, ops.arg);
	if (c->moved > 0)
		c->seen = 1;
	steps_add(&calls, &c->sj);
}

void
dlsource_detach(void *arg)
{
	struct step_job *j, *next;
	struct dlcall *c;

	for (j = TAILQ_FIRST(&calls.jobs); j != NULL; j = next) {
		next = TAILQ_NEXT(j, entry);
		c = (struct dlcall *)j;
		if (c->arg == arg) {
			c->done = NULL;
			call_end(c, "its caller went away");
		}
	}
}

void
dlsource_stop(void)
{
	struct step_job *j;
	char why[512], err[540];

	if (ops.up(why, sizeof(why), ops.arg))
		snprintf(why, sizeof(why), "the pipeline is stopping");
	snprintf(err, sizeof(err), "unavailable: %s", why);
	while ((j = TAILQ_FIRST(&calls.jobs)) != NULL)
		call_end((struct dlcall *)j, err);
}

int
dlsource_busy(void)
{
	return !TAILQ_EMPTY(&calls.jobs);
}

uint64_t
dlsource_moved(void)
{
	return moved_total;
}

/* One step of a call: 1 more to do, 0 it ended. */
static int
step(struct step_job *j)
{
	struct dlcall *c = (struct dlcall *)j;
	char err[256], why[320];
	int rc;

	if ((rc = call_step(c, err, sizeof(err))) == -1)
		call_end(c, err);
	else if (rc == 0) {
		/* Known: configured, or named by a row, dead ones too. */
		if (!c->seen && conf_source(env->conf, c->source) == NULL) {
			snprintf(why, sizeof(why), "unknown source %s",
			    c->source);
			call_end(c, why);
		} else
			call_end(c, NULL);
	} else if (time_mono_ms() >= c->deadline) {
		snprintf(why, sizeof(why), "unavailable: past the deadline, "
		    "%" PRIu64 " rows dead-lettered", c->moved);
		call_end(c, why);
	} else
		return 1;
	return 0;
}

/* 1 more to do, 0 done, -1 with err. */
static int
call_step(struct dlcall *c, char *err, size_t errlen)
{
	struct store_batch *sb;
	struct store_dls s;
	int rc, m;

	memset(&s, 0, sizeof(s));
	s.source = c->source;
	s.reason = c->reason;
	s.dead_at = time_wall_ms();
	s.limit = DLSOURCE_PAGE;
	s.visits = DLSOURCE_VISITS;
	s.skip = ops.claimed;
	s.arg = ops.arg;
	s.after_seq = c->after_seq;
	if ((sb = store_batch_begin(env->store)) == NULL)
		goto fail;
	if ((rc = store_batch_source_dead(sb, &s)) == -1) {
		store_batch_abort(sb);
		goto fail;
	}
	if (s.moved + s.dropped > 0) {
		if (store_batch_commit(sb) == -1)
			goto fail;
		c->moved += s.moved;
		c->dropped += s.dropped;
		moved_total += s.moved;
		for (m = 0; m < STORE_MODULES; m++)
			if (s.moved_by[m] > 0)
				metrics_add("ankusa_dispatch_dead_lettered_"
				    "total", s.moved_by[m], "source_id",
				    c->source, "sink", dispatch_module_name(m),
				    NULL);
	} else
		store_batch_abort(sb);
	c->after_seq = s.after_seq;
	c->seen |= s.seen;
	return rc;

 fail:
	return steps_store_failed(err, errlen);
}

/* The call ends: err NULL done, else why it stopped. */
static void
call_end(struct dlcall *c, const char *err)
{
	steps_end(&calls, &c->sj);
	if (err == NULL)
		log_info("dlsource: %" PRIu64 " rows of source %s dead-lettered "
		    "as %s", c->moved, c->source, c->reason);
	else
		log_warnx("dlsource: source %s: %s (%" PRIu64 " rows "
		    "dead-lettered)", c->source, err, c->moved);
	if (c->dropped > 0)
		log_warnx("dlsource: %" PRIu64 " rows of source %s dropped: "
		    "their hooks were gone", c->dropped, c->source);
	if (c->done != NULL)
		c->done(c->arg, c->moved, err);
	ops.hold(c->source, 0, ops.arg);
	free(c);
	ops.ended(ops.arg);
}
