/* SPDX-License-Identifier: ISC */
/*
 * b64.h: strict base64 decoding (RFC 4648, standard alphabet), and
 * base64url encoding without padding (RFC 4648 section 5).
 *
 * Used for secrets in the configuration (whsec_ + base64) and for
 * signatures presented by webhook providers.  Unlike EVP_DecodeBlock it
 * refuses whitespace, the URL-safe alphabet, padding anywhere but at the
 * end, more than two padding bytes, and a length that no encoder makes.
 */
#ifndef ANKUSA_B64_H
#define ANKUSA_B64_H

#include <stddef.h>

/* Room that b64_decode needs for len encoded bytes. */
#define B64_DECODED_MAX(len)	((len) / 4 * 3 + 3)

/*
 * Decode len bytes of s (no NUL needed; a NUL byte is refused) into out,
 * which has room for B64_DECODED_MAX(len) bytes.  Padding is optional, but
 * if present it must make the length a multiple of 4.  Returns 0 and sets
 * *outlen, or -1 for anything that is not base64 of at least one byte.
 */
int	b64_decode(const char *s, size_t len, unsigned char *out,
	    size_t *outlen);

/*
 * Whether len bytes of s are base64 exactly as a standard encoder writes
 * it, which is what the SDKs that read a whsec_ secret accept: the
 * standard alphabet, at least one byte, padded with '=' to a multiple of
 * 4, and the unused low bits of the last character zero (so that one
 * string is the only spelling of its bytes).  NULL when they are, else
 * why not: "not base64", "unpadded" or
 * "not canonical (non-zero trailing bits)".
 */
const char *b64_noncanonical(const char *s, size_t len);

/* Room that b64url_encode needs for len bytes, with the NUL. */
#define B64URL_ENCODED_MAX(len)	(((len) * 4 + 2) / 3 + 1)

/* Encode len bytes of p in the URL-safe alphabet, without padding, into
 * out (B64URL_ENCODED_MAX(len) bytes); returns the length written. */
size_t	b64url_encode(const unsigned char *p, size_t len, char *out);

#endif
