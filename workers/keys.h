/* SPDX-License-Identifier: ISC */
/*
 * keys.h: the keys a source reads from a request, without I/O.
 *
 * A struct keyspec (conf.h) names a key: a header, matched without case, or
 * a dot path through the JSON body's objects, where a string is the key, an
 * integer its decimal form, and anything else (float, bool, null, array,
 * object, a missing member, a body that is not a JSON object) no key.  An
 * empty string is no key either.  This is the one implementation of that
 * rule: the dedupe key (keys_dedupe) and the ordering lane keys
 * (httpreq_lanes) both read it, in the edge, and the master can read it
 * from stored headers through the same struct keys_hdrs.
 *
 * Running out of memory is fatal.
 */
#ifndef ANKUSA_KEYS_H
#define ANKUSA_KEYS_H

#include <stddef.h>

#include "conf.h"

struct httpreq;

/* A dedupe key is at most this long; a longer one is replaced by
 * "sha256:" and the lowercase hex of its SHA-256 (71 bytes). */
#define KEYS_DEDUPE_MAX		200

/*
 * A read-only view of a request's headers, for keys.c and verify.c.
 * get returns the value of the first header named name (compared without
 * case) and its length in *lenp (the value may hold NUL bytes before the
 * header check has run), or NULL if there is none.  keys_hdrs_request and
 * keys_hdrs_pairs fill it for a parsed request and for name/value pairs;
 * any other store of headers can set get, arg and n itself.
 */
struct keys_hdrs {
	const char	*(*get)(const struct keys_hdrs *, const char *name,
			    size_t *lenp);
	const void	*arg;		/* what get reads */
	int		 n;		/* a count, for get */
};

void	keys_hdrs_request(struct keys_hdrs *, const struct httpreq *);
/* Pairs with NUL-terminated names and values. */
void	keys_hdrs_pairs(struct keys_hdrs *, const struct header_kv *, int n);
/* Shorthand for h->get(h, name, lenp). */
const char *keys_header(const struct keys_hdrs *, const char *name,
	    size_t *lenp);

/* One request as the key lookups see it: each JSON lookup scans the body
 * once (workers/jscan.c), without a tree; a body found not JSON is not
 * scanned again. */
struct keys_ctx {
	const struct keys_hdrs	*hdrs;
	const void		*body;
	size_t			 bodylen;
	int			 json;		/* the body is JSON: 1, 0, or
						 * -1 not scanned yet */
	char			*str;		/* a string key with its
						 * escapes decoded */
	size_t			 strcap;
	char			 num[24];	/* an integer key in decimal */
};

void	keys_init(struct keys_ctx *, const struct keys_hdrs *,
	    const void *body, size_t bodylen);
void	keys_free(struct keys_ctx *);

/*
 * The key spec names: 1 with *keyp and *lenp set (no NUL at the end; valid
 * until the next keys_get or keys_free), or 0 for no key (KEY_NONE too).
 */
int	keys_get(struct keys_ctx *, const struct keyspec *,
	    const char **keyp, size_t *lenp);

/*
 * The source's dedupe key into out as a NUL-terminated string: the key
 * itself up to KEYS_DEDUPE_MAX bytes, else "sha256:<hex>" (a key holding a
 * NUL byte is hashed too, so the result is always a C string).  Returns its
 * length, 0 with out "" for no key (dedupe off, or the request has none),
 * or -1 if outlen is under KEYS_DEDUPE_MAX + 1.
 */
int	keys_dedupe(const struct source_conf *, struct keys_ctx *, char *out,
	    size_t outlen);

#endif
