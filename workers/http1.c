/* SPDX-License-Identifier: ISC */
/*
 * http1.c: the http sink's HTTP/1.1 client for plain-http URLs; see
 * http1.h.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <netinet/in.h>
#include <netinet/tcp.h>

#include <ctype.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <netdb.h>
#include <poll.h>
#include <stddef.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

#include <curl/curl.h>

#include "clock.h"
#include "egress.h"
#include "http1.h"
#include "netconn.h"
#include "log.h"

#define HTTP1_READ	16384

enum phase {
	P_HEAD,		/* status line and headers */
	P_LENGTH,	/* a body of known length */
	P_CHUNK_SIZE,	/* a chunk's size line */
	P_CHUNK_DATA,
	P_CHUNK_END,	/* the CRLF after a chunk's data */
	P_TRAILER,	/* trailer lines after the last chunk */
	P_EOF,		/* a body that ends with the connection */
	P_DONE
};

/* The split URL of the last request. */
static struct {
	char	*url;		/* as given */
	char	*host;		/* for getaddrinfo: no brackets */
	char	*port;
	char	*target;	/* path and query */
	char	*hosthdr;	/* the Host header's value */
} u;

/* The kept-alive connection. */
static int	 conn_fd = -1;
static char	 conn_host[256], conn_port[16];
static uint64_t	 conn_idle_since;	/* mono ms its last answer ended */
static size_t	 keep_max;		/* http1_set_keep */

static int	url_split(const char *, char *, size_t);
static void	url_free(void);
static int	send_all(int, struct iovec *, int, uint64_t, int (*)(void),
		    char *, size_t);
static int	head_parse(struct http1_parser *);
static void	body_take(struct http1_parser *, const char *, size_t);
static int	line_take(struct http1_parser *, const char *, size_t,
		    size_t *);
static int	line_end(struct http1_parser *);
static void	reqhead_add(const char *, size_t);
static void	reqhead_str(const char *);
static void	reqhead_line(const char *, const char *);

/* A proxy variable is set: 1, 0, or -1 not read yet (getenv walks the
 * whole environment, four times a request: docs/PERFORMANCE). */
static int	proxied = -1;

int
http1_usable(const char *url)
{
	static const char *const proxies[] = {
		"http_proxy", "HTTP_PROXY", "all_proxy", "ALL_PROXY", NULL
	};
	const char *v;
	size_t alen;
	int i;

	if (strncasecmp(url, "http://", 7) != 0)
		return 0;
	/* Credentials in the URL: libcurl sends them (Basic). */
	alen = strcspn(url + 7, "/?#");
	if (memchr(url + 7, '@', alen) != NULL)
		return 0;
	if (proxied == -1) {
		proxied = 0;
		for (i = 0; proxies[i] != NULL; i++)
			if ((v = getenv(proxies[i])) != NULL && *v != '\0')
				proxied = 1;
	}
	return !proxied;
}

void
http1_forget_env(void)
{
	proxied = -1;
}

/* The request head, built in one buffer kept for the next request. */
static struct http1_headers	reqhead;

/* Append n bytes at s to b. */
static void
buf_add(struct http1_headers *b, const char *s, size_t n)
{
	size_t cap;

	if (b->len + n > b->cap) {
		cap = b->cap != 0 ? b->cap : 1024;
		while (cap < b->len + n)
			cap *= 2;
		if ((b->buf = realloc(b->buf, cap)) == NULL)
			fatal("http1");
		b->cap = cap;
	}
	memcpy(b->buf + b->len, s, n);
	b->len += n;
}

static void
reqhead_add(const char *s, size_t n)
{
	buf_add(&reqhead, s, n);
}

/* n in decimal, ending at the end of buf (size at least 21). */
static const char *
decimal(char *buf, size_t size, uint64_t n)
{
	char *p = buf + size - 1;

	*p = '\0';
	do
		*--p = (char)('0' + n % 10);
	while ((n /= 10) != 0);
	return p;
}

void
http1_headers_add(struct http1_headers *h, const char *line)
{
	buf_add(h, line, strlen(line) + 1);
}

static void
reqhead_str(const char *s)
{
	reqhead_add(s, strlen(s));
}

