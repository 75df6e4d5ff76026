/* SPDX-License-Identifier: ISC */
/*
 * edge_request.c: a request of the edge once its head is in (edge.c reads
 * it): the checks of the ingest contract that come before the body, the
 * body (Content-Length or chunked, charged to http.max_buffered_bytes as
 * it arrives, under its deadline), verification, the providers'
 * handshakes (workers/handshake.h: answered here, never submitted), the
 * dedupe and lane keys, the submit to the master (MSG_HOOK_SUBMIT,
 * MSG_READY_QUERY) and the master's answers to them (MSG_HOOK_RESULT,
 * MSG_READY_RESULT), and the master's MSG_QUARANTINE_CHECK, which
 * verifies a held hook again.
 * The answer itself is written by edge.c (conn_answer).
 *
 * A request the master has is in the waiting list, found by the id the
 * master echoes; an answer for an id never sent is fatal (our own
 * protocol), one for a client gone meanwhile goes nowhere.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/queue.h>

#include <netinet/in.h>

#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <event2/buffer.h>
#include <event2/bufferevent.h>

#include "clock.h"
#include "conf.h"
#include "edge_int.h"
#include "edge_limits.h"
#include "evtype.h"
#include "filter.h"
#include "handshake.h"
#include "httpreq.h"
#include "keys.h"
#include "log.h"
#include "msg.h"
#include "proc.h"
#include "sha256.h"
#include "submit.h"
#include "verify.h"

#define EDGE_MAX_HEADERS	100	/* the head parser's limit */
/* Verification failures logged a second, by each edge: a flood of
 * forgeries is counted (ankusa_verify_failures_total), never a flood of
 * lines. */
#define EDGE_VERIFY_LOG_PER_SEC	10
#define EDGE_BODY_TIMEOUT	60	/* s without a body byte */
/* Handshakes logged a second, by each edge: they are counted
 * (ankusa_ingest_requests_total, outcome handshake). */
#define EDGE_HANDSHAKE_LOG_PER_SEC 10

TAILQ_HEAD(connq, conn);

/* The requests the master has (CS_WAIT). */
static struct connq		 waiting = TAILQ_HEAD_INITIALIZER(waiting);
static uint64_t			 next_reqid = 1;
static struct log_limit		 verify_log = LOG_LIMIT_INIT("verify: "
				    "failures", EDGE_VERIFY_LOG_PER_SEC);
static struct log_limit		 handshake_log = LOG_LIMIT_INIT("handshake: "
				    "lines", EDGE_HANDSHAKE_LOG_PER_SEC);
static struct log_limit		 filter_log = LOG_LIMIT_INIT("filter: "
				    "jq failures", EDGE_VERIFY_LOG_PER_SEC);

static int	conn_has_body(const struct conn *);
static int	conn_charge(struct conn *, size_t);
static void	conn_body_append(struct conn *, const void *, size_t);
static void	submit_tail_fill(struct submit_tail *,
		    const struct source_conf *, struct keys_ctx *,
		    const char *, const struct header_kv *, int, int,
		    char *);
static void	submit_filter(struct submit_tail *,
		    const struct source_conf *, struct keys_ctx *, char *);
static struct header_kv *request_pairs(const struct httpreq *);
static void	conn_submit(struct conn *);
static void	conn_handshake(struct conn *, struct httpreq_answer *);
static void	request_trace(const struct httpreq *,
		    unsigned char[TRACE_CTX_LEN], char *, size_t);
static void	conn_wait(struct conn *, enum conn_wait, uint64_t);
static struct conn *waiting_find(uint64_t, enum conn_wait);

static int
conn_has_body(const struct conn *c)
{
	return c->req.chunked ||
	    (c->req.has_length && c->req.content_length > 0);
}

/*
 * The checks of the ingest contract that come before the body, in its
 * order: route, Content-Length cap, source, header bytes.  An answer given
 * here leaves the body unread, so the connection closes after it.
 */
