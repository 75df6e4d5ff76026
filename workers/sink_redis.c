/* SPDX-License-Identifier: ISC */
/*
 * sink_redis.c: the redis sink, batched and pipelined: a batch's commands
 * go in one write, and each entry settles on its own reply.
 *
 * Each entry's message is the contracts' v1 queue message (workers/
 * qmsg.h), byte for byte as the other queue sinks send it, the claim
 * reference in place of a body above inline_max_bytes:
 *
 *   channel: PUBLISH <channel> <message>
 *            ok when the reply counts at least one receiver; 0 (no
 *            subscriber) is a transient error, as the Elixir Ankusa's
 *            sink has it.
 *   stream:  XADD <stream> [MAXLEN = <maxlen>] * message <message>
 *            <name> <value> ...
 *            the fields after message are the queue sinks' attributes
 *            (qmsg.h: ankusa_id, ankusa_source_id, ankusa_tenant_id,
 *            ankusa_message_version, ankusa_idempotency_key,
 *            content_type, ankusa_dedupe_key and ankusa_replay_id when
 *            set, traceparent, tracestate when kept), so a consumer
 *            reads the hook id, tenant and source without parsing the
 *            message; ok only with the entry id the server answers.
 *
 * An error reply is transient (the retry policy decides), except
 * WRONGTYPE (the key holds no stream), which is permanent: no retry makes
 * it one.  The detail is "redis <CODE>: <the server's words>".
 *
 * The connection: one per deliver process, to the url (and tls) of the
 * last batch, kept across batches while the server keeps it.  Before
 * a kept one is used it is polled: a close or unsolicited bytes while it
 * was idle (a server restarted, a timeout) mean a new connection.  A
 * connection is opened by netconn_open (the egress guard checks each
 * address connected to; a redis:// url falls under the plain-http rule,
 * egress.allow_plain_http, a rediss:// url does not) and authenticated
 * with AUTH [user] password, then SELECT db when db is not 0, their
 * replies read before any command of a batch is sent (behind a refused
 * AUTH a command could run as the default user; behind a refused SELECT
 * in db 0).  A server that drops the connection fails the entries
 * whose replies had not come, transiently; those answered keep their
 * result.  A reused connection found closed before any reply is tried
 * once more, on a new one, while the batch has time left (the commands
 * may then reach the server twice: delivery is at least once).
 * publish_timeout_ms (the sink's timeout_ms) bounds each batch: connect,
 * TLS, AUTH, the write and every reply; what it leaves unanswered is
 * transient and the connection is closed (its replies would be out of
 * step).
 *
 * TLS (rediss://): Debian's hiredis 0.14 has no TLS of its own, and the
 * connection is ours, not hiredis's: OpenSSL runs TLS over the socket
 * netconn_open made, and hiredis is used only for its documented
 * protocol halves, redisFormatCommandArgv (a command's RESP bytes) and
 * the reply reader (redisReaderCreate, redisReaderFeed,
 * redisReaderGetReply), which work on bytes whatever carries them.  The
 * server's certificate is verified against tls.ca_file's CAs (the PEM
 * the master read), else the system's, and its name against
 * tls.server_name or the url's host (an IP address against the
 * certificate's IP SANs), TLS 1.2 at least; SNI carries the name.  A
 * client certificate goes when tls.client_cert_file is set.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <hiredis/hiredis.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509v3.h>

#include "clock.h"
#include "job.h"
#include "log.h"
#include "netconn.h"
#include "qmsg.h"
#include "redisurl.h"
#include "sink.h"

#define REDIS_READ	65536
#define REDIS_ARGS	(8 + 2 * QMSG_MAX_ATTRS)	/* XADD's words */

/* The process's connection. */
static struct {
	char		*key;	/* the url and tls it was made for */
	int		 fd;
	SSL_CTX		*ctx;
	SSL		*ssl;
	redisReader	*rd;
} rc = { NULL, -1, NULL, NULL, NULL };

