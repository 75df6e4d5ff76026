/* SPDX-License-Identifier: ISC */
/*
 * admin_auth.c: the admin API's token, Host and Origin checks; see
 * admin_auth.h.
 *
 * A token is matched by common/bearer.c: hashed, and its digest compared
 * with every entry's by CRYPTO_memcmp, so that the time taken does not
 * depend on how much of a digest matched, nor on which entry did.
 * Comparing digests rather than the tokens also makes the time
 * independent of the tokens' lengths.
 */
#include "config.h"

#include <stdio.h>
#include <string.h>
#include <strings.h>

#include "admin_auth.h"
#include "bearer.h"
#include "conf.h"

const struct conf_token *
auth_token(const struct conf *cf, const char *hdr)
{
	return bearer_check(cf->admin.tokens, cf->admin.ntokens, hdr);
}

/* 1 when host is name, or name:port with port as given (any, when port
 * is NULL). */
static int
host_is(const char *host, const char *name, const char *port)
{
	size_t n = strlen(name);

	if (strncasecmp(host, name, n) != 0)
		return 0;
	if (host[n] == '\0')
		return 1;
	if (host[n] != ':' || host[n + 1] == '\0')
		return 0;
	if (port == NULL)
		return strspn(host + n + 1, "0123456789") ==
		    strlen(host + n + 1);
	return strcmp(host + n + 1, port) == 0;
}

int
auth_host_ok(const struct conf *cf, const char *host, const char *local)
{
	char port[8], ip[64];
	const char *h, *c, *rb;
	int i;

	if (host == NULL || *host == '\0')
		return 0;
	if (local != NULL && strcasecmp(host, local) == 0)
		return 1;
	snprintf(port, sizeof(port), "%u", cf->admin.port);
	if (strchr(cf->admin.ip, ':') != NULL)
		snprintf(ip, sizeof(ip), "[%s]", cf->admin.ip);
	else
		snprintf(ip, sizeof(ip), "%s", cf->admin.ip);
	if (host_is(host, ip, port))
		return 1;
	if (host_is(host, "localhost", port))
		return 1;
	for (i = 0; i < cf->admin.nhosts; i++) {
		h = cf->admin.hosts[i];
		/* An entry name:port matches exactly; a name, any port. */
		c = strrchr(h, ':');
		rb = strchr(h, ']');
		if (c != NULL && (rb == NULL || rb < c)) {
			if (strcasecmp(host, h) == 0)
				return 1;
		} else if (host_is(host, h, NULL))
			return 1;
	}
	return 0;
}

int
auth_origin_ok(const char *origin, const char *host)
{
	const char *rest;

	if (strncasecmp(origin, "http://", 7) == 0)
		rest = origin + 7;
	else if (strncasecmp(origin, "https://", 8) == 0)
		rest = origin + 8;
	else
		return 0;
	return strcasecmp(rest, host) == 0;
}
