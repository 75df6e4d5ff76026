/* SPDX-License-Identifier: ISC */
/*
 * admin_api_replay.c: the admin API's replay routes (the jobs are
 * admin_replay.c's):
 *
 *   POST  /v1/replays       {kind, source_id?, since?, until?, rate?,
 *                            max_lag_ms?, event_type? (quarantine),
 *                            sink? (archive)} -> 202 with the job (a job
 *                            identical to a running or paused one: 202
 *                            with that job)
 *   GET   /v1/replays       -> 200 {"replays": [job, ...]}
 *   GET   /v1/replays/{id}  -> 200 job
 *   PATCH /v1/replays/{id}  {state?, rate?, max_lag_ms?} -> 200 job
 *
 * Times are ms since the epoch or RFC 3339 strings (admin_body_time).  Refusals: 400 invalid_request naming the
 * field, 404 not_found, 409 too_many_jobs (REPLAY_MAX_ACTIVE running and
 * paused) and replay_finished (a done or cancelled job changes no more),
 * 503 store_unavailable.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <jansson.h>

#include "admin_api.h"
#include "admin_replay.h"
#include "conf.h"
#include "ids.h"
#include "master.h"
#include "store/store.h"

static void	 replays_post(struct admin_req *);
static void	 replays_list(struct admin_req *);
static void	 replays_get(struct admin_req *);
static void	 replays_patch(struct admin_req *);

const struct admin_route admin_routes_replay[] = {
	{ ADMIN_POST, "/v1/replays", SCOPE_REPLAYS_WRITE, replays_post },
	{ ADMIN_GET, "/v1/replays", SCOPE_REPLAYS_READ, replays_list },
	{ ADMIN_GET, "/v1/replays/{}", SCOPE_REPLAYS_READ, replays_get },
	{ ADMIN_PATCH, "/v1/replays/{}", SCOPE_REPLAYS_WRITE,
	    replays_patch },
	{ 0, NULL, SCOPE_NONE, NULL }
};

static void
store_down(struct admin_req *ar)
{
	admin_header(ar, "Retry-After", "1");
	admin_error(ar, 503, "store_unavailable", json_pack("{s:o}", "message",
	    admin_str(store_strerror(env->store))));
}

/* A whole number of body field key in [min, max] into *out (absent: left
 * as it is).  0, or -1 after answering 400. */
