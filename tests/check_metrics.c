/* SPDX-License-Identifier: ISC */
/*
 * check_metrics.c: the metric families and their exposition (metrics.c),
 * and that every family the daemon's sources name is in the table.
 */
#include "config.h"

#include <check.h>
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "admin_gauges.h"
#include "metrics.h"

/* The exposition, with the caller freeing it. */
static char *
text(void)
{
	size_t len;
	char *t = metrics_text(&len);

	ck_assert_ptr_nonnull(t);
	ck_assert_uint_eq(strlen(t), len);
	return t;
}

/* Whether line (whole) is in t. */
static int
has_line(const char *t, const char *line)
{
	size_t n = strlen(line);
	const char *p = t;

	while ((p = strstr(p, line)) != NULL) {
		if ((p == t || p[-1] == '\n') && p[n] == '\n')
			return 1;
		p += n;
	}
	return 0;
}

START_TEST(test_help_type_every_family)
{
	char line[256], *t;
	const char *name;
	size_t i;
	static const char *const tn[] = { "", "counter", "gauge", "histogram" };

	metrics_reset();
	t = text();
	for (i = 0; (name = metrics_family_name(i)) != NULL; i++) {
		snprintf(line, sizeof(line), "# TYPE %s %s", name,
		    tn[metrics_family_type(name)]);
		ck_assert_msg(has_line(t, line), "no %s", line);
		snprintf(line, sizeof(line), "# HELP %s ", name);
		ck_assert_msg(strstr(t, line) != NULL, "no HELP of %s", name);
	}
	ck_assert_uint_ge(i, 24);
	free(t);
}
END_TEST

START_TEST(test_counter_escaping)
{
	char *t;

	metrics_reset();
	metrics_ingest("a\"b\\c\nd", "committed");
	metrics_ingest("a\"b\\c\nd", "committed");
	t = text();
	ck_assert_msg(has_line(t, "ankusa_ingest_requests_total{source_id="
	    "\"a\\\"b\\\\c\\nd\",outcome=\"committed\"} 2"), "%s", t);
	ck_assert_uint_eq(metrics_get("ankusa_ingest_requests_total",
	    "source_id", "a\"b\\c\nd", "outcome", "committed", NULL), 2);
	free(t);
}
END_TEST

START_TEST(test_gauge_set_clear)
{
	char *t;

	metrics_reset();
	metrics_set("ankusa_tenant_pending", 3, "tenant", "acme", NULL);
	metrics_set("ankusa_tenant_pending", 4, "tenant", "acme", NULL);
	metrics_set("ankusa_queue_oldest_due_age_seconds", 1.5, NULL);
	metrics_set("ankusa_disk_free_bytes", 1099511627776.0, NULL);
	t = text();
	ck_assert(has_line(t, "ankusa_tenant_pending{tenant=\"acme\"} 4"));
	ck_assert(has_line(t, "ankusa_queue_oldest_due_age_seconds 1.5"));
	ck_assert(has_line(t, "ankusa_disk_free_bytes 1099511627776"));
	free(t);
	metrics_clear("ankusa_tenant_pending");
	t = text();
	ck_assert(strstr(t, "ankusa_tenant_pending{") == NULL);
	free(t);
	metrics_set("ankusa_tenant_pending", 1, "tenant", "b", NULL);
	ck_assert(metrics_get_value("ankusa_tenant_pending", "tenant", "b",
	    NULL) == 1);
}
END_TEST

