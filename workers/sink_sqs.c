/* SPDX-License-Identifier: ISC */
/*
 * sink_sqs.c: the sqs sink, batched: SendMessageBatch over SQS's JSON
 * protocol, signed with SigV4 by libcurl.
 *
 * A batch becomes one request per at most SINK_SQS_MAX_ENTRIES entries
 * and max_message_bytes of messages (body and attributes, as SQS counts
 * them), in entry order: POST to the endpoint's root (the endpoint
 * option, else the queue URL's origin, else https://sqs.<region>.
 * amazonaws.com) with Content-Type application/x-amz-json-1.0 and
 * X-Amz-Target AmazonSQS.SendMessageBatch, the body
 *
 *   {"QueueUrl":..,"Entries":[{"Id":"e<index in the batch>",
 *     "MessageBody":<message v1>,"MessageAttributes":{<name>:
 *     {"DataType":"String","StringValue":..},..},
 *     "MessageGroupId":..,"MessageDeduplicationId":..},..]}
 *
 * MessageGroupId on a FIFO queue (the URL's path ends .fifo) or when the
 * option is set: the option, else tenant/source.  MessageDeduplicationId
 * on a FIFO queue: the hook id, or <hook id>:replay:<replay id>.  The
 * region is the option, else the one in an sqs.<region>.amazonaws.com
 * URL, else us-east-1; the credentials are the options, else AWS_ACCESS_
 * KEY_ID, AWS_SECRET_ACCESS_KEY and AWS_SESSION_TOKEN (a session token
 * goes as X-Amz-Security-Token, which libcurl signs with the rest).
 *
 * Results, per entry: ok only when the answer lists it in Successful with
 * an MD5OfMessageBody equal to the MD5 of the exact MessageBody bytes;
 * listed in Failed: permanent for too large, InvalidMessageContents and
 * InvalidParameterValue, else transient; not listed: transient.  A
 * message over max_message_bytes is permanent before anything is sent.
 * A whole request answered with an error status: a 400 with one of
 * those codes is permanent for a lone entry, and a request of several is
 * sent again one entry per request, so that one bad message does not
 * dead-letter its neighbours (SQS and moto refuse a whole batch for one
 * message over the queue's MaximumMessageSize); else transient for all
 * its entries (a
 * signature or credential error is transient: a reload with the right
 * key lets them through, where a dead letter would lose them), with
 * Retry-After honoured on 429 and 5xx.  Never creates queues.
 */
#include "config.h"

#include <sys/types.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include <curl/curl.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "job.h"
#include "log.h"
#include "qmsg.h"
#include "sink.h"

#define SINK_SQS_MAX_ENTRIES	10		/* SendMessageBatch's limit */
#define SINK_SQS_MAX_BYTES	1048576ULL	/* default max_message_bytes */
#define SINK_SQS_DEF_REGION	"us-east-1"

/* One entry as it goes out. */
struct sink_sqs_msg {
	struct qmsg	 q;
	int		 ready;		/* built and within bounds */
	size_t		 size;		/* as SQS counts it */
	char		 md5[33];	/* of q.json */
};

/* The batch-wide settings. */
struct sink_sqs_ctx {
	const struct batch	*b;
	struct batch_outcome	*o;
	char			*url;		/* the endpoint's root */
	char			 sigv4[128];
	char			*userpwd;
	char			*token;		/* session token, or NULL */
	int			 fifo;
	struct sink_sqs_msg	*m;
};

static int	sink_sqs_setup(struct sink_sqs_ctx *, char *, size_t);
static void	sink_sqs_send(struct sink_sqs_ctx *, const uint32_t *,
		    uint32_t);
static void	sink_sqs_answer(struct sink_sqs_ctx *, const uint32_t *,
		    uint32_t, const char *, size_t);
static void	sink_sqs_retry_after(struct sink_sqs_ctx *, const uint32_t *,
		    uint32_t, const char *);
