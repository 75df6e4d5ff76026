/* SPDX-License-Identifier: ISC */
/*
 * admin_sinks.h: each sink key's health as the operator reads it (issue
 * 37, "Each destination's health"): GET /v1/sinks (admin_api_sinks.c)
 * and the ankusa_sink_* gauges of /metrics, from the pipeline's rings and
 * claims (pipeline_sinks), the paused keys and the store's rows by sink
 * key (store_keycount), whose count after the start this module drives
 * in bounded steps.  No table is walked for a request or a scrape.
 */
#ifndef ANKUSA_ADMIN_SINKS_H
#define ANKUSA_ADMIN_SINKS_H

#include <jansson.h>

#include "admin_api.h"

/* Start the count of the store's rows by sink key: steps on the loop
 * until it ends (nothing on a replication client). */
void	 sinks_init(void);
/* Set the ankusa_sink_* gauges, every key the config names (a reader of
 * admin_gauges.c). */
void	 sinks_gauges(void);
/* {"sinks": [{"source_id", "sink", "module", "5m": {"attempts",
 * "success_ratio", "p50_ms", "p99_ms"}, "1h": {...}, "pending",
 * "claimed", "dead", "breaker", "paused", "consecutive_failures",
 * "last_success_at", "last_error", "last_error_at"}, ...]}. */
json_t	*sinks_json(void);

/* GET /v1/sinks (admin_api_sinks.c). */
extern const struct admin_route admin_routes_sinks[];

#endif