START_TEST(test_histogram_lines)
{
	char *t;

	metrics_reset();
	metrics_observe("ankusa_dispatch_attempt_duration_seconds", 0.004,
	    "sink", "http", "result", "ok", NULL);
	metrics_observe("ankusa_dispatch_attempt_duration_seconds", 0.2,
	    "sink", "http", "result", "ok", NULL);
	metrics_observe("ankusa_dispatch_attempt_duration_seconds", 1000,
	    "sink", "http", "result", "ok", NULL);
	metrics_observe("ankusa_wal_commit_duration_seconds", 0.0003, NULL);
	t = text();
	ck_assert_msg(has_line(t, "ankusa_dispatch_attempt_duration_seconds_"
	    "bucket{sink=\"http\",result=\"ok\",le=\"0.005\"} 1"), "%s", t);
	ck_assert(has_line(t, "ankusa_dispatch_attempt_duration_seconds_"
	    "bucket{sink=\"http\",result=\"ok\",le=\"0.25\"} 2"));
	ck_assert(has_line(t, "ankusa_dispatch_attempt_duration_seconds_"
	    "bucket{sink=\"http\",result=\"ok\",le=\"300\"} 2"));
	ck_assert(has_line(t, "ankusa_dispatch_attempt_duration_seconds_"
	    "bucket{sink=\"http\",result=\"ok\",le=\"+Inf\"} 3"));
	ck_assert(has_line(t, "ankusa_dispatch_attempt_duration_seconds_"
	    "count{sink=\"http\",result=\"ok\"} 3"));
	ck_assert(has_line(t, "ankusa_dispatch_attempt_duration_seconds_"
	    "sum{sink=\"http\",result=\"ok\"} 1000.204"));
	/* No labels: le alone. */
	ck_assert(has_line(t, "ankusa_wal_commit_duration_seconds_bucket"
	    "{le=\"0.0001\"} 0"));
	ck_assert(has_line(t, "ankusa_wal_commit_duration_seconds_bucket"
	    "{le=\"0.0005\"} 1"));
	ck_assert(has_line(t, "ankusa_wal_commit_duration_seconds_bucket"
	    "{le=\"+Inf\"} 1"));
	ck_assert(has_line(t, "ankusa_wal_commit_duration_seconds_count 1"));
	free(t);
}
END_TEST

START_TEST(test_series_cap)
{
	char name[32];
	int i;

	metrics_reset();
	for (i = 0; i < METRICS_MAX_SERIES + 50; i++) {
		snprintf(name, sizeof(name), "t%d", i);
		metrics_rate_limited(name);
	}
	ck_assert_uint_eq(metrics_get("ankusa_rate_limit_rejected_total",
	    "tenant_id", "t0", NULL), 1);
	ck_assert_uint_eq(metrics_get("ankusa_rate_limit_rejected_total",
	    "tenant_id", "_other", NULL), 50);
	/* Another family is not affected. */
	metrics_ingest("s", "committed");
	ck_assert_uint_eq(metrics_get("ankusa_ingest_requests_total",
	    "source_id", "s", "outcome", "committed", NULL), 1);
}
END_TEST

/* A sink key family keeps METRICS_MAX_SINK_KEYS keys' series (four
 * results each for the counter) before it folds. */
START_TEST(test_sink_series_cap)
{
	static const char *const results[] = { "ok", "error", "permanent",
	    "timeout" };
	char src[32];
	int i, r;

	metrics_reset();
	for (i = 0; i < METRICS_MAX_SINK_KEYS; i++) {
		snprintf(src, sizeof(src), "s%d", i);
		for (r = 0; r < 4; r++)
			metrics_add("ankusa_sink_attempts_total", 1,
			    "source_id", src, "sink", "0", "module", "http",
			    "result", results[r], NULL);
		metrics_set("ankusa_sink_pending", i, "source_id", src,
		    "sink", "0", "module", "http", NULL);
	}
	snprintf(src, sizeof(src), "s%d", METRICS_MAX_SINK_KEYS - 1);
	ck_assert_uint_eq(metrics_get("ankusa_sink_attempts_total",
	    "source_id", src, "sink", "0", "module", "http", "result",
	    "timeout", NULL), 1);
	ck_assert_double_eq(metrics_get_value("ankusa_sink_pending",
	    "source_id", src, "sink", "0", "module", "http", NULL),
	    METRICS_MAX_SINK_KEYS - 1);
	metrics_add("ankusa_sink_attempts_total", 1, "source_id", "more",
	    "sink", "0", "module", "http", "result", "ok", NULL);
	ck_assert_uint_eq(metrics_get("ankusa_sink_attempts_total",
	    "source_id", "_other", "sink", "_other", "module", "_other",
	    "result", "_other", NULL), 1);
}
END_TEST