static int	sink_sqs_pos(const uint32_t *, uint32_t, const char *,
		    uint32_t);
static const char *sink_sqs_code(const char *);
static int	sink_sqs_index(const char *, uint32_t);

static const char *const sink_sqs_permanent[] = {
	"InvalidMessageContents", "InvalidParameterValue", "MessageTooLong",
	"BatchRequestTooLong", "RequestEntityTooLarge", "TooLarge", NULL
};

/* --- the pure parts --- */

/* The code proper: after a '#' (com.amazonaws.sqs#X) or the last '.'
 * (AWS.SimpleQueueService.X). */
static const char *
sink_sqs_code(const char *code)
{
	const char *p;

	if ((p = strrchr(code, '#')) != NULL)
		return p + 1;
	if ((p = strrchr(code, '.')) != NULL)
		return p + 1;
	return code;
}

enum job_result
sink_sqs_classify(const char *code, int sender_fault)
{
	int i;

	if (code == NULL)
		return JOB_ERROR;
	code = sink_sqs_code(code);
	for (i = 0; sink_sqs_permanent[i] != NULL; i++)
		if (strcmp(code, sink_sqs_permanent[i]) == 0)
			return JOB_PERMANENT;
	return JOB_ERROR;
}

void
sink_sqs_md5(const void *s, size_t len, char hex[33])
{
	static const char digits[] = "0123456789abcdef";
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int n, i;

	if (!EVP_Digest(s, len, md, &n, EVP_md5(), NULL) || n != 16)
		fatalx("sink_sqs_md5: MD5 failed");
	for (i = 0; i < 16; i++) {
		hex[2 * i] = digits[md[i] >> 4];
		hex[2 * i + 1] = digits[md[i] & 0xf];
	}
	hex[32] = '\0';
}

/* "e<i>" back to i, if below n. */
static int
sink_sqs_index(const char *id, uint32_t n)
{
	char *end;
	unsigned long v;

	if (id == NULL || id[0] != 'e' || id[1] < '0' || id[1] > '9')
		return -1;
	v = strtoul(id + 1, &end, 10);
	if (*end != '\0' || v >= n)
		return -1;
	return (int)v;
}

/* --- the batch --- */

int
sink_sqs_run(const struct job *j, struct job_outcome *o)
{
	return sink_batch_of_one(j, o, sink_sqs_batch);
}

