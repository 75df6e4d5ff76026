/* SPDX-License-Identifier: ISC */
/*
 * sink_nats.c: the nats sink, JetStream through libnats.
 *
 * A batch is a window of asynchronous publishes (js_PublishMsgAsync) to
 * the sink's subject, one message per entry, each settled on its own
 * PubAck: ok only on the stream's acknowledgment (a duplicate PubAck
 * too: the stream holds the message already).  The message is the v1
 * queue message (workers/qmsg.h), byte for byte; its headers are
 * Nats-Msg-Id, JetStream's dedupe key (the hook id, or <hook
 * id>:replay:<replay id> on a replay, which must not be taken for a
 * duplicate of the first delivery), and the queue message's attributes
 * (ankusa_id, ankusa_tenant_id, ankusa_source_id, ...; a value holding
 * a CR or LF is left out rather than split the header block).
 *
 * Results, per entry: no responders (no stream covers the subject, or
 * JetStream is off) is permanent, naming the subject; a message over
 * the server's max_payload is permanent; a JetStream error, a PubAck
 * not in by publish_timeout_ms, a publish that failed and a connection
 * that went away are transient.
 *
 * The connection is the process's, kept across batches, one per sink
 * (its servers, auth and tls; SINK_NATS_CONNS at most, the oldest
 * closed).  It never reconnects by itself: a connection that closed
 * costs the publishes in flight on it, and the next batch connects
 * again.  Connecting: each server in the order written, its name
 * resolved here and every address put to the egress guard
 * (workers/egress.h) before libnats is given the addresses that passed
 * (servers a cluster announces are ignored); with TLS the certificate
 * is verified against the server's name (or tls.server_name) and the
 * system's CAs or tls.ca_file.  A server whose every address the guard
 * refuses, with none other reachable, is a permanent error
 * (egress_denied:<address>).
 *
 * libnats runs its own threads (from the first batch, inside the
 * sandbox, which lets a process make threads): the PubAcks and the
 * closed connection arrive on them, under nats_mu, while the batch waits
 * on nats_cv.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <netdb.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <nats/nats.h>
#include <openssl/x509.h>

#include "clock.h"
#include "conf.h"
#include "egress.h"
#include "job.h"
#include "log.h"
#include "netaddr.h"
#include "nkey.h"
#include "qmsg.h"
#include "sink.h"

#define SINK_NATS_CONNS		4	/* kept connections, per process */
#define SINK_NATS_MAX_PENDING	4096	/* async publishes in flight */

struct sink_nats_conn {
	char		*key;		/* the sink's connection settings */
	natsConnection	*nc;
	jsCtx		*js;
	int		 closed;	/* set by libnats's thread */
	uint64_t	 used;		/* last batch, for the oldest */
};

/* The batch in hand, as the PubAck handler sees it. */
struct sink_nats_wait {
	natsMsg			**msgs;		/* by entry; NULL: settled or
						 * not sent */
	struct batch_outcome	*o;
	const char		*subject;
	uint32_t		 n;
	uint32_t		 open;		/* sent, not yet settled */
	struct sink_nats_conn	*conn;
};

static pthread_mutex_t		 nats_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t		 nats_cv = PTHREAD_COND_INITIALIZER;
static struct sink_nats_conn	 conns[SINK_NATS_CONNS];
static struct sink_nats_wait	*waiting;	/* under nats_mu */
static uint64_t			 nats_tick;
/* libnats is opened at the first batch, not at the start: its threads
 * and memory (3 threads, 300 KiB) are for the processes that use it. */
static int			 nats_opened;

static char	*sink_nats_key(const struct sink_conf *);
static struct sink_nats_conn *sink_nats_get(const struct sink_conf *,
		    enum job_result *, char *, size_t);
static void	sink_nats_drop(struct sink_nats_conn *);
static int	sink_nats_connect(struct sink_nats_conn *,
		    const struct sink_conf *, char *, size_t, int *);
static natsStatus sink_nats_opts(natsOptions *, const struct sink_conf *,
		    const char *);
