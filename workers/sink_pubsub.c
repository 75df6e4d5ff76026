/* SPDX-License-Identifier: ISC */
/*
 * sink_pubsub.c: the google_pubsub sink, batched: topics.publish.
 *
 * A batch becomes requests of one ordering key each, at most
 * SINK_PUBSUB_MAX_MSGS messages and SINK_PUBSUB_MAX_REQ bytes of request:
 *
 *   POST {endpoint}/v1/projects/{project}/topics/{topic}:publish
 *   {"messages":[{"data":"<base64 of the message v1>",
 *     "attributes":{..},"orderingKey":".."},..]}
 *
 * An entry's ordering key is its lane key when the master sent one, else
 * the ordering_key option, else none.  Entries of one key keep their
 * order: the key's requests go one after the other, and once one fails
 * the rest of that key is not sent (transient) so that nothing overtakes
 * it.  Auth: token (Authorization: Bearer <token>), none (an emulator),
 * metadata (the default: a token from the GCE metadata server, at
 * $GCE_METADATA_HOST if set, kept until a minute before it expires; an
 * unreachable server fails every entry transiently, saying so).  The
 * metadata server is no sink: its request is not guarded (and takes no
 * kept connection, workers/egress.h) nor proxied, and it is the only
 * place the token comes from; the token goes to the endpoint over https,
 * or over plain http to loopback only (an emulator), whatever
 * egress.allow_plain_http says (docs/DEPARTURES 33), and never through a
 * proxy (egress.proxy and the sink's proxy apply to auth token and none).
 *
 * Results, per message: ok only on a 200 naming one message id per
 * message.  Before anything is sent, a message over max_message_bytes or
 * an attribute or ordering key over Pub/Sub's limits is permanent.  An
 * INVALID_ARGUMENT (400) or a 413 is permanent for a lone message; a
 * request of several is halved and each half sent again, within a budget
 * of SINK_PUBSUB_SPLITS extra requests per batch (past it, permanent for
 * all), so one bad message does not dead-letter its neighbours.  Any
 * other answer is transient, Retry-After honoured on 429 and 5xx.  Never
 * creates topics.
 */
#include "config.h"

#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "clock.h"
#include "job.h"
#include "log.h"
#include "qmsg.h"
#include "sink.h"

#define SINK_PUBSUB_MAX_MSGS	1000
#define SINK_PUBSUB_MAX_REQ	10000000	/* bytes of request JSON */
#define SINK_PUBSUB_MAX_BYTES	10000000ULL	/* default max_message_bytes */
#define SINK_PUBSUB_ENDPOINT	"https://pubsub.googleapis.com"
#define SINK_PUBSUB_META_HOST	"metadata.google.internal"
#define SINK_PUBSUB_META_PATH	\
	"/computeMetadata/v1/instance/service-accounts/default/token"
#define SINK_PUBSUB_ATTR_VALUE	1024	/* Pub/Sub's limits, bytes */
#define SINK_PUBSUB_KEY_MAX	1024
#define SINK_PUBSUB_SPLITS	32	/* extra requests to isolate a bad one */
#define SINK_PUBSUB_MARGIN_MS	60000	/* renew a token this early */

struct sink_pubsub_msg {
	struct qmsg	 q;
	int		 ready;
	const char	*key;		/* ordering key, "" none */
	char		*data;		/* base64 of q.json */
	size_t		 datalen;
	size_t		 reqbytes;	/* its share of a request */
};

struct sink_pubsub_ctx {
	const struct batch	*b;
	struct batch_outcome	*o;
	char			*url;
	char			*auth;		/* "Authorization: ..." or NULL */
	int			 meta_token;	/* auth is the metadata
						 * server's token */
	int			 splits;	/* budget left */
	struct sink_pubsub_msg	*m;
};

static char	*sink_pubsub_token;	/* metadata token, cached */
static uint64_t	 sink_pubsub_token_until;	/* mono ms */

static int	sink_pubsub_setup(struct sink_pubsub_ctx *, char *, size_t);
static int	sink_pubsub_metadata(uint64_t, char *, size_t);
static int	sink_pubsub_send(struct sink_pubsub_ctx *, const uint32_t *,
		    uint32_t);
static void	sink_pubsub_check(struct sink_pubsub_ctx *, uint32_t,
		    uint64_t);

