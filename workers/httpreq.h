/* SPDX-License-Identifier: ISC */
/*
 * httpreq.h: the request logic of the edge, without I/O.
 *
 * Everything the edge decides about an ingest request lives here, so that
 * each rule of the ingest contract is a unit test and the parsers can be
 * fuzzed: the incremental request-head parser, the chunked body decoder,
 * routing a target to a source, the header-byte check, the forward-header
 * filter, lane keys and their hashes, and the HTTP answers.  Nothing here
 * reads a clock, a socket or libevent; workers/edge.c is the glue.
 *
 * Untrusted bytes are parsed here.  Every limit is enforced while bytes are
 * fed, before anything grows past it: a head over HTTPREQ_HEAD_MAX or with
 * more than HTTPREQ_HEADERS_MAX headers is refused with 431, a chunked body
 * over its cap with 413, its trailers over their bounds with 431, its
 * chunk extensions over theirs and malformed syntax with 400.
 */
#ifndef ANKUSA_HTTPREQ_H
#define ANKUSA_HTTPREQ_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "msg.h"

#define HTTPREQ_HEAD_MAX	(64 * 1024)	/* request line + headers */
#define HTTPREQ_HEADERS_MAX	100
/* Chunked bodies: extensions and trailers are read and ignored, and
 * bounded (400 past an extension bound, 431 past a trailer bound). */
#define HTTPREQ_CHUNK_LINE_MAX	4096		/* chunk size + extensions */
#define HTTPREQ_CHUNK_EXTS_MAX	16		/* extensions a size line */
#define HTTPREQ_CHUNK_EXT_TOTAL	(16 * 1024)	/* extension bytes a body */
#define HTTPREQ_TRAILERS_MAX	16		/* trailer fields */
#define HTTPREQ_TRAILER_MAX	(8 * 1024)	/* trailer bytes */

enum httpreq_status {
	HTTPREQ_MORE = 0,	/* every byte fed was used; feed more */
	HTTPREQ_DONE,		/* complete; *used says where it ended */
	HTTPREQ_ERROR,		/* refused: the error member has the status */
};

struct httpreq_header {
	char		*name;		/* as received, NUL-terminated */
	size_t		 namelen;
	char		*value;		/* OWS trimmed, NUL-terminated */
	size_t		 valuelen;	/* may hold a NUL: check the bytes */
};

/*
 * One request head.  httpreq_feed appends bytes to buf until the empty line
 * that ends the head, then parses buf in place: the strings below point
 * into it and live until httpreq_reset or httpreq_free.
 */
struct httpreq {
	char			*buf;		/* the head bytes */
	size_t			 len;
	size_t			 cap;
	size_t			 total;		/* bytes taken, with CRLFs */
	size_t			 linelen;	/* bytes since the last LF */
	int			 nlines;	/* complete non-empty lines */
	int			 error;		/* status for HTTPREQ_ERROR */

	char			*method;
	char			*target;	/* as received, with query */
	int			 minor;		/* HTTP/1.minor */
	struct httpreq_header	 headers[HTTPREQ_HEADERS_MAX];
	int			 nheaders;
	int			 has_length;	/* a Content-Length was given */
	uint64_t		 content_length;
	int			 chunked;	/* Transfer-Encoding: chunked */
	int			 keep_alive;	/* version + Connection */
	int			 expect_continue;
};

void	httpreq_init(struct httpreq *);
void	httpreq_reset(struct httpreq *);	/* for the next request */
void	httpreq_free(struct httpreq *);
/* Feed bytes that follow those fed before.  *used is how many were taken:
 * all of them on HTTPREQ_MORE, up to the end of the head on HTTPREQ_DONE
 * (the rest is body or the next request). */
enum httpreq_status httpreq_feed(struct httpreq *, const void *, size_t,
		    size_t *used);
/* The first header named name (without case), or NULL. */
const struct httpreq_header *httpreq_header(const struct httpreq *,
		    const char *name);
/* True once some bytes of a request have been fed (not just CRLFs). */
int	httpreq_started(const struct httpreq *);

/* The chunked transfer coding, decoded into out.  Chunk extensions and
 * trailers are read, counted against their bounds and ignored. */
struct httpreq_chunked {
	int		 state;
	uint64_t	 size;		/* of the chunk being read */
	size_t		 linelen;	/* bytes of the size line so far */
	int		 exts;		/* extensions in the size line so far */
	size_t		 ext_bytes;	/* extension bytes in the body so far */
	size_t		 trailer;	/* trailer bytes so far */
	int		 trailers;	/* trailer fields so far */
	int		 digits;	/* hex digits in the size line */
	uint64_t	 max;		/* body cap (http.max_body_bytes) */
	int		 error;		/* 400, 413 past max, 431 trailers */
	unsigned char	*out;		/* decoded body (caller may own it) */
	size_t		 outlen;
	size_t		 outcap;
};

void	httpreq_chunked_init(struct httpreq_chunked *, uint64_t max);
void	httpreq_chunked_free(struct httpreq_chunked *);
enum httpreq_status httpreq_chunked_feed(struct httpreq_chunked *,
		    const void *, size_t, size_t *used);

