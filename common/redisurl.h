/* SPDX-License-Identifier: ISC */
/*
 * redisurl.h: a redis sink's url, read the same way by the master's
 * config check and by the deliver process that connects.  Pure.
 *
 *   redis://[[user]:password@]host[:port][/db]
 *   rediss://...		the same over TLS
 *
 * The scheme in either case; host a name, an IPv4 address or an IPv6
 * one in brackets (no zone); port 1..65535, default 6379; db a decimal
 * number 0..2147483647, default 0 ("/" alone: 0).  user and password
 * are percent-decoded (%XX, each X a hex digit; a NUL is refused); a
 * password without a user is the default user's (AUTH password), and
 * "user@" without a colon is refused: it would send no password.  No
 * query or fragment.
 */
#ifndef ANKUSA_REDISURL_H
#define ANKUSA_REDISURL_H

#include <stddef.h>
#include <stdint.h>

#define REDISURL_DEFAULT_PORT	6379

struct redis_url {
	int		 tls;		/* rediss:// */
	char		 host[256];	/* as written: brackets kept */
	char		 addr[256];	/* for getaddrinfo: no brackets */
	uint16_t	 port;
	char		 portstr[8];
	char		*user;		/* NULL: none (the default user) */
	char		*password;	/* NULL: no AUTH */
	uint32_t	 db;
};

/* 0, or -1 with why in err (nothing to free then). */
int	redis_url_parse(const char *url, struct redis_url *u, char *err,
	    size_t errlen);
/* Frees the user and password (the password's bytes wiped first). */
void	redis_url_free(struct redis_url *u);

#endif
