/* SPDX-License-Identifier: ISC */
/*
 * metrics.h: the master's counters, gauges and histograms, under the
 * contracts' metric names, and their Prometheus text (GET /metrics).
 *
 * Every family is one line of metrics.c's table (name, type, help; the
 * buckets of a histogram).  A series is a family plus label pairs.  Using
 * a family the table does not name is a programming error: it is logged
 * and dropped, never fatal, and tests/check_metrics.c fails on any name
 * the daemon's sources use that the table lacks.
 *
 * Label values are bounded: they come from the config (source, sink
 * module, tenant), from fixed sets (outcome, result, reason, scheme; a
 * value from an edge outside its set becomes "other"), and each family
 * keeps at most METRICS_MAX_SERIES series, past which the remaining label
 * values are folded into "_other".  The ankusa_sink_* families, one
 * series a sink key the config names (and result), keep up to
 * METRICS_MAX_SINK_KEYS keys' (times the four results).  Refused
 * requests are never labelled by source (the source may not exist).
 *
 * Gauges are set by whoever knows them: metrics_set from anywhere, or a
 * reader in admin_gauges.c's table that sets them just before each scrape.
 */
#ifndef ANKUSA_METRICS_H
#define ANKUSA_METRICS_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#define METRICS_MAX_SERIES	1000
#define METRICS_MAX_SINK_KEYS	4096

enum metrics_type {
	METRICS_COUNTER = 1,
	METRICS_GAUGE,
	METRICS_HISTOGRAM,
};

/* ankusa_ingest_requests_total{source_id,outcome} */
void	 metrics_ingest(const char *source, const char *outcome);
/* n providers' handshakes an edge answered for source (outcome
 * handshake of ankusa_ingest_requests_total). */
void	 metrics_handshake(const char *source, uint32_t n);
/* ankusa_ingest_refused_total{reason} goes up by n: reason outside the
 * edge's set of refusals becomes "other". */
void	 metrics_refused(const char *reason, uint32_t n);
/* ankusa_verify_failures_total{source_id,scheme}: a scheme that is no
 * verify.type becomes "other". */
void	 metrics_verify_failure(const char *source, const char *scheme);
/* ankusa_rate_limit_rejected_total{tenant_id} */
void	 metrics_rate_limited(const char *tenant);
/* ankusa_filter_errors_total{source_id,reason}: a hook's jq filters that
 * failed (reason error) or ran past their budget (budget), as bit sets of
 * sink indexes (submit.h's tail). */
void	 metrics_filter_errors(const char *source, uint64_t errors,
	    uint64_t budget);

/* Labels below are "k", "v", ..., NULL. */
/* A counter goes up by n. */
void	 metrics_add(const char *metric, uint64_t n, ...);
/* A gauge's value. */
void	 metrics_set(const char *metric, double value, ...);
/* Remove every series of a gauge (before setting the ones that remain). */
void	 metrics_clear(const char *metric);
/* A histogram's observation, in its unit (seconds). */
void	 metrics_observe(const char *metric, double value, ...);
/* A counter's value (a histogram's count), or 0. */
uint64_t metrics_get(const char *metric, ...);
/* A gauge's value (a histogram's sum), or 0. */
double	 metrics_get_value(const char *metric, ...);

/* The type of a family of the table, or 0 when it names none. */
enum metrics_type metrics_family_type(const char *metric);
/* The i-th family's name, or NULL past the last. */
const char *metrics_family_name(size_t i);

/* The exposition (text format 0.0.4) of every family: NUL-ended, the
 * caller frees it; *len its length.  NULL when out of memory. */
char	*metrics_text(size_t *len);
/* Every series of the type as {"name{k=\"v\",...}": value, ...}; a
 * histogram's as {"count": n, "sum": s}. */
json_t	*metrics_json(enum metrics_type);

/* Forget every series (tests). */
void	 metrics_reset(void);

#endif
