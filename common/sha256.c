/* SPDX-License-Identifier: ISC */
/*
 * sha256.c: SHA-256 with the digest fetched once; see sha256.h.
 */
#include "config.h"

#include <openssl/evp.h>

#include "log.h"
#include "sha256.h"

void
sha256(const void *p, size_t len, unsigned char out[SHA256_LEN])
{
	static EVP_MD *md;
	static EVP_MD_CTX *ctx;
	unsigned int n = 0;

	if (md == NULL && (md = EVP_MD_fetch(NULL, "SHA256", NULL)) == NULL)
		fatalx("sha256: no SHA-256 in this OpenSSL");
	if (ctx == NULL && (ctx = EVP_MD_CTX_new()) == NULL)
		fatalx("sha256: out of memory");
	if (!EVP_DigestInit_ex2(ctx, md, NULL) ||
	    !EVP_DigestUpdate(ctx, p != NULL ? p : "", len) ||
	    !EVP_DigestFinal_ex(ctx, out, &n) || n != SHA256_LEN)
		fatalx("sha256: digest failed");
}

EVP_MAC *
hmac_alg(void)
{
	static EVP_MAC *mac;

	if (mac == NULL && (mac = EVP_MAC_fetch(NULL, "HMAC", NULL)) == NULL)
		fatalx("hmac: no HMAC in this OpenSSL");
	return mac;
}
