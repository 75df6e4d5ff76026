/* SPDX-License-Identifier: ISC */
/*
 * admin_api.h: the admin API's listener (admin.ip:admin.port, libevent's
 * evhttp in the master) and what its handlers use.
 *
 * Handlers live in the modules that own what they serve; each module
 * gives one route table (admin_routes_<module>[], ended by a NULL
 * pattern), and main's list of tables (admin_routes) names it.  A pattern
 * is a path
 * whose segments are literal or "{}", which matches any one non-empty
 * segment (percent-decoded, at most ADMIN_PARAM_MAX bytes); a query string
 * never takes part in the match.  A path that matches with another method
 * is 405 with Allow; no match is 404 not_found.
 *
 * Before its route runs, a request over the network passes
 * admin_auth.h's checks, in this order: its Host names the listener (403
 * bad_host) and its Origin, when it has one, that Host (403 bad_origin);
 * with admin.tokens set, a route of a scope needs a bearer token (401
 * unauthenticated with WWW-Authenticate: Bearer) that grants the scope
 * (403 forbidden naming the scope); /metrics' scope is waived by
 * admin.metrics_public.  A POST, PUT, PATCH or DELETE that has a body, or
 * a Content-Type, must say application/json (415).  A call from inside
 * the master (admin_call) passes none of them: its caller admitted it.
 *
 * Every answer is JSON (admin_reply, admin_error) but /metrics' text
 * (admin_reply_text).  Errors are {"error":"<code>", ...}: 400
 * invalid_request with "field" naming the argument and "message" saying
 * what is wrong with it, 404 not_found, 405 method_not_allowed, 409 for a
 * state that refuses the call (the code says which), 503
 * store_unavailable.  Request bodies over ADMIN_MAX_BODY are refused by
 * evhttp before a handler runs (413).
 *
 * A handler answers before it returns, or holds the request
 * (admin_hold) and answers it later from a callback: long work runs as a
 * job in bounded steps and never blocks the loop.  A held request whose
 * client goes away calls the gone callback; the holder must then not
 * answer it (admin_reply on it only frees it).
 */
#ifndef ANKUSA_ADMIN_H
#define ANKUSA_ADMIN_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "scope.h"

#define ADMIN_MAX_BODY		65536
#define ADMIN_MAX_PARAMS	4
#define ADMIN_PARAM_MAX		256
#define ADMIN_ACTOR_MAX		64	/* the audit trail's actor, bytes */

enum admin_method {
	ADMIN_GET = 1,
	ADMIN_POST,
	ADMIN_PUT,
	ADMIN_PATCH,
	ADMIN_DELETE,
};

struct admin_req;

struct admin_route {
	enum admin_method	 method;
	const char		*pattern;	/* NULL ends a table */
	enum scope		 scope;		/* SCOPE_NONE: open to all */
	void			(*fn)(struct admin_req *);
};

/* The route tables (one per module that serves the API). */
extern const struct admin_route admin_routes_core[];
extern const struct admin_route admin_routes_config[];	/* admin_api_config.c */
extern const struct admin_route admin_routes_dlq[];
extern const struct admin_route admin_routes_metrics[];
extern const struct admin_route admin_routes_ops[];	/* admin_api_ops.c */
extern const struct admin_route admin_routes_replay[];
/* admin_routes_audit: admin_audit.h; admin_routes_sinks: admin_sinks.h */

/* Every module's routes, once, before the loop runs (main's wiring):
 * the API's and admin_call's. */
void		 admin_routes(const struct admin_route *const *, size_t n);
/* Listen on fd (bound and listening, opened before any privilege is
 * dropped).  0, or -1 with err. */
int		 admin_init(int fd, char *err, size_t errlen);
void		 admin_close(void);

/* Who made the request, for the audit trail: the name of its token, the
 * control socket's "uid:N", or "anonymous" (no admin.tokens). */
const char	*admin_actor(const struct admin_req *);
/* A scope beyond its route's that a request's argument asks for (GET
 * /v1/hooks/{id}?body=1: hooks:read_body): 0 when its token grants it
 * (every request does without admin.tokens, and from inside the master),
 * or -1 after answering 403 as the route's check does. */
int		 admin_scope(struct admin_req *, enum scope);

/* The i-th "{}" segment of the matched pattern, decoded. */
const char	*admin_param(const struct admin_req *, int i);
enum admin_method admin_method(const struct admin_req *);

