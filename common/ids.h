/* SPDX-License-Identifier: ISC */
/*
 * ids.h: hook ids (UUIDv7, RFC 9562) and claim/pack ids (ULID).
 *
 * A UUIDv7 is 48 bits of Unix milliseconds, version 7, 12 bits of counter
 * that orders ids made within one millisecond by one process, the variant,
 * and 62 random bits; ids from one process sort in the order they were
 * made, even across a backwards clock step of the same millisecond.
 */
#ifndef ANKUSA_IDS_H
#define ANKUSA_IDS_H

#include <stddef.h>
#include <stdint.h>

#define UUID_LEN	16
#define UUID_STRLEN	36	/* without NUL */
#define ULID_STRLEN	26

/* Seams for tests: the clock (Unix ms) and the random source. */
void	ids_set_clock(uint64_t (*)(void));
void	ids_set_random(void (*)(void *, size_t));

void	uuidv7_new(unsigned char out[UUID_LEN]);
/*
 * A hook's id may carry the low UUID_SEQ_BITS bits of its seq in its last
 * three bytes (the end of rand_b; RFC 9562 section 6.2 lets rand_b hold a
 * counter), so that the store finds the hook by its id without an index
 * entry (daemon/store/store_hookids.c).  The 38 bits of rand_b before
 * them stay random: ids made by two stores at one millisecond, with the
 * same counter and the same low bits of seq, still differ.
 */
#define UUID_SEQ_BITS	24
void	uuid_put_seq(unsigned char id[UUID_LEN], uint64_t seq);
uint32_t uuid_seq_low(const unsigned char id[UUID_LEN]);
void	uuid_format(const unsigned char in[UUID_LEN], char out[UUID_STRLEN + 1]);
int	uuid_parse(const char *, unsigned char out[UUID_LEN]);
/* The value of a hex digit (either case), or -1. */
int	ids_hexval(int c);

/* A ULID from a time and 80 bits given by the caller. */
void	ulid_format(uint64_t ms, const unsigned char rnd[10],
	    char out[ULID_STRLEN + 1]);

void	ids_random(void *, size_t);	/* getrandom(2), or fatal */

/* FNV-1a over len bytes, from h (IDS_FNV_INIT to start): the hash of the
 * in-memory tables (series, buckets, dedupe keys, claimed rows). */
#define IDS_FNV_INIT	14695981039346656037ULL
uint64_t ids_fnv1a(uint64_t h, const void *, size_t len);

#endif
