/* SPDX-License-Identifier: ISC */
/*
 * httpreq.c: the request logic of the edge, without I/O; see httpreq.h.
 *
 * The head parser takes bytes as they come and only looks for the empty
 * line that ends the head, counting bytes and lines against the limits on
 * the way; the complete head is then parsed once, in place.  Syntax is read
 * strictly where it decides framing (request line, Content-Length,
 * Transfer-Encoding, line ends, obs-fold): a head two parsers could read
 * differently is refused with 400 rather than guessed at.  Header names and
 * values are taken as bytes here and judged by httpreq_check_headers, which
 * the contract runs later (check 4), after routing.
 *
 * Running out of memory is fatal, as everywhere in Ankusa: the edge is
 * disposable and the master respawns it.
 */
#include "config.h"

#include <ctype.h>
#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "conf.h"
#include "httpreq.h"
#include "keys.h"
#include "log.h"
#include "msg.h"
#include "sha256.h"
#include "verify.h"

/* Chunked decoder states. */
enum {
	CH_SIZE = 0,	/* hex digits of a chunk size */
	CH_BWS,		/* whitespace after the size, before ";" */
	CH_EXT,		/* chunk extensions, ignored up to the line end */
	CH_SIZE_LF,	/* CR seen after the size line */
	CH_DATA,	/* chunk data */
	CH_DATA_CR,	/* the CRLF after chunk data */
	CH_DATA_LF,
	CH_TRAILER,	/* at the start of a trailer line (or the end) */
	CH_TRAILER_LINE,/* inside a trailer line */
	CH_END_LF,	/* CR of the final empty line seen */
	CH_DONE,
	CH_ERROR,
};

/* A growing string for answers. */
struct sbuf {
	char	*p;
	size_t	 len;
	size_t	 cap;
};

static void	 sb_grow(struct sbuf *, size_t);
static void	 sb_add(struct sbuf *, const void *, size_t);
static void	 sb_addstr(struct sbuf *, const char *);
static void	 sb_adduint(struct sbuf *, uint64_t);
static void	 sb_printf(struct sbuf *, const char *, ...)
		    __attribute__((format(printf, 2, 3)));
static void	 sb_json_str(struct sbuf *, const void *, size_t);
static char	*sb_finish(struct sbuf *);

static enum httpreq_status head_error(struct httpreq *, int);
static int	 head_parse(struct httpreq *);
static int	 parse_request_line(struct httpreq *, char *, size_t);
static int	 parse_header_line(struct httpreq *, char *, size_t);
static int	 header_semantics(struct httpreq *);
static int	 is_tchar(unsigned char);
static int	 name_is(const struct httpreq_header *, const char *);
static int	 parse_length(const char *, size_t, uint64_t *);
static void	 out_append(struct httpreq_chunked *, const unsigned char *,
		    size_t);
static int	 in_list(const char *, const char *const *);
static void	 answer_set(struct httpreq_answer *, int, char *);
static const char *reason_phrase(int);

void
httpreq_init(struct httpreq *r)
{
	memset(r, 0, sizeof(*r));
}

/* Forget the request, keep the buffer for the next one. */
void
httpreq_reset(struct httpreq *r)
{
	char *buf = r->buf;
	size_t cap = r->cap;

	memset(r, 0, sizeof(*r));
	r->buf = buf;
	r->cap = cap;
}

void
httpreq_free(struct httpreq *r)
{
	free(r->buf);
	memset(r, 0, sizeof(*r));
}

int
httpreq_started(const struct httpreq *r)
{
	return r->len > 0;
}

static enum httpreq_status
head_error(struct httpreq *r, int status)
{
	r->error = status;
	return HTTPREQ_ERROR;
}

