/* SPDX-License-Identifier: ISC */
/*
 * admin_api.c: the admin API's listener and request plumbing; see admin_api.h.
 *
 * Served by evhttp on the master's loop.  A request is checked as
 * admin_api.h says before its route runs (admin_auth.c holds the
 * checks), and everything in it is read with bounds: the body is capped
 * by evhttp, a path segment and a query value by ADMIN_PARAM_MAX, and no
 * text from a request reaches a log or an answer uncleaned.
 *
 * A request without a Host header passes the Host check: every browser
 * sends one, and the check is there against browsers (a page of another
 * site, a name rebound to 127.0.0.1); a client that can omit it can send
 * any Host it likes anyway.  Load balancers' HTTP/1.0 health checks send
 * none.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <ctype.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>
#include <jansson.h>

#include "admin_api.h"
#include "admin_audit.h"
#include "admin_auth.h"
#include "admin_conn.h"
#include "admin_console.h"
#include "clock.h"
#include "conf.h"
#include "lameduck.h"
#include "log.h"
#include "master.h"
#include "repl.h"
#include "store/store.h"
#include "utf8.h"

#define ADMIN_TIMEOUT_S		60	/* a client's idle connection */
#define ADMIN_READY_EVERY_MS	1000	/* /ready's synced write, at most */
#define ADMIN_MAX_SEGMENTS	16
#define ADMIN_TEXT_MAX		1024

struct admin_req {
	struct evhttp_request	*req;
	struct evhttp_connection *conn;
	enum admin_method	 method;
	char			 params[ADMIN_MAX_PARAMS][ADMIN_PARAM_MAX + 1];
	int			 nparams;
	struct evkeyvalq	 query;
	int			 held;
	int			 gone;		/* its client went away */
	/* A call from inside the master (admin_call): no evhttp request. */
	struct evbuffer		*body_in;
	void			(*done)(void *, int, const char *, size_t);
	void			*done_arg;
	int			*answered;	/* set while admin_call runs */
	void			(*gone_cb)(void *);
	void			*gone_arg;
	/* A change (a route but GET): recorded in the audit trail when
	 * it is answered. */
	const struct admin_route *audited;
	char			 actor[ADMIN_ACTOR_MAX + 1];	/* admin_actor */
	uint32_t		 scopes;	/* its token's; SCOPE_ALL
						 * without admin.tokens and
						 * from inside (admin_scope) */
};

/* Every module's routes, as main gave them (admin_routes). */
static const struct admin_route *const *admin_tables;
static size_t		 admin_ntables;

static struct evhttp	*http;

static void	admin_request(struct evhttp_request *, void *);
static void	admin_free(struct admin_req *);
static void	req_audit(struct admin_req *, int, const char *, size_t);
static void	target_add(char *, size_t, size_t *, const char *, ...)
		    __attribute__((format(printf, 4, 5)));
static int	admin_gate_token(struct admin_req *,
		    const struct admin_route *);
static int	admin_gate_ctype(struct admin_req *);
static int	admin_match(const char *, char segs[][ADMIN_PARAM_MAX + 1],
		    int, struct admin_req *);

void
admin_routes(const struct admin_route *const *tables, size_t n)
{
	admin_tables = tables;
	admin_ntables = n;
}

int
admin_init(int fd, char *err, size_t errlen)
{
	struct evhttp_bound_socket *bound;

	if ((http = evhttp_new(env->base)) == NULL) {
		snprintf(err, errlen, "admin: evhttp_new failed");
		return -1;
	}
	evhttp_set_max_body_size(http, ADMIN_MAX_BODY);
	evhttp_set_max_headers_size(http, 16384);
	evhttp_set_timeout(http, ADMIN_TIMEOUT_S);
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_PUT | EVHTTP_REQ_PATCH | EVHTTP_REQ_DELETE |
	    EVHTTP_REQ_HEAD);
	evhttp_set_default_content_type(http, "application/json");
	evhttp_set_gencb(http, admin_request, NULL);
	if ((bound = evhttp_accept_socket_with_handle(http, fd)) == NULL ||
	    admin_conn_init(http, bound, env->conf->admin.max_conns,
	    env->conf->admin.head_timeout_ms,
	    env->conf->admin.body_timeout_ms) == -1) {
		snprintf(err, errlen, "admin: cannot accept on the listener");
		evhttp_free(http);
		http = NULL;
		return -1;
	}
	return 0;
}

void
admin_close(void)
{
	if (http != NULL)
		evhttp_free(http);
	http = NULL;
	admin_conn_close();
}

