/* SPDX-License-Identifier: ISC */
/*
 * metrics.c: the metric families and their series; see metrics.h.
 *
 * A series is keyed by its Prometheus text, `name{k="v",...}` with label
 * values escaped as the exposition format wants (\\ \" \n), so the key is
 * also what /metrics prints; a histogram's series prints its _bucket,
 * _sum and _count lines from that key.  Series live in one hash table
 * and, for the exposition, on their family's list.
 */
#include "config.h"

#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "conf.h"
#include "ids.h"
#include "log.h"
#include "metrics.h"

#define METRICS_BUCKETS		1024
#define METRICS_KEY_MAX		512
#define METRICS_MAX_LE		16	/* a histogram's finite buckets */
#define SINK_PREFIX		"ankusa_sink_"

/*
 * The families.  A new metric is one line here; its series then come from
 * metrics_add, metrics_set or metrics_observe.  Buckets are upper bounds
 * in seconds, increasing, ended by 0 (+Inf is implied).
 */
static const double ingest_le[] = { 0.0005, 0.001, 0.0025, 0.005, 0.01,
	0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 15, 0 };
static const double commit_le[] = { 0.0001, 0.00025, 0.0005, 0.001, 0.0025,
	0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 0 };
static const double attempt_le[] = { 0.005, 0.01, 0.025, 0.05, 0.1, 0.25,
	0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 0 };

