/* SPDX-License-Identifier: ISC */
/*
 * admin_attempts.c: the attempt log's listing and prune; see
 * admin_attempts.h.
 *
 *   GET /v1/hooks/{id}/attempts?limit=&cursor=
 *     {"attempts":[{"sink","module","n","started_at","duration_ms",
 *     "outcome","status","error","response"}],"next_cursor"}
 *
 * In key order: by sink index, then round (a replay starts one), then
 * attempt number.  The cursor is the last key read, in hex; next_cursor
 * is null on the last page.  A hook with no attempt answers an empty list
 * while it exists, and 404 once it is gone (its attempts pruned or never
 * made).  The texts are the deliver process's (cleaned there, UTF-8 with
 * no control character), sent as JSON strings.
 *
 * The prune is a job of prune.h: one batch of at most ATTEMPTS_PRUNE_STEP
 * deletions a loop pass, started after a checkpoint, until no hook gone
 * longer than retention.attempts_s ago has attempts left.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "admin_attempts.h"
#include "conf.h"
#include "dispatch/dispatch.h"
#include "ids.h"
#include "log.h"
#include "master.h"
#include "prune.h"
#include "store/store.h"

#define ATTEMPTS_LIMIT_DEFAULT	100
#define ATTEMPTS_LIMIT_MAX	1000
#define ATTEMPTS_PRUNE_STEP	1000	/* records a batch */

static int	 attempts_prune_fn(struct store_batch *, uint64_t, unsigned);

static struct prune		 prune = {
	.name = "attempts",
	.what = "records of hooks gone before retention.attempts_s",
	.max = ATTEMPTS_PRUNE_STEP,
	.fn = attempts_prune_fn,
};

static int	 attempt_json(const unsigned char *,
		    const struct store_attempt *, void *);
static void	 get_attempts(struct admin_req *);

void
attempts_prune(void)
{
	prune_start(&prune);
}

/* One batch: the attempts of hooks gone retention.attempts_s before
 * now. */
static int
attempts_prune_fn(struct store_batch *b, uint64_t now, unsigned max)
{
	uint64_t keep = env->conf->retention.attempts_s * 1000;

	if (now <= keep)
		return 0;
	return store_batch_attempts_prune(b, now - keep, max);
}

/* Where a page is built. */
struct page {
	json_t		*list;
	unsigned char	 last[STORE_ATTEMPT_KEY_LEN];
	int		 failed;	/* out of memory: no page */
};

static int
attempt_json(const unsigned char *key, const struct store_attempt *a,
    void *arg)
{
	struct page *pg = arg;
	json_t *o;

	memcpy(pg->last, key, STORE_ATTEMPT_KEY_LEN);
	o = json_pack("{s:I, s:s, s:I, s:I, s:I, s:s, s:o, s:o, s:o}",
	    "sink", (json_int_t)a->sink_index,
	    "module", dispatch_module_name(a->module),
	    "n", (json_int_t)a->n,
	    "started_at", (json_int_t)a->started_at,
	    "duration_ms", (json_int_t)a->duration_ms,
	    "outcome", store_attempt_outcome_name(a->outcome),
	    "status", a->status != 0 ? json_integer(a->status) : json_null(),
	    "error", a->error[0] != '\0' ? admin_str(a->error) : json_null(),
	    "response", a->response[0] != '\0' ? admin_str(a->response) :
	    json_null());
	if (o == NULL || json_array_append_new(pg->list, o) == -1) {
		pg->failed = 1;
		return 1;
	}
	return 0;
}

static void
get_attempts(struct admin_req *ar)
{
	static const char *const allowed[] = { "limit", "cursor", NULL };
	unsigned char id[UUID_LEN], after[STORE_ATTEMPT_KEY_LEN];
	const char *s = admin_param(ar, 0);
	struct page pg;
	uint64_t limit = ATTEMPTS_LIMIT_DEFAULT, seq;
	json_t *o;
	int more, have, ret;

	if (admin_query_check(ar, allowed) == -1)
		return;
	if (strlen(s) != UUID_STRLEN || uuid_parse(s, id) == -1) {
		admin_bad(ar, "id", "must be a hook id (a UUID, 36 "
		    "characters)");
		return;
	}
	if (admin_query_u64(ar, "limit", 1, ATTEMPTS_LIMIT_MAX,
	    &limit) == -1 || (have = admin_query_cursor(ar, "cursor", after,
	    sizeof(after))) == -1)
		return;
	if (have && memcmp(after, id, UUID_LEN) != 0) {
		admin_bad(ar, "cursor", "is another hook's");
		return;
	}
	memset(&pg, 0, sizeof(pg));
	if ((pg.list = json_array()) == NULL) {
		admin_reply(ar, 500, NULL);
		return;
	}
	ret = store_attempts_list(env->store, id, have ? after : NULL, limit,
	    attempt_json, &pg, &more);
	if (pg.failed) {
		json_decref(pg.list);
		admin_reply(ar, 500, NULL);
		return;
	}
	/* None on the first page: the hook's existence decides. */
	if (ret == 0 && !have && json_array_size(pg.list) == 0 &&
	    (ret = store_hook_seq(env->store, id, &seq)) == 0) {
		json_decref(pg.list);
		admin_error(ar, 404, "not_found", NULL);
		return;
	}
	if (ret == -1) {
		json_decref(pg.list);
		log_warnx("attempts: %s", store_strerror(env->store));
		admin_header(ar, "Retry-After", "1");
		admin_error(ar, 503, "store_unavailable", NULL);
		return;
	}
	o = json_pack("{s:o, s:o}", "attempts", pg.list, "next_cursor",
	    more ? admin_cursor(pg.last, sizeof(pg.last)) : json_null());
	admin_reply(ar, 200, o);
}

const struct admin_route admin_routes_attempts[] = {
	{ ADMIN_GET, "/v1/hooks/{}/attempts", SCOPE_HOOKS_READ,
	    get_attempts },
	{ 0, NULL, SCOPE_NONE, NULL }
};