void
edge_request_head(struct conn *c)
{
	struct httpreq_answer a;
	const struct httpreq_header *h;
	struct msg m;
	uint64_t max = edge_conf->http.max_body_bytes;
	int bad;

	c->head = strcmp(c->req.method, "HEAD") == 0;
	c->src = NULL;
	switch (httpreq_route(edge_conf, c->req.method, c->req.target,
	    &c->route)) {
	case HTTPREQ_ROUTE_HEALTH:
		httpreq_answer_health(&a, edge_node_role);
		goto early;
	case HTTPREQ_ROUTE_READY:
		conn_wait(c, WAIT_READY, next_reqid++);
		msg_init(&m, MSG_READY_QUERY, c->reqid);
		chan_send(edge_master, &m);
		msg_free(&m);
		return;
	case HTTPREQ_ROUTE_HOOK:
		break;
	case HTTPREQ_ROUTE_METHOD:
		/* Meta's handshake is a GET of the source's path. */
		if (strcmp(c->req.method, "GET") == 0 &&
		    (c->src = httpreq_source(edge_conf, &c->route)) != NULL &&
		    handshake_get(c->src, c->req.target, &a) !=
		    HANDSHAKE_NONE) {
			conn_handshake(c, &a);
			goto early;
		}
		c->src = NULL;
		httpreq_answer_route(&a, c->route.kind);
		goto early;
	default:
		httpreq_answer_route(&a, c->route.kind);
		goto early;
	}

	if (c->req.has_length && c->req.content_length > max) {
		httpreq_answer_too_large(&a, max);
		goto early;
	}
	if ((c->src = httpreq_source(edge_conf, &c->route)) == NULL) {
		httpreq_answer_route(&a, HTTPREQ_ROUTE_UNKNOWN_SOURCE);
		goto early;
	}
	if ((bad = httpreq_check_headers(&c->req)) != -1) {
		h = &c->req.headers[bad];
		httpreq_answer_invalid_header(&a, h);
		goto early;
	}
	/* Every check passed: now the client may send the body. */
	if (c->req.expect_continue && c->req.minor >= 1 && conn_has_body(c))
		bufferevent_write(c->bev, "HTTP/1.1 100 Continue\r\n\r\n", 25);
	c->state = CS_BODY;
	c->bodylen = 0;
	c->body_start = c->body_last = time_mono_ms();
	c->body_bytes = 0;
	if (c->req.chunked) {
		c->in_chunked = 1;
		httpreq_chunked_init(&c->chunked, max);
	} else {
		c->in_chunked = 0;
		c->remaining = c->req.has_length ? c->req.content_length : 0;
	}
	edge_request_body_timer(c);
	return;
 early:
	if (conn_has_body(c))
		a.close = 1;
	conn_answer(c, &a);
}

/* The body's deadline: the earlier of http.min_body_rate's and a stall
 * of EDGE_BODY_TIMEOUT.  Passed: 408; else armed for it. */
void
edge_request_body_timer(struct conn *c)
{
	uint64_t now = time_mono_ms(), rate, stall;

	rate = edge_limits_body_deadline(c->body_start, c->body_bytes,
	    edge_conf->http.min_body_rate);
	stall = c->body_last + EDGE_BODY_TIMEOUT * 1000;
	if (now < rate && now < stall) {
		conn_timer_ms(c, (rate < stall ? rate : stall) - now);
		return;
	}
	log_debug("refusing a request: its body %s after %" PRIu64 " bytes "
	    "in %" PRIu64 " ms", now >= rate ? "came under http.min_body_rate"
	    : "stalled", c->body_bytes, now - c->body_start);
	conn_refuse(c, 408, "request_timeout");
}

/*
 * http.max_buffered_bytes and http.max_buffered_bytes_per_ip, as the
 * body's bytes arrive (issue 36: a reservation of the announced length let
 * a few dozen trickling connections refuse everyone else).  -1: the edge
 * or the client's address holds too much for n more; the request is
 * answered 503 overload and the connection closed, its bytes given back.
 */
