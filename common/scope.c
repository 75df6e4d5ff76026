/* SPDX-License-Identifier: ISC */
/*
 * scope.c: the admin API's scope names and sets; see scope.h.
 */
#include "config.h"

#include <string.h>

#include "scope.h"

/* Indexed by enum scope. */
static const char *const scope_names[SCOPE_N] = {
	"",
	"config:read",
	"hooks:read",
	"hooks:read_body",
	"hooks:write",
	"dlq:read",
	"dlq:write",
	"replays:read",
	"replays:write",
	"quarantine:read",
	"quarantine:write",
	"rate_limits:read",
	"rate_limits:write",
	"sinks:write",
	"sources:write",
	"backup:write",
	"audit:read",
	"metrics:read",
};

const char *
scope_name(enum scope s)
{
	return s >= 0 && s < SCOPE_N ? scope_names[s] : "";
}

uint32_t
scope_parse(const char *name)
{
	int s;

	if (strcmp(name, "*") == 0)
		return SCOPE_ALL;
	for (s = SCOPE_NONE + 1; s < SCOPE_N; s++)
		if (strcmp(name, scope_names[s]) == 0)
			return SCOPE_BIT(s);
	return 0;
}

int
scope_has(uint32_t set, enum scope s)
{
	if (s == SCOPE_NONE)
		return 1;
	return s > SCOPE_NONE && s < SCOPE_N && (set & SCOPE_BIT(s)) != 0;
}