enum httpreq_status
httpreq_feed(struct httpreq *r, const void *data, size_t n, size_t *used)
{
	const unsigned char *p = data, *lf;
	size_t i = 0, seg;

	*used = 0;
	if (r->error != 0)
		return HTTPREQ_ERROR;
	while (i < n) {
		/*
		 * Empty lines before the request line are skipped (RFC 9112
		 * 2.2): some clients send a CRLF after a POST body.  They
		 * still count against the head limit.
		 */
		if (r->len == 0 && (p[i] == '\r' || p[i] == '\n')) {
			if (++r->total > HTTPREQ_HEAD_MAX)
				return head_error(r, 431);
			i++;
			*used = i;
			continue;
		}
		lf = memchr(p + i, '\n', n - i);
		seg = lf != NULL ? (size_t)(lf - (p + i)) + 1 : n - i;
		if (r->total + seg > HTTPREQ_HEAD_MAX)
			return head_error(r, 431);
		if (r->len + seg > r->cap) {
			size_t ncap = r->cap ? r->cap : 1024;

			while (ncap < r->len + seg)
				ncap *= 2;
			if (ncap > HTTPREQ_HEAD_MAX + 1)
				ncap = HTTPREQ_HEAD_MAX + 1;
			if ((r->buf = realloc(r->buf, ncap)) == NULL)
				fatal("httpreq_feed");
			r->cap = ncap;
		}
		memcpy(r->buf + r->len, p + i, seg);
		r->len += seg;
		r->total += seg;
		i += seg;
		*used = i;
		if (lf == NULL) {
			r->linelen += seg;
			break;
		}
		r->linelen += seg - 1;
		if (r->linelen == 0 ||
		    (r->linelen == 1 && r->buf[r->len - 2] == '\r')) {
			if (head_parse(r) == -1)
				return HTTPREQ_ERROR;
			return HTTPREQ_DONE;
		}
		r->linelen = 0;
		/* The request line and at most HTTPREQ_HEADERS_MAX more. */
		if (++r->nlines > HTTPREQ_HEADERS_MAX + 1)
			return head_error(r, 431);
	}
	return HTTPREQ_MORE;
}

/*
 * Split the complete head into lines and parse each.  A line ends in LF,
 * with an optional CR before it; a CR anywhere else is refused, since
 * some parsers take a bare CR for a line end.
 */
static int
head_parse(struct httpreq *r)
{
	char *line = r->buf, *end = r->buf + r->len, *lf;
	size_t ll;
	int first = 1;

	while (line < end) {
		lf = memchr(line, '\n', end - line);
		if (lf == NULL)
			break;		/* cannot happen: the head ends in LF */
		ll = lf - line;
		if (ll > 0 && line[ll - 1] == '\r')
			ll--;
		if (ll == 0)
			break;		/* the empty line: end of the head */
		if (memchr(line, '\r', ll) != NULL) {
			r->error = 400;
			return -1;
		}
		if (first) {
			if (parse_request_line(r, line, ll) == -1)
				return -1;
			first = 0;
		} else if (parse_header_line(r, line, ll) == -1)
			return -1;
		line = lf + 1;
	}
	if (first) {
		r->error = 400;
		return -1;
	}
	return header_semantics(r);
}

static int
is_tchar(unsigned char c)
{
	if (isalnum(c))
		return 1;
	return c != '\0' && strchr("!#$%&'*+-.^_`|~", c) != NULL;
}

/* method SP request-target SP HTTP/1.x, nothing else. */
static int
parse_request_line(struct httpreq *r, char *line, size_t ll)
{
	size_t i = 0, mlen, tstart;

	while (i < ll && is_tchar((unsigned char)line[i]))
		i++;
	mlen = i;
	if (mlen == 0 || i >= ll || line[i] != ' ')
		goto bad;
	i++;
	tstart = i;
	while (i < ll && (unsigned char)line[i] >= 0x21 &&
	    (unsigned char)line[i] <= 0x7e)
		i++;
	if (i == tstart || i >= ll || line[i] != ' ')
		goto bad;
	line[mlen] = '\0';
	line[i] = '\0';
	r->method = line;
	r->target = line + tstart;
	i++;
	if (ll - i != 8 || memcmp(line + i, "HTTP/1.", 7) != 0 ||
	    !isdigit((unsigned char)line[i + 7]))
		goto bad;
	r->minor = line[i + 7] - '0';
	return 0;
 bad:
	r->error = 400;
	return -1;
}

/* name ":" OWS value OWS.  The name is any bytes but ':'; check 4 judges
 * them later.  A line starting with whitespace is obs-fold: refused. */
static int
parse_header_line(struct httpreq *r, char *line, size_t ll)
{
	struct httpreq_header *h;
	char *colon, *v, *ve;

	if (line[0] == ' ' || line[0] == '\t')
		goto bad;
	if ((colon = memchr(line, ':', ll)) == NULL || colon == line)
		goto bad;
	if (r->nheaders >= HTTPREQ_HEADERS_MAX) {
		r->error = 431;
		return -1;
	}
	v = colon + 1;
	ve = line + ll;
	while (v < ve && (*v == ' ' || *v == '\t'))
		v++;
	while (ve > v && (ve[-1] == ' ' || ve[-1] == '\t'))
		ve--;
	h = &r->headers[r->nheaders++];
	h->name = line;
	h->namelen = colon - line;
	h->value = v;
	h->valuelen = ve - v;
	/* ve is at most the CR or LF that ended the line, or OWS. */
	*colon = '\0';
	*ve = '\0';
	return 0;
 bad:
	r->error = 400;
	return -1;
}