/* The endpoint, region and credentials; -1 with a reason. */
static int
sink_sqs_setup(struct sink_sqs_ctx *c, char *err, size_t errlen)
{
	const struct sink_conf *s = &c->b->sink;
	const char *qurl = s->u.sqs.queue_url, *key, *secret, *p, *h, *e;
	char region[64];
	size_t n;

	if (qurl == NULL) {
		snprintf(err, errlen, "sqs sink has no queue_url");
		return -1;
	}
	/* The region: the option, else sqs.<region>.amazonaws.com. */
	snprintf(region, sizeof(region), "%s", SINK_SQS_DEF_REGION);
	if (s->u.sqs.region != NULL)
		snprintf(region, sizeof(region), "%s", s->u.sqs.region);
	else if ((h = strstr(qurl, "://sqs.")) != NULL &&
	    (e = strstr(h + 7, ".amazonaws.com")) != NULL &&
	    (size_t)(e - (h + 7)) < sizeof(region) &&
	    memchr(h + 7, '/', e - (h + 7)) == NULL)
		snprintf(region, sizeof(region), "%.*s", (int)(e - (h + 7)),
		    h + 7);
	snprintf(c->sigv4, sizeof(c->sigv4), "aws:amz:%s:sqs", region);

	/* The endpoint: the option, else the queue URL's origin. */
	if (s->u.sqs.endpoint != NULL)
		c->url = strdup(s->u.sqs.endpoint);
	else if ((p = strstr(qurl, "://")) != NULL) {
		n = strcspn(p + 3, "/?#");
		if (asprintf(&c->url, "%.*s/", (int)(p + 3 + n - qurl),
		    qurl) == -1)
			c->url = NULL;
	} else if (asprintf(&c->url, "https://sqs.%s.amazonaws.com/",
	    region) == -1)
		c->url = NULL;
	if (c->url == NULL)
		fatal("sink_sqs");

	/* FIFO: the queue's name, the URL's last segment, ends .fifo. */
	n = strcspn(qurl, "?#");
	c->fifo = n >= 5 && strncmp(qurl + n - 5, ".fifo", 5) == 0;

	if (s->u.sqs.access_key_id != NULL) {
		key = s->u.sqs.access_key_id;
		secret = s->u.sqs.secret_access_key;
		p = s->u.sqs.session_token;
	} else {
		key = getenv("AWS_ACCESS_KEY_ID");
		secret = getenv("AWS_SECRET_ACCESS_KEY");
		p = getenv("AWS_SESSION_TOKEN");
	}
	if (key == NULL || *key == '\0' || secret == NULL || *secret == '\0') {
		snprintf(err, errlen, "sqs: no credentials (access_key_id, "
		    "secret_access_key or AWS_ACCESS_KEY_ID, "
		    "AWS_SECRET_ACCESS_KEY)");
		return -1;
	}
	if (strchr(key, ':') != NULL) {
		snprintf(err, errlen, "sqs: access key id holds a ':'");
		return -1;
	}
	if (asprintf(&c->userpwd, "%s:%s", key, secret) == -1)
		fatal("sink_sqs");
	if (p != NULL && *p != '\0' && (c->token = strdup(p)) == NULL)
		fatal("sink_sqs");
	return 0;
}

int
sink_sqs_batch(const struct batch *b, struct batch_outcome *o)
{
	struct sink_sqs_ctx c;
	const struct batch_entry *e;
	struct sink_sqs_msg *m;
	char err[JOB_DETAIL_MAX];
	uint64_t max;
	uint32_t i, k, req[SINK_SQS_MAX_ENTRIES];
	size_t bytes;

	memset(&c, 0, sizeof(c));
	c.b = b;
	c.o = o;
	if (sink_sqs_setup(&c, err, sizeof(err)) == -1) {
		/* Nothing can be sent: the configuration's fault, or the
		 * environment's; transient but for a missing queue. */
		for (i = 0; i < b->nentries; i++)
			batch_outcome_set(&o->r[i], b->sink.u.sqs.queue_url ==
			    NULL ? JOB_PERMANENT : JOB_ERROR, "%s", err);
		goto done;
	}
	max = b->sink.max_message_bytes > 0 ? b->sink.max_message_bytes :
	    SINK_SQS_MAX_BYTES;
	if ((c.m = calloc(b->nentries, sizeof(*c.m))) == NULL)
		fatal("sink_sqs");

	/* Each entry's message, and those that cannot go at all. */
	for (i = 0; i < b->nentries; i++) {
		e = &b->entries[i];
		m = &c.m[i];
		if (qmsg_build(&m->q, e, b->sink.inline_max_bytes, err,
		    sizeof(err)) == -1) {
			batch_outcome_set(&o->r[i], JOB_ERROR, "%s", err);
			continue;
		}
		m->size = m->q.jsonlen + qmsg_attrs_bytes(&m->q);
		if (m->size > max) {
			batch_outcome_set(&o->r[i], JOB_PERMANENT,
			    "message too large (%zu bytes, max %llu)", m->size,
			    (unsigned long long)max);
			continue;
		}
		sink_sqs_md5(m->q.json, m->q.jsonlen, m->md5);
		m->ready = 1;
	}

	/* Requests of at most 10 entries and max bytes, in entry order. */
	for (k = 0, bytes = 0, i = 0; i < b->nentries; i++) {
		if (!c.m[i].ready)
			continue;
		if (k == SINK_SQS_MAX_ENTRIES || bytes + c.m[i].size > max) {
			sink_sqs_send(&c, req, k);
			k = 0;
			bytes = 0;
		}
		req[k++] = i;
		bytes += c.m[i].size;
	}
	if (k > 0)
		sink_sqs_send(&c, req, k);

done:
	if (c.m != NULL)
		for (i = 0; i < b->nentries; i++)
			qmsg_free(&c.m[i].q);
	free(c.m);
	free(c.url);
	if (c.userpwd != NULL)
		explicit_bzero(c.userpwd, strlen(c.userpwd));
	free(c.userpwd);
	free(c.token);
	return o->n > 0 ? o->r[0].result : JOB_OK;
}

