/* SPDX-License-Identifier: ISC */
/*
 * window.c: claim and run windows; see window.h.
 */
#include "config.h"

#include "log.h"
#include "window.h"

void
window_set(struct window *w, uint32_t max_rows, uint64_t max_bytes,
    uint32_t max_running)
{
	w->max_rows = max_rows;
	w->max_bytes = max_bytes;
	w->max_running = max_running;
	w->blocked = 0;
}

int
window_full(const struct window *w)
{
	return w->blocked || (w->max_rows != 0 && w->rows >= w->max_rows) ||
	    (w->max_bytes != 0 && w->bytes >= w->max_bytes);
}

int
window_fits(struct window *w, uint64_t bytes)
{
	if (window_full(w))
		return 0;
	if (w->max_bytes != 0 && w->rows != 0 &&
	    w->bytes + bytes > w->max_bytes) {
		w->blocked = 1;
		return 0;
	}
	return 1;
}

uint32_t
window_room(const struct window *w)
{
	if (window_full(w))
		return 0;
	if (w->max_rows == 0)
		return UINT32_MAX;
	return w->max_rows - w->rows;
}

void
window_claim(struct window *w, uint64_t bytes)
{
	w->rows++;
	w->bytes += bytes;
}

void
window_release(struct window *w, uint64_t bytes)
{
	if (w->rows == 0 || w->bytes < bytes)
		fatalx("window: release of %llu bytes with %u rows, %llu "
		    "bytes claimed", (unsigned long long)bytes, w->rows,
		    (unsigned long long)w->bytes);
	w->rows--;
	w->bytes -= bytes;
	w->blocked = 0;
}

int
window_may_run(const struct window *w)
{
	return w->max_running == 0 || w->running < w->max_running;
}

void
window_run(struct window *w)
{
	w->running++;
}

void
window_stop(struct window *w)
{
	if (w->running == 0)
		fatalx("window: stop with nothing running");
	w->running--;
}
