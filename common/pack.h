/* SPDX-License-Identifier: ISC */
/*
 * pack.h: claim packs, the ZIP files of the claim check (pure: no I/O).
 *
 * A pack holds the claims of one tenant checked in together.  It is an
 * uncompressed ZIP (method 0, no data descriptors, no ZIP64, no extra
 * fields), its entries in this order:
 *
 *   index.bin      8 bytes per claim: big-endian u32 offset of the claim's
 *                  data in the pack, u32 length
 *   <claim id>     one per claim, in position order, the body verbatim
 *   manifest.json  {"v":1,"tenant":..,"pack_id":..,"created_at":..,
 *                   "claims":[{"id":..,"size":..,"sha256":..}]}
 *
 * then the central directory and the end record.  index.bin's data always
 * starts at PACK_INDEX_OFF (its local header is the first).
 *
 * Ids.  A pack id is 64 random bits written as 16 lowercase hex digits.  A
 * claim id begins with its locator, a ULID: the 48-bit time is the pack's
 * write time in Unix ms, the 80 bits below are the pack's 64 random bits
 * then the claim's 16-bit position in the pack.  So the locator names the
 * pack: the date of its time (UTC) and its pack id give the storage key
 * claims/tenant=<t>/dt=<YYYY-MM-DD>/<pack_id>, and its last 16 bits the
 * index.bin entry.  A claim id of a v2 pack (PACK_ID_V2_LEN characters)
 * goes on with 128 random bits of the claim's own, drawn for it alone
 * and written as a second 26-character Crockford string (the first
 * character 0-7); a v1 id (before claim references were signed) is the
 * locator alone.  The whole id is the claim's entry name in the pack, so
 * the gateway finds a claim from its id with no table (the locator) and
 * serves it only to who knows the id whole (the entry's name, compared
 * in constant time): knowing every other claim of a pack says nothing of
 * a claim's own 128 bits.  References are claimref.h's.

 * Limits: a pack is at most PACK_MAX_BYTES (offsets and sizes are u32;
 * 0xffffffff is ZIP64's marker) and PACK_MAX_CLAIMS claims (the end
 * record counts entries in a u16, index.bin and manifest.json included,
 * 0xffff being ZIP64's marker).  The master splits above these.
 *
 * Reading a pack verifies what it uses: index.bin's local header (name,
 * method 0, size a multiple of 8), the entry's bounds, and the claim's own
 * local header (its name must be the claim id asked for, its size the
 * index's); anything else is PACK_DAMAGED.  pack_verify() checks a whole
 * pack (every header, CRC-32, the central directory and the end record).
 */
#ifndef ANKUSA_PACK_H
#define ANKUSA_PACK_H

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "ids.h"

#define PACK_ID_STRLEN		16	/* hex digits, without NUL */
#define PACK_MAX_CLAIMS		65532
#define PACK_MAX_BYTES		0xfffffffeULL
#define PACK_LH_LEN		30	/* a local file header, before its name */
#define PACK_INDEX_NAME		"index.bin"
#define PACK_INDEX_OFF		(PACK_LH_LEN + 9)	/* index.bin's data */
#define PACK_ID_V1_LEN		ULID_STRLEN	/* the locator alone */
#define PACK_ID_V2_LEN		(2 * ULID_STRLEN)	/* and its own bits */
#define PACK_ID_MAX		PACK_ID_V2_LEN
#define PACK_SECRET_LEN		16	/* a v2 claim's own random bytes */
#define PACK_URN_PREFIX		"urn:ankusa:claim:v1:"
/* "urn:ankusa:claim:v1:" tenant ":" ULID, with the NUL */
#define PACK_URN_MAX		(sizeof(PACK_URN_PREFIX) + CONF_ID_MAX + 1 + \
				    ULID_STRLEN)
/* "claims/tenant=" tenant "/dt=YYYY-MM-DD/" pack id, with the NUL */
#define PACK_KEY_MAX		(14 + CONF_ID_MAX + 15 + PACK_ID_STRLEN + 1)

enum pack_status {
	PACK_OK = 0,
	PACK_NOTFOUND,		/* no such position in this pack */
	PACK_DAMAGED,		/* the bytes are not a pack we wrote */
	PACK_IOERR,		/* the reader failed (store error) */
};

