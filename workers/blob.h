/* SPDX-License-Identifier: ISC */
/*
 * blob.h: the claim stores, one file per implementation (blob_local.c,
 * blob_s3.c) behind one set of verbs (blob.c): put an object whole, read
 * a byte range of one.
 *
 * Keys are relative paths of [A-Za-z0-9_.=-] segments separated by '/'
 * (what pack.h makes); any other key is refused before any I/O.
 *
 * Every call is synchronous and returns a status; on BLOB_ERROR (and on
 * BLOB_NOTFOUND and BLOB_RANGE, for logs) err holds a line saying what
 * failed, never a secret.  Nothing here is fatal except running out of
 * memory: a store that is down is a value, for the caller to map to a
 * transient outcome or a 503.
 */
#ifndef ANKUSA_BLOB_H
#define ANKUSA_BLOB_H

#include <stddef.h>
#include <stdint.h>

struct claim_store;
struct blob_store;

#define BLOB_ERR_MAX	256

enum blob_status {
	BLOB_OK = 0,
	BLOB_NOTFOUND,		/* no such object */
	BLOB_RANGE,		/* the object is shorter than the range */
	BLOB_ERROR,		/* the store failed: try again later */
};

/* Called now and then during a long transfer; nonzero aborts it. */
typedef int (*blob_abort_fn)(void);

struct blob_ops {
	const char	*name;
	int		(*open)(struct blob_store *, const struct claim_store *,
			    char *, size_t);
	enum blob_status (*put)(struct blob_store *, const char *,
			    const void *, size_t, char *, size_t);
	enum blob_status (*get)(struct blob_store *, const char *, uint64_t,
			    size_t, void *, char *, size_t);
	void		(*close)(struct blob_store *);
};

/* An open store: the implementation's state hangs off priv. */
struct blob_store {
	const struct blob_ops	*ops;
	void			*priv;
	uint64_t		 timeout_ms;	/* per request; 0: none */
	blob_abort_fn		 abort;		/* NULL: none */
};

extern const struct blob_ops blob_local_ops;
extern const struct blob_ops blob_s3_ops;

/* Open the store the options name; NULL with a reason in err. */
struct blob_store *blob_open(const struct claim_store *, char *err,
	    size_t errlen);
void	blob_close(struct blob_store *);
/* Write the object whole; it appears under key only once complete. */
enum blob_status blob_put(struct blob_store *, const char *key,
	    const void *data, size_t len, char *err, size_t errlen);
/* Exactly len bytes at off into buf; BLOB_RANGE if the object ends
 * before off + len. */
enum blob_status blob_get(struct blob_store *, const char *key,
	    uint64_t off, size_t len, void *buf, char *err, size_t errlen);
/* Is key one this module accepts? */
int	blob_valid_key(const char *key);

/* Local stores only: remove the day directories of claims/tenant=<t>/
 * older than days before now_ms (UTC dates).  The count removed, or -1
 * with err.  Other stores: 0 (a bucket lifecycle rule does it). */
int	blob_expire(struct blob_store *, const char *tenant, uint64_t now_ms,
	    uint32_t days, char *err, size_t errlen);
int	blob_local_expire(struct blob_store *, const char *tenant,
	    uint64_t now_ms, uint32_t days, char *err, size_t errlen);

#endif
