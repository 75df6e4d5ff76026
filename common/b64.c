/* SPDX-License-Identifier: ISC */
/*
 * b64.c: strict base64 decoding, base64url encoding; see b64.h.
 *
 * Nothing here allocates or fails for another reason than its input.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "b64.h"

static int	b64_value(unsigned char);

/* The 6-bit value of a character of the standard alphabet, or -1. */
static int
b64_value(unsigned char c)
{
	if (c >= 'A' && c <= 'Z')
		return c - 'A';
	if (c >= 'a' && c <= 'z')
		return c - 'a' + 26;
	if (c >= '0' && c <= '9')
		return c - '0' + 52;
	if (c == '+')
		return 62;
	if (c == '/')
		return 63;
	return -1;
}

int
b64_decode(const char *s, size_t len, unsigned char *out, size_t *outlen)
{
	size_t pad = 0, i, n = 0;
	uint32_t acc = 0;
	int bits = 0, v;

	while (len > 0 && s[len - 1] == '=') {
		len--;
		pad++;
	}
	/* One character left over carries 6 bits: no encoder writes it. */
	if (len == 0 || pad > 2 || (pad > 0 && (len + pad) % 4 != 0) ||
	    len % 4 == 1)
		return -1;
	for (i = 0; i < len; i++) {
		if ((v = b64_value((unsigned char)s[i])) == -1)
			return -1;
		acc = (acc << 6) | (uint32_t)v;
		bits += 6;
		if (bits >= 8) {
			bits -= 8;
			out[n++] = (unsigned char)(acc >> bits);
			acc &= (1U << bits) - 1;
		}
	}
	*outlen = n;
	return 0;
}

const char *
b64_noncanonical(const char *s, size_t len)
{
	size_t pad = 0, i;
	int last;

	while (len > 0 && s[len - 1] == '=') {
		len--;
		pad++;
	}
	for (i = 0; i < len; i++)
		if (b64_value((unsigned char)s[i]) == -1)
			return "not base64";
	if (len == 0 || pad > 2 || len % 4 == 1 ||
	    (pad > 0 && (len + pad) % 4 != 0))
		return "not base64";
	if (len % 4 != 0 && pad == 0)
		return "unpadded";
	/* Two characters left carry one byte and 4 spare bits, three carry
	 * two bytes and 2. */
	last = b64_value((unsigned char)s[len - 1]);
	if ((len % 4 == 2 && (last & 0x0f) != 0) ||
	    (len % 4 == 3 && (last & 0x03) != 0))
		return "not canonical (non-zero trailing bits)";
	return NULL;
}

size_t
b64url_encode(const unsigned char *p, size_t len, char *out)
{
	static const char alpha[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
	    "abcdefghijklmnopqrstuvwxyz0123456789-_";
	uint32_t acc = 0;
	size_t i, n = 0;
	int bits = 0;

	for (i = 0; i < len; i++) {
		acc = (acc << 8) | p[i];
		bits += 8;
		while (bits >= 6) {
			bits -= 6;
			out[n++] = alpha[(acc >> bits) & 0x3f];
		}
	}
	if (bits > 0)
		out[n++] = alpha[(acc << (6 - bits)) & 0x3f];
	out[n] = '\0';
	return n;
}