void
sink_pubsub_forget_token(void)
{
	if (sink_pubsub_token != NULL)
		explicit_bzero(sink_pubsub_token, strlen(sink_pubsub_token));
	free(sink_pubsub_token);
	sink_pubsub_token = NULL;
	sink_pubsub_token_until = 0;
}

int
sink_pubsub_run(const struct job *j, struct job_outcome *o)
{
	return sink_batch_of_one(j, o, sink_pubsub_batch);
}

/*
 * A token from the metadata server into the cache.  0, or -1 with a
 * reason.  The answer: {"access_token":..,"expires_in":<s>,..}.
 */
static int
sink_pubsub_metadata(uint64_t timeout_ms, char *err, size_t errlen)
{
	struct sink_xfer x;
	struct curl_slist *h = NULL;
	json_t *root;
	const char *host, *tok;
	char *url;
	json_int_t ttl;
	uint64_t now = time_mono_ms();

	if (sink_pubsub_token != NULL && now < sink_pubsub_token_until)
		return 0;
	sink_pubsub_forget_token();
	if ((host = getenv("GCE_METADATA_HOST")) == NULL || *host == '\0')
		host = SINK_PUBSUB_META_HOST;
	if (asprintf(&url, "http://%s%s", host, SINK_PUBSUB_META_PATH) == -1)
		fatal("sink_pubsub");
	if ((h = curl_slist_append(h, "Metadata-Flavor: Google")) == NULL)
		fatalx("sink_pubsub: curl_slist_append");
	memset(&x, 0, sizeof(x));
	x.url = url;
	x.headers = h;
	x.timeout_ms = timeout_ms;
	x.cap = 64 * 1024;
	x.unguarded = 1;	/* the metadata server, not a sink */
	if (sink_xfer_run(&x) == -1) {
		snprintf(err, errlen, "pubsub: metadata server %s "
		    "unreachable: %s", host, x.error);
		goto fail;
	}
	if (x.status != 200) {
		snprintf(err, errlen, "pubsub: metadata server %s: http %ld",
		    host, x.status);
		goto fail;
	}
	root = x.answer != NULL ? json_loadb(x.answer, x.answerlen, 0, NULL) :
	    NULL;
	tok = json_string_value(json_object_get(root, "access_token"));
	ttl = json_integer_value(json_object_get(root, "expires_in"));
	if (tok == NULL || *tok == '\0' || strchr(tok, '\r') != NULL ||
	    strchr(tok, '\n') != NULL) {
		json_decref(root);
		snprintf(err, errlen, "pubsub: metadata server %s: no "
		    "access_token in the answer", host);
		goto fail;
	}
	if ((sink_pubsub_token = strdup(tok)) == NULL)
		fatal("sink_pubsub");
	/* Kept until a minute before it expires; a short-lived token is
	 * used for this batch only. */
	sink_pubsub_token_until = ttl * 1000 > SINK_PUBSUB_MARGIN_MS ?
	    now + ttl * 1000 - SINK_PUBSUB_MARGIN_MS : now;
	json_decref(root);
	sink_xfer_done(&x);
	curl_slist_free_all(h);
	free(url);
	return 0;
fail:
	sink_xfer_done(&x);
	curl_slist_free_all(h);
	free(url);
	return -1;
}

/* The URL and the Authorization header; -1 with a reason. */
static int
sink_pubsub_setup(struct sink_pubsub_ctx *c, char *err, size_t errlen)
{
	const struct sink_conf *s = &c->b->sink;
	const char *ep = s->u.pubsub.endpoint, *auth = s->u.pubsub.auth;
	size_t n;

	if (s->u.pubsub.project == NULL || s->u.pubsub.topic == NULL) {
		snprintf(err, errlen, "pubsub sink has no project or topic");
		return -1;
	}
	if (ep == NULL)
		ep = SINK_PUBSUB_ENDPOINT;
	n = strlen(ep);
	while (n > 0 && ep[n - 1] == '/')
		n--;
	if (asprintf(&c->url, "%.*s/v1/projects/%s/topics/%s:publish",
	    (int)n, ep, s->u.pubsub.project, s->u.pubsub.topic) == -1)
		fatal("sink_pubsub");
	if (auth == NULL)
		auth = "metadata";
	if (strcmp(auth, "none") == 0)
		return 0;
	if (strcmp(auth, "token") == 0) {
		if (s->u.pubsub.token == NULL) {
			snprintf(err, errlen, "pubsub: auth token without a "
			    "token");
			return -1;
		}
		if (asprintf(&c->auth, "Authorization: Bearer %s",
		    s->u.pubsub.token) == -1)
			fatal("sink_pubsub");
		return 0;
	}
	if (strcmp(auth, "metadata") != 0) {
		snprintf(err, errlen, "pubsub: auth %s", auth);
		return -1;
	}
	if (sink_pubsub_metadata(s->timeout_ms, err, errlen) == -1)
		return -1;
	c->meta_token = 1;
	if (asprintf(&c->auth, "Authorization: Bearer %s",
	    sink_pubsub_token) == -1)
		fatal("sink_pubsub");
	return 0;
}