static sink_abort_fn	 redis_watch;

static char	*redis_key(const struct sink_conf *);
static int	 redis_stale(void);
static void	 redis_close(void);
static int	 redis_open(const struct sink_conf *, const struct redis_url *,
		    uint64_t, char *, size_t);
static int	 redis_tls(const struct sink_tls *, const struct redis_url *,
		    uint64_t, char *, size_t);
static void	 redis_tls_err(const char *, char *, size_t);
static int	 redis_write(const char *, size_t, uint64_t, char *, size_t);
static int	 redis_reply(redisReply **, uint64_t, char *, size_t);
static void	 redis_cat(char **, size_t *, size_t *, int, const char **,
		    const size_t *);
static void	 redis_hello(const struct redis_url *, char **, size_t *,
		    size_t *, int *);
static void	 redis_error(const redisReply *, const char *, char *, size_t);
static void	 redis_command(const struct sink_conf *, const struct qmsg *,
		    const char *, char **, size_t *, size_t *);
static void	 redis_result(const struct sink_conf *, const redisReply *,
		    struct batch_result *);
static int	 redis_exchange(const struct sink_conf *,
		    const struct redis_url *, const char *, size_t,
		    const uint32_t *, uint32_t, struct batch_outcome *,
		    uint64_t, char *, size_t);

void
sink_redis_set_abort(sink_abort_fn fn)
{
	redis_watch = fn;
}

void
sink_redis_cleanup(void)
{
	redis_close();
}

int
sink_redis_run(const struct job *j, struct job_outcome *o)
{
	return sink_batch_of_one(j, o, sink_redis_batch);
}

/* What a connection is made for: the url and the tls material. */
static char *
redis_key(const struct sink_conf *sk)
{
	const struct sink_tls *t = &sk->u.redis.tls;
	char *k;

	if (asprintf(&k, "%s\n%s\n%s\n%s\n%s", sk->u.redis.url,
	    t->ca != NULL ? t->ca : "", t->server_name != NULL ?
	    t->server_name : "", t->client_cert != NULL ? t->client_cert : "",
	    t->client_key != NULL ? t->client_key : "") == -1)
		fatal("redis_key");
	return k;
}

static void
redis_close(void)
{
	if (rc.ssl != NULL)
		SSL_free(rc.ssl);
	if (rc.ctx != NULL)
		SSL_CTX_free(rc.ctx);
	if (rc.fd != -1)
		close(rc.fd);
	if (rc.rd != NULL)
		redisReaderFree(rc.rd);
	if (rc.key != NULL) {
		explicit_bzero(rc.key, strlen(rc.key));
		free(rc.key);
	}
	rc.ssl = NULL;
	rc.ctx = NULL;
	rc.fd = -1;
	rc.rd = NULL;
	rc.key = NULL;
}

/* 1 when the kept connection was closed, or sent what nothing asked
 * for, while it was idle; 0 when it is fit to use.  Over TLS the
 * records the server may send after the handshake (session tickets) are
 * read and leave it fit. */
static int
redis_stale(void)
{
	struct pollfd pfd;
	char c;
	int n;

	pfd.fd = rc.fd;
	pfd.events = POLLIN | POLLRDHUP;
	pfd.revents = 0;
	if (poll(&pfd, 1, 0) != 1)
		return 0;
	if (pfd.revents & (POLLHUP | POLLRDHUP | POLLERR))
		return 1;
	if (rc.ssl == NULL)
		return 1;
	ERR_clear_error();
	if ((n = SSL_peek(rc.ssl, &c, 1)) > 0)
		return 1;
	return SSL_get_error(rc.ssl, n) != SSL_ERROR_WANT_READ;
}