static void	sink_nats_ack(jsCtx *, natsMsg *, jsPubAck *, jsPubAckErr *,
		    void *);
static void	sink_nats_closed(natsConnection *, void *);
static natsStatus sink_nats_sign(char **, unsigned char **, int *,
		    const char *, void *);
static natsStatus sink_nats_jwt(char **, char **, void *);
static natsMsg	*sink_nats_msg(const struct batch *, uint32_t,
		    const struct qmsg *);

int
sink_nats_run(const struct job *j, struct job_outcome *o)
{
	return sink_batch_of_one(j, o, sink_nats_batch);
}

void
sink_nats_cleanup(void)
{
	int i;

	if (!nats_opened)
		return;
	for (i = 0; i < SINK_NATS_CONNS; i++)
		sink_nats_drop(&conns[i]);
	nats_Close();
	nats_opened = 0;
}

/* The settings that make a connection: a sink with the same ones shares
 * it.  Each ended by a 0x1f, secrets and all: it stays in this
 * process. */
static char *
sink_nats_key(const struct sink_conf *s)
{
	const char *f[] = {
		s->u.nats.urls, s->u.nats.username, s->u.nats.password,
		s->u.nats.token, s->u.nats.nkey_seed, s->u.nats.jwt,
		s->u.nats.tls_on ? "tls" : "", s->u.nats.tls.client_cert,
		s->u.nats.tls.client_key, s->u.nats.tls.ca,
		s->u.nats.tls.server_name,
	};
	char *key = NULL;
	size_t len = 0, cap = 0, i;

	for (i = 0; i < sizeof(f) / sizeof(f[0]); i++) {
		qmsg_cat(&key, &len, &cap, f[i] != NULL ? f[i] : "");
		qmsg_cat(&key, &len, &cap, "\x1f");
	}
	return key;
}

static void
sink_nats_drop(struct sink_nats_conn *c)
{
	if (c->js != NULL)
		jsCtx_Destroy(c->js);
	if (c->nc != NULL)
		natsConnection_Destroy(c->nc);
	if (c->key != NULL) {
		explicit_bzero(c->key, strlen(c->key));
		free(c->key);
	}
	memset(c, 0, sizeof(*c));
}

/* The sink's open connection, made when it has none (or it closed);
 * NULL with *res and err when none could be made. */
static struct sink_nats_conn *
sink_nats_get(const struct sink_conf *s, enum job_result *res, char *err,
    size_t errlen)
{
	struct sink_nats_conn *c = NULL;
	char *key;
	int i, permanent = 0, closed = 0;

	if (!nats_opened) {
		if (nats_Open(-1) != NATS_OK) {
			snprintf(err, errlen, "nats: cannot start libnats");
			*res = JOB_ERROR;
			return NULL;
		}
		nats_opened = 1;
	}
	key = sink_nats_key(s);

	for (i = 0; i < SINK_NATS_CONNS; i++)
		if (conns[i].key != NULL && strcmp(conns[i].key, key) == 0) {
			c = &conns[i];
			break;
		}
	if (c != NULL) {
		pthread_mutex_lock(&nats_mu);
		closed = c->closed;
		pthread_mutex_unlock(&nats_mu);
	}
	if (c != NULL && (closed || natsConnection_IsClosed(c->nc))) {
		log_info("nats: connection to %s closed, connecting again",
		    s->u.nats.urls);
		sink_nats_drop(c);
		c = NULL;
	}
	if (c == NULL) {
		/* A free slot, else the one used longest ago. */
		for (i = 0; i < SINK_NATS_CONNS; i++)
			if (conns[i].key == NULL || c == NULL ||
			    conns[i].used < c->used) {
				c = &conns[i];
				if (c->key == NULL)
					break;
			}
		sink_nats_drop(c);
		if (sink_nats_connect(c, s, err, errlen, &permanent) == -1) {
			sink_nats_drop(c);
			explicit_bzero(key, strlen(key));
			free(key);
			*res = permanent ? JOB_PERMANENT : JOB_ERROR;
			return NULL;
		}
		c->key = key;
	} else {
		explicit_bzero(key, strlen(key));
		free(key);
	}
	c->used = ++nats_tick;
	return c;
}

