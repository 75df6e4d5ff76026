/* SPDX-License-Identifier: ISC */
/*
 * pause.h: the paused sink keys, in memory (daemon/admin/admin_ops.c loads them
 * from the store at start and keeps the store in step).  A pause is per
 * (source, sink index), whatever the tenant: under a tenant_path source
 * every tenant's rows of that sink wait.  Dispatch asks pause_is for each
 * row it claims and sets a paused key's rows aside (dispatch_pause_key,
 * STORE_DUE_PAUSED).  A key disabled (its sink's disable_on or
 * disable_after_s, daemon/admin/admin_ops.c's ops_disable) is a pause with
 * a reason; an operator's has none.
 */
#ifndef ANKUSA_PAUSE_H
#define ANKUSA_PAUSE_H

#include <stdint.h>

#define PAUSE_MAX	4096	/* paused keys at most */
#define PAUSE_REASON_MAX 63	/* bytes of a disable's reason */

/* 1 when (source, sink) is paused. */
int	pause_is(const char *source, uint32_t sink);
/* 1 added, 0 it was paused already, -1 the set is full.  reason: NULL
 * or "" an operator's pause, else why the key was disabled (cut to
 * PAUSE_REASON_MAX bytes). */
int	pause_add(const char *source, uint32_t sink, uint64_t since_ms,
	    const char *reason);
/* Why (source, sink) was disabled: "" paused by an operator, NULL not
 * paused. */
const char *pause_reason(const char *source, uint32_t sink);
/* 1 removed, 0 it was not paused. */
int	pause_del(const char *source, uint32_t sink);
/* Paused keys (for /metrics: ankusa_dispatch_paused_keys). */
int	pause_count(void);
/* Every paused key in (source, sink) order; cb returning non-zero stops. */
void	pause_each(int (*cb)(const char *source, uint32_t sink,
	    uint64_t since_ms, void *), void *);
void	pause_clear(void);

#endif
