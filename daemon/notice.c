/* SPDX-License-Identifier: ISC */
/*
 * notice.c: the operational notices; see notice.h.  The body is made
 * here, compact JSON, the time the notice was made its timestamp.
 *
 * Fatal: out of memory.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "clock.h"
#include "conf.h"
#include "dispatch/dispatch.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "notice.h"
#include "repl.h"

static int	(*post)(const char *, const char *, const void *, size_t);

static void	notice_time(char *, size_t);

void
notice_on_post(int (*fn)(const char *, const char *, const void *, size_t))
{
	post = fn;
}

/* Now, in RFC 3339 with milliseconds, UTC. */
static void
notice_time(char *buf, size_t len)
{
	uint64_t ms = time_wall_ms();
	time_t t = (time_t)(ms / 1000);
	struct tm tm;
	char s[32];

	gmtime_r(&t, &tm);
	strftime(s, sizeof(s), "%Y-%m-%dT%H:%M:%S", &tm);
	snprintf(buf, len, "%s.%03uZ", s, (unsigned)(ms % 1000));
}

json_t *
notice_sink_data(const char *tenant, const char *source, uint32_t sink,
    uint8_t module, const char *reason)
{
	json_t *d;

	if ((d = json_pack("{s:s, s:I}", "source", source, "sink",
	    (json_int_t)sink)) == NULL)
		fatalx("notice: json");
	if (tenant != NULL && tenant[0] != '\0')
		json_object_set_new(d, "tenant", json_string(tenant));
	if (module != 0)
		json_object_set_new(d, "module",
		    json_string(dispatch_module_name(module)));
	if (reason != NULL && reason[0] != '\0')
		json_object_set_new(d, "reason", json_string(reason));
	return d;
}

void
notice_emit(const char *type, json_t *data)
{
	const char *src = json_string_value(json_object_get(data, "source"));
	char ts[48], *body;
	json_t *o;

	/* A client of a replication group stores nothing: its master makes
	 * the notices. */
	if (env->conf->notify.nsinks == 0 || post == NULL ||
	    !repl_writable()) {
		json_decref(data);
		return;
	}
	if (src != NULL && strcmp(src, CONF_NOTIFY_SOURCE) == 0) {
		log_info("notice: %s of a notification sink (%s#%lld): "
		    "logged only", type, src, (long long)json_integer_value(
		    json_object_get(data, "sink")));
		json_decref(data);
		return;
	}
	notice_time(ts, sizeof(ts));
	if ((o = json_pack("{s:s, s:s, s:o}", "type", type, "timestamp", ts,
	    "data", data)) == NULL ||
	    (body = json_dumps(o, JSON_COMPACT)) == NULL)
		fatalx("notice: json");
	json_decref(o);
	if (post(CONF_NOTIFY_TENANT, CONF_NOTIFY_SOURCE, body,
	    strlen(body)) == -1)
		log_warnx("notice: %s not stored (the writer refused it)",
		    type);
	else {
		log_info("notice: %s queued", type);
		metrics_add("ankusa_notices_total", 1, "type", type, NULL);
	}
	free(body);
}