/* The options common to every server of the sink: auth, TLS, no
 * reconnect, no announced servers, the closed callback. */
static natsStatus
sink_nats_opts(natsOptions *o, const struct sink_conf *s, const char *host)
{
	const struct sink_tls *t = &s->u.nats.tls;
	char pub[NKEY_PUB_LEN + 1];
	natsStatus st = NATS_OK;
	int64_t tmo = (int64_t)s->timeout_ms;	/* the connect's */

	if (st == NATS_OK)
		st = natsOptions_SetName(o, "ankusa");
	if (st == NATS_OK)
		st = natsOptions_SetTimeout(o, tmo);
	if (st == NATS_OK)
		st = natsOptions_SetNoRandomize(o, true);
	if (st == NATS_OK)
		st = natsOptions_SetAllowReconnect(o, false);
	if (st == NATS_OK)
		st = natsOptions_SetIgnoreDiscoveredServers(o, true);
	if (st == NATS_OK)
		st = natsOptions_SetMaxPendingMsgs(o, SINK_NATS_MAX_PENDING);
	if (st == NATS_OK && s->u.nats.username != NULL)
		st = natsOptions_SetUserInfo(o, s->u.nats.username,
		    s->u.nats.password);
	if (st == NATS_OK && s->u.nats.token != NULL)
		st = natsOptions_SetToken(o, s->u.nats.token);
	if (st == NATS_OK && s->u.nats.nkey_seed != NULL) {
		/* The seed signs the nonce; with a JWT the server takes the
		 * key from it, else from the public key announced. */
		if (s->u.nats.jwt != NULL)
			st = natsOptions_SetUserCredentialsCallbacks(o,
			    sink_nats_jwt, s->u.nats.jwt, sink_nats_sign,
			    s->u.nats.nkey_seed);
		else if (nkey_user_public(s->u.nats.nkey_seed, pub) == 0)
			st = natsOptions_SetNKey(o, pub, sink_nats_sign,
			    s->u.nats.nkey_seed);
		else
			st = NATS_INVALID_ARG;
	}
	if (st == NATS_OK && s->u.nats.tls_on) {
		st = natsOptions_SetSecure(o, true);
		if (st == NATS_OK)
			st = natsOptions_SetExpectedHostname(o,
			    t->server_name != NULL ? t->server_name : host);
		if (st == NATS_OK && t->ca != NULL)
			st = natsOptions_SetCATrustedCertificates(o, t->ca);
		else if (st == NATS_OK)
			st = natsOptions_LoadCATrustedCertificates(o,
			    X509_get_default_cert_file());
		if (st == NATS_OK && t->client_cert != NULL)
			st = natsOptions_SetCertificatesChain(o,
			    t->client_cert, t->client_key);
	}
	return st;
}

/* Connect c to the first of the sink's servers that answers, through
 * the guard; -1 with err, *permanent set when the guard refused every
 * address tried and nothing else failed, or the sink has no servers. */
