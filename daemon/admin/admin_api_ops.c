/* SPDX-License-Identifier: ISC */
/*
 * admin_api_ops.c: the admin API's routes of the manual operations (issue 24,
 * section 4; the work is daemon/admin/admin_ops.c's and
 * daemon/pipeline/pipeline_dlsource.c's):
 *
 *   POST /v1/tenants/{t}/sources/{s}/retry-now [sink, id]
 *   POST /v1/retry-now [source, sink]	(every tenant; ankusactl flush)
 *   POST /v1/tenants/{t}/sources/{s}/sinks/{i}/pause, .../resume
 *   POST /v1/tenants/{t}/sources/{s}/pause, .../resume (every sink)
 *   GET /v1/pauses
 *   GET /v1/rate-limits, GET|PUT|DELETE /v1/tenants/{t}/rate-limit
 *   GET|PUT|DELETE /v1/tenants/{t}/sources/{s}/sinks/{i}/rate
 *   POST /v1/tenants/{t}/sources/{s}/dead-letter
 *   DELETE /v1/tenants/{t}/sources/{s}[?deliveries=dead_letter]
 *
 * A source must be configured and serve {t} (bound to it, or to no
 * tenant), else 404; a pause is per (source, sink index), so {t} is only
 * checked there; a resume of a stored pause whose source left the config
 * is allowed (it has to be clearable).
 */
#include "config.h"

#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <event2/event.h>
#include <jansson.h>

#include "admin_api.h"
#include "admin_ops.h"
#include "conf.h"
#include "dispatch/pause.h"
#include "ids.h"
#include "master.h"
#include "pipeline/pipeline.h"
#include "pipeline/pipeline_dlsource.h"
#include "store/store.h"

#define OPS_DLS_TIMEOUT_MS	300000	/* a dead-letter call, at most */

static const struct source_conf *source_of(struct admin_req *, int);
static const struct source_conf *source_in(struct admin_req *, int, int);
static int	 sink_arg(struct admin_req *, json_t *, int, uint32_t *,
		    int *);
static void	 job_done(void *, uint64_t, const char *);
static void	 job_gone(void *);
static json_t	*open_breakers(const char *, const char *, int, uint32_t);
static void	 post_retry_now(struct admin_req *);
static void	 post_retry_all(struct admin_req *);
static void	 pause_keys(struct admin_req *, int, int);
static void	 post_pause_sink(struct admin_req *);
static void	 post_resume_sink(struct admin_req *);
static void	 post_pause_source(struct admin_req *);
static void	 post_resume_source(struct admin_req *);
static void	 get_pauses(struct admin_req *);
static json_t	*rate_json(const struct rate_limit *, const char *);
static int	 rate_each_fn(const char *, const struct rate_limit *, void *);
static void	 get_rate_limits(struct admin_req *);
static void	 get_rate_limit(struct admin_req *);
static void	 put_rate_limit(struct admin_req *);
static void	 delete_rate_limit(struct admin_req *);
static int	 rate_value(struct admin_req *, json_t *, const char *,
		    const char *, double, const char *, double *);
static void	 override_failed(struct admin_req *, const char *);
static int	 sink_rate_key(struct admin_req *, const struct source_conf **,
		    uint32_t *);
static void	 get_sink_rate(struct admin_req *);
static void	 put_sink_rate(struct admin_req *);
static void	 delete_sink_rate(struct admin_req *);
static void	 dls_done(void *, uint64_t, const char *);
static void	 dls_gone(void *);
static void	 post_dead_letter(struct admin_req *);
static void	 delete_source(struct admin_req *);
static void	 probe_start(struct admin_req *, const char *);
static void	 store_down(struct admin_req *);
static void	 fail_503(struct admin_req *, const char *, const char *,
		    uint64_t);

static const char *const no_keys[] = { NULL };

/*
 * 503 with Retry-After: store_unavailable when err is the store's
 * ("store: ..."), else unavailable; with key: n (the rows a job moved
 * before it stopped, which stay so).
 */
/* The store failed a read or a write of this request. */
static void
store_down(struct admin_req *ar)
{
	char err[600];

	snprintf(err, sizeof(err), "store: %s", store_strerror(env->store));
	fail_503(ar, err, NULL, 0);
}

static void
fail_503(struct admin_req *ar, const char *err, const char *key, uint64_t n)
{
	json_t *o = json_pack("{s:o}", "message", admin_str(err));

	if (key != NULL)
		json_object_set_new(o, key, json_integer((json_int_t)n));
	admin_header(ar, "Retry-After", "1");
	admin_error(ar, 503, strncmp(err, "store:", 6) == 0 ?
	    "store_unavailable" : "unavailable", o);
}

