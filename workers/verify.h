/* SPDX-License-Identifier: ISC */
/*
 * verify.h: webhook signature verification, without I/O or a clock.
 *
 * verify_request judges one request against a source's verify section
 * (conf.h: the presets stripe, github, standard_webhooks, shopify, slack,
 * meta, zoom, the custom hmac descriptor, none) and says why it failed,
 * in the words of the contract.  The caller supplies now_s: the edge passes the wall
 * clock, the master's quarantine release passes the hook's received_at /
 * 1000 with its stored headers (struct keys_hdrs), so a held hook is judged
 * as it would have been when it came in.
 *
 * The checks, in order, each ending the verdict:
 *   1. type none: VERIFY_OK.
 *   2. no secret, an empty secret or a descriptor this build cannot use
 *      (never after conf_parse, which refuses them): VERIFY_BAD_SECRET.
 *   3. the signature header is absent: VERIFY_MISSING_SIGNATURE.
 *   4. it is empty, over VERIFY_HEADER_MAX bytes, or does not parse: no
 *      signature of the scheme's version or key in it, a signature that is
 *      not valid hex (either case) or strict base64, a wrong prefix, an
 *      item or token without its separator, an empty csv item, a second
 *      "t": VERIFY_MALFORMED_SIGNATURE.
 *   5. the timestamp: required when the signed template has {ts} or a
 *      timestamp header is configured; absent, or not 1*DIGIT:
 *      VERIFY_MALFORMED_SIGNATURE; |now_s - ts| > tolerance_seconds:
 *      VERIFY_TIMESTAMP_OUT_OF_TOLERANCE.  It is checked before any HMAC
 *      is computed, so a replayed old request costs no hashing.
 *   6. a header the template names ({header:NAME}) is absent:
 *      VERIFY_MALFORMED_SIGNATURE.
 *   7. HMAC of the signed bytes under every secret (rotation), compared in
 *      constant time (CRYPTO_memcmp, equal lengths) with every signature in
 *      the header: VERIFY_OK on the first match, else VERIFY_NO_MATCH.  A
 *      well-formed signature of another length never matches.
 *
 * Reading the headers: a repeated header counts by its first value; csv
 * items are trimmed of SP and HTAB; space_versions accepts "v1" or "v1,"
 * as the version; under csv_pairs without a timestamp_header (and for
 * stripe) the timestamp is the item "t"; the timestamp is signed as the
 * bytes received, not as the number read from them.  In the template,
 * braces other than {body}, {ts} and {header:NAME} are literal text.
 *
 * Type mtls reads no header: verify_mtls judges the client certificate
 * the edge's TLS handshake verified (struct verify_peer), against the
 * source's subject, san and fingerprint (each set one must match);
 * verify_request, which has no connection (a quarantine release), says
 * VERIFY_NO_CLIENT_CERTIFICATE for it.
 *
 * The work is linear in the header and the body: the header is parsed
 * once, the body hashed once per secret (at most CONF_MAX_SECRETS).
 * Only a failure inside OpenSSL (out of memory) is fatal.
 */
#ifndef ANKUSA_VERIFY_H
#define ANKUSA_VERIFY_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "keys.h"

/* A longer signature header is malformed, unread. */
#define VERIFY_HEADER_MAX	4096
/* tolerance_seconds when the struct says 0. */
#define VERIFY_TOLERANCE_DEFAULT 300

enum verify_reason {
	VERIFY_OK = 0,
	VERIFY_MISSING_SIGNATURE,
	VERIFY_MALFORMED_SIGNATURE,
	VERIFY_NO_MATCH,
	VERIFY_TIMESTAMP_OUT_OF_TOLERANCE,
	VERIFY_BAD_SECRET,
	VERIFY_NO_CLIENT_CERTIFICATE,
	VERIFY_CLIENT_CERTIFICATE_MISMATCH,
};

/* The verified client certificate of a TLS connection, as the edge read
 * it (workers/edge_tls.c). */
#define VERIFY_PEER_SANS	32	/* subjectAltNames kept, the first */
struct verify_peer {
	char		*subject;		/* RFC 2253 */
	char		*sans[VERIFY_PEER_SANS];	/* bare values */
	int		 nsans;
	unsigned char	 sha256[32];		/* of the DER */
};

void		 verify_peer_free(struct verify_peer *);

/* "ok", "missing_signature", "malformed_signature", "no_match",
 * "timestamp_out_of_tolerance", "bad_secret", "no_client_certificate",
 * "client_certificate_mismatch"; "unknown" otherwise. */
const char	*verify_reason_name(enum verify_reason);

/* Whether verification under v reads the header (lower-case name): its
 * signature or timestamp header, a {header:NAME} of its template. */
int		 verify_reads_header(const struct verify_conf *,
		    const char *lname);

enum verify_reason verify_request(const struct verify_conf *,
		    const struct keys_hdrs *, const void *body, size_t len,
		    int64_t now_s);
/* Type mtls: peer NULL when the connection carried no verified client
 * certificate (plain HTTP, or none sent). */
enum verify_reason verify_mtls(const struct verify_conf *,
		    const struct verify_peer *peer);

#endif
