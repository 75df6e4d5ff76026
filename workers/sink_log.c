/* SPDX-License-Identifier: ISC */
/*
 * sink_log.c: the log sink.  One log_info line per delivery (hook id,
 * tenant/source, sink index, size, content type, attempt) and ok.  It has
 * no options and is not durable: the line is the delivery.
 */
#include "config.h"

#include <inttypes.h>
#include <stddef.h>
#include <stdint.h>

#include "job.h"
#include "log.h"
#include "sink.h"

int
sink_log_run(const struct job *j, struct job_outcome *o)
{
	log_info("deliver hook %s %s/%s sink #%" PRIu32 ": %zu bytes, %s, "
	    "attempt %" PRIu32 "%s%s", j->hook_id, j->tenant, j->source,
	    j->sink_index, j->bodylen,
	    j->content_type != NULL && *j->content_type != '\0' ?
	    j->content_type : "application/octet-stream", j->attempt,
	    j->replay_id != NULL && *j->replay_id != '\0' ? ", replay " : "",
	    j->replay_id != NULL ? j->replay_id : "");
	job_outcome_set(o, JOB_OK, "logged");
	return o->result;
}