static const struct family_def {
	const char		*name;
	enum metrics_type	 type;
	const char		*help;
	const double		*le;	/* histograms */
} defs[] = {
	/* Counters. */
	{ "ankusa_ingest_requests_total", METRICS_COUNTER,
	    "Hooks the master answered, by source and outcome (committed, "
	    "duplicate, flagged, quarantined, or why not), and providers' "
	    "handshakes an edge answered (handshake).", NULL },
	{ "ankusa_ingest_refused_total", METRICS_COUNTER,
	    "Ingest requests refused by an edge, by reason (request_timeout: "
	    "answered 408 under http.header_timeout_ms or "
	    "http.min_body_rate; conns_per_ip: connections closed at accept "
	    "under http.max_conns_per_ip; overload: http.max_buffered_bytes; "
	    "proxy_untrusted, proxy_missing: http.trusted_proxies; "
	    "tls_handshake: failed TLS handshakes; bad_handshake, "
	    "verify_token_mismatch: providers' handshakes refused); "
	    "never labelled by source.",
	    NULL },
	{ "ankusa_verify_failures_total", METRICS_COUNTER,
	    "Requests that failed verification, by source and verify.type.",
	    NULL },
	{ "ankusa_filter_errors_total", METRICS_COUNTER,
	    "Evaluations of sinks' jq filters in the edges that failed or "
	    "gave no boolean (reason error) or ran past http.jq_timeout_ms "
	    "(budget), each counted as a match, by source.", NULL },
	{ "ankusa_rate_limit_rejected_total", METRICS_COUNTER,
	    "Verified hooks refused 429 by their tenant's rate limit.", NULL },
	{ "ankusa_dispatch_deliveries_total", METRICS_COUNTER,
	    "Delivery attempts ended, by result (ok, error, permanent, "
	    "timeout) and sink module.", NULL },
	{ "ankusa_dispatch_breaker_transitions_total", METRICS_COUNTER,
	    "Circuit breaker transitions, by sink module and the state "
	    "entered.", NULL },
	{ "ankusa_dispatch_disabled_total", METRICS_COUNTER,
	    "Sink keys disabled (disable_on, disable_after_s), by source "
	    "and reason.", NULL },
	{ "ankusa_notices_total", METRICS_COUNTER,
	    "Operational notices queued for notifications.sinks, by type.",
	    NULL },
	{ "ankusa_dispatch_dead_lettered_total", METRICS_COUNTER,
	    "Delivery rows dead-lettered, by source and sink module.", NULL },
	{ "ankusa_audit_write_errors_total", METRICS_COUNTER,
	    "Audit entries that could not be stored (each is in the log).",
	    NULL },
	{ "ankusa_replay_moved_total", METRICS_COUNTER,
	    "Dead rows moved back to due by dlq replay jobs (kind dlq), "
	    "held hooks released by quarantine jobs (kind quarantine).",
	    NULL },
	{ "ankusa_dispatch_batches_total", METRICS_COUNTER,
	    "Batch requests sent to batching sinks, by sink module.", NULL },
	{ "ankusa_dispatch_batch_entries_total", METRICS_COUNTER,
	    "Entries of the batch requests, by sink module.", NULL },
	{ "ankusa_child_restarts_total", METRICS_COUNTER,
	    "Children started again after they exited or died on their "
	    "own (not killed at an attempt's deadline, not retired), by "
	    "kind.", NULL },
	{ "ankusa_console_csp_reports_total", METRICS_COUNTER,
	    "Content-Security-Policy violation reports the console's pages "
	    "sent (POST /ui/csp-report, open to all).", NULL },
	{ "ankusa_sink_attempts_total", METRICS_COUNTER,
	    "Delivery attempts ended, by sink key (source_id, sink index, "
	    "module) as the config names it and result (ok, error, "
	    "permanent, timeout).", NULL },
	/* Histograms. */
	{ "ankusa_ingest_duration_seconds", METRICS_HISTOGRAM,
	    "From a request's first line read by the edge to the master's "
	    "answer to the edge (the edge's write of the answer not "
	    "included), every hook the master answers; ms resolution.",
	    ingest_le },
	{ "ankusa_wal_commit_duration_seconds", METRICS_HISTOGRAM,
	    "One group commit of hooks: the transaction's puts, commit and "
	    "synced log flush (the dispatch turn between them excluded).",
	    commit_le },
	{ "ankusa_dispatch_attempt_duration_seconds", METRICS_HISTOGRAM,
	    "Delivery attempts from their start in a deliver process (a "
	    "batch entry: its request's) to their outcome, by sink module "
	    "and result; a timeout counts dispatch.attempt_timeout_ms.",
	    attempt_le },
	{ "ankusa_sink_attempt_duration_seconds", METRICS_HISTOGRAM,
	    "Delivery attempts from their start in a deliver process to "
	    "their outcome, by sink key (source_id, sink index, module).",
	    attempt_le },
	/* Gauges. */
	{ "ankusa_replication_role", METRICS_GAUGE,
	    "1 for this node's role in its replication group (single, "
	    "master or client).", NULL },
	{ "ankusa_replication_sites", METRICS_GAUGE,
	    "The other sites of the replication group this node knows, by "
	    "connection state (connected or disconnected).", NULL },
	{ "ankusa_replication_lag_seconds", METRICS_GAUGE,
	    "On a client: seconds since the master's last beat (a commit a "
	    "second) was applied here; up to 1 is no lag.  0 on a master.",
	    NULL },
	{ "ankusa_replication_lag_bytes", METRICS_GAUGE,
	    "How far the log of a site (label site, its replication.local) "
	    "ends behind the master's, in bytes, as the site last said (each "
	    "second): on the master each client's, on a client its own.  "
	    "None on a single node.", NULL },
	{ "ankusa_replication_elections", METRICS_GAUGE,
	    "Elections this node won since its process started.", NULL },
	{ "ankusa_replication_perm_failed", METRICS_GAUGE,
	    "Batches committed on this master that no quorum of the group "
	    "acknowledged (answered 503), since its process started.", NULL },
	{ "ankusa_replication_connections_broken", METRICS_GAUGE,
	    "Connections to other sites that broke, since the process "
	    "started.", NULL },
	{ "ankusa_replication_unknown_sites_total", METRICS_COUNTER,
	    "Sites this master removed from the replication group because "
	    "they joined without being in replication.peers, since its "
	    "process started.", NULL },
	{ "ankusa_store_hooks", METRICS_GAUGE,
	    "Hooks in the store with a row to deliver or dead-lettered (not "
	    "the delivered hooks kept).", NULL },
	{ "ankusa_archive_hooks", METRICS_GAUGE,
	    "Delivered hooks kept by retention.delivered_s.", NULL },
	{ "ankusa_archive_bytes", METRICS_GAUGE,
	    "Their bytes (records and bodies), against retention.max_bytes.",
	    NULL },
	{ "ankusa_store_deliveries", METRICS_GAUGE,
	    "Delivery rows in the store, in any state (pending + inflight + "
	    "dead).", NULL },
	{ "ankusa_queue_pending", METRICS_GAUGE,
	    "Delivery rows waiting: due, backing off, parked or behind a lane "
	    "head, not claimed.", NULL },
	{ "ankusa_queue_inflight", METRICS_GAUGE,
	    "Delivery rows claimed by dispatch and not yet settled.", NULL },
	{ "ankusa_queue_dead", METRICS_GAUGE,
	    "Dead-lettered delivery rows in the store.", NULL },
	{ "ankusa_queue_oldest_due_age_seconds", METRICS_GAUGE,
	    "How far the earliest due row is behind now (0 when none is "
	    "due): pressure's lag_ms, in seconds.", NULL },
	{ "ankusa_dispatch_running", METRICS_GAUGE,
	    "Attempts running in deliver processes.", NULL },
	{ "ankusa_dispatch_claimed", METRICS_GAUGE,
	    "Rows in the dispatch window (dispatch.max_inflight).", NULL },
	{ "ankusa_dispatch_claimed_bytes", METRICS_GAUGE,
	    "Stored hook bytes of the rows in the dispatch window "
	    "(dispatch.max_inflight_bytes).", NULL },
	{ "ankusa_dispatch_breakers_open", METRICS_GAUGE,
	    "Sink keys whose circuit breaker is open.", NULL },
	{ "ankusa_dispatch_lanes_blocked", METRICS_GAUGE,
	    "Ordered lanes blocked by their head: heads that failed an "
	    "attempt or were parked and have not been delivered or "
	    "dead-lettered, as seen since the daemon started (at most "
	    "12288).", NULL },
	{ "ankusa_tenant_pending", METRICS_GAUGE,
	    "Delivery rows with a due key (due, backing off, parked, lane "
	    "heads) per tenant, as of the last pass over the due keys "
	    "(every few seconds, in steps); lane members not included.",
	    NULL },
	{ "ankusa_children", METRICS_GAUGE,
	    "Child processes running, by kind (edge, deliver, gateway).",
	    NULL },
	{ "ankusa_disk_free_bytes", METRICS_GAUGE,
	    "Bytes free to the daemon on node.data_dir's file system.", NULL },
	{ "ankusa_queue_dead_over_warn", METRICS_GAUGE,
	    "1 while the dead letters are more than queue.dlq.warn_rows, "
	    "else 0 (0 without the key).", NULL },
	{ "ankusa_dispatch_paused_keys", METRICS_GAUGE,
	    "Sink keys (source, sink index) paused by an operator.", NULL },
	{ "ankusa_dispatch_paused", METRICS_GAUGE,
	    "1 for each paused sink key, labelled by its source and sink "
	    "index.", NULL },
	{ "ankusa_sink_last_success_timestamp_seconds", METRICS_GAUGE,
	    "When a sink key's last attempt succeeded (unix seconds), since "
	    "the daemon started; none before its first.", NULL },
	{ "ankusa_sink_consecutive_failures", METRICS_GAUGE,
	    "A sink key's failed attempts since its last success (since the "
	    "daemon started).", NULL },
	{ "ankusa_sink_breaker_state", METRICS_GAUGE,
	    "A sink key's circuit breaker: 0 closed, 1 half-open (a probe "
	    "may run), 2 open; over its tenants, the worst.", NULL },
	{ "ankusa_sink_pending", METRICS_GAUGE,
	    "A sink key's delivery rows waiting (not dead, not claimed); "
	    "none on a replication client, nor until the count after the "
	    "start has ended.", NULL },
	{ "ankusa_sink_claimed", METRICS_GAUGE,
	    "A sink key's delivery rows claimed by dispatch (in the window, "
	    "running or settling).", NULL },
	{ "ankusa_sink_dead", METRICS_GAUGE,
	    "A sink key's dead-lettered rows; as ankusa_sink_pending, none "
	    "on a replication client.", NULL },
	{ "ankusa_sandbox", METRICS_GAUGE,
	    "1 when every running child of a kind (child: edge, deliver, "
	    "gateway) has a feature of its sandbox (feature: rlimits, "
	    "no_new_privs, landlock, seccomp) in force, else 0.", NULL },
};
#define NDEFS	(sizeof(defs) / sizeof(defs[0]))

