/* SPDX-License-Identifier: ISC */
/*
 * scope.h: the admin API's scopes, resource:action, as admin.tokens
 * grant them and the route tables ask for them.
 *
 * A set of scopes is a bit mask; "*" is every bit, those of scopes a
 * later release adds too, so a token that had "*" keeps every right.
 */
#ifndef ANKUSA_SCOPE_H
#define ANKUSA_SCOPE_H

#include <stdint.h>

enum scope {
	SCOPE_NONE = 0,		/* a route anyone may call */
	SCOPE_CONFIG_READ,
	SCOPE_HOOKS_READ,
	SCOPE_HOOKS_READ_BODY,
	SCOPE_HOOKS_WRITE,
	SCOPE_DLQ_READ,
	SCOPE_DLQ_WRITE,
	SCOPE_REPLAYS_READ,
	SCOPE_REPLAYS_WRITE,
	SCOPE_QUARANTINE_READ,
	SCOPE_QUARANTINE_WRITE,
	SCOPE_RATE_LIMITS_READ,
	SCOPE_RATE_LIMITS_WRITE,
	SCOPE_SINKS_WRITE,
	SCOPE_SOURCES_WRITE,
	SCOPE_BACKUP_WRITE,
	SCOPE_AUDIT_READ,
	SCOPE_METRICS_READ,
	SCOPE_N
};

#define SCOPE_ALL	UINT32_MAX	/* "*" */
#define SCOPE_BIT(s)	((uint32_t)1 << (s))

/* The name of s ("dlq:write"); "" for SCOPE_NONE. */
const char	*scope_name(enum scope);
/* The bits a scope name grants ("*": SCOPE_ALL); 0 for an unknown one. */
uint32_t	 scope_parse(const char *);
/* 1 when the set grants s (any set grants SCOPE_NONE). */
int		 scope_has(uint32_t set, enum scope);

#endif
