/* SPDX-License-Identifier: ISC */
/*
 * egress.c: the egress guard at connect (egress.h): the process's policy,
 * the check of an address about to be connected to, and the libcurl
 * open-socket function that applies it.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

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
static struct log_limit		 refused_limit =
				    LOG_LIMIT_INIT("egress refusals", 10);

void
egress_configure(const struct conf *cf)
{
	int bad;

	free(allow);
	allow = NULL;
	nallow = 0;
	allow_plain_http = 1;
	if (cf == NULL)
		return;
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
	    CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_FRESH_CONNECT, 1L) != CURLE_OK ||
	    curl_easy_setopt(h, CURLOPT_FORBID_REUSE, 1L) != CURLE_OK)
		fatalx("curl_easy_setopt CURLOPT_FRESH_CONNECT");
}
