/* SPDX-License-Identifier: ISC */
/*
 * series.c: the per-second counters of the last hour; see series.h.
 *
 * 3,600 slots of SERIES_N 32-bit counts and a stamp: about 150 KiB,
 * static.  A count saturates at UINT32_MAX rather than wrap (four
 * billion of anything in a second is beyond this daemon).
 */
#include "config.h"

#include <string.h>

#include "clock.h"
#include "series.h"

struct slot {
	uint64_t	 sec;		/* the wall second it counts; 0 none */
	uint32_t	 n[SERIES_N];
};

static struct slot ring[SERIES_SECONDS];

static const char *const names[SERIES_N] = {
	"ingest", "delivered", "failed", "dead", "2xx", "3xx", "4xx", "5xx",
	"no_answer"
};

const char *
series_name(enum series_kind k)
{
	return k < SERIES_N ? names[k] : "";
}

void
series_add_at(uint64_t now_s, enum series_kind k, uint32_t n)
{
	struct slot *s = &ring[now_s % SERIES_SECONDS];

	if (k >= SERIES_N || now_s == 0)
		return;
	if (s->sec != now_s) {
		memset(s, 0, sizeof(*s));
		s->sec = now_s;
	}
	s->n[k] = s->n[k] > UINT32_MAX - n ? UINT32_MAX : s->n[k] + n;
}

void
series_attempt_at(uint64_t now_s, int ok, uint32_t status)
{
	enum series_kind c;

	series_add_at(now_s, ok ? SERIES_DELIVERED : SERIES_FAILED, 1);
	if (status >= 200 && status < 300)
		c = SERIES_2XX;
	else if (status >= 300 && status < 400)
		c = SERIES_3XX;
	else if (status >= 400 && status < 500)
		c = SERIES_4XX;
	else if (status >= 500 && status < 600)
		c = SERIES_5XX;
	else
		c = SERIES_NO_ANSWER;
	series_add_at(now_s, c, 1);
}

uint32_t
series_get(uint64_t now_s, uint64_t sec, enum series_kind k)
{
	const struct slot *s = &ring[sec % SERIES_SECONDS];

	/* A second in the future, or more than the ring ago, is none. */
	if (k >= SERIES_N || sec > now_s || now_s - sec >= SERIES_SECONDS ||
	    s->sec != sec)
		return 0;
	return s->n[k];
}

json_t *
series_json(uint64_t now_s, uint32_t seconds, uint32_t step)
{
	json_t *o, *series, *a[SERIES_N];
	uint64_t first, sec, end, sum[SERIES_N];
	int k;

	if (seconds < 1 || seconds > SERIES_SECONDS)
		seconds = SERIES_SECONDS;
	if (seconds > now_s)
		seconds = (uint32_t)now_s;
	if (step < 1 || step > seconds)
		step = seconds > 0 ? seconds : 1;
	first = now_s - seconds + 1;
	if ((series = json_object()) == NULL)
		return NULL;
	for (k = 0; k < SERIES_N; k++)
		if ((a[k] = json_array()) == NULL ||
		    json_object_set_new(series, names[k], a[k]) == -1) {
			json_decref(series);
			return NULL;
		}
	/* The first step is short when step does not divide seconds, so
	 * that the last one always ends at now_s. */
	sec = first;
	end = first + (seconds % step != 0 ? seconds % step : step);
	while (seconds > 0 && sec <= now_s) {
		memset(sum, 0, sizeof(sum));
		for (; sec < end; sec++)
			for (k = 0; k < SERIES_N; k++)
				sum[k] += series_get(now_s, sec, k);
		for (k = 0; k < SERIES_N; k++)
			if (json_array_append_new(a[k],
			    json_integer((json_int_t)sum[k])) == -1) {
				json_decref(series);
				return NULL;
			}
		end = sec + step;
	}
	o = json_pack("{s:I, s:I, s:I, s:o}", "now", (json_int_t)now_s,
	    "step", (json_int_t)step, "start", (json_int_t)first, "series",
	    series);
	return o;
}

void
series_reset(void)
{
	memset(ring, 0, sizeof(ring));
}

void
series_add(enum series_kind k, uint32_t n)
{
	series_add_at(time_wall_ms() / 1000, k, n);
}

void
series_attempt(int ok, uint32_t status)
{
	series_attempt_at(time_wall_ms() / 1000, ok, status);
}
