/* SPDX-License-Identifier: ISC */
/*
 * egress.c: the egress guard at connect (egress.h): the process's policy,
 * the check of an address about to be connected to, and the libcurl
 * open-socket function that applies it; and the forward proxy
 * (egress.proxy, egress.no_proxy, a sink's proxy): which one a request
 * takes, the destination's check before it, and what its failures say.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <netdb.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <curl/curl.h>

#include "conf.h"
#include "egress.h"
#include "log.h"
#include "netaddr.h"

static curl_socket_t egress_open_cb(void *, curlsocktype,
		    struct curl_sockaddr *);

static struct netaddr_cidr	*allow;		/* egress.allow, parsed */
static int			 nallow;
static int			 allow_plain_http = 1;
static char			*proxy_url;	/* egress.proxy or NULL */
static char			**no_proxy;	/* egress.no_proxy */
static int			 nno_proxy;
static struct log_limit		 refused_limit =
				    LOG_LIMIT_INIT("egress refusals", 10);

void
egress_configure(const struct conf *cf)
{
	int bad, i;

	free(allow);
	allow = NULL;
	nallow = 0;
	allow_plain_http = 1;
	free(proxy_url);
	proxy_url = NULL;
	for (i = 0; i < nno_proxy; i++)
		free(no_proxy[i]);
	free(no_proxy);
	no_proxy = NULL;
	nno_proxy = 0;
	if (cf == NULL)
		return;
	if (cf->egress.proxy != NULL &&
	    (proxy_url = strdup(cf->egress.proxy)) == NULL)
		fatal("egress_configure");
	if (cf->egress.nno_proxy > 0 && (no_proxy = calloc(
	    cf->egress.nno_proxy, sizeof(*no_proxy))) == NULL)
		fatal("egress_configure");
	for (i = 0; i < cf->egress.nno_proxy; i++)
		if ((no_proxy[i] = strdup(cf->egress.no_proxy[i])) == NULL)
			fatal("egress_configure");
	nno_proxy = cf->egress.nno_proxy;
	/* The master checked every entry; a bad one here allows nothing. */
	if (netaddr_allow_load(cf->egress.allow, cf->egress.nallow, &allow,
	    &bad) == -1) {
		log_warnx("egress: egress.allow[%d] does not parse, nothing "
		    "allowed", bad);
		return;
	}
	nallow = cf->egress.nallow;
	allow_plain_http = cf->egress.allow_plain_http;
}

void
egress_watch_init(struct egress_watch *w, const char *url, int secret)
{
	memset(w, 0, sizeof(*w));
	w->plain = url != NULL && strncasecmp(url, "http://", 7) == 0;
	w->secret = secret;
}

int
egress_check(struct egress_watch *w, const struct sockaddr *sa,
    socklen_t len)
{
	struct netaddr na;
	enum netaddr_class cls;
	enum netaddr_verdict v;
	char a[NETADDR_STRLEN];

	if (netaddr_from_sockaddr(sa, len, &na) == -1) {
		/* Not an IP address: nothing this guard lets through. */
		snprintf(w->denied, sizeof(w->denied), "%s%s",
		    NETADDR_DENIED_PREFIX, "non-ip");
		return -1;
	}
	v = netaddr_egress(allow, nallow, allow_plain_http && !w->secret,
	    &na, w->plain, &cls);
	if (v == NETADDR_GO) {
		w->passed++;
		return 0;
	}
	netaddr_format(&na, a, sizeof(a));
	snprintf(w->denied, sizeof(w->denied), "%s%s", NETADDR_DENIED_PREFIX,
	    a);
	if (!log_limit_take(&refused_limit, LOG_LEVEL_WARN))
		return -1;
	if (v == NETADDR_DENIED)
		log_warnx("egress: refused %s port %u: a %s address "
		    "egress.allow does not cover", a, na.port,
		    netaddr_class_name(cls));
	else
		log_warnx("egress: refused %s port %u: plain http to a "
		    "non-loopback address (%s)", a, na.port, w->secret ?
		    "a bearer token on board" :
		    "egress.allow_plain_http is false");
	return -1;
}

static curl_socket_t
egress_open_cb(void *arg, curlsocktype purpose, struct curl_sockaddr *a)
{
	struct egress_watch *w = arg;

	if (purpose != CURLSOCKTYPE_IPCXN ||
	    egress_check(w, &a->addr, a->addrlen) == -1)
		return CURL_SOCKET_BAD;
	return socket(a->family, a->socktype | SOCK_CLOEXEC, a->protocol);
}

void
egress_curl(CURL *h, struct egress_watch *w)
{
	w->denied[0] = '\0';
	w->passed = 0;
	if (curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION,
	    egress_open_cb) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_OPENSOCKETDATA, w) != CURLE_OK)
		fatalx("curl_easy_setopt CURLOPT_OPENSOCKETFUNCTION");
	/* A kept plain connection was checked without the token's stricter
	 * rule: the token's transfer opens its own. */
	if (w->secret && w->plain &&
	    curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L) != CURLE_OK)
		fatalx("curl_easy_setopt CURLOPT_FRESH_CONNECT");
}

void
egress_curl_unguarded(CURL *h)
{
	if (curl_easy_setopt(h, CURLOPT_OPENSOCKETFUNCTION, NULL) !=
	    CURLE_OK || curl_easy_setopt(h, CURLOPT_PROXY, "") != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L) != CURLE_OK)
		fatalx("curl_easy_setopt CURLOPT_FRESH_CONNECT");
}