/* "name: value" and its CRLF; a NULL name: value is the whole line. */
static void
reqhead_line(const char *name, const char *value)
{
	if (name != NULL) {
		reqhead_str(name);
		reqhead_add(": ", 2);
	}
	reqhead_str(value);
	reqhead_add("\r\n", 2);
}

void
http1_close(void)
{
	if (conn_fd != -1)
		close(conn_fd);
	conn_fd = -1;
}

static void
url_free(void)
{
	free(u.url);
	free(u.host);
	free(u.port);
	free(u.target);
	free(u.hosthdr);
	memset(&u, 0, sizeof(u));
}

/* Split url (once per distinct URL) with libcurl's parser. */
static int
url_split(const char *url, char *err, size_t errlen)
{
	CURLU *h;
	char *host = NULL, *port = NULL, *path = NULL, *query = NULL;
	size_t n;
	int rc = -1;

	if (u.url != NULL && strcmp(u.url, url) == 0)
		return 0;
	url_free();
	if ((h = curl_url()) == NULL)
		fatalx("http1: curl_url");
	if (curl_url_set(h, CURLUPART_URL, url, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_HOST, &host, 0) != CURLUE_OK ||
	    curl_url_get(h, CURLUPART_PATH, &path, 0) != CURLUE_OK) {
		snprintf(err, errlen, "URL rejected: %s", url);
		goto done;
	}
	(void)curl_url_get(h, CURLUPART_QUERY, &query, 0);
	if (curl_url_get(h, CURLUPART_PORT, &port, 0) == CURLUE_OK) {
		if (asprintf(&u.hosthdr, "%s:%s", host, port) == -1)
			fatal("http1");
	} else if ((u.hosthdr = strdup(host)) == NULL)
		fatal("http1");
	n = strlen(host);
	if (n >= 2 && host[0] == '[' && host[n - 1] == ']')
		u.host = strndup(host + 1, n - 2);	/* an IPv6 literal */
	else
		u.host = strdup(host);
	u.port = strdup(port != NULL ? port : "80");
	if (asprintf(&u.target, "%s%s%s", *path != '\0' ? path : "/",
	    query != NULL ? "?" : "", query != NULL ? query : "") == -1 ||
	    u.host == NULL || u.port == NULL || (u.url = strdup(url)) == NULL)
		fatal("http1");
	rc = 0;
 done:
	curl_free(host);
	curl_free(port);
	curl_free(path);
	curl_free(query);
	curl_url_cleanup(h);
	if (rc == -1)
		url_free();
	return rc;
}


/* Send every byte of iov; -1 with err (errno kept for the caller). */
static int
send_all(int fd, struct iovec *iov, int n, uint64_t deadline,
    int (*watch)(void), char *err, size_t errlen)
{
	struct msghdr mh;
	ssize_t w;

	while (n > 0) {
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = iov;
		mh.msg_iovlen = n;
		if ((w = sendmsg(fd, &mh, MSG_NOSIGNAL)) == -1) {
			if (errno == EINTR)
				continue;
			if (errno != EAGAIN) {
				int e = errno;

				snprintf(err, errlen, "Send failure: %s",
				    strerror(e));
				errno = e;
				return -1;
			}
			if (netconn_wait(fd, POLLOUT, deadline, watch, err,
			    errlen) == -1) {
				errno = ETIMEDOUT;
				return -1;
			}
			continue;
		}
		while (n > 0 && (size_t)w >= iov->iov_len) {
			w -= iov->iov_len;
			iov++;
			n--;
		}
		if (n > 0) {
			iov->iov_base = (char *)iov->iov_base + w;
			iov->iov_len -= w;
		}
	}
	return 0;
}