static int
name_is(const struct httpreq_header *h, const char *name)
{
	return h->namelen == strlen(name) &&
	    strncasecmp(h->name, name, h->namelen) == 0;
}

/* 1*DIGIT, no sign, no list, no overflow. */
static int
parse_length(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0)
		return -1;
	for (i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -1;
		if (v > (UINT64_MAX - 9) / 10)
			return -1;
		v = v * 10 + (s[i] - '0');
	}
	*out = v;
	return 0;
}

/*
 * The headers that frame the request or the connection.  Repeated
 * Content-Length headers are allowed only with one value (RFC 9112 6.3);
 * Content-Length with Transfer-Encoding is refused outright, as is any
 * coding but a lone "chunked": both are the stuff of request smuggling.
 */
static int
header_semantics(struct httpreq *r)
{
	const struct httpreq_header *h;
	uint64_t cl;
	int i, conn_close = 0, conn_ka = 0, te = 0;
	char *tok, *p, *save;
	char buf[256];

	for (i = 0; i < r->nheaders; i++) {
		h = &r->headers[i];
		if (name_is(h, "content-length")) {
			if (parse_length(h->value, h->valuelen, &cl) == -1)
				goto bad;
			if (r->has_length && cl != r->content_length)
				goto bad;
			r->has_length = 1;
			r->content_length = cl;
		} else if (name_is(h, "transfer-encoding")) {
			if (te++ > 0 || h->valuelen != 7 ||
			    strncasecmp(h->value, "chunked", 7) != 0)
				goto bad;
			r->chunked = 1;
		} else if (name_is(h, "connection")) {
			if (h->valuelen >= sizeof(buf))
				continue;	/* longer than any we know */
			memcpy(buf, h->value, h->valuelen);
			buf[h->valuelen] = '\0';
			for (p = buf; (tok = strtok_r(p, ",", &save)) != NULL;
			    p = NULL) {
				tok += strspn(tok, " \t");
				tok[strcspn(tok, " \t")] = '\0';
				if (strcasecmp(tok, "close") == 0)
					conn_close = 1;
				else if (strcasecmp(tok, "keep-alive") == 0)
					conn_ka = 1;
			}
		} else if (name_is(h, "expect")) {
			if (h->valuelen == 12 &&
			    strncasecmp(h->value, "100-continue", 12) == 0)
				r->expect_continue = 1;
		}
	}
	if (r->has_length && r->chunked)
		goto bad;
	if (r->minor >= 1)
		r->keep_alive = !conn_close;
	else
		r->keep_alive = conn_ka && !conn_close && !r->chunked;
	return 0;
 bad:
	r->error = 400;
	return -1;
}

const struct httpreq_header *
httpreq_header(const struct httpreq *r, const char *name)
{
	int i;

	for (i = 0; i < r->nheaders; i++)
		if (name_is(&r->headers[i], name))
			return &r->headers[i];
	return NULL;
}

/* Chunked decoding. */

void
httpreq_chunked_init(struct httpreq_chunked *c, uint64_t max)
{
	memset(c, 0, sizeof(*c));
	c->state = CH_SIZE;
	c->max = max;
}

void
httpreq_chunked_free(struct httpreq_chunked *c)
{
	free(c->out);
	c->out = NULL;
	c->outlen = c->outcap = 0;
}

/* Grow by doubling, never past the cap: the size line was checked. */
static void
out_append(struct httpreq_chunked *c, const unsigned char *p, size_t n)
{
	size_t ncap;

	if (c->outlen + n > c->outcap) {
		ncap = c->outcap ? c->outcap : 4096;
		while (ncap < c->outlen + n)
			ncap *= 2;
		if (ncap > c->max && c->max >= c->outlen + n)
			ncap = c->max;
		if ((c->out = realloc(c->out, ncap)) == NULL)
			fatal("httpreq_chunked_feed");
		c->outcap = ncap;
	}
	memcpy(c->out + c->outlen, p, n);
	c->outlen += n;
}

