/* SPDX-License-Identifier: ISC */
/*
 * probe-departures.c: the measurements behind two departures from the
 * design (docs/DEPARTURES 27 and 28, docs/PERFORMANCE).  Not
 * built by make; from a built tree:
 *
 *   cc -O2 -Icommon -Iworkers -Ibuild -o build/probe-departures \
 *       scripts/probe-departures.c build/libedge.a build/libdeliver.a \
 *       build/libcommon.a -levent -ljansson -lyaml -lcrypto -lcurl
 *   build/probe-departures http [-g] [-c conns] [-d secs] [-r rounds]
 *       [-p evhttp|httpreq]
 *   build/probe-departures json [-b body bytes] [-n messages] [-r rounds]
 *
 * Both alternate what they compare within each round (7 by default) and
 * print each round and the medians of the per-round ratios, the only
 * figures a shared machine gives that mean something.
 *
 * http: the edge's request parser (workers/httpreq.c) against libevent's
 * evhttp, each serving the same requests on loopback.  Each round runs
 * both servers, one after the other, each a child process with one event
 * loop on a free port, under `wrk -t1 -cCONNS -dSECS` (4 s) posting a 1
 * KiB JSON body (-g: with the eleven further headers a GitHub delivery
 * carries).  Both servers do the same work per request, what the edge
 * does besides its frames to the master: route the target by its prefix,
 * check every header's bytes (contract check 4), copy the body out,
 * answer 201 with the edge's JSON.  evhttp reads the head and the body
 * before calling back; httpreq is fed the bytes as the edge feeds them
 * (evbuffer_peek, httpreq_feed).  A server's CPU (user + system, wait4)
 * over the requests it answered is its cost per request; wrk's in the
 * same run is the reference.  A run where wrk saw an error or a status
 * other than 201 stops the probe.  -p runs one server alone, once (to
 * profile it: perf record -g build/probe-departures http -p ...).  Needs
 * wrk.
 *
 * json: the queue message and the SQS request body written by hand
 * (workers/qmsg.c, workers/sink_sqs.c) against the same bytes built with
 * jansson.  The message is a GitHub delivery's: eight forwarded headers,
 * a dedupe key, a JSON body of -b bytes (1024).  jansson builds the same
 * object in the same key order and dumps it with JSON_COMPACT |
 * JSON_ENSURE_ASCII; the probe first checks that both give the same
 * bytes.  Both compute the digest and the base64 the same way, so what
 * differs is the JSON.  The SQS body is a SendMessageBatch of 10 such
 * messages, built as sink_sqs_send builds it (with its entry writer,
 * sink_sqs_entry) and with jansson.  Each round times n (20,000)
 * messages and n / 10 bodies of each, in CPU time of the process.
 * -DPROBE_DUMP_FLAGS=JSON_COMPACT drops JSON_ENSURE_ASCII, which these
 * ASCII messages do not need (the same times).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/queue.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <err.h>
#include <signal.h>
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
#include <event2/listener.h>
#include <jansson.h>
#include <openssl/evp.h>

#include "httpreq.h"
#include "job.h"
#include "msg.h"
#include "qmsg.h"
#include "sha256.h"
#include "sink.h"

#define PROBE_MAX	64	/* rounds */

static int	probe_cmp(const void *, const void *);
static double	probe_median(double *, int);

/* --- http --- */

#define PROBE_PREFIX	"/webhooks/"
#define PROBE_ID	"0190d5fe-3a4b-7c6d-8e9f-0a1b2c3d4e5f"

static const char probe_lua[] =
    "local pad = string.rep('x', 1024 - string.len('{\"pad\":\"\"}'))\n"
    "wrk.method = 'POST'\n"
    "wrk.body = '{\"pad\":\"' .. pad .. '\"}'\n"
    "wrk.headers['Content-Type'] = 'application/json'\n"
    "local threads = {}\n"
    "function setup(t) table.insert(threads, t) end\n"
    "function init(args) non201 = 0 end\n"
    "function response(status, headers, body)\n"
    "\tif status ~= 201 then non201 = non201 + 1 end\n"
    "end\n"
    "function done(summary, latency, requests)\n"
    "\tlocal non = 0\n"
    "\tfor _, t in ipairs(threads) do non = non + t:get('non201') end\n"
    "\tlocal e = summary.errors\n"
    "\tio.write(string.format('probe_bad %d\\n', non + e.connect +\n"
    "\t    e.read + e.write + e.timeout + e.status))\n"
    "end\n";
