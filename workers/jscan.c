/* SPDX-License-Identifier: ISC */
/*
 * jscan.c: one value read from a JSON text in one pass; see jscan.h.
 *
 * A loop over the bytes with the open containers kept as bits (1: an
 * object), not a recursion, so that the depth limit costs 256 bytes of
 * stack.  The path is followed as the text goes: the open containers
 * 1..mdepth are the top object and the values of the path's first
 * mdepth - 1 names, each the latest of its name so far; a name equal to
 * the next step clears what an earlier duplicate found, so the last
 * duplicate wins as in jansson's tree.
 *
 * One quirk of jansson's is kept, so that the two accept the same texts:
 * its lexer reads one byte past a number or a literal (true, false, null)
 * and puts it back, and a NUL byte put back reads as the end of its
 * one-character buffer, so that a single NUL right there is skipped.
 */
#include "config.h"

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"

/* Significant digits handed to strtod for a real near DBL_MAX: more than
 * the 309 of the rounding threshold 2^1024 - 2^970, so that cutting the
 * rest cannot move a real across it. */
#define REAL_DIGITS	400

struct scan {
	const unsigned char	*p, *end;
	const char		*path;
	int			 depth;		/* containers open */
	int			 mdepth;	/* of them, on the path */
	const char		*seg;		/* the name for mdepth's object */
	size_t			 seglen;
	int			 seglast;	/* it is the path's last */
	unsigned char		 obj[JSCAN_MAX_DEPTH / 8 + 1];
};

static void	path_step(struct scan *, int);
static int	hex4(const unsigned char *, unsigned *);
static int	scan_string(struct scan *, const char **, size_t *, int *);
static int	scan_number(struct scan *, int, struct jscan_val *);
static int	real_overflows(const unsigned char *, const unsigned char *);
static int	name_eq(const char *, size_t, int, const char *, size_t);
static size_t	unescape_one(const char **, char *);

#define WS(c)	((c) == ' ' || (c) == '\t' || (c) == '\n' || (c) == '\r')
#define DIGIT(c) ((c) >= '0' && (c) <= '9')

static inline void
skip_ws(struct scan *s)
{
	while (s->p < s->end && WS(*s->p))
		s->p++;
}

/* The path's name number i (0 first) into s->seg. */
static void
path_step(struct scan *s, int i)
{
	const char *p = s->path, *dot;

	while (i-- > 0 && (dot = strchr(p, '.')) != NULL)
		p = dot + 1;
	dot = strchr(p, '.');
	s->seg = p;
	s->seglen = dot != NULL ? (size_t)(dot - p) : strlen(p);
	s->seglast = dot == NULL;
}

static int
hex4(const unsigned char *p, unsigned *u)
{
	int i;

	*u = 0;
	for (i = 0; i < 4; i++) {
		*u <<= 4;
		if (p[i] >= '0' && p[i] <= '9')
			*u |= p[i] - '0';
		else if (p[i] >= 'a' && p[i] <= 'f')
			*u |= p[i] - 'a' + 10;
		else if (p[i] >= 'A' && p[i] <= 'F')
			*u |= p[i] - 'A' + 10;
		else
			return 0;
	}
	return 1;
}

