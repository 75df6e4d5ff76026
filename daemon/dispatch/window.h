/* SPDX-License-Identifier: ISC */
/*
 * window.h: the windows of the spec's "Concurrency": claimed-but-unfinished
 * rows and their stored bytes (max_inflight, max_inflight_bytes), and
 * attempts running at once (concurrency).  One window is global
 * (dispatch.*), one per tenant (dispatch.tenants.default / .<t>).  Limits
 * may be lowered while rows are claimed (reconfigure): nothing is dropped,
 * the window only refuses new work until its counts fall below.
 */
#ifndef ANKUSA_WINDOW_H
#define ANKUSA_WINDOW_H

#include <stdint.h>

struct window {
	/* limits; 0 = no limit */
	uint32_t	max_rows;
	uint64_t	max_bytes;
	uint32_t	max_running;
	/* counts */
	uint32_t	rows;
	uint64_t	bytes;
	uint32_t	running;
	int		blocked;	/* a row did not fit: full until a
					 * release */
};

void	window_set(struct window *, uint32_t max_rows, uint64_t max_bytes,
	    uint32_t max_running);
/* Rows that may still be claimed (0 when full by rows or by bytes). */
uint32_t window_room(const struct window *);
int	window_full(const struct window *);
/* Whether a row of bytes may be claimed: never past max_bytes, but an
 * empty window takes any row.  A row that does not fit blocks the window
 * (full) until the next release. */
int	window_fits(struct window *, uint64_t bytes);
void	window_claim(struct window *, uint64_t bytes);
void	window_release(struct window *, uint64_t bytes);
int	window_may_run(const struct window *);
void	window_run(struct window *);
void	window_stop(struct window *);

#endif