/* The TLS error queue's first entry, or what, into err. */
static void
redis_tls_err(const char *what, char *err, size_t errlen)
{
	unsigned long e = ERR_get_error();
	char buf[256];

	if (e != 0) {
		ERR_error_string_n(e, buf, sizeof(buf));
		snprintf(err, errlen, "redis TLS: %s: %s", what, buf);
	} else
		snprintf(err, errlen, "redis TLS: %s", what);
	ERR_clear_error();
}

/* TLS over rc.fd, the server verified.  0, or -1 with err. */
static int
redis_tls(const struct sink_tls *t, const struct redis_url *u,
    uint64_t deadline, char *err, size_t errlen)
{
	const char *name = t->server_name != NULL ? t->server_name : u->addr;
	unsigned char ip[16];
	X509_STORE *st;
	EVP_PKEY *k;
	X509 *x;
	BIO *b;
	long vr;
	int n, e, isip;

	ERR_clear_error();
	if ((rc.ctx = SSL_CTX_new(TLS_client_method())) == NULL) {
		redis_tls_err("SSL_CTX_new", err, errlen);
		return -1;
	}
	SSL_CTX_set_min_proto_version(rc.ctx, TLS1_2_VERSION);
	SSL_CTX_set_verify(rc.ctx, SSL_VERIFY_PEER, NULL);
	if (t->ca != NULL) {
		st = SSL_CTX_get_cert_store(rc.ctx);
		if ((b = BIO_new_mem_buf(t->ca, -1)) == NULL)
			fatalx("redis_tls: BIO_new_mem_buf");
		n = 0;
		while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
			if (X509_STORE_add_cert(st, x) == 1)
				n++;
			X509_free(x);
		}
		BIO_free(b);
		ERR_clear_error();
		if (n == 0) {
			snprintf(err, errlen, "redis TLS: tls.ca_file holds "
			    "no certificate");
			return -1;
		}
	} else if (SSL_CTX_set_default_verify_paths(rc.ctx) != 1) {
		redis_tls_err("the system's CAs", err, errlen);
		return -1;
	}
	if (t->client_cert != NULL && t->client_key != NULL) {
		if ((b = BIO_new_mem_buf(t->client_cert, -1)) == NULL)
			fatalx("redis_tls: BIO_new_mem_buf");
		x = PEM_read_bio_X509(b, NULL, NULL, NULL);
		BIO_free(b);
		if ((b = BIO_new_mem_buf(t->client_key, -1)) == NULL)
			fatalx("redis_tls: BIO_new_mem_buf");
		k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL);
		BIO_free(b);
		n = x != NULL && k != NULL &&
		    SSL_CTX_use_certificate(rc.ctx, x) == 1 &&
		    SSL_CTX_use_PrivateKey(rc.ctx, k) == 1;
		X509_free(x);
		EVP_PKEY_free(k);
		if (!n) {
			redis_tls_err("the client certificate", err, errlen);
			return -1;
		}
	}
	if ((rc.ssl = SSL_new(rc.ctx)) == NULL ||
	    SSL_set_fd(rc.ssl, rc.fd) != 1) {
		redis_tls_err("SSL_new", err, errlen);
		return -1;
	}
	isip = inet_pton(AF_INET, name, ip) == 1 ||
	    inet_pton(AF_INET6, name, ip) == 1;
	if (isip) {
		if (X509_VERIFY_PARAM_set1_ip_asc(SSL_get0_param(rc.ssl),
		    name) != 1) {
			redis_tls_err("the address to verify", err, errlen);
			return -1;
		}
	} else if (SSL_set_tlsext_host_name(rc.ssl, name) != 1 ||
	    SSL_set1_host(rc.ssl, name) != 1) {
		redis_tls_err("the name to verify", err, errlen);
		return -1;
	}
	for (;;) {
		ERR_clear_error();
		if ((n = SSL_connect(rc.ssl)) == 1)
			return 0;
		e = SSL_get_error(rc.ssl, n);
		if (e == SSL_ERROR_WANT_READ || e == SSL_ERROR_WANT_WRITE) {
			if (netconn_wait(rc.fd, e == SSL_ERROR_WANT_READ ?
			    POLLIN : POLLOUT, deadline, redis_watch, err,
			    errlen) == -1)
				return -1;
			continue;
		}
		if ((vr = SSL_get_verify_result(rc.ssl)) != X509_V_OK) {
			snprintf(err, errlen, "redis TLS: the server's "
			    "certificate: %s", X509_verify_cert_error_string(
			    vr));
			ERR_clear_error();
		} else
			redis_tls_err("handshake", err, errlen);
		return -1;
	}
}