/* A string from its opening quote: 1 with its raw bytes, or 0. */
static int
scan_string(struct scan *s, const char **rawp, size_t *lenp, int *escp)
{
	const unsigned char *p = s->p + 1, *end = s->end, *start = p;
	unsigned u, lo;
	int n;

	*escp = 0;
	for (;;) {
		while (p < end && *p >= 0x20 && *p < 0x80 && *p != '"' &&
		    *p != '\\')
			p++;
		if (p == end)
			return 0;
		if (*p == '"')
			break;
		if (*p < 0x20)
			return 0;
		if (*p == '\\') {
			*escp = 1;
			if (++p == end)
				return 0;
			if (strchr("\"\\/bfnrt", *p) != NULL && *p != '\0') {
				p++;
				continue;
			}
			if (*p != 'u' || end - p < 5 || !hex4(p + 1, &u))
				return 0;
			p += 5;
			/* No NUL (JSON_ALLOW_NUL is not given); a high
			 * surrogate followed at once by a low one. */
			if (u == 0 || (u >= 0xdc00 && u <= 0xdfff))
				return 0;
			if (u >= 0xd800 && u <= 0xdbff) {
				if (end - p < 6 || p[0] != '\\' ||
				    p[1] != 'u' || !hex4(p + 2, &lo) ||
				    lo < 0xdc00 || lo > 0xdfff)
					return 0;
				p += 6;
			}
			continue;
		}
		/* UTF-8: no overlong form, surrogate or code point above
		 * U+10FFFF. */
		if (*p < 0xc2 || *p > 0xf4)
			return 0;
		n = *p < 0xe0 ? 1 : *p < 0xf0 ? 2 : 3;
		if (end - p <= n)
			return 0;
		if ((p[1] & 0xc0) != 0x80 ||
		    (n > 1 && (p[2] & 0xc0) != 0x80) ||
		    (n > 2 && (p[3] & 0xc0) != 0x80))
			return 0;
		if ((*p == 0xe0 && p[1] < 0xa0) ||
		    (*p == 0xed && p[1] > 0x9f) ||
		    (*p == 0xf0 && p[1] < 0x90) ||
		    (*p == 0xf4 && p[1] > 0x8f))
			return 0;
		p += n + 1;
	}
	*rawp = (const char *)start;
	*lenp = p - start;
	s->p = p + 1;
	return 1;
}

/*
 * A number: 1, or 0 when it is malformed, an integer outside json_int_t
 * (strtoll's ERANGE) or a real strtod takes to infinity.  With want, an
 * integer's value or JSCAN_OTHER goes into *v.
 */
static int
scan_number(struct scan *s, int want, struct jscan_val *v)
{
	const unsigned char *p = s->p, *end = s->end, *digits;
	unsigned long long mag = 0, lim;
	int neg = 0, real = 0;

	if (*p == '-') {
		neg = 1;
		p++;
	}
	digits = p;
	if (p == end || !DIGIT(*p))
		return 0;
	if (*p == '0')
		p++;
	else
		while (p < end && DIGIT(*p))
			p++;
	if (p < end && *p == '.') {
		real = 1;
		if (++p == end || !DIGIT(*p))
			return 0;
		while (p < end && DIGIT(*p))
			p++;
	}
	if (p < end && (*p == 'e' || *p == 'E')) {
		real = 1;
		if (++p < end && (*p == '+' || *p == '-'))
			p++;
		if (p == end || !DIGIT(*p))
			return 0;
		while (p < end && DIGIT(*p))
			p++;
	}
	s->p = p;
	if (real) {
		if (real_overflows(digits, p))
			return 0;
		if (want)
			v->kind = JSCAN_OTHER;
		return 1;
	}
	lim = neg ? 9223372036854775808ULL : 9223372036854775807ULL;
	for (; digits < p; digits++) {
		if (mag > (lim - (*digits - '0')) / 10)
			return 0;
		mag = mag * 10 + (*digits - '0');
	}
	if (want) {
		v->kind = JSCAN_INTEGER;
		v->integer = neg ? (long long)(0 - mag) : (long long)mag;
	}
	return 1;
}

/*
 * Whether the real in [p, end) (no sign; well formed) is beyond DBL_MAX
 * once rounded.  Its value is 0.D * 10^e with D its digits less leading
 * zeros: e above 309 always is, under 309 never; at 309 strtod decides on
 * the first REAL_DIGITS of D, written without a decimal point so that the
 * locale cannot matter.
 */