struct series {
	struct series	*next;		/* hash chain */
	struct series	*fnext;		/* its family's list */
	size_t		 fam;
	uint64_t	 count;		/* counter, histogram count */
	double		 value;		/* gauge, histogram sum */
	uint64_t	*le;		/* histogram: per finite bucket */
	char		 key[];
};

static struct series	*table[METRICS_BUCKETS];
static struct {
	struct series	*first;
	size_t		 nseries;
	int		 warned;
} fams[NDEFS];

static const char *const refused_reasons[] = {
	"not_found", "method_not_allowed", "unknown_source",
	"payload_too_large", "invalid_header", "verification_failed",
	"headers_too_large", "bad_request", "overload", "store_unavailable",
	"draining", "rate_limited", "quarantine_rate_limited",
	"quarantine_full", "not_master", "request_timeout", "conns_per_ip",
	"proxy_untrusted", "proxy_missing", "tls_handshake",
	"bad_handshake", "verify_token_mismatch",
	NULL
};

static int		 family(const char *, enum metrics_type);
static size_t		 family_max(size_t);
static int		 render(char *, size_t, const char *, int, va_list);
static struct series	*lookup(const char *, int, size_t);
static struct series	*series_va(const char *, enum metrics_type,
			    va_list, va_list);

/* The family's index, or -1 (logged once) when the table has none of
 * that name and type. */
