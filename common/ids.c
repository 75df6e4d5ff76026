/* SPDX-License-Identifier: ISC */
/*
 * ids.c: UUIDv7 hook ids, ULIDs and randomness; see ids.h.
 */
#include "config.h"

#include <sys/random.h>

#include <errno.h>
#include <string.h>

#include "clock.h"
#include "ids.h"
#include "log.h"

static uint64_t	ids_default_clock(void);
static void	ids_default_random(void *, size_t);

static uint64_t	(*ids_clock)(void) = ids_default_clock;
static void	(*ids_rand)(void *, size_t) = ids_default_random;

/* Last id's time and counter, so ids of one process sort in order. */
static uint64_t	last_ms;
static uint16_t	last_ctr;

static uint64_t
ids_default_clock(void)
{
	return time_wall_ms();
}

/* getrandom(2) in blocks: one system call per IDS_POOL bytes rather than
 * one per id.  Each process fills its own pool (children exec). */
#define IDS_POOL	512

static void
ids_fill(unsigned char *b, size_t n)
{
	ssize_t r;

	while (n > 0) {
		r = getrandom(b, n, 0);
		if (r == -1) {
			if (errno == EINTR)
				continue;
			fatal("getrandom");
		}
		b += r;
		n -= r;
	}
}

static void
ids_default_random(void *p, size_t n)
{
	static unsigned char pool[IDS_POOL];
	static size_t left;
	unsigned char *b = p;
	size_t k;

	if (n > sizeof(pool)) {
		ids_fill(b, n);
		return;
	}
	while (n > 0) {
		if (left == 0) {
			ids_fill(pool, sizeof(pool));
			left = sizeof(pool);
		}
		k = n < left ? n : left;
		memcpy(b, pool + sizeof(pool) - left, k);
		/* Bytes handed out are not kept. */
		explicit_bzero(pool + sizeof(pool) - left, k);
		left -= k;
		b += k;
		n -= k;
	}
}

void
ids_set_clock(uint64_t (*fn)(void))
{
	ids_clock = fn != NULL ? fn : ids_default_clock;
	last_ms = 0;
	last_ctr = 0;
}

void
ids_set_random(void (*fn)(void *, size_t))
{
	ids_rand = fn != NULL ? fn : ids_default_random;
}

void
ids_random(void *p, size_t n)
{
	ids_rand(p, n);
}

uint64_t
ids_fnv1a(uint64_t h, const void *p, size_t len)
{
	const unsigned char *b = p;

	while (len-- > 0)
		h = (h ^ *b++) * 1099511628211ULL;
	return h;
}

/*
 * Layout (RFC 9562, method 1 of section 6.2): unix_ts_ms (48) | ver 7 (4) |
 * rand_a used as a 12-bit counter | var 0b10 (2) | rand_b (62).  Within one
 * millisecond, or when the clock steps back, the counter increments from
 * the last id; when it would wrap, the time is advanced by one ms.
 */
void
uuidv7_new(unsigned char out[UUID_LEN])
{
	uint64_t ms = ids_clock();
	unsigned char rnd[10];
	uint16_t ctr;

	ids_rand(rnd, sizeof(rnd));
	if (ms <= last_ms) {
		ms = last_ms;
		if (last_ctr >= 0x0fff) {
			ms++;
			ctr = rnd[0] & 0x03;	/* leave room to count */
		} else
			ctr = last_ctr + 1;
	} else
		ctr = ((rnd[0] << 8) | rnd[1]) & 0x01ff; /* low start */
	last_ms = ms;
	last_ctr = ctr;

	out[0] = ms >> 40;
	out[1] = ms >> 32;
	out[2] = ms >> 24;
	out[3] = ms >> 16;
	out[4] = ms >> 8;
	out[5] = ms;
	out[6] = 0x70 | ((ctr >> 8) & 0x0f);
	out[7] = ctr & 0xff;
	out[8] = 0x80 | (rnd[2] & 0x3f);
	memcpy(out + 9, rnd + 3, 7);
}

void
uuid_put_seq(unsigned char id[UUID_LEN], uint64_t seq)
{
	id[13] = (seq >> 16) & 0xff;
	id[14] = (seq >> 8) & 0xff;
	id[15] = seq & 0xff;
}

uint32_t
uuid_seq_low(const unsigned char id[UUID_LEN])
{
	return ((uint32_t)id[13] << 16) | ((uint32_t)id[14] << 8) | id[15];
}

void
uuid_format(const unsigned char in[UUID_LEN], char out[UUID_STRLEN + 1])
{
	static const char hex[] = "0123456789abcdef";
	int i, o = 0;

	for (i = 0; i < UUID_LEN; i++) {
		if (i == 4 || i == 6 || i == 8 || i == 10)
			out[o++] = '-';
		out[o++] = hex[in[i] >> 4];
		out[o++] = hex[in[i] & 0x0f];
	}
	out[o] = '\0';
}

int
ids_hexval(int c)
{
	if (c >= '0' && c <= '9')
		return c - '0';
	if (c >= 'a' && c <= 'f')
		return c - 'a' + 10;
	if (c >= 'A' && c <= 'F')
		return c - 'A' + 10;
	return -1;
}

int
uuid_parse(const char *s, unsigned char out[UUID_LEN])
{
	int i, hi, lo;

	if (strlen(s) != UUID_STRLEN)
		return -1;
	for (i = 0; i < UUID_LEN; i++) {
		if (*s == '-') {
			if (i != 4 && i != 6 && i != 8 && i != 10)
				return -1;
			s++;
		}
		if ((hi = ids_hexval(s[0])) == -1 ||
		    (lo = ids_hexval(s[1])) == -1)
			return -1;
		out[i] = hi << 4 | lo;
		s += 2;
	}
	return *s == '\0' ? 0 : -1;
}

/* Crockford base32: 48-bit time in 10 characters, 80 bits in 16. */
void
ulid_format(uint64_t ms, const unsigned char rnd[10], char out[ULID_STRLEN + 1])
{
	static const char b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
	unsigned char v[16];
	int i, bit;

	v[0] = ms >> 40;
	v[1] = ms >> 32;
	v[2] = ms >> 24;
	v[3] = ms >> 16;
	v[4] = ms >> 8;
	v[5] = ms;
	memcpy(v + 6, rnd, 10);
	/* 128 bits as 26 five-bit groups, the first holding 3 bits. */
	for (i = 0; i < ULID_STRLEN; i++) {
		int val = 0, b;

		for (b = 0; b < 5; b++) {
			bit = i * 5 + b - 2;	/* two leading zero bits */
			val <<= 1;
			if (bit >= 0)
				val |= (v[bit / 8] >> (7 - bit % 8)) & 1;
		}
		out[i] = b32[val];
	}
	out[ULID_STRLEN] = '\0';
}