/* A new connection for sk to u: TCP, then TLS with rediss://, then AUTH
 * and SELECT, their replies read before anything else is sent (a
 * command sent behind a refused AUTH could run as the default user, one
 * behind a refused SELECT in db 0).  0, or -1 with err, or -2 with err
 * the egress guard's reason. */
static int
redis_open(const struct sink_conf *sk, const struct redis_url *u,
    uint64_t deadline, char *err, size_t errlen)
{
	redisReply *r;
	char *hello = NULL;
	size_t hlen = 0, hcap = 0;
	int fd, n, k, failed = 0;	/* 1: AUTH or SELECT failed */

	redis_close();
	if ((fd = netconn_open(u->addr, u->portstr, !u->tls, deadline,
	    redis_watch, err, errlen)) < 0)
		return fd;
	rc.fd = fd;
	if (u->tls && redis_tls(&sk->u.redis.tls, u, deadline, err,
	    errlen) == -1) {
		redis_close();
		return -1;
	}
	if ((rc.rd = redisReaderCreate()) == NULL)
		fatal("redisReaderCreate");
	redis_hello(u, &hello, &hlen, &hcap, &n);
	if (n > 0 && redis_write(hello, hlen, deadline, err, errlen) == -1)
		failed = 1;
	for (k = 0; !failed && k < n; k++) {
		if (redis_reply(&r, deadline, err, errlen) == -1) {
			failed = 1;
			break;
		}
		if (r->type != REDIS_REPLY_STATUS) {
			redis_error(r, k == 0 && u->password != NULL ? "AUTH" :
			    "SELECT", err, errlen);
			failed = 1;
		}
		freeReplyObject(r);
	}
	if (hello != NULL)
		explicit_bzero(hello, hlen);
	free(hello);
	if (failed) {
		redis_close();
		return -1;
	}
	rc.key = redis_key(sk);
	return 0;
}

/* Every byte of buf; 0, or -1 with err. */
static int
redis_write(const char *buf, size_t len, uint64_t deadline, char *err,
    size_t errlen)
{
	ssize_t w;
	int n, e;

	while (len > 0) {
		if (rc.ssl != NULL) {
			ERR_clear_error();
			n = SSL_write(rc.ssl, buf, len > INT32_MAX ? INT32_MAX :
			    (int)len);
			if (n > 0) {
				buf += n;
				len -= n;
				continue;
			}
			e = SSL_get_error(rc.ssl, n);
			if (e != SSL_ERROR_WANT_READ &&
			    e != SSL_ERROR_WANT_WRITE) {
				redis_tls_err("write", err, errlen);
				return -1;
			}
			if (netconn_wait(rc.fd, e == SSL_ERROR_WANT_READ ?
			    POLLIN : POLLOUT, deadline, redis_watch, err,
			    errlen) == -1)
				return -1;
			continue;
		}
		if ((w = send(rc.fd, buf, len, MSG_NOSIGNAL)) > 0) {
			buf += w;
			len -= w;
			continue;
		}
		if (w == -1 && errno == EINTR)
			continue;
		if (w == -1 && errno != EAGAIN) {
			snprintf(err, errlen, "redis: send: %s",
			    strerror(errno));
			return -1;
		}
		if (netconn_wait(rc.fd, POLLOUT, deadline, redis_watch, err,
		    errlen) == -1)
			return -1;
	}
	return 0;
}

