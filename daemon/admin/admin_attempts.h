/* SPDX-License-Identifier: ISC */
/*
 * admin_attempts.h: the attempt log as the operator reads it
 * (admin_attempts.c): GET /v1/hooks/{id}/attempts, and the prune of the
 * attempts of hooks gone more than retention.attempts_s ago.
 *
 * The records are written by the pipeline in the settles' transaction
 * (daemon/pipeline/pipeline_store.c); the table is the store's
 * (daemon/store/store_attempts.c).
 */
#ifndef ANKUSA_ADMIN_ATTEMPTS_H
#define ANKUSA_ADMIN_ATTEMPTS_H

#include "admin_api.h"

/* After a checkpoint (main's upkeep): the attempts of hooks gone longer
 * than retention.attempts_s ago go, in bounded steps on the loop. */
void		 attempts_prune(void);

/* GET /v1/hooks/{id}/attempts. */
extern const struct admin_route admin_routes_attempts[];

#endif
