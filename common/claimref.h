/* SPDX-License-Identifier: ISC */
/*
 * claimref.h: claim references, v2 signed and expiring, v1 as before
 * (pure: no I/O, no clock but the now it is given).
 *
 *   urn:ankusa:claim:v2:<tenant>:<claim_id>:<exp_unix>:<signature>
 *
 * The signature is HMAC-SHA256, keyed with claim_check.signing_key, over
 * every byte before the last colon, written in base64url without
 * padding (43 characters).  exp_unix is the Unix second from which the
 * reference is refused (decimal, no sign, no leading zero).  The claim
 * id is common/pack.h's; this file only checks that it is Crockford
 * base32 of a sane length and leaves its meaning to pack_claim_parse().
 *
 *   urn:ankusa:claim:v1:<tenant>:<claim_id>
 *
 * carries no signature and no expiry: it is read only when the caller
 * says v1 is accepted (claim_check.accept_v1), else it is refused like a
 * bad signature.
 *
 * A v2 reference may carry a v1 claim id (26 characters): a reference
 * stored before references were signed, signed at its delivery
 * (claimref_renew); its signature is what makes it ours.
 *
 * The order of the checks is a contract: the shape (a tenant, an id),
 * then the signature, then the expiry, so that an expiry is only ever
 * reported of a reference we signed.  The comparison of signatures takes
 * the same time wherever they differ.
 */
#ifndef ANKUSA_CLAIMREF_H
#define ANKUSA_CLAIMREF_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"

#define CLAIMREF_V1_PREFIX	"urn:ankusa:claim:v1:"
#define CLAIMREF_V2_PREFIX	"urn:ankusa:claim:v2:"
#define CLAIMREF_ID_MAX		64	/* characters of a claim id */
#define CLAIMREF_SIG_LEN	43	/* base64url of 32 bytes, unpadded */
#define CLAIMREF_EXP_MAX	19	/* digits of exp_unix */
/* The longest reference, with the NUL. */
#define CLAIMREF_MAX		(sizeof(CLAIMREF_V2_PREFIX) + CONF_ID_MAX + \
				    1 + CLAIMREF_ID_MAX + 1 + \
				    CLAIMREF_EXP_MAX + 1 + CLAIMREF_SIG_LEN)

enum claimref_status {
	CLAIMREF_OK = 0,
	CLAIMREF_BAD_TENANT,	/* not [A-Za-z0-9_-]{1,64} */
	CLAIMREF_BAD_ID,	/* not a claim id, or not a reference at all */
	CLAIMREF_BAD_SIGNATURE,	/* v2: not ours; v1: not accepted */
	CLAIMREF_EXPIRED,	/* v2, ours, now >= exp */
};

/* The signing side: a key and how long a reference lives. */
struct claimref_key {
	const unsigned char	*key;
	size_t			 keylen;
	uint64_t		 ttl_s;
};

/* A reference read. */
struct claimref {
	int		 version;		/* 1 or 2 */
	char		 tenant[CONF_ID_MAX + 1];
	char		 id[CLAIMREF_ID_MAX + 1];	/* as written */
	uint64_t	 exp;			/* v2; 0 for v1 */
};

/*
 * The v2 reference of claim_id of tenant, expiring at now_s + the key's
 * ttl_s, into out (CLAIMREF_MAX).  0, or -1 when tenant or claim_id is
 * not one this file would read back.
 */
int	claimref_sign(const struct claimref_key *, const char *tenant,
	    const char *claim_id, uint64_t now_s, char *out, size_t outlen);

/*
 * Read and check ref (NUL-terminated) against the key at now_s; v1
 * references only when accept_v1.  *out is filled on CLAIMREF_OK and
 * CLAIMREF_EXPIRED.
 */
enum claimref_status claimref_check(const struct claimref_key *,
	    int accept_v1, const char *ref, uint64_t now_s, struct claimref *);

/*
 * A reference as stored with a hook (v2, or v1 from before references
 * were signed) made fresh for a delivery: the v2 reference to the same
 * tenant and claim id, signed with the key as it is now and expiring
 * ttl_s from now_s.  The stored one is trusted (the store is ours): its
 * signature and expiry are not looked at, so a reference outlives its
 * check-in's expiry and a new key.  0, or -1 when stored is not a
 * reference.
 */
int	claimref_renew(const struct claimref_key *, const char *stored,
	    uint64_t now_s, char *out, size_t outlen);

/* The error word of a status for the gateway's answers. */
const char *claimref_error(enum claimref_status);

#endif
