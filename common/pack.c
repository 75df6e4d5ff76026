/* SPDX-License-Identifier: ISC */
/*
 * pack.c: claim packs: writing one, finding a claim in one, checking one;
 * see pack.h for the format and the ids.
 *
 * ZIP as written here (APPNOTE 6.3.x, the subset every reader knows):
 * local header (30 bytes + name) then the data, for index.bin, each claim,
 * manifest.json; then one central directory header (46 bytes + name) per
 * entry, then the end of central directory record (22 bytes, no comment).
 * Method 0 (stored), version needed 1.0, no flags, no extra fields, sizes
 * and CRC-32 in the local headers (no data descriptors), the DOS time of
 * the pack's write time (UTC), Unix mode 0644 in the external attributes.
 * All integers little-endian, as ZIP wants; index.bin's are big-endian,
 * as the contract wants.
 *
 * Nothing here does I/O or reads a clock: the write time and the random
 * bits are the caller's.  Out of memory is fatal; every other failure is
 * a value.
 */
#include "config.h"

#include <sys/types.h>

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include <openssl/crypto.h>
#include <openssl/sha.h>

#include "conf.h"
#include "ids.h"
#include "log.h"
#include "pack.h"

#define PACK_CH_LEN		46	/* central directory header */
#define PACK_END_LEN		22	/* end of central directory */
#define PACK_SIG_LOCAL		0x04034b50U
#define PACK_SIG_CENTRAL	0x02014b50U
#define PACK_SIG_END		0x06054b50U
#define PACK_MANIFEST_NAME	"manifest.json"
#define PACK_VERSION_NEEDED	10	/* 1.0: stored entries */
#define PACK_VERSION_MADE	((3 << 8) | 20)	/* Unix, 2.0 */
#define PACK_EXT_ATTR		(0100644U << 16)
#define PACK_ISO8601_LEN	24	/* 2024-01-31T23:59:59.999Z */
#define PACK_LOCATE_ONE_READ	4096	/* index head + entry in one read */

/* A writer over a buffer sized in advance. */
struct pack_out {
	unsigned char	*p;
	size_t		 len;
	size_t		 cap;
};

/* One entry of the central directory, as it was written. */
struct pack_entry {
	const char	*name;
	size_t		 namelen;
	uint32_t	 crc;
	uint32_t	 size;
	uint32_t	 lh_off;	/* its local header */
};

static const char pack_b32[] = "0123456789ABCDEFGHJKMNPQRSTVWXYZ";
static uint32_t	pack_crc_table[256];
static int	pack_crc_ready;

static void	pack_crc_init(void);
static size_t	pack_digits(uint64_t);
static void	pack_iso8601(uint64_t, char *);
static void	pack_dos_time(uint64_t, uint16_t *, uint16_t *);
static void	pack_put16(struct pack_out *, uint16_t);
static void	pack_put32(struct pack_out *, uint32_t);
static void	pack_put(struct pack_out *, const void *, size_t);
static void	pack_local(struct pack_out *, struct pack_entry *,
		    uint16_t, uint16_t, const void *, size_t);
static void	pack_central(struct pack_out *, const struct pack_entry *,
		    uint16_t, uint16_t);
static uint16_t	pack_get16(const unsigned char *);
static uint32_t	pack_get32(const unsigned char *);
static uint32_t	pack_get32be(const unsigned char *);
static void	pack_hex(const unsigned char *, size_t, char *);
static int	pack_ulid_decode(const char *, unsigned char [16]);
static int	pack_id_decode(const char *, size_t, unsigned char [16]);
static void	pack_claim_fill(struct pack_claim *, const unsigned char [16]);
static int	pack_check_header(const unsigned char *, size_t, uint32_t);
static int	pack_check_local(const unsigned char *, const char *, size_t,
		    uint32_t);

/* --- CRC-32, reflected, polynomial 0xedb88320 --- */