int
http1_request(const char *url, const char *method,
    const struct http1_headers *hdrs, const char *user_agent,
    const void *body, size_t len, uint64_t timeout_ms,
    uint64_t max_response_bytes, int (*watch)(void), struct http1_answer *a,
    char *err, size_t errlen)
{
	static struct http1_parser p;
	const char *l, *end;
	struct iovec iov[2];
	struct pollfd pfd;
	char buf[HTTP1_READ], cl[24];
	size_t used;
	const char *accept = "*/*";
	uint64_t deadline = timeout_ms != 0 ? time_mono_ms() + timeout_ms : 0;
	uint64_t got;
	enum http1_state st;
	ssize_t r;
	int tries, reused, stale, rc = -1;

	if (url_split(url, err, errlen) == -1)
		return -1;
	reqhead.len = 0;
	reqhead_str(method);
	reqhead_add(" ", 1);
	reqhead_str(u.target);
	reqhead_str(" HTTP/1.1\r\n");
	reqhead_line("Host", u.hosthdr);
	reqhead_line("Content-Length", decimal(cl, sizeof(cl), len));
	end = hdrs->len > 0 ? hdrs->buf + hdrs->len : hdrs->buf;
	for (l = hdrs->buf; l < end; l += strlen(l) + 1) {
		const char *c = strchr(l, ':');

		/* As libcurl: a header of the list replaces its own
		 * User-Agent or Accept, and "Name:" alone sends nothing. */
		if (c != NULL && c - l == 10 &&
		    strncasecmp(l, "user-agent", 10) == 0)
			user_agent = NULL;
		if (c != NULL && c - l == 6 && strncasecmp(l, "accept", 6) == 0)
			accept = NULL;
		if (c == NULL || c[1 + strspn(c + 1, " \t")] == '\0')
			continue;
		reqhead_line(NULL, l);
	}
	if (user_agent != NULL)
		reqhead_line("User-Agent", user_agent);
	if (accept != NULL)
		reqhead_line("Accept", accept);
	reqhead_add("\r\n", 2);

	if (conn_fd != -1 && (strcmp(conn_host, u.host) != 0 ||
	    strcmp(conn_port, u.port) != 0))
		http1_close();
	for (tries = 0; tries < 2; tries++) {
		reused = conn_fd != -1;
		/* Readable while idle: closed by the server (or it talks
		 * out of turn); either way, not reusable.  Not looked at
		 * right after an answer (the next attempt of a busy sink):
		 * a close that races the request is a stale connection
		 * below, sent once more. */
		if (reused && time_mono_ms() - conn_idle_since >=
		    HTTP1_FRESH_MS) {
			pfd.fd = conn_fd;
			pfd.events = POLLIN;
			pfd.revents = 0;
			if (poll(&pfd, 1, 0) != 0) {
				http1_close();
				reused = 0;
			}
		}
		if (conn_fd == -1) {
			if ((conn_fd = netconn_open(u.host, u.port, 1,
			    deadline, watch, err, errlen)) < 0) {
				rc = conn_fd;
				conn_fd = -1;
				break;
			}
			snprintf(conn_host, sizeof(conn_host), "%s", u.host);
			snprintf(conn_port, sizeof(conn_port), "%s", u.port);
		}
		iov[0].iov_base = reqhead.buf;
		iov[0].iov_len = reqhead.len;
		iov[1].iov_base = (void *)(body != NULL ? body : "");
		iov[1].iov_len = len;
		if (send_all(conn_fd, iov, len > 0 ? 2 : 1, deadline, watch,
		    err, errlen) == -1) {
			int e = errno;

			http1_close();
			if (reused && (e == EPIPE || e == ECONNRESET))
				continue;	/* it went while idle */
			break;
		}

		http1_answer_init(a);
		http1_parse_init(&p, a, max_response_bytes);
		got = 0;
		stale = 0;
		st = HTTP1_MORE;
		/* The answer is not there yet this soon after the request:
		 * wait before the first read instead of a read that finds
		 * nothing. */
		if (netconn_wait(conn_fd, POLLIN, deadline, watch, err,
		    errlen) == -1)
			st = HTTP1_BAD;
		while (st == HTTP1_MORE) {
			r = read(conn_fd, buf, sizeof(buf));
			if (r == -1 && errno == EINTR)
				continue;
			if (r == -1 && errno == EAGAIN) {
				if (netconn_wait(conn_fd, POLLIN, deadline, watch,
				    err, errlen) == -1)
					break;
				continue;
			}
			if (r == 0 || r == -1) {
				/* Closed before a byte of the answer: a
				 * kept-alive connection the server dropped
				 * meanwhile. */
				if (reused && got == 0 && (r == 0 ||
				    errno == ECONNRESET)) {
					stale = 1;
					break;
				}
				if (r == -1) {
					snprintf(err, errlen, "Recv failure: "
					    "%s", strerror(errno));
					break;
				}
				if ((st = http1_parse_eof(&p)) == HTTP1_BAD)
					snprintf(err, errlen, "%s",
					    http1_parse_error(&p));
				break;
			}
			got += r;
			st = http1_parse(&p, buf, r, &used);
			if (st == HTTP1_BAD)
				snprintf(err, errlen, "%s",
				    http1_parse_error(&p));
			/* Bytes past the answer: not a connection to keep. */
			if (st == HTTP1_DONE && used != (size_t)r)
				p.keep_alive = 0;
		}
		if (st == HTTP1_DONE) {
			if (!http1_parse_keep_alive(&p))
				http1_close();
			conn_idle_since = time_mono_ms();
			rc = 0;
			break;
		}
		http1_close();
		if (!stale)
			break;
		/* Once more, on a new connection. */
	}
	return rc;
}