void
sink_sqs_entry(char **body, size_t *len, size_t *cap, uint32_t index,
    const struct qmsg *q, int first)
{
	char id[16];
	int a;

	snprintf(id, sizeof(id), "e%u", index);
	qmsg_cat(body, len, cap, first ? "{\"Id\":\"" : ",{\"Id\":\"");
	qmsg_cat(body, len, cap, id);
	qmsg_cat(body, len, cap, "\",\"MessageBody\":");
	qmsg_json_str(body, len, cap, q->json, q->jsonlen);
	qmsg_cat(body, len, cap, ",\"MessageAttributes\":{");
	for (a = 0; a < q->nattrs; a++) {
		if (a > 0)
			qmsg_cat(body, len, cap, ",");
		qmsg_json_str(body, len, cap, q->attrs[a].name,
		    strlen(q->attrs[a].name));
		qmsg_cat(body, len, cap,
		    ":{\"DataType\":\"String\",\"StringValue\":");
		qmsg_json_str(body, len, cap, q->attrs[a].value,
		    strlen(q->attrs[a].value));
		qmsg_cat(body, len, cap, "}");
	}
	qmsg_cat(body, len, cap, "}");
}

/* One SendMessageBatch of the entries req[0..n). */
static void
sink_sqs_send(struct sink_sqs_ctx *c, const uint32_t *req, uint32_t n)
{
	const struct batch_entry *e;
	struct sink_xfer x;
	struct curl_slist *h = NULL, *t;
	char *body = NULL, *line, *grp, *dd;
	size_t len = 0, cap = 0;
	uint32_t i;

	qmsg_cat(&body, &len, &cap, "{\"QueueUrl\":");
	qmsg_json_str(&body, &len, &cap, c->b->sink.u.sqs.queue_url,
	    strlen(c->b->sink.u.sqs.queue_url));
	qmsg_cat(&body, &len, &cap, ",\"Entries\":[");
	for (i = 0; i < n; i++) {
		e = &c->b->entries[req[i]];
		sink_sqs_entry(&body, &len, &cap, req[i], &c->m[req[i]].q,
		    i == 0);
		if (c->fifo || c->b->sink.u.sqs.message_group_id != NULL) {
			if (c->b->sink.u.sqs.message_group_id != NULL)
				grp = strdup(c->b->sink.u.sqs.message_group_id);
			else if (asprintf(&grp, "%s/%s", e->tenant,
			    e->source) == -1)
				grp = NULL;
			if (grp == NULL)
				fatal("sink_sqs");
			qmsg_cat(&body, &len, &cap, ",\"MessageGroupId\":");
			qmsg_json_str(&body, &len, &cap, grp, strlen(grp));
			free(grp);
		}
		if (c->fifo) {
			if (e->replay_id != NULL && *e->replay_id != '\0') {
				if (asprintf(&dd, "%s:replay:%s", e->hook_id,
				    e->replay_id) == -1)
					fatal("sink_sqs");
			} else if ((dd = strdup(e->hook_id)) == NULL)
				fatal("sink_sqs");
			qmsg_cat(&body, &len, &cap,
			    ",\"MessageDeduplicationId\":");
			qmsg_json_str(&body, &len, &cap, dd, strlen(dd));
			free(dd);
		}
		qmsg_cat(&body, &len, &cap, "}");
	}
	qmsg_cat(&body, &len, &cap, "]}");

#define HDR(s) do {							\
	if ((t = curl_slist_append(h, (s))) == NULL)			\
		fatalx("sink_sqs: curl_slist_append");			\
	h = t;								\
} while (0)
	HDR("Content-Type: application/x-amz-json-1.0");
	HDR("X-Amz-Target: AmazonSQS.SendMessageBatch");
	/* No "Expect:" to switch 100-continue off: libcurl would sign the
	 * empty header, which is never sent, and the signature would not
	 * match.  libcurl waits for 100 only above 1 MiB of body. */
	if (c->token != NULL) {
		if (asprintf(&line, "X-Amz-Security-Token: %s",
		    c->token) == -1)
			fatal("sink_sqs");
		HDR(line);
		free(line);
	}
