/* SPDX-License-Identifier: ISC */
/*
 * admin_api_audit.c: the admin API's route of the audit trail
 * (admin_routes_audit; the entries are admin_audit.c's):
 *
 *   GET /v1/audit?since=&until=&actor=&action=&tenant=&limit=&cursor=
 *     -> 200 {"entries": [{"at", "actor", "action", "target", "tenant",
 *        "outcome"}, ...], "next_cursor": "..." | null}
 *
 * Scope audit:read.  Newest first; since and until (ms or RFC 3339) are
 * inclusive; actor, action and tenant match exactly.  A page reads at most
 * AUDIT_VISITS entries of the range, whatever the filters pass over: it
 * may then hold fewer than limit entries (none, even) and still give a
 * next_cursor, which is null only once the range is read to its end.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "admin_api.h"
#include "admin_audit.h"
#include "master.h"
#include "store/store.h"

#define AUDIT_LIMIT_DEFAULT	100
#define AUDIT_LIMIT_MAX		1000
#define AUDIT_VISITS		10000	/* entries read a page, at most */

static int
entry_fn(const struct store_audit *a, void *arg)
{
	json_t *entries = arg;

	json_array_append_new(entries, json_pack("{s:I, s:o, s:o, s:o, s:o, "
	    "s:o}", "at", (json_int_t)a->at, "actor", admin_str(a->actor),
	    "action", admin_str(a->action), "target", admin_str(a->target),
	    "tenant", admin_str(a->tenant), "outcome",
	    admin_str(a->outcome)));
	return 0;
}

/* A text filter of at most max bytes: 0, or -1 answered 400. */
static int
text_arg(struct admin_req *ar, const char *key, size_t max, const char **out)
{
	const char *s = admin_query(ar, key);

	*out = s;
	if (s != NULL && (s[0] == '\0' || strlen(s) > max)) {
		admin_bad(ar, key, "must be 1 to %zu bytes", max);
		return -1;
	}
	return 0;
}

static void
get_audit(struct admin_req *ar)
{
	static const char *const allowed[] = { "since", "until", "actor",
	    "action", "tenant", "limit", "cursor", NULL };
	struct store_audit_walk w;
	json_t *entries, *o;

	memset(&w, 0, sizeof(w));
	w.until = UINT64_MAX;
	w.limit = AUDIT_LIMIT_DEFAULT;
	w.visits = AUDIT_VISITS;
	if (admin_query_check(ar, allowed) == -1 ||
	    admin_query_time(ar, "since", &w.since) == -1 ||
	    admin_query_time(ar, "until", &w.until) == -1 ||
	    text_arg(ar, "actor", STORE_AUDIT_ACTOR_MAX, &w.actor) == -1 ||
	    text_arg(ar, "action", STORE_AUDIT_ACTION_MAX, &w.action) == -1 ||
	    admin_query_id(ar, "tenant", &w.tenant) == -1 ||
	    admin_query_u64(ar, "limit", 1, AUDIT_LIMIT_MAX, &w.limit) == -1)
		return;
	if (w.since > w.until) {
		admin_bad(ar, "until", "is before since");
		return;
	}
	if ((w.have_at = admin_query_cursor(ar, "cursor", w.at,
	    STORE_AUDIT_KEY_LEN)) == -1)
		return;
	entries = json_array();
	if (store_audit_walk(env->store, &w, entry_fn, entries) == -1) {
		json_decref(entries);
		master_store_check();
		admin_header(ar, "Retry-After", "1");
		admin_error(ar, 503, "store_unavailable", json_pack("{s:o}",
		    "message", admin_str(store_strerror(env->store))));
		return;
	}
	o = json_pack("{s:o}", "entries", entries);
	json_object_set_new(o, "next_cursor", !w.end && w.have_at ?
	    admin_cursor(w.at, STORE_AUDIT_KEY_LEN) : json_null());
	admin_reply(ar, 200, o);
}

const struct admin_route admin_routes_audit[] = {
	{ ADMIN_GET, "/v1/audit", SCOPE_AUDIT_READ, get_audit },
	{ 0, NULL, SCOPE_NONE, NULL }
};