/*
 * The parser.
 */

void
http1_parse_init(struct http1_parser *p, struct http1_answer *a,
    uint64_t cap)
{
	memset(p, 0, offsetof(struct http1_parser, head));
	p->a = a;
	p->cap = cap;
	p->phase = P_HEAD;
}

int
http1_parse_keep_alive(const struct http1_parser *p)
{
	return p->phase == P_DONE && p->keep_alive;
}

const char *
http1_parse_error(const struct http1_parser *p)
{
	return p->why[0] != '\0' ? p->why : "malformed answer";
}

/* A header token list (Connection, Transfer-Encoding) holds tok. */
static int
list_has(const char *v, size_t vl, const char *tok)
{
	size_t tl = strlen(tok), i = 0, s;

	while (i < vl) {
		while (i < vl && (v[i] == ' ' || v[i] == '\t' || v[i] == ','))
			i++;
		s = i;
		while (i < vl && v[i] != ',' && v[i] != ' ' && v[i] != '\t')
			i++;
		if (i - s == tl && strncasecmp(v + s, tok, tl) == 0)
			return 1;
	}
	return 0;
}

/* The status line and headers in p->head[0..headlen), CRLFs included:
 * 0, or -1 with p->why. */
static int
head_parse(struct http1_parser *p)
{
	char *s = p->head, *end = p->head + p->headlen, *e, *c, *v, *ve;
	uint64_t clen = 0;
	int have_len = 0, te = 0, te_chunked = 0, close = 0, ka = 0;
	size_t nl, vl;

	if ((e = memchr(s, '\n', end - s)) == NULL || e - s < 12 ||
	    strncmp(s, "HTTP/1.", 7) != 0 || !isdigit((unsigned char)s[7]) ||
	    s[8] != ' ' || !isdigit((unsigned char)s[9]) ||
	    !isdigit((unsigned char)s[10]) ||
	    !isdigit((unsigned char)s[11]) ||
	    (e - s > 12 && s[12] != ' ' && s[12] != '\r')) {
		snprintf(p->why, sizeof(p->why), "malformed status line");
		return -1;
	}
	p->minor = s[7] - '0';
	p->a->status = (s[9] - '0') * 100 + (s[10] - '0') * 10 + (s[11] - '0');
	p->a->retry_after[0] = '\0';
	for (s = e + 1; s < end; s = e + 1) {
		e = memchr(s, '\n', end - s);
		nl = e - s;
		if (nl > 0 && s[nl - 1] == '\r')
			nl--;
		if (nl == 0)
			break;	/* the empty line */
		if ((c = memchr(s, ':', nl)) == NULL || c == s) {
			snprintf(p->why, sizeof(p->why), "malformed header");
			return -1;
		}
		v = c + 1;
		ve = s + nl;
		while (v < ve && (*v == ' ' || *v == '\t'))
			v++;
		while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
			ve--;
		vl = ve - v;
#define IS(name) ((size_t)(c - s) == sizeof(name) - 1 &&		\
	strncasecmp(s, name, sizeof(name) - 1) == 0)
		if (IS("content-length")) {
			uint64_t n = 0;
			size_t i;

			/* Digits only, at most 19 (no overflow). */
			for (i = 0; vl <= 19 && i < vl &&
			    isdigit((unsigned char)v[i]); i++)
				n = n * 10 + (v[i] - '0');
			if (vl == 0 || i < vl) {
				snprintf(p->why, sizeof(p->why),
				    "bad Content-Length");
				return -1;
			}
			if (have_len && n != clen) {
				snprintf(p->why, sizeof(p->why),
				    "conflicting Content-Length");
				return -1;
			}
			clen = n;
			have_len = 1;
		} else if (IS("transfer-encoding")) {
			te = 1;
			te_chunked = list_has(v, vl, "chunked");
		} else if (IS("connection")) {
			close |= list_has(v, vl, "close");
			ka |= list_has(v, vl, "keep-alive");
		} else if (IS("retry-after")) {
			if (vl <= HTTP1_VALUE_MAX && memchr(v, '\0', vl) ==
			    NULL) {
				memcpy(p->a->retry_after, v, vl);
				p->a->retry_after[vl] = '\0';
			} else
				p->a->retry_after[0] = '\0';
		}
#undef IS
	}
	p->keep_alive = !close && (p->minor >= 1 || ka);
	if ((p->a->status >= 100 && p->a->status < 200) ||
	    p->a->status == 204 || p->a->status == 304) {
		p->phase = P_DONE;	/* no body (a 1xx: see the caller) */
		return 0;
	}
	if (te && te_chunked)
		p->phase = P_CHUNK_SIZE;
	else if (te || !have_len) {
		p->phase = P_EOF;	/* to the end of the connection */
		p->keep_alive = 0;
	} else {
		p->left = clen;
		p->phase = clen > 0 ? P_LENGTH : P_DONE;
	}
	return 0;
}