#undef HDR

	memset(&x, 0, sizeof(x));
	x.url = c->url;
	x.headers = h;
	x.body = body;
	x.bodylen = len;
	x.timeout_ms = c->b->sink.timeout_ms;
	x.sigv4 = c->sigv4;
	x.userpwd = c->userpwd;
	x.proxy_mode = c->b->sink.proxy_mode;
	x.proxy = c->b->sink.proxy;
	if (sink_xfer_run(&x) == -1)
		batch_outcome_set_many(c->o, req, n, x.denied ? JOB_PERMANENT :
		    x.proxy_failed ? JOB_PROXY_ERROR : JOB_ERROR, 0, x.error);
	else {
		c->o->http_status = x.status;
		sink_sqs_answer(c, req, n, x.answer, x.answerlen);
		/* Retry-After counts on throttling and server errors. */
		if (x.retry_after[0] != '\0' &&
		    (x.status == 429 || x.status >= 500))
			sink_sqs_retry_after(c, req, n, x.retry_after);
	}
	sink_xfer_done(&x);
	curl_slist_free_all(h);
	free(body);
}

/* Retry-After of the answer on the transient entries of the request. */
static void
sink_sqs_retry_after(struct sink_sqs_ctx *c, const uint32_t *req,
    uint32_t n, const char *value)
{
	uint64_t ms;
	uint32_t i;

	if (sink_http_retry_after(value, time(NULL), &ms) == -1)
		return;
	for (i = 0; i < n; i++)
		if (c->o->r[req[i]].result == JOB_ERROR)
			c->o->r[req[i]].retry_after_ms = ms;
}

/* The position in req of the entry an answer's Id names, or -1. */
static int
sink_sqs_pos(const uint32_t *req, uint32_t n, const char *id,
    uint32_t nentries)
{
	uint32_t i;
	int idx;

	if ((idx = sink_sqs_index(id, nentries)) == -1)
		return -1;
	for (i = 0; i < n; i++)
		if (req[i] == (uint32_t)idx)
			return (int)i;
	return -1;
}

