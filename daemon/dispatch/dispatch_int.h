/* SPDX-License-Identifier: ISC */
/*
 * dispatch_int.h: what the scheduler's files share.  dispatch.c keeps the
 * claimed rows, the tenants, the scan, the slots and the decks;
 * dispatch_settle.c how a claimed row leaves them (an attempt's outcome,
 * a settle and its write, a park, a pause's set-aside, a batcher's
 * entries taken back).  Nothing else includes it.
 */
#ifndef ANKUSA_DISPATCH_INT_H
#define ANKUSA_DISPATCH_INT_H

#include <stddef.h>
#include <stdint.h>

#include "breaker.h"
#include "bucket.h"
#include "dispatch.h"
#include "sinkq.h"
#include "window.h"

#define DISPATCH_HASH		4096	/* claimed-row buckets */

enum drow_state {
	DROW_QUEUED = 1,	/* waiting for a slot in its key's queue */
	DROW_RUNNING,		/* an attempt runs */
	DROW_SETTLING,		/* its settle is queued for writing */
	DROW_BATCHED,		/* in a batcher, or in its request */
	DROW_CLAIMWAIT,		/* waiting for its hook's check-in */
	DROW_DECK,		/* on deck behind a running attempt */
};

struct dhold;

struct dispatch {
	const struct conf	*conf;
	struct dispatch_ops	 ops;
	struct window		 win;		/* the global window */
	uint32_t		 sink_cap;	/* dispatch.sink_concurrency */
	struct breaker_conf	 bconf;
	struct drow		*rows[DISPATCH_HASH];
	struct dtenant_list	 tenants;	/* every tenant in memory */
	struct dtenant_list	 ring;		/* tenants with queued rows */
	struct drowq		 running;
	struct drowq		 decks;		/* rows on deck */
	struct dhold		*holds;		/* sources dead_letter_source
						 * holds */
	char			 fair_first[65];	/* the tenant the last
							 * page did not reach */
	int			 stopped;
	int			 rebind;	/* the config changed since the
						 * last run */
	uint64_t		 next_job;
	struct dispatch_stats	 st;
	/* The sink keys' token buckets and holds (dispatch_rate.c); rated:
	 * some sink has a rate or some key a bucket, else a claim asks
	 * nothing of them. */
	struct buckets		 buckets;
	int			 rated;
	/* during a scan */
	uint64_t		 now;
};

/* dispatch.c: the claimed rows, the tenants, the decks. */
struct drow *dispatch_row_find(struct dispatch *, const unsigned char *key);
/* Out of the claimed rows' table; fatal if it is not in it. */
void	dispatch_row_remove(struct dispatch *, struct drow *);
/* Freed once it holds nothing: no key, no claimed row, no attempt. */
void	dispatch_tenant_maybe_free(struct dispatch *, struct dtenant *);
/* A row on deck leaves the decks (its attempt ahead no longer holds it). */
void	dispatch_deck_unlink(struct dispatch *, struct drow *);
/* Take back the decks of a key (NULL: every key) that have not started. */
void	dispatch_decks_cancel(struct dispatch *, struct dsinkq *);
/* The retry policy of the row's source, else dispatch.retry. */
const struct retry_policy *dispatch_row_policy(struct dispatch *,
	    const struct drow *);
/* A breaker of a sink of the module moved to state: told to the glue. */
void	dispatch_breaker_moved(struct dispatch *, const struct dsinkq *,
	    const char *state);

/* dispatch_rate.c: the buckets. */
/* Whether the row, due at now, may be claimed: 1, or 0 (its key has no
 * token or is held: the tenant's rate_wake is set to its next token). */
int	dispatch_rate_admit(struct dispatch *, struct dtenant *,
	    const struct store_row *);
/* The config's rates into the buckets (dispatch_reconfigure). */
void	dispatch_rate_reconfigure(struct dispatch *);
/* The sink index a row binds to as the config is now: 0, or -1 with the
 * dead-letter reason in why (dispatch_bind's rule). */
int	dispatch_bind_index(struct dispatch *, const struct store_row *,
	    uint32_t *, char *, size_t);
/* The earliest token a tenant's passed rows wait for (UINT64_MAX:
 * none). */
uint64_t dispatch_rate_next(struct dispatch *);

/* dispatch_settle.c: a claimed row leaves. */
/* Dead-letter r as reason (last_error NULL: the row's own); expired when
 * its retry policy gave it up (attempts spent, past its horizon). */
void	settle_dead(struct dispatch *, struct drow *, const char *reason,
	    const char *last_error);
void	settle_expired(struct dispatch *, struct drow *, const char *reason,
	    const char *last_error);
/* The breaker's park until then, bounded by the retry horizon. */
void	settle_park(struct dispatch *, struct drow *, uint64_t until);
/* The key's queued rows and waiting batch entries parked until until,
 * its decks taken back first (a breaker's open, a hold). */
void	settle_park_key(struct dispatch *, struct dsinkq *, uint64_t until);
/* A paused key's row, set aside until the resume. */
void	settle_set_aside(struct dispatch *, struct drow *);
/* The entries of a batcher of key q (NULL: of every key of source) that
 * no request has taken yet, taken back and each given to fn. */
void	settle_take_back(struct dispatch *, const struct dsinkq *q,
	    const char *source, void (*fn)(struct dispatch *, struct drow *,
	    void *), void *arg);

#endif