static const char probe_lua_gh[] =
    "wrk.headers['User-Agent'] = 'GitHub-Hookshot/2f6a1e4'\n"
    "wrk.headers['Accept'] = '*/*'\n"
    "wrk.headers['X-GitHub-Delivery'] = "
    "'72d3162e-cc78-11e3-81ab-4c9367dc0958'\n"
    "wrk.headers['X-GitHub-Event'] = 'push'\n"
    "wrk.headers['X-GitHub-Hook-ID'] = '292430182'\n"
    "wrk.headers['X-GitHub-Hook-Installation-Target-ID'] = '79929171'\n"
    "wrk.headers['X-GitHub-Hook-Installation-Target-Type'] = "
    "'repository'\n"
    "wrk.headers['X-Hub-Signature'] = "
    "'sha1=7d38cdd689735b008b3c702edd92eea23791c5f6'\n"
    "wrk.headers['X-Hub-Signature-256'] = 'sha256=d57c68ca6f92289e6987922f"
    "f26938930f6e66a2d161ef06abdf1859230aa23c'\n"
    "wrk.headers['Accept-Encoding'] = 'gzip'\n"
    "wrk.headers['Traceparent'] = "
    "'00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01'\n";

static unsigned long	 nreq;
static struct event_base *base;

/* The edge's header check, over evhttp's parsed headers. */
static int
probe_bad_headers(struct evkeyvalq *h)
{
	struct evkeyval *kv;
	const unsigned char *s;

	TAILQ_FOREACH(kv, h, next) {
		for (s = (const unsigned char *)kv->key; *s != '\0'; s++)
			if (*s < 0x21 || *s > 0x7e)
				return 1;
		for (s = (const unsigned char *)kv->value; *s != '\0'; s++)
			if ((*s < 0x20 || *s > 0x7e) && *s != '\t')
				return 1;
	}
	return 0;
}

static void
probe_evhttp_cb(struct evhttp_request *req, void *arg)
{
	struct evbuffer *in = evhttp_request_get_input_buffer(req);
	struct evbuffer *out = evhttp_request_get_output_buffer(req);
	struct httpreq_answer a;
	size_t len = evbuffer_get_length(in);
	char *body;

	if (evhttp_request_get_command(req) != EVHTTP_REQ_POST ||
	    strncmp(evhttp_request_get_uri(req), PROBE_PREFIX,
	    strlen(PROBE_PREFIX)) != 0 ||
	    probe_bad_headers(evhttp_request_get_input_headers(req))) {
		evhttp_send_error(req, 400, NULL);
		return;
	}
	if ((body = malloc(len + 1)) == NULL)
		err(1, "malloc");
	evbuffer_remove(in, body, len);
	httpreq_answer_result(&a, HOOK_ACCEPTED, PROBE_ID, 0);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	evbuffer_add(out, a.body, strlen(a.body));
	evhttp_send_reply(req, a.status, "Created", NULL);
	httpreq_answer_free(&a);
	free(body);
	nreq++;
}

/* One connection of the httpreq server: a head, then its body. */
struct probe_conn {
	struct bufferevent	*bev;
	struct httpreq		 req;
	int			 inbody;
	uint64_t		 remaining;
	unsigned char		*body;
	size_t			 bodylen;
};

static void
probe_conn_free(struct probe_conn *c)
{
	bufferevent_free(c->bev);
	httpreq_free(&c->req);
	free(c->body);
	free(c);
}

static void
probe_answer(struct probe_conn *c)
{
	struct httpreq_answer a;
	char *out;
	size_t len;

	httpreq_answer_result(&a, HOOK_ACCEPTED, PROBE_ID, 0);
	out = httpreq_answer_format(&a, c->req.keep_alive, 0, &len);
	bufferevent_write(c->bev, out, len);
	free(out);
	httpreq_answer_free(&a);
	free(c->body);
	c->body = NULL;
	httpreq_reset(&c->req);
	c->inbody = 0;
	nreq++;
}