static enum admin_method
method_of(enum evhttp_cmd_type t)
{
	switch (t) {
	case EVHTTP_REQ_GET:
	case EVHTTP_REQ_HEAD:
		return ADMIN_GET;
	case EVHTTP_REQ_POST:
		return ADMIN_POST;
	case EVHTTP_REQ_PUT:
		return ADMIN_PUT;
	case EVHTTP_REQ_PATCH:
		return ADMIN_PATCH;
	case EVHTTP_REQ_DELETE:
		return ADMIN_DELETE;
	default:
		return 0;
	}
}

static const char *
method_name(enum admin_method m)
{
	static const char *const names[] = { "", "GET", "POST", "PUT",
	    "PATCH", "DELETE" };

	return m >= ADMIN_GET && m <= ADMIN_DELETE ? names[m] : "";
}

/*
 * Split the path into decoded segments: the count, or -1 when a segment
 * is too long, too many, or decodes to a NUL.
 */
static int
split_path(const char *path, char segs[][ADMIN_PARAM_MAX + 1])
{
	const char *p = path, *e;
	char raw[3 * ADMIN_PARAM_MAX + 1], *dec;
	size_t n, dlen;
	int count = 0;

	while (*p != '\0') {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		e = strchr(p, '/');
		n = e != NULL ? (size_t)(e - p) : strlen(p);
		if (n >= sizeof(raw) || count == ADMIN_MAX_SEGMENTS)
			return -1;
		memcpy(raw, p, n);
		raw[n] = '\0';
		if ((dec = evhttp_uridecode(raw, 0, &dlen)) == NULL)
			return -1;
		if (dlen > ADMIN_PARAM_MAX || strlen(dec) != dlen) {
			free(dec);
			return -1;
		}
		memcpy(segs[count++], dec, dlen + 1);
		free(dec);
		p += n;
	}
	return count;
}

/* 1 when the pattern matches the segments (params filled), else 0. */
static int
admin_match(const char *pattern, char segs[][ADMIN_PARAM_MAX + 1], int nsegs,
    struct admin_req *ar)
{
	const char *p = pattern, *e;
	size_t n;
	int i = 0, np = 0;

	while (*p != '\0') {
		while (*p == '/')
			p++;
		if (*p == '\0')
			break;
		e = strchr(p, '/');
		n = e != NULL ? (size_t)(e - p) : strlen(p);
		if (i == nsegs)
			return 0;
		if (n == 2 && p[0] == '{' && p[1] == '}') {
			if (np == ADMIN_MAX_PARAMS)
				return 0;
			memcpy(ar->params[np++], segs[i], strlen(segs[i]) + 1);
		} else if (strlen(segs[i]) != n || memcmp(segs[i], p, n) != 0)
			return 0;
		i++;
		p += n;
	}
	if (i != nsegs)
		return 0;
	ar->nparams = np;
	return 1;
}

/*
 * The token check of a request for route hit (NULL: no route, then any
 * valid token may learn so): 0 to go on, or -1 after answering 401 or
 * 403.  With no admin.tokens every route is open, as the listener is
 * then on loopback only (ankusad.c).
 */
static int
admin_gate_token(struct admin_req *ar, const struct admin_route *hit)
{
	const struct conf *cf = env->conf;
	const struct conf_token *t;

	if (cf->admin.ntokens == 0)
		return 0;
	if (hit != NULL && (hit->scope == SCOPE_NONE ||
	    (hit->scope == SCOPE_METRICS_READ && cf->admin.metrics_public)))
		return 0;
	t = auth_token(cf, evhttp_find_header(
	    evhttp_request_get_input_headers(ar->req), "Authorization"));
	if (t == NULL) {
		admin_header(ar, "WWW-Authenticate", "Bearer");
		admin_error(ar, 401, "unauthenticated", NULL);
		return -1;
	}
	snprintf(ar->actor, sizeof(ar->actor), "%s", t->name);
	ar->scopes = t->scopes;
	if (hit != NULL && !scope_has(t->scopes, hit->scope)) {
		admin_error(ar, 403, "forbidden", json_pack("{s:s}", "scope",
		    scope_name(hit->scope)));
		return -1;
	}
	return 0;
}

/*
 * A write's body is JSON, and says so: a form or text/plain, all that a
 * page of another site can send without asking first, is refused.  0 to
 * go on, or -1 after answering 415.
 */
static int
admin_gate_ctype(struct admin_req *ar)
{
	const char *ct;
	size_t n;

	if (ar->method == ADMIN_GET)
		return 0;
	ct = evhttp_find_header(evhttp_request_get_input_headers(ar->req),
	    "Content-Type");
	if (ct == NULL && evbuffer_get_length(
	    evhttp_request_get_input_buffer(ar->req)) == 0)
		return 0;
	n = ct != NULL ? strcspn(ct, "; \t") : 0;
	if (ct != NULL && n == 16 && strncasecmp(ct, "application/json", 16)
	    == 0)
		return 0;
	admin_error(ar, 415, "unsupported_media_type", json_pack("{s:s}",
	    "message", "a request body must be sent as Content-Type: "
	    "application/json"));
	return -1;
}