/* --- the forward proxy --- */

int
egress_no_proxy(char *const *list, int n, const char *host)
{
	struct netaddr_cidr c;
	struct netaddr na;
	const char *e;
	size_t hl, el;
	int i, lit;

	lit = netaddr_literal(host, &na) == 1;
	hl = strlen(host);
	for (i = 0; i < n; i++) {
		e = list[i];
		if (strcmp(e, "*") == 0)
			return 1;
		if (netaddr_cidr_parse(e, &c) == 0) {
			/* An address entry never matches a name: the name is
			 * not resolved to decide. */
			na.port = 0;
			if (lit && netaddr_cidr_match(&c, &na))
				return 1;
			continue;
		}
		if (lit)
			continue;
		el = strlen(e);
		if (e[0] == '.') {
			/* .example.com: its subdomains only. */
			if (hl > el && strcasecmp(host + hl - el, e) == 0)
				return 1;
			continue;
		}
		/* example.com: it, and its subdomains. */
		if (strcasecmp(host, e) == 0 || (hl > el &&
		    host[hl - el - 1] == '.' &&
		    strcasecmp(host + hl - el, e) == 0))
			return 1;
	}
	return 0;
}

const char *
egress_proxy_for(int mode, const char *proxy, const char *url)
{
	char host[256];
	uint16_t port;
	int plain;

	switch (mode) {
	case SINK_PROXY_NONE:
		return "";
	case SINK_PROXY_URL:
		return proxy;
	default:
		break;
	}
	if (proxy_url == NULL)
		return NULL;
	if (netaddr_url(url, host, sizeof(host), &port, &plain) == -1 ||
	    egress_no_proxy(no_proxy, nno_proxy, host))
		return "";
	return proxy_url;
}

int
egress_curl_proxy(CURL *h, struct egress_watch *w, const char *url,
    int mode, const char *proxy, char *err, size_t errlen)
{
	struct addrinfo hints, *res, *ai;
	const char *p = egress_proxy_for(mode, proxy, url);
	char host[256], *name;
	uint16_t port;
	int plain, rc;
	size_t n;

	w->proxied = 0;
	if (p == NULL)
		return 0;	/* the environment's, libcurl's own */
	if (curl_easy_setopt(h, CURLOPT_PROXY, p) != CURLE_OK)
		fatalx("curl_easy_setopt CURLOPT_PROXY");
	if (*p == '\0')
		return 0;
	if (curl_easy_setopt(h, CURLOPT_PROXYTYPE, (long)CURLPROXY_HTTP) !=
	    CURLE_OK || curl_easy_setopt(h, CURLOPT_PROXYAUTH,
	    (long)CURLAUTH_BASIC) != CURLE_OK)
		fatalx("curl_easy_setopt CURLOPT_PROXYTYPE");
	w->proxied = 1;
	/* The destination, as this process resolves it, checked before
	 * anything is sent: the proxy reaches it by name (see egress.h for
	 * what that leaves open). */
	if (netaddr_url(url, host, sizeof(host), &port, &plain) == -1) {
		snprintf(err, errlen, "bad URL");
		return -1;
	}
	name = host;
	n = strlen(host);
	if (host[0] == '[' && n > 2 && host[n - 1] == ']') {
		host[n - 1] = '\0';
		name = host + 1;
	}
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if ((rc = getaddrinfo(name, NULL, &hints, &res)) != 0) {
		snprintf(err, errlen, "could not resolve %s: %s", name,
		    gai_strerror(rc));
		return -1;
	}
	for (ai = res; ai != NULL; ai = ai->ai_next) {
		if (ai->ai_family != AF_INET && ai->ai_family != AF_INET6)
			continue;
		if (ai->ai_family == AF_INET)
			((struct sockaddr_in *)(void *)ai->ai_addr)->sin_port =
			    htons(port);
		else
			((struct sockaddr_in6 *)(void *)ai->ai_addr)->
			    sin6_port = htons(port);
		if (egress_check(w, ai->ai_addr, ai->ai_addrlen) == -1) {
			freeaddrinfo(res);
			w->passed = 0;
			return -1;
		}
	}
	freeaddrinfo(res);
	/* Those passes were the destination's, not connections. */
	w->passed = 0;
	return 0;
}

int
egress_proxy_failed(CURL *h, const struct egress_watch *w, CURLcode rc,
    long status, char *err, size_t errlen)
{
	long code = 0;

	if (!w->proxied)
		return 0;
	switch (rc) {
	case CURLE_COULDNT_RESOLVE_PROXY:
		snprintf(err, errlen, "proxy_error: the proxy's name does not "
		    "resolve");
		return 1;
	case CURLE_COULDNT_CONNECT:
		/* Through a proxy, libcurl connects to the proxy alone. */
		snprintf(err, errlen, "proxy_error: could not connect to the "
		    "proxy");
		return 1;
	default:
		break;
	}
	if (curl_easy_getinfo(h, CURLINFO_HTTP_CONNECTCODE, &code) ==
	    CURLE_OK && code != 0 && (code < 200 || code > 299)) {
		snprintf(err, errlen, "proxy_error: the proxy answered "
		    "CONNECT with %ld", code);
		return 1;
	}
	/* Only a proxy asks for its own credentials. */
	if (rc == CURLE_OK && status == 407) {
		snprintf(err, errlen, "proxy_error: the proxy answered 407");
		return 1;
	}
	return 0;
}
