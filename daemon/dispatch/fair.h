/* SPDX-License-Identifier: ISC */
/*
 * fair.h: the spec's "Per-tenant fairness": deficit round-robin of one
 * scan's page of dispatch.batch rows over the tenants that have work due.
 *
 * The page is split into equal shares; a tenant that claims less than its
 * share (it has less due, or its window filled) is done for this scan and
 * leaves the rest to the others, who share it again in further passes.
 * When the page runs out before a tenant was reached, that tenant goes
 * first in the next scan, so a tenant with a million due rows is one share
 * of a page, never the head of the line.  Pure: no I/O, no clock.
 */
#ifndef ANKUSA_FAIR_H
#define ANKUSA_FAIR_H

#include <stddef.h>
#include <stdint.h>

struct fair_tenant {
	const char	*name;
	void		*arg;		/* the caller's */
	int		 done;		/* took less than its share */
	int		 reached;	/* had a turn this scan */
};

/* Claim up to want rows of t; returns how many it claimed. */
typedef uint32_t (*fair_claim_fn)(struct fair_tenant *t, uint32_t want,
		    void *arg);

/*
 * Run one page over ts[0..n), which the caller has put in scan order (see
 * fair_rotate).  Returns the rows claimed.  *next gets the index of the
 * first tenant the page did not reach, or n when every tenant was reached.
 */
uint32_t fair_page(struct fair_tenant *ts, size_t n, uint32_t page,
	    fair_claim_fn, void *arg, size_t *next);

/* Index of the tenant to start at: the first whose name is >= first (the
 * one the last page did not reach), wrapping; ts must be sorted by name. */
size_t	fair_start(const struct fair_tenant *ts, size_t n, const char *first);

#endif
