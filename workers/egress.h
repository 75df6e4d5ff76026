/* SPDX-License-Identifier: ISC */
/*
 * egress.h: the egress guard of the processes that connect out (the
 * deliver processes; the claim gateway, through its s3 store): every new
 * connection is checked on the address actually connected to, after
 * resolution, by netaddr_egress() (common/netaddr.h) with this process's
 * egress.allow and egress.allow_plain_http.  A name that resolves, or
 * re-resolves later (DNS rebinding), to a denied address is refused like
 * the literal address.
 *
 * The built-in HTTP/1.1 client (http1.c) calls egress_check before each
 * connect; a libcurl handle gets egress_curl before each transfer, which
 * sets CURLOPT_OPENSOCKETFUNCTION.  libcurl calls that for new
 * connections only: a reused one was checked when it was opened, under
 * the same policy (a process keeps its policy for life: a reload starts
 * new processes) and for the same host and port.  A transfer that must
 * not be guarded, the Pub/Sub metadata server's (egress_curl_unguarded),
 * neither takes a kept connection nor leaves one, so no sink can ride a
 * connection that was never checked; and a plain-http transfer with a
 * secret on board (its stricter rule) takes no kept connection either.
 * With a proxy, the address connected to is the proxy's.  A configured
 * one (egress.proxy, a sink's proxy: egress_curl_proxy) also has the
 * destination's name resolved here and each of its addresses checked
 * before the request is sent; the proxy resolves the name again, on its
 * own, and may reach another address (DNS that changed in between, or
 * answers differently there): that limit is the proxy's to close.  One
 * from the environment (http_proxy, https_proxy ..., when egress.proxy is
 * unset) is left to libcurl, with the proxy's address checked only.
 *
 * A process that was given no config, or one that does not parse, keeps
 * the defaults: nothing allowed, plain http allowed.  The guard fails
 * closed.
 */
#ifndef ANKUSA_EGRESS_H
#define ANKUSA_EGRESS_H

#include <sys/types.h>
#include <sys/socket.h>

#include <curl/curl.h>

#include "netaddr.h"

struct conf;

/* "egress_denied:" and an address, with its NUL. */
#define EGRESS_DENIED_MAX	(sizeof(NETADDR_DENIED_PREFIX) + NETADDR_STRLEN)

/* One transfer's guard: what it connects for, what was refused. */
struct egress_watch {
	int	plain;		/* the URL is http:// */
	int	secret;		/* a bearer token on board: plain http
				 * only to loopback, whatever
				 * egress.allow_plain_http says */
	int	passed;		/* connections the guard let through */
	int	proxied;	/* through a configured proxy */
	char	denied[EGRESS_DENIED_MAX];	/* "" or
						 * "egress_denied:<address>",
						 * the last refused */
};
/* Whether a failed transfer failed for the guard alone: it refused an
 * address and let none through. */
#define EGRESS_REFUSED(w)	((w)->denied[0] != '\0' && (w)->passed == 0)

/* The process's policy, from its config (NULL: the defaults). */
void	egress_configure(const struct conf *);
/* A watch for a request to url (plain when it is http://). */
void	egress_watch_init(struct egress_watch *, const char *url, int secret);
/* Before a connect to sa: 0 go, or -1 refused, with w->denied set and a
 * log line that says why. */
int	egress_check(struct egress_watch *, const struct sockaddr *, socklen_t);
/* Guard the next transfer of h (set again after every curl_easy_reset). */
void	egress_curl(CURL *h, struct egress_watch *);
/* Leave the next transfer of h unguarded, on a connection of its own
 * that is not kept, and never through a proxy. */
void	egress_curl_unguarded(CURL *h);

/* The proxy of a request to url for a sink whose proxy is (mode, proxy):
 * NULL the environment's (libcurl's own reading), "" none, or the URL. */
const char *egress_proxy_for(int mode, const char *proxy, const char *url);
/* Whether host (a URL's, brackets and all) is in the no_proxy list: a
 * name or its subdomains, a .suffix's subdomains, a literal address in a
 * CIDR, or "*". */
int	egress_no_proxy(char *const *list, int n, const char *host);
/* Set h's proxy for the next transfer to url (egress_proxy_for; after
 * egress_curl).  Through a configured proxy, the URL's host is resolved
 * and each address checked first: -1 if the guard refuses one (w->denied
 * set) or the name does not resolve (err set), else 0. */
int	egress_curl_proxy(CURL *h, struct egress_watch *w, const char *url,
	    int mode, const char *proxy, char *err, size_t errlen);
/* What a failed or answered transfer of h through its configured proxy
 * says of the proxy: 1 with why in err ("proxy_error: ...") when the
 * proxy failed (refused, did not resolve, answered CONNECT with other
 * than 2xx, or answered 407), else 0. */
int	egress_proxy_failed(CURL *h, const struct egress_watch *w,
	    CURLcode rc, long status, char *err, size_t errlen);

#endif