/* An edge's reason and scheme: a fixed set, else "other". */
START_TEST(test_edge_labels_bounded)
{
	metrics_reset();
	metrics_refused("payload_too_large", 1);
	metrics_refused("made up by an edge", 1);
	metrics_refused("made up again", 1);
	metrics_refused("conns_per_ip", 5);	/* an edge's coalesced count */
	metrics_verify_failure("gh", "github");
	metrics_verify_failure("gh", "no such scheme");
	ck_assert_uint_eq(metrics_get("ankusa_ingest_refused_total",
	    "reason", "payload_too_large", NULL), 1);
	ck_assert_uint_eq(metrics_get("ankusa_ingest_refused_total",
	    "reason", "other", NULL), 2);
	ck_assert_uint_eq(metrics_get("ankusa_ingest_refused_total",
	    "reason", "conns_per_ip", NULL), 5);
	ck_assert_uint_eq(metrics_get("ankusa_verify_failures_total",
	    "source_id", "gh", "scheme", "github", NULL), 1);
	ck_assert_uint_eq(metrics_get("ankusa_verify_failures_total",
	    "source_id", "gh", "scheme", "other", NULL), 1);
	/* The providers' handshakes: the new presets, the refusals, the
	 * answered ones by source. */
	metrics_verify_failure("fb", "meta");
	metrics_verify_failure("zm", "zoom");
	metrics_refused("bad_handshake", 1);
	metrics_refused("verify_token_mismatch", 2);
	metrics_handshake("fb", 1);
	metrics_handshake("fb", 2);
	ck_assert_uint_eq(metrics_get("ankusa_verify_failures_total",
	    "source_id", "fb", "scheme", "meta", NULL), 1);
	ck_assert_uint_eq(metrics_get("ankusa_verify_failures_total",
	    "source_id", "zm", "scheme", "zoom", NULL), 1);
	ck_assert_uint_eq(metrics_get("ankusa_ingest_refused_total",
	    "reason", "bad_handshake", NULL), 1);
	ck_assert_uint_eq(metrics_get("ankusa_ingest_refused_total",
	    "reason", "verify_token_mismatch", NULL), 2);
	ck_assert_uint_eq(metrics_get("ankusa_ingest_refused_total",
	    "reason", "other", NULL), 2);
	ck_assert_uint_eq(metrics_get("ankusa_ingest_requests_total",
	    "source_id", "fb", "outcome", "handshake", NULL), 3);
}
END_TEST

START_TEST(test_unknown_family_dropped)
{
	char *t;

	metrics_reset();
	metrics_add("ankusa_no_such_total", 1, NULL);
	/* A family used with another type's verb is dropped too. */
	metrics_set("ankusa_ingest_refused_total", 5, NULL);
	t = text();
	ck_assert(strstr(t, "ankusa_no_such_total") == NULL);
	ck_assert(strstr(t, "ankusa_ingest_refused_total 5") == NULL);
	free(t);
}
END_TEST

static void
rowkey(unsigned char rk[STORE_ROWKEY_LEN], uint64_t seq, uint32_t sink)
{
	int i;

	for (i = 0; i < 8; i++)
		rk[i] = (unsigned char)(seq >> (56 - 8 * i));
	for (i = 0; i < 4; i++)
		rk[8 + i] = (unsigned char)(sink >> (24 - 8 * i));
}

/* The blocked lane heads: a set (a head blocked twice counts once), whose
 * deletions keep every other member findable, bounded. */
START_TEST(test_lane_heads_set)
{
	unsigned char rk[STORE_ROWKEY_LEN];
	uint64_t s;

	for (s = 1; s <= 5000; s++) {
		rowkey(rk, s, 0);
		gauges_lane_head(rk, 1);
		gauges_lane_head(rk, 1);
	}
	ck_assert_uint_eq(gauges_lanes_blocked(), 5000);
	/* Every third ends; ending one not in the set changes nothing. */
	for (s = 3; s <= 5000; s += 3) {
		rowkey(rk, s, 0);
		gauges_lane_head(rk, 0);
	}
	rowkey(rk, 99999, 1);
	gauges_lane_head(rk, 0);
	ck_assert_uint_eq(gauges_lanes_blocked(), 5000 - 1666);
	/* The rest are still found: ending them empties the set. */
	for (s = 1; s <= 5000; s++) {
		if (s % 3 == 0)
			continue;
		rowkey(rk, s, 0);
		gauges_lane_head(rk, 0);
	}
	ck_assert_uint_eq(gauges_lanes_blocked(), 0);
	/* Bounded: at most 3/4 of its slots. */
	for (s = 1; s <= 40000; s++) {
		rowkey(rk, s, 2);
		gauges_lane_head(rk, 1);
	}
	ck_assert_uint_eq(gauges_lanes_blocked(), 12288);
}
END_TEST