/* The connection's own address as a Host names it: "ip:port", or
 * "[ip]:port" for IPv6; "" when it cannot be had. */
static void
admin_local_addr(struct evhttp_connection *conn, char *buf, size_t len)
{
	struct sockaddr_storage ss;
	socklen_t sl = sizeof(ss);
	char ip[INET6_ADDRSTRLEN];
	evutil_socket_t fd;

	buf[0] = '\0';
	if (conn == NULL || (fd = bufferevent_getfd(
	    evhttp_connection_get_bufferevent(conn))) == -1 ||
	    getsockname(fd, (struct sockaddr *)&ss, &sl) == -1)
		return;
	if (ss.ss_family == AF_INET && inet_ntop(AF_INET,
	    &((struct sockaddr_in *)&ss)->sin_addr, ip, sizeof(ip)) != NULL)
		snprintf(buf, len, "%s:%u", ip, (unsigned)ntohs(
		    ((struct sockaddr_in *)&ss)->sin_port));
	else if (ss.ss_family == AF_INET6 && inet_ntop(AF_INET6,
	    &((struct sockaddr_in6 *)&ss)->sin6_addr, ip, sizeof(ip)) != NULL)
		snprintf(buf, len, "[%s]:%u", ip, (unsigned)ntohs(
		    ((struct sockaddr_in6 *)&ss)->sin6_port));
}

/* Host and Origin: 0 to go on, or -1 after answering 403. */
static int
admin_gate_origin(struct admin_req *ar)
{
	struct evkeyvalq *h = evhttp_request_get_input_headers(ar->req);
	const char *host = evhttp_find_header(h, "Host");
	const char *origin = evhttp_find_header(h, "Origin");
	char local[INET6_ADDRSTRLEN + 16];

	if (host != NULL) {
		admin_local_addr(ar->conn, local, sizeof(local));
		if (!auth_host_ok(env->conf, host, local[0] != '\0' ? local :
		    NULL)) {
			admin_error(ar, 403, "bad_host", json_pack("{s:s}",
			    "message", "the Host header does not name this "
			    "listener (admin.hosts lists more names)"));
			return -1;
		}
	}
	if (origin != NULL && (host == NULL ||
	    !auth_origin_ok(origin, host))) {
		admin_error(ar, 403, "bad_origin", json_pack("{s:s}",
		    "message", "the Origin header is not this listener"));
		return -1;
	}
	return 0;
}

/* Find the route of path and run it; every outcome answers ar. */
static void
admin_route(struct admin_req *ar, const char *path, const char *q)
{
	const struct admin_route *r, *hit = NULL;
	char segs[ADMIN_MAX_SEGMENTS][ADMIN_PARAM_MAX + 1], allow[64];
	size_t t;
	int nsegs, other = 0;

	if (path == NULL || (nsegs = split_path(path, segs)) == -1) {
		admin_error(ar, 404, "not_found", NULL);
		return;
	}
	if (q != NULL && evhttp_parse_query_str(q, &ar->query) == -1) {
		admin_bad(ar, "query", "the query string is not "
		    "application/x-www-form-urlencoded");
		return;
	}
	allow[0] = '\0';
	for (t = 0; t < admin_ntables; t++)
		for (r = admin_tables[t]; r->pattern != NULL; r++) {
			if (!admin_match(r->pattern, segs, nsegs, ar))
				continue;
			if (r->method == ar->method && hit == NULL)
				hit = r;
			else if (r->method != ar->method &&
			    strlen(allow) + 8 < sizeof(allow)) {
				if (other++)
					strcat(allow, ", ");
				strcat(allow, method_name(r->method));
			}
		}
	/* A request from the network: who may call it, how it is sent. */
	if (ar->req != NULL && (admin_gate_token(ar, hit) == -1 ||
	    admin_gate_ctype(ar) == -1))
		return;
	/* Every route but a GET writes the store: a client of a
	 * replication group sends it to the master. */
	if (hit != NULL && hit->method != ADMIN_GET && !repl_writable()) {
		admin_error(ar, 409, "not_master", json_pack("{s:o}",
		    "master", admin_str(repl_master())));
		return;
	}
	if (hit != NULL) {
		/* Match again: a later pattern may have filled params. */
		(void)admin_match(hit->pattern, segs, nsegs, ar);
		if (hit->method != ADMIN_GET)
			ar->audited = hit;
		hit->fn(ar);
		return;
	}
	if (other) {
		admin_header(ar, "Allow", allow);
		admin_error(ar, 405, "method_not_allowed", NULL);
		return;
	}
	admin_error(ar, 404, "not_found", NULL);
}

