/* SPDX-License-Identifier: ISC */
/*
 * http1.h: the http sink's own HTTP/1.1 client, for plain-http URLs.
 *
 * libcurl's state machine, URL and header handling are most of a deliver
 * process's CPU per request on a kept-alive connection; this client sends
 * the same request with one sendmsg and reads the answer with a small
 * parser, for a fraction of that (docs/DEPARTURES 14 has the figures).  It is
 * used only where it can do all libcurl would: an http:// URL without
 * credentials in it, and no proxy in the environment (http_proxy,
 * all_proxy and their upper-case forms).  https, credentials and proxies
 * stay with libcurl.
 *
 * One connection per process is kept alive: to the host and port of the
 * last request, reused while the server keeps it open (HTTP/1.1 without
 * "Connection: close", or HTTP/1.0 with "keep-alive") and the answer was
 * read to its end (checked for a close by the server first when it has
 * been idle HTTP1_FRESH_MS or more).  A request on a reused connection
 * that finds it closed before any byte of the answer is sent once more on
 * a new connection, as libcurl does.  No redirects are followed.  At
 * most max_response_bytes of the body are read; past that the connection
 * is closed and the status decides.  timeout_ms bounds the whole attempt
 * (0: none); the abort watch is called at least every NETCONN_WATCH_MS
 * while waiting.
 */
#ifndef ANKUSA_HTTP1_H
#define ANKUSA_HTTP1_H

#include <stddef.h>
#include <stdint.h>

struct curl_slist;

#define HTTP1_KEEP_MAX		65536	/* body bytes an answer can keep */
#define HTTP1_VALUE_MAX		128	/* longest Retry-After kept */
#define HTTP1_HEAD_MAX		65536	/* status line and headers */
#define HTTP1_FRESH_MS		10	/* idle less: reused unchecked */

struct http1_answer {
	long		 status;
	int		 capped;	/* body cut at max_response_bytes */
	char		 retry_after[HTTP1_VALUE_MAX + 1];	/* "": none */
	size_t		 keeplen;
	/* Last, so that starting an answer clears what is before it
	 * (http1_answer_init), not 64 KiB. */
	char		 keep[HTTP1_KEEP_MAX];	/* the body's first bytes, raw
						 * (http1_set_keep's many) */
};

/* How many of an answer's body bytes are kept (attempts.capture_bytes,
 * at most HTTP1_KEEP_MAX): the process's setting, 0 at the start. */
void	http1_set_keep(size_t);
/* An answer made empty before a transfer. */
void	http1_answer_init(struct http1_answer *a);
/* Body bytes of an answer: the first http1_set_keep's go to a->keep as
 * they are (libcurl's transfers use it too); the sink cleans them before
 * they leave the process. */
void	http1_answer_body(struct http1_answer *a, const char *b, size_t n);

/* 1 when this client can send to url (http://, no user:password@, no
 * proxy configured).  The proxy variables are read once (a deliver
 * process's environment does not change) until http1_forget_env. */
int	http1_usable(const char *url);
void	http1_forget_env(void);

/* A request's header lines, "Name: value" each with its NUL, one after
 * the other in buf; a caller keeps one for its next request. */
struct http1_headers {
	char	*buf;
	size_t	 len, cap;
};
void	http1_headers_add(struct http1_headers *, const char *line);

/*
 * One request: method ("POST", "PUT", "PATCH"), the header lines of hdrs
 * ("Name: value"; a "Name:" with no value is left out, as libcurl does),
 * user_agent, and the body.  0 with the answer in a, or -1 with a
 * transport error in err (connect, send, receive, timeout, a malformed
 * answer, or the watch asked to abort), or -2 with err the egress guard's
 * "egress_denied:<address>" when it refused every address of the host
 * (workers/egress.h).
 */
int	http1_request(const char *url, const char *method,
	    const struct http1_headers *hdrs, const char *user_agent,
	    const void *body, size_t len, uint64_t timeout_ms,
	    uint64_t max_response_bytes, int (*watch)(void),
	    struct http1_answer *a, char *err, size_t errlen);
/* Close the kept-alive connection. */
void	http1_close(void);

/*
 * The answer parser, exposed for tests.  Feed it the bytes as they come;
 * it returns HTTP1_MORE until the answer is complete (HTTP1_DONE) or
 * malformed (HTTP1_BAD, with why).  An answer that ends with the
 * connection needs http1_parse_eof.  keep_alive tells, when done, whether
 * the connection may carry another request.
 */
enum http1_state { HTTP1_MORE, HTTP1_DONE, HTTP1_BAD };

struct http1_parser {
	uint64_t		 cap;		/* max body bytes read */
	struct http1_answer	*a;
	/* private */
	size_t			 headlen;
	int			 phase;
	int			 minor;		/* HTTP/1.minor */
	int			 keep_alive;
	int			 chunked;
	uint64_t		 left;		/* of a length or a chunk */
	int			 until_eof;
	uint64_t		 got;		/* body bytes */
	char			 why[128];
	/* Last: http1_parse_init clears the fields above only (a memset of
	 * the whole buffer per request showed: docs/PERFORMANCE). */
	char			 head[HTTP1_HEAD_MAX];
};

void	http1_parse_init(struct http1_parser *, struct http1_answer *,
	    uint64_t cap);
enum http1_state http1_parse(struct http1_parser *, const char *, size_t,
	    size_t *used);
enum http1_state http1_parse_eof(struct http1_parser *);
int	http1_parse_keep_alive(const struct http1_parser *);
const char *http1_parse_error(const struct http1_parser *);

#endif
