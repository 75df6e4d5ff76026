/* SPDX-License-Identifier: ISC */
/*
 * fair.c: deficit round-robin over tenants; see fair.h.
 *
 * Arithmetic of one pass: with p rows left in the page and k tenants not
 * done, each gets share = max(1, p / k), in order.  When p < k the share is
 * 1 and the page ends inside the pass, at the first tenant not reached.
 */
#include "config.h"

#include <string.h>

#include "fair.h"

uint32_t
fair_page(struct fair_tenant *ts, size_t n, uint32_t page,
    fair_claim_fn claim, void *arg, size_t *next)
{
	uint32_t left = page, share, got, active;
	size_t i;

	*next = n;
	for (i = 0; i < n; i++) {
		ts[i].done = 0;
		ts[i].reached = 0;
	}
	for (;;) {
		active = 0;
		for (i = 0; i < n; i++)
			if (!ts[i].done)
				active++;
		if (active == 0 || left == 0)
			break;
		share = left / active;
		if (share == 0)
			share = 1;
		for (i = 0; i < n && left > 0; i++) {
			if (ts[i].done)
				continue;
			if (share > left)
				share = left;
			got = claim(&ts[i], share, arg);
			ts[i].reached = 1;
			if (got > share)
				got = share;
			left -= got;
			if (got < share)
				ts[i].done = 1;
		}
		if (left == 0) {
			/* The first tenant this last pass did not reach goes
			 * first next time; i is where the pass stopped (an
			 * earlier pass reaching it does not count, else the
			 * first tenants take every remainder). */
			for (; i < n; i++)
				if (!ts[i].done) {
					*next = i;
					break;
				}
			break;
		}
	}
	return page - left;
}

size_t
fair_start(const struct fair_tenant *ts, size_t n, const char *first)
{
	size_t i;

	if (first == NULL || first[0] == '\0')
		return 0;
	for (i = 0; i < n; i++)
		if (strcmp(ts[i].name, first) >= 0)
			return i;
	return 0;
}
