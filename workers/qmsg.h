/* SPDX-License-Identifier: ISC */
/*
 * qmsg.h: Queue message v1, the body and attributes every queue sink
 * (sqs, google_pubsub) sends for one hook.  Pure: no I/O.
 *
 * The body is one JSON object, keys in this order:
 *
 *   {"v":1,"id":hook id,"source_id":..,"tenant_id":..,
 *    "received_at":<ms>,"content_type":..,"size":<body bytes>,
 *    "sha256":"<lowercase hex of the body>","dedupe_key":..|null,
 *    "replay_id":..|null,"idempotency_key":..,
 *    "headers":{<forwarded, names lower-cased>},
 *    "body_base64":".."  or  "claim":"urn:ankusa:claim:v1:..."}
 *
 * content_type is the hook's, else application/octet-stream (as the http
 * sink sends it); idempotency_key is tenant:source:dedupe_key with a
 * dedupe key, else the hook id; a header name seen more than once has its
 * values joined with ", " under its first position.  The JSON is ASCII:
 * every byte above 0x7e goes as a \u escape (a surrogate pair above
 * U+FFFF; U+FFFD for a byte that is not UTF-8), so the body holds only
 * the characters SQS takes.  A body above the sink's inline_max_bytes
 * goes by its claim reference, which must then be set.
 *
 * Attributes: ankusa_id, ankusa_source_id, ankusa_tenant_id,
 * ankusa_message_version ("1"), ankusa_idempotency_key, content_type,
 * ankusa_dedupe_key, ankusa_replay_id when set, traceparent (the hook's
 * trace id and flags, the attempt's span id: common/trace.h) and
 * tracestate when the hook kept one; in that order.  The trace context
 * rides in the attributes alone: the body is the same for every attempt.
 * Ten at most, SQS's limit.
 */
#ifndef ANKUSA_QMSG_H
#define ANKUSA_QMSG_H

#include <stddef.h>
#include <stdint.h>

#include "job.h"

#define QMSG_VERSION		"1"
#define QMSG_MAX_ATTRS		10
#define QMSG_DEFAULT_TYPE	"application/octet-stream"

struct qmsg_attr {
	const char	*name;		/* static */
	const char	*value;		/* into the entry or the qmsg */
};

struct qmsg {
	char			*json;		/* the v1 body, NUL-terminated */
	size_t			 jsonlen;
	char			*idem;		/* the idempotency key */
	int			 by_claim;	/* the body went by claim */
	struct qmsg_attr	 attrs[QMSG_MAX_ATTRS];
	int			 nattrs;
	char			 traceparent[TRACE_PARENT_STRLEN + 1];
};

/* Build the message of e for a sink with inline_max.  0, or -1 with a
 * reason in err (a body that must go by claim has no claim reference);
 * q holds nothing to free then. */
int	qmsg_build(struct qmsg *q, const struct batch_entry *e,
	    uint64_t inline_max, char *err, size_t errlen);
void	qmsg_free(struct qmsg *q);
/* Bytes of the attributes as SQS counts them: name, "String", value. */
size_t	qmsg_attrs_bytes(const struct qmsg *q);
/* s (len bytes) as a JSON string, quotes included, ASCII only, appended
 * to *buf (malloc'd, grown as needed; *len and *cap track it). */
void	qmsg_json_str(char **buf, size_t *len, size_t *cap, const char *s,
	    size_t slen);
/* s appended as it is. */
void	qmsg_cat(char **buf, size_t *len, size_t *cap, const char *s);

#endif
