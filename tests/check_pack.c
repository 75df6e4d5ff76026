/* SPDX-License-Identifier: ISC */
/*
 * check_pack.c: claim packs (common/pack.c).
 *
 * A pack round-trips: every claim id names its pack, day and position, the
 * index points at the bodies, pack_locate finds each one (near and far
 * positions, so both of its read paths), the size is what pack_size
 * says; unzip -t and python's zipfile accept a pack written to a file and
 * see the entries in order with the manifest's sizes and hashes; ids and
 * URNs parse strictly; a v2 claim id carries 128 bits of its own, which
 * the other claims of its pack say nothing of, and a wrong guess of them
 * is not found; v1 packs (written before references were signed) still
 * read; a damaged pack (a flipped body byte, a bad index
 * entry, a truncation, a renamed entry) is refused by pack_verify and, where
 * the damage is on its path, by pack_locate.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/wait.h>

#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ids.h"
#include "pack.h"

#include "ckskip.h"

/* 2024-02-29T23:59:59.999Z */
#define T_MS	1709251199999ULL

static const unsigned char rnd8[8] = {
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef
};
static const unsigned char rnd8rnd8[PACK_SECRET_LEN] = {
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef,
	0x01, 0x23, 0x45, 0x67, 0x89, 0xab, 0xcd, 0xef
};

/* A pack in memory, read by pack_locate. */
struct mem_pack {
	const unsigned char	*p;
	size_t			 len;
};

static enum pack_status
mem_read(void *arg, uint64_t off, size_t len, void *buf)
{
	struct mem_pack *m = arg;

	if (off > m->len || len > m->len - off)
		return PACK_DAMAGED;
	memcpy(buf, m->p + off, len);
	return PACK_OK;
}

static enum pack_status
locate_mem(const void *p, size_t len, const struct pack_claim *c,
    uint64_t *offp, uint32_t *lenp)
{
	struct mem_pack m = { p, len };

	return pack_locate(mem_read, &m, c, offp, lenp);
}

/* A URN's tenant and claim id, as pack_claim_parse checks them: 0 or -1. */
static int
urn_parse(const char *urn, struct pack_claim *c)
{
	char tenant[CONF_ID_MAX + 1];
	const char *p, *colon;

	memset(c, 0, sizeof(*c));
	if (strncmp(urn, PACK_URN_PREFIX, strlen(PACK_URN_PREFIX)) != 0)
		return -1;
	p = urn + strlen(PACK_URN_PREFIX);
	if ((colon = strchr(p, ':')) == NULL || colon == p ||
	    (size_t)(colon - p) > CONF_ID_MAX)
		return -1;
	memcpy(tenant, p, colon - p);
	tenant[colon - p] = '\0';
	return pack_claim_parse(tenant, colon + 1, c) == 0 ? 0 : -1;
}

static unsigned char *
body_bytes(size_t i, size_t len)
{
	unsigned char *p;
	size_t k;

	if ((p = malloc(len + 1)) == NULL)
		abort();
	for (k = 0; k < len; k++)
		p[k] = (unsigned char)(i * 31 + k * 7 + (k >> 8));
	return p;
}

/* Claim i's own bits in the tests: a byte pattern of i. */
static unsigned char *
secrets_of(size_t n)
{
	unsigned char *s;
	size_t i, k;

	if ((s = calloc(n, PACK_SECRET_LEN)) == NULL)
		abort();
	for (i = 0; i < n; i++)
		for (k = 0; k < PACK_SECRET_LEN; k++)
			s[i * PACK_SECRET_LEN + k] = (unsigned char)(i * 131 +
			    k * 17 + 5);
	return s;
}

/* n bodies of sizes i * step % mod (0 included), v1 or v2 ids. */
static void
make_v(struct pack *pk, size_t n, size_t step, size_t mod, int v1)
{
	struct pack_body *b;
	unsigned char *sec = v1 ? NULL : secrets_of(n);
	char err[256] = "";
	size_t i;

	if ((b = calloc(n, sizeof(*b))) == NULL)
		abort();
	for (i = 0; i < n; i++) {
		b[i].len = (i * step) % mod;
		b[i].data = body_bytes(i, b[i].len);
	}
	ck_assert_msg(pack_write(pk, "acme", T_MS, rnd8, sec, b, n, err,
	    sizeof(err)) == 0, "%s", err);
	ck_assert_uint_eq(pk->idlen, v1 ? PACK_ID_V1_LEN : PACK_ID_V2_LEN);
	for (i = 0; i < n; i++)
		free((void *)b[i].data);
	free(b);
	free(sec);
}