/* Body bytes: counted, the first kept (printable) for the log, cut at the
 * cap (then the answer is over and the connection not kept). */
void
http1_set_keep(size_t n)
{
	keep_max = n < HTTP1_KEEP_MAX ? n : HTTP1_KEEP_MAX;
}

void
http1_answer_init(struct http1_answer *a)
{
	memset(a, 0, offsetof(struct http1_answer, keep));
}

void
http1_answer_body(struct http1_answer *a, const char *b, size_t n)
{
	size_t k;

	if (a->keeplen >= keep_max)
		return;
	k = keep_max - a->keeplen < n ? keep_max - a->keeplen : n;
	memcpy(a->keep + a->keeplen, b, k);
	a->keeplen += k;
}

static void
body_take(struct http1_parser *p, const char *b, size_t n)
{
	http1_answer_body(p->a, b, n);
	p->got += n;
	if (p->got > p->cap) {
		p->a->capped = 1;
		p->keep_alive = 0;
		p->phase = P_DONE;
	}
}

/* Gather a line (chunk size, trailer) into head; 1 when it is complete
 * (then head holds it without its line end), 0 for more, -1 too long. */
static int
line_take(struct http1_parser *p, const char *b, size_t n, size_t *used)
{
	const char *e = memchr(b, '\n', n);
	size_t k = e != NULL ? (size_t)(e - b) + 1 : n;

	if (p->headlen + k > 1024) {
		snprintf(p->why, sizeof(p->why), "chunk line too long");
		return -1;
	}
	memcpy(p->head + p->headlen, b, k);
	p->headlen += k;
	*used = k;
	if (e == NULL)
		return 0;
	p->headlen--;			/* the LF */
	if (p->headlen > 0 && p->head[p->headlen - 1] == '\r')
		p->headlen--;
	p->head[p->headlen] = '\0';
	return 1;
}

/* A whole line in head (line_take) in a line phase: a chunk's size, the
 * CRLF after its data, or a trailer line.  0, or -1 with why. */
