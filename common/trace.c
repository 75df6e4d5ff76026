/* SPDX-License-Identifier: ISC */
/*
 * trace.c: W3C Trace Context, the checks and the contexts; see trace.h.
 *
 * Fatal: nothing (ids_random's own).
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "ids.h"
#include "trace.h"

static int	trace_hex(const char *, size_t, unsigned char *);
static int	trace_zero(const unsigned char *, size_t);
static int	trace_keych(int);
static int	trace_member(const char *, size_t);
static char	*trace_puthex(char *, const unsigned char *, size_t);

static const char trace_digits[] = "0123456789abcdef";

/* n bytes of lowercase hex (2n characters) into out: 0, or -1. */
static int
trace_hex(const char *s, size_t n, unsigned char *out)
{
	const char *a, *b;
	size_t i;

	for (i = 0; i < n; i++) {
		if (s[2 * i] == '\0' || s[2 * i + 1] == '\0' ||
		    (a = strchr(trace_digits, s[2 * i])) == NULL ||
		    (b = strchr(trace_digits, s[2 * i + 1])) == NULL)
			return -1;
		out[i] = (unsigned char)((a - trace_digits) << 4 |
		    (b - trace_digits));
	}
	return 0;
}

static int
trace_zero(const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (p[i] != 0)
			return 0;
	return 1;
}

int
trace_parse(const char *s, size_t len, struct trace_ctx *t)
{
	struct trace_ctx c;

	/* Version 00 only: a later version's longer form is not ours to
	 * guess at, and the spec's version ff is invalid anyway. */
	if (len != TRACE_PARENT_STRLEN || memchr(s, '\0', len) != NULL ||
	    s[0] != '0' || s[1] != '0' || s[2] != '-' || s[35] != '-' ||
	    s[52] != '-' ||
	    trace_hex(s + 3, TRACE_ID_LEN, c.trace_id) == -1 ||
	    trace_hex(s + 36, TRACE_SPAN_LEN, c.parent_id) == -1 ||
	    trace_hex(s + 53, 1, &c.flags) == -1 ||
	    trace_zero(c.trace_id, TRACE_ID_LEN) ||
	    trace_zero(c.parent_id, TRACE_SPAN_LEN))
		return -1;
	*t = c;
	return 0;
}

/* lcalpha / DIGIT / "_" / "-" / "*" / "/" */
static int
trace_keych(int ch)
{
	return (ch >= 'a' && ch <= 'z') || (ch >= '0' && ch <= '9') ||
	    ch == '_' || ch == '-' || ch == '*' || ch == '/';
}

/*
 * One list member, "key=value", of exactly n bytes (its surrounding
 * spaces and tabs already cut): 1, or 0 when it is not one.  A key is
 * simple (lcalpha, then up to 255 key characters) or multi-tenant
 * (tenant-id "@" system-id: an lcalpha or digit and up to 240 more, then
 * an lcalpha and up to 13 more); a value 1 to 256 printable characters
 * but "," and "=", spaces only inside.
 */
static int
trace_member(const char *s, size_t n)
{
	const char *eq, *at;
	size_t klen, vlen, i;

	if ((eq = memchr(s, '=', n)) == NULL)
		return 0;
	klen = eq - s;
	vlen = n - klen - 1;
	if (klen == 0 || vlen == 0 || vlen > 256 || eq[vlen] == ' ')
		return 0;
	for (i = 0; i < vlen; i++)
		if (eq[1 + i] < 0x20 || eq[1 + i] > 0x7e ||
		    eq[1 + i] == ',' || eq[1 + i] == '=')
			return 0;
	if ((at = memchr(s, '@', klen)) == NULL) {
		if (klen > 256 || s[0] < 'a' || s[0] > 'z')
			return 0;
		for (i = 1; i < klen; i++)
			if (!trace_keych((unsigned char)s[i]))
				return 0;
		return 1;
	}
	/* tenant-id "@" system-id */
	if (at == s || at - s > 241 || klen - (at - s) - 1 == 0 ||
	    klen - (at - s) - 1 > 14 || at[1] < 'a' || at[1] > 'z' ||
	    ((s[0] > '9' || s[0] < '0') && (s[0] < 'a' || s[0] > 'z')))
		return 0;
	for (i = 1; i < klen; i++)
		if (s + i != at && !trace_keych((unsigned char)s[i]))
			return 0;
	return 1;
}

int
trace_state_valid(const char *s, size_t len)
{
	size_t i, b, e, members = 0;

	if (len == 0 || len > TRACE_STATE_MAX || memchr(s, '\0', len) != NULL)
		return 0;
	for (i = 0; i <= len; i = e + 1) {
		for (e = i; e < len && s[e] != ','; e++)
			;
		b = i;
		while (b < e && (s[b] == ' ' || s[b] == '\t'))
			b++;
		while (e > b && (s[e - 1] == ' ' || s[e - 1] == '\t'))
			e--;
		/* An empty member is allowed, and not counted. */
		if (e > b) {
			if (++members > TRACE_STATE_MEMBERS ||
			    !trace_member(s + b, e - b))
				return 0;
		}
		while (e < len && s[e] != ',')
			e++;
	}
	return members > 0;
}

void
trace_span_new(unsigned char span[TRACE_SPAN_LEN])
{
	do
		ids_random(span, TRACE_SPAN_LEN);
	while (trace_zero(span, TRACE_SPAN_LEN));
}

void
trace_new(struct trace_ctx *t)
{
	do
		ids_random(t->trace_id, TRACE_ID_LEN);
	while (trace_zero(t->trace_id, TRACE_ID_LEN));
	trace_span_new(t->parent_id);
	t->flags = TRACE_FLAGS_MADE;
}

void
trace_pack(const struct trace_ctx *t, unsigned char out[TRACE_CTX_LEN])
{
	memcpy(out, t->trace_id, TRACE_ID_LEN);
	memcpy(out + TRACE_ID_LEN, t->parent_id, TRACE_SPAN_LEN);
	out[TRACE_ID_LEN + TRACE_SPAN_LEN] = t->flags;
}

void
trace_unpack(const unsigned char in[TRACE_CTX_LEN], struct trace_ctx *t)
{
	memcpy(t->trace_id, in, TRACE_ID_LEN);
	memcpy(t->parent_id, in + TRACE_ID_LEN, TRACE_SPAN_LEN);
	t->flags = in[TRACE_ID_LEN + TRACE_SPAN_LEN];
}

static char *
trace_puthex(char *o, const unsigned char *p, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		*o++ = trace_digits[p[i] >> 4];
		*o++ = trace_digits[p[i] & 0xf];
	}
	return o;
}

void
trace_format(const struct trace_ctx *t,
    const unsigned char span[TRACE_SPAN_LEN], char out[TRACE_PARENT_STRLEN + 1])
{
	char *o = out;

	*o++ = '0';
	*o++ = '0';
	*o++ = '-';
	o = trace_puthex(o, t->trace_id, TRACE_ID_LEN);
	*o++ = '-';
	o = trace_puthex(o, span, TRACE_SPAN_LEN);
	*o++ = '-';
	o = trace_puthex(o, &t->flags, 1);
	*o = '\0';
}

void
trace_id_hex(const unsigned char id[TRACE_ID_LEN],
    char out[2 * TRACE_ID_LEN + 1])
{
	*trace_puthex(out, id, TRACE_ID_LEN) = '\0';
}