static void
probe_read_cb(struct bufferevent *bev, void *arg)
{
	struct probe_conn *c = arg;
	struct evbuffer *in = bufferevent_get_input(bev);
	struct evbuffer_iovec v;
	enum httpreq_status st;
	size_t used, n;

	while (evbuffer_get_length(in) > 0) {
		if (!c->inbody) {
			if (evbuffer_peek(in, -1, NULL, &v, 1) < 1)
				break;
			st = httpreq_feed(&c->req, v.iov_base, v.iov_len,
			    &used);
			evbuffer_drain(in, used);
			if (st == HTTPREQ_MORE)
				continue;
			if (st == HTTPREQ_ERROR || c->req.chunked ||
			    strcmp(c->req.method, "POST") != 0 ||
			    strncmp(c->req.target, PROBE_PREFIX,
			    strlen(PROBE_PREFIX)) != 0 ||
			    httpreq_check_headers(&c->req) != -1) {
				probe_conn_free(c);
				return;
			}
			c->inbody = 1;
			c->remaining = c->req.content_length;
			if ((c->body = malloc(c->remaining + 1)) == NULL)
				err(1, "malloc");
			c->bodylen = 0;
		}
		while (c->remaining > 0 && evbuffer_get_length(in) > 0) {
			n = evbuffer_remove(in, c->body + c->bodylen,
			    c->remaining);
			c->bodylen += n;
			c->remaining -= n;
		}
		if (c->remaining > 0)
			break;
		probe_answer(c);
	}
}

static void
probe_event_cb(struct bufferevent *bev, short what, void *arg)
{
	if (what & (BEV_EVENT_EOF | BEV_EVENT_ERROR))
		probe_conn_free(arg);
}

static void
probe_accept_cb(struct evconnlistener *l, evutil_socket_t fd,
    struct sockaddr *sa, int salen, void *arg)
{
	struct probe_conn *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		err(1, "calloc");
	c->bev = bufferevent_socket_new(base, fd, BEV_OPT_CLOSE_ON_FREE);
	httpreq_init(&c->req);
	bufferevent_setcb(c->bev, probe_read_cb, NULL, probe_event_cb, c);
	bufferevent_enable(c->bev, EV_READ | EV_WRITE);
}

static void
probe_stop_cb(evutil_socket_t sig, short what, void *arg)
{
	event_base_loopbreak(base);
}

/* The server child: serves on fd until SIGTERM, then writes its count. */
static void
probe_serve(int evh, int fd, int report)
{
	struct evhttp *http = NULL;
	struct evconnlistener *l = NULL;
	struct event *ev;

	if ((base = event_base_new()) == NULL)
		errx(1, "event_base_new");
	ev = evsignal_new(base, SIGTERM, probe_stop_cb, NULL);
	evsignal_add(ev, NULL);
	if (evh) {
		if ((http = evhttp_new(base)) == NULL)
			errx(1, "evhttp_new");
		evhttp_set_max_headers_size(http, HTTPREQ_HEAD_MAX);
		evhttp_set_max_body_size(http, 8000000);
		evhttp_set_gencb(http, probe_evhttp_cb, NULL);
		if (evhttp_accept_socket(http, fd) == -1)
			errx(1, "evhttp_accept_socket");
	} else if ((l = evconnlistener_new(base, probe_accept_cb, NULL,
	    LEV_OPT_CLOSE_ON_FREE, -1, fd)) == NULL)
		errx(1, "evconnlistener_new");
	event_base_dispatch(base);
	if (write(report, &nreq, sizeof(nreq)) != sizeof(nreq))
		err(1, "write");
	_exit(0);
}

static double
probe_rusage_cpu(const struct rusage *ru)
{
	return ru->ru_utime.tv_sec + ru->ru_utime.tv_usec / 1e6 +
	    ru->ru_stime.tv_sec + ru->ru_stime.tv_usec / 1e6;
}

/* One run: the server (evh or httpreq) under wrk; us per request of the
 * server and of wrk, and requests per second. */