static void
make(struct pack *pk, size_t n, size_t step, size_t mod)
{
	make_v(pk, n, step, mod, 0);
}

START_TEST(test_crc32)
{
	ck_assert_uint_eq(pack_crc32(0, "123456789", 9), 0xcbf43926U);
	ck_assert_uint_eq(pack_crc32(0, "", 0), 0);
}
END_TEST

static const struct {
	size_t	n, step, mod;
} rt_cases[] = {
	{ 1, 0, 1 },		/* one empty claim */
	{ 1, 1, 100000 },
	{ 3, 1000, 5000 },
	{ 40, 977, 70000 },
	{ 2000, 13, 300 },	/* far positions: the two-read path */
};

/* Each case twice: v2 ids (_i even), v1 ids (odd). */
START_TEST(test_roundtrip)
{
	struct pack pk;
	struct pack_claim c;
	uint64_t *sizes, off;
	unsigned char *want;
	char err[256], urn[PACK_URN_MAX];
	uint32_t len;
	size_t i, n = rt_cases[_i / 2].n;
	int v1 = _i % 2;

	make_v(&pk, n, rt_cases[_i / 2].step, rt_cases[_i / 2].mod, v1);
	ck_assert_str_eq(pk.id, "0123456789abcdef");
	ck_assert_str_eq(pk.key,
	    "claims/tenant=acme/dt=2024-02-29/0123456789abcdef");
	ck_assert_uint_eq(pk.n, n);
	ck_assert_msg(pack_verify(pk.buf, pk.len, err, sizeof(err)) == 0,
	    "%s", err);

	if ((sizes = calloc(n, sizeof(*sizes))) == NULL)
		abort();
	for (i = 0; i < n; i++)
		sizes[i] = (i * rt_cases[_i / 2].step) % rt_cases[_i / 2].mod;
	ck_assert(pack_size(sizes, n, 4, pk.idlen) == pk.len);
	{
		uint64_t body = 0;

		for (i = 0; i < n; i++)
			body += sizes[i];
		ck_assert(pk.len <= PACK_FIXED_OVERHEAD +
		    n * PACK_CLAIM_OVERHEAD + body);
	}

	for (i = 0; i < n; i++) {
		ck_assert_int_eq(pack_claim_parse("acme", pk.claim_ids[i], &c),
		    0);
		ck_assert_uint_eq(c.pos, i);
		ck_assert(c.ms == T_MS);
		ck_assert_str_eq(c.pack_id, pk.id);
		ck_assert_str_eq(c.key, pk.key);
		ck_assert_str_eq(c.id, pk.claim_ids[i]);
		ck_assert_int_eq(locate_mem(pk.buf, pk.len, &c, &off,
		    &len), PACK_OK);
		ck_assert(off == pk.offsets[i]);
		ck_assert_uint_eq(len, sizes[i]);
		/* The index's big-endian entry, read by hand. */
		ck_assert_uint_eq((uint32_t)pk.buf[PACK_INDEX_OFF + 8 * i] << 24 |
		    pk.buf[PACK_INDEX_OFF + 8 * i + 1] << 16 |
		    pk.buf[PACK_INDEX_OFF + 8 * i + 2] << 8 |
		    pk.buf[PACK_INDEX_OFF + 8 * i + 3], off);
		want = body_bytes(i, len);
		ck_assert(memcmp(pk.buf + off, want, len) == 0);
		free(want);

		if (!v1)
			continue;
		pack_urn(&pk, i, urn, sizeof(urn));
		ck_assert(strncmp(urn, "urn:ankusa:claim:v1:acme:", 25) == 0);
		ck_assert_str_eq(urn + 25, pk.claim_ids[i]);
		ck_assert_int_eq(urn_parse(urn, &c), 0);
		ck_assert_str_eq(c.tenant, "acme");
		ck_assert_uint_eq(c.pos, i);
	}
	/* A position past the pack's claims. */
	c.pos = n;
	ck_assert_int_eq(locate_mem(pk.buf, pk.len, &c, &off, &len),
	    PACK_NOTFOUND);
	free(sizes);
	pack_free(&pk);
}
END_TEST