/* Entry i's message: built, checked against the limits, encoded. */
static void
sink_pubsub_check(struct sink_pubsub_ctx *c, uint32_t i, uint64_t max)
{
	const struct batch_entry *e = &c->b->entries[i];
	struct sink_pubsub_msg *m = &c->m[i];
	struct batch_result *r = &c->o->r[i];
	char err[JOB_DETAIL_MAX];
	size_t size, abytes = 0;
	int a;

	if (qmsg_build(&m->q, e, c->b->sink.inline_max_bytes, err,
	    sizeof(err)) == -1) {
		batch_outcome_set(r, JOB_ERROR, "%s", err);
		return;
	}
	if (e->order_key != NULL && *e->order_key != '\0')
		m->key = e->order_key;
	else if (c->b->sink.u.pubsub.ordering_key != NULL)
		m->key = c->b->sink.u.pubsub.ordering_key;
	else
		m->key = "";
	for (a = 0; a < m->q.nattrs; a++) {
		if (strlen(m->q.attrs[a].value) > SINK_PUBSUB_ATTR_VALUE) {
			batch_outcome_set(r, JOB_PERMANENT, "pubsub: "
			    "attribute %s over %d bytes", m->q.attrs[a].name,
			    SINK_PUBSUB_ATTR_VALUE);
			return;
		}
		abytes += strlen(m->q.attrs[a].name) +
		    strlen(m->q.attrs[a].value);
	}
	if (strlen(m->key) > SINK_PUBSUB_KEY_MAX) {
		batch_outcome_set(r, JOB_PERMANENT, "pubsub: ordering key "
		    "over %d bytes", SINK_PUBSUB_KEY_MAX);
		return;
	}
	size = m->q.jsonlen + abytes;
	if (size > max) {
		batch_outcome_set(r, JOB_PERMANENT, "message too large (%zu "
		    "bytes, max %llu)", size, (unsigned long long)max);
		return;
	}
	m->datalen = (m->q.jsonlen + 2) / 3 * 4;
	if ((m->data = malloc(m->datalen + 1)) == NULL)
		fatal("sink_pubsub");
	EVP_EncodeBlock((unsigned char *)m->data,
	    (const unsigned char *)m->q.json, m->q.jsonlen);
	/* Its JSON in a request, roughly: the data, the attributes (at
	 * most 6 escaped bytes per byte), the key and the punctuation. */
	m->reqbytes = m->datalen + 6 * (abytes + strlen(m->key)) + 64 +
	    24 * m->q.nattrs;
	m->ready = 1;
}

