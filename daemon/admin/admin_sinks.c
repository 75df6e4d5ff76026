/* SPDX-License-Identifier: ISC */
/*
 * admin_sinks.c: each sink key's health; see admin_sinks.h.
 *
 * A key's pending rows are its live rows in the store less those the
 * dispatch has claimed (a claimed row is still live in the store until
 * its settle), as ankusa_queue_pending is counted.  Until the count of
 * the store's rows after the start has ended, and on a replication
 * client (whose tables change under it), a key's pending and dead are
 * unknown: null in GET /v1/sinks, no series in /metrics.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include <event2/event.h>

#include "admin_sinks.h"
#include "clock.h"
#include "dispatch/breaker.h"
#include "dispatch/dispatch.h"
#include "dispatch/pause.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "pipeline/pipeline.h"
#include "store/store.h"

#define SEED_STEP_ROWS	4096	/* rows a step of the count */
#define SEED_RETRY_MS	2000

/* The gauges of a key, cleared and set again at each scrape. */
static const char *const key_gauges[] = {
	"ankusa_sink_last_success_timestamp_seconds",
	"ankusa_sink_consecutive_failures",
	"ankusa_sink_breaker_state",
	"ankusa_sink_pending",
	"ankusa_sink_claimed",
	"ankusa_sink_dead",
};

static struct event	*seed_ev;
static uint64_t		 seed_steps, seed_busy_us;

/* A key's rows in the store: 1 with pending and dead, 0 unknown. */
static int
key_rows(const struct pipeline_sink *s, uint64_t *pending, uint64_t *dead)
{
	uint64_t live;

	if (store_keycount(env->store, s->h.source, s->h.sink, s->h.module,
	    &live, dead) == -1)
		return 0;
	*pending = live > s->claimed ? live - s->claimed : 0;
	return 1;
}

static int
breaker_gauge(enum breaker_state b)
{
	return b == BREAKER_OPEN ? 2 : b == BREAKER_HALF_OPEN ? 1 : 0;
}

static void
gauge_fn(const struct pipeline_sink *s, void *arg)
{
	const char *mod = dispatch_module_name(s->h.module);
	uint64_t pending, dead;
	char idx[16];

	snprintf(idx, sizeof(idx), "%u", s->h.sink);
#define KEY	"source_id", s->h.source, "sink", idx, "module", mod, NULL
	if (s->h.last_ok != 0)
		metrics_set("ankusa_sink_last_success_timestamp_seconds",
		    (double)s->h.last_ok / 1000, KEY);
	metrics_set("ankusa_sink_consecutive_failures", s->h.failures, KEY);
	metrics_set("ankusa_sink_breaker_state", breaker_gauge(s->breaker),
	    KEY);
	metrics_set("ankusa_sink_claimed", s->claimed, KEY);
	if (key_rows(s, &pending, &dead)) {
		metrics_set("ankusa_sink_pending", (double)pending, KEY);
		metrics_set("ankusa_sink_dead", (double)dead, KEY);
	}
#undef KEY
}

void
sinks_gauges(void)
{
	size_t i;

	/* A key the config no longer names loses its series. */
	for (i = 0; i < sizeof(key_gauges) / sizeof(key_gauges[0]); i++)
		metrics_clear(key_gauges[i]);
	pipeline_sinks(gauge_fn, NULL);
}

/* A window's figures; ratio and percentiles null without an attempt. */
static json_t *
window_json(const struct health_window *w)
{
	return json_pack("{s:I, s:o, s:o, s:o}", "attempts",
	    (json_int_t)w->attempts, "success_ratio", w->attempts ?
	    json_real(w->ratio) : json_null(), "p50_ms", w->attempts ?
	    json_real(w->p50_ms) : json_null(), "p99_ms", w->attempts ?
	    json_real(w->p99_ms) : json_null());
}

static json_t *
ms_or_null(uint64_t ms)
{
	return ms != 0 ? json_integer((json_int_t)ms) : json_null();
}

/* GET /v1/sinks's walk: the array it fills, and the keys' rates and
 * holds by "source#sink" (each an array of its tenants' buckets). */
struct sinks_walk {
	json_t	*a;
	json_t	*rates;
};

/* The rates and holds of pipeline_rates by key: one pass, so that the
 * walk's lookups are not a scan per key. */