static void
probe_run(int evh, const char *lua, int secs, int conns, double *srv,
    double *ref, double *rate)
{
	struct sockaddr_in sin;
	socklen_t slen = sizeof(sin);
	struct rusage ru;
	char url[64], dur[16], cs[16];
	unsigned long n;
	pid_t spid, wpid;
	FILE *wout;
	long bad = -1;
	int fd, p[2], w[2], one = 1, status;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
		err(1, "socket");
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 1024) == -1 ||
	    getsockname(fd, (struct sockaddr *)&sin, &slen) == -1)
		err(1, "listen");
	evutil_make_socket_nonblocking(fd);
	if (pipe(p) == -1)
		err(1, "pipe");
	if ((spid = fork()) == -1)
		err(1, "fork");
	if (spid == 0) {
		close(p[0]);
		probe_serve(evh, fd, p[1]);
	}
	close(p[1]);
	close(fd);
	snprintf(url, sizeof(url), "http://127.0.0.1:%d%sbench",
	    ntohs(sin.sin_port), PROBE_PREFIX);
	snprintf(dur, sizeof(dur), "%ds", secs);
	snprintf(cs, sizeof(cs), "%d", conns);
	if (pipe(w) == -1 || (wpid = fork()) == -1)
		err(1, "fork");
	if (wpid == 0) {
		close(p[0]);
		close(w[0]);
		dup2(w[1], 1);
		execlp("wrk", "wrk", "-t1", "-c", cs, "-d", dur, "-s", lua,
		    url, (char *)NULL);
		err(127, "wrk");
	}
	close(w[1]);
	if ((wout = fdopen(w[0], "r")) == NULL)
		err(1, "fdopen");
	while (fgets(url, sizeof(url), wout) != NULL)
		if (strncmp(url, "probe_bad ", 10) == 0)
			bad = atol(url + 10);
	fclose(wout);
	if (wait4(wpid, &status, 0, &ru) == -1 || !WIFEXITED(status) ||
	    WEXITSTATUS(status) != 0)
		errx(1, "wrk failed");
	*ref = probe_rusage_cpu(&ru);
	kill(spid, SIGTERM);
	if (read(p[0], &n, sizeof(n)) != sizeof(n))
		errx(1, "no count from the server");
	close(p[0]);
	if (wait4(spid, &status, 0, &ru) == -1)
		err(1, "wait4");
	if (n == 0 || bad != 0)
		errx(1, "%s: %lu answered, %ld not 201 or errors",
		    evh ? "evhttp" : "httpreq", n, bad);
	*srv = probe_rusage_cpu(&ru) * 1e6 / n;
	*ref = *ref * 1e6 / n;
	*rate = (double)n / secs;
}

static int
probe_http(int argc, char *argv[])
{
	double srv[2], ref[2], rate[2];
	double rcpu[PROBE_MAX], rrel[PROBE_MAX], rrate[PROBE_MAX];
	double hq[PROBE_MAX], eh[PROBE_MAX];
	char lua[] = "/tmp/probe-departures.XXXXXX";
	int ch, i, k, m, rounds = 7, secs = 4, conns = 32, gh = 0;
	int only = -1;
	FILE *f;

	while ((ch = getopt(argc, argv, "c:d:gp:r:")) != -1)
		switch (ch) {
		case 'c':
			conns = atoi(optarg);
			break;
		case 'd':
			secs = atoi(optarg);
			break;
		case 'g':
			gh = 1;
			break;
		case 'p':
			only = strcmp(optarg, "evhttp") == 0;
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: probe-departures http [-g] "
			    "[-c conns] [-d secs] [-r rounds] "
			    "[-p evhttp|httpreq]\n");
			return 2;
		}
	if (rounds < 1 || rounds > PROBE_MAX || secs < 1 || conns < 1)
		errx(2, "bad arguments");
	if ((i = mkstemp(lua)) == -1 || (f = fdopen(i, "w")) == NULL)
		err(1, "mkstemp");
	fputs(probe_lua, f);
	if (gh)
		fputs(probe_lua_gh, f);
	fclose(f);
	signal(SIGPIPE, SIG_IGN);

	printf("round  server   us/req  wrk us/req  srv/wrk   req/s\n");
	if (only != -1) {
		probe_run(only, lua, secs, conns, &srv[0], &ref[0], &rate[0]);
		printf("%5d  %-7s  %6.2f  %10.2f  %7.3f  %6.0f\n", 1,
		    only ? "evhttp" : "httpreq", srv[0], ref[0],
		    srv[0] / ref[0], rate[0]);
		unlink(lua);
		return 0;
	}
	for (i = 0; i < rounds; i++) {
		for (k = 0; k < 2; k++) {
			m = (i + k) % 2;	/* 0 httpreq, 1 evhttp */
			probe_run(m, lua, secs, conns, &srv[m], &ref[m],
			    &rate[m]);
			printf("%5d  %-7s  %6.2f  %10.2f  %7.3f  %6.0f\n",
			    i + 1, m ? "evhttp" : "httpreq", srv[m], ref[m],
			    srv[m] / ref[m], rate[m]);
			fflush(stdout);
		}
		hq[i] = srv[0];
		eh[i] = srv[1];
		rcpu[i] = srv[1] / srv[0];
		rrel[i] = (srv[1] / ref[1]) / (srv[0] / ref[0]);
		rrate[i] = rate[0] / rate[1];
	}
	unlink(lua);
	printf("medians over %d rounds: httpreq %.2f us/req, evhttp %.2f; "
	    "evhttp/httpreq CPU per request %.2f (%.2f against wrk's), "
	    "httpreq/evhttp req/s %.2f\n", rounds, probe_median(hq, rounds),
	    probe_median(eh, rounds), probe_median(rcpu, rounds),
	    probe_median(rrel, rounds), probe_median(rrate, rounds));
	return 0;
}

