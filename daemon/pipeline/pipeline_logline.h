/* SPDX-License-Identifier: ISC */
/*
 * pipeline_logline.h: the delivery log lines (ankusad(8), DELIVERY LOG
 * LINES), one per attempt's outcome and one per delivered hook, in the
 * manner of Postfix's:
 *
 *	hook=<id> source=<s> sink=<i>(<module>) attempt=<n>
 *	    status=<sent|deferred|bounced|expired> delay=<seconds>
 *	    code=<status> trace=<trace id> reason="<text>"
 *	hook=<id> source=<s> status=delivered delay=<seconds> trace=<trace id>
 *
 * (each on one line), or in json the members of one object with the same
 * keys, sink and module apart (log_fields, common/log.h).  Pure: the glue
 * (pipeline_store.c) gathers the fields when a settle is written.
 *
 * delay is seconds from the hook's receipt to the outcome, to the
 * millisecond; code the HTTP status of the attempt or of the queue
 * service's answer, "-" (json null) when there was none; trace is left out
 * when unknown; reason is what the caller gives, a detail's loggable part
 * (job_detail_loggable), quoted: in text a quote and a backslash after a
 * backslash, a control byte or a byte that is not well-formed UTF-8 as
 * \xNN; in json as log_json_str escapes it.  Nothing is allocated.
 */
#ifndef ANKUSA_PIPELINE_LOGLINE_H
#define ANKUSA_PIPELINE_LOGLINE_H

#include <stddef.h>
#include <stdint.h>

enum logline_status {
	LOGLINE_SENT = 0,	/* the attempt delivered the row */
	LOGLINE_DEFERRED,	/* it failed; the row is tried again */
	LOGLINE_BOUNCED,	/* dead-lettered: permanent, or no attempt
				 * could be made (sink gone, ...) */
	LOGLINE_EXPIRED,	/* dead-lettered: retries exhausted, or past
				 * the retry horizon */
	LOGLINE_DELIVERED,	/* the hook's line: every sink done */
};

struct logline {
	const char		*hook;		/* the hook's id, text */
	const char		*source;
	uint32_t		 sink;		/* not in a DELIVERED line */
	const char		*module;	/* not in a DELIVERED line */
	uint32_t		 attempt;	/* not in a DELIVERED line */
	enum logline_status	 status;
	uint64_t		 delay_ms;
	uint32_t		 code;		/* 0: none */
	const char		*trace;		/* W3C trace id, "" unknown */
	const char		*reason;	/* "" none */
};

/* A line's longest form, NUL included: the reason is cut to fit. */
#define LOGLINE_MAX		2048

/* l's line into buf (LOGLINE_MAX bytes), as text or as json members;
 * returns buf. */
char		*logline_format(char *buf, const struct logline *l, int json);
const char	*logline_status_name(enum logline_status);

#endif