/* The source of {s} (param i) serving tenant {t} (param 0), or NULL after
 * answering 400 or 404. */
static const struct source_conf *
source_of(struct admin_req *ar, int i)
{
	return source_in(ar, i, 1);
}

/* As source_of; with bound 0, {t} need not be a tenant of the source. */
static const struct source_conf *
source_in(struct admin_req *ar, int i, int bound)
{
	const char *t = admin_param(ar, 0), *s = admin_param(ar, i);
	const struct source_conf *src;

	if (!conf_valid_id(t)) {
		admin_bad(ar, "tenant", "must be 1 to 64 of A-Z a-z 0-9 _ -");
		return NULL;
	}
	if (!conf_valid_id(s)) {
		admin_bad(ar, "source", "must be 1 to 64 of A-Z a-z 0-9 _ -");
		return NULL;
	}
	if ((src = conf_source(env->conf, s)) == NULL || (bound &&
	    src->tenant != NULL && strcmp(src->tenant, "default") != 0 &&
	    strcmp(src->tenant, t) != 0)) {
		admin_error(ar, 404, "not_found", json_pack("{s:s, s:s}",
		    "message", "no such source under this tenant", "source",
		    s));
		return NULL;
	}
	return src;
}

/*
 * The sink index, from the query or the body's "sink" (a whole number
 * below n when n >= 0): 1 given, 0 not, -1 after answering 400.
 */
static int
sink_arg(struct admin_req *ar, json_t *body, int n, uint32_t *sink,
    int *given)
{
	json_t *v = body != NULL ? json_object_get(body, "sink") : NULL;
	uint64_t u;
	int rc;

	*given = 0;
	if (v != NULL && admin_query(ar, "sink") != NULL) {
		admin_bad(ar, "sink", "given twice, in the query and the body");
		return -1;
	}
	if (v != NULL) {
		if (!json_is_integer(v) || json_integer_value(v) < 0 ||
		    json_integer_value(v) > UINT32_MAX) {
			admin_bad(ar, "sink", "must be a sink index, a whole "
			    "number from 0");
			return -1;
		}
		u = (uint64_t)json_integer_value(v);
	} else if ((rc = admin_query_u64(ar, "sink", 0, UINT32_MAX, &u)) ==
	    -1)
		return -1;
	else if (rc == 0)
		return 0;
	if (n >= 0 && u >= (uint64_t)n) {
		admin_bad(ar, "sink", "the source has %d sinks (0 to %d)", n,
		    n - 1);
		return -1;
	}
	*sink = (uint32_t)u;
	*given = 1;
	return 1;
}

/* --- retry now --- */

struct job_ctx {
	struct admin_req	*ar;
	json_t			*extra;		/* added to the answer */
	const char		*key;		/* "retried", "resumed" */
};

static void
job_gone(void *arg)
{
	struct job_ctx *c = arg;

	ops_detach(c);
	json_decref(c->extra);
	admin_release(c->ar);
	free(c);
}

static void
job_done(void *arg, uint64_t n, const char *err)
{
	struct job_ctx *c = arg;
	json_t *o = c->extra;

	if (err != NULL && strcmp(err, "not_paused") == 0)
		admin_error(c->ar, 409, "not_paused", json_pack("{s:s}",
		    "message", "the sink is not paused"));
	else if (err != NULL)
		fail_503(c->ar, err, c->key, n);
	else {
		json_object_set_new(o, c->key, json_integer((json_int_t)n));
		admin_reply(c->ar, 200, o);
		o = NULL;
	}
	json_decref(o);
	free(c);
}

static struct job_ctx *
job_ctx(struct admin_req *ar, const char *key, json_t *extra)
{
	struct job_ctx *c;

	if ((c = calloc(1, sizeof(*c))) == NULL) {
		json_decref(extra);
		admin_reply(ar, 500, NULL);
		return NULL;
	}
	c->ar = ar;
	c->key = key;
	c->extra = extra != NULL ? extra : json_object();
	admin_hold(ar, job_gone, c);
	return c;
}

/* The open breakers of the tenant's (NULL: any) source's sink (unless
 * any): what a retry now leaves parked. */
