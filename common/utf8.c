/* SPDX-License-Identifier: ISC */
/*
 * utf8.c: UTF-8 checks and the cleaning of outside text (see utf8.h).
 *
 * Pure functions of their arguments; nothing here fails.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "utf8.h"

static const char utf8_hex[] = "0123456789abcdef";

size_t
utf8_seq(const unsigned char *p, size_t n, unsigned *cp)
{
	size_t k, i;
	unsigned c, min;

	if (p[0] < 0x80) {
		k = 1;
		c = p[0];
		min = 0;
	} else if (p[0] >= 0xc2 && p[0] <= 0xdf) {
		k = 2;
		c = p[0] & 0x1f;
		min = 0x80;
	} else if (p[0] >= 0xe0 && p[0] <= 0xef) {
		k = 3;
		c = p[0] & 0x0f;
		min = 0x800;
	} else if (p[0] >= 0xf0 && p[0] <= 0xf4) {
		k = 4;
		c = p[0] & 0x07;
		min = 0x10000;
	} else
		return 0;
	if (n < k)
		return 0;
	for (i = 1; i < k; i++) {
		if ((p[i] & 0xc0) != 0x80)
			return 0;
		c = (c << 6) | (p[i] & 0x3f);
	}
	/* Overlong forms, surrogates and code points past Unicode's end. */
	if (c < min || c > 0x10ffff || (c >= 0xd800 && c <= 0xdfff))
		return 0;
	if (cp != NULL)
		*cp = c;
	return k;
}

int
utf8_text(const char *s, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
			return 0;
	return utf8_valid(s, n);
}

int
utf8_valid(const char *s, size_t n)
{
	const unsigned char *p = (const unsigned char *)s;
	size_t i = 0, k;

	while (i < n) {
		if (p[i] == '\0' || (k = utf8_seq(p + i, n - i, NULL)) == 0)
			return 0;
		i += k;
	}
	return 1;
}

size_t
utf8_clean(char *dst, size_t dstsz, const char *src, size_t n)
{
	const unsigned char *p = (const unsigned char *)src;
	size_t i = 0, o = 0, k;

	while (i < n) {
		k = p[i] != '\0' ? utf8_seq(p + i, n - i, NULL) : 0;
		if (o + (k != 0 ? k : 4) >= dstsz)
			break;
		if (k != 0) {
			memcpy(dst + o, p + i, k);
			o += k;
			i += k;
			continue;
		}
		dst[o++] = '\\';
		dst[o++] = 'x';
		dst[o++] = utf8_hex[p[i] >> 4];
		dst[o++] = utf8_hex[p[i] & 0xf];
		i++;
	}
	dst[o] = '\0';
	return o;
}

size_t
utf8_excerpt(char *dst, size_t dstsz, const char *src, size_t n)
{
	static const char repl[] = "\xef\xbf\xbd";	/* U+FFFD */
	const unsigned char *p = (const unsigned char *)src;
	size_t i = 0, o = 0, k;
	unsigned cp = 0;
	int ctl;

	while (i < n) {
		k = p[i] != '\0' ? utf8_seq(p + i, n - i, &cp) : 0;
		ctl = k != 0 && ((cp < 0x20 && cp != '\t' && cp != '\n' &&
		    cp != '\r') || (cp >= 0x7f && cp < 0xa0));
		if (k != 0 && !ctl) {
			if (o + k >= dstsz)
				break;
			memcpy(dst + o, p + i, k);
			o += k;
			i += k;
			continue;
		}
		/* A control goes whole; a stray byte alone. */
		if (o + 3 >= dstsz)
			break;
		memcpy(dst + o, repl, 3);
		o += 3;
		i += k != 0 ? k : 1;
	}
	dst[o] = '\0';
	return o;
}

size_t
utf8_format(char *dst, size_t dstsz, const char *fmt, va_list ap)
{
	char *buf;
	size_t cap = 4 * dstsz, len;
	int n;

	if ((buf = malloc(cap)) == NULL) {
		dst[0] = '\0';
		return 0;
	}
	n = vsnprintf(buf, cap, fmt, ap);
	len = n < 0 ? 0 : (size_t)n >= cap ? cap - 1 : (size_t)n;
	len = utf8_clean(dst, dstsz, buf, len);
	free(buf);
	return len;
}
