/* SPDX-License-Identifier: ISC */
/*
 * admin_api_hooks.c: the admin API's routes for the search of hooks and a
 * tenant's erase (admin_routes_archive); the work is admin_archive.c's.
 *
 *   GET    /v1/hooks?source_id=&tenant_id=&state=&event_type=&since=&until=
 *          &limit=&cursor=  (hooks:read) -> 200 {entries, next_cursor}
 *   DELETE /v1/tenants/{t}/hooks?since=&until=  (hooks:write) -> 200
 *          {"deleted":n,"bytes":b}, held until the erase ends
 *
 * Every argument is checked before anything runs: a refusal is 400
 * naming the argument and changes nothing.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "admin_api.h"
#include "admin_archive.h"
#include "clock.h"
#include "conf.h"
#include "master.h"

#define HOOKS_LIMIT_DEFAULT	100
#define HOOKS_LIMIT_MAX		1000

static const struct {
	const char	*name;
	int		 state;
} states[] = {
	{ "pending", ARCHIVE_PENDING },
	{ "dead", ARCHIVE_DEAD },
	{ "delivered", ARCHIVE_DELIVERED },
	{ "quarantined", ARCHIVE_QUARANTINED },
};

/* The erase's caller went away: the job goes on, answering nobody. */
static void
erase_gone(void *arg)
{
	admin_release(archive_detach(arg));
}

/* since and until: 0, or -1 answered. */
static int
range_args(struct admin_req *ar, uint64_t *since, uint64_t *until)
{
	*since = 0;
	*until = UINT64_MAX;
	if (admin_query_time(ar, "since", since) == -1 ||
	    admin_query_time(ar, "until", until) == -1)
		return -1;
	if (*since > *until) {
		admin_bad(ar, "until", "is before since");
		return -1;
	}
	return 0;
}

static void
get_hooks(struct admin_req *ar)
{
	static const char *const allowed[] = { "source_id", "tenant_id",
	    "state", "event_type", "since", "until", "limit", "cursor", NULL };
	struct archive_filter f;
	unsigned char cur[8];
	const char *src, *ten, *state, *et;
	json_t *o;
	size_t i;
	int status, c;

	memset(&f, 0, sizeof(f));
	f.limit = HOOKS_LIMIT_DEFAULT;
	if (admin_query_check(ar, allowed) == -1 ||
	    admin_query_id(ar, "source_id", &src) == -1 ||
	    admin_query_id(ar, "tenant_id", &ten) == -1 ||
	    range_args(ar, &f.since, &f.until) == -1 ||
	    admin_query_u64(ar, "limit", 1, HOOKS_LIMIT_MAX, &f.limit) == -1 ||
	    (c = admin_query_cursor(ar, "cursor", cur, sizeof(cur))) == -1)
		return;
	if (src != NULL)
		snprintf(f.source, sizeof(f.source), "%s", src);
	if (ten != NULL)
		snprintf(f.tenant, sizeof(f.tenant), "%s", ten);
	if ((et = admin_query(ar, "event_type")) != NULL) {
		if (et[0] == '\0' || strlen(et) > STORE_EVTYPE_MAX) {
			admin_bad(ar, "event_type", "must be 1 to 200 bytes");
			return;
		}
		snprintf(f.event_type, sizeof(f.event_type), "%s", et);
	}
	if ((state = admin_query(ar, "state")) != NULL) {
		for (i = 0; i < sizeof(states) / sizeof(states[0]); i++)
			if (strcmp(state, states[i].name) == 0)
				f.state = states[i].state;
		if (f.state == ARCHIVE_ANY) {
			admin_bad(ar, "state", "must be pending, dead, "
			    "delivered or quarantined");
			return;
		}
	}
	if (c == 1) {
		for (i = 0; i < sizeof(cur); i++)
			f.before_seq = f.before_seq << 8 | cur[i];
		if (f.before_seq == 0) {
			admin_bad(ar, "cursor", "is not one a listing gave");
			return;
		}
	}
	if ((status = archive_search(&f, &o)) == 503)
		admin_header(ar, "Retry-After", "1");
	admin_reply(ar, status, o);
}

static void
delete_tenant_hooks(struct admin_req *ar)
{
	static const char *const allowed[] = { "since", "until", NULL };
	const char *tenant = admin_param(ar, 0);
	uint64_t since, until;
	struct archive_job *j;

	if (admin_query_check(ar, allowed) == -1 ||
	    range_args(ar, &since, &until) == -1)
		return;
	if (!conf_valid_id(tenant)) {
		admin_bad(ar, "tenant", "must be 1 to 64 of A-Z a-z 0-9 _ -");
		return;
	}
	/* An open end is the request's time: what arrives after it is no
	 * part of the erase. */
	if (until == UINT64_MAX)
		until = time_wall_ms();
	j = archive_erase(tenant, since, until, admin_reply_job, ar);
	admin_hold(ar, erase_gone, j);
}

const struct admin_route admin_routes_archive[] = {
	{ ADMIN_GET, "/v1/hooks", SCOPE_HOOKS_READ, get_hooks },
	{ ADMIN_DELETE, "/v1/tenants/{}/hooks", SCOPE_HOOKS_WRITE,
	    delete_tenant_hooks },
	{ 0, NULL, SCOPE_NONE, NULL }
};
