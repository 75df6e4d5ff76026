/* SPDX-License-Identifier: ISC */
/*
 * prune.c: a prune of the store in bounded steps; see prune.h.
 *
 * A store error ends the prune with a line (the next checkpoint starts
 * it again) and the master's check of a lost store.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "clock.h"
#include "log.h"
#include "master.h"
#include "prune.h"
#include "repl.h"
#include "steps.h"
#include "store/store.h"

static struct steps	 prune_jobs;
static int		 prune_init;

static int	 prune_step(struct step_job *);

void
prune_start(struct prune *p)
{
	if (p->running || !repl_writable() || env->draining)
		return;
	if (!prune_init) {
		steps_init(&prune_jobs, env->base);
		prune_init = 1;
	}
	p->running = 1;
	p->job.step = prune_step;
	steps_add(&prune_jobs, &p->job);
}

/* One batch of deletions: 1 when more may be left, 0 at the end (or on
 * a store error, logged). */
static int
prune_step(struct step_job *j)
{
	struct prune *p = (struct prune *)j;
	struct store_batch *b;
	int n = -1;

	if (!env->draining && (b = store_batch_begin(env->store)) != NULL) {
		if ((n = p->fn(b, time_wall_ms(), p->max)) == -1)
			store_batch_abort(b);
		else if (store_batch_commit_lazy(b) == -1)
			n = -1;
		if (n == -1) {
			log_warnx("%s: prune: %s", p->name,
			    store_strerror(env->store));
			master_store_check();
		} else if (n > 0)
			log_debug("%s: %d %s pruned", p->name, n, p->what);
	}
	if (n == (int)p->max)
		return 1;
	steps_end(&prune_jobs, j);
	p->running = 0;
	return 0;
}