/*
 * Query arguments.  admin_query_check answers 400 (and returns -1) when
 * the query names a key not in allowed (NULL-ended) or one twice; then
 * admin_query gives a key's value (NULL when absent).  The readers below
 * answer 400 naming the key and return -1 when a value is malformed or out
 * of range, else 0 (1 for admin_query_u64 when the key was given).
 */
int		 admin_query_check(struct admin_req *, const char *const *allowed);
const char	*admin_query(const struct admin_req *, const char *key);
int		 admin_query_u64(struct admin_req *, const char *key,
		    uint64_t min, uint64_t max, uint64_t *out);
/* A time as ms since the epoch: a whole number of ms, or RFC 3339
 * (2026-12-02T10:00:00Z, fractions and offsets allowed). */
int		 admin_query_time(struct admin_req *, const char *key,
		    uint64_t *ms);
/* A listing's cursor of len bytes, as admin_cursor wrote it (2 * len
 * lower-case hex digits) into out: 0 absent, 1 given, -1 answered 400. */
int		 admin_query_cursor(struct admin_req *, const char *key,
		    unsigned char *out, size_t len);
/* The len bytes of a listing's next cursor as the JSON string
 * admin_query_cursor reads. */
json_t		*admin_cursor(const unsigned char *, size_t len);
/* An identity ([A-Za-z0-9_-]{1,64}), or 400. */
int		 admin_query_id(struct admin_req *, const char *key,
		    const char **out);

/*
 * The request's body as a JSON object: NULL after answering 400 when it is
 * not one, or names a key not in allowed (NULL-ended); an empty body is
 * an empty object.  The caller owns the object.
 */
json_t		*admin_body(struct admin_req *, const char *const *allowed);
/* Body field key of o as a time, ms since the epoch: a whole number of ms
 * or an RFC 3339 string, as admin_query_time takes them.  0 absent or
 * null (*ms untouched), 1 given, -1 after answering 400. */
int		 admin_body_time(struct admin_req *, json_t *o, const char *key,
		    uint64_t *ms);
/* Answer 400 invalid_request naming field, with the message. */
void		 admin_bad(struct admin_req *, const char *field,
		    const char *fmt, ...) __attribute__((format(printf, 3, 4)));

/* Answer with o (stolen; NULL answers 500 that the answer could not be
 * built), and free the request. */
void		 admin_reply(struct admin_req *, int status, json_t *o);
/* A job's answer to the held request arg (a job's done callback):
 * admin_reply, with Retry-After: 1 on a 503. */
void		 admin_reply_job(void *arg, int status, json_t *o);
/* {"error":code} plus the pairs of extra (stolen, may be NULL). */
void		 admin_error(struct admin_req *, int status, const char *code,
		    json_t *extra);
/* A text answer with its content type. */
void		 admin_reply_text(struct admin_req *, int status,
		    const char *ctype, const char *text, size_t len);
/* A header of the request, or NULL (none, or a call from inside). */
const char	*admin_req_header(const struct admin_req *, const char *name);
/* An answer header, before the answer. */
void		 admin_header(struct admin_req *, const char *name,
		    const char *value);

/* Keep the request open after the handler returns; gone(arg) is called if
 * its client goes away first, and ends with admin_release. */
void		 admin_hold(struct admin_req *, void (*gone)(void *),
		    void *arg);
/* A held request whose client went away, freed: nothing is answered (a
 * gone callback's last use of it). */
void		 admin_release(struct admin_req *);

/*
 * A call of the same routes from inside the master (the control socket's
 * "api" command, which ankusactl's commands use) for actor (its
 * admin_actor, for the audit trail: at most ADMIN_ACTOR_MAX bytes, "uid:N"
 * on the control socket): target is the path and query, body the request
 * body (NULL or len 0: none).  done(arg, status,
 * body, len) is called once with the answer (503 out_of_memory too),
 * maybe before admin_call returns; then admin_call returns NULL, else a
 * handle for admin_call_detach, valid until done runs.
 */
struct admin_req *admin_call(const char *actor, enum admin_method,
		    const char *target, const char *body, size_t len,
		    void (*done)(void *, int, const char *, size_t), void *arg);
/* The caller went away: done will not be called; a held job is told
 * (its gone callback) and answers nothing. */
void		 admin_call_detach(struct admin_req *);

/* A JSON string of text from outside the master (a sink's error, a reason,
 * an argument): as it is when it is UTF-8, else cleaned (common/utf8.h),
 * as records stored before the cleaning may need.  The control socket's
 * answers use it too. */
json_t		*admin_str(const char *);

/* admin_api_ops.c: the paused sink keys, [{source, sink, since}]. */
json_t		*admin_ops_pauses(void);

#endif /* ANKUSA_ADMIN_H */
