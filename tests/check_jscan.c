/* SPDX-License-Identifier: ISC */
/*
 * check_jscan.c: unit tests for workers/jscan.c, the one-pass JSON scanner,
 * and a differential test holding it against jansson (tests/jscan_ref.c)
 * over a generated corpus and its mutations, from a fixed seed so that a
 * failure repeats.
 */
#include "config.h"

#include <check.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "jscan.h"
#include "jscan_ref.h"

#define CASE_TIMEOUT	60
#define NELEM(a)	((int)(sizeof(a) / sizeof((a)[0])))

struct scase {
	const char	*json;
	const char	*path;
	int		 ok;		/* accepted */
	enum jscan_kind	 kind;
	const char	*want;		/* a string decoded, an integer's %lld */
};

static const struct scase scases[] = {
	/* The top: an object or an array, whitespace around, no more. */
	{ "{\"type\":\"a.b\"}", "type", 1, JSCAN_STRING, "a.b" },
	{ " \t\r\n{\"type\" : \"x\" } \n", "type", 1, JSCAN_STRING, "x" },
	{ "[\"type\"]", "type", 1, JSCAN_NONE, NULL },
	{ "\"type\"", "type", 0, JSCAN_NONE, NULL },
	{ "1", "type", 0, JSCAN_NONE, NULL },
	{ "null", "type", 0, JSCAN_NONE, NULL },
	{ "", "type", 0, JSCAN_NONE, NULL },
	{ "   ", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"x\"} {}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"x\"}x", "type", 0, JSCAN_NONE, NULL },
	{ "\xef\xbb\xbf{\"type\":\"x\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"x\"", "type", 0, JSCAN_NONE, NULL },
	/* The whole body is checked, after the value too. */
	{ "{\"type\":\"x\",\"b\":[1,]}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"x\",}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"x\" \"b\":1}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"x\",\"b\":tru}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"x\",\"b\":nulll}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"x\",1:2}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\"=\"x\"}", "type", 0, JSCAN_NONE, NULL },
	/* Kinds: a string, an integer; anything else is another value. */
	{ "{\"type\":42}", "type", 1, JSCAN_INTEGER, "42" },
	{ "{\"type\":-0}", "type", 1, JSCAN_INTEGER, "0" },
	{ "{\"type\":-9223372036854775808}", "type", 1, JSCAN_INTEGER,
	    "-9223372036854775808" },
	{ "{\"type\":9223372036854775807}", "type", 1, JSCAN_INTEGER,
	    "9223372036854775807" },
	{ "{\"type\":9223372036854775808}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"a\":-9223372036854775809,\"type\":1}", "type", 0, JSCAN_NONE,
	    NULL },
	{ "{\"type\":1.0}", "type", 1, JSCAN_OTHER, NULL },
	{ "{\"type\":1e2}", "type", 1, JSCAN_OTHER, NULL },
	{ "{\"type\":true}", "type", 1, JSCAN_OTHER, NULL },
	{ "{\"type\":false}", "type", 1, JSCAN_OTHER, NULL },
	{ "{\"type\":null}", "type", 1, JSCAN_OTHER, NULL },
	{ "{\"type\":[\"x\"]}", "type", 1, JSCAN_OTHER, NULL },
	{ "{\"type\":{\"type\":\"x\"}}", "type", 1, JSCAN_OTHER, NULL },
	{ "{\"type\":\"\"}", "type", 1, JSCAN_STRING, "" },
	/* Numbers as RFC 8259 has them. */
	{ "[01]", NULL, 0, JSCAN_NONE, NULL },
	{ "[-]", NULL, 0, JSCAN_NONE, NULL },
	{ "[1.]", NULL, 0, JSCAN_NONE, NULL },
	{ "[.5]", NULL, 0, JSCAN_NONE, NULL },
	{ "[+1]", NULL, 0, JSCAN_NONE, NULL },
	{ "[1e]", NULL, 0, JSCAN_NONE, NULL },
	{ "[1e+]", NULL, 0, JSCAN_NONE, NULL },
	{ "[1E-2,0.5e+3,-0.0]", NULL, 1, JSCAN_NONE, NULL },
	/* Reals: infinity refused, underflow to zero taken. */
	{ "[1.7976931348623157e308]", NULL, 1, JSCAN_NONE, NULL },
	{ "[1.7976931348623158e308]", NULL, 1, JSCAN_NONE, NULL },
	{ "[1.7976931348623159e308]", NULL, 0, JSCAN_NONE, NULL },
	{ "[-2e308]", NULL, 0, JSCAN_NONE, NULL },
	{ "[1e99999999999999999999]", NULL, 0, JSCAN_NONE, NULL },
	{ "[1e-99999999999999999999]", NULL, 1, JSCAN_NONE, NULL },
	{ "[0e99999999999999999999]", NULL, 1, JSCAN_NONE, NULL },
	{ "[0.000001e314]", NULL, 1, JSCAN_NONE, NULL },
	{ "[0.0000001e316]", NULL, 0, JSCAN_NONE, NULL },
	/* The dot path through objects. */
	{ "{\"event\":{\"type\":\"message\"},\"type\":\"event_callback\"}",
	    "event.type", 1, JSCAN_STRING, "message" },
	{ "{\"event\":[{\"type\":\"x\"}]}", "event.type", 1, JSCAN_NONE,
	    NULL },
	{ "{\"event\":\"type\"}", "event.type", 1, JSCAN_NONE, NULL },
	{ "{\"a\":{\"b\":{\"c\":\"d\"}}}", "a.b.c", 1, JSCAN_STRING, "d" },
	{ "{\"a\":{\"b\":{\"c\":\"d\"}}}", "a.b", 1, JSCAN_OTHER, NULL },
	{ "{\"a\":{\"x\":{\"b\":\"d\"}},\"b\":\"top\"}", "a.b", 1, JSCAN_NONE,
	    NULL },
	{ "{\"x\":{\"type\":\"deep\"}}", "type", 1, JSCAN_NONE, NULL },
	{ "{\"\":\"empty\"}", "", 1, JSCAN_STRING, "empty" },
	/* Duplicates: the last wins, whole. */
	{ "{\"type\":\"a\",\"type\":\"b\"}", "type", 1, JSCAN_STRING, "b" },
	{ "{\"type\":\"a\",\"type\":1}", "type", 1, JSCAN_INTEGER, "1" },
	{ "{\"type\":\"a\",\"type\":null}", "type", 1, JSCAN_OTHER, NULL },
	{ "{\"event\":{\"type\":\"a\"},\"event\":{\"x\":1}}", "event.type",
	    1, JSCAN_NONE, NULL },
	{ "{\"event\":{\"type\":\"a\"},\"event\":5}", "event.type", 1,
	    JSCAN_NONE, NULL },
	{ "{\"event\":{\"type\":\"a\",\"type\":\"b\"},\"x\":1}",
	    "event.type", 1, JSCAN_STRING, "b" },
	{ "{\"event\":5,\"event\":{\"type\":\"c\"}}", "event.type", 1,
	    JSCAN_STRING, "c" },
	/* Names and values with escapes decoded. */
	{ "{\"t\\u0079pe\":\"x\"}", "type", 1, JSCAN_STRING, "x" },
	{ "{\"ty\\\"pe\":\"x\"}", "ty\"pe", 1, JSCAN_STRING, "x" },
	{ "{\"type\":\"a\\/b\\\\c\\\"d\\n\\t\\r\\b\\f\"}", "type", 1,
	    JSCAN_STRING, "a/b\\c\"d\n\t\r\b\f" },
	{ "{\"type\":\"\\u00e9\\u20ac\\ud83d\\ude00\"}", "type", 1,
	    JSCAN_STRING, "\xc3\xa9\xe2\x82\xac\xf0\x9f\x98\x80" },
	{ "{\"type\":\"\\u0000\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"\\u0000\":1}", NULL, 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"\\ud83d\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"\\ud83dx\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"\\ud83d\\u0041\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"\\ude00\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"\\u12\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"\\x\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"\\'\"}", "type", 0, JSCAN_NONE, NULL },
	/* Control characters and UTF-8. */
	{ "{\"type\":\"a\tb\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"a\x7f\"}", "type", 1, JSCAN_STRING, "a\x7f" },
	{ "{\"type\":\"\xc3\xa9\"}", "type", 1, JSCAN_STRING, "\xc3\xa9" },
	{ "{\"type\":\"\xc0\xa9\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"\xe0\x80\xaf\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"\xed\xa0\x80\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"\xf4\x90\x80\x80\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"\xf4\x8f\xbf\xbf\"}", "type", 1, JSCAN_STRING,
	    "\xf4\x8f\xbf\xbf" },
	{ "{\"type\":\"\xc3\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"\x80\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"\xff\"}", "type", 0, JSCAN_NONE, NULL },
	{ "{\"type\":\"x\"}\xc3\xa9", "type", 0, JSCAN_NONE, NULL },
};