static int
line_end(struct http1_parser *p)
{
	uint64_t sz = 0;
	size_t i;

	switch (p->phase) {
	case P_CHUNK_SIZE:
		for (i = 0; i < p->headlen && isxdigit((unsigned char)
		    p->head[i]); i++) {
			if (sz >> 60) {
				snprintf(p->why, sizeof(p->why),
				    "chunk too large");
				return -1;
			}
			sz = sz * 16 + (isdigit((unsigned char)p->head[i]) ?
			    p->head[i] - '0' :
			    tolower((unsigned char)p->head[i]) - 'a' + 10);
		}
		if (i == 0 || (i < p->headlen && p->head[i] != ';' &&
		    p->head[i] != ' ' && p->head[i] != '\t')) {
			snprintf(p->why, sizeof(p->why), "bad chunk size");
			return -1;
		}
		p->left = sz;
		p->phase = sz > 0 ? P_CHUNK_DATA : P_TRAILER;
		break;
	case P_CHUNK_END:
		if (p->headlen != 0) {
			snprintf(p->why, sizeof(p->why),
			    "chunk not followed by CRLF");
			return -1;
		}
		p->phase = P_CHUNK_SIZE;
		break;
	default:		/* P_TRAILER */
		if (p->headlen == 0)
			p->phase = P_DONE;	/* the empty line */
		break;
	}
	p->headlen = 0;
	return 0;
}

enum http1_state
http1_parse(struct http1_parser *p, const char *b, size_t n, size_t *used)
{
	size_t off = 0, k, i, from;
	char *e;
	int r;

	*used = 0;	/* a malformed answer: nothing more matters */
	while (off < n && p->phase != P_DONE) {
		switch (p->phase) {
		case P_HEAD:
			k = n - off;
			if (k > sizeof(p->head) - p->headlen)
				k = sizeof(p->head) - p->headlen;
			from = p->headlen > 3 ? p->headlen - 3 : 0;
			memcpy(p->head + p->headlen, b + off, k);
			p->headlen += k;
			e = NULL;
			for (i = from; i + 1 < p->headlen; i++)
				if (p->head[i] == '\n' && (p->head[i + 1] ==
				    '\n' || (p->head[i + 1] == '\r' && i + 2 <
				    p->headlen && p->head[i + 2] == '\n'))) {
					e = p->head + i + (p->head[i + 1] ==
					    '\n' ? 2 : 3);
					break;
				}
			if (e == NULL) {
				if (p->headlen == sizeof(p->head)) {
					snprintf(p->why, sizeof(p->why),
					    "answer headers too long");
					return HTTP1_BAD;
				}
				off += k;
				break;
			}
			/* Of the bytes copied, those past the head are the
			 * body's: take them back. */
			k -= p->head + p->headlen - e;
			p->headlen = e - p->head;
			off += k;
			if (head_parse(p) == -1)
				return HTTP1_BAD;
			if (p->a->status < 200 && p->a->status >= 100) {
				if (p->a->status == 101) {
					snprintf(p->why, sizeof(p->why),
					    "unasked protocol switch");
					return HTTP1_BAD;
				}
				p->phase = P_HEAD;	/* interim: the next head */
			}
			p->headlen = 0;
			break;
		case P_LENGTH:
		case P_CHUNK_DATA:
			k = n - off;
			if (k > p->left)
				k = p->left;
			p->left -= k;
			body_take(p, b + off, k);
			off += k;
			/* (body_take ends the answer at the cap) */
			if (p->left == 0 && p->phase != P_DONE)
				p->phase = p->phase == P_LENGTH ? P_DONE :
				    P_CHUNK_END;
			break;
		case P_EOF:
			body_take(p, b + off, n - off);
			off = n;
			break;
		case P_CHUNK_SIZE:
		case P_CHUNK_END:
		case P_TRAILER:
			if ((r = line_take(p, b + off, n - off, &k)) == -1)
				return HTTP1_BAD;
			off += k;
			if (r == 1 && line_end(p) == -1)
				return HTTP1_BAD;
			break;
		}
	}
	*used = off;
	return p->phase == P_DONE ? HTTP1_DONE : HTTP1_MORE;
}

enum http1_state
http1_parse_eof(struct http1_parser *p)
{
	if (p->phase == P_EOF) {
		p->phase = P_DONE;
		p->keep_alive = 0;
		return HTTP1_DONE;
	}
	if (p->phase == P_DONE)
		return HTTP1_DONE;
	snprintf(p->why, sizeof(p->why), p->phase == P_HEAD &&
	    p->headlen == 0 ? "Empty reply from server" :
	    "connection closed before the answer ended");
	return HTTP1_BAD;
}