static void
pack_crc_init(void)
{
	uint32_t c;
	int i, k;

	for (i = 0; i < 256; i++) {
		c = i;
		for (k = 0; k < 8; k++)
			c = c & 1 ? 0xedb88320U ^ (c >> 1) : c >> 1;
		pack_crc_table[i] = c;
	}
	pack_crc_ready = 1;
}

uint32_t
pack_crc32(uint32_t crc, const void *data, size_t len)
{
	const unsigned char *p = data;

	if (!pack_crc_ready)
		pack_crc_init();
	crc = ~crc;
	while (len-- > 0)
		crc = pack_crc_table[(crc ^ *p++) & 0xff] ^ (crc >> 8);
	return ~crc;
}

/* --- writing --- */

static size_t
pack_digits(uint64_t v)
{
	size_t n = 1;

	while (v >= 10) {
		v /= 10;
		n++;
	}
	return n;
}

/*
 * Exactly what pack_write() makes: the fixed part (index.bin's and
 * manifest.json's local and central headers, the end record, the
 * manifest's frame with tenant, pack id and time) and per claim its
 * index entry, local and central headers, and manifest object.
 */
uint64_t
pack_size(const uint64_t *sizes, size_t n, size_t tenant_len, size_t idlen)
{
	uint64_t total;
	size_t i;

	total = (PACK_LH_LEN + 9) + (PACK_LH_LEN + 13) + (PACK_CH_LEN + 9) +
	    (PACK_CH_LEN + 13) + PACK_END_LEN;
	/* {"v":1,"tenant":"T","pack_id":"P","created_at":"C","claims":[]} */
	total += 17 + tenant_len + 13 + PACK_ID_STRLEN + 16 +
	    PACK_ISO8601_LEN + 12 + 2;
	for (i = 0; i < n; i++) {
		total += 8 + (PACK_LH_LEN + idlen) + (PACK_CH_LEN + idlen) +
		    sizes[i];
		/* {"id":"I","size":S,"sha256":"H"} and a comma but one */
		total += 7 + idlen + 9 + pack_digits(sizes[i]) + 11 +
		    64 + 2 + (i > 0);
	}
	return total;
}

static void
pack_iso8601(uint64_t ms, char *out)
{
	struct tm tm;
	time_t t = ms / 1000;

	gmtime_r(&t, &tm);
	snprintf(out, PACK_ISO8601_LEN + 1, "%04d-%02d-%02dT%02d:%02d:%02d."
	    "%03dZ", tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, tm.tm_hour,
	    tm.tm_min, tm.tm_sec, (int)(ms % 1000));
}

/* MS-DOS date and time (2 s resolution, from 1980), as ZIP keeps them. */
static void
pack_dos_time(uint64_t ms, uint16_t *dtime, uint16_t *ddate)
{
	struct tm tm;
	time_t t = ms / 1000;

	gmtime_r(&t, &tm);
	if (tm.tm_year < 80) {
		*dtime = 0;
		*ddate = (1 << 5) | 1;
		return;
	}
	if (tm.tm_year > 80 + 127)
		tm.tm_year = 80 + 127;
	*dtime = tm.tm_hour << 11 | tm.tm_min << 5 | tm.tm_sec / 2;
	*ddate = (tm.tm_year - 80) << 9 | (tm.tm_mon + 1) << 5 | tm.tm_mday;
}

static void
pack_put(struct pack_out *o, const void *p, size_t n)
{
	if (o->len + n > o->cap)
		fatalx("pack: writing past the computed size");
	if (n > 0)
		memcpy(o->p + o->len, p, n);
	o->len += n;
}

static void
pack_put16(struct pack_out *o, uint16_t v)
{
	unsigned char b[2] = { v & 0xff, v >> 8 };

	pack_put(o, b, 2);
}

static void
pack_put32(struct pack_out *o, uint32_t v)
{
	unsigned char b[4] = { v & 0xff, (v >> 8) & 0xff, (v >> 16) & 0xff,
	    v >> 24 };

	pack_put(o, b, 4);
}