static int
real_overflows(const unsigned char *p, const unsigned char *end)
{
	char buf[REAL_DIGITS + 32];
	const unsigned char *q;
	long nint = 0, zeros = 0, e, ex = 0;
	int esign = 1, n = 0;

	for (q = p; q < end && DIGIT(*q); q++)
		nint++;
	/* Leading zeros of the digits, before and after the point. */
	for (q = p; q < end && (*q == '0' || *q == '.'); q++)
		if (*q == '0')
			zeros++;
	if (q == end || *q == 'e' || *q == 'E')
		return 0;		/* zero */
	for (; q < end && *q != 'e' && *q != 'E'; q++)
		if (*q != '.' && n < REAL_DIGITS)
			buf[n++] = *q;
	if (q < end) {
		q++;
		if (*q == '+' || *q == '-')
			esign = *q++ == '-' ? -1 : 1;
		/* Saturated: far past any e that could matter. */
		for (; q < end; q++)
			if (ex < 100000000)
				ex = ex * 10 + (*q - '0');
	}
	e = nint - zeros + esign * ex;
	if (e != 309)
		return e > 309;
	snprintf(buf + n, sizeof(buf) - n, "e%d", 309 - n);
	return isinf(strtod(buf, NULL));
}

/* One escape or byte of raw at *rp into out: its length. */
static size_t
unescape_one(const char **rp, char *out)
{
	const unsigned char *r = (const unsigned char *)*rp;
	unsigned u, lo;

	if (*r != '\\') {
		*out = *r;
		*rp += 1;
		return 1;
	}
	*rp += 2;
	switch (r[1]) {
	case 'b': *out = '\b'; return 1;
	case 'f': *out = '\f'; return 1;
	case 'n': *out = '\n'; return 1;
	case 'r': *out = '\r'; return 1;
	case 't': *out = '\t'; return 1;
	case 'u': break;
	default: *out = r[1]; return 1;
	}
	hex4(r + 2, &u);
	*rp += 4;
	if (u >= 0xd800 && u <= 0xdbff) {
		hex4(r + 8, &lo);
		*rp += 6;
		u = 0x10000 + ((u - 0xd800) << 10) + (lo - 0xdc00);
	}
	if (u < 0x80) {
		out[0] = u;
		return 1;
	}
	if (u < 0x800) {
		out[0] = 0xc0 | u >> 6;
		out[1] = 0x80 | (u & 0x3f);
		return 2;
	}
	if (u < 0x10000) {
		out[0] = 0xe0 | u >> 12;
		out[1] = 0x80 | ((u >> 6) & 0x3f);
		out[2] = 0x80 | (u & 0x3f);
		return 3;
	}
	out[0] = 0xf0 | u >> 18;
	out[1] = 0x80 | ((u >> 12) & 0x3f);
	out[2] = 0x80 | ((u >> 6) & 0x3f);
	out[3] = 0x80 | (u & 0x3f);
	return 4;
}

size_t
jscan_unescape(const char *raw, size_t rawlen, char *out)
{
	const char *end = raw + rawlen;
	char *o = out;

	while (raw < end)
		o += unescape_one(&raw, o);
	return o - out;
}

/* A member name's raw bytes, decoded, equal to seg. */
static int
name_eq(const char *raw, size_t rawlen, int esc, const char *seg,
    size_t seglen)
{
	const char *end = raw + rawlen;
	char b[4];
	size_t n;

	if (!esc)
		return rawlen == seglen && memcmp(raw, seg, seglen) == 0;
	while (raw < end) {
		n = unescape_one(&raw, b);
		if (n > seglen || memcmp(b, seg, n) != 0)
			return 0;
		seg += n;
		seglen -= n;
	}
	return seglen == 0;
}

