/* SPDX-License-Identifier: ISC */
/*
 * claimref.c: claim references, signed and checked; see claimref.h.
 *
 * A reference is split at its colons: the prefix names the version, then
 * exactly the fields of that version, none empty.  The signature is
 * compared as text: the expected one is computed and encoded, then both
 * 43 characters compared with CRYPTO_memcmp, so no decoding of what a
 * stranger sent happens before the signature holds.
 */
#include "config.h"

#include <sys/types.h>

#include <stdio.h>
#include <string.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

#include "b64.h"
#include "claimref.h"
#include "conf.h"

static int	claimref_id_ok(const char *, size_t);
static int	claimref_mac(const struct claimref_key *, const char *, size_t,
		    char [CLAIMREF_SIG_LEN + 1]);
static enum claimref_status claimref_split(const char *, struct claimref *,
		    const char *[4], size_t [4]);

/* Crockford base32, either case, 1..CLAIMREF_ID_MAX characters. */
static int
claimref_id_ok(const char *s, size_t len)
{
	static const char b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"
	    "abcdefghjkmnpqrstvwxyz";
	size_t i;

	if (len == 0 || len > CLAIMREF_ID_MAX)
		return 0;
	for (i = 0; i < len; i++)
		if (s[i] == '\0' || strchr(b32, s[i]) == NULL)
			return 0;
	return 1;
}

/* The signature of the first len bytes of text. */
static int
claimref_mac(const struct claimref_key *k, const char *text, size_t len,
    char sig[CLAIMREF_SIG_LEN + 1])
{
	unsigned char md[EVP_MAX_MD_SIZE];
	unsigned int mdlen = 0;

	if (k->key == NULL || k->keylen == 0 ||
	    HMAC(EVP_sha256(), k->key, k->keylen, (const unsigned char *)text,
	    len, md, &mdlen) == NULL || mdlen != 32)
		return -1;
	b64url_encode(md, mdlen, sig);
	OPENSSL_cleanse(md, sizeof(md));
	return 0;
}

int
claimref_sign(const struct claimref_key *k, const char *tenant,
    const char *claim_id, uint64_t now_s, char *out, size_t outlen)
{
	char sig[CLAIMREF_SIG_LEN + 1];
	int n;

	if (tenant == NULL || !conf_valid_id(tenant) || claim_id == NULL ||
	    !claimref_id_ok(claim_id, strlen(claim_id)))
		return -1;
	n = snprintf(out, outlen, CLAIMREF_V2_PREFIX "%s:%s:%llu", tenant,
	    claim_id, (unsigned long long)(now_s + k->ttl_s));
	if (n < 0 || (size_t)n + 1 + CLAIMREF_SIG_LEN >= outlen ||
	    claimref_mac(k, out, n, sig) == -1)
		return -1;
	snprintf(out + n, outlen - n, ":%s", sig);
	return 0;
}

/* The version, tenant and id of ref into out, its fields into f and len
 * (4 for v2, 2 for v1): CLAIMREF_OK, or what is wrong with its shape. */
static enum claimref_status
claimref_split(const char *ref, struct claimref *out, const char *f[4],
    size_t len[4])
{
	const char *end, *p;
	size_t nf, i;

	memset(out, 0, sizeof(*out));
	if (strncmp(ref, CLAIMREF_V2_PREFIX, strlen(CLAIMREF_V2_PREFIX)) == 0) {
		out->version = 2;
		nf = 4;
	} else if (strncmp(ref, CLAIMREF_V1_PREFIX,
	    strlen(CLAIMREF_V1_PREFIX)) == 0) {
		out->version = 1;
		nf = 2;
	} else
		return CLAIMREF_BAD_ID;

	/* Exactly nf fields after the prefix, none empty. */
	p = ref + strlen(CLAIMREF_V2_PREFIX);
	for (i = 0; i < nf; i++) {
		f[i] = p;
		if ((end = strchr(p, ':')) == NULL)
			end = p + strlen(p);
		len[i] = end - p;
		if (len[i] == 0 || (*end == ':' && i == nf - 1) ||
		    (*end == '\0' && i < nf - 1))
			return i == 0 ? CLAIMREF_BAD_TENANT : CLAIMREF_BAD_ID;
		p = end + 1;
	}
	if (len[0] > CONF_ID_MAX)
		return CLAIMREF_BAD_TENANT;
	memcpy(out->tenant, f[0], len[0]);
	out->tenant[len[0]] = '\0';
	if (!conf_valid_id(out->tenant))
		return CLAIMREF_BAD_TENANT;
	if (!claimref_id_ok(f[1], len[1]))
		return CLAIMREF_BAD_ID;
	memcpy(out->id, f[1], len[1]);
	out->id[len[1]] = '\0';
	return CLAIMREF_OK;
}

enum claimref_status
claimref_check(const struct claimref_key *k, int accept_v1, const char *ref,
    uint64_t now_s, struct claimref *out)
{
	const char *f[4];
	char want[CLAIMREF_SIG_LEN + 1];
	size_t len[4], i;
	uint64_t exp = 0;
	enum claimref_status st;

	if ((st = claimref_split(ref, out, f, len)) != CLAIMREF_OK)
		return st;
	if (out->version == 1)
		return accept_v1 ? CLAIMREF_OK : CLAIMREF_BAD_SIGNATURE;

	/* The signature first: nothing else of a stranger's is believed. */
	if (len[3] != CLAIMREF_SIG_LEN ||
	    claimref_mac(k, ref, f[3] - 1 - ref, want) == -1 ||
	    CRYPTO_memcmp(want, f[3], CLAIMREF_SIG_LEN) != 0)
		return CLAIMREF_BAD_SIGNATURE;
	/* Ours, so its expiry is what we wrote: digits that fit. */
	if (len[2] > CLAIMREF_EXP_MAX)
		return CLAIMREF_BAD_SIGNATURE;
	for (i = 0; i < len[2]; i++) {
		if (f[2][i] < '0' || f[2][i] > '9')
			return CLAIMREF_BAD_SIGNATURE;
		exp = exp * 10 + (f[2][i] - '0');
	}
	out->exp = exp;
	if (now_s >= exp)
		return CLAIMREF_EXPIRED;
	return CLAIMREF_OK;
}

int
claimref_renew(const struct claimref_key *k, const char *stored,
    uint64_t now_s, char *out, size_t outlen)
{
	struct claimref r;
	const char *f[4];
	size_t len[4];

	if (claimref_split(stored, &r, f, len) != CLAIMREF_OK)
		return -1;
	return claimref_sign(k, r.tenant, r.id, now_s, out, outlen);
}

const char *
claimref_error(enum claimref_status st)
{
	switch (st) {
	case CLAIMREF_OK:
		return "ok";
	case CLAIMREF_BAD_TENANT:
		return "invalid_tenant";
	case CLAIMREF_BAD_ID:
		return "invalid_id";
	case CLAIMREF_BAD_SIGNATURE:
		return "bad_signature";
	case CLAIMREF_EXPIRED:
		return "ref_expired";
	}
	return "invalid_id";
}
