/* SPDX-License-Identifier: ISC */
/*
 * admin_api_sinks.c: the admin API's route of the sink keys' health
 * (admin_routes_sinks; the figures are admin_sinks.c's):
 *
 *   GET /v1/sinks -> 200 {"sinks": [...]}, every sink key the config
 *   names (admin_sinks.h gives the fields).
 *
 * Scope hooks:read: a key's last error is the sink's words about a hook
 * (as a row's last error in GET /v1/hooks/{id}), and its counts are of
 * hooks; metrics:read, which admin.metrics_public may open to anyone,
 * carries no sink's text.
 */
#include "config.h"

#include "admin_api.h"
#include "admin_sinks.h"

static void
get_sinks(struct admin_req *ar)
{
	if (admin_query_check(ar, NULL) == -1)
		return;
	admin_reply(ar, 200, sinks_json());
}

const struct admin_route admin_routes_sinks[] = {
	{ ADMIN_GET, "/v1/sinks", SCOPE_HOOKS_READ, get_sinks },
	{ 0, NULL, SCOPE_NONE, NULL }
};