static json_t *
open_breakers(const char *tenant, const char *source, int any,
    uint32_t sink)
{
	json_t *all = pipeline_breakers(), *out = json_array(), *b;
	size_t i;

	json_array_foreach(all, i, b) {
		if (strcmp(json_string_value(json_object_get(b, "state")),
		    "closed") == 0)
			continue;
		if (tenant != NULL && strcmp(json_string_value(
		    json_object_get(b, "tenant")), tenant) != 0)
			continue;
		if (source != NULL && strcmp(json_string_value(
		    json_object_get(b, "source")), source) != 0)
			continue;
		if (!any && json_integer_value(json_object_get(b, "sink")) !=
		    (json_int_t)sink)
			continue;
		json_array_append(out, b);
	}
	json_decref(all);
	return out;
}

static void
post_retry_now(struct admin_req *ar)
{
	static const char *const keys[] = { "sink", "id", NULL };
	const struct source_conf *src;
	struct ops_target t;
	struct job_ctx *c;
	json_t *body, *v;
	const char *id;
	unsigned char uid[UUID_LEN];
	uint64_t seq = 0;
	int given, rc;

	if (admin_query_check(ar, keys) == -1 ||
	    (body = admin_body(ar, keys)) == NULL)
		return;
	memset(&t, 0, sizeof(t));
	if ((src = source_of(ar, 1)) == NULL ||
	    sink_arg(ar, body, src->nsinks, &t.sink, &given) == -1)
		goto out;
	id = admin_query(ar, "id");
	if ((v = json_object_get(body, "id")) != NULL) {
		if (id != NULL) {
			admin_bad(ar, "id", "given twice, in the query and "
			    "the body");
			goto out;
		}
		id = json_is_string(v) ? json_string_value(v) : "";
	}
	if (id != NULL) {
		if (uuid_parse(id, uid) == -1) {
			admin_bad(ar, "id", "must be a hook id (a UUID)");
			goto out;
		}
		if ((rc = store_hook_seq(env->store, uid, &seq)) == -1) {
			store_down(ar);
			goto out;
		}
		if (rc == 0) {
			admin_error(ar, 404, "not_found", json_pack("{s:s}",
			    "message", "no such hook"));
			goto out;
		}
	}
	t.tenant = admin_param(ar, 0);
	t.source = src->id;
	t.any_sink = !given;
	t.seq = seq;
	if ((c = job_ctx(ar, "retried", json_pack("{s:o, s:s}",
	    "open_breakers", open_breakers(t.tenant, t.source, t.any_sink,
	    t.sink), "note", "a retry now does not close a breaker: the rows "
	    "a breaker parked wait for it"))) != NULL)
		ops_retry(&t, job_done, c);
 out:
	json_decref(body);
}

static void
post_retry_all(struct admin_req *ar)
{
	static const char *const keys[] = { "source", "sink", NULL };
	const struct source_conf *src = NULL;
	struct ops_target t;
	struct job_ctx *c;
	json_t *body, *v;
	const char *s;
	int given;

	if (admin_query_check(ar, keys) == -1 ||
	    (body = admin_body(ar, keys)) == NULL)
		return;
	memset(&t, 0, sizeof(t));
	s = admin_query(ar, "source");
	if ((v = json_object_get(body, "source")) != NULL)
		s = json_is_string(v) ? json_string_value(v) : "";
	if (s != NULL && (!conf_valid_id(s) ||
	    (src = conf_source(env->conf, s)) == NULL)) {
		admin_bad(ar, "source", "must name a configured source");
		goto out;
	}
	if (sink_arg(ar, body, src != NULL ? src->nsinks : 0, &t.sink,
	    &given) == -1)
		goto out;
	if (given && src == NULL) {
		admin_bad(ar, "sink", "needs a source");
		goto out;
	}
	t.source = src != NULL ? src->id : NULL;
	t.any_sink = !given;
	if ((c = job_ctx(ar, "retried", json_pack("{s:o, s:s}",
	    "open_breakers", open_breakers(NULL, t.source, t.any_sink,
	    t.sink), "note", "a retry now does not close a breaker: the rows "
	    "a breaker parked wait for it"))) != NULL)
		ops_retry(&t, job_done, c);
 out:
	json_decref(body);
}

/* --- pause, resume --- */

/*
 * A resume of every given key in turn: one job at a time, the answer
 * once the last one ended.
 */
struct resume_ctx {
	struct admin_req	*ar;
	char			 source[STORE_NAME_MAX + 1];
	uint32_t		 next, end;	/* sinks left: [next, end) */
	uint64_t		 n;
	json_t			*keys;
	int			 gone;
};

