/* SPDX-License-Identifier: ISC */
/*
 * sha256.h: SHA-256 of a buffer.
 *
 * OpenSSL 3's one-shot SHA256() looks the algorithm up on every call,
 * which costs more than hashing a hook of a few KiB; this fetches it once
 * per process and reuses one context; hmac_alg() likewise fetches HMAC
 * once.  Not for use from more than one thread of a process.
 */
#ifndef ANKUSA_SHA256_H
#define ANKUSA_SHA256_H

#include <stddef.h>

#define SHA256_LEN	32

/* out = SHA-256(p[0..len)); p may be NULL when len is 0. */
void	sha256(const void *p, size_t len, unsigned char out[SHA256_LEN]);

/* OpenSSL's HMAC, fetched on the first call; the caller must not free
 * it. */
struct evp_mac_st;
struct evp_mac_st *hmac_alg(void);

#endif
