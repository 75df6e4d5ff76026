/* SPDX-License-Identifier: ISC */
/*
 * pipeline_logline.c: the delivery log lines; see pipeline_logline.h.
 *
 * One snprintf a line into the caller's buffer, the reason escaped first
 * into a buffer on the stack: no allocation, for a line the master writes
 * at every delivery.
 *
 * Fatal: nothing.
 */
#include "config.h"

#include <inttypes.h>
#include <stdio.h>
#include <string.h>

#include "log.h"
#include "pipeline_logline.h"
#include "utf8.h"

/* The reason escaped, at most: the rest of a line is short. */
#define LOGLINE_REASON_MAX	(LOGLINE_MAX - 512)

static const char *const logline_names[] = {
	"sent", "deferred", "bounced", "expired", "delivered"
};

static size_t	text_escape(char *, size_t, const char *);

const char *
logline_status_name(enum logline_status s)
{
	if ((size_t)s >= sizeof(logline_names) / sizeof(logline_names[0]))
		return "?";
	return logline_names[s];
}

/* src as the inside of a text line's quotes into dst (dstsz > 0): quote
 * and backslash after a backslash, a control byte, DEL and a byte that is
 * not well-formed UTF-8 as \xNN; cut between escapes and characters. */
static size_t
text_escape(char *dst, size_t dstsz, const char *src)
{
	const unsigned char *p = (const unsigned char *)src;
	size_t k = 0, len, n = strlen(src);
	char esc[8];
	const char *put;

	while (*p != '\0') {
		if (*p == '"' || *p == '\\') {
			esc[0] = '\\';
			esc[1] = (char)*p;
			put = esc;
			len = 2;
		} else if (*p >= 0x20 && *p < 0x7f) {
			put = (const char *)p;
			len = 1;
		} else if (*p >= 0x80 && (len = utf8_seq(p, n - (p -
		    (const unsigned char *)src), NULL)) > 1)
			put = (const char *)p;
		else {
			snprintf(esc, sizeof(esc), "\\x%02x", *p);
			put = esc;
			len = 4;
		}
		if (k + len >= dstsz)
			break;
		memcpy(dst + k, put, len);
		k += len;
		p += put == (const char *)p ? len : 1;
	}
	dst[k] = '\0';
	return k;
}

char *
logline_format(char *buf, const struct logline *l, int json)
{
	char reason[LOGLINE_REASON_MAX], src[512], trace[128], code[16];
	const char *st = logline_status_name(l->status);
	unsigned ms = (unsigned)(l->delay_ms % 1000);
	uint64_t s = l->delay_ms / 1000;
	int has_trace = l->trace != NULL && l->trace[0] != '\0';

	if (json) {
		log_json_str(src, sizeof(src), l->source, strlen(l->source));
		trace[0] = '\0';
		if (has_trace) {
			memcpy(trace, ",\"trace\":\"", 10);
			log_json_str(trace + 10, sizeof(trace) - 11, l->trace,
			    strlen(l->trace));
			strcat(trace, "\"");
		}
		if (l->status == LOGLINE_DELIVERED) {
			snprintf(buf, LOGLINE_MAX, "\"hook\":\"%s\",\"source\":"
			    "\"%s\",\"status\":\"%s\",\"delay\":%" PRIu64
			    ".%03u%s", l->hook, src, st, s, ms, trace);
			return buf;
		}
		log_json_str(reason, sizeof(reason), l->reason,
		    strlen(l->reason));
		if (l->code != 0)
			snprintf(code, sizeof(code), "%u", l->code);
		else
			snprintf(code, sizeof(code), "null");
		snprintf(buf, LOGLINE_MAX, "\"hook\":\"%s\",\"source\":\"%s\","
		    "\"sink\":%u,\"module\":\"%s\",\"attempt\":%u,"
		    "\"status\":\"%s\",\"delay\":%" PRIu64 ".%03u,\"code\":%s"
		    "%s,\"reason\":\"%s\"", l->hook, src, l->sink, l->module,
		    l->attempt, st, s, ms, code, trace, reason);
		return buf;
	}
	log_clean(src, sizeof(src), l->source);
	trace[0] = '\0';
	if (has_trace) {
		memcpy(trace, " trace=", 7);
		log_clean(trace + 7, sizeof(trace) - 7, l->trace);
	}
	if (l->status == LOGLINE_DELIVERED) {
		snprintf(buf, LOGLINE_MAX, "hook=%s source=%s status=%s "
		    "delay=%" PRIu64 ".%03u%s", l->hook, src, st, s, ms, trace);
		return buf;
	}
	text_escape(reason, sizeof(reason), l->reason);
	if (l->code != 0)
		snprintf(code, sizeof(code), "%u", l->code);
	else
		snprintf(code, sizeof(code), "-");
	snprintf(buf, LOGLINE_MAX, "hook=%s source=%s sink=%u(%s) attempt=%u "
	    "status=%s delay=%" PRIu64 ".%03u code=%s%s reason=\"%s\"",
	    l->hook, src, l->sink, l->module, l->attempt, st, s, ms, code,
	    trace, reason);
	return buf;
}