/* The next reply; 0 with *r (the caller frees it), or -1 with err: the
 * connection closed or failed, the time ran out, or what came is not
 * RESP. */
static int
redis_reply(redisReply **r, uint64_t deadline, char *err, size_t errlen)
{
	char buf[REDIS_READ];
	void *v;
	ssize_t n;
	int e;

	for (;;) {
		v = NULL;
		if (redisReaderGetReply(rc.rd, &v) != REDIS_OK) {
			snprintf(err, errlen, "redis: protocol error: %s",
			    rc.rd->errstr);
			return -1;
		}
		if (v != NULL) {
			*r = v;
			return 0;
		}
		if (rc.ssl != NULL) {
			ERR_clear_error();
			if ((n = SSL_read(rc.ssl, buf, sizeof(buf))) <= 0) {
				e = SSL_get_error(rc.ssl, (int)n);
				if (e == SSL_ERROR_ZERO_RETURN) {
					snprintf(err, errlen, "redis: the "
					    "server closed the connection");
					return -1;
				}
				if (e != SSL_ERROR_WANT_READ &&
				    e != SSL_ERROR_WANT_WRITE) {
					redis_tls_err("read", err, errlen);
					return -1;
				}
				if (netconn_wait(rc.fd, e ==
				    SSL_ERROR_WANT_READ ? POLLIN : POLLOUT,
				    deadline, redis_watch, err, errlen) == -1)
					return -1;
				continue;
			}
		} else if ((n = recv(rc.fd, buf, sizeof(buf), 0)) <= 0) {
			if (n == 0) {
				snprintf(err, errlen, "redis: the server "
				    "closed the connection");
				return -1;
			}
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN) {
				snprintf(err, errlen, "redis: recv: %s",
				    strerror(errno));
				return -1;
			}
			if (netconn_wait(rc.fd, POLLIN, deadline, redis_watch,
			    err, errlen) == -1)
				return -1;
			continue;
		}
		if (redisReaderFeed(rc.rd, buf, (size_t)n) != REDIS_OK) {
			snprintf(err, errlen, "redis: protocol error: %s",
			    rc.rd->errstr);
			return -1;
		}
	}
}

/* One command's RESP bytes appended to *buf. */
static void
redis_cat(char **buf, size_t *len, size_t *cap, int argc, const char **argv,
    const size_t *argvlen)
{
	char *cmd, *n;
	int l;

	if ((l = redisFormatCommandArgv(&cmd, argc, argv, argvlen)) < 0)
		fatalx("redisFormatCommandArgv");
	if (*len + l > *cap) {
		*cap = *cap * 2 > *len + l ? *cap * 2 : *len + l;
		if ((n = realloc(*buf, *cap)) == NULL)
			fatal("redis_cat");
		*buf = n;
	}
	memcpy(*buf + *len, cmd, l);
	*len += l;
	redisFreeCommand(cmd);
}

/* A new connection's AUTH and SELECT; *n: how many replies they will
 * have. */
static void
redis_hello(const struct redis_url *u, char **buf, size_t *len, size_t *cap,
    int *n)
{
	const char *argv[3];
	size_t argl[3];
	char db[16];
	int argc = 0;

	*n = 0;
	if (u->password != NULL) {
		argv[argc] = "AUTH";
		argl[argc++] = 4;
		if (u->user != NULL) {
			argv[argc] = u->user;
			argl[argc] = strlen(u->user);
			argc++;
		}
		argv[argc] = u->password;
		argl[argc] = strlen(u->password);
		argc++;
		redis_cat(buf, len, cap, argc, argv, argl);
		(*n)++;
	}
	if (u->db != 0) {
		snprintf(db, sizeof(db), "%" PRIu32, u->db);
		argv[0] = "SELECT";
		argl[0] = 6;
		argv[1] = db;
		argl[1] = strlen(db);
		redis_cat(buf, len, cap, 2, argv, argl);
		(*n)++;
	}
}