int
jscan(const void *buf, size_t len, const char *path, struct jscan_val *v)
{
	struct scan s;
	const char *raw;
	size_t rawlen;
	/* want: the next value is the path's last step; follow: it is a
	 * step before, to be entered if it is an object. */
	int want = 0, follow, esc, obj, lookahead;

	memset(v, 0, sizeof(*v));
	if (buf == NULL || len == 0)
		return 0;		/* and no arithmetic on NULL */
	s.p = buf;
	s.end = s.p + len;
	s.path = path;
	s.depth = 0;
	s.mdepth = 0;
	follow = path != NULL;
	skip_ws(&s);
	if (s.p == s.end || (*s.p != '{' && *s.p != '['))
		return 0;

value:
	if (s.depth + 1 > JSCAN_MAX_DEPTH || s.p == s.end)
		goto bad;
	lookahead = 1;
	switch (*s.p) {
	case '{':
	case '[':
		obj = *s.p == '{';
		if (want)
			v->kind = JSCAN_OTHER;
		if (obj)
			s.obj[s.depth / 8] |= 1 << (s.depth % 8);
		else
			s.obj[s.depth / 8] &= ~(1 << (s.depth % 8));
		s.depth++;
		if (follow && obj) {
			s.mdepth = s.depth;
			path_step(&s, s.mdepth - 1);
		}
		want = follow = 0;
		s.p++;
		skip_ws(&s);
		if (s.p < s.end && *s.p == (obj ? '}' : ']'))
			goto close;
		if (obj)
			goto name;
		goto value;
	case '"':
		lookahead = 0;
		if (!scan_string(&s, &raw, &rawlen, &esc))
			goto bad;
		if (want) {
			v->kind = JSCAN_STRING;
			v->raw = raw;
			v->rawlen = rawlen;
			v->escaped = esc;
		}
		break;
	case 't':
	case 'n':
		if (s.end - s.p < 4 || memcmp(s.p, *s.p == 't' ? "true" :
		    "null", 4) != 0)
			goto bad;
		s.p += 4;
		if (want)
			v->kind = JSCAN_OTHER;
		break;
	case 'f':
		if (s.end - s.p < 5 || memcmp(s.p, "false", 5) != 0)
			goto bad;
		s.p += 5;
		if (want)
			v->kind = JSCAN_OTHER;
		break;
	default:
		if (*s.p != '-' && !DIGIT(*s.p))
			goto bad;
		if (!scan_number(&s, want, v))
			goto bad;
		break;
	}
	/* jansson reads one byte past a number or a literal and puts it
	 * back; a NUL put back reads as its buffer's end, so that one NUL
	 * there is skipped. */
	if (lookahead && s.p < s.end && *s.p == '\0')
		s.p++;
	want = follow = 0;

after:
	skip_ws(&s);
	if (s.p == s.end)
		goto bad;
	obj = (s.obj[(s.depth - 1) / 8] >> ((s.depth - 1) % 8)) & 1;
	if (*s.p == ',') {
		s.p++;
		skip_ws(&s);
		if (obj)
			goto name;
		goto value;
	}
	if (*s.p != (obj ? '}' : ']'))
		goto bad;

close:
	s.p++;
	if (s.depth == s.mdepth && --s.mdepth > 0)
		path_step(&s, s.mdepth - 1);
	if (--s.depth > 0)
		goto after;
	skip_ws(&s);
	if (s.p != s.end)
		goto bad;
	return 1;

name:
	if (s.p == s.end || *s.p != '"' ||
	    !scan_string(&s, &raw, &rawlen, &esc))
		goto bad;
	if (s.depth == s.mdepth && name_eq(raw, rawlen, esc, s.seg,
	    s.seglen)) {
		/* A later duplicate replaces what an earlier one found. */
		memset(v, 0, sizeof(*v));
		want = s.seglast;
		follow = !s.seglast;
	}
	skip_ws(&s);
	if (s.p == s.end || *s.p != ':')
		goto bad;
	s.p++;
	skip_ws(&s);
	goto value;

bad:
	memset(v, 0, sizeof(*v));
	return 0;
}