static int
conn_charge(struct conn *c, size_t n)
{
	struct httpreq_answer a;
	char ad[INET6_ADDRSTRLEN + 8];

	if (edge_limits_charge(&c->addr, &c->held, n,
	    edge_conf->http.max_buffered_bytes,
	    edge_conf->http.max_buffered_bytes_per_ip) == 0)
		return 0;
	edge_limits_addr_str(&c->addr, ad, sizeof(ad));
	log_debug("refusing a request after %" PRIu64 " body bytes: the edge "
	    "holds %" PRIu64 " (http.max_buffered_bytes), %s holds %" PRIu64
	    " (http.max_buffered_bytes_per_ip)", c->held,
	    edge_limits_buffered(), ad, edge_limits_addr_held(&c->addr));
	httpreq_answer_error(&a, 503, "overload");
	a.retry_after = 1;
	a.close = 1;
	conn_answer(c, &a);
	return -1;
}

static void
conn_body_append(struct conn *c, const void *p, size_t n)
{
	size_t ncap;

	if (c->bodylen + n > c->bodycap) {
		ncap = c->bodycap ? c->bodycap : 4096;
		while (ncap < c->bodylen + n)
			ncap *= 2;
		if ((c->body = realloc(c->body, ncap)) == NULL)
			fatal("conn_body_append");
		c->bodycap = ncap;
	}
	memcpy(c->body + c->bodylen, p, n);
	c->bodylen += n;
}

/* 1 if the state moved on, 0 if more input is needed. */
int
edge_request_body(struct conn *c)
{
	struct evbuffer *in = bufferevent_get_input(c->bev);
	struct evbuffer_iovec v;
	enum httpreq_status st = HTTPREQ_MORE;
	size_t used, n, before = evbuffer_get_length(in);

	if (c->in_chunked) {
		while (evbuffer_get_length(in) > 0) {
			if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
				break;
			/* Charged for the bytes on the wire, given back to
			 * what was taken. */
			if (conn_charge(c, v.iov_len) == -1)
				return 1;
			st = httpreq_chunked_feed(&c->chunked, v.iov_base,
			    v.iov_len, &used);
			edge_limits_hold(&c->addr, &c->held,
			    c->held - (v.iov_len - used));
			evbuffer_drain(in, used);
			if (st != HTTPREQ_MORE)
				break;
		}
		switch (st) {
		case HTTPREQ_MORE:
			break;
		case HTTPREQ_ERROR:
			if (c->chunked.error == 413) {
				struct httpreq_answer a;

				httpreq_answer_too_large(&a,
				    edge_conf->http.max_body_bytes);
				conn_answer(c, &a);
			} else if (c->chunked.error == 431)
				conn_refuse(c, 431, "headers_too_large");
			else
				conn_refuse(c, 400, "bad_request");
			return 1;
		case HTTPREQ_DONE:
			/* Take the decoded body over; hold only its size. */
			free(c->body);
			c->body = c->chunked.out;
			c->bodylen = c->chunked.outlen;
			c->bodycap = c->chunked.outcap;
			c->chunked.out = NULL;
			httpreq_chunked_free(&c->chunked);
			edge_limits_hold(&c->addr, &c->held, c->bodylen);
			conn_submit(c);
			return 1;
		}
	} else {
		while (c->remaining > 0 && evbuffer_get_length(in) > 0) {
			if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
				break;
			n = v.iov_len < c->remaining ? v.iov_len :
			    (size_t)c->remaining;
			if (conn_charge(c, n) == -1)
				return 1;
			conn_body_append(c, v.iov_base, n);
			evbuffer_drain(in, n);
			c->remaining -= n;
		}
		if (c->remaining == 0) {
			conn_submit(c);
			return 1;
		}
	}
	if (c->eof)
		conn_free(c);		/* the body will never be complete */
	else if (evbuffer_get_length(in) != before) {
		/* The timer sees these when it fires
		 * (edge_request_body_timer). */
		c->body_bytes += before - evbuffer_get_length(in);
		c->body_last = time_mono_ms();
	}
	return 0;
}

/*
 * The part of MSG_HOOK_SUBMIT and MSG_QUARANTINE_VERDICT that says what a
 * hook is for its sinks (common/submit.h): the dedupe key, the headers to
 * store (for a hook held in the quarantine pen, which must be verified
 * again later, those of httpreq_held: credentials only when its
 * verification reads them; else the forwarded ones), the lanes of its
 * ordered sinks, the event type (into evtype, EVTYPE_MAX + 1 bytes) and
 * the sinks the filters let it go to.  Strings point into dedupe, kv and
 * evtype.
 */
