/* SPDX-License-Identifier: ISC */
/*
 * redisurl.c: a redis sink's url; see redisurl.h.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "ids.h"
#include "redisurl.h"

static char	*rurl_decode(const char *, size_t);

/* s[0..n) percent-decoded, malloc'd; NULL for a bad escape or a NUL. */
static char *
rurl_decode(const char *s, size_t n)
{
	char *d, *o;
	size_t i;
	int hi, lo;

	if ((d = malloc(n + 1)) == NULL)
		abort();
	for (o = d, i = 0; i < n; i++) {
		if (s[i] != '%') {
			*o++ = s[i];
			continue;
		}
		if (i + 2 >= n)
			goto bad;
		if ((hi = ids_hexval((unsigned char)s[i + 1])) == -1 ||
		    (lo = ids_hexval((unsigned char)s[i + 2])) == -1 ||
		    (hi == 0 && lo == 0))
			goto bad;
		*o++ = (char)(hi << 4 | lo);
		i += 2;
	}
	*o = '\0';
	return d;
bad:
	free(d);
	return NULL;
}

int
redis_url_parse(const char *url, struct redis_url *u, char *err,
    size_t errlen)
{
	const char *a, *end, *at, *colon, *h, *hend, *p;
	unsigned long v;
	char *ep;
	size_t hl;

	memset(u, 0, sizeof(*u));
	if (strncasecmp(url, "redis://", 8) == 0)
		a = url + 8;
	else if (strncasecmp(url, "rediss://", 9) == 0) {
		a = url + 9;
		u->tls = 1;
	} else {
		snprintf(err, errlen, "not a redis:// or rediss:// URL");
		return -1;
	}
	if (strpbrk(a, "?#") != NULL) {
		snprintf(err, errlen, "a query or fragment");
		return -1;
	}
	end = a + strcspn(a, "/");
	/* The userinfo ends at the authority's last '@' (a password may
	 * hold one unescaped). */
	at = NULL;
	for (p = a; p < end; p++)
		if (*p == '@')
			at = p;
	h = a;
	if (at != NULL) {
		if ((colon = memchr(a, ':', at - a)) == NULL) {
			snprintf(err, errlen, "a user without a password "
			    "(write user:password@, or :password@)");
			goto fail;
		}
		if (colon > a && (u->user = rurl_decode(a, colon - a)) ==
		    NULL) {
			snprintf(err, errlen, "a bad %%-escape in the user");
			goto fail;
		}
		if ((u->password = rurl_decode(colon + 1, at - colon - 1)) ==
		    NULL) {
			snprintf(err, errlen, "a bad %%-escape in the "
			    "password");
			goto fail;
		}
		h = at + 1;
	}
	/* The host: [v6] or up to a ':'. */
	if (*h == '[') {
		if ((hend = memchr(h, ']', end - h)) == NULL) {
			snprintf(err, errlen, "an unclosed [ in the host");
			goto fail;
		}
		hend++;
	} else
		hend = h + strcspn(h, ":/");
	if (hend > end)
		hend = end;
	hl = hend - h;
	if (hl == 0 || hl >= sizeof(u->host) || memchr(h, '%', hl) != NULL) {
		snprintf(err, errlen, "no host, or a host with a %%");
		goto fail;
	}
	memcpy(u->host, h, hl);
	if (*h == '[') {
		if (hl <= 2) {
			snprintf(err, errlen, "an empty [] host");
			goto fail;
		}
		memcpy(u->addr, h + 1, hl - 2);
	} else
		memcpy(u->addr, h, hl);
	u->port = REDISURL_DEFAULT_PORT;
	if (hend < end) {
		if (*hend != ':' || hend + 1 == end ||
		    strspn(hend + 1, "0123456789") != (size_t)(end - hend - 1) ||
		    end - hend - 1 > 5 ||
		    (v = strtoul(hend + 1, NULL, 10)) < 1 || v > 65535) {
			snprintf(err, errlen, "a port not in 1..65535");
			goto fail;
		}
		u->port = (uint16_t)v;
	}
	snprintf(u->portstr, sizeof(u->portstr), "%u", (unsigned)u->port);
	if (*end == '/' && end[1] != '\0') {
		if (strspn(end + 1, "0123456789") != strlen(end + 1) ||
		    strlen(end + 1) > 10 ||
		    (v = strtoul(end + 1, &ep, 10)) > 2147483647UL) {
			snprintf(err, errlen, "a db that is not a number in "
			    "0..2147483647");
			goto fail;
		}
		u->db = (uint32_t)v;
	}
	return 0;
fail:
	redis_url_free(u);
	return -1;
}

void
redis_url_free(struct redis_url *u)
{
	if (u->password != NULL)
		explicit_bzero(u->password, strlen(u->password));
	free(u->user);
	free(u->password);
	u->user = u->password = NULL;
}
