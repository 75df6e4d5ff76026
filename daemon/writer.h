/* SPDX-License-Identifier: ISC */
/*
 * writer.h: the queue writer: the only code that adds hooks to the store.
 *
 * Edges' MSG_HOOK_SUBMIT frames are charged to their limits (the tenant's
 * rate limit, or the source's quarantine bucket for hooks that failed
 * verification), checked against dedupe, and wait in one open batch; a
 * batch is committed as one transaction and flushed once (group commit),
 * and only then is every edge of the batch answered.  Bounds:
 * batcher.max_queue records and batcher.max_queue_bytes bytes waiting
 * (else 503 overload), batcher.max_batch hooks per transaction,
 * batcher.max_delay_ms to gather a batch, and 15 s for a hook to start
 * committing (else 503, dropped).  A commit that has started is always
 * waited out.
 */
#ifndef ANKUSA_WRITER_H
#define ANKUSA_WRITER_H

#include <stddef.h>
#include <stdint.h>

#include "ids.h"

struct conf;
struct msg;
struct rate_limit;

void	writer_init(void);
/* Take a submitted hook from child serial.  -1 on a malformed frame (the
 * caller recycles the child). */
int	writer_submit(uint32_t serial, struct msg *);
/* Commit everything queued now (shutdown). */
void	writer_flush_all(void);
/* Answer everything queued 503 store_unavailable, committing nothing. */
void	writer_refuse_all(void);
/* The hooks waiting for a commit and their bytes, the followers of a
 * queued dedupe key included: what batcher.max_queue and
 * batcher.max_queue_bytes bound. */
size_t	writer_queued(void);
uint64_t writer_queued_bytes(void);
/* Sweep expired dedupe keys (a timer calls it; commits sweep too). */
void	writer_sweep(void);
/* The tenant's limit changed (an override set or removed): its bucket
 * starts full. */
void	writer_rate_reset(const char *tenant);

/*
 * The tenants' rate limits (writer_rate.c): the limit in force and where
 * it comes from: "override" (an operator's), "tenant"
 * (rate_limits.tenants.<t>), "default" (rate_limits.default; unset:
 * unlimited).  The overrides are set by admin_ops.c, which stores them.
 */
#define WRITER_RATE_MAX	4096	/* overrides at most */
const struct rate_limit *writer_rate_limit(const struct conf *,
	    const char *tenant, const char **from);
/* Override tenant's limit: 0, or -1 when WRITER_RATE_MAX others are set
 * (writer_rate_full says so beforehand). */
int	writer_rate_override(const char *tenant, double rate, uint32_t burst);
int	writer_rate_full(const char *tenant);
/* Remove tenant's override: 1, or 0 when it had none. */
int	writer_rate_unset(const char *tenant);
/* Remove every override (before they are read from the store). */
void	writer_rate_clear(void);
size_t	writer_rate_count(void);
/* Every override, in tenant order, until cb returns non-zero. */
void	writer_rate_each(int (*cb)(const char *tenant,
	    const struct rate_limit *, void *), void *);

/*
 * A held hook that passed re-verification: commit it as a hook with its
 * original id and drop it from the pen, in one transaction.  m is the
 * edge's MSG_QUARANTINE_VERDICT read up to and including its reason; rec
 * is the held hook, owned by the writer from now on; replay_id, unless
 * NULL, the replay job releasing it (its rows carry it).  done(arg, ok)
 * runs after the commit (ok 1) or its failure (ok 0).  -1 on a malformed
 * verdict (rec is freed, done is not called).
 */
/* Queue an operational notice (daemon/notice.c) as a hook of source
 * (the reserved one) under tenant, body the JSON the master made: 0, or
 * -1 not taken (the source has no sinks, the queue is full, draining, a
 * client of a replication group). */
int	writer_notice(const char *tenant, const char *source, const void *body,
	    size_t len);
struct store_hook_rec;
int	writer_release(struct store_hook_rec *, uint64_t pen_seq, struct msg *,
	    const unsigned char *replay_id, void (*done)(void *, int),
	    void *arg);

#endif
