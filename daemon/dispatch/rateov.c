/* SPDX-License-Identifier: ISC */
/*
 * rateov.c: the operators' rates of sink keys; see rateov.h.  An array
 * searched in full: overrides are few (an operator's), and rateov_get is
 * asked only when a key's bucket is made, and only when there is any.
 *
 * Fatal: out of memory.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "log.h"
#include "rateov.h"

struct rateov {
	char		 tenant[65];
	char		 source[65];
	uint32_t	 sink;
	double		 per_second;
	uint32_t	 burst;
};

static struct rateov	*ovs;
static size_t		 novs, capovs;

static struct rateov *
ov_find(const char *tenant, const char *source, uint32_t sink)
{
	size_t i;

	for (i = 0; i < novs; i++)
		if (ovs[i].sink == sink && strcmp(ovs[i].source, source) == 0 &&
		    strcmp(ovs[i].tenant, tenant) == 0)
			return &ovs[i];
	return NULL;
}

int
rateov_get(const char *tenant, const char *source, uint32_t sink,
    double *per_second, uint32_t *burst)
{
	struct rateov *o;

	if (novs == 0 || (o = ov_find(tenant, source, sink)) == NULL)
		return 0;
	*per_second = o->per_second;
	*burst = o->burst;
	return 1;
}

int
rateov_set(const char *tenant, const char *source, uint32_t sink,
    double per_second, uint32_t burst)
{
	struct rateov *o;

	if (strlen(tenant) >= sizeof(o->tenant) ||
	    strlen(source) >= sizeof(o->source))
		return -1;
	if ((o = ov_find(tenant, source, sink)) != NULL) {
		o->per_second = per_second;
		o->burst = burst;
		return 0;
	}
	if (novs >= RATEOV_MAX)
		return -1;
	if (novs == capovs) {
		capovs = capovs ? capovs * 2 : 16;
		if ((ovs = reallocarray(ovs, capovs, sizeof(*ovs))) == NULL)
			fatal("rateov");
	}
	o = &ovs[novs++];
	snprintf(o->tenant, sizeof(o->tenant), "%s", tenant);
	snprintf(o->source, sizeof(o->source), "%s", source);
	o->sink = sink;
	o->per_second = per_second;
	o->burst = burst;
	return 1;
}

int
rateov_del(const char *tenant, const char *source, uint32_t sink)
{
	struct rateov *o;

	if ((o = ov_find(tenant, source, sink)) == NULL)
		return 0;
	memmove(o, o + 1, (novs - (size_t)(o - ovs) - 1) * sizeof(*o));
	novs--;
	return 1;
}

int
rateov_count(void)
{
	return (int)novs;
}

void
rateov_each(int (*cb)(const char *, const char *, uint32_t, double,
    uint32_t, void *), void *arg)
{
	size_t i;

	for (i = 0; i < novs; i++)
		if (cb(ovs[i].tenant, ovs[i].source, ovs[i].sink,
		    ovs[i].per_second, ovs[i].burst, arg) != 0)
			break;
}

void
rateov_clear(void)
{
	free(ovs);
	ovs = NULL;
	novs = capovs = 0;
}