static void
submit_tail_fill(struct submit_tail *t, const struct source_conf *src,
    struct keys_ctx *keys, const char *dedupe, const struct header_kv *kv,
    int nkv, int all, char *evtype)
{
	struct httpreq_lane lanes[CONF_MAX_SINKS];
	int i, nlanes;

	t->dedupe = dedupe;
	t->nheaders = 0;
	for (i = 0; i < nkv; i++)
		if (all ? httpreq_held(src, kv[i].name) :
		    httpreq_forwarded(src, kv[i].name)) {
			t->headers[t->nheaders].name = kv[i].name;
			t->headers[t->nheaders++].value = kv[i].value;
		}
	nlanes = httpreq_lanes(src, keys, lanes);
	for (i = 0; i < nlanes; i++) {
		t->lanes[i].sink = lanes[i].sink;
		t->lanes[i].hash = lanes[i].hash;
	}
	t->nlanes = nlanes;
	submit_filter(t, src, keys, evtype);
}

/*
 * The event type and the filters (workers/evtype.h, workers/filter.h).
 * A jq filter that fails or runs past its budget counts as a match, is
 * logged here (rate limited) and counted by the master from the tail.
 * An evaluator killed for its budget is replaced by the next evaluation;
 * only an edge that can no longer have one (its supervisor gone) retires.
 */
static void
submit_filter(struct submit_tail *t, const struct source_conf *src,
    struct keys_ctx *keys, char *evtype)
{
	struct filter_out fo;
	const char *why;
	int k;

	evtype_get(src, keys, evtype);
	t->evtype = evtype;
	filter_sinks(src, evtype, keys->body, keys->bodylen, &fo);
	t->match = fo.match;
	t->filter_errors = fo.errors;
	t->filter_budget = fo.budget;
	for (k = 0; k < src->nsinks && (fo.errors | fo.budget) != 0; k++) {
		if (!((fo.errors | fo.budget) >> k & 1) ||
		    !log_limit_take(&filter_log, LOG_LEVEL_WARN))
			continue;
		why = fo.result[k] == FILTER_BUDGET ? "ran past its CPU "
		    "budget (http.jq_timeout_ms)" : fo.result[k] ==
		    FILTER_MEMORY ? "ran past its memory budget "
		    "(http.jq_max_memory_bytes)" : "failed, gave no boolean "
		    "or lost its evaluator";
		log_warnx("filter: sources.%s.sinks[%d].filter.jq: %s; "
		    "counted as a match", src->id, k, why);
	}
	if (fo.errors != 0 && filter_stuck())
		edge_retire_stuck();
}

/* The request's headers as pairs with lower-case names (names copied). */
static struct header_kv *
request_pairs(const struct httpreq *r)
{
	struct header_kv *kv;
	int i;

	if ((kv = calloc(r->nheaders + 1, sizeof(*kv))) == NULL)
		fatal("request_pairs");
	for (i = 0; i < r->nheaders; i++) {
		/* Names passed check 4: printable, no NUL. */
		if ((kv[i].name = strdup(r->headers[i].name)) == NULL)
			fatal("request_pairs");
		httpreq_lower(kv[i].name);
		kv[i].value = (char *)r->headers[i].value;
	}
	return kv;
}

/*
 * The hook's trace context (common/trace.h): the provider's traceparent
 * when there is exactly one and it is valid, with its tracestate headers
 * joined by "," when they are valid too; else a new context and no
 * tracestate.  What is invalid is replaced, never stored.  The headers
 * are forwarded as any other (the contracts' rule); the http sink's own
 * traceparent and tracestate replace them.
 */