static void	resume_next(struct resume_ctx *);

static void
resume_gone(void *arg)
{
	struct resume_ctx *c = arg;

	c->gone = 1;
	ops_detach(c);
	json_decref(c->keys);
	admin_release(c->ar);
	free(c);
}

static void
resume_done(void *arg, uint64_t n, const char *err)
{
	struct resume_ctx *c = arg;

	if (err != NULL && strcmp(err, "not_paused") != 0) {
		fail_503(c->ar, err, "resumed", c->n);
		json_decref(c->keys);
		free(c);
		return;
	}
	if (err == NULL)
		json_array_append_new(c->keys, json_pack("{s:s, s:i}",
		    "source", c->source, "sink", (int)(c->next - 1)));
	c->n += n;
	resume_next(c);
}

static void
resume_next(struct resume_ctx *c)
{
	while (c->next < c->end && !pause_is(c->source, c->next))
		c->next++;
	if (c->next >= c->end) {
		/* The answer takes the keys (s:o): they are not read after
		 * it. */
		if (json_array_size(c->keys) == 0) {
			json_decref(c->keys);
			admin_error(c->ar, 409, "not_paused", json_pack(
			    "{s:s}", "message", "not paused"));
		} else
			admin_reply(c->ar, 200, json_pack("{s:o, s:I}",
			    "keys", c->keys, "resumed", (json_int_t)c->n));
		free(c);
		return;
	}
	c->next++;
	ops_resume(c->source, c->next - 1, resume_done, c);
}

struct pause_end {
	const char	*source;
	uint32_t	*end;
};

/* The end of the sinks of a source paused: past its last paused one. */
static int
pause_end_fn(const char *source, uint32_t sink, uint64_t since, void *arg)
{
	struct pause_end *e = arg;

	if (strcmp(source, e->source) == 0 && sink >= *e->end)
		*e->end = sink + 1;
	return 0;
}

/* pause (resume 0) or resume the sink of param 2 (sink 1), or every sink
 * of the source (sink 0). */
static void
pause_keys(struct admin_req *ar, int resume, int sink)
{
	const struct source_conf *src;
	const char *s = admin_param(ar, 1);
	struct resume_ctx *c;
	json_t *body, *keys;
	char err[256];
	uint64_t u = 0;
	uint32_t from, end, i;
	int rc;

	if (admin_query_check(ar, no_keys) == -1 ||
	    (body = admin_body(ar, no_keys)) == NULL)
		return;
	json_decref(body);
	if (sink) {
		const char *p = admin_param(ar, 2);
		char *e;

		u = strtoull(p, &e, 10);
		if (p[0] < '0' || p[0] > '9' || *e != '\0' || u > UINT32_MAX) {
			admin_bad(ar, "sink", "must be a sink index, a whole "
			    "number from 0");
			return;
		}
	}
	/* A stored pause of a source gone from the config can be resumed. */
	if (resume && conf_valid_id(admin_param(ar, 0)) && conf_valid_id(s) &&
	    conf_source(env->conf, s) == NULL)
		src = NULL;
	else if ((src = source_in(ar, 1, 0)) == NULL)
		return;
	if (sink && src != NULL && u >= (uint64_t)src->nsinks) {
		admin_error(ar, 404, "not_found", json_pack("{s:s, s:i}",
		    "message", "the source has no such sink", "sinks",
		    src->nsinks));
		return;
	}
	from = sink ? (uint32_t)u : 0;
	end = sink ? (uint32_t)u + 1 : src != NULL ? (uint32_t)src->nsinks :
	    0;
	if (!sink && src == NULL)
		pause_each(pause_end_fn, &(struct pause_end){ s, &end });
	if (resume) {
		if ((c = calloc(1, sizeof(*c))) == NULL) {
			admin_reply(ar, 500, NULL);
			return;
		}
		c->ar = ar;
		snprintf(c->source, sizeof(c->source), "%s", s);
		c->next = from;
		c->end = end;
		c->keys = json_array();
		admin_hold(ar, resume_gone, c);
		resume_next(c);
		return;
	}
	keys = json_array();
	for (i = from; i < end; i++) {
		if ((rc = ops_pause(src->id, i, err, sizeof(err))) == -1) {
			json_decref(keys);
			if (strncmp(err, "store:", 6) == 0)
				fail_503(ar, err, NULL, 0);
			else
				admin_error(ar, 409, "too_many_pauses",
				    json_pack("{s:o}", "message",
				    admin_str(err)));
			return;
		}
		json_array_append_new(keys, json_pack("{s:s, s:i, s:b}",
		    "source", src->id, "sink", (int)i, "was_paused", rc == 0));
	}
	admin_reply(ar, 200, json_pack("{s:o, s:s}", "keys", keys, "note",
	    "a pause is per source and sink index, in every tenant"));
}