enum httpreq_status
httpreq_chunked_feed(struct httpreq_chunked *c, const void *data, size_t n,
    size_t *used)
{
	const unsigned char *p = data;
	size_t i = 0, take;
	unsigned char ch;
	int d;

	*used = 0;
	if (c->state == CH_ERROR)
		return HTTPREQ_ERROR;
	if (c->state == CH_DONE)
		return HTTPREQ_DONE;
	while (i < n) {
		if (c->state == CH_DATA) {
			take = n - i;
			if (take > c->size)
				take = c->size;
			out_append(c, p + i, take);
			c->size -= take;
			i += take;
			if (c->size == 0)
				c->state = CH_DATA_CR;
			continue;
		}
		ch = p[i++];
		switch (c->state) {
		case CH_SIZE:
			if (++c->linelen > HTTPREQ_CHUNK_LINE_MAX)
				goto bad;
			if (isxdigit(ch)) {
				d = isdigit(ch) ? ch - '0' :
				    tolower(ch) - 'a' + 10;
				if (c->size > (UINT64_MAX >> 4))
					goto bad;
				c->size = (c->size << 4) | (uint64_t)d;
				c->digits++;
				break;
			}
			if (c->digits == 0)
				goto bad;
			/* FALLTHROUGH */
		case CH_BWS:
		case CH_EXT:
			if (c->state != CH_SIZE &&
			    ++c->linelen > HTTPREQ_CHUNK_LINE_MAX)
				goto bad;
			if (ch == '\r') {
				c->state = CH_SIZE_LF;
				break;
			}
			if (ch == '\n')
				goto size_line_done;
			/* size [BWS] [";" ext]; control bytes refused. */
			if (ch == ';' || c->state == CH_EXT) {
				if (ch != '\t' && (ch < 0x20 || ch == 0x7f))
					goto bad;
				if (++c->ext_bytes > HTTPREQ_CHUNK_EXT_TOTAL ||
				    (ch == ';' &&
				    ++c->exts > HTTPREQ_CHUNK_EXTS_MAX))
					goto bad;
				c->state = CH_EXT;
				break;
			}
			if (ch == ' ' || ch == '\t') {
				c->state = CH_BWS;
				break;
			}
			goto bad;
		case CH_SIZE_LF:
			if (ch != '\n')
				goto bad;
 size_line_done:
			c->linelen = 0;
			c->digits = 0;
			c->exts = 0;
			if (c->size == 0) {
				c->state = CH_TRAILER;
				break;
			}
			/* Cut at the cap before reading the chunk. */
			if (c->size > c->max || c->outlen + c->size > c->max) {
				c->error = 413;
				c->state = CH_ERROR;
				*used = i;
				return HTTPREQ_ERROR;
			}
			c->state = CH_DATA;
			break;
		case CH_DATA_CR:
			if (ch == '\r')
				c->state = CH_DATA_LF;
			else if (ch == '\n')
				c->state = CH_SIZE;
			else
				goto bad;
			break;
		case CH_DATA_LF:
			if (ch != '\n')
				goto bad;
			c->state = CH_SIZE;
			break;
		case CH_TRAILER:
			if (ch == '\r') {
				c->state = CH_END_LF;
				break;
			}
			if (ch == '\n')
				goto done;
			if (++c->trailers > HTTPREQ_TRAILERS_MAX)
				goto trailers;
			c->state = CH_TRAILER_LINE;
			/* FALLTHROUGH */
		case CH_TRAILER_LINE:
			if (++c->trailer > HTTPREQ_TRAILER_MAX)
				goto trailers;
			if (ch == '\n')
				c->state = CH_TRAILER;
			break;
		case CH_END_LF:
			if (ch != '\n')
				goto bad;
			goto done;
		default:
			goto bad;
		}
	}
	*used = i;
	return HTTPREQ_MORE;
 done:
	c->state = CH_DONE;
	*used = i;
	return HTTPREQ_DONE;
 trailers:
	c->error = 431;
	c->state = CH_ERROR;
	*used = i;
	return HTTPREQ_ERROR;
 bad:
	c->error = 400;
	c->state = CH_ERROR;
	*used = i;
	return HTTPREQ_ERROR;
}

/* Routing. */

enum httpreq_route_kind
httpreq_route(const struct conf *cf, const char *method, const char *target,
    struct httpreq_route *rt)
{
	const char *path = target, *p, *seg, *prefix;
	size_t len, plen, slen;
	int nseg, k, get;

	memset(rt, 0, sizeof(*rt));
	/* absolute-form (RFC 9112 3.2.2): keep only the path. */
	if (strncasecmp(path, "http://", 7) == 0 ||
	    strncasecmp(path, "https://", 8) == 0) {
		path = strstr(path, "//") + 2;
		path += strcspn(path, "/?#");
		if (*path != '/')
			path = "/";
	}
	len = strcspn(path, "?#");
	if (len == 0 || path[0] != '/')
		return rt->kind = HTTPREQ_ROUTE_NOT_FOUND;

