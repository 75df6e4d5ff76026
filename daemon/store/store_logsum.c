/* SPDX-License-Identifier: ISC */
/*
 * store_logsum.c: Berkeley DB's log and page checksum, eight bytes a step.
 *
 * Below libdb's documented API (docs/DEPARTURES 18): this file defines
 * libdb's private __ham_func4, which the program exports so that libdb's
 * calls through its PLT come here.  Checked against Berkeley DB 5.3 only
 * (5.3.28, Debian 12): logsum_install refuses any other version, proves
 * the sums equal before it answers a call, and the store checks at its
 * open that libdb's calls do reach it (logsum_reached).
 *
 * BDB sums a record with h = (h << 5) + h + byte, one byte a step: each
 * step waits on the last, and a hook puts kilobytes into the log (its
 * body, its head, the rows and due keys, their deletes, the splits), so
 * the sum was a tenth of the master's CPU (docs/PERFORMANCE).  Eight
 * bytes at a time the same sum is h * 33^8 plus each byte times its own
 * power of 33, multiplies that do not wait on each other.  With AVX2, 32
 * bytes a step in four vectors of eight lanes, each lane the sum of every
 * eighth byte of its vector's share, weighted by its power of 33 at the
 * end.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

#if defined(__x86_64__) && defined(__GNUC__)
#include <immintrin.h>
#define LOGSUM_AVX2	1
#endif

#include "store_logsum.h"

#define P33_2	(33u * 33u)	/* powers of 33, mod 2^32 */
#define P33_3	(P33_2 * 33u)
#define P33_4	(P33_3 * 33u)
#define P33_5	(P33_4 * 33u)
#define P33_6	(P33_5 * 33u)
#define P33_7	(P33_6 * 33u)
#define P33_8	(P33_7 * 33u)

typedef uint32_t (*hamfn)(void *, const void *, uint32_t);

/* libdb calls this, through its PLT, when the program exports it. */
uint32_t	 __ham_func4(void *, const void *, uint32_t);

static hamfn	 bdb_fn(void);
#ifdef LOGSUM_AVX2
static int	 has_avx2(void);
static uint32_t	 sum_avx2(const unsigned char *, size_t);
#endif
static int	 agree(hamfn, char *, size_t);
static int	 differs(hamfn, const unsigned char *, size_t, char *,
	    size_t);

#define LOGSUM_BDB_MAJOR	5	/* the libdb it was checked against */
#define LOGSUM_BDB_MINOR	3

static int	 installed = -1;	/* -1: not tried yet */
static int	 reached;		/* a call of libdb's came here */
static char	 why[160];		/* why not installed */
static hamfn	 bdb;

uint32_t
logsum(const void *p, size_t len)
{
	const unsigned char *q = p, *end;
	uint32_t h = 0;

	if (len == 0)
		return 0;	/* as libdb's, which may be given NULL */
	end = q + len;
#ifdef LOGSUM_AVX2
	if (len >= 64 && has_avx2()) {
		h = sum_avx2(q, len / 32);
		q += len / 32 * 32;
	}
#endif
	for (; end - q >= 8; q += 8)
		h = h * P33_8 + q[0] * P33_7 + q[1] * P33_6 + q[2] * P33_5 +
		    q[3] * P33_4 + q[4] * P33_3 + q[5] * P33_2 + q[6] * 33u +
		    q[7];
	for (; q < end; q++)
		h = h * 33u + *q;
	return h;
}

#ifdef LOGSUM_AVX2
/* pw[k] = 33^(32 - k): 33^32, then the weights of a group's bytes. */
static uint32_t	 pw[33];

static int
has_avx2(void)
{
	static int yes = -1;
	int k;

	if (yes == -1) {
		pw[32] = 1;
		for (k = 32; k > 0; k--)
			pw[k - 1] = pw[k] * 33u;
		__builtin_cpu_init();
		yes = __builtin_cpu_supports("avx2") ? 1 : 0;
	}
	return yes;
}

/*
 * The sum of n groups of 32 bytes.  Vector m (0-3) takes bytes 8m to 8m+7
 * of each group, one a lane: a = a * 33^32 + bytes, so after the last
 * group lane j of vector m holds what byte 8m + j's position contributes,
 * short of its weight within a group, 33^(31 - 8m - j) = pw[8m + j + 1].
 */