static void
post_pause_sink(struct admin_req *ar)
{
	pause_keys(ar, 0, 1);
}

static void
post_resume_sink(struct admin_req *ar)
{
	pause_keys(ar, 1, 1);
}

static void
post_pause_source(struct admin_req *ar)
{
	pause_keys(ar, 0, 0);
}

static void
post_resume_source(struct admin_req *ar)
{
	pause_keys(ar, 1, 0);
}

static int
pause_json_fn(const char *source, uint32_t sink, uint64_t since, void *arg)
{
	const char *why = pause_reason(source, sink);
	json_t *o;

	o = json_pack("{s:s, s:i, s:I, s:s}", "source", source, "sink",
	    (int)sink, "since", (json_int_t)since, "state",
	    why != NULL && why[0] != '\0' ? "disabled" : "paused");
	if (why != NULL && why[0] != '\0')
		json_object_set_new(o, "reason", json_string(why));
	json_array_append_new(arg, o);
	return 0;
}

json_t *
admin_ops_pauses(void)
{
	json_t *a = json_array();

	pause_each(pause_json_fn, a);
	return a;
}

static void
get_pauses(struct admin_req *ar)
{
	if (admin_query_check(ar, no_keys) == -1)
		return;
	admin_reply(ar, 200, json_pack("{s:o}", "paused",
	    admin_ops_pauses()));
}

/* --- rate limits --- */

static json_t *
rate_json(const struct rate_limit *rl, const char *from)
{
	if (rl == NULL || !rl->set)
		return json_pack("{s:n, s:n, s:s}", "rate", "burst", "from",
		    from);
	return json_pack("{s:f, s:i, s:s}", "rate", rl->rate, "burst",
	    (int)rl->burst, "from", from);
}

struct rate_list {
	json_t		*o;
	const char	*tenant;	/* the one being added */
};

static void
rate_add(json_t *a, const char *tenant)
{
	const struct rate_limit *rl;
	const char *from;
	json_t *o;
	size_t i;

	json_array_foreach(a, i, o)
		if (strcmp(json_string_value(json_object_get(o, "tenant")),
		    tenant) == 0)
			return;
	rl = ops_rate_limit(env->conf, tenant, &from);
	o = rate_json(rl, from);
	json_object_set_new(o, "tenant", json_string(tenant));
	json_array_append_new(a, o);
}

static int
rate_each_fn(const char *tenant, const struct rate_limit *rl, void *arg)
{
	rate_add(arg, tenant);
	return 0;
}

static void
get_rate_limits(struct admin_req *ar)
{
	json_t *a;
	int i;

	if (admin_query_check(ar, no_keys) == -1)
		return;
	a = json_array();
	ops_rate_each(rate_each_fn, a);
	for (i = 0; i < env->conf->nrate_tenants; i++)
		rate_add(a, env->conf->rate_tenants[i].tenant);
	admin_reply(ar, 200, json_pack("{s:o, s:o}", "tenants", a,
	    "default", rate_json(&env->conf->rate_default, "default")));
}

static const char *
tenant_arg(struct admin_req *ar)
{
	const char *t = admin_param(ar, 0);

	if (!conf_valid_id(t)) {
		admin_bad(ar, "tenant", "must be 1 to 64 of A-Z a-z 0-9 _ -");
		return NULL;
	}
	return t;
}

static void
get_rate_limit(struct admin_req *ar)
{
	const struct rate_limit *rl;
	const char *t, *from;
	json_t *o;

	if (admin_query_check(ar, no_keys) == -1 ||
	    (t = tenant_arg(ar)) == NULL)
		return;
	rl = ops_rate_limit(env->conf, t, &from);
	o = rate_json(rl, from);
	json_object_set_new(o, "tenant", json_string(t));
	admin_reply(ar, 200, o);
}

/* A rate in v, above 0 and at most max (its field name, unit and max as
 * written for the 400): 0 and *out, or -1 answered. */
