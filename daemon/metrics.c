/*
 * metrics.c: labelled counters in one hash table; see metrics.h.
 *
 * A series is keyed by its Prometheus text, `name{k="v",...}` with label
 * values escaped as the exposition format wants (\\ \" \n), so the key is
 * also what /metrics prints.
 */
#include "config.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ids.h"
#include "log.h"
#include "metrics.h"

#define METRICS_BUCKETS		1024
#define METRICS_KEY_MAX		512

struct series {
	struct series	*next;
	uint64_t	 value;
	char		 key[];
};

struct family {
	char	name[64];
	size_t	nseries;
};

static struct series	*table[METRICS_BUCKETS];
static struct family	 families[32];
static int		 nfamilies;

static struct family	*family(const char *);
static int		 render(char *, size_t, const char *, int, va_list);
static struct series	*lookup(const char *, int);

static struct family *
family(const char *name)
{
	int i;

	for (i = 0; i < nfamilies; i++)
		if (strcmp(families[i].name, name) == 0)
			return &families[i];
	if (nfamilies == (int)(sizeof(families) / sizeof(families[0])))
		fatalx("metrics: too many metric families");
	snprintf(families[nfamilies].name, sizeof(families[0].name), "%s",
	    name);
	return &families[nfamilies++];
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

static struct series *
lookup(const char *key, int create)
{
	struct series *s;
	size_t len = strlen(key);
	size_t b = ids_fnv1a(IDS_FNV_INIT, key, len) % METRICS_BUCKETS;

	for (s = table[b]; s != NULL; s = s->next)
		if (strcmp(s->key, key) == 0)
			return s;
	if (!create)
		return NULL;
	if ((s = calloc(1, sizeof(*s) + len + 1)) == NULL)
		fatal("metrics");
	memcpy(s->key, key, len + 1);
	s->next = table[b];
	table[b] = s;
	return s;
}

void
metrics_add(const char *metric, uint64_t n, ...)
{
	char key[METRICS_KEY_MAX];
	struct family *f = family(metric);
	struct series *s;
	va_list ap;

	va_start(ap, n);
	if (render(key, sizeof(key), metric, 0, ap) == -1) {
		va_end(ap);
		log_warnx("metrics: series of %s too long, dropped", metric);
		return;
	}
	va_end(ap);
	if ((s = lookup(key, 0)) == NULL) {
		if (f->nseries >= METRICS_MAX_SERIES) {
			va_start(ap, n);
			render(key, sizeof(key), metric, 1, ap);
			va_end(ap);
		} else
			f->nseries++;
		s = lookup(key, 1);
	}
	s->value += n;
}

uint64_t
metrics_get(const char *metric, ...)
{
	char key[METRICS_KEY_MAX];
	struct series *s;
	va_list ap;

	va_start(ap, metric);
	if (render(key, sizeof(key), metric, 0, ap) == -1) {
		va_end(ap);
		return 0;
	}
	va_end(ap);
	return (s = lookup(key, 0)) != NULL ? s->value : 0;
}

void
metrics_ingest(const char *source, const char *outcome)
{
	metrics_add("ankusa_ingest_requests_total", 1, "source_id", source,
	    "outcome", outcome, NULL);
}

void
metrics_refused(const char *reason)
{
	metrics_add("ankusa_ingest_refused_total", 1, "reason", reason, NULL);
}

void
metrics_verify_failure(const char *source, const char *scheme)
{
	metrics_add("ankusa_verify_failures_total", 1, "source_id", source,
	    "scheme", scheme, NULL);
}

void
metrics_rate_limited(const char *tenant)
{
	metrics_add("ankusa_rate_limit_rejected_total", 1, "tenant_id",
	    tenant, NULL);
}

json_t *
metrics_json(void)
{
	json_t *o = json_object();
	struct series *s;
	size_t i;

	for (i = 0; i < METRICS_BUCKETS; i++)
		for (s = table[i]; s != NULL; s = s->next)
			json_object_set_new(o, s->key,
			    json_integer((json_int_t)s->value));
	return o;
}