/* The ULID layout, by hand: time, pack bits, position (a v1 id, and the
 * locator of a v2 one). */
START_TEST(test_ids)
{
	struct pack pk;
	struct pack_claim c;
	char lower[ULID_STRLEN + 1], bad[ULID_STRLEN + 2];
	size_t i;

	make_v(&pk, 2, 1, 10, 1);
	/* 48 bits of time: the first 10 characters. */
	ck_assert_int_eq(pack_claim_parse("acme", pk.claim_ids[1], &c), 0);
	ck_assert(c.ms == T_MS);
	ck_assert(memcmp(c.rnd, rnd8, 8) == 0);
	/* Position 1: the last character is '1', the one before '0'. */
	ck_assert_int_eq(pk.claim_ids[1][25], '1');
	ck_assert_int_eq(pk.claim_ids[0][25], '0');
	ck_assert(strncmp(pk.claim_ids[0], pk.claim_ids[1], 22) == 0);

	/* Either case; canonical upper. */
	for (i = 0; i <= ULID_STRLEN; i++)
		lower[i] = pk.claim_ids[1][i] >= 'A' &&
		    pk.claim_ids[1][i] <= 'Z' ? pk.claim_ids[1][i] + 32 :
		    pk.claim_ids[1][i];
	ck_assert_int_eq(pack_claim_parse("acme", lower, &c), 0);
	ck_assert_str_eq(c.id, pk.claim_ids[1]);

	/* Bad ids: -2; bad tenants: -1. */
	ck_assert_int_eq(pack_claim_parse("acme", "", &c), -2);
	snprintf(bad, sizeof(bad), "%.25s", pk.claim_ids[0]);
	ck_assert_int_eq(pack_claim_parse("acme", bad, &c), -2);
	snprintf(bad, sizeof(bad), "%s0", pk.claim_ids[0]);
	ck_assert_int_eq(pack_claim_parse("acme", bad, &c), -2);
	snprintf(bad, sizeof(bad), "%s", pk.claim_ids[0]);
	bad[5] = 'U';
	ck_assert_int_eq(pack_claim_parse("acme", bad, &c), -2);
	bad[5] = 'I';
	ck_assert_int_eq(pack_claim_parse("acme", bad, &c), -2);
	bad[5] = '-';
	ck_assert_int_eq(pack_claim_parse("acme", bad, &c), -2);
	snprintf(bad, sizeof(bad), "%s", pk.claim_ids[0]);
	bad[0] = '8';		/* over 128 bits */
	ck_assert_int_eq(pack_claim_parse("acme", bad, &c), -2);
	bad[0] = '7';		/* a year past 9999: never written */
	bad[1] = 'Z';
	ck_assert_int_eq(pack_claim_parse("acme", bad, &c), -2);
	ck_assert_int_eq(pack_claim_parse("", pk.claim_ids[0], &c), -1);
	ck_assert_int_eq(pack_claim_parse("a.b", pk.claim_ids[0], &c), -1);
	ck_assert_int_eq(pack_claim_parse(
	    "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa",
	    pk.claim_ids[0], &c), -1);

	ck_assert_int_eq(urn_parse("urn:ankusa:claim:v2:acme:x", &c), -1);
	ck_assert_int_eq(urn_parse("urn:ankusa:claim:v1::x", &c), -1);
	ck_assert_int_eq(urn_parse("urn:ankusa:claim:v1:acme", &c), -1);
	pack_free(&pk);
}
END_TEST