static json_t *
rates_by_key(void)
{
	json_t *all = pipeline_rates(), *by = json_object(), *r, *list;
	char k[STORE_NAME_MAX + 16];
	size_t i;

	json_array_foreach(all, i, r) {
		snprintf(k, sizeof(k), "%s#%" JSON_INTEGER_FORMAT,
		    json_string_value(json_object_get(r, "source")),
		    json_integer_value(json_object_get(r, "sink")));
		if ((list = json_object_get(by, k)) == NULL) {
			list = json_array();
			json_object_set_new(by, k, list);
		}
		json_array_append(list, r);
	}
	json_decref(all);
	return by;
}

static void
json_fn(const struct pipeline_sink *s, void *arg)
{
	struct sinks_walk *w = arg;
	json_t *a = w->a, *rate;
	const char *reason;
	uint64_t pending, dead;
	int known = key_rows(s, &pending, &dead);
	char k[STORE_NAME_MAX + 16];

	snprintf(k, sizeof(k), "%s#%" PRIu32, s->h.source, s->h.sink);
	if ((rate = json_object_get(w->rates, k)) != NULL)
		json_incref(rate);
	else
		rate = json_array();

	json_array_append_new(a, json_pack("{s:s, s:I, s:s, s:o, s:o, s:o, "
	    "s:I, s:o, s:s, s:b, s:I, s:o, s:o, s:o}",
	    "source_id", s->h.source,
	    "sink", (json_int_t)s->h.sink,
	    "module", dispatch_module_name(s->h.module),
	    "5m", window_json(&s->h.w5),
	    "1h", window_json(&s->h.w60),
	    "pending", known ? json_integer((json_int_t)pending) : json_null(),
	    "claimed", (json_int_t)s->claimed,
	    "dead", known ? json_integer((json_int_t)dead) : json_null(),
	    "breaker", breaker_state_name(s->breaker),
	    "paused", pause_is(s->h.source, s->h.sink),
	    "consecutive_failures", (json_int_t)s->h.failures,
	    "last_success_at", ms_or_null(s->h.last_ok),
	    "last_error", s->h.last_error[0] != '\0' ?
	    json_string(s->h.last_error) : json_null(),
	    "last_error_at", ms_or_null(s->h.last_error_at)));
	/* Its tenants' token buckets and Retry-After holds (rate: and the
	 * operators' overrides), [] when it has neither. */
	json_object_set_new(json_array_get(a, json_array_size(a) - 1),
	    "rate", rate);
	/* A disabled key (disable_on, disable_after_s) is a pause with
	 * its reason: null when the key is not disabled. */
	reason = pause_reason(s->h.source, s->h.sink);
	json_object_set_new(json_array_get(a, json_array_size(a) - 1),
	    "disabled", reason != NULL && reason[0] != '\0' ?
	    json_string(reason) : json_null());
}

json_t *
sinks_json(void)
{
	struct sinks_walk w;

	w.a = json_array();
	w.rates = rates_by_key();
	pipeline_sinks(json_fn, &w);
	json_decref(w.rates);
	return json_pack("{s:o}", "sinks", w.a);
}

static void
seed_arm(uint64_t ms)
{
	struct timeval tv;

	tv.tv_sec = ms / 1000;
	tv.tv_usec = (ms % 1000) * 1000;
	evtimer_add(seed_ev, &tv);
}

/* One step of the count, the loop free between steps. */
static void
seed_cb(evutil_socket_t fd, short ev, void *arg)
{
	uint64_t t0 = time_mono_us();
	int rc;

	if (env->draining)
		return;
	rc = store_keycount_seed(env->store, SEED_STEP_ROWS);
	seed_steps++;
	seed_busy_us += time_mono_us() - t0;
	switch (rc) {
	case 0:
		seed_arm(0);
		return;
	case 1:
		log_debug("sinks: the store's rows counted by sink key: %llu "
		    "steps of %d rows, %llu us in steps",
		    (unsigned long long)seed_steps, SEED_STEP_ROWS,
		    (unsigned long long)seed_busy_us);
		return;
	}
	log_warnx("sinks: counting the store's rows by sink key: %s; again "
	    "in %d ms", store_strerror(env->store), SEED_RETRY_MS);
	seed_arm(SEED_RETRY_MS);
}

void
sinks_init(void)
{
	if ((seed_ev = evtimer_new(env->base, seed_cb, NULL)) == NULL)
		fatalx("sinks: evtimer_new");
	seed_arm(0);
}