int
sink_pubsub_batch(const struct batch *b, struct batch_outcome *o)
{
	struct sink_pubsub_ctx c;
	char err[JOB_DETAIL_MAX];
	uint64_t max;
	uint32_t i, k, n, *req;
	size_t bytes;
	const char *key;
	int failed;

	memset(&c, 0, sizeof(c));
	c.b = b;
	c.o = o;
	c.splits = SINK_PUBSUB_SPLITS;
	if (sink_pubsub_setup(&c, err, sizeof(err)) == -1) {
		for (i = 0; i < b->nentries; i++)
			batch_outcome_set(&o->r[i], JOB_ERROR, "%s", err);
		goto done;
	}
	max = b->sink.max_message_bytes > 0 ? b->sink.max_message_bytes :
	    SINK_PUBSUB_MAX_BYTES;
	if ((c.m = calloc(b->nentries, sizeof(*c.m))) == NULL ||
	    (req = calloc(b->nentries, sizeof(*req))) == NULL)
		fatal("sink_pubsub");
	for (i = 0; i < b->nentries; i++)
		sink_pubsub_check(&c, i, max);

	/*
	 * One key at a time, in the order keys first appear; within a key,
	 * entry order, cut at the message and byte limits.  The first
	 * failure of a key holds the rest of it back.
	 */
	for (i = 0; i < b->nentries; i++) {
		if (!c.m[i].ready)
			continue;
		key = c.m[i].key;
		failed = 0;
		for (n = 0, bytes = 0, k = i; k < b->nentries; k++) {
			if (!c.m[k].ready || strcmp(c.m[k].key, key) != 0)
				continue;
			c.m[k].ready = 0;
			if (failed) {
				batch_outcome_set(&o->r[k], JOB_ERROR,
				    "pubsub: held back behind a failure of "
				    "its ordering key");
				continue;
			}
			if (n == SINK_PUBSUB_MAX_MSGS ||
			    (n > 0 && bytes + c.m[k].reqbytes >
			    SINK_PUBSUB_MAX_REQ)) {
				if (sink_pubsub_send(&c, req, n) == -1 &&
				    *key != '\0') {
					failed = 1;
					batch_outcome_set(&o->r[k], JOB_ERROR,
					    "pubsub: held back behind a "
					    "failure of its ordering key");
					n = 0;
					continue;
				}
				n = 0;
				bytes = 0;
			}
			req[n++] = k;
			bytes += c.m[k].reqbytes;
		}
		if (n > 0)
			(void)sink_pubsub_send(&c, req, n);
	}
	free(req);

done:
	if (c.m != NULL)
		for (i = 0; i < b->nentries; i++) {
			qmsg_free(&c.m[i].q);
			free(c.m[i].data);
		}
	free(c.m);
	free(c.url);
	if (c.auth != NULL)
		explicit_bzero(c.auth, strlen(c.auth));
	free(c.auth);
	return o->n > 0 ? o->r[0].result : JOB_OK;
}

/* One publish of req[0..n), all of one key.  0 if all went, else -1. */
static int
sink_pubsub_send(struct sink_pubsub_ctx *c, const uint32_t *req,
    uint32_t n)
{
	const struct sink_pubsub_msg *m;
	struct sink_xfer x;
	struct curl_slist *h = NULL, *t;
	json_t *root = NULL, *ids, *err;
	const char *status = NULL, *text = NULL, *id;
	char *body = NULL, detail[JOB_DETAIL_MAX], shown[JOB_DETAIL_MAX];
	size_t len = 0, cap = 0;
	uint64_t ra = 0;
	uint32_t i, half;
	int a, rc = -1;

	qmsg_cat(&body, &len, &cap, "{\"messages\":[");
	for (i = 0; i < n; i++) {
		m = &c->m[req[i]];
		qmsg_cat(&body, &len, &cap, i > 0 ? ",{\"data\":\"" :
		    "{\"data\":\"");
		qmsg_cat(&body, &len, &cap, m->data);
		qmsg_cat(&body, &len, &cap, "\",\"attributes\":{");
		for (a = 0; a < m->q.nattrs; a++) {
			if (a > 0)
				qmsg_cat(&body, &len, &cap, ",");
			qmsg_json_str(&body, &len, &cap, m->q.attrs[a].name,
			    strlen(m->q.attrs[a].name));
			qmsg_cat(&body, &len, &cap, ":");
			qmsg_json_str(&body, &len, &cap, m->q.attrs[a].value,
			    strlen(m->q.attrs[a].value));
		}
		qmsg_cat(&body, &len, &cap, "}");
		if (*m->key != '\0') {
			qmsg_cat(&body, &len, &cap, ",\"orderingKey\":");
			qmsg_json_str(&body, &len, &cap, m->key,
			    strlen(m->key));
		}
		qmsg_cat(&body, &len, &cap, "}");
	}
	qmsg_cat(&body, &len, &cap, "]}");

#define HDR(s) do {							\
	if ((t = curl_slist_append(h, (s))) == NULL)			\
		fatalx("sink_pubsub: curl_slist_append");		\
	h = t;								\
} while (0)
	HDR("Content-Type: application/json");
	HDR("Expect:");
	if (c->auth != NULL)
		HDR(c->auth);