/* A v2 id: the locator, then the claim's own 128 bits, its alone. */
START_TEST(test_ids_v2)
{
	struct pack pk;
	struct pack_claim c;
	unsigned char *sec = secrets_of(3);
	char own[ULID_STRLEN + 1], bad[PACK_ID_V2_LEN + 2];
	uint64_t ms, off;
	uint32_t len;
	size_t i, k;

	make(&pk, 3, 7, 100);
	for (i = 0; i < 3; i++) {
		ck_assert_uint_eq(strlen(pk.claim_ids[i]), PACK_ID_V2_LEN);
		/* The own half is the claim's 16 bytes, ULID-shaped. */
		for (ms = 0, k = 0; k < 6; k++)
			ms = (ms << 8) | sec[i * PACK_SECRET_LEN + k];
		ulid_format(ms, sec + i * PACK_SECRET_LEN + 6, own);
		ck_assert_str_eq(pk.claim_ids[i] + ULID_STRLEN, own);
		ck_assert_int_eq(pack_claim_parse("acme", pk.claim_ids[i], &c),
		    0);
		ck_assert_uint_eq(c.idlen, PACK_ID_V2_LEN);
		ck_assert_uint_eq(c.pos, i);
		ck_assert_str_eq(c.id, pk.claim_ids[i]);
	}
	/* Two claims of one pack: the locators differ by position only,
	 * the own halves share nothing. */
	ck_assert(strncmp(pk.claim_ids[0], pk.claim_ids[1], 22) == 0);
	for (k = ULID_STRLEN + 1; k < PACK_ID_V2_LEN; k++)
		if (pk.claim_ids[0][k] != pk.claim_ids[1][k])
			break;
	ck_assert_uint_lt(k, PACK_ID_V2_LEN);

	/* Lower case reads; the canonical id is upper case. */
	snprintf(bad, sizeof(bad), "%s", pk.claim_ids[2]);
	for (k = 0; bad[k] != '\0'; k++)
		if (bad[k] >= 'A' && bad[k] <= 'Z')
			bad[k] += 32;
	ck_assert_int_eq(pack_claim_parse("acme", bad, &c), 0);
	ck_assert_str_eq(c.id, pk.claim_ids[2]);
	ck_assert_int_eq(locate_mem(pk.buf, pk.len, &c, &off, &len), PACK_OK);

	/* A guess of the own bits (one character off, each place): the
	 * pack is found, the claim is not. */
	for (k = ULID_STRLEN; k < PACK_ID_V2_LEN; k++) {
		snprintf(bad, sizeof(bad), "%s", pk.claim_ids[1]);
		bad[k] = bad[k] == '1' ? '2' : '1';
		ck_assert_int_eq(pack_claim_parse("acme", bad, &c), 0);
		ck_assert_int_eq(locate_mem(pk.buf, pk.len, &c, &off, &len),
		    PACK_NOTFOUND);
	}
	/* The locator alone (a v1 id of a v2 claim) finds nothing. */
	snprintf(bad, sizeof(bad), "%.*s", ULID_STRLEN, pk.claim_ids[1]);
	ck_assert_int_eq(pack_claim_parse("acme", bad, &c), 0);
	ck_assert_int_ne(locate_mem(pk.buf, pk.len, &c, &off, &len), PACK_OK);

	/* Bad lengths, and an own half over 128 bits. */
	snprintf(bad, sizeof(bad), "%.*s", PACK_ID_V2_LEN - 1,
	    pk.claim_ids[0]);
	ck_assert_int_eq(pack_claim_parse("acme", bad, &c), -2);
	snprintf(bad, sizeof(bad), "%s0", pk.claim_ids[0]);
	ck_assert_int_eq(pack_claim_parse("acme", bad, &c), -2);
	snprintf(bad, sizeof(bad), "%s", pk.claim_ids[0]);
	bad[ULID_STRLEN] = '8';
	ck_assert_int_eq(pack_claim_parse("acme", bad, &c), -2);
	bad[ULID_STRLEN] = 'U';
	ck_assert_int_eq(pack_claim_parse("acme", bad, &c), -2);
	free(sec);
	pack_free(&pk);
}
END_TEST

START_TEST(test_limits)
{
	struct pack pk;
	struct pack_body b = { "x", 1 };
	char err[256];

	ck_assert_int_eq(pack_write(&pk, "acme", T_MS, rnd8, NULL, &b, 0, err,
	    sizeof(err)), -1);
	ck_assert_int_eq(pack_write(&pk, "ac me", T_MS, rnd8, NULL, &b, 1,
	    err, sizeof(err)), -1);
	ck_assert_int_eq(pack_write(&pk, "acme", T_MS, rnd8, NULL, &b,
	    PACK_MAX_CLAIMS + 1, err, sizeof(err)), -1);
	/* A day at the epoch's start still makes a valid DOS date. */
	ck_assert_int_eq(pack_write(&pk, "acme", 0, rnd8, rnd8rnd8, &b, 1,
	    err, sizeof(err)), 0);
	ck_assert_str_eq(pk.key, "claims/tenant=acme/dt=1970-01-01/"
	    "0123456789abcdef");
	ck_assert_int_eq(pack_verify(pk.buf, pk.len, err, sizeof(err)), 0);
	pack_free(&pk);
}
END_TEST