static int
family(const char *name, enum metrics_type type)
{
	static int unknown;
	size_t i;

	for (i = 0; i < NDEFS; i++)
		if (strcmp(defs[i].name, name) == 0) {
			if (defs[i].type == type)
				return (int)i;
			if (!fams[i].warned++)
				log_warnx("metrics: %s is not a metric of "
				    "that type; dropped", name);
			return -1;
		}
	if (unknown++ < 8)
		log_warnx("metrics: %s is in no family of metrics.c's table; "
		    "dropped", name);
	return -1;
}

/* The series family f keeps before it folds: the ankusa_sink_* families
 * are labelled by the sink keys the config names (and a result of four),
 * so they hold METRICS_MAX_SINK_KEYS keys'. */
static size_t
family_max(size_t f)
{
	if (strncmp(defs[f].name, SINK_PREFIX, strlen(SINK_PREFIX)) == 0)
		return (size_t)METRICS_MAX_SINK_KEYS * 4;
	return METRICS_MAX_SERIES;
}

enum metrics_type
metrics_family_type(const char *name)
{
	size_t i;

	for (i = 0; i < NDEFS; i++)
		if (strcmp(defs[i].name, name) == 0)
			return defs[i].type;
	return 0;
}

const char *
metrics_family_name(size_t i)
{
	return i < NDEFS ? defs[i].name : NULL;
}

/* Append s to buf at *n, counting what does not fit. */
static void
put(char *buf, size_t sz, size_t *n, const char *s)
{
	size_t len = strlen(s);

	if (*n < sz)
		memcpy(buf + *n, s, *n + len < sz ? len : sz - *n);
	*n += len;
}

/* Render name{labels}; with fold, every label value becomes _other.  Runs
 * for every counted event, so it copies rather than formats. */
static int
render(char *buf, size_t sz, const char *metric, int fold, va_list ap)
{
	const char *k, *v;
	size_t n = 0;
	int first = 1;

	put(buf, sz, &n, metric);
	while ((k = va_arg(ap, const char *)) != NULL) {
		v = va_arg(ap, const char *);
		if (fold)
			v = "_other";
		if (v == NULL)
			v = "";
		put(buf, sz, &n, first ? "{" : ",");
		put(buf, sz, &n, k);
		put(buf, sz, &n, "=\"");
		first = 0;
		for (; *v != '\0' && n + 4 < sz; v++) {
			if (*v == '\\' || *v == '"')
				buf[n++] = '\\';
			if (*v == '\n') {
				buf[n++] = '\\';
				buf[n++] = 'n';
				continue;
			}
			buf[n++] = *v;
		}
		put(buf, sz, &n, "\"");
	}
	if (!first)
		put(buf, sz, &n, "}");
	if (n >= sz)
		return -1;
	buf[n] = '\0';
	return 0;
}