static void
admin_request(struct evhttp_request *req, void *arg)
{
	const struct evhttp_uri *uri = evhttp_request_get_evhttp_uri(req);
	struct admin_req *ar;
	const char *path;

	if ((ar = calloc(1, sizeof(*ar))) == NULL) {
		evhttp_send_error(req, 503, "Out of memory");
		return;
	}
	TAILQ_INIT(&ar->query);
	ar->req = req;
	ar->conn = evhttp_request_get_connection(req);
	ar->method = method_of(evhttp_request_get_command(req));
	snprintf(ar->actor, sizeof(ar->actor), "anonymous");
	ar->scopes = SCOPE_ALL;
	admin_conn_dispatched(req);
	if (admin_gate_origin(ar) == -1)
		return;
	path = uri != NULL ? evhttp_uri_get_path(uri) : NULL;
	/* The console's files are static, the same for everyone: no
	 * token (admin_console.h). */
	if (path != NULL && console_path(path)) {
		console_serve(ar, path);
		return;
	}
	admin_route(ar, path, uri != NULL ? evhttp_uri_get_query(uri) : NULL);
}

struct admin_req *
admin_call(const char *actor, enum admin_method m, const char *target,
    const char *body, size_t len,
    void (*done)(void *, int, const char *, size_t), void *arg)
{
	struct evhttp_uri *uri;
	struct admin_req *ar;

	static const char oom[] = "{\"error\":\"out_of_memory\"}";
	int answered;

	if ((ar = calloc(1, sizeof(*ar))) == NULL) {
		done(arg, 503, oom, sizeof(oom) - 1);
		return NULL;
	}
	TAILQ_INIT(&ar->query);
	snprintf(ar->actor, sizeof(ar->actor), "%s", actor);
	ar->scopes = SCOPE_ALL;
	ar->method = m;
	ar->done = done;
	ar->done_arg = arg;
	if ((ar->body_in = evbuffer_new()) == NULL ||
	    (body != NULL && evbuffer_add(ar->body_in, body, len) == -1)) {
		if (ar->body_in != NULL)
			evbuffer_free(ar->body_in);
		free(ar);
		done(arg, 503, oom, sizeof(oom) - 1);
		return NULL;
	}
	/* Held from the start: the handle stays valid until done runs. */
	ar->held = 1;
	ar->answered = &answered;
	answered = 0;
	uri = evhttp_uri_parse(target);
	admin_route(ar, uri != NULL ? evhttp_uri_get_path(uri) : NULL,
	    uri != NULL ? evhttp_uri_get_query(uri) : NULL);
	if (uri != NULL)
		evhttp_uri_free(uri);
	if (answered)
		return NULL;
	ar->answered = NULL;
	return ar;
}

void
admin_call_detach(struct admin_req *ar)
{
	/* Its entry now: a holder told its client is gone may never answer
	 * it. */
	if (ar->audited != NULL)
		req_audit(ar, 0, NULL, 0);
	ar->done = NULL;
	ar->gone = 1;
	if (ar->gone_cb != NULL)
		ar->gone_cb(ar->gone_arg);
}

const char *
admin_param(const struct admin_req *ar, int i)
{
	return i >= 0 && i < ar->nparams ? ar->params[i] : "";
}

const char *
admin_actor(const struct admin_req *ar)
{
	return ar->actor;
}

int
admin_scope(struct admin_req *ar, enum scope s)
{
	if (scope_has(ar->scopes, s))
		return 0;
	admin_error(ar, 403, "forbidden", json_pack("{s:s}", "scope",
	    scope_name(s)));
	return -1;
}

enum admin_method
admin_method(const struct admin_req *ar)
{
	return ar->method;
}

static void
admin_conn_closed(struct evhttp_connection *conn, void *arg)
{
	struct admin_req *ar = arg;

	ar->gone = 1;
	ar->req = NULL;		/* evhttp frees it with the connection */
	/* Its entry now (without its body, which went with the request):
	 * a holder told its client is gone may never answer it. */
	if (ar->audited != NULL)
		req_audit(ar, 0, NULL, 0);
	evhttp_connection_set_closecb(conn, NULL, NULL);
	ar->conn = NULL;
	if (ar->gone_cb != NULL)
		ar->gone_cb(ar->gone_arg);
}

void
admin_hold(struct admin_req *ar, void (*gone)(void *), void *arg)
{
	ar->held = 1;
	ar->gone_cb = gone;
	ar->gone_arg = arg;
	if (ar->conn != NULL)
		evhttp_connection_set_closecb(ar->conn, admin_conn_closed, ar);
}

void
admin_release(struct admin_req *ar)
{
	admin_reply_text(ar, 0, "application/json", "", 0);
}

static void
admin_free(struct admin_req *ar)
{
	if (ar->held && ar->conn != NULL)
		evhttp_connection_set_closecb(ar->conn, NULL, NULL);
	if (ar->body_in != NULL)
		evbuffer_free(ar->body_in);
	evhttp_clear_headers(&ar->query);
	free(ar);
}