static void
pack_local(struct pack_out *o, struct pack_entry *e, uint16_t dtime,
    uint16_t ddate, const void *data, size_t len)
{
	e->lh_off = o->len;
	e->crc = pack_crc32(0, data, len);
	e->size = len;
	pack_put32(o, PACK_SIG_LOCAL);
	pack_put16(o, PACK_VERSION_NEEDED);
	pack_put16(o, 0);		/* flags */
	pack_put16(o, 0);		/* method: stored */
	pack_put16(o, dtime);
	pack_put16(o, ddate);
	pack_put32(o, e->crc);
	pack_put32(o, e->size);		/* compressed */
	pack_put32(o, e->size);		/* uncompressed */
	pack_put16(o, e->namelen);
	pack_put16(o, 0);		/* extra */
	pack_put(o, e->name, e->namelen);
	pack_put(o, data, len);
}

static void
pack_central(struct pack_out *o, const struct pack_entry *e, uint16_t dtime,
    uint16_t ddate)
{
	pack_put32(o, PACK_SIG_CENTRAL);
	pack_put16(o, PACK_VERSION_MADE);
	pack_put16(o, PACK_VERSION_NEEDED);
	pack_put16(o, 0);		/* flags */
	pack_put16(o, 0);		/* method */
	pack_put16(o, dtime);
	pack_put16(o, ddate);
	pack_put32(o, e->crc);
	pack_put32(o, e->size);
	pack_put32(o, e->size);
	pack_put16(o, e->namelen);
	pack_put16(o, 0);		/* extra */
	pack_put16(o, 0);		/* comment */
	pack_put16(o, 0);		/* disk */
	pack_put16(o, 0);		/* internal attributes */
	pack_put32(o, PACK_EXT_ATTR);
	pack_put32(o, e->lh_off);
	pack_put(o, e->name, e->namelen);
}

static void
pack_hex(const unsigned char *p, size_t n, char *out)
{
	static const char hex[] = "0123456789abcdef";
	size_t i;

	for (i = 0; i < n; i++) {
		out[2 * i] = hex[p[i] >> 4];
		out[2 * i + 1] = hex[p[i] & 0x0f];
	}
	out[2 * n] = '\0';
}