	get = strcmp(method, "GET") == 0 || strcmp(method, "HEAD") == 0;
	if (get && len == 7 && memcmp(path, "/health", 7) == 0)
		return rt->kind = HTTPREQ_ROUTE_HEALTH;
	if (get && len == 6 && memcmp(path, "/ready", 6) == 0)
		return rt->kind = HTTPREQ_ROUTE_READY;

	/* "" and "/" both mean no prefix; a trailing slash is ignored. */
	prefix = cf->http.prefix != NULL ? cf->http.prefix : "";
	plen = strlen(prefix);
	while (plen > 0 && prefix[plen - 1] == '/')
		plen--;
	if (plen > 0) {
		if (len < plen || memcmp(path, prefix, plen) != 0 ||
		    (len > plen && path[plen] != '/'))
			return rt->kind = HTTPREQ_ROUTE_NOT_FOUND;
		path += plen;
		len -= plen;
	}

	/* What is left is "/source" or "/tenant/source", exactly. */
	nseg = cf->http.routing == ROUTING_TENANT_PATH ? 2 : 1;
	p = path;
	for (k = 0; k < nseg; k++) {
		if (len == 0 || *p != '/')
			return rt->kind = HTTPREQ_ROUTE_UNKNOWN_SOURCE;
		seg = ++p;
		len--;
		slen = 0;
		while (slen < len && seg[slen] != '/')
			slen++;
		if (slen == 0 || slen > CONF_ID_MAX)
			return rt->kind = HTTPREQ_ROUTE_UNKNOWN_SOURCE;
		if (k == nseg - 1) {
			memcpy(rt->source, seg, slen);
			rt->source[slen] = '\0';
			if (!conf_valid_id(rt->source))
				return rt->kind = HTTPREQ_ROUTE_UNKNOWN_SOURCE;
		} else {
			memcpy(rt->tenant, seg, slen);
			rt->tenant[slen] = '\0';
			/* The notices' tenant is no user's. */
			if (!conf_valid_id(rt->tenant) ||
			    strcmp(rt->tenant, CONF_NOTIFY_TENANT) == 0)
				return rt->kind = HTTPREQ_ROUTE_UNKNOWN_SOURCE;
		}
		p += slen;
		len -= slen;
	}
	if (len != 0)
		return rt->kind = HTTPREQ_ROUTE_UNKNOWN_SOURCE;
	if (strcmp(method, "POST") != 0)
		return rt->kind = HTTPREQ_ROUTE_METHOD;
	return rt->kind = HTTPREQ_ROUTE_HOOK;
}

const struct source_conf *
httpreq_source(const struct conf *cf, const struct httpreq_route *rt)
{
	const struct source_conf *src;

	if ((src = conf_source(cf, rt->source)) == NULL)
		return NULL;
	/* A source bound to a tenant answers only under that tenant. */
	if (rt->tenant[0] != '\0' && src->tenant != NULL &&
	    strcmp(src->tenant, "default") != 0 &&
	    strcmp(src->tenant, rt->tenant) != 0)
		return NULL;
	return src;
}

const char *
httpreq_tenant(const struct httpreq_route *rt, const struct source_conf *src)
{
	if (rt->tenant[0] != '\0')
		return rt->tenant;
	if (src != NULL && src->tenant != NULL && src->tenant[0] != '\0')
		return src->tenant;
	return "default";
}

/* Headers. */

int
httpreq_check_headers(const struct httpreq *r)
{
	const struct httpreq_header *h;
	const unsigned char *s;
	size_t j;
	int i;

	for (i = 0; i < r->nheaders; i++) {
		h = &r->headers[i];
		s = (const unsigned char *)h->name;
		for (j = 0; j < h->namelen; j++)
			if (s[j] < 0x21 || s[j] > 0x7e)
				return i;
		s = (const unsigned char *)h->value;
		for (j = 0; j < h->valuelen; j++)
			if ((s[j] < 0x20 || s[j] > 0x7e) && s[j] != '\t')
				return i;
	}
	return -1;
}

static int
in_list(const char *s, const char *const *list)
{
	for (; *list != NULL; list++)
		if (strcmp(s, *list) == 0)
			return 1;
	return 0;
}

/*
 * Framing and hop-by-hop headers describe this connection, not the hook:
 * never forwarded, even when a source lists them.  Credentials and Host are
 * left out by default; a forward_headers list may ask for them.
 */