void
admin_header(struct admin_req *ar, const char *name, const char *value)
{
	if (ar->req != NULL)
		evhttp_add_header(evhttp_request_get_output_headers(ar->req),
		    name, value);
}

const char *
admin_req_header(const struct admin_req *ar, const char *name)
{
	if (ar->req == NULL)
		return NULL;
	return evhttp_find_header(evhttp_request_get_input_headers(ar->req),
	    name);
}

void
admin_reply_text(struct admin_req *ar, int status, const char *ctype,
    const char *text, size_t len)
{
	void (*done)(void *, int, const char *, size_t) = ar->done;
	struct evbuffer *b;

	if (ar->audited != NULL)
		req_audit(ar, ar->gone ? 0 : status, text, len);
	if (ar->body_in != NULL) {
		/* admin_call's: done is cleared first, so that admin_call
		 * knows it was answered. */
		ar->done = NULL;
		if (ar->answered != NULL)
			*ar->answered = 1;
		if (done != NULL && !ar->gone)
			done(ar->done_arg, status, text, len);
		admin_free(ar);
		return;
	}
	if (ar->gone || ar->req == NULL) {
		admin_free(ar);
		return;
	}
	if ((b = evbuffer_new()) == NULL) {
		evhttp_send_error(ar->req, 503, "Out of memory");
		admin_free(ar);
		return;
	}
	admin_header(ar, "Content-Type", ctype);
	/* An answer is the state now: kept by no cache, unless its handler
	 * said otherwise (the console's files). */
	if (evhttp_find_header(evhttp_request_get_output_headers(ar->req),
	    "Cache-Control") == NULL)
		admin_header(ar, "Cache-Control", "no-store");
	if (evhttp_request_get_command(ar->req) != EVHTTP_REQ_HEAD)
		evbuffer_add(b, text, len);
	evhttp_send_reply(ar->req, status, NULL, b);
	evbuffer_free(b);
	admin_free(ar);
}


/* The request's body as JSON, or NULL (none, or not JSON). */
static json_t *
req_body(struct admin_req *ar)
{
	struct evbuffer *in = ar->body_in != NULL ? ar->body_in :
	    ar->req != NULL ? evhttp_request_get_input_buffer(ar->req) : NULL;
	size_t len = in != NULL ? evbuffer_get_length(in) : 0;

	if (len == 0)
		return NULL;
	return json_loadb((const char *)evbuffer_pullup(in, -1), len, 0,
	    NULL);
}

/* Append to t (tsz bytes, *n used) as far as it goes. */
static void
target_add(char *t, size_t tsz, size_t *n, const char *fmt, ...)
{
	va_list ap;
	int r;

	if (*n + 1 >= tsz)
		return;
	va_start(ap, fmt);
	r = vsnprintf(t + *n, tsz - *n, fmt, ap);
	va_end(ap);
	if (r > 0)
		*n = *n + (size_t)r < tsz ? *n + (size_t)r : tsz - 1;
}

/*
 * The audit entry of the change ar asked for, answered with status (0:
 * its client went away first) and text.  The target is the path's
 * arguments (or, with none, the "id" the answer gives: a replay created),
 * then the query and the body; the tenant the path's, or that of the
 * source the query, the body or the answer names.
 */
static void
req_audit(struct admin_req *ar, int status, const char *text, size_t len)
{
	const struct admin_route *r = ar->audited;
	struct evkeyval *kv;
	char t[STORE_AUDIT_TARGET_MAX + 1], outcome[ADMIN_TEXT_MAX];
	char abuf[ADMIN_PARAM_MAX + 16], *bs;
	const char *src, *tenant, *code, *field, *msg, *id;
	json_t *body, *ans;
	size_t n = 0;
	int i;

	ar->audited = NULL;
	body = req_body(ar);
	ans = status != 0 ? json_loadb(text, len, 0, NULL) : NULL;
	t[0] = '\0';
	for (i = 0; i < ar->nparams; i++)
		target_add(t, sizeof(t), &n, "%s%s", i > 0 ? "/" : "",
		    ar->params[i]);
	if (ar->nparams == 0 && (id = json_string_value(json_object_get(ans,
	    "id"))) != NULL)
		target_add(t, sizeof(t), &n, "%s", id);
	i = 0;
	TAILQ_FOREACH(kv, &ar->query, next)
		target_add(t, sizeof(t), &n, "%s%s=%s", i++ ? "&" : "?",
		    kv->key, kv->value);
	if (json_object_size(body) > 0 &&
	    (bs = json_dumps(body, JSON_COMPACT | JSON_SORT_KEYS)) != NULL) {
		target_add(t, sizeof(t), &n, "%s%s", n > 0 ? " " : "", bs);
		free(bs);
	}
	if (strncmp(r->pattern, "/v1/tenants/{}", 14) == 0)
		tenant = ar->params[0];
	else {
		if ((src = admin_query(ar, "source_id")) == NULL &&
		    (src = json_string_value(json_object_get(body,
		    "source_id"))) == NULL &&
		    (src = json_string_value(json_object_get(body,
		    "source"))) == NULL)
			src = json_string_value(json_object_get(ans,
			    "source_id"));
		tenant = audit_tenant_of(src);
	}
	code = json_string_value(json_object_get(ans, "error"));
	field = json_string_value(json_object_get(ans, "field"));
	msg = json_string_value(json_object_get(ans, "message"));
	if (status == 0)
		snprintf(outcome, sizeof(outcome), "gone: the client went "
		    "away before the answer");
	else if (status < 400)
		snprintf(outcome, sizeof(outcome), "ok");
	else
		snprintf(outcome, sizeof(outcome), "%s%s%s%s%s",
		    code != NULL ? code : "error", field != NULL ? ": " : "",
		    field != NULL ? field : "", msg != NULL ? ": " : "",
		    msg != NULL ? msg : "");
	audit_record(admin_actor(ar), audit_action(r->method, r->pattern, body,
	    abuf, sizeof(abuf)), t, tenant, outcome);
	json_decref(body);
	json_decref(ans);
}

