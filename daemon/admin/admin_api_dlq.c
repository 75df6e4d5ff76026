/* SPDX-License-Identifier: ISC */
/*
 * admin_api_dlq.c: the admin API's routes for dead letters, single hooks and
 * the quarantine pen (admin_routes_dlq); the work is admin_dlq.c's.
 *
 *   GET    /v1/dlq?source_id=&since=&until=&limit=&cursor=
 *   DELETE /v1/dlq?source_id=&since=&until=&id=&all=
 *   GET    /v1/hooks/{id}?body=1 (body: hooks:read_body too)
 *   DELETE /v1/hooks/{id}
 *   GET    /v1/quarantine?source_id=&limit=&cursor=
 *   DELETE /v1/quarantine?source_id=&id=&all=
 *
 * Every argument is checked before anything runs: a refusal is 400
 * naming the argument and changes nothing.  Listings of dead letters and
 * purges are held requests answered by an admin_dlq.c job.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "admin_api.h"
#include "admin_dlq.h"
#include "ids.h"
#include "master.h"
#include "store/store.h"

#define DLQ_LIMIT_DEFAULT	100
#define DLQ_LIMIT_MAX		1000

/* A request held for a job. */
struct held {
	struct admin_req	*ar;
	struct dlq_job		*job;
};

static void
held_done(void *arg, int status, json_t *o)
{
	struct held *h = arg;

	if (status == 503)
		admin_header(h->ar, "Retry-After", "1");
	admin_reply(h->ar, status, o);
	free(h);
}

static void
held_gone(void *arg)
{
	struct held *h = arg;

	if (h->job != NULL)
		dlq_detach(h->job);
	admin_release(h->ar);
	free(h);
}

/* Hold ar for the job start(f, ...) makes. */
static void
hold(struct admin_req *ar, struct dlq_job *(*start)(const struct dlq_filter *,
    void (*)(void *, int, json_t *), void *), const struct dlq_filter *f)
{
	struct held *h;
	struct dlq_job *j;

	if ((h = calloc(1, sizeof(*h))) == NULL) {
		admin_error(ar, 503, "out_of_memory", NULL);
		return;
	}
	h->ar = ar;
	admin_hold(ar, held_gone, h);
	/* NULL: done has run, and freed h. */
	if ((j = start(f, held_done, h)) != NULL)
		h->job = j;
}

/* A hook id argument (key in the query, or NULL for the path's): 1 and
 * id, 0 absent, -1 answered 400. */
static int
hook_id(struct admin_req *ar, const char *key, unsigned char id[UUID_LEN])
{
	const char *s = key != NULL ? admin_query(ar, key) : admin_param(ar, 0);

	if (s == NULL)
		return 0;
	if (strlen(s) != UUID_STRLEN || uuid_parse(s, id) == -1) {
		admin_bad(ar, key != NULL ? key : "id", "must be a hook id "
		    "(a UUID, 36 characters)");
		return -1;
	}
	return 1;
}

/* source_id, since and until into f: 0, or -1 answered. */
static int
range_args(struct admin_req *ar, struct dlq_filter *f, int *given)
{
	const char *src;
	int r1, r2, r3;

	f->until = UINT64_MAX;
	if ((r1 = admin_query_id(ar, "source_id", &src)) == -1 ||
	    (r2 = admin_query_time(ar, "since", &f->since)) == -1 ||
	    (r3 = admin_query_time(ar, "until", &f->until)) == -1)
		return -1;
	if (src != NULL)
		snprintf(f->source, sizeof(f->source), "%s", src);
	if (f->since > f->until) {
		admin_bad(ar, "until", "is before since");
		return -1;
	}
	*given = r1 + r2 + r3;
	return 0;
}

/* all=true|false: 1, 0 (absent or false), -1 answered. */
static int
all_arg(struct admin_req *ar)
{
	const char *s = admin_query(ar, "all");

	if (s == NULL || strcmp(s, "false") == 0)
		return 0;
	if (strcmp(s, "true") == 0)
		return 1;
	admin_bad(ar, "all", "must be true or false");
	return -1;
}

static void
get_dlq(struct admin_req *ar)
{
	static const char *const allowed[] = { "source_id", "since", "until",
	    "limit", "cursor", NULL };
	struct dlq_filter f;
	int given;

	memset(&f, 0, sizeof(f));
	f.limit = DLQ_LIMIT_DEFAULT;
	if (admin_query_check(ar, allowed) == -1 ||
	    range_args(ar, &f, &given) == -1 ||
	    admin_query_u64(ar, "limit", 1, DLQ_LIMIT_MAX, &f.limit) == -1)
		return;
	if ((f.has_after = admin_query_cursor(ar, "cursor", f.after,
	    STORE_DEADKEY_LEN)) == -1)
		return;
	hold(ar, dlq_list, &f);
}