static int
run(const char *cmd)
{
	int st = system(cmd);

	return WIFEXITED(st) ? WEXITSTATUS(st) : -1;
}

/* A pack written to a file (path, a mkstemp template), for the readers. */
static void
pack_to_file(char *path)
{
	struct pack pk;
	FILE *f;
	int fd;

	make(&pk, 12, 333, 4000);
	ck_assert_int_ne(fd = mkstemp(path), -1);
	ck_assert((f = fdopen(fd, "w")) != NULL);
	ck_assert_uint_eq(fwrite(pk.buf, 1, pk.len, f), pk.len);
	ck_assert_int_eq(fclose(f), 0);
	pack_free(&pk);
}

/* Other ZIP readers agree: Info-ZIP's unzip tests every entry. */
START_TEST(test_reader_unzip)
{
	char path[] = "/tmp/check_pack.XXXXXX", cmd[2048];

	if (run("command -v unzip >/dev/null 2>&1") != 0)
		CK_SKIP("unzip not installed (Debian package unzip; "
		    "scripts/test installs it)");
	pack_to_file(path);
	snprintf(cmd, sizeof(cmd), "unzip -tq %s >/dev/null", path);
	ck_assert_int_eq(run(cmd), 0);
	unlink(path);
}
END_TEST

/* ... and python's zipfile reads what the manifest says. */
START_TEST(test_reader_python)
{
	char path[] = "/tmp/check_pack.XXXXXX", cmd[2048];

	if (run("command -v python3 >/dev/null 2>&1") != 0)
		CK_SKIP("python3 not installed (scripts/test installs it)");
	pack_to_file(path);
	snprintf(cmd, sizeof(cmd), "python3 -m zipfile -t %s >/dev/null",
	    path);
	ck_assert_int_eq(run(cmd), 0);
	/* Entry order, stored method, manifest sizes and hashes. */
	snprintf(cmd, sizeof(cmd), "python3 -c '\n"
	    "import hashlib, json, struct, sys, zipfile\n"
	    "z = zipfile.ZipFile(sys.argv[1])\n"
	    "names = z.namelist()\n"
	    "assert names[0] == \"index.bin\", names\n"
	    "assert names[-1] == \"manifest.json\", names\n"
	    "assert all(i.compress_type == 0 for i in z.infolist())\n"
	    "m = json.loads(z.read(\"manifest.json\"))\n"
	    "assert m[\"v\"] == 1 and m[\"tenant\"] == \"acme\"\n"
	    "assert m[\"pack_id\"] == \"0123456789abcdef\"\n"
	    "assert m[\"created_at\"] == \"2024-02-29T23:59:59.999Z\"\n"
	    "assert [c[\"id\"] for c in m[\"claims\"]] == names[1:-1]\n"
	    "raw = open(sys.argv[1], \"rb\").read()\n"
	    "idx = z.read(\"index.bin\")\n"
	    "for k, c in enumerate(m[\"claims\"]):\n"
	    "    d = z.read(c[\"id\"])\n"
	    "    assert len(d) == c[\"size\"]\n"
	    "    assert hashlib.sha256(d).hexdigest() == c[\"sha256\"]\n"
	    "    off, n = struct.unpack(\">II\", idx[8*k:8*k+8])\n"
	    "    assert raw[off:off+n] == d and n == len(d)\n"
	    "' %s", path);
	ck_assert_int_eq(run(cmd), 0);
	unlink(path);
}
END_TEST