void
admin_reply(struct admin_req *ar, int status, json_t *o)
{
	char *s = NULL;

	if (o != NULL)
		s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	if (s == NULL) {
		log_warnx("admin: an answer could not be encoded");
		status = 500;
		s = strdup("{\"error\":\"internal\",\"message\":\"the answer "
		    "could not be encoded\"}");
		if (s == NULL) {
			admin_reply_text(ar, 500, "application/json", "{}", 2);
			return;
		}
	}
	admin_reply_text(ar, status, "application/json", s, strlen(s));
	free(s);
}

void
admin_reply_job(void *arg, int status, json_t *o)
{
	struct admin_req *ar = arg;

	if (status == 503)
		admin_header(ar, "Retry-After", "1");
	admin_reply(ar, status, o);
}

void
admin_error(struct admin_req *ar, int status, const char *code, json_t *extra)
{
	json_t *o = json_object();

	json_object_set_new(o, "error", json_string(code));
	if (extra != NULL) {
		json_object_update(o, extra);
		json_decref(extra);
	}
	admin_reply(ar, status, o);
}

json_t *
admin_str(const char *s)
{
	char buf[4 * ADMIN_TEXT_MAX + 1];
	json_t *j;

	if ((j = json_string(s)) != NULL)
		return j;
	(void)utf8_clean(buf, sizeof(buf), s, strlen(s));
	return json_string(buf);
}

void
admin_bad(struct admin_req *ar, const char *field, const char *fmt, ...)
{
	char text[ADMIN_TEXT_MAX];
	va_list ap;

	va_start(ap, fmt);
	(void)utf8_format(text, sizeof(text), fmt, ap);
	va_end(ap);
	admin_error(ar, 400, "invalid_request", json_pack("{s:o, s:s}",
	    "field", admin_str(field), "message", text));
}

int
admin_query_check(struct admin_req *ar, const char *const *allowed)
{
	struct evkeyval *kv, *kv2;
	int i;

	TAILQ_FOREACH(kv, &ar->query, next) {
		for (i = 0; allowed != NULL && allowed[i] != NULL; i++)
			if (strcmp(allowed[i], kv->key) == 0)
				break;
		if (allowed == NULL || allowed[i] == NULL) {
			admin_bad(ar, kv->key, "unknown query argument");
			return -1;
		}
		for (kv2 = TAILQ_NEXT(kv, next); kv2 != NULL;
		    kv2 = TAILQ_NEXT(kv2, next))
			if (strcmp(kv2->key, kv->key) == 0) {
				admin_bad(ar, kv->key, "given twice");
				return -1;
			}
		if (strlen(kv->value) > ADMIN_PARAM_MAX) {
			admin_bad(ar, kv->key, "longer than %d bytes",
			    ADMIN_PARAM_MAX);
			return -1;
		}
	}
	return 0;
}

const char *
admin_query(const struct admin_req *ar, const char *key)
{
	return evhttp_find_header(&ar->query, key);
}

static int
parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9' || v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

int
admin_query_u64(struct admin_req *ar, const char *key, uint64_t min,
    uint64_t max, uint64_t *out)
{
	const char *s = admin_query(ar, key);
	uint64_t v;

	if (s == NULL)
		return 0;
	if (parse_u64(s, &v) == -1 || v < min || v > max) {
		admin_bad(ar, key, "must be a whole number from %llu to %llu",
		    (unsigned long long)min, (unsigned long long)max);
		return -1;
	}
	*out = v;
	return 1;
}

