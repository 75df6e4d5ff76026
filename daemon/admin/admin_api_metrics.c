/* SPDX-License-Identifier: ISC */
/*
 * admin_api_metrics.c: GET /metrics, the Prometheus text of metrics.h's
 * families (text format 0.0.4), its gauges read just before (admin_gauges.c);
 * GET /v1/stats/series?seconds=&step=, the per-second counters of the last
 * hour (series.h), for the console's charts; GET /v1/stats/summary, the
 * node's own figures of /metrics as one JSON object, for the console's
 * overview, without the sink keys' gauges, whose cost grows with the
 * keys (a console's refresh every 2 s then costs the same at 1,000 keys
 * as at one: docs/PERFORMANCE).
 *
 * Their scope is /metrics' own, metrics:read: they carry what /metrics
 * carries, and no text of a hook or a sink.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "admin_api.h"
#include "admin_gauges.h"
#include "clock.h"
#include "conf.h"
#include "dispatch/pause.h"
#include "master.h"
#include "metrics.h"
#include "repl.h"
#include "series.h"
#include "supervisor.h"

static void
get_metrics(struct admin_req *ar)
{
	char *text;
	size_t len;

	if (admin_query_check(ar, NULL) == -1)
		return;
	gauges_update();
	if ((text = metrics_text(&len)) == NULL) {
		admin_error(ar, 503, "out_of_memory", NULL);
		return;
	}
	admin_reply_text(ar, 200, "text/plain; version=0.0.4; charset=utf-8",
	    text, len);
	free(text);
}

/* seconds (1 to 3600, the hour by default) up to now, in steps of step
 * seconds (1 to 3600, 10 by default; at most seconds). */
static void
get_series(struct admin_req *ar)
{
	static const char *const allowed[] = { "seconds", "step", NULL };
	uint64_t seconds = SERIES_SECONDS, step = 10;

	if (admin_query_check(ar, allowed) == -1 ||
	    admin_query_u64(ar, "seconds", 1, SERIES_SECONDS, &seconds) == -1 ||
	    admin_query_u64(ar, "step", 1, SERIES_SECONDS, &step) == -1)
		return;
	if (step > seconds) {
		admin_bad(ar, "step", "must be at most seconds (%llu)",
		    (unsigned long long)seconds);
		return;
	}
	admin_reply(ar, 200, series_json(time_wall_ms() / 1000,
	    (uint32_t)seconds, (uint32_t)step));
}

/* pause_each's: the disabled keys (a pause with a reason). */
static int
count_disabled(const char *source, uint32_t sink, uint64_t since, void *arg)
{
	const char *why = pause_reason(source, sink);

	if (why != NULL && why[0] != '\0')
		(*(int *)arg)++;
	return 0;
}

/*
 * {"pending", "inflight", "oldest_due_age_s", "dead", "breakers_open",
 * "paused_keys", "disabled_keys", "sink_keys", "disk_free_bytes",
 * "children": {kind: n}, "restarts": {kind: n},
 * "replication": {"role", "sites_connected", "sites_disconnected",
 * "lag_s"}}: the gauges' values as a scrape would show them.
 */
static void
get_summary(struct admin_req *ar)
{
	json_t *o, *children, *restarts;
	const char *name;
	int k, disabled = 0;

	if (admin_query_check(ar, NULL) == -1)
		return;
	gauges_update_core();
	pause_each(count_disabled, &disabled);
	children = json_object();
	restarts = json_object();
	for (k = 0; k < KIND_MAX; k++) {
		name = supervisor_kind_name(k);
		json_object_set_new(children, name,
		    json_integer(supervisor_children(k)));
		json_object_set_new(restarts, name, json_integer((json_int_t)
		    metrics_get("ankusa_child_restarts_total", "child", name,
		    NULL)));
	}
	o = json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:i, s:i, s:f, s:o, "
	    "s:o, s:{s:s, s:f, s:f, s:f}}",
	    "pending", metrics_get_value("ankusa_queue_pending", NULL),
	    "inflight", metrics_get_value("ankusa_queue_inflight", NULL),
	    "oldest_due_age_s", metrics_get_value(
	    "ankusa_queue_oldest_due_age_seconds", NULL),
	    "dead", metrics_get_value("ankusa_queue_dead", NULL),
	    "breakers_open", metrics_get_value(
	    "ankusa_dispatch_breakers_open", NULL),
	    "paused_keys", metrics_get_value("ankusa_dispatch_paused_keys",
	    NULL),
	    "disabled_keys", disabled,
	    "sink_keys", env->conf->nsinks,
	    "disk_free_bytes", metrics_get_value("ankusa_disk_free_bytes",
	    NULL),
	    "children", children,
	    "restarts", restarts,
	    "replication",
	    "role", repl_role(),
	    "sites_connected", metrics_get_value("ankusa_replication_sites",
	    "state", "connected", NULL),
	    "sites_disconnected", metrics_get_value(
	    "ankusa_replication_sites", "state", "disconnected", NULL),
	    "lag_s", metrics_get_value("ankusa_replication_lag_seconds",
	    NULL));
	admin_reply(ar, 200, o);
}

const struct admin_route admin_routes_metrics[] = {
	{ ADMIN_GET, "/metrics", SCOPE_METRICS_READ, get_metrics },
	{ ADMIN_GET, "/v1/stats/series", SCOPE_METRICS_READ, get_series },
	{ ADMIN_GET, "/v1/stats/summary", SCOPE_METRICS_READ, get_summary },
	{ 0, NULL, SCOPE_NONE, NULL }
};