/* "redis <CODE>: <text>" of an error reply, or what when it is not one. */
static void
redis_error(const redisReply *r, const char *what, char *err, size_t errlen)
{
	size_t code;

	if (r->type != REDIS_REPLY_ERROR || r->str == NULL) {
		snprintf(err, errlen, "redis: %s: an unexpected reply (type "
		    "%d)", what, r->type);
		return;
	}
	code = strcspn(r->str, " ");
	snprintf(err, errlen, "redis %.*s: %s: %s", (int)code, r->str, what,
	    r->str[code] != '\0' ? r->str + code + 1 : "");
}

/* One entry's command, appended to *buf. */
static void
redis_command(const struct sink_conf *sk, const struct qmsg *q,
    const char *maxlen, char **buf, size_t *len, size_t *cap)
{
	const char *argv[REDIS_ARGS];
	size_t argl[REDIS_ARGS];
	int argc = 0, a;

	if (sk->u.redis.stream == NULL) {
		argv[argc] = "PUBLISH";
		argl[argc++] = 7;
		argv[argc] = sk->u.redis.channel;
		argl[argc] = strlen(argv[argc]);
		argc++;
		argv[argc] = q->json;
		argl[argc++] = q->jsonlen;
		redis_cat(buf, len, cap, argc, argv, argl);
		return;
	}
	argv[argc] = "XADD";
	argl[argc++] = 4;
	argv[argc] = sk->u.redis.stream;
	argl[argc] = strlen(argv[argc]);
	argc++;
	if (sk->u.redis.maxlen != 0) {
		argv[argc] = "MAXLEN";
		argl[argc++] = 6;
		argv[argc] = "=";
		argl[argc++] = 1;
		argv[argc] = maxlen;
		argl[argc] = strlen(maxlen);
		argc++;
	}
	argv[argc] = "*";
	argl[argc++] = 1;
	argv[argc] = "message";
	argl[argc++] = 7;
	argv[argc] = q->json;
	argl[argc++] = q->jsonlen;
	for (a = 0; a < q->nattrs; a++) {
		argv[argc] = q->attrs[a].name;
		argl[argc] = strlen(argv[argc]);
		argc++;
		argv[argc] = q->attrs[a].value;
		argl[argc] = strlen(argv[argc]);
		argc++;
	}
	redis_cat(buf, len, cap, argc, argv, argl);
}

/* An entry's reply into its result. */
static void
redis_result(const struct sink_conf *sk, const redisReply *r,
    struct batch_result *res)
{
	char err[JOB_DETAIL_MAX];
	int stream = sk->u.redis.stream != NULL;

	if (stream && r->type == REDIS_REPLY_STRING)
		batch_outcome_set(res, JOB_OK, "xadd %s", r->str);
	else if (!stream && r->type == REDIS_REPLY_INTEGER && r->integer > 0)
		batch_outcome_set(res, JOB_OK, "publish: %lld receivers",
		    r->integer);
	else if (!stream && r->type == REDIS_REPLY_INTEGER)
		batch_outcome_set(res, JOB_ERROR, "redis: no subscriber on "
		    "channel %s", sk->u.redis.channel);
	else {
		redis_error(r, stream ? "XADD" : "PUBLISH", err, sizeof(err));
		batch_outcome_set(res, r->type == REDIS_REPLY_ERROR &&
		    strncmp(r->str, "WRONGTYPE", 9) == 0 ? JOB_PERMANENT :
		    JOB_ERROR, "%s", err);
	}
}

/*
 * Send the commands (cmds, one per entry of sent) on the kept connection
 * or a new one, and read a reply each.  The number of replies read (each
 * entry's result set), or -1 when a new connection could not be made
 * (-2: the egress guard refused it), with err saying why the rest got
 * none.
 */