/* One body to pack. */
struct pack_body {
	const void	*data;
	size_t		 len;
};

/* A written pack.  pack_write() fills it; pack_free() releases it. */
struct pack {
	char		 tenant[CONF_ID_MAX + 1];
	uint64_t	 created_ms;	/* write time, the ids' time part */
	unsigned char	 rnd[8];	/* the pack's random bits */
	char		 id[PACK_ID_STRLEN + 1];
	char		 key[PACK_KEY_MAX];	/* the storage key */
	size_t		 n;		/* claims */
	size_t		 idlen;		/* PACK_ID_V1_LEN or PACK_ID_V2_LEN */
	char		(*claim_ids)[PACK_ID_MAX + 1];	/* n, by position */
	uint32_t	*offsets;	/* n: each claim's data in buf */
	unsigned char	*buf;		/* the ZIP bytes */
	size_t		 len;
};

/* What a claim id says: its pack and position. */
struct pack_claim {
	char		 tenant[CONF_ID_MAX + 1];
	char		 id[PACK_ID_MAX + 1];	/* canonical: upper case */
	size_t		 idlen;		/* PACK_ID_V1_LEN or PACK_ID_V2_LEN */
	uint64_t	 ms;		/* the pack's write time */
	unsigned char	 rnd[8];	/* the pack's random bits */
	uint16_t	 pos;		/* in the pack */
	char		 pack_id[PACK_ID_STRLEN + 1];
	char		 key[PACK_KEY_MAX];
};

/*
 * Build the pack of n bodies (1..PACK_MAX_CLAIMS) for tenant, written at
 * now_ms with the pack's random bits rnd and each claim's own
 * (PACK_SECRET_LEN bytes a claim, n of them, in secrets; the caller draws
 * them with ids_random; a seam for tests).  secrets NULL writes the v1
 * ids of the packs written before references were signed, for the
 * tests of reading those.  0, or -1
 * with a reason in err (tenant invalid, too many claims, too many
 * bytes).  Out of memory is fatal.
 */
int	pack_write(struct pack *, const char *tenant, uint64_t now_ms,
	    const unsigned char rnd[8], const unsigned char *secrets,
	    const struct pack_body *, size_t n, char *err, size_t errlen);
void	pack_free(struct pack *);
/* The exact bytes of the pack of n bodies of these sizes for a tenant id
 * of tenant_len characters and claim ids of idlen, for the master's
 * split (at most PACK_CLAIM_OVERHEAD + size per claim, plus
 * PACK_FIXED_OVERHEAD). */
#define PACK_CLAIM_OVERHEAD	354
#define PACK_FIXED_OVERHEAD	(320 + CONF_ID_MAX)
uint64_t pack_size(const uint64_t *sizes, size_t n, size_t tenant_len,
	    size_t idlen);

/* The v1 URN of claim i of a written v1 pack into out (PACK_URN_MAX). */
void	pack_urn(const struct pack *, size_t i, char *out, size_t outlen);

/* Parse and check tenant ([A-Za-z0-9_-]{1,64}) and claim id (26 or 52
 * Crockford base32 characters, each 26 of a 128-bit value, either case):
 * 0, or -1 for a bad tenant, -2 for a bad id. */
int	pack_claim_parse(const char *tenant, const char *claim_id,
	    struct pack_claim *);

/*
 * Find a claim's data in its pack through a reader of pack bytes:
 * read(arg, off, len, buf) fills exactly len bytes at off and returns
 * PACK_OK, PACK_DAMAGED when the pack is shorter, PACK_NOTFOUND when there
 * is no such pack, PACK_IOERR when the store failed.  On PACK_OK *offp and
 * *lenp give the claim's data in the pack.  Two to three reads.
 */
typedef enum pack_status (*pack_read_fn)(void *arg, uint64_t off, size_t len,
	    void *buf);
enum pack_status pack_locate(pack_read_fn, void *arg,
	    const struct pack_claim *, uint64_t *offp, uint32_t *lenp);

/* Check a whole pack in memory: 0, or -1 with a reason in err. */
int	pack_verify(const void *pack, size_t len, char *err, size_t errlen);

/* CRC-32 (ISO-HDLC, as ZIP), exposed for tests. */
uint32_t pack_crc32(uint32_t crc, const void *, size_t);

#endif