#undef HDR

	memset(&x, 0, sizeof(x));
	x.url = c->url;
	x.headers = h;
	x.body = body;
	x.bodylen = len;
	x.timeout_ms = c->b->sink.timeout_ms;
	x.secret = c->meta_token;
	/* The metadata server's token never goes through a proxy, not even
	 * inside CONNECT: it is the machine's credential. */
	x.proxy_mode = c->meta_token ? SINK_PROXY_NONE :
	    c->b->sink.proxy_mode;
	x.proxy = c->b->sink.proxy;
	if (sink_xfer_run(&x) == -1) {
		if (x.denied)	/* the guard's reason, as it is */
			batch_outcome_set_many(c->o, req, n, JOB_PERMANENT, 0,
			    x.error);
		else if (x.proxy_failed)	/* "proxy_error: ..." */
			batch_outcome_set_many(c->o, req, n, JOB_PROXY_ERROR,
			    0, x.error);
		else {
			snprintf(detail, sizeof(detail), "pubsub: %s",
			    x.error);
			batch_outcome_set_many(c->o, req, n, JOB_ERROR, 0,
			    detail);
		}
		goto out;
	}
	c->o->http_status = x.status;
	root = x.answer != NULL ? json_loadb(x.answer, x.answerlen, 0, NULL) :
	    NULL;
	if (x.status == 200) {
		ids = json_object_get(root, "messageIds");
		if (json_array_size(ids) != n) {
			snprintf(detail, sizeof(detail), "pubsub: %zu message "
			    "ids for %u messages", json_array_size(ids), n);
			batch_outcome_set_many(c->o, req, n, JOB_ERROR, 0,
			    detail);
			goto out;
		}
		for (i = 0; i < n; i++) {
			if ((id = json_string_value(json_array_get(ids,
			    i))) == NULL || *id == '\0')
				break;
			batch_outcome_set(&c->o->r[req[i]], JOB_OK,
			    "pubsub %s", id);
		}
		if (i < n) {
			batch_outcome_set_many(c->o, req, n, JOB_ERROR, 0,
			    "pubsub: a message id is not a string");
			goto out;
		}
		rc = 0;
		goto out;
	}

	/* {"error":{"code":..,"message":..,"status":"INVALID_ARGUMENT"}} */
	err = json_object_get(root, "error");
	status = json_string_value(json_object_get(err, "status"));
	text = json_string_value(json_object_get(err, "message"));
	snprintf(detail, sizeof(detail), "pubsub http %ld%s%s%s%s", x.status,
	    status != NULL ? " " : "", status != NULL ? status : "",
	    text != NULL ? ": " : "", text != NULL ? text : "");
	if ((x.status == 400 && (status == NULL ||
	    strcmp(status, "INVALID_ARGUMENT") == 0)) || x.status == 413) {
		if (n > 1 && c->splits >= 2) {
			/* Halve, to find the bad message(s). */
			c->splits -= 2;
			half = n / 2;
			sink_xfer_done(&x);
			curl_slist_free_all(h);
			free(body);
			json_decref(root);
			log_debug("batch %llu: %s; halving %u messages",
			    (unsigned long long)c->b->id, job_detail_loggable(
			    detail, shown, sizeof(shown)), n);
			rc = sink_pubsub_send(c, req, half);
			if (sink_pubsub_send(c, req + half, n - half) == -1)
				rc = -1;
			return rc;
		}
		batch_outcome_set_many(c->o, req, n, JOB_PERMANENT, 0, detail);
		goto out;
	}
	if (x.retry_after[0] != '\0' && (x.status == 429 || x.status >= 500))
		(void)sink_http_retry_after(x.retry_after, time(NULL), &ra);
	batch_outcome_set_many(c->o, req, n, JOB_ERROR, ra, detail);
	log_debug("batch %llu: %s", (unsigned long long)c->b->id,
	    job_detail_loggable(detail, shown, sizeof(shown)));
out:
	json_decref(root);
	sink_xfer_done(&x);
	curl_slist_free_all(h);
	free(body);
	return rc;
}