static int
body_u64(struct admin_req *ar, json_t *o, const char *key, uint64_t min,
    uint64_t max, uint64_t *out)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL || json_is_null(v))
		return 0;
	if (!json_is_integer(v) || json_integer_value(v) < 0 ||
	    (uint64_t)json_integer_value(v) < min ||
	    (uint64_t)json_integer_value(v) > max) {
		admin_bad(ar, key, "must be a whole number from %llu to %llu",
		    (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = (uint64_t)json_integer_value(v);
	return 0;
}

/* The job id in the path, or 404. */
static int
path_id(struct admin_req *ar, unsigned char id[UUID_LEN])
{
	if (uuid_parse(admin_param(ar, 0), id) == -1) {
		admin_error(ar, 404, "not_found", NULL);
		return -1;
	}
	return 0;
}

static void
answer_job(struct admin_req *ar, int status, const unsigned char *id)
{
	enum replay_rc rc;
	json_t *o;

	if ((o = replay_json(id, &rc)) != NULL)
		admin_reply(ar, status, o);
	else if (rc == REPLAY_NOT_FOUND)
		admin_error(ar, 404, "not_found", NULL);
	else
		store_down(ar);
}

static void
replays_post(struct admin_req *ar)
{
	static const char *const keys[] = { "kind", "source_id", "since",
	    "until", "rate", "max_lag_ms", "event_type", "sink", NULL };
	struct replay_spec sp;
	unsigned char id[UUID_LEN];
	uint64_t rate = REPLAY_RATE_DEFAULT, lag = REPLAY_LAG_DEFAULT;
	uint64_t sink = UINT64_MAX;
	const char *kind, *src = NULL;
	json_t *o, *v;

	if (admin_query_check(ar, NULL) == -1 ||
	    (o = admin_body(ar, keys)) == NULL)
		return;
	memset(&sp, 0, sizeof(sp));
	if ((kind = json_string_value(json_object_get(o, "kind"))) == NULL ||
	    (strcmp(kind, "dlq") != 0 && strcmp(kind, "quarantine") != 0 &&
	    strcmp(kind, "archive") != 0)) {
		admin_bad(ar, "kind", "must be \"dlq\", \"quarantine\" or "
		    "\"archive\"");
		goto out;
	}
	sp.kind = strcmp(kind, "dlq") == 0 ? STORE_REPLAY_DLQ :
	    strcmp(kind, "archive") == 0 ? STORE_REPLAY_ARCHIVE :
	    STORE_REPLAY_QUARANTINE;
	/* A sink index: the archive's deliveries are by sink. */
	if (body_u64(ar, o, "sink", 0, UINT32_MAX - 1, &sink) == -1)
		goto out;
	if (sink != UINT64_MAX && sp.kind != STORE_REPLAY_ARCHIVE) {
		admin_bad(ar, "sink", "is for a replay of kind archive");
		goto out;
	}
	sp.sink = sink != UINT64_MAX ? (uint32_t)sink + 1 : 0;
	if ((v = json_object_get(o, "source_id")) != NULL &&
	    !json_is_null(v) && ((src = json_string_value(v)) == NULL ||
	    !conf_valid_id(src))) {
		admin_bad(ar, "source_id", "must be 1 to 64 of A-Z a-z 0-9 _ -");
		goto out;
	}
	sp.source = src;
	/* A held hook's event type is in the head the pen's walk reads; a
	 * dead letter's walk reads its row alone (store_replay.c), so a dlq
	 * job has no event type. */
	if ((v = json_object_get(o, "event_type")) != NULL &&
	    !json_is_null(v)) {
		if (sp.kind != STORE_REPLAY_QUARANTINE) {
			admin_bad(ar, "event_type", "is for kind quarantine "
			    "only");
			goto out;
		}
		if ((sp.event_type = json_string_value(v)) == NULL ||
		    sp.event_type[0] == '\0' ||
		    strlen(sp.event_type) > STORE_EVTYPE_MAX) {
			admin_bad(ar, "event_type", "must be 1 to 200 bytes");
			goto out;
		}
	}
	if (admin_body_time(ar, o, "since", &sp.since) == -1 ||
	    admin_body_time(ar, o, "until", &sp.until) == -1 ||
	    body_u64(ar, o, "rate", 1, REPLAY_RATE_MAX, &rate) == -1 ||
	    body_u64(ar, o, "max_lag_ms", 0, REPLAY_LAG_MAX, &lag) == -1)
		goto out;
	if (sp.until != 0 && sp.until < sp.since) {
		admin_bad(ar, "until", "must not be before since");
		goto out;
	}
	sp.rate = (uint32_t)rate;
	sp.max_lag_ms = (uint32_t)lag;
	switch (replay_create(&sp, id)) {
	case REPLAY_OK:
	case REPLAY_EXISTS:
		answer_job(ar, 202, id);
		break;
	case REPLAY_FULL:
		admin_error(ar, 409, "too_many_jobs", json_pack("{s:s}",
		    "message", "at most 16 replay jobs may be running or "
		    "paused; cancel one first"));
		break;
	default:
		store_down(ar);
	}
 out:
	json_decref(o);
}

static void
replays_list(struct admin_req *ar)
{
	json_t *a;

	if (admin_query_check(ar, NULL) == -1)
		return;
	if ((a = replay_list()) == NULL) {
		store_down(ar);
		return;
	}
	admin_reply(ar, 200, json_pack("{s:o}", "replays", a));
}

static void
replays_get(struct admin_req *ar)
{
	unsigned char id[UUID_LEN];

	if (admin_query_check(ar, NULL) == -1 || path_id(ar, id) == -1)
		return;
	answer_job(ar, 200, id);
}

static void
replays_patch(struct admin_req *ar)
{
	static const char *const keys[] = { "state", "rate", "max_lag_ms",
	    NULL };
	unsigned char id[UUID_LEN];
	uint64_t rate = 0, lag = UINT64_MAX;
	const char *st;
	json_t *o, *v;
	int state = 0;

	if (admin_query_check(ar, NULL) == -1 || path_id(ar, id) == -1 ||
	    (o = admin_body(ar, keys)) == NULL)
		return;
	if ((v = json_object_get(o, "state")) != NULL) {
		st = json_string_value(v);
		if (st != NULL && strcmp(st, "running") == 0)
			state = STORE_REPLAY_RUNNING;
		else if (st != NULL && strcmp(st, "paused") == 0)
			state = STORE_REPLAY_PAUSED;
		else if (st != NULL && strcmp(st, "cancelled") == 0)
			state = STORE_REPLAY_CANCELLED;
		else {
			admin_bad(ar, "state", "must be \"running\", "
			    "\"paused\" or \"cancelled\"");
			goto out;
		}
	}
	if (body_u64(ar, o, "rate", 1, REPLAY_RATE_MAX, &rate) == -1 ||
	    body_u64(ar, o, "max_lag_ms", 0, REPLAY_LAG_MAX, &lag) == -1)
		goto out;
	switch (replay_change(id, state, (uint32_t)rate, lag == UINT64_MAX ?
	    -1 : (int64_t)lag)) {
	case REPLAY_OK:
		answer_job(ar, 200, id);
		break;
	case REPLAY_NOT_FOUND:
		admin_error(ar, 404, "not_found", NULL);
		break;
	case REPLAY_FINISHED:
		admin_error(ar, 409, "replay_finished", json_pack("{s:s}",
		    "message", "the job is done or cancelled: it changes no "
		    "more"));
		break;
	default:
		store_down(ar);
	}
 out:
	json_decref(o);
}