static int
redis_exchange(const struct sink_conf *sk, const struct redis_url *u,
    const char *cmds, size_t cmdslen, const uint32_t *sent, uint32_t nsent,
    struct batch_outcome *o, uint64_t deadline, char *err, size_t errlen)
{
	redisReply *r;
	uint32_t got = 0;
	int reused, tries, op;

	for (tries = 0; tries < 2; tries++) {
		reused = rc.fd != -1;
		if (!reused && (op = redis_open(sk, u, deadline, err,
		    errlen)) < 0)
			return op;
		if (redis_write(cmds, cmdslen, deadline, err, errlen) == -1) {
			redis_close();
			if (reused)
				continue;
			break;
		}
		for (got = 0; got < nsent; got++) {
			if (redis_reply(&r, deadline, err, errlen) == -1)
				break;
			redis_result(sk, r, &o->r[sent[got]]);
			freeReplyObject(r);
		}
		if (got == nsent)
			break;
		redis_close();
		/* A kept connection found closed before any reply: once
		 * more, on a new one; not one that ran out of time, whose
		 * server may yet run what it was sent. */
		if (!reused || got > 0 || netconn_left_ms(deadline) == 0)
			break;
	}
	return (int)got;
}

int
sink_redis_batch(const struct batch *b, struct batch_outcome *o)
{
	const struct sink_conf *sk = &b->sink;
	struct redis_url u;
	struct qmsg *q;
	uint32_t *sent, nsent = 0, i;
	char err[JOB_DETAIL_MAX], maxlen[24], *cmds = NULL, *key;
	size_t len = 0, cap = 0;
	uint64_t deadline;
	int got;

	if (redis_url_parse(sk->u.redis.url, &u, err, sizeof(err)) == -1) {
		/* The master checked it: a frame that says otherwise is
		 * a config this build cannot read. */
		for (i = 0; i < b->nentries; i++)
			batch_outcome_set(&o->r[i], JOB_PERMANENT,
			    "redis: url: %s", err);
		return JOB_PERMANENT;
	}
	deadline = time_mono_ms() + sk->timeout_ms;
	snprintf(maxlen, sizeof(maxlen), "%" PRIu64, sk->u.redis.maxlen);
	if ((q = calloc(b->nentries, sizeof(*q))) == NULL ||
	    (sent = calloc(b->nentries, sizeof(*sent))) == NULL)
		fatal("sink_redis_batch");
	for (i = 0; i < b->nentries; i++) {
		if (qmsg_build(&q[i], &b->entries[i], sk->inline_max_bytes,
		    err, sizeof(err)) == -1) {
			batch_outcome_set(&o->r[i], JOB_ERROR, "redis: %s",
			    err);
			continue;
		}
		redis_command(sk, &q[i], maxlen, &cmds, &len, &cap);
		sent[nsent++] = i;
	}

	/* The kept connection, if it is for this url and tls and fit. */
	key = redis_key(sk);
	if (rc.fd != -1 && (strcmp(rc.key, key) != 0 || redis_stale()))
		redis_close();
	explicit_bzero(key, strlen(key));
	free(key);
	if (nsent > 0) {
		got = redis_exchange(sk, &u, cmds, len, sent, nsent, o,
		    deadline, err, sizeof(err));
		/* What had no reply: refused by the guard for good, else
		 * transient. */
		for (i = got < 0 ? 0 : (uint32_t)got; i < nsent; i++)
			batch_outcome_set(&o->r[sent[i]], got == -2 ?
			    JOB_PERMANENT : JOB_ERROR, "%s", err);
	}
	for (i = 0; i < b->nentries; i++)
		if (q[i].json != NULL)
			qmsg_free(&q[i]);
	free(q);
	free(sent);
	free(cmds);
	redis_url_free(&u);
	return o->n > 0 ? o->r[0].result : JOB_ERROR;
}