static void
delete_dlq(struct admin_req *ar)
{
	static const char *const allowed[] = { "source_id", "since", "until",
	    "id", "all", NULL };
	struct dlq_filter f;
	int given, id, all;

	memset(&f, 0, sizeof(f));
	if (admin_query_check(ar, allowed) == -1 ||
	    range_args(ar, &f, &given) == -1 ||
	    (id = hook_id(ar, "id", f.id)) == -1 || (all = all_arg(ar)) == -1)
		return;
	f.has_id = id;
	/* The whole queue only when asked for by name. */
	if (given + id == 0 && !all) {
		admin_bad(ar, "all", "no filter: give source_id, since, until "
		    "or id, or all=true to purge every dead letter");
		return;
	}
	if (given + id > 0 && all) {
		admin_bad(ar, "all", "all=true is every dead letter: it takes "
		    "no filter");
		return;
	}
	hold(ar, dlq_purge, &f);
}

static void
get_hook(struct admin_req *ar)
{
	static const char *const allowed[] = { "body", NULL };
	unsigned char id[UUID_LEN];
	uint64_t body = 0;
	json_t *o;
	int status;

	if (admin_query_check(ar, allowed) == -1 ||
	    hook_id(ar, NULL, id) == -1 ||
	    admin_query_u64(ar, "body", 0, 1, &body) == -1 ||
	    (body && admin_scope(ar, SCOPE_HOOKS_READ_BODY) == -1))
		return;
	if ((status = dlq_hook_show(id, (int)body, &o)) == 503)
		admin_header(ar, "Retry-After", "1");
	admin_reply(ar, status, o);
}

static void
delete_hook(struct admin_req *ar)
{
	unsigned char id[UUID_LEN];
	json_t *o;
	int status;

	if (admin_query_check(ar, NULL) == -1 || hook_id(ar, NULL, id) == -1)
		return;
	if ((status = dlq_hook_delete(id, &o)) == 503)
		admin_header(ar, "Retry-After", "1");
	admin_reply(ar, status, o);
}

/* The pen's listing: a page after the cursor (a pen seq). */
static void
get_quarantine(struct admin_req *ar)
{
	static const char *const allowed[] = { "source_id", "limit", "cursor",
	    NULL };
	struct dlq_filter f;
	const char *src;

	memset(&f, 0, sizeof(f));
	f.limit = DLQ_LIMIT_DEFAULT;
	if (admin_query_check(ar, allowed) == -1 ||
	    admin_query_id(ar, "source_id", &src) == -1 ||
	    admin_query_u64(ar, "limit", 1, DLQ_LIMIT_MAX, &f.limit) == -1 ||
	    admin_query_u64(ar, "cursor", 1, UINT64_MAX - 1,
	    &f.after_seq) == -1)
		return;
	if (src != NULL)
		snprintf(f.source, sizeof(f.source), "%s", src);
	hold(ar, dlq_quarantine_list, &f);
}

static struct dlq_job *
qpurge_start(const struct dlq_filter *f, void (*done)(void *, int, json_t *),
    void *arg)
{
	char id[UUID_STRLEN + 1];

	if (f->has_id)
		uuid_format(f->id, id);
	return dlq_quarantine_purge(f->source[0] != '\0' ? f->source : NULL,
	    f->has_id ? id : NULL, done, arg);
}

static void
delete_quarantine(struct admin_req *ar)
{
	static const char *const allowed[] = { "source_id", "id", "all",
	    NULL };
	struct dlq_filter f;
	const char *src;
	int s, id, all;

	memset(&f, 0, sizeof(f));
	if (admin_query_check(ar, allowed) == -1 ||
	    (s = admin_query_id(ar, "source_id", &src)) == -1 ||
	    (id = hook_id(ar, "id", f.id)) == -1 || (all = all_arg(ar)) == -1)
		return;
	if (src != NULL)
		snprintf(f.source, sizeof(f.source), "%s", src);
	f.has_id = id;
	if (s + id == 0 && !all) {
		admin_bad(ar, "all", "no filter: give source_id or id, or "
		    "all=true to purge the whole pen");
		return;
	}
	if (s + id > 0 && all) {
		admin_bad(ar, "all", "all=true is the whole pen: it takes no "
		    "filter");
		return;
	}
	hold(ar, qpurge_start, &f);
}

const struct admin_route admin_routes_dlq[] = {
	{ ADMIN_GET, "/v1/dlq", SCOPE_DLQ_READ, get_dlq },
	{ ADMIN_DELETE, "/v1/dlq", SCOPE_DLQ_WRITE, delete_dlq },
	{ ADMIN_GET, "/v1/hooks/{}", SCOPE_HOOKS_READ, get_hook },
	{ ADMIN_DELETE, "/v1/hooks/{}", SCOPE_HOOKS_WRITE,
	    delete_hook },
	{ ADMIN_GET, "/v1/quarantine", SCOPE_QUARANTINE_READ,
	    get_quarantine },
	{ ADMIN_DELETE, "/v1/quarantine", SCOPE_QUARANTINE_WRITE,
	    delete_quarantine },
	{ 0, NULL, SCOPE_NONE, NULL }
};
