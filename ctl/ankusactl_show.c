/* SPDX-License-Identifier: ISC */
/*
 * ankusactl_show.c: how ankusactl prints the admin API's answers (dead
 * letters, a hook and its attempts, replay jobs, the audit trail, the sink
 * keys' health, the search of hooks), one line a record; -j prints them
 * as they came instead (ankusactl.c).  Text from outside is printed as
 * the control socket gave it, escaped where it could start a line.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <time.h>

#include <jansson.h>

#include "ankusactl.h"

static void	 print_text(const char *, json_t *);
static void	 print_attempts(json_t *);
static void	 print_replay(json_t *);
static void	 print_page_end(json_t *, const char *);

/* A wall time in ms as UTC, or "-". */
const char *
when_utc(json_t *v, char *buf, size_t len)
{
	time_t t;
	struct tm tm;

	if (!json_is_integer(v))
		return "-";
	t = json_integer_value(v) / 1000;
	gmtime_r(&t, &tm);
	strftime(buf, len, "%Y-%m-%d %H:%M:%S", &tm);
	return buf;
}

const char *
str_or(json_t *o, const char *key, const char *none)
{
	const char *s = json_string_value(json_object_get(o, key));

	return s != NULL ? s : none;
}

/* dlq show's page, dlq purge's count. */
void
print_dlq_api(json_t *ans)
{
	json_t *b = json_object_get(ans, "body"), *e;
	char when[32];
	size_t i;

	if (json_object_get(b, "deleted") != NULL) {
		printf("deleted %lld dead letters, %lld bytes\n",
		    (long long)json_integer_value(json_object_get(b,
		    "deleted")),
		    (long long)json_integer_value(json_object_get(b, "bytes")));
		return;
	}
	json_array_foreach(json_object_get(b, "entries"), i, e) {
		if (i == 0)
			printf("%-36s %-12s %-16s %-4s %-8s %-20s %4s %s\n",
			    "HOOK", "TENANT", "SOURCE", "SINK", "MODULE",
			    "DEAD (UTC)", "ATT", "REASON");
		printf("%-36s %-12s %-16s %-4lld %-8s %-20s %4lld %s\n",
		    str_or(e, "id", "-"), str_or(e, "tenant_id", "-"),
		    str_or(e, "source_id", "-"),
		    (long long)json_integer_value(json_object_get(e, "sink")),
		    str_or(e, "module", "-"),
		    when_utc(json_object_get(e, "dead_lettered_at"), when,
		    sizeof(when)),
		    (long long)json_integer_value(json_object_get(e,
		    "attempts")), str_or(e, "reason", ""));
	}
	printf("-- %zu of %lld dead letters", json_array_size(
	    json_object_get(b, "entries")),
	    (long long)json_integer_value(json_object_get(b, "total")));
	if (json_is_string(json_object_get(b, "next_cursor")))
		printf("; more with --cursor %s", str_or(b, "next_cursor", ""));
	printf("\n");
}

/* show ID: the head, then a line a row, then its attempts; delete ID:
 * what went. */
void
print_hook(json_t *ans)
{
	json_t *b = json_object_get(ans, "body"), *r;
	char when[32];
	size_t i;

	if (json_object_get(b, "deleted") != NULL) {
		printf("deleted, %lld body bytes\n", (long long)
		    json_integer_value(json_object_get(b, "bytes")));
		return;
	}
	if (json_object_get(b, "id") == NULL) {
		printf("gone (delivered or deleted); its attempts are kept\n");
		print_attempts(json_object_get(b, "attempts"));
		return;
	}
	printf("id           %s\nseq          %lld\ntenant       %s\n"
	    "source       %s\n", str_or(b, "id", "-"),
	    (long long)json_integer_value(json_object_get(b, "seq")),
	    str_or(b, "tenant_id", "-"), str_or(b, "source_id", "-"));
	printf("received     %s UTC\nsize         %lld\ncontent type %s\n",
	    when_utc(json_object_get(b, "received_at"), when, sizeof(when)),
	    (long long)json_integer_value(json_object_get(b, "size")),
	    str_or(b, "content_type", "-"));
	printf("dedupe key   %s\nclaim        %s\nflagged      %s\n",
	    str_or(b, "dedupe_key", "-"), str_or(b, "claim_ref", "-"),
	    json_is_true(json_object_get(b, "flagged")) ? "yes" : "no");
	json_array_foreach(json_object_get(b, "rows"), i, r) {
		if (i == 0)
			printf("%-4s %-8s %-7s %4s %-20s %s\n", "SINK",
			    "MODULE", "STATE", "ATT", "DUE/DEAD (UTC)",
			    "LAST ERROR / DEAD REASON");
		printf("%-4lld %-8s %-7s %4lld %-20s %s%s%s\n",
		    (long long)json_integer_value(json_object_get(r, "sink")),
		    str_or(r, "module", "-"), str_or(r, "state", "-"),
		    (long long)json_integer_value(json_object_get(r,
		    "attempts")),
		    when_utc(json_object_get(r, json_object_get(r,
		    "dead_lettered_at") != NULL ? "dead_lettered_at" : "due"),
		    when, sizeof(when)), str_or(r, "last_error", ""),
		    json_is_string(json_object_get(r, "dead_reason")) ?
		    " / " : "", str_or(r, "dead_reason", ""));
	}
	print_attempts(json_object_get(b, "attempts"));
}