static int
rate_value(struct admin_req *ar, json_t *v, const char *name,
    const char *unit, double max, const char *maxs, double *out)
{
	*out = v != NULL && json_is_number(v) ? json_number_value(v) : 0;
	if (v != NULL && json_is_number(v) && isfinite(*out) && *out > 0 &&
	    *out <= max)
		return 0;
	admin_bad(ar, name, "must be %s per second, a number above 0 and at "
	    "most %s", unit, maxs);
	return -1;
}

/* An override's write failed with err: the store's is a 503, else there
 * are too many (409). */
static void
override_failed(struct admin_req *ar, const char *err)
{
	if (strncmp(err, "store:", 6) == 0)
		fail_503(ar, err, NULL, 0);
	else
		admin_error(ar, 409, "too_many_overrides", json_pack("{s:o}",
		    "message", admin_str(err)));
}

static void
put_rate_limit(struct admin_req *ar)
{
	static const char *const keys[] = { "rate", "burst", NULL };
	const char *t;
	json_t *body, *r, *b;
	char err[256];
	double rate;

	if (admin_query_check(ar, no_keys) == -1 ||
	    (t = tenant_arg(ar)) == NULL ||
	    (body = admin_body(ar, keys)) == NULL)
		return;
	r = json_object_get(body, "rate");
	b = json_object_get(body, "burst");
	/* The bounds of rate_limits.*.rate and .burst (common/conf_keys.c). */
	if (rate_value(ar, r, "rate", "hooks", 1e9, "1e9", &rate) == -1)
		;
	else if (b == NULL || !json_is_integer(b) ||
	    json_integer_value(b) < 1 || json_integer_value(b) > 1000000000)
		admin_bad(ar, "burst", "must be a whole number from 1 to "
		    "1000000000");
	else if (ops_rate_set(t, rate, (uint32_t)json_integer_value(b), err,
	    sizeof(err)) == -1)
		override_failed(ar, err);
	else
		get_rate_limit(ar);
	json_decref(body);
}

static void
delete_rate_limit(struct admin_req *ar)
{
	const char *t;
	char err[256];
	int rc;

	if (admin_query_check(ar, no_keys) == -1 ||
	    (t = tenant_arg(ar)) == NULL)
		return;
	if ((rc = ops_rate_del(t, err, sizeof(err))) == -1)
		fail_503(ar, err, NULL, 0);
	else if (rc == 0)
		admin_error(ar, 404, "not_found", json_pack("{s:s}", "message",
		    "the tenant has no override"));
	else
		get_rate_limit(ar);
}

/* --- sink rate overrides --- */

/* The key of /v1/tenants/{t}/sources/{s}/sinks/{i}/rate: 0, or -1
 * answered. */
static int
sink_rate_key(struct admin_req *ar, const struct source_conf **srcp,
    uint32_t *sink)
{
	const char *p = admin_param(ar, 2);
	char *e;
	unsigned long long u;

	if ((*srcp = source_of(ar, 1)) == NULL)
		return -1;
	u = strtoull(p, &e, 10);
	if (p[0] < '0' || p[0] > '9' || *e != '\0' || u > UINT32_MAX) {
		admin_bad(ar, "sink", "must be a sink index, a whole number "
		    "from 0");
		return -1;
	}
	if (u >= (unsigned long long)(*srcp)->nsinks) {
		admin_error(ar, 404, "not_found", json_pack("{s:s, s:i}",
		    "message", "the source has no such sink", "sinks",
		    (*srcp)->nsinks));
		return -1;
	}
	*sink = (uint32_t)u;
	return 0;
}

static void
get_sink_rate(struct admin_req *ar)
{
	const struct source_conf *src;
	uint32_t sink;
	json_t *o;

	if (admin_query_check(ar, no_keys) == -1 ||
	    sink_rate_key(ar, &src, &sink) == -1)
		return;
	if ((o = pipeline_key_rate(admin_param(ar, 0), src->id, sink)) ==
	    NULL)
		o = json_pack("{s:s, s:s, s:i, s:n}", "tenant",
		    admin_param(ar, 0), "source", src->id, "sink", (int)sink,
		    "per_second");
	admin_reply(ar, 200, o);
}