int
pack_write(struct pack *pk, const char *tenant, uint64_t now_ms,
    const unsigned char rnd[8], const unsigned char *secrets,
    const struct pack_body *bodies, size_t n, char *err, size_t errlen)
{
	struct pack_out o = { NULL, 0, 0 };
	struct pack_entry *ents = NULL;
	unsigned char idrnd[10], md[SHA256_DIGEST_LENGTH];
	const unsigned char *sec;
	uint64_t sms;
	size_t idlen = secrets != NULL ? PACK_ID_V2_LEN : PACK_ID_V1_LEN;
	unsigned char *index = NULL, *manifest = NULL;
	char created[PACK_ISO8601_LEN + 1], hex[2 * SHA256_DIGEST_LENGTH + 1];
	uint64_t *sizes = NULL, total;
	uint16_t dtime, ddate;
	size_t i, k, mlen, mcap, cd_off, cd_size;
	struct tm tm;
	time_t t;

	memset(pk, 0, sizeof(*pk));
	if (tenant == NULL || !conf_valid_id(tenant)) {
		snprintf(err, errlen, "pack: invalid tenant");
		return -1;
	}
	if (n < 1 || n > PACK_MAX_CLAIMS) {
		snprintf(err, errlen, "pack: %zu claims, must be 1..%d", n,
		    PACK_MAX_CLAIMS);
		return -1;
	}
	t = now_ms / 1000;
	gmtime_r(&t, &tm);
	if (tm.tm_year + 1900 > 9999) {
		snprintf(err, errlen, "pack: write time out of range");
		return -1;
	}
	if ((sizes = calloc(n, sizeof(*sizes))) == NULL)
		fatal("pack_write");
	for (i = 0; i < n; i++)
		sizes[i] = bodies[i].len;
	total = pack_size(sizes, n, strlen(tenant), idlen);
	free(sizes);
	if (total > PACK_MAX_BYTES) {
		snprintf(err, errlen, "pack: %" PRIu64 " bytes, more than "
		    "%llu", total, PACK_MAX_BYTES);
		return -1;
	}

	snprintf(pk->tenant, sizeof(pk->tenant), "%s", tenant);
	pk->created_ms = now_ms;
	memcpy(pk->rnd, rnd, sizeof(pk->rnd));
	pack_hex(rnd, 8, pk->id);
	snprintf(pk->key, sizeof(pk->key), "claims/tenant=%s/dt=%04d-%02d-%02d/"
	    "%s", tenant, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday, pk->id);
	pk->n = n;
	pk->idlen = idlen;
	if ((pk->claim_ids = calloc(n, sizeof(*pk->claim_ids))) == NULL ||
	    (pk->offsets = calloc(n, sizeof(*pk->offsets))) == NULL ||
	    (ents = calloc(n + 2, sizeof(*ents))) == NULL ||
	    (index = malloc(8 * n)) == NULL ||
	    (o.p = malloc(total)) == NULL)
		fatal("pack_write");
	o.cap = total;
	memcpy(idrnd, rnd, 8);
	for (i = 0; i < n; i++) {
		idrnd[8] = i >> 8;
		idrnd[9] = i & 0xff;
		ulid_format(now_ms, idrnd, pk->claim_ids[i]);
		if (secrets == NULL)
			continue;
		/* The claim's own 128 bits, in the ULID's shape. */
		sec = secrets + i * PACK_SECRET_LEN;
		for (sms = 0, k = 0; k < 6; k++)
			sms = (sms << 8) | sec[k];
		ulid_format(sms, sec + 6, pk->claim_ids[i] + ULID_STRLEN);
	}
	pack_dos_time(now_ms, &dtime, &ddate);

	/*
	 * Where each claim's data lands is known before anything is written:
	 * index.bin's data, then per claim a local header and its name.
	 */
	cd_off = PACK_INDEX_OFF + 8 * n;
	for (i = 0; i < n; i++) {
		cd_off += PACK_LH_LEN + idlen;
		pk->offsets[i] = cd_off;
		index[8 * i] = cd_off >> 24;
		index[8 * i + 1] = cd_off >> 16;
		index[8 * i + 2] = cd_off >> 8;
		index[8 * i + 3] = cd_off;
		index[8 * i + 4] = bodies[i].len >> 24;
		index[8 * i + 5] = bodies[i].len >> 16;
		index[8 * i + 6] = bodies[i].len >> 8;
		index[8 * i + 7] = bodies[i].len;
		cd_off += bodies[i].len;
	}

	ents[0].name = PACK_INDEX_NAME;
	ents[0].namelen = strlen(PACK_INDEX_NAME);
	pack_local(&o, &ents[0], dtime, ddate, index, 8 * n);

	/* The manifest, written while the claims go in. */
	pack_iso8601(now_ms, created);
	mcap = total;	/* more than enough; trimmed by mlen */
	if ((manifest = malloc(mcap)) == NULL)
		fatal("pack_write");
	mlen = snprintf((char *)manifest, mcap, "{\"v\":1,\"tenant\":\"%s\","
	    "\"pack_id\":\"%s\",\"created_at\":\"%s\",\"claims\":[", tenant,
	    pk->id, created);
	for (i = 0; i < n; i++) {
		ents[i + 1].name = pk->claim_ids[i];
		ents[i + 1].namelen = idlen;
		pack_local(&o, &ents[i + 1], dtime, ddate, bodies[i].data,
		    bodies[i].len);
		SHA256(bodies[i].data != NULL ? bodies[i].data :
		    (const void *)"", bodies[i].len, md);
		pack_hex(md, sizeof(md), hex);
		mlen += snprintf((char *)manifest + mlen, mcap - mlen,
		    "%s{\"id\":\"%s\",\"size\":%zu,\"sha256\":\"%s\"}",
		    i > 0 ? "," : "", pk->claim_ids[i], bodies[i].len, hex);
	}
	mlen += snprintf((char *)manifest + mlen, mcap - mlen, "]}");
	ents[n + 1].name = PACK_MANIFEST_NAME;
	ents[n + 1].namelen = strlen(PACK_MANIFEST_NAME);
	pack_local(&o, &ents[n + 1], dtime, ddate, manifest, mlen);

	cd_off = o.len;
	for (i = 0; i < n + 2; i++)
		pack_central(&o, &ents[i], dtime, ddate);
	cd_size = o.len - cd_off;
	pack_put32(&o, PACK_SIG_END);
	pack_put16(&o, 0);		/* this disk */
	pack_put16(&o, 0);		/* the central directory's disk */
	pack_put16(&o, n + 2);		/* entries on this disk */
	pack_put16(&o, n + 2);		/* entries */
	pack_put32(&o, cd_size);
	pack_put32(&o, cd_off);
	pack_put16(&o, 0);		/* comment */
	if (o.len != total)
		fatalx("pack: wrote %zu bytes, computed %" PRIu64, o.len,
		    total);

	free(manifest);
	free(index);
	free(ents);
	pk->buf = o.p;
	pk->len = o.len;
	return 0;
}

