/* SPDX-License-Identifier: ISC */
/*
 * amqpurl.c: AMQP URIs; see amqpurl.h.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include "amqpurl.h"
#include "ids.h"
#include "log.h"

static char	*amqpurl_decode(const char *, size_t);

/* s[0..n) percent-decoded, malloc'd; NULL for a bad escape or a NUL. */
static char *
amqpurl_decode(const char *s, size_t n)
{
	char *d;
	size_t i, k;
	int hi, lo;

	if ((d = malloc(n + 1)) == NULL)
		fatal("amqpurl");
	for (i = 0, k = 0; i < n; i++) {
		if (s[i] != '%') {
			d[k++] = s[i];
			continue;
		}
		if (i + 2 >= n) {
			free(d);
			return NULL;
		}
		if ((hi = ids_hexval((unsigned char)s[i + 1])) == -1 ||
		    (lo = ids_hexval((unsigned char)s[i + 2])) == -1 ||
		    (hi == 0 && lo == 0)) {
			free(d);
			return NULL;
		}
		d[k++] = (char)(hi << 4 | lo);
		i += 2;
	}
	d[k] = '\0';
	return d;
}

int
amqpurl_parse(const char *url, struct amqpurl *u, char *err, size_t errlen)
{
	const char *p, *auth, *at, *hp, *he, *colon, *path, *c;
	unsigned long port;
	char *end;

	memset(u, 0, sizeof(*u));
	if (strncasecmp(url, "amqp://", 7) == 0)
		p = url + 7;
	else if (strncasecmp(url, "amqps://", 8) == 0) {
		p = url + 8;
		u->tls = 1;
	} else {
		snprintf(err, errlen, "not an amqp:// or amqps:// URL");
		return -1;
	}
	for (c = url; *c != '\0'; c++)
		if ((unsigned char)*c <= ' ' || *c == 0x7f || *c == '?' ||
		    *c == '#') {
			snprintf(err, errlen, "a space, control character, "
			    "query or fragment in the URL");
			return -1;
		}
	path = p + strcspn(p, "/");
	/* The userinfo ends at the last '@' before the path. */
	auth = NULL;
	hp = p;
	for (at = p; at < path; at++)
		if (*at == '@') {
			auth = p;
			hp = at + 1;
		}
	if (auth != NULL) {
		at = hp - 1;
		colon = memchr(auth, ':', at - auth);
		if ((u->user = amqpurl_decode(auth, (colon != NULL ? colon :
		    at) - auth)) == NULL || (colon != NULL &&
		    (u->password = amqpurl_decode(colon + 1, at - colon -
		    1)) == NULL)) {
			amqpurl_free(u);
			snprintf(err, errlen, "a bad %% escape in the user or "
			    "password");
			return -1;
		}
	}
	/* host[:port], a v6 host in brackets. */
	if (*hp == '[') {
		if ((he = memchr(hp, ']', path - hp)) == NULL) {
			amqpurl_free(u);
			snprintf(err, errlen, "an unclosed [ in the host");
			return -1;
		}
		he++;
	} else
		for (he = hp; he < path && *he != ':'; he++)
			;
	if (he == hp || memchr(hp, '%', he - hp) != NULL ||
	    memchr(hp, '@', he - hp) != NULL) {
		amqpurl_free(u);
		snprintf(err, errlen, "no host, or a %% in it");
		return -1;
	}
	port = u->tls ? 5671 : 5672;
	if (he < path) {
		if (*he != ':' || he + 1 == path || he[1] < '0' ||
		    he[1] > '9') {
			amqpurl_free(u);
			snprintf(err, errlen, "a bad port");
			return -1;
		}
		port = strtoul(he + 1, &end, 10);
		if (end != path || port < 1 || port > 65535) {
			amqpurl_free(u);
			snprintf(err, errlen, "a port not in 1..65535");
			return -1;
		}
	}
	u->port = (uint16_t)port;
	if ((u->host = strndup(hp, he - hp)) == NULL)
		fatal("amqpurl");
	if (*path == '/' && path[1] != '\0') {
		if (strchr(path + 1, '/') != NULL ||
		    (u->vhost = amqpurl_decode(path + 1,
		    strlen(path + 1))) == NULL) {
			amqpurl_free(u);
			snprintf(err, errlen, "a bad vhost (one segment, "
			    "%%2F for a /)");
			return -1;
		}
	}
	if (u->user == NULL && (u->user = strdup("guest")) == NULL)
		fatal("amqpurl");
	if (u->password == NULL && (u->password = strdup("guest")) == NULL)
		fatal("amqpurl");
	if (u->vhost == NULL && (u->vhost = strdup("/")) == NULL)
		fatal("amqpurl");
	return 0;
}

void
amqpurl_free(struct amqpurl *u)
{
	if (u->password != NULL)
		explicit_bzero(u->password, strlen(u->password));
	free(u->user);
	free(u->password);
	free(u->host);
	free(u->vhost);
	memset(u, 0, sizeof(*u));
}

const char *
amqpurl_bare_host(const struct amqpurl *u, char *buf, size_t bufsz)
{
	size_t n = strlen(u->host);

	if (n >= 2 && u->host[0] == '[' && u->host[n - 1] == ']')
		snprintf(buf, bufsz, "%.*s", (int)(n - 2), u->host + 1);
	else
		snprintf(buf, bufsz, "%s", u->host);
	return buf;
}