static void
put_sink_rate(struct admin_req *ar)
{
	static const char *const keys[] = { "per_second", "burst", NULL };
	const struct source_conf *src;
	json_t *body, *r, *b;
	char err[256];
	uint32_t sink;
	double ps;

	if (admin_query_check(ar, no_keys) == -1 ||
	    sink_rate_key(ar, &src, &sink) == -1 ||
	    (body = admin_body(ar, keys)) == NULL)
		return;
	r = json_object_get(body, "per_second");
	b = json_object_get(body, "burst");
	/* The bounds of a sink's rate (common/conf_keys.c). */
	if (rate_value(ar, r, "per_second", "attempts", 1e6, "1e6",
	    &ps) == -1)
		;
	else if (b != NULL && !json_is_null(b) && (!json_is_integer(b) ||
	    json_integer_value(b) < 1 || json_integer_value(b) > 1000000))
		admin_bad(ar, "burst", "must be null or a whole number from 1 "
		    "to 1000000");
	else if (ops_sink_rate_set(admin_param(ar, 0), src->id, sink, ps,
	    b != NULL && json_is_integer(b) ?
	    (uint32_t)json_integer_value(b) : 0, err, sizeof(err)) == -1)
		override_failed(ar, err);
	else
		get_sink_rate(ar);
	json_decref(body);
}

static void
delete_sink_rate(struct admin_req *ar)
{
	const struct source_conf *src;
	char err[256];
	uint32_t sink;
	int rc;

	if (admin_query_check(ar, no_keys) == -1 ||
	    sink_rate_key(ar, &src, &sink) == -1)
		return;
	if ((rc = ops_sink_rate_del(admin_param(ar, 0), src->id, sink, err,
	    sizeof(err))) == -1)
		fail_503(ar, err, NULL, 0);
	else if (rc == 0)
		admin_error(ar, 404, "not_found", json_pack("{s:s}", "message",
		    "the sink key has no override"));
	else
		get_sink_rate(ar);
}

/* --- dead_letter_source --- */

static void
dls_gone(void *arg)
{
	dlsource_detach(arg);
	admin_release(arg);
}

static void
dls_done(void *arg, uint64_t n, const char *err)
{
	struct admin_req *ar = arg;

	if (err == NULL)
		admin_reply(ar, 200, json_pack("{s:I}", "dead_lettered",
		    (json_int_t)n));
	else if (strncmp(err, "unknown source", 14) == 0)
		admin_error(ar, 404, "not_found", json_pack("{s:o}", "message",
		    admin_str(err)));
	else
		fail_503(ar, err, "dead_lettered", n);
}

static void
post_dead_letter(struct admin_req *ar)
{
	const struct source_conf *src;
	json_t *body;

	if (admin_query_check(ar, no_keys) == -1 ||
	    (body = admin_body(ar, no_keys)) == NULL)
		return;
	json_decref(body);
	if ((src = source_of(ar, 1)) == NULL)
		return;
	admin_hold(ar, dls_gone, ar);
	dlsource_start(src->id, OPS_DLS_TIMEOUT_MS, dls_done, ar);
}

/*
 * The contracts' DELETE of a source: the config file is the operator's
 * (the API does not edit it), so what it does is dead_letter_source with
 * ?deliveries=dead_letter; without it, a source with pending rows is 409
 * source_has_deliveries and one without is answered 200, nothing done.
 */
static void
delete_source(struct admin_req *ar)
{
	static const char *const keys[] = { "deliveries", NULL };
	const struct source_conf *src;
	const char *dv;

	if (admin_query_check(ar, keys) == -1)
		return;
	dv = admin_query(ar, "deliveries");
	if (dv != NULL && strcmp(dv, "dead_letter") != 0) {
		admin_bad(ar, "deliveries", "must be dead_letter");
		return;
	}
	if ((src = source_of(ar, 1)) == NULL)
		return;
	if (dv != NULL) {
		admin_hold(ar, dls_gone, ar);
		dlsource_start(src->id, OPS_DLS_TIMEOUT_MS, dls_done, ar);
		return;
	}
	probe_start(ar, src->id);
}

/*
 * Whether the source has a pending row: store_batch_source_dead's walk in
 * steps of OPS_VISITS rows, each in a batch that is aborted (its skip
 * names every row: nothing is dead-lettered), one step a loop pass.
 */
struct probe {
	struct admin_req	*ar;
	char			 source[STORE_NAME_MAX + 1];
	uint64_t		 after_seq;
	int			 found;
	struct event		*ev;
};

static int
probe_skip(const unsigned char *key, void *arg)
{
	((struct probe *)arg)->found = 1;
	return 1;
}

static void
probe_free(struct probe *p)
{
	event_free(p->ev);
	free(p);
}

static void
probe_gone(void *arg)
{
	struct probe *p = arg;

	admin_release(p->ar);
	probe_free(p);
}

