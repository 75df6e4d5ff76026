/* SPDX-License-Identifier: ISC */
/*
 * bucket.h: the sink keys' token buckets (a sink entry's rate, an
 * operator's override of it) and their holds (a sink's 429 or 503 with
 * Retry-After).  Pure: every call is given now (wall ms); no clock, no I/O.
 *
 * A bucket holds at most burst tokens and gains per_second of them a
 * second; a row of its key is claimed only with a token, which it spends
 * (dispatch.c).  While a hold lasts no row of the key is claimed, whatever
 * its tokens.  A key with neither a rate nor a hold has no bucket, and a
 * table without buckets costs the claim one test.
 *
 * Keys are {tenant, source, sink index}, as the sink keys' queues are
 * (sinkq.h) but for the module, which the index decides.
 */
#ifndef ANKUSA_BUCKET_H
#define ANKUSA_BUCKET_H

#include <stddef.h>
#include <stdint.h>

#define BUCKET_HASH	256

struct bucket {
	char		 tenant[65];
	char		 source[65];
	uint32_t	 sink;
	/* In force: an operator's (overridden, rateov.h), else the
	 * config's; a per_second of 0 is no rate (a bucket kept for its
	 * hold alone). */
	double		 per_second;
	uint32_t	 burst;
	int		 overridden;
	double		 tokens;	/* as of at */
	uint64_t	 at;
	uint64_t	 held_until;	/* 0: none */
	struct bucket	*next;
};

struct buckets {
	struct bucket	*tab[BUCKET_HASH];
	size_t		 n;
};

/* What a key's bucket says (dispatch_key_rate). */
struct bucket_info {
	double		 per_second;	/* 0: no rate */
	uint32_t	 burst;
	double		 tokens;
	uint64_t	 held_until;	/* 0: none, or over */
	int		 overridden;
};

/* burst 0: max(1, ceil(per_second)). */
uint32_t	 bucket_default_burst(double per_second);
/* Tokens brought to now (never past burst). */
void		 bucket_refill(struct bucket *, uint64_t now);
/* Spend a token at now: 1, or 0 when none is there or a hold lasts. */
int		 bucket_take(struct bucket *, uint64_t now);
/* When bucket_take may next succeed (>= now). */
uint64_t	 bucket_next(struct bucket *, uint64_t now);
/* No token before until (a later hold only lengthens it). */
void		 bucket_hold(struct bucket *, uint64_t until);
/* A new rate in force: the tokens stay (at most the new burst). */
void		 bucket_set_rate(struct bucket *, double per_second,
		    uint32_t burst, uint64_t now);
void		 bucket_info(struct bucket *, uint64_t now,
		    struct bucket_info *);

struct bucket	*buckets_find(struct buckets *, const char *tenant,
		    const char *source, uint32_t sink);
/* Found or made: a new bucket has no rate, no hold and no token. */
struct bucket	*buckets_get(struct buckets *, const char *tenant,
		    const char *source, uint32_t sink);
void		 buckets_remove(struct buckets *, struct bucket *);
/* Every bucket; fn may remove the one it is given. */
void		 buckets_each(struct buckets *, void (*)(struct bucket *,
		    void *), void *);
void		 buckets_clear(struct buckets *);

#endif