/* RFC 3339 to ms since the epoch; -1 when it is not one. */
static int
parse_rfc3339(const char *s, uint64_t *ms)
{
	struct tm tm;
	const char *p;
	int64_t t, frac = 0, scale = 1000, off = 0;
	int i;

	memset(&tm, 0, sizeof(tm));
	if ((p = strptime(s, "%Y-%m-%d", &tm)) == NULL ||
	    (*p != 'T' && *p != 't' && *p != ' '))
		return -1;
	if ((p = strptime(p + 1, "%H:%M:%S", &tm)) == NULL)
		return -1;
	if (*p == '.') {
		for (p++, i = 0; isdigit((unsigned char)*p); p++, i++)
			if (i < 3) {
				frac = frac * 10 + (*p - '0');
				scale /= 10;
			}
		if (i == 0)
			return -1;
		frac *= scale;
	}
	if (*p == 'Z' || *p == 'z')
		p++;
	else if ((*p == '+' || *p == '-') && isdigit((unsigned char)p[1]) &&
	    isdigit((unsigned char)p[2]) && p[3] == ':' &&
	    isdigit((unsigned char)p[4]) && isdigit((unsigned char)p[5])) {
		off = ((p[1] - '0') * 10 + (p[2] - '0')) * 3600 +
		    ((p[4] - '0') * 10 + (p[5] - '0')) * 60;
		if (*p == '-')
			off = -off;
		p += 6;
	} else
		return -1;
	if (*p != '\0')
		return -1;
	if ((t = (int64_t)timegm(&tm)) == -1)
		return -1;
	t -= off;
	if (t < 0)
		return -1;
	*ms = (uint64_t)t * 1000 + (uint64_t)frac;
	return 0;
}

int
admin_query_time(struct admin_req *ar, const char *key, uint64_t *ms)
{
	const char *s = admin_query(ar, key);

	if (s == NULL)
		return 0;
	if (parse_u64(s, ms) == 0 || parse_rfc3339(s, ms) == 0)
		return 1;
	admin_bad(ar, key, "must be ms since the epoch or an RFC 3339 time "
	    "(2026-12-02T10:00:00Z)");
	return -1;
}

int
admin_body_time(struct admin_req *ar, json_t *o, const char *key,
    uint64_t *ms)
{
	json_t *v = json_object_get(o, key);

	if (v == NULL || json_is_null(v))
		return 0;
	if (json_is_integer(v) && json_integer_value(v) >= 0) {
		*ms = (uint64_t)json_integer_value(v);
		return 1;
	}
	if (json_is_string(v) && parse_rfc3339(json_string_value(v), ms) == 0)
		return 1;
	admin_bad(ar, key, "must be ms since the epoch or an RFC 3339 time "
	    "(\"2026-12-02T10:00:00Z\")");
	return -1;
}

int
admin_query_cursor(struct admin_req *ar, const char *key, unsigned char *out,
    size_t len)
{
	const char *s = admin_query(ar, key);
	unsigned int byte;
	size_t i;

	if (s == NULL)
		return 0;
	if (strlen(s) != 2 * len || strspn(s, "0123456789abcdef") != 2 * len) {
		admin_bad(ar, key, "not a cursor this listing gave "
		    "(next_cursor)");
		return -1;
	}
	for (i = 0; i < len; i++) {
		(void)sscanf(s + 2 * i, "%2x", &byte);
		out[i] = (unsigned char)byte;
	}
	return 1;
}

json_t *
admin_cursor(const unsigned char *key, size_t len)
{
	char hex[2 * ADMIN_PARAM_MAX + 1];
	size_t i;

	if (len > ADMIN_PARAM_MAX)
		return json_null();
	for (i = 0; i < len; i++)
		snprintf(hex + 2 * i, 3, "%02x", key[i]);
	hex[2 * len] = '\0';
	return json_string(hex);
}

int
admin_query_id(struct admin_req *ar, const char *key, const char **out)
{
	const char *s = admin_query(ar, key);

	*out = NULL;
	if (s == NULL)
		return 0;
	if (!conf_valid_id(s)) {
		admin_bad(ar, key, "must be 1 to 64 of A-Z a-z 0-9 _ -");
		return -1;
	}
	*out = s;
	return 1;
}