/* The series of key; with create, made (of family fam) when missing. */
static struct series *
lookup(const char *key, int create, size_t fam)
{
	struct series *s;
	size_t len = strlen(key);
	size_t b = ids_fnv1a(IDS_FNV_INIT, key, len) % METRICS_BUCKETS;
	size_t nle = 0;

	for (s = table[b]; s != NULL; s = s->next)
		if (strcmp(s->key, key) == 0)
			return s;
	if (!create)
		return NULL;
	if ((s = calloc(1, sizeof(*s) + len + 1)) == NULL)
		fatal("metrics");
	memcpy(s->key, key, len + 1);
	s->fam = fam;
	if (defs[fam].type == METRICS_HISTOGRAM) {
		while (defs[fam].le[nle] != 0)
			nle++;
		if ((s->le = calloc(nle, sizeof(*s->le))) == NULL)
			fatal("metrics");
	}
	s->next = table[b];
	table[b] = s;
	s->fnext = fams[fam].first;
	fams[fam].first = s;
	return s;
}

/* The series of metric and its labels (ap; again a copy of it for a
 * second pass), made when missing; NULL when the metric is not one of
 * that type or its series cannot be named. */
static struct series *
series_va(const char *metric, enum metrics_type type, va_list ap,
    va_list again)
{
	char key[METRICS_KEY_MAX];
	struct series *s;
	int f;

	if ((f = family(metric, type)) == -1)
		return NULL;
	if (render(key, sizeof(key), metric, 0, ap) == -1) {
		log_warnx("metrics: series of %s too long, dropped", metric);
		return NULL;
	}
	if ((s = lookup(key, 0, 0)) != NULL)
		return s;
	if (fams[f].nseries >= family_max((size_t)f)) {
		/* The cap: past it every new label set is one series. */
		render(key, sizeof(key), metric, 1, again);
		if ((s = lookup(key, 0, 0)) != NULL)
			return s;
	}
	fams[f].nseries++;
	return lookup(key, 1, (size_t)f);
}

void
metrics_add(const char *metric, uint64_t n, ...)
{
	struct series *s;
	va_list ap, again;

	va_start(ap, n);
	va_start(again, n);
	s = series_va(metric, METRICS_COUNTER, ap, again);
	va_end(again);
	va_end(ap);
	if (s != NULL)
		s->count += n;
}

void
metrics_set(const char *metric, double value, ...)
{
	struct series *s;
	va_list ap, again;

	va_start(ap, value);
	va_start(again, value);
	s = series_va(metric, METRICS_GAUGE, ap, again);
	va_end(again);
	va_end(ap);
	if (s != NULL)
		s->value = value;
}

void
metrics_observe(const char *metric, double value, ...)
{
	struct series *s;
	const double *le;
	va_list ap, again;
	size_t i;

	va_start(ap, value);
	va_start(again, value);
	s = series_va(metric, METRICS_HISTOGRAM, ap, again);
	va_end(again);
	va_end(ap);
	if (s == NULL)
		return;
	if (!(value >= 0))	/* NaN too */
		value = 0;
	le = defs[s->fam].le;
	/* Buckets are kept apart, cumulated when printed. */
	for (i = 0; le[i] != 0; i++)
		if (value <= le[i]) {
			s->le[i]++;
			break;
		}
	s->count++;
	s->value += value;
}

/* Unlink and free every series of family f. */
static void
family_free(size_t f)
{
	struct series *s, **pp;
	size_t b;

	while ((s = fams[f].first) != NULL) {
		fams[f].first = s->fnext;
		b = ids_fnv1a(IDS_FNV_INIT, s->key, strlen(s->key)) %
		    METRICS_BUCKETS;
		for (pp = &table[b]; *pp != s; pp = &(*pp)->next)
			;
		*pp = s->next;
		free(s->le);
		free(s);
	}
	fams[f].nseries = 0;
}

void
metrics_clear(const char *metric)
{
	int f;

	if ((f = family(metric, METRICS_GAUGE)) != -1)
		family_free((size_t)f);
}