static int
sink_nats_connect(struct sink_nats_conn *c, const struct sink_conf *s,
    char *err, size_t errlen, int *permanent)
{
	struct addrinfo hints, *res, *ai;
	struct egress_watch w;
	struct netaddr na;
	natsOptions *o;
	jsOptions jo;
	natsStatus st;
	char *list, *srv, *save = NULL, host[256], a[NETADDR_STRLEN];
	char portstr[8], **urls;
	const char *why;
	uint16_t port;
	int tls, nurl, failed = 0, rc;

	*permanent = 0;
	if (s->u.nats.urls == NULL || s->u.nats.subject == NULL) {
		snprintf(err, errlen, "nats sink has no servers or subject");
		*permanent = 1;
		return -1;
	}
	if ((list = strdup(s->u.nats.urls)) == NULL)
		fatal("sink_nats");
	memset(&w, 0, sizeof(w));
	w.plain = !s->u.nats.tls_on;
	err[0] = '\0';
	for (srv = strtok_r(list, ",", &save); srv != NULL;
	    srv = strtok_r(NULL, ",", &save)) {
		if (conf_nats_server(srv, host, sizeof(host), &port, &tls) ==
		    -1) {
			snprintf(err, errlen, "nats: bad server %s", srv);
			failed++;
			continue;
		}
		memset(&hints, 0, sizeof(hints));
		hints.ai_family = AF_UNSPEC;
		hints.ai_socktype = SOCK_STREAM;
		snprintf(portstr, sizeof(portstr), "%u", port);
		if ((rc = getaddrinfo(host, portstr, &hints, &res)) != 0) {
			snprintf(err, errlen, "nats: %s: %s", host,
			    gai_strerror(rc));
			failed++;
			continue;
		}
		/* The addresses the guard lets through, as URLs. */
		for (nurl = 0, ai = res; ai != NULL; ai = ai->ai_next)
			nurl++;
		if ((urls = calloc(nurl + 1, sizeof(*urls))) == NULL)
			fatal("sink_nats");
		for (nurl = 0, ai = res; ai != NULL; ai = ai->ai_next) {
			if (egress_check(&w, ai->ai_addr, ai->ai_addrlen) ==
			    -1 || netaddr_from_sockaddr(ai->ai_addr,
			    ai->ai_addrlen, &na) == -1)
				continue;
			netaddr_format(&na, a, sizeof(a));
			if (asprintf(&urls[nurl], na.family == AF_INET6 ?
			    "nats://[%s]:%u" : "nats://%s:%u", a, port) == -1)
				fatal("sink_nats");
			nurl++;
		}
		freeaddrinfo(res);
		if (nurl == 0) {
			free(urls);
			continue;
		}
		o = NULL;
		st = natsOptions_Create(&o);
		if (st == NATS_OK)
			st = natsOptions_SetServers(o, (const char **)urls,
			    nurl);
		if (st == NATS_OK)
			st = sink_nats_opts(o, s, host);
		if (st == NATS_OK)
			st = natsOptions_SetClosedCB(o, sink_nats_closed, c);
		if (st == NATS_OK)
			st = natsConnection_Connect(&c->nc, o);
		why = nats_GetLastError(NULL);
		if (st != NATS_OK)
			snprintf(err, errlen, "nats: %s port %u: %s%s%s", host,
			    port, natsStatus_GetText(st), why != NULL &&
			    *why != '\0' ? ": " : "", why != NULL ? why : "");
		natsOptions_Destroy(o);
		while (nurl > 0)
			free(urls[--nurl]);
		free(urls);
		if (st == NATS_OK)
			break;
		c->nc = NULL;
		failed++;
	}
	free(list);
	if (c->nc == NULL) {
		if (failed == 0 && EGRESS_REFUSED(&w)) {
			snprintf(err, errlen, "%s", w.denied);
			*permanent = 1;
		} else if (err[0] == '\0')
			snprintf(err, errlen, "nats: no server reachable");
		return -1;
	}
	jsOptions_Init(&jo);
	jo.Wait = (int64_t)s->u.nats.publish_timeout_ms;
	jo.PublishAsync.MaxPending = SINK_NATS_MAX_PENDING;
	jo.PublishAsync.AckHandler = sink_nats_ack;
	jo.PublishAsync.AckHandlerClosure = c;
	if ((st = natsConnection_JetStream(&c->js, c->nc, &jo)) != NATS_OK) {
		snprintf(err, errlen, "nats: jetstream: %s",
		    natsStatus_GetText(st));
		return -1;
	}
	return 0;
}

/* At connect (in the batch's thread): the nonce signed with the seed,
 * and the JWT. */
static natsStatus
sink_nats_sign(char **why, unsigned char **sig, int *siglen,
    const char *nonce, void *seed)
{
	return nats_Sign(seed, nonce, sig, siglen);
}

static natsStatus
sink_nats_jwt(char **jwt, char **why, void *arg)
{
	if ((*jwt = strdup(arg)) == NULL)
		return NATS_NO_MEMORY;
	return NATS_OK;
}

