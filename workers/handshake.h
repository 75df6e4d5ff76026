/* SPDX-License-Identifier: ISC */
/*
 * handshake.h: the providers' handshakes a source's preset answers in the
 * edge, never stored nor delivered; without I/O or a clock.
 *
 *  - slack: a verified POST whose JSON body has "type":"url_verification"
 *    is answered 200 text/plain with its "challenge" (Slack's documented
 *    answer, api.slack.com/events/url_verification).
 *  - zoom: a verified POST whose JSON body has
 *    "event":"endpoint.url_validation" is answered 200 application/json
 *    {"plainToken":P,"encryptedToken":E}, E the lowercase hex of
 *    HMAC-SHA256(P) under the source's first (newest) secret.
 *  - meta: a GET of the source's path whose query has hub.mode is
 *    answered 200 text/plain with hub.challenge when hub.mode is
 *    subscribe and hub.verify_token is the source's verify_token (compared
 *    as SHA-256 digests, in constant time); 403 verify_token_mismatch when
 *    it is another, absent, or the source has none.  A GET without
 *    hub.mode is no handshake (the edge's 405, as before).
 *
 * The POSTs are judged only once verification passed (the caller's part):
 * a forged handshake is refused as any forgery is.  A POST is examined
 * only when its Content-Type is application/json, it is at most
 * HANDSHAKE_BODY_MAX bytes and holds the event's name (a substring test,
 * so other hooks pay no parse); it is then parsed (jansson, duplicate
 * members refused) after a scan that refuses nesting deeper than
 * HANDSHAKE_DEPTH_MAX.  Such a body that does not parse, or a handshake
 * whose challenge (plainToken, hub.challenge) is absent, not a string,
 * empty, over HANDSHAKE_CHALLENGE_MAX bytes or holds a byte outside
 * visible ASCII (0x21-0x7e) is answered 400 bad_handshake with a reason.
 * A parsed body of another type or event is no handshake: a hook.
 *
 * Every answer that echoes a challenge says X-Content-Type-Options:
 * nosniff; none is HTML.  Running out of memory is fatal.
 */
#ifndef ANKUSA_HANDSHAKE_H
#define ANKUSA_HANDSHAKE_H

#include <stddef.h>

#include "conf.h"
#include "httpreq.h"

#define HANDSHAKE_BODY_MAX	65536	/* a larger body is a hook */
#define HANDSHAKE_DEPTH_MAX	32	/* JSON nesting of an examined body */
#define HANDSHAKE_CHALLENGE_MAX	512	/* bytes of a challenge echoed */

enum handshake_verdict {
	HANDSHAKE_NONE = 0,	/* not a handshake: the answer is untouched */
	HANDSHAKE_ANSWERED,	/* 200, the provider's answer */
	HANDSHAKE_BAD,		/* 400 bad_handshake */
	HANDSHAKE_FORBIDDEN,	/* 403 verify_token_mismatch */
};

/* A POST to src that passed verification: content_type is the request's
 * header value (NULL if none). */
enum handshake_verdict handshake_post(const struct source_conf *src,
		    const char *content_type, const void *body, size_t len,
		    struct httpreq_answer *);
/* A GET of src's path: target as received, with its query. */
enum handshake_verdict handshake_get(const struct source_conf *src,
		    const char *target, struct httpreq_answer *);
/* The handshake of src's preset, for the log: "url_verification",
 * "endpoint.url_validation", "hub.challenge", or NULL for none. */
const char	*handshake_name(const struct source_conf *src);

#endif