void
pack_free(struct pack *pk)
{
	free(pk->claim_ids);
	free(pk->offsets);
	free(pk->buf);
	memset(pk, 0, sizeof(*pk));
}

void
pack_urn(const struct pack *pk, size_t i, char *out, size_t outlen)
{
	snprintf(out, outlen, PACK_URN_PREFIX "%s:%s", pk->tenant,
	    pk->claim_ids[i]);
}

/* --- ids --- */

/* 26 Crockford base32 characters (either case, no aliases) into 128
 * bits; -1 if not exactly that or the value needs more than 128 bits. */
static int
pack_ulid_decode(const char *s, unsigned char v[16])
{
	const char *p;
	int i, b, c, val, bit;

	if (strlen(s) != ULID_STRLEN)
		return -1;
	memset(v, 0, 16);
	for (i = 0; i < ULID_STRLEN; i++) {
		c = s[i];
		if (c >= 'a' && c <= 'z')
			c -= 'a' - 'A';
		if (c == '\0' || (p = strchr(pack_b32, c)) == NULL)
			return -1;
		val = p - pack_b32;
		if (i == 0 && val > 7)
			return -1;	/* 130 bits: over 128 */
		for (b = 0; b < 5; b++) {
			bit = i * 5 + b - 2;	/* two leading zero bits */
			if (bit < 0)
				continue;
			if (val & (0x10 >> b))
				v[bit / 8] |= 0x80 >> (bit % 8);
		}
	}
	return 0;
}

/* A claim id of len characters: its locator into v; -1 if it is not 26
 * or 52 characters each 26 of which is a 128-bit value. */
static int
pack_id_decode(const char *s, size_t len, unsigned char v[16])
{
	char half[ULID_STRLEN + 1];
	unsigned char own[16];

	if (len != PACK_ID_V1_LEN && len != PACK_ID_V2_LEN)
		return -1;
	memcpy(half, s, ULID_STRLEN);
	half[ULID_STRLEN] = '\0';
	if (pack_ulid_decode(half, v) == -1)
		return -1;
	if (len == PACK_ID_V1_LEN)
		return 0;
	memcpy(half, s + ULID_STRLEN, ULID_STRLEN);
	return pack_ulid_decode(half, own);
}

static void
pack_claim_fill(struct pack_claim *c, const unsigned char v[16])
{
	struct tm tm;
	time_t t;
	int i;

	c->ms = 0;
	for (i = 0; i < 6; i++)
		c->ms = (c->ms << 8) | v[i];
	memcpy(c->rnd, v + 6, 8);
	c->pos = (v[14] << 8) | v[15];
	ulid_format(c->ms, v + 6, c->id);	/* the rest: the caller's */
	pack_hex(c->rnd, 8, c->pack_id);
	t = c->ms / 1000;
	gmtime_r(&t, &tm);
	snprintf(c->key, sizeof(c->key), "claims/tenant=%s/dt=%04d-%02d-%02d/"
	    "%s", c->tenant, tm.tm_year + 1900, tm.tm_mon + 1, tm.tm_mday,
	    c->pack_id);
}