int
httpreq_forwarded(const struct source_conf *src, const char *lname)
{
	static const char *const never[] = {
		"content-length", "content-type", "connection", "keep-alive",
		"transfer-encoding", "te", "trailer", "upgrade", "expect", NULL
	};
	static const char *const private[] = {
		"authorization", "proxy-authorization", "cookie", "x-api-key",
		"host", NULL
	};
	int i;

	if (in_list(lname, never))
		return 0;
	if (src != NULL && src->forward_headers != NULL) {
		for (i = 0; i < src->nforward_headers; i++)
			if (strcasecmp(src->forward_headers[i], lname) == 0)
				return 1;
		return 0;
	}
	if (in_list(lname, private))
		return 0;
	return strncmp(lname, "x-ankusa-", 9) != 0;
}

int
httpreq_held(const struct source_conf *src, const char *lname)
{
	int i;

	if (httpreq_forwarded(NULL, lname))
		return 1;
	if (verify_reads_header(&src->verify, lname))
		return 1;
	if (src->dedupe.enabled && src->dedupe.key.kind == KEY_HEADER &&
	    strcasecmp(src->dedupe.key.name, lname) == 0)
		return 1;
	for (i = 0; i < src->nsinks; i++)
		if (src->sinks[i].ordered &&
		    src->sinks[i].order_key.kind == KEY_HEADER &&
		    strcasecmp(src->sinks[i].order_key.name, lname) == 0)
			return 1;
	return 0;
}

void
httpreq_lower(char *s)
{
	for (; *s != '\0'; s++)
		*s = tolower((unsigned char)*s);
}

/* Lanes. */

uint64_t
httpreq_key_hash(const void *key, size_t len)
{
	unsigned char md[SHA256_LEN];
	uint64_t h = 0;
	int i;

	sha256(key, len, md);
	for (i = 0; i < 8; i++)
		h = (h << 8) | md[i];
	/* 0 means "no key" (KEY_NONE) on the wire; a real key never is. */
	return h != 0 ? h : 1;
}

/* A key that is missing (keys.h) hashes as the empty key. */
int
httpreq_lanes(const struct source_conf *src, struct keys_ctx *keys,
    struct httpreq_lane *out)
{
	const struct sink_conf *sk;
	const char *key;
	size_t keylen;
	int i, n = 0;

	for (i = 0; i < src->nsinks; i++) {
		sk = &src->sinks[i];
		if (!sk->ordered)
			continue;
		out[n].sink = i;
		if (sk->order_key.kind == KEY_NONE) {
			out[n++].hash = 0;
			continue;
		}
		if (!keys_get(keys, &sk->order_key, &key, &keylen)) {
			key = "";
			keylen = 0;
		}
		out[n++].hash = httpreq_key_hash(key, keylen);
	}
	return n;
}

/* Answers. */

static void
sb_grow(struct sbuf *b, size_t n)
{
	size_t ncap;

	if (b->len + n + 1 <= b->cap)
		return;
	ncap = b->cap ? b->cap : 128;
	while (ncap < b->len + n + 1)
		ncap *= 2;
	if ((b->p = realloc(b->p, ncap)) == NULL)
		fatal("httpreq");
	b->cap = ncap;
}

static void
sb_add(struct sbuf *b, const void *p, size_t n)
{
	sb_grow(b, n);
	memcpy(b->p + b->len, p, n);
	b->len += n;
	b->p[b->len] = '\0';
}

static void
sb_addstr(struct sbuf *b, const char *s)
{
	sb_add(b, s, strlen(s));
}

static void
sb_adduint(struct sbuf *b, uint64_t v)
{
	char d[20], *p = d + sizeof(d);

	do
		*--p = '0' + v % 10;
	while ((v /= 10) != 0);
	sb_add(b, p, d + sizeof(d) - p);
}

static void
sb_printf(struct sbuf *b, const char *fmt, ...)
{
	va_list ap;
	int n;

	va_start(ap, fmt);
	n = vsnprintf(NULL, 0, fmt, ap);
	va_end(ap);
	if (n < 0)
		fatalx("httpreq: vsnprintf");
	sb_grow(b, n);
	va_start(ap, fmt);
	vsnprintf(b->p + b->len, n + 1, fmt, ap);
	va_end(ap);
	b->len += n;
}

/* A JSON string of arbitrary bytes: anything outside printable ASCII is
 * escaped as \u00XX, so the answer is valid JSON and valid UTF-8. */
