/* SPDX-License-Identifier: ISC */
/*
 * nkey.c: NATS user NKeys; see nkey.h.
 */
#include "config.h"

#include <string.h>

#include <openssl/evp.h>

#include "nkey.h"

#define NKEY_PREFIX_SEED	(18 << 3)	/* 'S' */

static const char b32[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ234567";

static uint16_t
nkey_crc16(const uint8_t *p, size_t n)
{
	uint16_t crc = 0;
	int i;

	while (n-- > 0) {
		crc ^= (uint16_t)*p++ << 8;
		for (i = 0; i < 8; i++)
			crc = crc & 0x8000 ? (uint16_t)(crc << 1) ^ 0x1021 :
			    (uint16_t)(crc << 1);
	}
	return crc;
}

/* n bytes to base32, no padding, NUL-terminated. */
static void
nkey_b32(const uint8_t *p, size_t n, char *out)
{
	uint32_t acc = 0;
	int bits = 0;

	while (n-- > 0) {
		acc = acc << 8 | *p++;
		bits += 8;
		while (bits >= 5) {
			*out++ = b32[(acc >> (bits - 5)) & 31];
			bits -= 5;
		}
	}
	if (bits > 0)
		*out++ = b32[(acc << (5 - bits)) & 31];
	*out = '\0';
}

/* base32 s to exactly n bytes; -1 for another length or a character
 * out of the alphabet. */
static int
nkey_unb32(const char *s, uint8_t *p, size_t n)
{
	const char *c;
	uint32_t acc = 0;
	size_t got = 0;
	int bits = 0;

	for (; *s != '\0'; s++) {
		if ((c = strchr(b32, *s)) == NULL || *s == '\0')
			return -1;
		acc = acc << 5 | (uint32_t)(c - b32);
		bits += 5;
		if (bits >= 8) {
			if (got == n)
				return -1;
			p[got++] = (uint8_t)(acc >> (bits - 8));
			bits -= 8;
		}
	}
	return got == n ? 0 : -1;
}

void
nkey_seed(uint8_t type, const uint8_t raw[NKEY_SEED_RAW],
    char seed[NKEY_SEED_LEN + 1])
{
	uint8_t b[2 + NKEY_SEED_RAW + 2];
	uint16_t crc;

	b[0] = NKEY_PREFIX_SEED | type >> 5;
	b[1] = (type & 31) << 3;
	memcpy(b + 2, raw, NKEY_SEED_RAW);
	crc = nkey_crc16(b, 2 + NKEY_SEED_RAW);
	b[2 + NKEY_SEED_RAW] = crc & 0xff;
	b[3 + NKEY_SEED_RAW] = crc >> 8;
	nkey_b32(b, sizeof(b), seed);
	explicit_bzero(b, sizeof(b));
}

int
nkey_public(uint8_t type, const char *seed, char pub[NKEY_PUB_LEN + 1])
{
	uint8_t b[2 + NKEY_SEED_RAW + 2], k[1 + 32 + 2];
	EVP_PKEY *pk = NULL;
	size_t klen = 32;
	uint16_t crc;
	int rc = -1;

	if (strlen(seed) != NKEY_SEED_LEN ||
	    nkey_unb32(seed, b, sizeof(b)) == -1)
		goto out;
	crc = nkey_crc16(b, 2 + NKEY_SEED_RAW);
	if (b[2 + NKEY_SEED_RAW] != (crc & 0xff) ||
	    b[3 + NKEY_SEED_RAW] != crc >> 8 ||
	    (b[0] & 0xf8) != NKEY_PREFIX_SEED ||
	    ((b[0] & 7) << 5 | (b[1] & 0xf8) >> 3) != type)
		goto out;
	if ((pk = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, b + 2,
	    NKEY_SEED_RAW)) == NULL ||
	    EVP_PKEY_get_raw_public_key(pk, k + 1, &klen) != 1 || klen != 32)
		goto out;
	k[0] = type;
	crc = nkey_crc16(k, 33);
	k[33] = crc & 0xff;
	k[34] = crc >> 8;
	nkey_b32(k, sizeof(k), pub);
	rc = 0;
out:
	EVP_PKEY_free(pk);
	explicit_bzero(b, sizeof(b));
	return rc;
}

void
nkey_user_seed(const uint8_t raw[NKEY_SEED_RAW], char seed[NKEY_SEED_LEN + 1])
{
	nkey_seed(NKEY_USER, raw, seed);
}

int
nkey_user_public(const char *seed, char pub[NKEY_PUB_LEN + 1])
{
	return nkey_public(NKEY_USER, seed, pub);
}
