/* SPDX-License-Identifier: ISC */
/*
 * rateov.h: the operators' rates of sink keys, in place of their sinks'
 * rate (PUT /v1/tenants/{t}/sources/{s}/sinks/{i}/rate), in memory
 * (daemon/admin/admin_ops.c loads them from the store at start and keeps
 * the store in step, as it does the pauses).  Dispatch asks rateov_get
 * when it makes a key's bucket (dispatch_rate.c), and only while there is
 * any.
 */
#ifndef ANKUSA_RATEOV_H
#define ANKUSA_RATEOV_H

#include <stdint.h>

#define RATEOV_MAX	4096	/* overrides at most */

/* 1 and the override's rate, or 0 when the key has none. */
int	rateov_get(const char *tenant, const char *source, uint32_t sink,
	    double *per_second, uint32_t *burst);
/* 1 added, 0 replaced, -1 the set is full or a name too long. */
int	rateov_set(const char *tenant, const char *source, uint32_t sink,
	    double per_second, uint32_t burst);
/* 1 removed, 0 there was none. */
int	rateov_del(const char *tenant, const char *source, uint32_t sink);
int	rateov_count(void);
/* Every override, in the order they were made; cb non-zero stops. */
void	rateov_each(int (*cb)(const char *tenant, const char *source,
	    uint32_t sink, double per_second, uint32_t burst, void *), void *);
void	rateov_clear(void);

#endif