int
pack_claim_parse(const char *tenant, const char *claim_id,
    struct pack_claim *c)
{
	unsigned char v[16];
	uint64_t ms = 0;
	struct tm tm;
	time_t t;
	size_t len, i;

	memset(c, 0, sizeof(*c));
	if (tenant == NULL || !conf_valid_id(tenant))
		return -1;
	if (claim_id == NULL || (len = strlen(claim_id)) > PACK_ID_MAX ||
	    pack_id_decode(claim_id, len, v) == -1)
		return -2;
	for (i = 0; i < 6; i++)
		ms = (ms << 8) | v[i];
	t = ms / 1000;
	if (gmtime_r(&t, &tm) == NULL || tm.tm_year + 1900 > 9999)
		return -2;	/* never written: no 4-digit date */
	snprintf(c->tenant, sizeof(c->tenant), "%s", tenant);
	pack_claim_fill(c, v);
	/* The claim's own half, canonical: upper case. */
	c->idlen = len;
	for (i = ULID_STRLEN; i < len; i++)
		c->id[i] = claim_id[i] >= 'a' && claim_id[i] <= 'z' ?
		    claim_id[i] - ('a' - 'A') : claim_id[i];
	c->id[len] = '\0';
	return 0;
}

/* --- reading --- */

static uint16_t
pack_get16(const unsigned char *p)
{
	return p[0] | p[1] << 8;
}

static uint32_t
pack_get32(const unsigned char *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 |
	    (uint32_t)p[3] << 24;
}

static uint32_t
pack_get32be(const unsigned char *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 |
	    (uint32_t)p[2] << 8 | (uint32_t)p[3];
}

/* A local header as we write them: stored, no flags, no extra, both
 * sizes size, a name of namelen. */
static int
pack_check_header(const unsigned char *lh, size_t namelen, uint32_t size)
{
	return pack_get32(lh) == PACK_SIG_LOCAL &&
	    pack_get16(lh + 6) == 0 && pack_get16(lh + 8) == 0 &&
	    pack_get32(lh + 18) == size && pack_get32(lh + 22) == size &&
	    pack_get16(lh + 26) == namelen && pack_get16(lh + 28) == 0;
}

/* ... and the name name, compared in constant time: a claim's name holds
 * its own random bits, which a stranger must not learn by timing. */
static int
pack_check_local(const unsigned char *lh, const char *name, size_t namelen,
    uint32_t size)
{
	return pack_check_header(lh, namelen, size) &&
	    CRYPTO_memcmp(lh + PACK_LH_LEN, name, namelen) == 0;
}