/*
 * Every literal first argument of metrics_add, metrics_set, metrics_clear
 * and metrics_observe in daemon/, its folders and workers/ (adjacent
 * literals joined)
 * names a family of the table, of that verb's type.
 */
static int
check_file(const char *path)
{
	static const struct {
		const char		*call;
		enum metrics_type	 type;
	} verbs[] = {
		{ "metrics_add(", METRICS_COUNTER },
		{ "metrics_set(", METRICS_GAUGE },
		{ "metrics_clear(", METRICS_GAUGE },
		{ "metrics_observe(", METRICS_HISTOGRAM },
	};
	char *buf, name[256], *p, *q;
	FILE *f;
	long sz;
	size_t i, n;
	int found = 0;

	ck_assert_ptr_nonnull(f = fopen(path, "r"));
	fseek(f, 0, SEEK_END);
	sz = ftell(f);
	rewind(f);
	ck_assert_ptr_nonnull(buf = calloc(1, (size_t)sz + 1));
	ck_assert_uint_eq(fread(buf, 1, (size_t)sz, f), (size_t)sz);
	fclose(f);
	for (i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		for (p = buf; (p = strstr(p, verbs[i].call)) != NULL; p++) {
			q = p + strlen(verbs[i].call);
			n = 0;
			for (;;) {
				while (*q == ' ' || *q == '\t' || *q == '\n')
					q++;
				if (*q != '"')
					break;
				for (q++; *q != '"' && *q != '\0' &&
				    n + 1 < sizeof(name); q++)
					name[n++] = *q;
				if (*q == '"')
					q++;
			}
			if (n == 0)
				continue;	/* not a literal: a declaration */
			name[n] = '\0';
			found++;
			ck_assert_msg(metrics_family_type(name) == verbs[i].type,
			    "%s: %s%s...) names no family of metrics.c's "
			    "table of that type", path, verbs[i].call, name);
		}
	free(buf);
	return found;
}

START_TEST(test_sources_name_table_families)
{
	static const char *const dirs[] = { "daemon", "daemon/admin",
	    "daemon/dispatch", "daemon/pipeline", "daemon/store", "workers" };
	char path[4096];
	struct dirent *de;
	DIR *dp;
	size_t i, len;
	int found = 0;

	for (i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++) {
		snprintf(path, sizeof(path), "%s/%s", TOP_SRCDIR, dirs[i]);
		ck_assert_ptr_nonnull(dp = opendir(path));
		while ((de = readdir(dp)) != NULL) {
			len = strlen(de->d_name);
			if (len < 3 || strcmp(de->d_name + len - 2, ".c") != 0)
				continue;
			snprintf(path, sizeof(path), "%s/%s/%s", TOP_SRCDIR,
			    dirs[i], de->d_name);
			found += check_file(path);
		}
		closedir(dp);
	}
	/* The scan sees the calls (today's counters, at least). */
	ck_assert_int_ge(found, 10);
}
END_TEST

static Suite *
metrics_suite(void)
{
	Suite *s = suite_create("metrics");
	TCase *tc = tcase_create("metrics");

	tcase_set_timeout(tc, 10);
	tcase_add_test(tc, test_help_type_every_family);
	tcase_add_test(tc, test_counter_escaping);
	tcase_add_test(tc, test_gauge_set_clear);
	tcase_add_test(tc, test_histogram_lines);
	tcase_add_test(tc, test_series_cap);
	tcase_add_test(tc, test_sink_series_cap);
	tcase_add_test(tc, test_edge_labels_bounded);
	tcase_add_test(tc, test_unknown_family_dropped);
	tcase_add_test(tc, test_sources_name_table_families);
	tcase_add_test(tc, test_lane_heads_set);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(metrics_suite());
	int failed;

	srunner_set_fork_status(sr, CK_FORK);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