__attribute__((target("avx2")))
static uint32_t
sum_avx2(const unsigned char *q, size_t n)
{
	__m256i a0, a1, a2, a3, m, w, t;
	__m128i x;
	size_t i;

	m = _mm256_set1_epi32((int)pw[0]);
	a0 = a1 = a2 = a3 = _mm256_setzero_si256();
	for (i = 0; i < n; i++, q += 32) {
		a0 = _mm256_add_epi32(_mm256_mullo_epi32(a0, m),
		    _mm256_cvtepu8_epi32(_mm_loadl_epi64((const void *)q)));
		a1 = _mm256_add_epi32(_mm256_mullo_epi32(a1, m),
		    _mm256_cvtepu8_epi32(_mm_loadl_epi64((const void *)
		    (q + 8))));
		a2 = _mm256_add_epi32(_mm256_mullo_epi32(a2, m),
		    _mm256_cvtepu8_epi32(_mm_loadl_epi64((const void *)
		    (q + 16))));
		a3 = _mm256_add_epi32(_mm256_mullo_epi32(a3, m),
		    _mm256_cvtepu8_epi32(_mm_loadl_epi64((const void *)
		    (q + 24))));
	}
	w = _mm256_loadu_si256((const void *)(pw + 1));
	t = _mm256_mullo_epi32(a0, w);
	w = _mm256_loadu_si256((const void *)(pw + 9));
	t = _mm256_add_epi32(t, _mm256_mullo_epi32(a1, w));
	w = _mm256_loadu_si256((const void *)(pw + 17));
	t = _mm256_add_epi32(t, _mm256_mullo_epi32(a2, w));
	w = _mm256_loadu_si256((const void *)(pw + 25));
	t = _mm256_add_epi32(t, _mm256_mullo_epi32(a3, w));
	x = _mm_add_epi32(_mm256_castsi256_si128(t),
	    _mm256_extracti128_si256(t, 1));
	x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0x4e));
	x = _mm_add_epi32(x, _mm_shuffle_epi32(x, 0xb1));
	return (uint32_t)_mm_cvtsi128_si32(x);
}
#endif

uint32_t
__ham_func4(void *dbp, const void *key, uint32_t len)
{
	hamfn fn;

	if (installed == 1) {
		/* Relaxed: a flag set once, read by the store's open. */
		if (!__atomic_load_n(&reached, __ATOMIC_RELAXED))
			__atomic_store_n(&reached, 1, __ATOMIC_RELAXED);
		return logsum(key, len);
	}
	/* Not installed (yet): libdb's own. */
	if ((fn = bdb_fn()) == NULL)
		return logsum(key, len);	/* unreachable: libdb called
						 * us, so it has one */
	return fn(dbp, key, len);
}

hamfn
logsum_bdb(void)
{
	return bdb_fn();
}

int
logsum_reached(void)
{
	return __atomic_load_n(&reached, __ATOMIC_RELAXED);
}

int
logsum_install(int major, int minor, char *err, size_t errlen)
{
	hamfn fn;

	if (installed == -1) {
		installed = 0;
		if (major != LOGSUM_BDB_MAJOR || minor != LOGSUM_BDB_MINOR)
			snprintf(why, sizeof(why), "libdb %d.%d: logsum is "
			    "checked against %d.%d only", major, minor,
			    LOGSUM_BDB_MAJOR, LOGSUM_BDB_MINOR);
		else if ((fn = bdb_fn()) == NULL)
			snprintf(why, sizeof(why), "libdb's __ham_func4 not "
			    "found");
		else if (dlsym(RTLD_DEFAULT, "__ham_func4") !=
		    (void *)__ham_func4)
			snprintf(why, sizeof(why), "__ham_func4 not exported "
			    "by the program");
		else if (agree(fn, why, sizeof(why)) == 0)
			installed = 1;
	}
	if (!installed)
		snprintf(err, errlen, "%s", why);
	return installed;
}

/* libdb's definition: the next one after this program's. */
static hamfn
bdb_fn(void)
{
	void *sym;

	if (bdb == NULL && (sym = dlsym(RTLD_NEXT, "__ham_func4")) != NULL &&
	    sym != (void *)__ham_func4)
		memcpy(&bdb, &sym, sizeof(bdb));
	return bdb;
}

/*
 * Every length to 300 at each of eight alignments, then a few long ones,
 * over bytes of a fixed xorshift sequence, all 0xff (every product wraps)
 * and all zero.
 */
static int
agree(hamfn fn, char *err, size_t errlen)
{
	static const uint32_t longer[] = { 1024, 1100, 4093, 8192, 32771 };
	static unsigned char buf[32771 + 8];
	uint64_t x = 0x9e3779b97f4a7c15ULL;
	size_t i, off;
	int fill;

	for (fill = 0; fill < 3; fill++) {
		for (i = 0; i < sizeof(buf); i++) {
			x ^= x << 13;
			x ^= x >> 7;
			x ^= x << 17;
			buf[i] = fill == 0 ? (unsigned char)x :
			    fill == 1 ? 0xff : 0;
		}
		for (off = 0; off < 8; off++) {
			for (i = 0; i < 300; i++)
				if (differs(fn, buf + off, i, err,
				    errlen))
					return -1;
			for (i = 0; i < sizeof(longer) / sizeof(longer[0]);
			    i++)
				if (differs(fn, buf + off, longer[i], err,
				    errlen))
					return -1;
		}
	}
	return 0;
}

static int
differs(hamfn fn, const unsigned char *p, size_t len, char *err,
    size_t errlen)
{
	uint32_t want, got;

	want = fn(NULL, p, (uint32_t)len);
	if ((got = logsum(p, len)) == want)
		return 0;
	snprintf(err, errlen, "logsum differs from libdb's __ham_func4 over "
	    "%zu bytes: %08x against %08x", len, got, want);
	return 1;
}