/* A sink's text as a JSON string, escaped to ASCII: whatever it holds
 * reaches the terminal as characters, never as its controls. */
static void
print_text(const char *label, json_t *v)
{
	char *s;

	if (!json_is_string(v))
		return;
	s = json_dumps(v, JSON_ENCODE_ANY | JSON_ENSURE_ASCII);
	printf("     %-9s %s\n", label, s != NULL ? s : "?");
	free(s);
}

/* The attempts of show ID, a line each and their texts below it. */
static void
print_attempts(json_t *list)
{
	json_t *a, *st;
	char when[32], code[24];
	size_t i;

	json_array_foreach(list, i, a) {
		if (i == 0)
			printf("%-4s %-8s %4s %-20s %8s %-13s %6s\n", "SINK",
			    "MODULE", "N", "STARTED (UTC)", "MS", "OUTCOME",
			    "STATUS");
		st = json_object_get(a, "status");
		if (json_is_integer(st))
			snprintf(code, sizeof(code), "%lld",
			    (long long)json_integer_value(st));
		else
			snprintf(code, sizeof(code), "-");
		printf("%-4lld %-8s %4lld %-20s %8lld %-13s %6s\n",
		    (long long)json_integer_value(json_object_get(a, "sink")),
		    str_or(a, "module", "-"),
		    (long long)json_integer_value(json_object_get(a, "n")),
		    when_utc(json_object_get(a, "started_at"), when,
		    sizeof(when)),
		    (long long)json_integer_value(json_object_get(a,
		    "duration_ms")), str_or(a, "outcome", "-"), code);
		print_text("error", json_object_get(a, "error"));
		print_text("response", json_object_get(a, "response"));
	}
}

/* One job a line: id, kind, state, source, moved, rate, and why it
 * waits or paused itself. */
static void
print_replay(json_t *j)
{
	const char *src = json_string_value(json_object_get(j, "source_id"));
	const char *why = json_string_value(json_object_get(j, "reason"));

	if (why == NULL)
		why = json_string_value(json_object_get(j, "held"));
	if (nprinted++ == 0)
		printf("%-36s %-10s %-9s %-16s %8s %8s %6s %s\n", "ID", "KIND",
		    "STATE", "SOURCE", "MOVED", "DROPPED", "RATE", "WHY");
	printf("%-36s %-10s %-9s %-16s %8lld %8lld %6lld %s\n",
	    json_string_value(json_object_get(j, "id")),
	    json_string_value(json_object_get(j, "kind")),
	    json_string_value(json_object_get(j, "state")),
	    src != NULL ? src : "*",
	    (long long)json_integer_value(json_object_get(j, "moved")),
	    (long long)json_integer_value(json_object_get(j, "dropped")),
	    (long long)json_integer_value(json_object_get(j, "rate")),
	    why != NULL ? why : "");
}

/* The answer of a replay route: one job, or the list; dlq list's lines
 * too (the dlq command's two forms share its entry). */
void
print_replays(json_t *ans)
{
	json_t *body = json_object_get(ans, "body"), *list, *j;
	size_t i;

	/* dlq list's listing, dlq show and purge's answers, or jobs. */
	if (body == NULL || json_object_get(body, "entries") != NULL ||
	    json_object_get(body, "deleted") != NULL) {
		print_dlq(ans);
		return;
	}
	if ((list = json_object_get(body, "replays")) != NULL) {
		json_array_foreach(list, i, j)
			print_replay(j);
		if (json_array_size(list) == 0)
			printf("no replay job\n");
		return;
	}
	print_replay(body);
}

/* A page's last line: how many of what, and the cursor of the next. */
static void
print_page_end(json_t *b, const char *what)
{
	printf("-- %zu %s", json_array_size(json_object_get(b, "entries")),
	    what);
	if (json_is_string(json_object_get(b, "next_cursor")))
		printf("; more with --cursor %s", str_or(b, "next_cursor", ""));
	printf("\n");
}