/* Routing (contract check 1): what a method and target ask for. */
enum httpreq_route_kind {
	HTTPREQ_ROUTE_HEALTH = 0,	/* GET /health */
	HTTPREQ_ROUTE_READY,		/* GET /ready */
	HTTPREQ_ROUTE_HOOK,		/* POST to a well-formed source URL */
	HTTPREQ_ROUTE_NOT_FOUND,	/* 404 not_found: outside the prefix */
	HTTPREQ_ROUTE_UNKNOWN_SOURCE,	/* 404 unknown_source: bad shape, id */
	HTTPREQ_ROUTE_METHOD,		/* 405: resolves, but not a POST */
};

struct httpreq_route {
	enum httpreq_route_kind	 kind;
	char			 tenant[CONF_ID_MAX + 1];	/* or "" */
	char			 source[CONF_ID_MAX + 1];
};

enum httpreq_route_kind httpreq_route(const struct conf *, const char *method,
		    const char *target, struct httpreq_route *);
/* Contract check 3: the source of a resolved route, or NULL for an unknown
 * source or a tenant-bound source under another tenant's URL. */
const struct source_conf *httpreq_source(const struct conf *,
		    const struct httpreq_route *);
/* The hook's tenant: the URL's, else the source's, else "default". */
const char *httpreq_tenant(const struct httpreq_route *,
		    const struct source_conf *);

/* Contract check 4: the index of the first header with a byte outside its
 * class, or -1 if all are fine. */
int	httpreq_check_headers(const struct httpreq *);
/* Whether a header (lower-case name) is forwarded for this source. */
int	httpreq_forwarded(const struct source_conf *, const char *lname);
/* Whether a header (lower-case name) is stored with a hook held in the
 * quarantine pen, to be verified again: every one but those left out of
 * forwarding by default (credentials, Host, framing, x-ankusa-*), which
 * only when the source's verification, dedupe key or a lane key reads
 * it. */
int	httpreq_held(const struct source_conf *, const char *lname);
void	httpreq_lower(char *);

/* Lanes: one per ordered sink of the source. */
struct httpreq_lane {
	uint32_t	sink;		/* index in the source's sinks */
	uint64_t	hash;		/* 0 only for order_key KEY_NONE */
};

/* The first 8 bytes of SHA-256(key), big-endian; never 0. */
uint64_t httpreq_key_hash(const void *, size_t);
struct keys_ctx;
/* Fills out (room for src->nsinks) and returns the count.  Each order_key
 * is read through keys (keys.h); no key hashes as the empty key. */
int	httpreq_lanes(const struct source_conf *, struct keys_ctx *,
	    struct httpreq_lane *out);

/* An HTTP answer, before it is formatted.  body is malloc'd JSON. */
struct httpreq_answer {
	int		 status;
	uint32_t	 retry_after;	/* seconds; 0: no Retry-After */
	int		 allow_post;	/* Allow: POST (405) */
	int		 close;		/* close the connection after it */
	char		*body;
	const char	*refused;	/* the edge refused it: the reason for
					 * ankusa_ingest_refused_total */
	const char	*content_type;	/* NULL: application/json */
	int		 nosniff;	/* X-Content-Type-Options: nosniff */
	int		 handshake;	/* a provider's handshake answered
					 * (workers/handshake.h): counted */
};

void	httpreq_answer_error(struct httpreq_answer *, int status,
	    const char *error);
void	httpreq_answer_route(struct httpreq_answer *, enum httpreq_route_kind);
void	httpreq_answer_too_large(struct httpreq_answer *, uint64_t limit);
void	httpreq_answer_invalid_header(struct httpreq_answer *,
	    const struct httpreq_header *);
/* {"error":error,"reason":reason}; error is a static string, the
 * refusal's reason for the counters. */
void	httpreq_answer_reason(struct httpreq_answer *, int status,
	    const char *error, const char *reason);
/* 200 with body (malloc'd, taken) as content_type, which a browser must
 * not sniff: what echoes a provider's bytes. */
void	httpreq_answer_echo(struct httpreq_answer *, const char *content_type,
	    char *body);
/* 401 verification_failed with the failure reason. */
void	httpreq_answer_verify_failed(struct httpreq_answer *,
	    const char *reason);
/* role: the node's in its replication group ("single", "master",
 * "client"), or NULL for none. */
void	httpreq_answer_health(struct httpreq_answer *, const char *role);
void	httpreq_answer_ready(struct httpreq_answer *, int ready,
	    const char *reason);
/* The master's word on a hook; -1 for a value outside enum hook_result. */
int	httpreq_answer_result(struct httpreq_answer *, unsigned result,
	    const char *id, uint32_t retry_after_s);
/* The whole response; malloc'd, *len bytes.  head: omit the body. */
char	*httpreq_answer_format(const struct httpreq_answer *, int keep_alive,
	    int head, size_t *len);
void	httpreq_answer_free(struct httpreq_answer *);

#endif