static void
sb_json_str(struct sbuf *b, const void *data, size_t n)
{
	const unsigned char *s = data;
	size_t i;

	sb_add(b, "\"", 1);
	for (i = 0; i < n; i++) {
		if (s[i] == '"' || s[i] == '\\')
			sb_printf(b, "\\%c", s[i]);
		else if (s[i] < 0x20 || s[i] > 0x7e)
			sb_printf(b, "\\u%04x", s[i]);
		else
			sb_add(b, &s[i], 1);
	}
	sb_add(b, "\"", 1);
}

static char *
sb_finish(struct sbuf *b)
{
	if (b->p == NULL) {
		sb_grow(b, 0);
		b->p[0] = '\0';
	}
	return b->p;
}

static void
answer_set(struct httpreq_answer *a, int status, char *body)
{
	memset(a, 0, sizeof(*a));
	a->status = status;
	a->body = body;
}

void
httpreq_answer_error(struct httpreq_answer *a, int status, const char *error)
{
	struct sbuf b = { NULL, 0, 0 };

	sb_addstr(&b, "{\"error\":");
	sb_json_str(&b, error, strlen(error));
	sb_addstr(&b, "}");
	answer_set(a, status, sb_finish(&b));
	a->refused = error;
}

void
httpreq_answer_reason(struct httpreq_answer *a, int status, const char *error,
    const char *reason)
{
	struct sbuf b = { NULL, 0, 0 };

	sb_addstr(&b, "{\"error\":");
	sb_json_str(&b, error, strlen(error));
	sb_addstr(&b, ",\"reason\":");
	sb_json_str(&b, reason, strlen(reason));
	sb_addstr(&b, "}");
	answer_set(a, status, sb_finish(&b));
	a->refused = error;
}

void
httpreq_answer_echo(struct httpreq_answer *a, const char *content_type,
    char *body)
{
	answer_set(a, 200, body);
	a->content_type = content_type;
	a->nosniff = 1;
}

void
httpreq_answer_verify_failed(struct httpreq_answer *a, const char *reason)
{
	httpreq_answer_reason(a, 401, "verification_failed", reason);
}

void
httpreq_answer_route(struct httpreq_answer *a, enum httpreq_route_kind k)
{
	switch (k) {
	case HTTPREQ_ROUTE_NOT_FOUND:
		httpreq_answer_error(a, 404, "not_found");
		break;
	case HTTPREQ_ROUTE_METHOD:
		httpreq_answer_error(a, 405, "method_not_allowed");
		a->allow_post = 1;
		break;
	default:
		httpreq_answer_error(a, 404, "unknown_source");
		break;
	}
}

/* 413 before or while reading the body: the connection cannot go on. */
void
httpreq_answer_too_large(struct httpreq_answer *a, uint64_t limit)
{
	struct sbuf b = { NULL, 0, 0 };

	sb_printf(&b, "{\"error\":\"payload_too_large\",\"limit\":%" PRIu64
	    "}", limit);
	answer_set(a, 413, sb_finish(&b));
	a->close = 1;
	a->refused = "payload_too_large";
}

void
httpreq_answer_invalid_header(struct httpreq_answer *a,
    const struct httpreq_header *h)
{
	struct sbuf b = { NULL, 0, 0 };

	sb_addstr(&b, "{\"error\":\"invalid_header\",\"header\":");
	sb_json_str(&b, h->name, h->namelen);
	sb_addstr(&b, "}");
	answer_set(a, 400, sb_finish(&b));
	a->refused = "invalid_header";
}

void
httpreq_answer_health(struct httpreq_answer *a, const char *role)
{
	struct sbuf b = { NULL, 0, 0 };

	sb_addstr(&b, "{\"status\":\"ok\"");
	if (role != NULL) {
		sb_addstr(&b, ",\"role\":");
		sb_json_str(&b, role, strlen(role));
	}
	sb_addstr(&b, "}");
	answer_set(a, 200, sb_finish(&b));
}

void
httpreq_answer_ready(struct httpreq_answer *a, int ready, const char *reason)
{
	struct sbuf b = { NULL, 0, 0 };

	if (ready) {
		sb_addstr(&b, "{\"status\":\"ready\"}");
		answer_set(a, 200, sb_finish(&b));
		return;
	}
	sb_addstr(&b, "{\"status\":\"not_ready\",\"reason\":");
	sb_json_str(&b, reason != NULL ? reason : "", reason != NULL ?
	    strlen(reason) : 0);
	sb_addstr(&b, "}");
	answer_set(a, 503, sb_finish(&b));
	a->retry_after = 1;
}