static void
request_trace(const struct httpreq *r, unsigned char trace[TRACE_CTX_LEN],
    char *state, size_t statesz)
{
	const struct httpreq_header *h, *tp = NULL;
	struct trace_ctx t;
	size_t n = 0;
	int i, ntp = 0, over = 0;

	state[0] = '\0';
	for (i = 0; i < r->nheaders; i++) {
		h = &r->headers[i];
		if (strcasecmp(h->name, "traceparent") == 0) {
			tp = h;
			ntp++;
		} else if (strcasecmp(h->name, "tracestate") == 0) {
			if (n + (n > 0) + h->valuelen >= statesz) {
				over = 1;
				continue;
			}
			if (n > 0)
				state[n++] = ',';
			memcpy(state + n, h->value, h->valuelen);
			state[n += h->valuelen] = '\0';
		}
	}
	if (ntp != 1 || trace_parse(tp->value, tp->valuelen, &t) == -1) {
		trace_new(&t);
		state[0] = '\0';
	} else if (over || !trace_state_valid(state, n))
		state[0] = '\0';
	trace_pack(&t, trace);
}

/* A handshake answered or refused here: logged, within the edge's
 * rate; conn_answer counts it. */
static void
conn_handshake(struct conn *c, struct httpreq_answer *a)
{
	if (log_limit_take(&handshake_log, LOG_LEVEL_INFO))
		log_info("handshake: source %s tenant %s: %s %s (%d)",
		    c->src->id, httpreq_tenant(&c->route, c->src),
		    handshake_name(c->src), a->handshake ? "answered" :
		    "refused", a->status);
}

/*
 * The body is in: verify it, apply on_verify_failure, answer a verified
 * provider's handshake (workers/handshake.h), extract the dedupe
 * key and the lane keys, and send the hook to the master
 * (common/submit.h).  The rate limit and the dedupe check are the
 * master's: it alone sees every edge.
 */
static void
conn_submit(struct conn *c)
{
	const struct source_conf *src = c->src;
	const struct httpreq_header *ct;
	struct httpreq_answer a;
	struct keys_hdrs hdrs;
	struct keys_ctx keys;
	struct header_kv *kv;
	unsigned char md[SHA256_LEN];
	char dedupe[KEYS_DEDUPE_MAX + 1] = "";
	char evtype[EVTYPE_MAX + 1];
	char tracestate[TRACE_STATE_MAX + 1];
	enum verify_reason vr = VERIFY_OK;
	enum hook_verdict verdict = VERDICT_OK;
	struct submit sub;
	struct msg m;
	int i;

	kv = request_pairs(&c->req);
	keys_hdrs_request(&hdrs, &c->req);
	keys_init(&keys, &hdrs, c->body, c->bodylen);
	if (src->verify.type == VERIFY_MTLS)
		vr = verify_mtls(&src->verify, c->peer);
	else if (src->verify.type != VERIFY_NONE)
		vr = verify_request(&src->verify, &hdrs, c->body, c->bodylen,
		    (int64_t)(time_wall_ms() / 1000));
	if (vr != VERIFY_OK) {
		if (log_limit_take(&verify_log, LOG_LEVEL_INFO))
			log_info("verify: source %s tenant %s: verification "
			    "failed: %s; %s", src->id,
			    httpreq_tenant(&c->route, src),
			    verify_reason_name(vr),
			    src->on_verify_failure == VFAIL_REJECT ?
			    "rejected" : src->on_verify_failure ==
			    VFAIL_QUARANTINE ? "quarantined" :
			    "accepted flagged");
		switch (src->on_verify_failure) {
		case VFAIL_REJECT:
			httpreq_answer_verify_failed(&a,
			    verify_reason_name(vr));
			conn_answer(c, &a);
			goto done;
		case VFAIL_ACCEPT_FLAG:
			verdict = VERDICT_FLAGGED;
			break;
		case VFAIL_QUARANTINE:
			verdict = VERDICT_QUARANTINE;
			break;
		}
	}
	ct = httpreq_header(&c->req, "content-type");
	/* Only a verified handshake is one: a forged one is judged above. */
	if (vr == VERIFY_OK && handshake_post(src, ct != NULL ? ct->value :
	    NULL, c->body, c->bodylen, &a) != HANDSHAKE_NONE) {
		conn_handshake(c, &a);
		conn_answer(c, &a);
		goto done;
	}
	/* A flagged hook has no dedupe key: a forger must not be able to
	 * shadow the real hook's key. */
	if (verdict != VERDICT_FLAGGED &&
	    keys_dedupe(src, &keys, dedupe, sizeof(dedupe)) == -1)
		dedupe[0] = '\0';
	sha256(c->body, c->bodylen, md);

	conn_wait(c, WAIT_HOOK, next_reqid++);
	sub.tenant = httpreq_tenant(&c->route, src);
	sub.source = src->id;
	sub.method = c->req.method;
	sub.path = c->req.target;
	sub.content_type = ct != NULL ? ct->value : "";
	sub.received_at = c->received_at;
	sub.verdict = verdict;
	sub.verify_reason = vr == VERIFY_OK ? "" : verify_reason_name(vr);
	sub.verification = verdict == VERDICT_FLAGGED ? VERIFICATION_FLAGGED :
	    vr != VERIFY_OK ? VERIFICATION_FAILED :
	    src->verify.type == VERIFY_NONE ? VERIFICATION_SKIPPED :
	    VERIFICATION_OK;
	request_trace(&c->req, sub.trace, tracestate, sizeof(tracestate));
	sub.tracestate = tracestate;
	submit_tail_fill(&sub.tail, src, &keys, dedupe, kv, c->req.nheaders,
	    verdict == VERDICT_QUARANTINE, evtype);
	memcpy(sub.sha256, md, sizeof(sub.sha256));
	sub.body = c->body;
	sub.body_len = c->bodylen;
	if (submit_encode(&m, c->reqid, &sub) == -1) {
		log_warn("request %" PRIu64 ": body memfd", c->reqid);
		goto unavailable;
	}
	log_debug("request %" PRIu64 ": %s %s, %zu bytes, verdict %d",
	    c->reqid, c->req.method, c->req.target, c->bodylen, verdict);
	if (chan_send(edge_master, &m) == -1) {
		msg_free(&m);
		goto unavailable;
	}
	msg_free(&m);
	goto done;
 unavailable:
	/* Our own trouble is never a 4xx. */
	httpreq_answer_result(&a, HOOK_STORE_UNAVAILABLE, "", 1);
	conn_answer(c, &a);
 done:
	keys_free(&keys);
	for (i = 0; i < c->req.nheaders; i++)
		free(kv[i].name);
	free(kv);
	/* The master has the body now. */
	free(c->body);
	c->body = NULL;
	c->bodylen = c->bodycap = 0;
}