START_TEST(test_cases)
{
	const struct scase *c = &scases[_i];
	struct jscan_val v;
	char why[256], got[64], *dec;
	size_t n;
	int ok;

	ok = jscan(c->json, strlen(c->json), c->path, &v);
	ck_assert_msg(ok == c->ok, "case %d %s: ok %d", _i, c->json, ok);
	ck_assert_msg(v.kind == c->kind, "case %d %s: kind %d", _i, c->json,
	    v.kind);
	if (c->kind == JSCAN_STRING) {
		ck_assert_ptr_nonnull(dec = malloc(v.rawlen + 1));
		n = jscan_unescape(v.raw, v.rawlen, dec);
		dec[n] = '\0';
		ck_assert_uint_eq(n, strlen(c->want));
		ck_assert_str_eq(dec, c->want);
		ck_assert_int_eq(v.escaped, memchr(v.raw, '\\', v.rawlen) !=
		    NULL);
		/* An unescaped string is the body's own bytes. */
		ck_assert(v.raw >= c->json && v.raw + v.rawlen <=
		    c->json + strlen(c->json));
		free(dec);
	} else if (c->kind == JSCAN_INTEGER) {
		snprintf(got, sizeof(got), "%lld", v.integer);
		ck_assert_str_eq(got, c->want);
	}
	/* And jansson says the same. */
	ck_assert_msg(jscan_ref_agree(c->json, strlen(c->json), c->path,
	    why, sizeof(why)), "case %d %s: %s", _i, c->json, why);
}
END_TEST