enum pack_status
pack_locate(pack_read_fn rd, void *arg, const struct pack_claim *c,
    uint64_t *offp, uint32_t *lenp)
{
	unsigned char head[PACK_LOCATE_ONE_READ], lh[PACK_LH_LEN + PACK_ID_MAX];
	unsigned char v[16];
	enum pack_status st;
	uint32_t isize, n, off, len;
	size_t want;

	/*
	 * index.bin's header, and the entry too when it is near: one read
	 * for most claims.  A pack shorter than that read may still hold
	 * the claim (a small pack, a far position): then two reads.
	 */
	want = PACK_INDEX_OFF + 8 * ((size_t)c->pos + 1);
	if (want > sizeof(head) ||
	    (st = rd(arg, 0, want, head)) == PACK_DAMAGED) {
		want = PACK_INDEX_OFF;
		st = rd(arg, 0, want, head);
	}
	if (st != PACK_OK)
		return st;
	isize = pack_get32(head + 22);
	if (pack_get32(head) != PACK_SIG_LOCAL || pack_get16(head + 6) != 0 ||
	    pack_get16(head + 8) != 0 || pack_get32(head + 18) != isize ||
	    pack_get16(head + 26) != strlen(PACK_INDEX_NAME) ||
	    pack_get16(head + 28) != 0 ||
	    memcmp(head + PACK_LH_LEN, PACK_INDEX_NAME,
	    strlen(PACK_INDEX_NAME)) != 0 ||
	    isize == 0 || isize % 8 != 0 || isize / 8 > PACK_MAX_CLAIMS)
		return PACK_DAMAGED;
	n = isize / 8;
	if (c->pos >= n)
		return PACK_NOTFOUND;
	if (want == PACK_INDEX_OFF &&
	    (st = rd(arg, PACK_INDEX_OFF + 8 * (uint64_t)c->pos, 8,
	    head + PACK_INDEX_OFF)) != PACK_OK)
		return st;
	if (want == PACK_INDEX_OFF) {
		off = pack_get32be(head + PACK_INDEX_OFF);
		len = pack_get32be(head + PACK_INDEX_OFF + 4);
	} else {
		off = pack_get32be(head + PACK_INDEX_OFF + 8 * c->pos);
		len = pack_get32be(head + PACK_INDEX_OFF + 8 * c->pos + 4);
	}
	if ((uint64_t)off < PACK_INDEX_OFF + (uint64_t)isize + PACK_LH_LEN +
	    c->idlen || (uint64_t)off + len > PACK_MAX_BYTES)
		return PACK_DAMAGED;

	/*
	 * The claim's own header names it: the id asked for, or not ours.
	 * Its name may be of the other length (a v1 id asked of a v2 pack),
	 * so the header is read as if the name were of the length asked for
	 * and its name length checked first.
	 */
	if ((st = rd(arg, off - PACK_LH_LEN - c->idlen, PACK_LH_LEN +
	    c->idlen, lh)) != PACK_OK)
		return st;
	if (!pack_check_local(lh, c->id, c->idlen, len)) {
		/*
		 * The same pack and position under another name, or a name
		 * of the other length there: a claim id that was never
		 * issued (its locator found a pack anyway), or a guess.
		 */
		if (pack_get32(lh) == PACK_SIG_LOCAL &&
		    pack_get16(lh + 26) != c->idlen &&
		    (pack_get16(lh + 26) == PACK_ID_V1_LEN ||
		    pack_get16(lh + 26) == PACK_ID_V2_LEN))
			return PACK_NOTFOUND;
		if (pack_check_header(lh, c->idlen, len)) {
			char name[ULID_STRLEN + 1];

			memcpy(name, lh + PACK_LH_LEN, ULID_STRLEN);
			name[ULID_STRLEN] = '\0';
			if (pack_ulid_decode(name, v) == 0 &&
			    memcmp(v + 6, c->rnd, 8) == 0 &&
			    ((v[14] << 8) | v[15]) == c->pos)
				return PACK_NOTFOUND;
		}
		return PACK_DAMAGED;
	}
	*offp = off;
	*lenp = len;
	return PACK_OK;
}

/*
 * The whole pack, entry by entry through the central directory: it must
 * be exactly what pack_write() makes, so a reader of any of its parts
 * (index, claims, manifest) can trust the rest.
 */
