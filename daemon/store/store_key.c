/* SPDX-License-Identifier: ISC */
/*
 * store_key.c: the store's keys: big-endian integers and every table's key
 * builders, in the layout that store_rec.c's header comment gives.
 * Functions of their bytes alone, calling nothing of the store: the
 * scheduler's tests build their fake store's row keys with this file
 * alone, without Berkeley DB.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "store.h"
#include "store_int.h"

static size_t	 key_str(unsigned char *, size_t, size_t, const char *);

void
rec_put_u32(unsigned char *p, uint32_t v)
{
	p[0] = v >> 24;
	p[1] = v >> 16;
	p[2] = v >> 8;
	p[3] = v;
}

void
rec_put_u64(unsigned char *p, uint64_t v)
{
	rec_put_u32(p, v >> 32);
	rec_put_u32(p + 4, (uint32_t)v);
}

uint32_t
rec_get_u32(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | p[3];
}

uint64_t
rec_get_u64(const unsigned char *p)
{
	return (uint64_t)rec_get_u32(p) << 32 | rec_get_u32(p + 4);
}

/* Append a string and its NUL at off; 0 if it does not fit. */
static size_t
key_str(unsigned char *out, size_t outsz, size_t off, const char *s)
{
	size_t n = strlen(s) + 1;

	if (off > outsz || n > outsz - off)
		return 0;
	memcpy(out + off, s, n);
	return off + n;
}

void
store_key_hook(unsigned char out[8], uint64_t seq)
{
	rec_put_u64(out, seq);
}

void
store_key_row(unsigned char out[STORE_ROWKEY_LEN], uint64_t seq,
    uint32_t sink_index)
{
	rec_put_u64(out, seq);
	rec_put_u32(out + 8, sink_index);
}

void
store_key_attempt(unsigned char out[STORE_ATTEMPT_KEY_LEN],
    const unsigned char id[UUID_LEN], uint32_t sink, uint64_t round,
    uint32_t n)
{
	memcpy(out, id, UUID_LEN);
	rec_put_u32(out + 16, sink);
	rec_put_u64(out + 20, round);
	rec_put_u32(out + 28, n);
}

uint64_t
store_rowkey_seq(const unsigned char key[STORE_ROWKEY_LEN])
{
	return rec_get_u64(key);
}

void
store_key_dead(unsigned char out[STORE_DEADKEY_LEN], uint64_t dead_at,
    const unsigned char rowkey[STORE_ROWKEY_LEN])
{
	rec_put_u64(out, dead_at);
	memcpy(out + 8, rowkey, STORE_ROWKEY_LEN);
}

size_t
store_key_due(unsigned char *out, size_t outsz, const char *tenant,
    uint64_t due, const unsigned char rowkey[STORE_ROWKEY_LEN])
{
	size_t off;

	if ((off = key_str(out, outsz, 0, tenant)) == 0 ||
	    outsz - off < 8 + STORE_ROWKEY_LEN)
		return 0;
	rec_put_u64(out + off, due);
	memcpy(out + off + 8, rowkey, STORE_ROWKEY_LEN);
	return off + 8 + STORE_ROWKEY_LEN;
}

size_t
store_key_lane(unsigned char *out, size_t outsz, const char *tenant,
    const char *source, uint32_t sink_index, uint64_t lane_hash)
{
	size_t off;

	if ((off = key_str(out, outsz, 0, tenant)) == 0 ||
	    (off = key_str(out, outsz, off, source)) == 0 ||
	    outsz - off < 12)
		return 0;
	rec_put_u32(out + off, sink_index);
	rec_put_u64(out + off + 4, lane_hash);
	return off + 12;
}

size_t
store_key_member(unsigned char *out, size_t outsz, const unsigned char *lane,
    size_t lanelen, uint64_t seq)
{
	if (lanelen == 0 || outsz < lanelen + 8)
		return 0;
	memmove(out, lane, lanelen);
	rec_put_u64(out + lanelen, seq);
	return lanelen + 8;
}

size_t
store_key_dedupe(unsigned char *out, size_t outsz, const char *tenant,
    const char *source, const char *key)
{
	size_t off, n = strlen(key);

	if ((off = key_str(out, outsz, 0, tenant)) == 0 ||
	    (off = key_str(out, outsz, off, source)) == 0 ||
	    outsz - off < n)
		return 0;
	memcpy(out + off, key, n);
	return off + n;
}

size_t
store_key_dedupe_exp(unsigned char *out, size_t outsz, uint64_t expires,
    const unsigned char *dkey, size_t dkeylen)
{
	if (outsz < 8 + dkeylen)
		return 0;
	rec_put_u64(out, expires);
	memcpy(out + 8, dkey, dkeylen);
	return 8 + dkeylen;
}