json_t *
admin_body(struct admin_req *ar, const char *const *allowed)
{
	struct evbuffer *in = ar->body_in != NULL ? ar->body_in :
	    evhttp_request_get_input_buffer(ar->req);
	size_t len = evbuffer_get_length(in);
	const char *key;
	json_error_t jerr;
	json_t *o, *v;
	int i;

	if (len == 0)
		return json_object();
	o = json_loadb((const char *)evbuffer_pullup(in, -1), len,
	    JSON_REJECT_DUPLICATES, &jerr);
	if (o == NULL || !json_is_object(o)) {
		json_decref(o);
		admin_bad(ar, "body", "not a JSON object%s%s",
		    o == NULL ? ": " : "", o == NULL ? jerr.text : "");
		return NULL;
	}
	json_object_foreach(o, key, v) {
		for (i = 0; allowed != NULL && allowed[i] != NULL; i++)
			if (strcmp(allowed[i], key) == 0)
				break;
		if (allowed == NULL || allowed[i] == NULL) {
			admin_bad(ar, key, "unknown field");
			json_decref(o);
			return NULL;
		}
	}
	return o;
}

/*
 * The core routes: /health and /ready.
 */

static void
get_health(struct admin_req *ar)
{
	char host[256];

	if (admin_query_check(ar, NULL) == -1)
		return;
	if (gethostname(host, sizeof(host)) == -1)
		snprintf(host, sizeof(host), "unknown");
	host[sizeof(host) - 1] = '\0';
	admin_reply(ar, 200, json_pack("{s:s, s:o, s:s, s:[ssss], s:b, s:s, "
	    "s:o}", "status", "ok", "instance", admin_str(host), "version",
	    PACKAGE_VERSION, "roles", "ingest", "dispatch", "admin",
	    "claim_gateway", "draining", env->draining, "role", repl_role(),
	    "master", admin_str(repl_master())));
}

/*
 * 200 while the store takes a synced write: one, at most once a second,
 * its result kept between.
 */
static void
get_ready(struct admin_req *ar)
{
	static uint64_t probed;		/* mono ms of the last probe */
	static int ok;
	static char why[256];
	uint64_t now = time_mono_ms();

	if (admin_query_check(ar, NULL) == -1)
		return;
	lameduck_ready_asked();
	if (env->draining) {
		admin_header(ar, "Retry-After", "1");
		admin_reply(ar, 503, json_pack("{s:s, s:s}", "status",
		    "unavailable", "reason", "draining"));
		return;
	}
	if (!repl_writable()) {
		admin_header(ar, "Retry-After", "1");
		admin_reply(ar, 503, json_pack("{s:s, s:s, s:o}", "status",
		    "unavailable", "reason", "not_master", "master",
		    admin_str(repl_master())));
		return;
	}
	if (probed == 0 || now - probed >= ADMIN_READY_EVERY_MS) {
		probed = now;
		ok = store_ready_probe(env->store, time_wall_ms()) == 0;
		if (!ok)
			snprintf(why, sizeof(why), "store_unavailable: %s",
			    store_strerror(env->store));
		master_store_check();
	}
	if (ok) {
		admin_reply(ar, 200, json_pack("{s:s}", "status", "ready"));
		return;
	}
	admin_header(ar, "Retry-After", "1");
	admin_reply(ar, 503, json_pack("{s:s, s:o}", "status", "unavailable",
	    "reason", admin_str(why)));
}

/*
 * Who the request's token is: {"name", "scopes": [...], "tokens"}, for
 * the console to offer only what the token may do.  Open as a route (so
 * that a token of any scopes may ask), it checks the token itself: 401
 * as any route does without a valid one.  With no admin.tokens, and from
 * inside the master, the caller is admin_actor with "*".
 */
static void
get_whoami(struct admin_req *ar)
{
	const struct conf *cf = env->conf;
	const struct conf_token *t;
	json_t *scopes;
	int s;

	if (admin_query_check(ar, NULL) == -1)
		return;
	if (ar->req != NULL && cf->admin.ntokens > 0) {
		if ((t = auth_token(cf, admin_req_header(ar,
		    "Authorization"))) == NULL) {
			admin_header(ar, "WWW-Authenticate", "Bearer");
			admin_error(ar, 401, "unauthenticated", NULL);
			return;
		}
		snprintf(ar->actor, sizeof(ar->actor), "%s", t->name);
		ar->scopes = t->scopes;
	}
	scopes = json_array();
	if (ar->scopes == SCOPE_ALL)
		json_array_append_new(scopes, json_string("*"));
	else
		for (s = SCOPE_NONE + 1; s < SCOPE_N; s++)
			if (scope_has(ar->scopes, s))
				json_array_append_new(scopes,
				    json_string(scope_name(s)));
	admin_reply(ar, 200, json_pack("{s:o, s:o, s:b}", "name",
	    admin_str(ar->actor), "scopes", scopes, "tokens",
	    cf->admin.ntokens > 0));
}

const struct admin_route admin_routes_core[] = {
	{ ADMIN_GET, "/health", SCOPE_NONE, get_health },
	{ ADMIN_GET, "/ready", SCOPE_NONE, get_ready },
	{ ADMIN_GET, "/v1/whoami", SCOPE_NONE, get_whoami },
	{ 0, NULL, SCOPE_NONE, NULL }
};