static void
probe_step(evutil_socket_t fd, short what, void *arg)
{
	struct timeval tv = { 0, 0 };
	struct probe *p = arg;
	struct store_batch *b;
	struct store_dls s;
	int rc = -1;

	memset(&s, 0, sizeof(s));
	s.source = p->source;
	s.reason = "";
	s.visits = OPS_VISITS;
	s.skip = probe_skip;
	s.arg = p;
	s.after_seq = p->after_seq;
	if ((b = store_batch_begin(env->store)) != NULL) {
		rc = store_batch_source_dead(b, &s);
		store_batch_abort(b);
	}
	p->after_seq = s.after_seq;
	if (rc == -1)
		store_down(p->ar);
	else if (p->found)
		admin_error(p->ar, 409, "source_has_deliveries", json_pack(
		    "{s:s}", "message", "the source has pending deliveries: "
		    "?deliveries=dead_letter dead-letters them"));
	else if (rc == 0)
		admin_reply(p->ar, 200, json_pack("{s:i, s:s}",
		    "dead_lettered", 0, "note", "the source stays in the "
		    "config file, which the API does not edit"));
	else {
		evtimer_add(p->ev, &tv);
		return;
	}
	probe_free(p);
}

static void
probe_start(struct admin_req *ar, const char *source)
{
	struct timeval tv = { 0, 0 };
	struct probe *p;

	if ((p = calloc(1, sizeof(*p))) == NULL ||
	    (p->ev = evtimer_new(env->base, probe_step, p)) == NULL) {
		free(p);
		admin_reply(ar, 500, NULL);
		return;
	}
	p->ar = ar;
	snprintf(p->source, sizeof(p->source), "%s", source);
	admin_hold(ar, probe_gone, p);
	evtimer_add(p->ev, &tv);
}

const struct admin_route admin_routes_ops[] = {
	{ ADMIN_POST, "/v1/tenants/{}/sources/{}/retry-now", SCOPE_SINKS_WRITE,
	    post_retry_now },
	{ ADMIN_POST, "/v1/retry-now", SCOPE_SINKS_WRITE, post_retry_all },
	{ ADMIN_POST, "/v1/tenants/{}/sources/{}/sinks/{}/pause",
	    SCOPE_SINKS_WRITE, post_pause_sink },
	{ ADMIN_POST, "/v1/tenants/{}/sources/{}/sinks/{}/resume",
	    SCOPE_SINKS_WRITE, post_resume_sink },
	{ ADMIN_POST, "/v1/tenants/{}/sources/{}/pause", SCOPE_SINKS_WRITE,
	    post_pause_source },
	{ ADMIN_POST, "/v1/tenants/{}/sources/{}/resume", SCOPE_SINKS_WRITE,
	    post_resume_source },
	/* The paused sink keys: operational state of the configuration. */
	{ ADMIN_GET, "/v1/pauses", SCOPE_CONFIG_READ, get_pauses },
	{ ADMIN_GET, "/v1/rate-limits", SCOPE_RATE_LIMITS_READ,
	    get_rate_limits },
	{ ADMIN_GET, "/v1/tenants/{}/rate-limit", SCOPE_RATE_LIMITS_READ,
	    get_rate_limit },
	{ ADMIN_PUT, "/v1/tenants/{}/rate-limit", SCOPE_RATE_LIMITS_WRITE,
	    put_rate_limit },
	{ ADMIN_DELETE, "/v1/tenants/{}/rate-limit", SCOPE_RATE_LIMITS_WRITE,
	    delete_rate_limit },
	{ ADMIN_GET, "/v1/tenants/{}/sources/{}/sinks/{}/rate",
	    SCOPE_RATE_LIMITS_READ, get_sink_rate },
	{ ADMIN_PUT, "/v1/tenants/{}/sources/{}/sinks/{}/rate",
	    SCOPE_RATE_LIMITS_WRITE, put_sink_rate },
	{ ADMIN_DELETE, "/v1/tenants/{}/sources/{}/sinks/{}/rate",
	    SCOPE_RATE_LIMITS_WRITE, delete_sink_rate },
	{ ADMIN_POST, "/v1/tenants/{}/sources/{}/dead-letter",
	    SCOPE_SOURCES_WRITE, post_dead_letter },
	{ ADMIN_DELETE, "/v1/tenants/{}/sources/{}", SCOPE_SOURCES_WRITE,
	    delete_source },
	{ 0, NULL, SCOPE_NONE, NULL }
};
