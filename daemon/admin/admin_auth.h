/* SPDX-License-Identifier: ISC */
/*
 * admin_auth.h: who may call the admin API, and from where.
 *
 * The checks every request passes before its route runs (admin_api.c):
 * its Host names the listener and its Origin, when it has one, the same
 * place (no page of another site, no rebound name, reaches a route);
 * then its bearer token is one of admin.tokens and grants the route's
 * scope.  Pure: the configuration and the header values in, a verdict
 * out.
 */
#ifndef ANKUSA_ADMIN_AUTH_H
#define ANKUSA_ADMIN_AUTH_H

#include "conf.h"

/*
 * The token of an Authorization header's value ("Bearer <token>", the
 * scheme in any case): the matching entry of admin.tokens, or NULL (no
 * header, another scheme, no such token).  Every entry is compared, in
 * constant time over the SHA-256 digests, whatever matches.
 */
const struct conf_token *auth_token(const struct conf *, const char *hdr);

/* 1 when host (a Host header's value) names the listener: local (the
 * connection's own address and port, "[ip]:port" for IPv6; may be NULL),
 * admin.ip or localhost, alone or with admin.port, or an entry of
 * admin.hosts (a name alone matches it with any port; an IPv6 address is
 * written in brackets).  Case is ignored. */
int		 auth_host_ok(const struct conf *, const char *host,
		    const char *local);
/* 1 when origin (an Origin header's value) is http:// or https:// and
 * the request's host, else 0 ("null" too). */
int		 auth_origin_ok(const char *origin, const char *host);

#endif