/* A page of the trail: a line an entry, then the cursor of the next. */
void
print_audit(json_t *ans)
{
	json_t *b = json_object_get(ans, "body"), *e;
	char when[32];
	size_t i;

	json_array_foreach(json_object_get(b, "entries"), i, e) {
		if (i == 0)
			printf("%-20s %-12s %-18s %-12s %-24s %s\n",
			    "AT (UTC)", "ACTOR", "ACTION", "TENANT", "OUTCOME",
			    "TARGET");
		printf("%-20s %-12s %-18s %-12s %-24s %s\n",
		    when_utc(json_object_get(e, "at"), when, sizeof(when)),
		    str_or(e, "actor", "-"), str_or(e, "action", "-"),
		    *str_or(e, "tenant", "") != '\0' ? str_or(e, "tenant",
		    "-") : "-", str_or(e, "outcome", "-"),
		    str_or(e, "target", ""));
	}
	print_page_end(b, "entries");
}

/* A ratio as a percentage, a duration in ms, a count: "-" for null. */
static const char *
fmt_num(json_t *v, const char *how, double scale, char *buf, size_t len)
{
	if (!json_is_number(v))
		return "-";
	snprintf(buf, len, how, json_number_value(v) * scale);
	return buf;
}

/* A key's columns after its name and module: a window's figure (win
 * "5m" or "1h") or the key's own (win NULL), as fmt_num prints it. */
static const struct {
	const char	*head;
	const char	*win;
	const char	*field;
	const char	*how;
	double		 scale;
	int		 width;
} sink_cols[] = {
	{ "5M OK", "5m", "success_ratio", "%.1f%%", 100, 6 },
	{ "P50 MS", "5m", "p50_ms", "%.1f", 1, 7 },
	{ "P99 MS", "5m", "p99_ms", "%.1f", 1, 7 },
	{ "1H OK", "1h", "success_ratio", "%.1f%%", 100, 6 },
	{ "P50 MS", "1h", "p50_ms", "%.1f", 1, 7 },
	{ "P99 MS", "1h", "p99_ms", "%.1f", 1, 7 },
	{ "PENDING", NULL, "pending", "%.0f", 1, 7 },
	{ "DEAD", NULL, "dead", "%.0f", 1, 5 },
};
#define NCOLS	(sizeof(sink_cols) / sizeof(sink_cols[0]))

/* A line a key, and one more under it with its last error. */
void
print_sinks(json_t *ans)
{
	json_t *b = json_object_get(ans, "body"), *k, *o;
	char key[80], f[32], when[32];
	size_t i, c;

	if (json_object_get(b, "sinks") == NULL) {
		print_api(ans);
		return;
	}
	json_array_foreach(json_object_get(b, "sinks"), i, k) {
		if (i == 0) {
			printf("%-20s %-13s", "SOURCE#SINK", "MODULE");
			for (c = 0; c < NCOLS; c++)
				printf(" %*s", sink_cols[c].width,
				    sink_cols[c].head);
			printf(" %-9s %s\n", "BREAKER", "PAUSED");
		}
		snprintf(key, sizeof(key), "%s#%lld", str_or(k, "source_id",
		    "-"), (long long)json_integer_value(json_object_get(k,
		    "sink")));
		printf("%-20s %-13s", key, str_or(k, "module", "-"));
		for (c = 0; c < NCOLS; c++) {
			o = sink_cols[c].win != NULL ? json_object_get(k,
			    sink_cols[c].win) : k;
			printf(" %*s", sink_cols[c].width, fmt_num(
			    json_object_get(o, sink_cols[c].field),
			    sink_cols[c].how, sink_cols[c].scale, f,
			    sizeof(f)));
		}
		printf(" %-9s %s\n", str_or(k, "breaker", "-"),
		    json_is_true(json_object_get(k, "paused")) ? "yes" : "no");
		if (json_is_string(json_object_get(k, "last_error")))
			printf("%-20s last error %s UTC: %s\n", "",
			    when_utc(json_object_get(k, "last_error_at"), when,
			    sizeof(when)), str_or(k, "last_error", ""));
	}
	if (json_array_size(json_object_get(b, "sinks")) == 0)
		printf("no sink key in the config\n");
}

/* A page of the search: a line a hook, then the cursor of the next. */
void
print_hooks(json_t *ans)
{
	json_t *b = json_object_get(ans, "body"), *e;
	char when[32];
	size_t i;

	json_array_foreach(json_object_get(b, "entries"), i, e) {
		if (i == 0)
			printf("%-36s %-20s %-12s %-16s %-16s %s\n", "ID",
			    "RECEIVED (UTC)", "STATE", "TENANT", "SOURCE",
			    "SIZE");
		printf("%-36s %-20s %-12s %-16s %-16s %lld\n",
		    str_or(e, "id", "-"), when_utc(json_object_get(e,
		    "received_at"), when, sizeof(when)),
		    str_or(e, "state", "-"), str_or(e, "tenant_id", "-"),
		    str_or(e, "source_id", "-"),
		    (long long)json_integer_value(json_object_get(e, "size")));
	}
	print_page_end(b, "hooks");
}
