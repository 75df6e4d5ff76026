/* SPDX-License-Identifier: ISC */
/*
 * admin_api_config.c: GET /v1/config, the configuration in force, redacted by
 * conf_json()'s allowlist (common/conf_json.c): no secret, key, token,
 * password, URL userinfo or URL query value is ever in the answer.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "admin_api.h"
#include "conf.h"
#include "conf_json.h"
#include "master.h"

static void	 get_config(struct admin_req *);

static void
get_config(struct admin_req *ar)
{
	if (admin_query_check(ar, NULL) == -1)
		return;
	admin_reply(ar, 200, conf_json(env->conf));
}

const struct admin_route admin_routes_config[] = {
	{ ADMIN_GET, "/v1/config", SCOPE_CONFIG_READ, get_config },
	{ 0, NULL, SCOPE_NONE, NULL }
};