/* The answer to one SendMessageBatch: every entry of req gets a result. */
static void
sink_sqs_answer(struct sink_sqs_ctx *c, const uint32_t *req, uint32_t n,
    const char *answer, size_t len)
{
	json_t *root, *arr, *it, *v;
	const char *code = NULL, *text = NULL, *md5, *p, *q;
	char detail[JOB_DETAIL_MAX], shown[JOB_DETAIL_MAX], xcode[64];
	uint32_t i;
	int *seen, pos, sf;
	size_t k;
	long status = c->o->http_status;
	struct batch_result *r;

	root = answer != NULL ? json_loadb(answer, len, 0, NULL) : NULL;
	if (status != 200) {
		/* JSON {"__type","message"}; an XML error (from a proxy or
		 * an emulator) has a <Code>. */
		if (json_is_object(root)) {
			code = json_string_value(json_object_get(root,
			    "__type"));
			if ((text = json_string_value(json_object_get(root,
			    "message"))) == NULL)
				text = json_string_value(json_object_get(root,
				    "Message"));
		} else if (answer != NULL &&
		    (p = strstr(answer, "<Code>")) != NULL &&
		    (q = strstr(p, "</Code>")) != NULL &&
		    (size_t)(q - p - 6) < sizeof(xcode)) {
			snprintf(xcode, sizeof(xcode), "%.*s",
			    (int)(q - p - 6), p + 6);
			code = xcode;
		}
		snprintf(detail, sizeof(detail), "sqs http %ld%s%s%s%s", status,
		    code != NULL ? " " : "", code != NULL ?
		    sink_sqs_code(code) : "", text != NULL ? ": " : "",
		    text != NULL ? text : "");
		log_debug("batch %llu: %s (%u entries)",
		    (unsigned long long)c->b->id, job_detail_loggable(detail,
		    shown, sizeof(shown)), n);
		if (status == 400 &&
		    sink_sqs_classify(code, 1) == JOB_PERMANENT && n > 1) {
			json_decref(root);
			for (i = 0; i < n; i++)
				sink_sqs_send(c, &req[i], 1);
			return;
		}
		batch_outcome_set_many(c->o, req, n, status == 400 &&
		    sink_sqs_classify(code, 1) == JOB_PERMANENT ?
		    JOB_PERMANENT : JOB_ERROR, 0, detail);
		json_decref(root);
		return;
	}
	if (!json_is_object(root)) {
		batch_outcome_set_many(c->o, req, n, JOB_ERROR, 0,
		    "sqs: answer is not JSON");
		json_decref(root);
		return;
	}
	if ((seen = calloc(n, sizeof(*seen))) == NULL)
		fatal("sink_sqs");
	arr = json_object_get(root, "Successful");
	json_array_foreach(arr, k, it) {
		pos = sink_sqs_pos(req, n, json_string_value(
		    json_object_get(it, "Id")), c->b->nentries);
		if (pos == -1 || seen[pos])
			continue;
		seen[pos] = 1;
		r = &c->o->r[req[pos]];
		md5 = json_string_value(json_object_get(it,
		    "MD5OfMessageBody"));
		if (md5 != NULL && strcasecmp(md5, c->m[req[pos]].md5) == 0)
			batch_outcome_set(r, JOB_OK, "sqs %s",
			    (p = json_string_value(json_object_get(it,
			    "MessageId"))) != NULL ? p : "ok");
		else
			batch_outcome_set(r, JOB_ERROR,
			    "sqs: MD5OfMessageBody %s, sent %s",
			    md5 != NULL ? md5 : "missing", c->m[req[pos]].md5);
	}
	arr = json_object_get(root, "Failed");
	json_array_foreach(arr, k, it) {
		pos = sink_sqs_pos(req, n, json_string_value(
		    json_object_get(it, "Id")), c->b->nentries);
		if (pos == -1 || seen[pos])
			continue;
		seen[pos] = 1;
		code = json_string_value(json_object_get(it, "Code"));
		text = json_string_value(json_object_get(it, "Message"));
		v = json_object_get(it, "SenderFault");
		sf = json_is_true(v);
		batch_outcome_set(&c->o->r[req[pos]],
		    sink_sqs_classify(code, sf), "sqs %s%s%s%s",
		    code != NULL ? sink_sqs_code(code) : "failed",
		    sf ? " (sender)" : "", text != NULL ? ": " : "",
		    text != NULL ? text : "");
	}
	for (i = 0; i < n; i++)
		if (!seen[i])
			batch_outcome_set(&c->o->r[req[i]], JOB_ERROR,
			    "sqs: entry not in the answer");
	free(seen);
	json_decref(root);
}