/* libnats's thread: the connection is gone for good (no reconnect).
 * The publishes in flight on it will not be acknowledged. */
static void
sink_nats_closed(natsConnection *nc, void *arg)
{
	struct sink_nats_conn *c = arg;

	pthread_mutex_lock(&nats_mu);
	if (c->nc == nc)	/* not a connection dropped since */
		c->closed = 1;
	pthread_cond_broadcast(&nats_cv);
	pthread_mutex_unlock(&nats_mu);
}

/* libnats's thread: the PubAck, or the error, of one message. */
static void
sink_nats_ack(jsCtx *js, natsMsg *m, jsPubAck *pa, jsPubAckErr *pae,
    void *arg)
{
	struct sink_nats_wait *wt;
	struct batch_result *r;
	uint32_t i;

	pthread_mutex_lock(&nats_mu);
	if ((wt = waiting) != NULL)
		for (i = 0; i < wt->n; i++) {
			if (wt->msgs[i] != m)
				continue;
			r = &wt->o->r[i];
			if (pa != NULL)
				batch_outcome_set(r, JOB_OK, "nats %s seq %llu%s",
				    pa->Stream != NULL ? pa->Stream : "?",
				    (unsigned long long)pa->Sequence,
				    pa->Duplicate ? " (duplicate)" : "");
			else if (pae != NULL && pae->Err == NATS_NO_RESPONDERS)
				batch_outcome_set(r, JOB_PERMANENT, "nats: no "
				    "stream covers subject %s", wt->subject);
			else if (pae != NULL && pae->Err == NATS_MAX_PAYLOAD)
				batch_outcome_set(r, JOB_PERMANENT, "nats: "
				    "message too large for the server");
			else if (pae != NULL && pae->ErrCode != 0)
				batch_outcome_set(r, JOB_ERROR, "nats: "
				    "jetstream error %d: %s", (int)pae->ErrCode,
				    pae->ErrText != NULL ? pae->ErrText : "");
			else
				batch_outcome_set(r, JOB_ERROR, "nats: %s",
				    pae != NULL ? (pae->ErrText != NULL ?
				    pae->ErrText : natsStatus_GetText(pae->Err)) :
				    "no answer");
			wt->msgs[i] = NULL;
			wt->open--;
			pthread_cond_broadcast(&nats_cv);
			break;
		}
	pthread_mutex_unlock(&nats_mu);
	natsMsg_Destroy(m);
}

/* Entry i's message: the v1 body, the dedupe id and the attributes as
 * headers. */
static natsMsg *
sink_nats_msg(const struct batch *b, uint32_t i, const struct qmsg *q)
{
	const struct batch_entry *e = &b->entries[i];
	natsMsg *m = NULL;
	char *id;
	int a;

	if (natsMsg_Create(&m, b->sink.u.nats.subject, NULL, q->json,
	    (int)q->jsonlen) != NATS_OK)
		return NULL;
	if (e->replay_id != NULL && *e->replay_id != '\0') {
		if (asprintf(&id, "%s:replay:%s", e->hook_id,
		    e->replay_id) == -1)
			fatal("sink_nats");
	} else if ((id = strdup(e->hook_id)) == NULL)
		fatal("sink_nats");
	if (natsMsgHeader_Set(m, "Nats-Msg-Id", id) != NATS_OK) {
		free(id);
		natsMsg_Destroy(m);
		return NULL;
	}
	free(id);
	for (a = 0; a < q->nattrs; a++) {
		if (strpbrk(q->attrs[a].value, "\r\n") != NULL)
			continue;
		if (natsMsgHeader_Set(m, q->attrs[a].name,
		    q->attrs[a].value) != NATS_OK) {
			natsMsg_Destroy(m);
			return NULL;
		}
	}
	return m;
}