/* Hand the request to the master; no timer runs while it has it. */
static void
conn_wait(struct conn *c, enum conn_wait w, uint64_t reqid)
{
	c->state = CS_WAIT;
	c->wait = w;
	c->reqid = reqid;
	TAILQ_INSERT_TAIL(&waiting, c, wentry);
	conn_timer(c, 0);
}

static struct conn *
waiting_find(uint64_t id, enum conn_wait w)
{
	struct conn *c;

	TAILQ_FOREACH(c, &waiting, wentry)
		if (c->reqid == id) {
			if (c->wait != w)
				fatalx("master answered request %" PRIu64
				    " with the wrong message", id);
			return c;
		}
	return NULL;
}

void
edge_request_unwait(struct conn *c)
{
	if (c->state == CS_WAIT)
		TAILQ_REMOVE(&waiting, c, wentry);
}

void
edge_request_hook_result(struct msg *m)
{
	struct httpreq_answer a;
	struct conn *c;
	const char *id;
	uint32_t retry;
	uint8_t res;

	if (msg_get_u8(m, &res) == -1 || msg_get_str(m, &id) == -1 ||
	    msg_get_u32(m, &retry) == -1 || msg_end(m) == -1)
		fatalx("bad %s from the master", msg_type_name(m->type));
	if (m->id == 0 || m->id >= next_reqid)
		fatalx("%s for request %" PRIu64 " never sent",
		    msg_type_name(m->type), m->id);
	if ((c = waiting_find(m->id, WAIT_HOOK)) == NULL) {
		/* The client left meanwhile: its answer goes nowhere. */
		log_debug("request %" PRIu64 ": client gone, result %u dropped",
		    m->id, res);
		return;
	}
	if (httpreq_answer_result(&a, res, id, retry) == -1)
		fatalx("%s: unknown result %u", msg_type_name(m->type), res);
	log_debug("request %" PRIu64 ": %s/%s -> %d %s", m->id,
	    httpreq_tenant(&c->route, c->src), c->route.source, a.status,
	    id);
	conn_answer(c, &a);
}