int
httpreq_answer_result(struct httpreq_answer *a, unsigned result,
    const char *id, uint32_t retry_after_s)
{
	struct sbuf b = { NULL, 0, 0 };
	const char *error = NULL;
	int status = 0;

	if (id == NULL)
		id = "";
	switch (result) {
	case HOOK_ACCEPTED:
	case HOOK_DUPLICATE:
		sb_addstr(&b, "{\"status\":\"accepted\",\"id\":");
		sb_json_str(&b, id, strlen(id));
		if (result == HOOK_DUPLICATE)
			sb_addstr(&b, ",\"duplicate\":true");
		sb_addstr(&b, "}");
		answer_set(a, 201, sb_finish(&b));
		return 0;
	case HOOK_QUARANTINED:
	case HOOK_FILTERED:
		sb_addstr(&b, result == HOOK_QUARANTINED ?
		    "{\"status\":\"quarantined\",\"id\":" :
		    "{\"status\":\"filtered\",\"id\":");
		sb_json_str(&b, id, strlen(id));
		sb_addstr(&b, "}");
		answer_set(a, result == HOOK_QUARANTINED ? 202 : 200,
		    sb_finish(&b));
		return 0;
	case HOOK_UNKNOWN_SOURCE:
		httpreq_answer_error(a, 404, "unknown_source");
		a->refused = NULL;	/* the master counted it */
		return 0;
	case HOOK_NOT_MASTER:
		/* A client of a replication group: the master takes it. */
		sb_addstr(&b, "{\"error\":\"not_master\",\"master\":");
		sb_json_str(&b, id, strlen(id));
		sb_addstr(&b, "}");
		answer_set(a, 503, sb_finish(&b));
		a->refused = "not_master";
		a->retry_after = 1;
		return 0;
	case HOOK_OVERLOAD:
		status = 503, error = "overload";
		break;
	case HOOK_STORE_UNAVAILABLE:
		status = 503, error = "store_unavailable";
		break;
	case HOOK_DRAINING:
		status = 503, error = "draining";
		break;
	case HOOK_RATE_LIMITED:
		status = 429, error = "rate_limited";
		break;
	case HOOK_QUARANTINE_LIMITED:
		status = 429, error = "quarantine_rate_limited";
		break;
	case HOOK_QUARANTINE_FULL:
		status = 503, error = "quarantine_full";
		break;
	default:
		return -1;
	}
	httpreq_answer_error(a, status, error);
	/* Every refusal for our own trouble says when to come back. */
	a->retry_after = retry_after_s > 0 ? retry_after_s : 1;
	return 0;
}

static const char *
reason_phrase(int status)
{
	switch (status) {
	case 200: return "OK";
	case 201: return "Created";
	case 202: return "Accepted";
	case 400: return "Bad Request";
	case 401: return "Unauthorized";
	case 403: return "Forbidden";
	case 404: return "Not Found";
	case 405: return "Method Not Allowed";
	case 408: return "Request Timeout";
	case 413: return "Content Too Large";
	case 429: return "Too Many Requests";
	case 431: return "Request Header Fields Too Large";
	case 500: return "Internal Server Error";
	case 503: return "Service Unavailable";
	default: return "Unknown";
	}
}

char *
httpreq_answer_format(const struct httpreq_answer *a, int keep_alive,
    int head, size_t *len)
{
	struct sbuf b = { NULL, 0, 0 };
	size_t blen = a->body != NULL ? strlen(a->body) : 0;

	/* Every answer passes here: copied, not formatted. */
	sb_addstr(&b, "HTTP/1.1 ");
	sb_adduint(&b, a->status);
	sb_addstr(&b, " ");
	sb_addstr(&b, reason_phrase(a->status));
	sb_addstr(&b, "\r\nContent-Type: ");
	sb_addstr(&b, a->content_type != NULL ? a->content_type :
	    "application/json");
	sb_addstr(&b, "\r\nContent-Length: ");
	sb_adduint(&b, blen);
	if (a->nosniff)
		sb_addstr(&b, "\r\nX-Content-Type-Options: nosniff");
	if (a->retry_after > 0) {
		sb_addstr(&b, "\r\nRetry-After: ");
		sb_adduint(&b, a->retry_after);
	}
	if (a->allow_post)
		sb_addstr(&b, "\r\nAllow: POST");
	sb_addstr(&b, keep_alive && !a->close ?
	    "\r\nConnection: keep-alive\r\n\r\n" :
	    "\r\nConnection: close\r\n\r\n");
	if (!head && blen > 0)
		sb_add(&b, a->body, blen);
	*len = b.len;
	return b.p;
}

void
httpreq_answer_free(struct httpreq_answer *a)
{
	free(a->body);
	a->body = NULL;
}