void
metrics_reset(void)
{
	size_t f;

	for (f = 0; f < NDEFS; f++) {
		family_free(f);
		fams[f].warned = 0;
	}
}

static struct series *
get_va(const char *metric, va_list ap)
{
	char key[METRICS_KEY_MAX];

	if (render(key, sizeof(key), metric, 0, ap) == -1)
		return NULL;
	return lookup(key, 0, 0);
}

uint64_t
metrics_get(const char *metric, ...)
{
	struct series *s;
	va_list ap;

	va_start(ap, metric);
	s = get_va(metric, ap);
	va_end(ap);
	return s != NULL ? s->count : 0;
}

double
metrics_get_value(const char *metric, ...)
{
	struct series *s;
	va_list ap;

	va_start(ap, metric);
	s = get_va(metric, ap);
	va_end(ap);
	return s != NULL ? s->value : 0;
}

void
metrics_ingest(const char *source, const char *outcome)
{
	metrics_add("ankusa_ingest_requests_total", 1, "source_id", source,
	    "outcome", outcome, NULL);
}

void
metrics_handshake(const char *source, uint32_t n)
{
	metrics_add("ankusa_ingest_requests_total", n, "source_id", source,
	    "outcome", "handshake", NULL);
}

void
metrics_refused(const char *reason, uint32_t n)
{
	int i;

	/* The reason comes from an edge: only the refusals it makes. */
	for (i = 0; refused_reasons[i] != NULL; i++)
		if (strcmp(refused_reasons[i], reason) == 0)
			break;
	metrics_add("ankusa_ingest_refused_total", n, "reason",
	    refused_reasons[i] != NULL ? refused_reasons[i] : "other", NULL);
}

void
metrics_verify_failure(const char *source, const char *scheme)
{
	const char *name = "other";
	int t;

	for (t = VERIFY_NONE; t <= VERIFY_TYPE_LAST; t++)
		if (strcmp(conf_verify_type_name(t), scheme) == 0) {
			name = conf_verify_type_name(t);
			break;
		}
	metrics_add("ankusa_verify_failures_total", 1, "source_id", source,
	    "scheme", name, NULL);
}

void
metrics_filter_errors(const char *source, uint64_t errors, uint64_t budget)
{
	int ne = __builtin_popcountll(errors);
	int nb = __builtin_popcountll(budget);

	if (ne > 0)
		metrics_add("ankusa_filter_errors_total", ne, "source_id",
		    source, "reason", "error", NULL);
	if (nb > 0)
		metrics_add("ankusa_filter_errors_total", nb, "source_id",
		    source, "reason", "budget", NULL);
}

void
metrics_rate_limited(const char *tenant)
{
	metrics_add("ankusa_rate_limit_rejected_total", 1, "tenant_id",
	    tenant, NULL);
}

/*
 * The exposition.
 */

struct out {
	char	*buf;
	size_t	 len, cap;
	int	 oom;
};

static void
out_add(struct out *o, const char *s, size_t n)
{
	char *nb;
	size_t cap;

	if (o->oom)
		return;
	if (o->len + n + 1 > o->cap) {
		cap = o->cap ? o->cap : 16384;
		while (o->len + n + 1 > cap)
			cap *= 2;
		if ((nb = realloc(o->buf, cap)) == NULL) {
			o->oom = 1;
			return;
		}
		o->buf = nb;
		o->cap = cap;
	}
	memcpy(o->buf + o->len, s, n);
	o->len += n;
	o->buf[o->len] = '\0';
}

static void
out_str(struct out *o, const char *s)
{
	out_add(o, s, strlen(s));
}

/* Whether v is a whole number a double holds exactly. */
static int
integral(double v)
{
	return v > -9007199254740992.0 && v < 9007199254740992.0 &&
	    (double)(int64_t)v == v;
}

/* A sample's value: integers as such, else enough digits to round-trip
 * a double. */
static void
out_num(struct out *o, double v)
{
	char b[64];

	if (isnan(v))
		snprintf(b, sizeof(b), "NaN");
	else if (isinf(v))
		snprintf(b, sizeof(b), v > 0 ? "+Inf" : "-Inf");
	else if (integral(v))
		snprintf(b, sizeof(b), "%.0f", v);
	else
		snprintf(b, sizeof(b), "%.17g", v);
	out_str(o, b);
}