/* --- json --- */

#ifndef PROBE_DUMP_FLAGS
#define PROBE_DUMP_FLAGS	(JSON_COMPACT | JSON_ENSURE_ASCII)
#endif
#define PROBE_BATCH	10
#define PROBE_QUEUE "https://sqs.eu-west-1.amazonaws.com/123456789012/hooks"

static struct header_kv probe_hdrs[] = {
	{ "user-agent", "GitHub-Hookshot/2f6a1e4" },
	{ "accept", "*/*" },
	{ "x-github-delivery", "72d3162e-cc78-11e3-81ab-4c9367dc0958" },
	{ "x-github-event", "push" },
	{ "x-github-hook-id", "292430182" },
	{ "x-github-hook-installation-target-id", "79929171" },
	{ "x-github-hook-installation-target-type", "repository" },
	{ "x-hub-signature-256", "sha256=d57c68ca6f92289e6987922ff26938930f6e"
	  "66a2d161ef06abdf1859230aa23c" },
};

static const char probe_hex[] = "0123456789abcdef";

static double
probe_cpu_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* The message of e with jansson: the object qmsg.h describes. */
static char *
probe_jansson_msg(const struct batch_entry *e, size_t *lenp, char **idemp)
{
	unsigned char md[SHA256_LEN];
	char hex[65], *b64, *idem, *out, *l;
	json_t *o, *h, *v;
	size_t i, n;
	int k, j;

	if (asprintf(&idem, "%s:%s:%s", e->tenant, e->source,
	    e->dedupe_key) == -1)
		err(1, "asprintf");
	sha256(e->body, e->bodylen, md);
	for (i = 0; i < SHA256_LEN; i++) {
		hex[2 * i] = probe_hex[md[i] >> 4];
		hex[2 * i + 1] = probe_hex[md[i] & 0xf];
	}
	hex[64] = '\0';
	if ((b64 = malloc((e->bodylen + 2) / 3 * 4 + 1)) == NULL)
		err(1, "malloc");
	EVP_EncodeBlock((unsigned char *)b64, e->body, e->bodylen);

	o = json_object();
	json_object_set_new(o, "v", json_integer(1));
	json_object_set_new(o, "id", json_string(e->hook_id));
	json_object_set_new(o, "source_id", json_string(e->source));
	json_object_set_new(o, "tenant_id", json_string(e->tenant));
	json_object_set_new(o, "received_at",
	    json_integer((json_int_t)e->received_at));
	json_object_set_new(o, "content_type", json_string(e->content_type));
	json_object_set_new(o, "size", json_integer((json_int_t)e->bodylen));
	json_object_set_new(o, "sha256", json_string(hex));
	json_object_set_new(o, "dedupe_key", json_string(e->dedupe_key));
	json_object_set_new(o, "replay_id", json_null());
	json_object_set_new(o, "idempotency_key", json_string(idem));
	h = json_object();
	for (k = 0; k < e->nheaders; k++) {
		n = strlen(e->headers[k].name);
		if ((l = malloc(n + 1)) == NULL)
			err(1, "malloc");
		for (i = 0; i <= n; i++)
			l[i] = e->headers[k].name[i] >= 'A' &&
			    e->headers[k].name[i] <= 'Z' ?
			    e->headers[k].name[i] + 32 : e->headers[k].name[i];
		if ((v = json_object_get(h, l)) != NULL) {
			free(l);
			continue;
		}
		v = json_string(e->headers[k].value);
		for (j = k + 1; j < e->nheaders; j++)
			if (strcasecmp(e->headers[j].name,
			    e->headers[k].name) == 0) {
				char *s;

				if (asprintf(&s, "%s, %s", json_string_value(v),
				    e->headers[j].value) == -1)
					err(1, "asprintf");
				json_string_set(v, s);
				free(s);
			}
		json_object_set_new(h, l, v);
		free(l);
	}
	json_object_set_new(o, "headers", h);
	json_object_set_new(o, "body_base64", json_string(b64));
	free(b64);
	out = json_dumps(o, PROBE_DUMP_FLAGS);
	json_decref(o);
	if (out == NULL)
		errx(1, "json_dumps");
	*lenp = strlen(out);
	*idemp = idem;
	return out;
}