/* Damage in a copy: each must be refused. */
START_TEST(test_damaged)
{
	struct pack pk;
	struct pack_claim c;
	unsigned char *cp;
	uint64_t off;
	uint32_t len;
	char err[256];

	make(&pk, 5, 100, 1000);
	if ((cp = malloc(pk.len)) == NULL)
		abort();

	/* A body byte: the CRC says so; the index path cannot know. */
	memcpy(cp, pk.buf, pk.len);
	cp[pk.offsets[2]] ^= 1;
	ck_assert_int_eq(pack_verify(cp, pk.len, err, sizeof(err)), -1);

	/* An index entry pointing elsewhere. */
	memcpy(cp, pk.buf, pk.len);
	cp[PACK_INDEX_OFF + 8 * 3 + 3] += 5;
	ck_assert_int_eq(pack_verify(cp, pk.len, err, sizeof(err)), -1);
	ck_assert_int_eq(pack_claim_parse("acme", pk.claim_ids[3], &c), 0);
	ck_assert_int_eq(locate_mem(cp, pk.len, &c, &off, &len),
	    PACK_DAMAGED);

	/* An index length past the end. */
	memcpy(cp, pk.buf, pk.len);
	cp[PACK_INDEX_OFF + 8 * 4 + 4] = 0x7f;
	ck_assert_int_eq(pack_claim_parse("acme", pk.claim_ids[4], &c), 0);
	ck_assert_int_eq(locate_mem(cp, pk.len, &c, &off, &len),
	    PACK_DAMAGED);

	/* A claim renamed in its own bits: the central directory says
	 * otherwise; the id asked for is not found there. */
	memcpy(cp, pk.buf, pk.len);
	cp[pk.offsets[1] - 5] = cp[pk.offsets[1] - 5] == 'A' ? 'B' : 'A';
	ck_assert_int_eq(pack_verify(cp, pk.len, err, sizeof(err)), -1);
	ck_assert_int_eq(pack_claim_parse("acme", pk.claim_ids[1], &c), 0);
	ck_assert_int_eq(locate_mem(cp, pk.len, &c, &off, &len),
	    PACK_NOTFOUND);
	/* ... in its locator's random part: another pack's name here. */
	memcpy(cp, pk.buf, pk.len);
	cp[pk.offsets[1] - ULID_STRLEN - 5] =
	    cp[pk.offsets[1] - ULID_STRLEN - 5] == 'A' ? 'B' : 'A';
	ck_assert_int_eq(pack_verify(cp, pk.len, err, sizeof(err)), -1);
	ck_assert_int_eq(locate_mem(cp, pk.len, &c, &off, &len),
	    PACK_DAMAGED);

	/* Truncated: the end record is gone; the last claim's header too. */
	ck_assert_int_eq(pack_verify(pk.buf, pk.len - 1, err, sizeof(err)),
	    -1);
	ck_assert_int_eq(pack_claim_parse("acme", pk.claim_ids[4], &c), 0);
	ck_assert_int_eq(locate_mem(pk.buf, pk.offsets[4] - 3, &c, &off,
	    &len), PACK_DAMAGED);
	ck_assert_int_eq(locate_mem(pk.buf, 10, &c, &off, &len),
	    PACK_DAMAGED);

	/* Not index.bin first. */
	memcpy(cp, pk.buf, pk.len);
	cp[PACK_LH_LEN] = 'X';
	ck_assert_int_eq(pack_verify(cp, pk.len, err, sizeof(err)), -1);
	ck_assert_int_eq(locate_mem(cp, pk.len, &c, &off, &len),
	    PACK_DAMAGED);

	free(cp);
	pack_free(&pk);
}
END_TEST

/* A claim id with this pack's bits and position but another time names
 * no claim of it: not found, not damage. */
START_TEST(test_other_time)
{
	struct pack pk, other;
	struct pack_claim c;
	struct pack_body b = { "hello", 5 };
	uint64_t off;
	uint32_t len;
	char err[256];

	make(&pk, 3, 1, 10);
	ck_assert_int_eq(pack_write(&other, "acme", T_MS - 1000, rnd8,
	    rnd8rnd8, &b, 1, err, sizeof(err)), 0);
	ck_assert_str_eq(other.key, pk.key);	/* same day, same bits */
	ck_assert_int_eq(pack_claim_parse("acme", other.claim_ids[0], &c), 0);
	ck_assert_int_eq(locate_mem(pk.buf, pk.len, &c, &off, &len),
	    PACK_NOTFOUND);
	pack_free(&other);
	pack_free(&pk);
}
END_TEST

static Suite *
pack_suite(void)
{
	Suite *s = suite_create("pack");
	TCase *tc;

	tc = tcase_create("pack");
	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, test_crc32);
	tcase_add_loop_test(tc, test_roundtrip, 0,
	    2 * sizeof(rt_cases) / sizeof(rt_cases[0]));
	tcase_add_test(tc, test_ids);
	tcase_add_test(tc, test_ids_v2);
	tcase_add_test(tc, test_limits);
	tcase_add_test(tc, test_reader_unzip);
	tcase_add_test(tc, test_reader_python);
	tcase_add_test(tc, test_damaged);
	tcase_add_test(tc, test_other_time);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(pack_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