int
pack_verify(const void *data, size_t len, char *err, size_t errlen)
{
	const unsigned char *p = data, *ch, *lh, *end, *idx = NULL;
	unsigned char v[16], rnd[8];
	uint32_t cd_off, cd_size, nent, i, lh_off, size, crc, namelen;
	uint32_t expect_off = 0, n = 0, idlen = 0;

	if (len < PACK_END_LEN + PACK_INDEX_OFF) {
		snprintf(err, errlen, "pack: %zu bytes, too short", len);
		return -1;
	}
	end = p + len - PACK_END_LEN;
	if (pack_get32(end) != PACK_SIG_END || pack_get16(end + 4) != 0 ||
	    pack_get16(end + 6) != 0 ||
	    pack_get16(end + 8) != pack_get16(end + 10) ||
	    pack_get16(end + 20) != 0) {
		snprintf(err, errlen, "pack: no end record");
		return -1;
	}
	nent = pack_get16(end + 10);
	cd_size = pack_get32(end + 12);
	cd_off = pack_get32(end + 16);
	if (nent < 3 || cd_off > len - PACK_END_LEN ||
	    cd_size != len - PACK_END_LEN - cd_off) {
		snprintf(err, errlen, "pack: bad end record");
		return -1;
	}
	ch = p + cd_off;
	for (i = 0; i < nent; i++) {
		if ((size_t)(end - ch) < PACK_CH_LEN ||
		    pack_get32(ch) != PACK_SIG_CENTRAL ||
		    pack_get16(ch + 8) != 0 || pack_get16(ch + 10) != 0 ||
		    pack_get32(ch + 20) != pack_get32(ch + 24) ||
		    pack_get16(ch + 30) != 0 || pack_get16(ch + 32) != 0) {
			snprintf(err, errlen, "pack: central entry %u", i);
			return -1;
		}
		crc = pack_get32(ch + 16);
		size = pack_get32(ch + 20);
		namelen = pack_get16(ch + 28);
		lh_off = pack_get32(ch + 42);
		if ((size_t)(end - ch) < PACK_CH_LEN + namelen ||
		    lh_off != expect_off ||
		    (uint64_t)lh_off + PACK_LH_LEN + namelen + size > cd_off) {
			snprintf(err, errlen, "pack: central entry %u out of "
			    "place", i);
			return -1;
		}
		lh = p + lh_off;
		if (!pack_check_local(lh, (const char *)ch + PACK_CH_LEN,
		    namelen, size) || pack_get32(lh + 14) != crc ||
		    pack_crc32(0, lh + PACK_LH_LEN + namelen, size) != crc) {
			snprintf(err, errlen, "pack: entry %u: bad local header "
			    "or CRC", i);
			return -1;
		}
		if (i == 0) {
			if (namelen != strlen(PACK_INDEX_NAME) ||
			    memcmp(lh + PACK_LH_LEN, PACK_INDEX_NAME,
			    namelen) != 0 || size % 8 != 0 ||
			    size / 8 != nent - 2) {
				snprintf(err, errlen, "pack: first entry is "
				    "not index.bin for %u claims", nent - 2);
				return -1;
			}
			idx = lh + PACK_INDEX_OFF;
			n = size / 8;
		} else if (i == nent - 1) {
			if (namelen != strlen(PACK_MANIFEST_NAME) ||
			    memcmp(lh + PACK_LH_LEN, PACK_MANIFEST_NAME,
			    namelen) != 0) {
				snprintf(err, errlen, "pack: last entry is not "
				    "manifest.json");
				return -1;
			}
		} else {
			/* Claim i - 1: named by an id of this pack at its
			 * position, every id of one length, and where the
			 * index says. */
			if (i == 1)
				idlen = namelen;
			if (namelen != idlen || pack_id_decode((const char *)
			    lh + PACK_LH_LEN, namelen, v) == -1) {
				snprintf(err, errlen, "pack: entry %u: not a "
				    "claim id", i);
				return -1;
			}
			if (
			    ((v[14] << 8) | v[15]) != i - 1 ||
			    (i > 1 && memcmp(v + 6, rnd, 8) != 0) ||
			    pack_get32be(idx + 8 * (i - 1)) !=
			    lh_off + PACK_LH_LEN + namelen ||
			    pack_get32be(idx + 8 * (i - 1) + 4) != size) {
				snprintf(err, errlen, "pack: claim %u: name or "
				    "index entry wrong", i - 1);
				return -1;
			}
			memcpy(rnd, v + 6, 8);
		}
		expect_off = lh_off + PACK_LH_LEN + namelen + size;
		ch += PACK_CH_LEN + namelen;
	}
	if (expect_off != cd_off || ch != end || n != nent - 2) {
		snprintf(err, errlen, "pack: stray bytes between entries");
		return -1;
	}
	return 0;
}
