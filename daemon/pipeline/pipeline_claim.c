/* SPDX-License-Identifier: ISC */
/*
 * pipeline_claim.c: the dispatch glue of the claim check; see
 * pipeline_int.h.
 *
 * Check-in jobs (pipeline_checkin.c) go to idle deliver processes, one pack
 * each; a row whose body must be checked in first waits at the gate
 * (claim_gate).
 */
#include "config.h"

#include <stdint.h>

#include <event2/event.h>

#include "conf.h"
#include "dispatch/dispatch.h"
#include "job.h"
#include "master.h"
#include "msg.h"
#include "pipeline_checkin.h"
#include "pipeline_int.h"
#include "supervisor.h"

static int	op_claim_gate(void *, struct drow *);

void
pipeline_claim_ops(struct dispatch_ops *ops)
{
	ops->claim_gate = op_claim_gate;
}

static int
op_claim_gate(void *arg, struct drow *r)
{
	return claim_gate(r);
}

void
pipeline_claim_release(const unsigned char *key, void *arg)
{
	dispatch_claim_release(pipeline_disp, key);
	pipeline_arm();
}

int
pipeline_claim_outcome(struct worker *w, struct msg *m)
{
	struct claim_outcome co;

	if (!w->claim || w->job != m->id ||
	    claim_outcome_decode(m, &co) == -1)
		return -1;
	evtimer_del(w->ev_timeout);
	w->claim = 0;
	w->state = w->retiring ? WORKER_RETIRING : WORKER_IDLE;
	if (!w->reported)
		claim_done(m->id, &co, pipeline_claim_release, NULL);
	claim_outcome_free(&co);
	pipeline_arm();
	return 0;
}

/* Check-in jobs to idle deliver processes, one pack each. */
void
pipeline_claim_pump(void)
{
	static uint64_t next_id = 1;
	struct worker *w;
	struct msg m;
	uint64_t id;
	int rc;

	for (;;) {
		if ((w = pool_idle()) == NULL)
			return;
		id = next_id++;
		if ((rc = claim_next_job(&m, id)) == 0)
			return;
		if (rc == -1) {
			claim_done(id, NULL, pipeline_claim_release, NULL);
			continue;
		}
		if (supervisor_send(w->serial, &m) == -1) {
			msg_free(&m);
			w->state = WORKER_RETIRING;
			claim_done(id, NULL, pipeline_claim_release, NULL);
			continue;
		}
		msg_free(&m);
		w->state = WORKER_BUSY;
		w->claim = 1;
		w->job = id;
		w->reported = 0;
		pool_timer(w, env->conf->dispatch.attempt_timeout_ms);
	}
}
