/* SPDX-License-Identifier: ISC */
/*
 * writer_rate.c: the tenants' rate limits as in force, which the writer
 * charges each verified hook against: an operator's override, else the
 * config's (rate_limits.tenants.<t>, rate_limits.default); see writer.h.
 *
 * The overrides are kept in memory here, in tenant order, at most
 * WRITER_RATE_MAX; the store keeps them (admin_ops.c writes each change
 * as a meta setting, synced, before it sets it here, and sets them all
 * here at the start).
 *
 * Fatal: out of memory.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "log.h"
#include "store/store.h"
#include "writer.h"

struct writer_rate {
	char			 tenant[STORE_NAME_MAX + 1];
	struct rate_limit	 limit;
};

static struct writer_rate	*rates;
static size_t			 nrates, caprates;

static struct writer_rate	*rate_find(const char *, size_t *);

static struct writer_rate *
rate_find(const char *tenant, size_t *at)
{
	size_t i;

	for (i = 0; i < nrates; i++)
		if (strcmp(rates[i].tenant, tenant) == 0) {
			if (at != NULL)
				*at = i;
			return &rates[i];
		}
	return NULL;
}

void
writer_rate_clear(void)
{
	nrates = 0;
}

size_t
writer_rate_count(void)
{
	return nrates;
}

int
writer_rate_full(const char *tenant)
{
	return rate_find(tenant, NULL) == NULL && nrates >= WRITER_RATE_MAX;
}

int
writer_rate_override(const char *tenant, double rate, uint32_t burst)
{
	struct writer_rate *r;
	size_t i;

	if ((r = rate_find(tenant, NULL)) == NULL) {
		if (nrates >= WRITER_RATE_MAX)
			return -1;
		if (nrates == caprates) {
			caprates = caprates ? caprates * 2 : 16;
			if ((rates = reallocarray(rates, caprates,
			    sizeof(*rates))) == NULL)
				fatal("writer");
		}
		/* In tenant order, for the listing. */
		for (i = nrates; i > 0 && strcmp(rates[i - 1].tenant,
		    tenant) > 0; i--)
			rates[i] = rates[i - 1];
		r = &rates[i];
		nrates++;
		snprintf(r->tenant, sizeof(r->tenant), "%s", tenant);
	}
	r->limit.set = 1;
	r->limit.rate = rate;
	r->limit.burst = burst;
	return 0;
}

int
writer_rate_unset(const char *tenant)
{
	size_t at;

	if (rate_find(tenant, &at) == NULL)
		return 0;
	memmove(&rates[at], &rates[at + 1], (nrates - at - 1) *
	    sizeof(*rates));
	nrates--;
	return 1;
}

const struct rate_limit *
writer_rate_limit(const struct conf *c, const char *tenant, const char **from)
{
	const struct rate_limit *rl;
	struct writer_rate *r;

	if (tenant != NULL && nrates > 0 &&
	    (r = rate_find(tenant, NULL)) != NULL) {
		if (from != NULL)
			*from = "override";
		return &r->limit;
	}
	rl = conf_rate_limit(c, tenant);
	if (from != NULL)
		*from = rl != &c->rate_default ? "tenant" : "default";
	return rl;
}

void
writer_rate_each(int (*cb)(const char *, const struct rate_limit *, void *),
    void *arg)
{
	size_t i;

	for (i = 0; i < nrates; i++)
		if (cb(rates[i].tenant, &rates[i].limit, arg) != 0)
			break;
}