static void
out_u64(struct out *o, uint64_t v)
{
	char b[32];

	snprintf(b, sizeof(b), "%llu", (unsigned long long)v);
	out_str(o, b);
}

/* HELP text escaped as the format wants (\\ and \n). */
static void
out_help(struct out *o, const char *s)
{
	for (; *s != '\0'; s++) {
		if (*s == '\\')
			out_str(o, "\\\\");
		else if (*s == '\n')
			out_str(o, "\\n");
		else
			out_add(o, s, 1);
	}
}

/* name + suffix + the key's labels, plus le="..." when le is not NULL. */
static void
out_name(struct out *o, const struct series *s, const char *suffix,
    const char *le)
{
	const char *name = defs[s->fam].name;
	const char *labels = s->key + strlen(name);	/* "" or "{...}" */
	size_t ll = strlen(labels);

	out_str(o, name);
	out_str(o, suffix);
	if (le == NULL) {
		out_str(o, labels);
		return;
	}
	if (ll > 0) {
		out_add(o, labels, ll - 1);
		out_str(o, ",");
	} else
		out_str(o, "{");
	out_str(o, "le=\"");
	out_str(o, le);
	out_str(o, "\"}");
}

static void
out_histogram(struct out *o, const struct series *s)
{
	const double *le = defs[s->fam].le;
	uint64_t cum = 0;
	char b[32];
	size_t i;

	for (i = 0; le[i] != 0; i++) {
		cum += s->le[i];
		snprintf(b, sizeof(b), "%g", le[i]);
		out_name(o, s, "_bucket", b);
		out_str(o, " ");
		out_u64(o, cum);
		out_str(o, "\n");
	}
	out_name(o, s, "_bucket", "+Inf");
	out_str(o, " ");
	out_u64(o, s->count);
	out_str(o, "\n");
	out_name(o, s, "_sum", NULL);
	out_str(o, " ");
	out_num(o, s->value);
	out_str(o, "\n");
	out_name(o, s, "_count", NULL);
	out_str(o, " ");
	out_u64(o, s->count);
	out_str(o, "\n");
}

char *
metrics_text(size_t *len)
{
	static const char *const tnames[] = { "", "counter", "gauge",
	    "histogram" };
	struct out o;
	struct series *s;
	size_t f;

	memset(&o, 0, sizeof(o));
	for (f = 0; f < NDEFS; f++) {
		out_str(&o, "# HELP ");
		out_str(&o, defs[f].name);
		out_str(&o, " ");
		out_help(&o, defs[f].help);
		out_str(&o, "\n# TYPE ");
		out_str(&o, defs[f].name);
		out_str(&o, " ");
		out_str(&o, tnames[defs[f].type]);
		out_str(&o, "\n");
		for (s = fams[f].first; s != NULL; s = s->fnext) {
			if (defs[f].type == METRICS_HISTOGRAM) {
				out_histogram(&o, s);
				continue;
			}
			out_str(&o, s->key);
			out_str(&o, " ");
			if (defs[f].type == METRICS_COUNTER)
				out_u64(&o, s->count);
			else
				out_num(&o, s->value);
			out_str(&o, "\n");
		}
	}
	if (o.oom) {
		free(o.buf);
		return NULL;
	}
	*len = o.len;
	return o.buf;
}

json_t *
metrics_json(enum metrics_type type)
{
	json_t *o = json_object(), *v;
	struct series *s;
	size_t f;

	for (f = 0; f < NDEFS; f++) {
		if (defs[f].type != type)
			continue;
		for (s = fams[f].first; s != NULL; s = s->fnext) {
			if (type == METRICS_COUNTER)
				v = json_integer((json_int_t)s->count);
			else if (type == METRICS_GAUGE)
				v = integral(s->value) ?
				    json_integer((json_int_t)s->value) :
				    json_real(s->value);
			else
				v = json_pack("{s:I, s:f}", "count",
				    (json_int_t)s->count, "sum", s->value);
			json_object_set_new(o, s->key, v);
		}
	}
	return o;
}
