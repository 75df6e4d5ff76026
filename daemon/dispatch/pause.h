/* SPDX-License-Identifier: ISC */
/*
 * pause.h: the paused sink keys, in memory (daemon/admin/admin_ops.c loads them
 * from the store at start and keeps the store in step).  A pause is per
 * (source, sink index), whatever the tenant: under a tenant_path source
 * every tenant's rows of that sink wait.  Dispatch asks pause_is for each
 * row it claims and sets a paused key's rows aside (dispatch_pause_key,
 * STORE_DUE_PAUSED).
 */
#ifndef ANKUSA_PAUSE_H
#define ANKUSA_PAUSE_H

#include <stdint.h>

#define PAUSE_MAX	4096	/* paused keys at most */

/* 1 when (source, sink) is paused. */
int	pause_is(const char *source, uint32_t sink);
/* 1 added, 0 it was paused already, -1 the set is full. */
int	pause_add(const char *source, uint32_t sink, uint64_t since_ms);
/* 1 removed, 0 it was not paused. */
int	pause_del(const char *source, uint32_t sink);
/* Paused keys (for /metrics: ankusa_dispatch_paused_keys). */
int	pause_count(void);
/* Every paused key in (source, sink) order; cb returning non-zero stops. */
void	pause_each(int (*cb)(const char *source, uint32_t sink,
	    uint64_t since_ms, void *), void *);
void	pause_clear(void);

#endif