/* A NUL byte is a byte like any other: a control character in a string,
 * an invalid token outside; the length, not a terminator, ends the body. */
START_TEST(test_nul_byte)
{
	static const char in_str[] = "{\"type\":\"a\0b\"}";
	static const char after[] = "{\"type\":\"a\"}\0";
	static const char ws[] = "{\"type\":\"a\"} \0 ";
	static const struct {
		const char	*s;
		size_t		 n;
		int		 ok;
	} quirk[] = {
		{ "[1\0]", 4, 1 }, { "[1\0\0]", 5, 0 }, { "[1 \0]", 5, 0 },
		{ "[-0.5e3\0,2]", 11, 1 }, { "[true\0]", 7, 1 },
		{ "[false\0 ]", 9, 1 }, { "[null\0,null\0]", 13, 1 },
		{ "[\"a\"\0]", 6, 0 }, { "[[]\0]", 5, 0 }, { "[]\0", 3, 0 },
		{ "{\"type\"\0:1}", 11, 0 }, { "{\"type\":\0 1}", 12, 0 },
	};
	struct jscan_val v;
	char why[256];
	int i;

	ck_assert_int_eq(jscan(in_str, sizeof(in_str) - 1, "type", &v), 0);
	ck_assert_int_eq(jscan(after, sizeof(after) - 1, "type", &v), 0);
	ck_assert_int_eq(jscan(after, sizeof(after) - 2, "type", &v), 1);
	ck_assert_int_eq(jscan(ws, sizeof(ws) - 1, "type", &v), 0);
	ck_assert(jscan_ref_agree(in_str, sizeof(in_str) - 1, "type", why,
	    sizeof(why)));
	ck_assert(jscan_ref_agree(after, sizeof(after) - 1, "type", why,
	    sizeof(why)));
	ck_assert(jscan_ref_agree(ws, sizeof(ws) - 1, "type", why,
	    sizeof(why)));
	ck_assert_int_eq(jscan(NULL, 0, "type", &v), 0);
	ck_assert_int_eq(v.kind, JSCAN_NONE);
	/* jansson's quirk: one NUL right after a number or a literal is
	 * skipped; a second, or one after a string or a bracket, is not. */
	for (i = 0; i < NELEM(quirk); i++) {
		ck_assert_msg(jscan(quirk[i].s, quirk[i].n, "type", &v) ==
		    quirk[i].ok, "quirk %d", i);
		ck_assert_msg(jscan_ref_agree(quirk[i].s, quirk[i].n, "type",
		    why, sizeof(why)), "quirk %d: %s", i, why);
	}
	ck_assert_int_eq(jscan("{\"type\":1\0}", 11, "type", &v), 1);
	ck_assert_int_eq(v.kind, JSCAN_INTEGER);
}
END_TEST

