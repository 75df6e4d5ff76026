/*
 * metrics.h: the master's counters, under the contracts' metric names.
 *
 * A counter is a metric name plus label pairs.  Label values that come
 * from outside the config (a tenant taken from a URL) are bounded: each
 * metric keeps at most METRICS_MAX_SERIES series, and past that the
 * remaining label values are folded into "_other".  Refused requests are
 * never labelled by source (the source may not exist).
 */
#ifndef ANKUSA_METRICS_H
#define ANKUSA_METRICS_H

#include <stdint.h>

#include <jansson.h>

#define METRICS_MAX_SERIES	1000

/* ankusa_ingest_requests_total{source_id,outcome} */
void	 metrics_ingest(const char *source, const char *outcome);
/* ankusa_ingest_refused_total{reason} */
void	 metrics_refused(const char *reason);
/* ankusa_verify_failures_total{source_id,scheme} */
void	 metrics_verify_failure(const char *source, const char *scheme);
/* ankusa_rate_limit_rejected_total{tenant_id} */
void	 metrics_rate_limited(const char *tenant);
/* Any counter: labels as "k", "v", ..., NULL. */
void	 metrics_add(const char *metric, uint64_t n, ...);
uint64_t metrics_get(const char *metric, ...);
/* Every series as {"name{k=\"v\",...}": value, ...}, sorted by name. */
json_t	*metrics_json(void);

#endif