int
sink_nats_batch(const struct batch *b, struct batch_outcome *o)
{
	struct sink_nats_wait wt;
	struct sink_nats_conn *c;
	struct qmsg *q;
	struct timespec ts;
	jsPubOptions po;
	natsMsgList pend;
	natsMsg *m;
	enum job_result res;
	char err[JOB_DETAIL_MAX];
	uint64_t tmo = b->sink.u.nats.publish_timeout_ms, deadline;
	uint32_t i;
	natsStatus st;

	if ((c = sink_nats_get(&b->sink, &res, err, sizeof(err))) == NULL) {
		for (i = 0; i < b->nentries; i++)
			batch_outcome_set(&o->r[i], res, "%s", err);
		return o->n > 0 ? o->r[0].result : JOB_OK;
	}
	if ((q = calloc(b->nentries, sizeof(*q))) == NULL ||
	    (wt.msgs = calloc(b->nentries, sizeof(*wt.msgs))) == NULL)
		fatal("sink_nats");
	wt.o = o;
	wt.n = b->nentries;
	wt.open = 0;
	wt.subject = b->sink.u.nats.subject;
	wt.conn = c;
	jsPubOptions_Init(&po);
	po.MaxWait = (int64_t)tmo;

	pthread_mutex_lock(&nats_mu);
	waiting = &wt;
	pthread_mutex_unlock(&nats_mu);
	for (i = 0; i < b->nentries; i++) {
		if (qmsg_build(&q[i], &b->entries[i], b->sink.inline_max_bytes,
		    err, sizeof(err)) == -1) {
			batch_outcome_set(&o->r[i], JOB_ERROR, "%s", err);
			continue;
		}
		if ((m = sink_nats_msg(b, i, &q[i])) == NULL) {
			batch_outcome_set(&o->r[i], JOB_ERROR,
			    "nats: cannot build the message");
			continue;
		}
		/* Seen by the handler before the PubAck can come. */
		pthread_mutex_lock(&nats_mu);
		wt.msgs[i] = m;
		wt.open++;
		pthread_mutex_unlock(&nats_mu);
		st = js_PublishMsgAsync(c->js, &m, &po);
		if (st == NATS_OK)
			continue;
		pthread_mutex_lock(&nats_mu);
		if (wt.msgs[i] != NULL) {
			wt.msgs[i] = NULL;
			wt.open--;
			batch_outcome_set(&o->r[i], st == NATS_MAX_PAYLOAD ?
			    JOB_PERMANENT : JOB_ERROR, "nats: publish: %s",
			    natsStatus_GetText(st));
		}
		pthread_mutex_unlock(&nats_mu);
		natsMsg_Destroy(m);	/* NULL when libnats took it */
	}

	/* Each PubAck, until the timeout or the connection's end. */
	deadline = time_mono_ms() + tmo + 1000;
	pthread_mutex_lock(&nats_mu);
	while (wt.open > 0 && !c->closed && time_mono_ms() < deadline) {
		clock_gettime(CLOCK_REALTIME, &ts);
		ts.tv_nsec += 100 * 1000000L;
		if (ts.tv_nsec >= 1000000000L) {
			ts.tv_sec++;
			ts.tv_nsec -= 1000000000L;
		}
		pthread_cond_timedwait(&nats_cv, &nats_mu, &ts);
	}
	waiting = NULL;
	for (i = 0; i < b->nentries; i++)
		if (wt.msgs[i] != NULL)
			batch_outcome_set(&o->r[i], JOB_ERROR, c->closed ?
			    "nats: connection lost before the PubAck" :
			    "nats: no PubAck in %llu ms",
			    (unsigned long long)tmo);
	pthread_mutex_unlock(&nats_mu);
	if (wt.open > 0) {
		/* Those still pending are ours to free; the connection is
		 * not to be trusted with the next batch. */
		if (js_PublishAsyncGetPendingList(&pend, c->js) == NATS_OK)
			natsMsgList_Destroy(&pend);
		sink_nats_drop(c);
	}

	for (i = 0; i < b->nentries; i++)
		qmsg_free(&q[i]);
	free(q);
	free(wt.msgs);
	return o->n > 0 ? o->r[0].result : JOB_OK;
}
