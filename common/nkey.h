/* SPDX-License-Identifier: ISC */
/*
 * nkey.h: NATS user NKeys (the nats sink's auth.nkey_seed).  Pure: no
 * I/O.
 *
 * A seed is base32 (RFC 4648, no padding) of two prefix bytes (the seed
 * type and the key's type, a user's here), the 32-byte Ed25519 seed and
 * a CRC-16/XMODEM of the rest, little-endian; a user's public key is
 * base32 of its type byte (U...), the 32-byte Ed25519 public key and the
 * CRC.  libnats signs the server's nonce with the seed (nats_Sign) but
 * has no call for the public key, which a connection without a JWT
 * announces.
 */
#ifndef ANKUSA_NKEY_H
#define ANKUSA_NKEY_H

#include <stddef.h>
#include <stdint.h>

#define NKEY_SEED_RAW	32
#define NKEY_SEED_LEN	58	/* characters of a seed */
#define NKEY_PUB_LEN	56	/* characters of a public key */

/* Key types, the first byte of a public key (its first letter). */
#define NKEY_OPERATOR	(14 << 3)	/* 'O' */
#define NKEY_ACCOUNT	0		/* 'A' */
#define NKEY_USER	(20 << 3)	/* 'U' */

/* The user public key of seed into pub (NKEY_PUB_LEN + 1 bytes): 0, or
 * -1 when seed is not a user seed (its length, alphabet, prefix or
 * CRC). */
int	nkey_user_public(const char *seed, char pub[NKEY_PUB_LEN + 1]);
/* The user seed of 32 raw bytes into seed (NKEY_SEED_LEN + 1 bytes). */
void	nkey_user_seed(const uint8_t raw[NKEY_SEED_RAW],
	    char seed[NKEY_SEED_LEN + 1]);
/* The same for a key of any type (NKEY_*): the seed of that type, and
 * the public key of a seed of the type given. */
void	nkey_seed(uint8_t type, const uint8_t raw[NKEY_SEED_RAW],
	    char seed[NKEY_SEED_LEN + 1]);
int	nkey_public(uint8_t type, const char *seed,
	    char pub[NKEY_PUB_LEN + 1]);

#endif
