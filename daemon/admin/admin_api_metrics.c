/* SPDX-License-Identifier: ISC */
/*
 * admin_api_metrics.c: GET /metrics, the Prometheus text of metrics.h's
 * families (text format 0.0.4), its gauges read just before (admin_gauges.c).
 */
#include "config.h"

#include <stdlib.h>

#include "admin_api.h"
#include "admin_gauges.h"
#include "metrics.h"

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

const struct admin_route admin_routes_metrics[] = {
	{ ADMIN_GET, "/metrics", SCOPE_METRICS_READ, get_metrics },
	{ 0, NULL, SCOPE_NONE, NULL }
};