/* sink_sqs_send's body of n messages (standard queue), built with its
 * own entry writer (sink_sqs_entry). */
static char *
probe_hand_sqs(const struct qmsg *q, int n, size_t *lenp)
{
	char *body = NULL;
	size_t len = 0, cap = 0;
	int i;

	qmsg_cat(&body, &len, &cap, "{\"QueueUrl\":");
	qmsg_json_str(&body, &len, &cap, PROBE_QUEUE, strlen(PROBE_QUEUE));
	qmsg_cat(&body, &len, &cap, ",\"Entries\":[");
	for (i = 0; i < n; i++) {
		sink_sqs_entry(&body, &len, &cap, (uint32_t)i, &q[i], i == 0);
		qmsg_cat(&body, &len, &cap, "}");
	}
	qmsg_cat(&body, &len, &cap, "]}");
	*lenp = len;
	return body;
}

static char *
probe_jansson_sqs(const struct qmsg *q, int n, size_t *lenp)
{
	json_t *o, *arr, *ent, *attrs, *at;
	char id[16], *out;
	int i, a;

	o = json_object();
	json_object_set_new(o, "QueueUrl", json_string(PROBE_QUEUE));
	arr = json_array();
	for (i = 0; i < n; i++) {
		snprintf(id, sizeof(id), "e%u", i);
		ent = json_object();
		json_object_set_new(ent, "Id", json_string(id));
		json_object_set_new(ent, "MessageBody",
		    json_stringn(q[i].json, q[i].jsonlen));
		attrs = json_object();
		for (a = 0; a < q[i].nattrs; a++) {
			at = json_object();
			json_object_set_new(at, "DataType",
			    json_string("String"));
			json_object_set_new(at, "StringValue",
			    json_string(q[i].attrs[a].value));
			json_object_set_new(attrs, q[i].attrs[a].name, at);
		}
		json_object_set_new(ent, "MessageAttributes", attrs);
		json_array_append_new(arr, ent);
	}
	json_object_set_new(o, "Entries", arr);
	out = json_dumps(o, PROBE_DUMP_FLAGS);
	json_decref(o);
	if (out == NULL)
		errx(1, "json_dumps");
	*lenp = strlen(out);
	return out;
}

