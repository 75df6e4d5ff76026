/* SPDX-License-Identifier: ISC */
/*
 * admin_api_metrics.c: GET /metrics, the Prometheus text of metrics.h's
 * families (text format 0.0.4), its gauges read just before (admin_gauges.c);
 * GET /v1/stats/series?seconds=&step=, the per-second counters of the last
 * hour (series.h), for the console's charts.
 *
 * The series' scope is /metrics' own, metrics:read: it carries counts
 * that /metrics' counters carry already, in time, and no text of a hook
 * or a sink.
 */
#include "config.h"

#include <stdint.h>
#include <stdlib.h>

#include "admin_api.h"
#include "admin_gauges.h"
#include "clock.h"
#include "metrics.h"
#include "series.h"

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

const struct admin_route admin_routes_metrics[] = {
	{ ADMIN_GET, "/metrics", SCOPE_METRICS_READ, get_metrics },
	{ ADMIN_GET, "/v1/stats/series", SCOPE_METRICS_READ, get_series },
	{ 0, NULL, SCOPE_NONE, NULL }
};
