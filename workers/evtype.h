/* SPDX-License-Identifier: ISC */
/*
 * evtype.h: a hook's event type, read in the edge, without I/O.
 *
 * Where it is read: the source's event_type (a header, or a dot path
 * through the JSON body: keys.h's rule, so an integer is its decimal
 * form), else its verify preset's:
 *   stripe, standard_webhooks   the body's "type";
 *   github                      X-GitHub-Event, and when the body has a
 *                               string "action", EVENT.ACTION (issues
 *                               with action opened: "issues.opened");
 *   shopify                     X-Shopify-Topic ("orders/create");
 *   slack                       the body's "event.type" (Events API),
 *                               else its "type" (url_verification, ...);
 *   zoom                        the body's "event" ("meeting.started");
 *   meta, hmac, mtls, none      none (Meta's field is per change, in
 *                               arrays: a source's own json cannot reach
 *                               it either).
 * A value that is empty, over EVTYPE_MAX bytes, not UTF-8 or holding a
 * control character is no event type.  The JSON body is scanned (struct
 * keys_ctx, workers/jscan.c) only when the type is read from it.
 */
#ifndef ANKUSA_EVTYPE_H
#define ANKUSA_EVTYPE_H

#include <stddef.h>

#include "conf.h"
#include "keys.h"

#define EVTYPE_MAX	200	/* bytes; as SUBMIT_EVTYPE_MAX */

/* The type into out (at least EVTYPE_MAX + 1 bytes), NUL-terminated:
 * its length, or 0 with out "" when the hook has none. */
size_t	evtype_get(const struct source_conf *, struct keys_ctx *, char *out);

#endif