/* Nesting up to JSCAN_MAX_DEPTH values, a scalar counting as one; around
 * the limit, arrays and objects, empty and not. */
START_TEST(test_depth)
{
	static const char *inner[] = { "", "1", "\"s\"", "[]", "{}" };
	struct jscan_val v;
	char why[256], *b;
	size_t n, i, len;
	int k, obj, ok;

	ck_assert_ptr_nonnull(b = malloc(8 * (JSCAN_MAX_DEPTH + 4) + 16));
	for (obj = 0; obj < 2; obj++)
		for (n = JSCAN_MAX_DEPTH - 2; n <= JSCAN_MAX_DEPTH + 1; n++)
			for (k = 0; k < NELEM(inner); k++) {
				len = 0;
				for (i = 0; i < n; i++) {
					memcpy(b + len, obj ? "{\"a\":" : "[",
					    obj ? 5 : 1);
					len += obj ? 5 : 1;
				}
				if (obj && *inner[k] == '\0')
					continue;
				memcpy(b + len, inner[k], strlen(inner[k]));
				len += strlen(inner[k]);
				for (i = 0; i < n; i++)
					b[len++] = obj ? '}' : ']';
				ok = jscan(b, len, "a.a.a", &v);
				ck_assert_msg(jscan_ref_agree(b, len, "a.a.a",
				    why, sizeof(why)), "depth %zu %s %s: %s",
				    n, obj ? "objects" : "arrays", inner[k],
				    why);
				/* The limit is where it is said to be. */
				if (n + (*inner[k] != '\0') <=
				    JSCAN_MAX_DEPTH)
					ck_assert_int_eq(ok, 1);
				else
					ck_assert_int_eq(ok, 0);
			}
	free(b);
}
END_TEST

/* Reals around DBL_MAX written many ways, and integers around the
 * limits: accepted and refused as strtod and strtoll have them. */
START_TEST(test_numbers)
{
	static const char *nums[] = {
	    "1.7976931348623157e308", "1.79769313486231580793728971405301e308",
	    "1.79769313486231580793728971405302e308",
	    "1.797693134862315807937289714053e+308",
	    "179769313486231580793728971405301.0e276",
	    "0.179769313486231580793728971405303e309",
	    "17976931348623158079372897140530341507993413271003782693617377"
	    "89804726096641176469107449483068440703581545734432101929596788"
	    "77208856843005022018012018030818024024920017812700810017970370"
	    "62401103920102939206026208106004701026008230820046904902501004"
	    "10401503307040023000904002803703200502403801209401102002904000"
	    "4010.0",
	    "17976931348623158079372897140530341507993413271003782693617377"
	    "89804726096641176469107449483068440703581545734432101929596788"
	    "77208856843005022018012018030818024024920017812700810017970370"
	    "62401103920102939206026208106004701026008230820046904902501004"
	    "10401503307040023000904002803703200502403801209401102002904000"
	    "40099e-1",
	    "9e308", "1e309", "0.1e310", "1e-324", "4.9e-324", "2.5e-324",
	    "-1.7976931348623159e308", "0.0", "-0.0e-0", "100000e303",
	    "1000000e303", "9223372036854775807", "9223372036854775808",
	    "-9223372036854775808", "-9223372036854775809",
	    "18446744073709551616", "99999999999999999999", "-0", "0",
	    "12345678901234567890123456789", "1E400", "1e-400",
	};
	char body[1024], why[256];
	int i, n;

	for (i = 0; i < NELEM(nums); i++) {
		n = snprintf(body, sizeof(body), "{\"type\":%s}", nums[i]);
		ck_assert_msg(jscan_ref_agree(body, n, "type", why,
		    sizeof(why)), "%s: %s", nums[i], why);
	}
}
END_TEST