static int
probe_json(int argc, char *argv[])
{
	struct batch_entry e;
	struct qmsg q, qs[PROBE_BATCH];
	unsigned char *body;
	char errbuf[64], *a, *b, *idem;
	size_t alen, blen, bodylen = 1024, i;
	double t, hm[PROBE_MAX], jm[PROBE_MAX], hs[PROBE_MAX], js[PROBE_MAX];
	double rm[PROBE_MAX], rs[PROBE_MAX];
	int ch, r, k, rounds = 7, n = 20000, j;

	while ((ch = getopt(argc, argv, "b:n:r:")) != -1)
		switch (ch) {
		case 'b':
			bodylen = strtoul(optarg, NULL, 10);
			break;
		case 'n':
			n = atoi(optarg);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: probe-departures json [-b bytes] "
			    "[-n messages] [-r rounds]\n");
			return 2;
		}
	if (rounds < 1 || rounds > PROBE_MAX || n < 1 || bodylen < 16)
		errx(2, "bad arguments");
	if ((body = malloc(bodylen)) == NULL)
		err(1, "malloc");
	memset(body, 'x', bodylen);
	memcpy(body, "{\"pad\":\"", 8);
	memcpy(body + bodylen - 2, "\"}", 2);

	memset(&e, 0, sizeof(e));
	e.hook_id = "0190d5fe-3a4b-7c6d-8e9f-0a1b2c3d4e5f";
	e.tenant = "acme";
	e.source = "github";
	e.received_at = 1764600000123ULL;
	e.content_type = "application/json";
	e.headers = probe_hdrs;
	e.nheaders = sizeof(probe_hdrs) / sizeof(probe_hdrs[0]);
	e.dedupe_key = "72d3162e-cc78-11e3-81ab-4c9367dc0958";
	e.replay_id = "";
	e.claim_ref = "";
	e.order_key = "";
	e.body = body;
	e.bodylen = bodylen;

	/* The same bytes, or the comparison means nothing. */
	if (qmsg_build(&q, &e, SIZE_MAX, errbuf, sizeof(errbuf)) == -1)
		errx(1, "qmsg_build: %s", errbuf);
	b = probe_jansson_msg(&e, &blen, &idem);
	if (blen != q.jsonlen || memcmp(b, q.json, blen) != 0)
		errx(1, "the messages differ:\n%s\n%s", q.json, b);
	free(b);
	free(idem);
	alen = q.jsonlen;
	qmsg_free(&q);
	for (j = 0; j < PROBE_BATCH; j++)
		if (qmsg_build(&qs[j], &e, SIZE_MAX, errbuf,
		    sizeof(errbuf)) == -1)
			errx(1, "qmsg_build: %s", errbuf);
	printf("message %zu bytes, ", alen);
	a = probe_hand_sqs(qs, PROBE_BATCH, &alen);
	b = probe_jansson_sqs(qs, PROBE_BATCH, &blen);
	if (alen != blen || memcmp(a, b, alen) != 0)
		errx(1, "the SQS bodies differ");
	free(a);
	free(b);
	printf("SQS body of %d: %zu bytes; %d of each a round\n",
	    PROBE_BATCH, alen, n);
	printf("round  message: hand us  jansson us  ratio   SQS body: hand us"
	    "  jansson us  ratio\n");

	for (r = 0; r < rounds; r++) {
		for (k = 0; k < 2; k++) {
			if ((r + k) % 2 == 0) {
				t = probe_cpu_now();
				for (j = 0; j < n; j++) {
					qmsg_build(&q, &e, SIZE_MAX, errbuf,
					    sizeof(errbuf));
					qmsg_free(&q);
				}
				hm[r] = (probe_cpu_now() - t) * 1e6 / n;
				t = probe_cpu_now();
				for (j = 0; j < n / PROBE_BATCH; j++)
					free(probe_hand_sqs(qs, PROBE_BATCH, &alen));
				hs[r] = (probe_cpu_now() - t) * 1e6 /
				    (n / PROBE_BATCH);
			} else {
				t = probe_cpu_now();
				for (j = 0; j < n; j++) {
					free(probe_jansson_msg(&e, &blen, &idem));
					free(idem);
				}
				jm[r] = (probe_cpu_now() - t) * 1e6 / n;
				t = probe_cpu_now();
				for (j = 0; j < n / PROBE_BATCH; j++)
					free(probe_jansson_sqs(qs, PROBE_BATCH, &blen));
				js[r] = (probe_cpu_now() - t) * 1e6 /
				    (n / PROBE_BATCH);
			}
		}
		rm[r] = jm[r] / hm[r];
		rs[r] = js[r] / hs[r];
		printf("%5d  %16.2f  %10.2f  %5.2f  %17.2f  %10.2f  %5.2f\n",
		    r + 1, hm[r], jm[r], rm[r], hs[r], js[r], rs[r]);
	}
	for (i = 0; i < PROBE_BATCH; i++)
		qmsg_free(&qs[i]);
	printf("medians over %d rounds: message hand %.2f us, jansson %.2f "
	    "(ratio %.2f); SQS body hand %.2f us, jansson %.2f (ratio %.2f)\n",
	    rounds, probe_median(hm, rounds), probe_median(jm, rounds),
	    probe_median(rm, rounds), probe_median(hs, rounds),
	    probe_median(js, rounds), probe_median(rs, rounds));
	free(body);
	return 0;
}

static int
probe_cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
probe_median(double *v, int n)
{
	qsort(v, n, sizeof(*v), probe_cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int
main(int argc, char *argv[])
{
	if (argc >= 2 && strcmp(argv[1], "http") == 0)
		return probe_http(argc - 1, argv + 1);
	if (argc >= 2 && strcmp(argv[1], "json") == 0)
		return probe_json(argc - 1, argv + 1);
	fprintf(stderr, "usage: probe-departures http|json [option ...]\n");
	return 2;
}