void
edge_request_ready_result(struct msg *m)
{
	struct httpreq_answer a;
	struct conn *c;
	const char *reason;
	uint8_t ready;

	if (msg_get_u8(m, &ready) == -1 || msg_get_str(m, &reason) == -1 ||
	    msg_end(m) == -1)
		fatalx("bad %s from the master", msg_type_name(m->type));
	if (m->id == 0 || m->id >= next_reqid)
		fatalx("%s for request %" PRIu64 " never sent",
		    msg_type_name(m->type), m->id);
	if ((c = waiting_find(m->id, WAIT_READY)) == NULL)
		return;
	httpreq_answer_ready(&a, ready, reason);
	/* A body sent with GET /ready was never read. */
	a.close = conn_has_body(c);
	conn_answer(c, &a);
}

/*
 * MSG_QUARANTINE_CHECK: the master releases a held hook; verify it again
 * against the source as it is now, judging its timestamp at its receive
 * time, and answer with what a fresh submission would carry.
 */
void
edge_request_quarantine_check(struct msg *m)
{
	const struct source_conf *src;
	const char *tenant, *source, *method, *path, *ctype;
	struct header_kv kv[EDGE_MAX_HEADERS];
	struct keys_hdrs hdrs;
	struct keys_ctx keys;
	enum verify_reason vr;
	char dedupe[KEYS_DEDUPE_MAX + 1] = "";
	char evtype[EVTYPE_MAX + 1];
	const void *body = NULL;
	char *fbody = NULL;
	uint64_t received_at, len;
	uint32_t n, i;
	size_t dlen;
	struct submit_tail tail;
	struct msg r;

	if (msg_get_str(m, &tenant) == -1 || msg_get_str(m, &source) == -1 ||
	    msg_get_str(m, &method) == -1 || msg_get_str(m, &path) == -1 ||
	    msg_get_str(m, &ctype) == -1 ||
	    msg_get_u64(m, &received_at) == -1 ||
	    msg_get_u32(m, &n) == -1 || n > EDGE_MAX_HEADERS)
		fatalx("bad %s from the master", msg_type_name(m->type));
	for (i = 0; i < n; i++)
		if (msg_get_str(m, (const char **)&kv[i].name) == -1 ||
		    msg_get_str(m, (const char **)&kv[i].value) == -1)
			fatalx("bad %s from the master",
			    msg_type_name(m->type));
	if (msg_get_u64(m, &len) == -1)
		fatalx("bad %s from the master", msg_type_name(m->type));
	if (m->fd == -1) {
		if (msg_get_data(m, &body, &dlen) == -1 || dlen != len)
			fatalx("bad %s from the master",
			    msg_type_name(m->type));
	} else if ((body = fbody = proc_read_fd(m->fd, len)) == NULL)
		fatal("%s: body", msg_type_name(m->type));
	if (msg_end(m) == -1)
		fatalx("bad %s from the master", msg_type_name(m->type));

	msg_init(&r, MSG_QUARANTINE_VERDICT, m->id);
	if ((src = conf_source(edge_conf, source)) == NULL) {
		msg_add_u8(&r, 0);
		msg_add_str(&r, "source_gone");
		goto send;
	}
	keys_hdrs_pairs(&hdrs, kv, n);
	keys_init(&keys, &hdrs, body, len);
	vr = verify_request(&src->verify, &hdrs, body, len,
	    (int64_t)(received_at / 1000));
	msg_add_u8(&r, vr == VERIFY_OK);
	msg_add_str(&r, verify_reason_name(vr));
	if (vr == VERIFY_OK) {
		if (keys_dedupe(src, &keys, dedupe, sizeof(dedupe)) == -1)
			dedupe[0] = '\0';
		submit_tail_fill(&tail, src, &keys, dedupe, kv, n, 0, evtype);
		submit_tail_encode(&r, &tail);
	}
	keys_free(&keys);
 send:
	chan_send(edge_master, &r);
	msg_free(&r);
	free(fbody);
}