/* The corpus: a deterministic generator of JSON texts, mostly valid,
 * with the names the keys look up and values from a palette of the
 * tricky, then mutated byte-wise. */
struct gen {
	uint64_t	 s;
	char		*b;
	size_t		 len, cap;
};

static uint32_t
gen_rand(struct gen *g)
{
	g->s ^= g->s << 13;
	g->s ^= g->s >> 7;
	g->s ^= g->s << 17;
	return g->s >> 16;
}

static void
gen_put(struct gen *g, const char *s, size_t n)
{
	if (g->len + n > g->cap)
		return;			/* the text is cut: still a case */
	memcpy(g->b + g->len, s, n);
	g->len += n;
}

static void
gen_puts(struct gen *g, const char *s)
{
	gen_put(g, s, strlen(s));
}

static void
gen_ws(struct gen *g)
{
	static const char *ws[] = { "", "", "", " ", "\n", "\t", "\r\n  " };

	gen_puts(g, ws[gen_rand(g) % NELEM(ws)]);
}

static void
gen_string(struct gen *g, int name)
{
	static const char *names[] = { "type", "event", "action", "id", "a",
	    "b", "t\\u0079pe", "\\u0065vent", "typ", "types", "", "Type",
	    "ev\\u0065nt", "act\\u0069on" };
	static const char *parts[] = { "invoice.paid", "issues", "opened",
	    "evt_1Nq", "\\n", "\\\"", "\\\\", "\\/", "\\u00e9", "\\u20AC",
	    "\\ud83d\\ude00", "\xc3\xa9", "\xe2\x82\xac", "\xf0\x9f\x98\x80",
	    "\xf4\x8f\xbf\xbf", "\x7f", " ", ".", "\\t", "\\b\\f\\r",
	    "\\u0041", "\\udbff\\udfff", "\\ud800\\udc00", "x", "0" };
	int i, n;

	gen_puts(g, "\"");
	if (name && gen_rand(g) % 4 != 0)
		gen_puts(g, names[gen_rand(g) % 6]);
	else if (name && gen_rand(g) % 2 != 0)
		gen_puts(g, names[gen_rand(g) % NELEM(names)]);
	else
		for (n = gen_rand(g) % 4, i = 0; i < n; i++)
			gen_puts(g, parts[gen_rand(g) % NELEM(parts)]);
	gen_puts(g, "\"");
}

static void
gen_value(struct gen *g, int depth, int top)
{
	static const char *scalars[] = { "0", "-0", "1", "-1", "42",
	    "9223372036854775807", "-9223372036854775808", "1.5", "-0.0",
	    "1e308", "1.7976931348623157e308", "1e-400", "0e999", "1E+2",
	    "true", "false", "null" };
	/* Refused by both: rarer, or few texts would be valid. */
	static const char *bad[] = { "9223372036854775808",
	    "-9223372036854775809", "1.7976931348623159e308", "2e308",
	    "123456789012345678901234567890", "01", "1.", "tru" };
	int i, n, kind;

	kind = top ? (gen_rand(g) % 10 == 0 ? 1 : 0) : depth > 5 ?
	    2 + gen_rand(g) % 2 : gen_rand(g) % 4;
	switch (kind) {
	case 0:
	case 1:
		gen_puts(g, kind == 0 ? "{" : "[");
		gen_ws(g);
		for (n = gen_rand(g) % 6, i = 0; i < n; i++) {
			if (i > 0) {
				gen_puts(g, ",");
				gen_ws(g);
			}
			if (kind == 0) {
				gen_string(g, 1);
				gen_ws(g);
				gen_puts(g, ":");
				gen_ws(g);
			}
			gen_value(g, depth + 1, 0);
			gen_ws(g);
		}
		gen_puts(g, kind == 0 ? "}" : "]");
		break;
	case 2:
		gen_string(g, 0);
		break;
	default:
		if (gen_rand(g) % 40 == 0)
			gen_puts(g, bad[gen_rand(g) % NELEM(bad)]);
		else
			gen_puts(g, scalars[gen_rand(g) % NELEM(scalars)]);
		break;
	}
}

static void
gen_mutate(struct gen *g)
{
	static const unsigned char bytes[] = { '"', '\\', '{', '}', '[', ']',
	    ',', ':', 0x00, 0x1f, 0x20, 0x7f, 0x80, 0xbf, 0xc0, 0xc3, 0xe0,
	    0xed, 0xf0, 0xf4, 0xf5, 0xff, 'u', 'd', '0', '9', 'e', '.', '-',
	    '+', 't', 'n', 'a' };
	size_t at, n;

	if (g->len == 0)
		return;
	at = gen_rand(g) % g->len;
	switch (gen_rand(g) % 5) {
	case 0:
		g->b[at] = bytes[gen_rand(g) % sizeof(bytes)];
		break;
	case 1:
		memmove(g->b + at, g->b + at + 1, g->len - at - 1);
		g->len--;
		break;
	case 2:
		if (g->len < g->cap) {
			memmove(g->b + at + 1, g->b + at, g->len - at);
			g->b[at] = bytes[gen_rand(g) % sizeof(bytes)];
			g->len++;
		}
		break;
	case 3:
		g->len = at;
		break;
	default:
		n = gen_rand(g) % (g->len - at) + 1;
		if (g->len + n <= g->cap) {
			memmove(g->b + at + n, g->b + at, g->len - at);
			g->len += n;
		}
		break;
	}
}

/* The text as C would write it, for a failure's message. */
static const char *
gen_show(const struct gen *g)
{
	static char out[4 * 4096 + 1];
	const unsigned char *p = (const unsigned char *)g->b;
	size_t i, n = 0;

	for (i = 0; i < g->len; i++)
		if (p[i] >= 0x20 && p[i] < 0x7f && p[i] != '\\')
			out[n++] = p[i];
		else
			n += snprintf(out + n, 5, "\\x%02x", p[i]);
	out[n] = '\0';
	return out;
}

START_TEST(test_differential)
{
	static const char *paths[] = { "type", "event.type", "action", "id",
	    "a.b", "a.a.a" };
	struct gen g;
	char why[256], orig[4096];
	size_t olen;
	int doc, m, p, checked = 0, accepted = 0, found = 0;
	struct jscan_val v;

	memset(&g, 0, sizeof(g));
	g.s = 0x3838383838383838ULL;
	g.cap = sizeof(orig);
	ck_assert_ptr_nonnull(g.b = malloc(g.cap));
	for (doc = 0; doc < 4000; doc++) {
		g.len = 0;
		gen_ws(&g);
		gen_value(&g, 0, gen_rand(&g) % 50 != 0);
		gen_ws(&g);
		memcpy(orig, g.b, olen = g.len);
		for (m = 0; m < 4; m++) {
			if (m > 0) {
				memcpy(g.b, orig, g.len = olen);
				gen_mutate(&g);
				if (m > 1)
					gen_mutate(&g);
			}
			for (p = 0; p < NELEM(paths); p++) {
				ck_assert_msg(jscan_ref_agree(g.b, g.len,
				    paths[p], why, sizeof(why)),
				    "doc %d mutant %d path %s: %s: %s", doc,
				    m, paths[p], why, gen_show(&g));
				checked++;
				if (jscan(g.b, g.len, paths[p], &v)) {
					accepted++;
					found += v.kind != JSCAN_NONE;
				}
			}
		}
	}
	/* The corpus reaches both answers and finds values. */
	ck_assert_int_gt(accepted, checked / 8);
	ck_assert_int_lt(accepted, checked * 3 / 4);
	ck_assert_int_gt(found, checked / 40);
	free(g.b);
}
END_TEST

static Suite *
jscan_suite(void)
{
	Suite *s = suite_create("jscan");
	TCase *tc = tcase_create("core");

	tcase_set_timeout(tc, CASE_TIMEOUT);
	tcase_add_loop_test(tc, test_cases, 0, NELEM(scases));
	tcase_add_test(tc, test_nul_byte);
	tcase_add_test(tc, test_depth);
	tcase_add_test(tc, test_numbers);
	tcase_add_test(tc, test_differential);
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr = srunner_create(jscan_suite());
	int failed;

	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed == 0 ? EXIT_SUCCESS : EXIT_FAILURE;
}
