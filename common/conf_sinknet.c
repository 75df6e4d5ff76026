/* SPDX-License-Identifier: ISC */
/*
 * conf_sinknet.c: the checks of how a sink is reached beyond its URL: an
 * http sink's auth and tls, a nats sink's servers, auth and tls, a sink's
 * proxy, egress.proxy and egress.no_proxy.
 *
 * The tls files are read here, when the configuration is parsed (by
 * ankusad at its start while root, at a reload as node.user), and their
 * PEM text is kept with the sink: the deliver processes, sandboxed and
 * running as node.child_user, open no file; they get the text with each
 * job (common/job.c).  Each file is parsed once here, so that a bad one
 * is a config error, not every attempt's.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <yaml.h>

#include "conf.h"
#include "conf_int.h"
#include "conf_secret.h"
#include "netaddr.h"
#include "nkey.h"

static const char *const auth_keys[] = {
	"token", "username", "password", "token_url", "client_id",
	"client_secret", "scope", "audience", "client_auth", NULL
};
/* Which of auth_keys[] each type takes (indexed by enum sink_auth_type). */
static const char *const auth_want[][10] = {
	[SINK_AUTH_NONE] = { NULL },
	[SINK_AUTH_BEARER] = { "token", NULL },
	[SINK_AUTH_BASIC] = { "username", "password", NULL },
	[SINK_AUTH_OAUTH2] = { "token_url", "client_id", "client_secret",
	    "scope", "audience", "client_auth", NULL },
};
/* The keys each type requires. */
static const char *const auth_need[][4] = {
	[SINK_AUTH_NONE] = { NULL },
	[SINK_AUTH_BEARER] = { "token", NULL },
	[SINK_AUTH_BASIC] = { "username", "password", NULL },
	[SINK_AUTH_OAUTH2] = { "token_url", "client_id", "client_secret",
	    NULL },
};

static int	cnet_in(const char *const *, const char *);
static void	cnet_auth(struct cparse *, struct sink_conf *, yaml_node_t *,
		    const char *);
static void	cnet_tls(struct cparse *, struct sink_tls *, const char *,
		    const char *, const char *, yaml_node_t *, const char *);
static void	cnet_nats(struct cparse *, struct sink_conf *, yaml_node_t *,
		    const char *);
static void	cnet_tls_files(struct cparse *, struct sink_tls *,
		    yaml_node_t *, const char *);
static char	*cnet_read(struct cparse *, yaml_node_t *, const char *,
		    const char *, const char *);
static int	cnet_pem_ok(const char *, int);
static void	cnet_token_url(struct cparse *, yaml_node_t *, const char *,
		    const char *);
static void	cnet_proxy_url(struct cparse *, yaml_node_t *, const char *,
		    const char *, const char *);

static int
cnet_in(const char *const *list, const char *s)
{
	for (; *list != NULL; list++)
		if (strcmp(*list, s) == 0)
			return 1;
	return 0;
}

/*
 * A proxy's URL: http://[user:pass@]host[:port][/], nothing more; its
 * host, when an address, one the guard lets through, whatever
 * allow_plain_http says (through it, https stays TLS end to end; at
 * connect the guard applies the destination's scheme).
 */
static void
cnet_proxy_url(struct cparse *p, yaml_node_t *map, const char *path,
    const char *key, const char *url)
{
	yaml_node_t *n;
	const char *rest;
	char host[256];
	uint16_t port;
	int plain, line;

	n = conf_ymap_get(p->doc, map, key);
	line = n != NULL ? conf_yline(n) : conf_yline(map);
	rest = strncasecmp(url, "http://", 7) == 0 ? url + 7 : NULL;
	if (rest != NULL)
		rest += strcspn(rest, "/?#");
	if (rest == NULL || netaddr_url(url, host, sizeof(host), &port,
	    &plain) == -1 || (*rest != '\0' && strcmp(rest, "/") != 0)) {
		conf_err(p, line, "%s.%s must be "
		    "http://[user:pass@]host[:port] with nothing after the "
		    "port, got %s", path, key,
		    strchr(url, '@') != NULL ? "a URL with credentials" : url);
		return;
	}
	conf_check_egress_host(p, line, path, key, host, port, 0);
}

/* egress.proxy and egress.no_proxy. */
void
conf_check_egress(struct cparse *p, struct cctx *c, yaml_node_t *map,
    const char *path)
{
	struct conf *cf = p->conf;
	struct netaddr_cidr cidr;
	const char *e;
	yaml_node_t *n;
	int i;

	(void)c;
	if (cf->egress.proxy != NULL)
		cnet_proxy_url(p, map, path, "proxy", cf->egress.proxy);
	n = conf_ymap_get(p->doc, map, "no_proxy");
	for (i = 0; i < cf->egress.nno_proxy; i++) {
		e = cf->egress.no_proxy[i];
		if (strcmp(e, "*") == 0 || netaddr_cidr_parse(e, &cidr) == 0)
			continue;
		if (e[0] == '.')
			e++;
		if (*e == '\0' || strlen(e) > 253 ||
		    strspn(e, "abcdefghijklmnopqrstuvwxyz"
		    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") != strlen(e) ||
		    strstr(e, "..") != NULL || e[strlen(e) - 1] == '.')
			conf_err(p, n != NULL ? conf_yline(n) : conf_yline(map),
			    "%s.no_proxy[%d] must be a host name, .suffix, "
			    "address, CIDR or *, got %s", path, i,
			    cf->egress.no_proxy[i]);
	}
}

/* An http sink's auth: its type's keys, no other. */
static void
cnet_auth(struct cparse *p, struct sink_conf *sk, yaml_node_t *map,
    const char *path)
{
	const struct sink_auth *a = &sk->u.http.auth;
	yaml_node_t *am, *n;
	int i;

	if ((am = conf_ymap_get(p->doc, map, "auth")) == NULL ||
	    conf_yisnull(am) || am->type != YAML_MAPPING_NODE)
		return;
	if (a->type == SINK_AUTH_NONE) {
		conf_err(p, conf_yline(am), "%s.auth.type must be bearer, "
		    "basic or oauth2_client_credentials, got none", path);
		return;
	}
	for (i = 0; auth_keys[i] != NULL; i++) {
		n = conf_ymap_get(p->doc, am, auth_keys[i]);
		if (n != NULL && !cnet_in(auth_want[a->type], auth_keys[i]))
			conf_err(p, conf_yline(n), "%s.auth.%s must not be set "
			    "with auth type %s", path, auth_keys[i],
			    a->type == SINK_AUTH_BEARER ? "bearer" :
			    a->type == SINK_AUTH_BASIC ? "basic" :
			    "oauth2_client_credentials");
	}
	for (i = 0; auth_need[a->type][i] != NULL; i++)
		if (conf_ymap_get(p->doc, am, auth_need[a->type][i]) == NULL)
			conf_err(p, conf_yline(am), "%s.auth.%s is required "
			    "with this auth type", path,
			    auth_need[a->type][i]);
	if (a->username != NULL && strchr(a->username, ':') != NULL)
		conf_err(p, conf_yline(am), "%s.auth.username must not hold "
		    "a colon", path);
	/* Sent in a header or a form: no line break may split them. */
	if ((a->token != NULL && strpbrk(a->token, "\r\n") != NULL) ||
	    (a->password != NULL && strpbrk(a->password, "\r\n") != NULL) ||
	    (a->username != NULL && strpbrk(a->username, "\r\n") != NULL))
		conf_err(p, conf_yline(am), "%s.auth: a token, user name or "
		    "password must not hold a line break", path);
	if (a->token_url != NULL) {
		char apath[512];	/* conf_yaml.c's CPATH_MAX */

		snprintf(apath, sizeof(apath), "%s.auth", path);
		conf_check_egress_url(p, am, apath, "token_url", a->token_url);
		cnet_token_url(p, am, path, a->token_url);
	}
}

/*
 * The client's secret goes to token_url: https, or plain http to a
 * loopback address or localhost only (a local token endpoint), as the
 * guard would have it at connect (a secret on board, workers/egress.h);
 * said here, once, rather than at every attempt.
 */
static void
cnet_token_url(struct cparse *p, yaml_node_t *am, const char *path,
    const char *url)
{
	struct netaddr na;
	char host[256];
	uint16_t port;
	int plain;

	if (netaddr_url(url, host, sizeof(host), &port, &plain) == -1 ||
	    !plain || strcasecmp(host, "localhost") == 0 ||
	    (netaddr_literal(host, &na) == 1 &&
	    netaddr_classify(&na) == NETADDR_LOOPBACK))
		return;
	conf_err(p, conf_yline(conf_ymap_get(p->doc, am, "token_url")),
	    "%s.auth.token_url must be https:// (plain http reaches the "
	    "loopback only, with a client secret on board), got %s", path,
	    url);
}

/* The PEM text in s holds what it should: 0 a certificate (then the
 * rest of a chain), 1 a private key, 2 one or more certificates. */
static int
cnet_pem_ok(const char *s, int what)
{
	BIO *b;
	X509 *x;
	EVP_PKEY *k;
	int ok;

	if ((b = BIO_new_mem_buf(s, -1)) == NULL)
		return 0;
	if (what == 1) {
		k = PEM_read_bio_PrivateKey(b, NULL, NULL, (void *)"");
		ok = k != NULL;
		EVP_PKEY_free(k);
	} else {
		x = PEM_read_bio_X509(b, NULL, NULL, NULL);
		ok = x != NULL;
		X509_free(x);
	}
	BIO_free(b);
	ERR_clear_error();
	return ok;
}

/* The file at key of the tls map, read; NULL (and an error) otherwise. */
static char *
cnet_read(struct cparse *p, yaml_node_t *tm, const char *path,
    const char *key, const char *file)
{
	yaml_node_t *n = conf_ymap_get(p->doc, tm, key);
	char ref[4096 + 8], err[512], *s;

	if (file[0] != '/') {
		conf_err(p, conf_yline(n), "%s.tls.%s must be an absolute "
		    "path, got %s", path, key, file);
		return NULL;
	}
	snprintf(ref, sizeof(ref), "file:%s", file);
	if ((s = conf_secret_read(ref, strlen(ref), err, sizeof(err))) ==
	    NULL) {
		conf_err(p, conf_yline(n), "%s.tls.%s: %s", path, key, err);
		return NULL;
	}
	return s;
}

/* A sink's tls (an http sink's, a redis sink's): the files read and
 * parsed.  url is the sink's, which must begin with scheme; what names
 * the scheme in the message ("an https://"). */
static void
cnet_tls(struct cparse *p, struct sink_tls *t, const char *url,
    const char *scheme, const char *what, yaml_node_t *map,
    const char *path)
{
	yaml_node_t *tm;

	if ((tm = conf_ymap_get(p->doc, map, "tls")) == NULL ||
	    conf_yisnull(tm))
		return;
	if (url != NULL && strncasecmp(url, scheme, strlen(scheme)) != 0) {
		conf_err(p, conf_yline(tm), "%s.tls needs %s url", path,
		    what);
		return;
	}
	cnet_tls_files(p, t, tm, path);
}

/* A sink's tls map tm: its files read and parsed into t, its
 * server_name checked. */
static void
cnet_tls_files(struct cparse *p, struct sink_tls *t, yaml_node_t *tm,
    const char *path)
{
	if ((t->client_cert_file == NULL) != (t->client_key_file == NULL)) {
		conf_err(p, conf_yline(tm), "%s.tls.client_cert_file and "
		    "client_key_file go together", path);
		return;
	}
	if (t->client_cert_file != NULL) {
		t->client_cert = cnet_read(p, tm, path, "client_cert_file",
		    t->client_cert_file);
		t->client_key = cnet_read(p, tm, path, "client_key_file",
		    t->client_key_file);
		if (t->client_cert != NULL && !cnet_pem_ok(t->client_cert, 0))
			conf_err(p, conf_yline(tm), "%s.tls.client_cert_file "
			    "%s holds no PEM certificate", path,
			    t->client_cert_file);
		if (t->client_key != NULL && !cnet_pem_ok(t->client_key, 1))
			conf_err(p, conf_yline(tm), "%s.tls.client_key_file "
			    "%s holds no unencrypted PEM private key", path,
			    t->client_key_file);
	}
	if (t->ca_file != NULL) {
		t->ca = cnet_read(p, tm, path, "ca_file", t->ca_file);
		if (t->ca != NULL && !cnet_pem_ok(t->ca, 2))
			conf_err(p, conf_yline(tm), "%s.tls.ca_file %s holds "
			    "no PEM certificate", path, t->ca_file);
	}
	if (t->server_name != NULL && (strlen(t->server_name) > 253 ||
	    strspn(t->server_name, "abcdefghijklmnopqrstuvwxyz"
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789-.") !=
	    strlen(t->server_name)))
		conf_err(p, conf_yline(tm), "%s.tls.server_name must be a "
		    "host name, got %s", path, t->server_name);
}

void
conf_check_sinknet(struct cparse *p, struct sink_conf *sk, yaml_node_t *map,
    const char *path)
{
	yaml_node_t *n;

	if ((n = conf_ymap_get(p->doc, map, "proxy")) != NULL) {
		sk->proxy_mode = sk->proxy != NULL ? SINK_PROXY_URL :
		    SINK_PROXY_NONE;
		if (sk->proxy != NULL)
			cnet_proxy_url(p, map, path, "proxy", sk->proxy);
	}
	if (sk->type == SINK_REDIS)
		cnet_tls(p, &sk->u.redis.tls, sk->u.redis.url, "rediss://",
		    "a rediss://", map, path);
	if (sk->type == SINK_NATS)
		cnet_nats(p, sk, map, path);
	if (sk->type != SINK_HTTP)
		return;
	cnet_auth(p, sk, map, path);
	cnet_tls(p, &sk->u.http.tls, sk->u.http.url, "https://",
	    "an https://", map, path);
}

int
conf_nats_server(const char *s, char *host, size_t hostsz, uint16_t *port,
    int *tls)
{
	const char *h, *e, *c;
	char *end;
	unsigned long v;
	size_t n;

	*tls = 0;
	if (strncasecmp(s, "nats://", 7) == 0)
		s += 7;
	else if (strncasecmp(s, "tls://", 6) == 0) {
		s += 6;
		*tls = 1;
	}
	if (s[0] == '[') {
		h = s + 1;
		if ((e = strchr(h, ']')) == NULL)
			return -1;
		c = e + 1;
	} else {
		h = s;
		e = s + strcspn(s, ":");
		c = e;
	}
	n = e - h;
	if (n == 0 || n >= hostsz || strcspn(h, "@/?#% \t") < n)
		return -1;
	memcpy(host, h, n);
	host[n] = '\0';
	*port = 4222;
	if (*c == '\0')
		return 0;
	if (*c != ':' || c[1] < '0' || c[1] > '9')
		return -1;
	v = strtoul(c + 1, &end, 10);
	if (*end != '\0' || v < 1 || v > 65535)
		return -1;
	*port = (uint16_t)v;
	return 0;
}

/*
 * A nats sink: each server parsed (and, when an address, put to the
 * guard), urls joined for the jobs; tls on by the map or a tls://
 * server; auth exactly one of its three forms; no proxy (libnats speaks
 * its own protocol, straight to the server).
 */
static void
cnet_nats(struct cparse *p, struct sink_conf *sk, yaml_node_t *map,
    const char *path)
{
	yaml_node_t *n, *am, *tm;
	char host[256], bracketed[260], pub[NKEY_PUB_LEN + 1], *u;
	size_t len = 0;
	uint16_t port;
	int i, tls, forms, line = conf_yline(map);

	n = conf_ymap_get(p->doc, map, "servers");
	for (i = 0; i < sk->u.nats.nservers; i++) {
		len += strlen(sk->u.nats.servers[i]) + 1;
		if (conf_nats_server(sk->u.nats.servers[i], host, sizeof(host),
		    &port, &tls) == -1) {
			conf_err(p, n != NULL ? conf_yline(n) : line,
			    "%s.servers[%d] must be nats://host:port, "
			    "tls://host:port or host:port, got %s", path, i,
			    strchr(sk->u.nats.servers[i], '@') != NULL ?
			    "a server with credentials (use auth)" :
			    sk->u.nats.servers[i]);
			continue;
		}
		if (tls)
			sk->u.nats.tls_on = 1;
	}
	if (sk->u.nats.nservers == 0 && n != NULL)
		conf_err(p, conf_yline(n), "%s.servers must name a server",
		    path);
	if ((tm = conf_ymap_get(p->doc, map, "tls")) != NULL &&
	    !conf_yisnull(tm)) {
		sk->u.nats.tls_on = 1;
		cnet_tls_files(p, &sk->u.nats.tls, tm, path);
	}
	/* The guard at connect is the rule; a literal address it would
	 * refuse is said here, once. */
	for (i = 0; i < sk->u.nats.nservers; i++)
		if (conf_nats_server(sk->u.nats.servers[i], host,
		    sizeof(host), &port, &tls) == 0) {
			snprintf(bracketed, sizeof(bracketed), strchr(host,
			    ':') != NULL ? "[%s]" : "%s", host);
			conf_check_egress_host(p, n != NULL ? conf_yline(n) :
			    line, path, "servers", bracketed, port,
			    !sk->u.nats.tls_on);
		}
	if (len > 0) {
		if ((u = calloc(1, len)) == NULL)
			abort();
		for (len = 0, i = 0; i < sk->u.nats.nservers; i++) {
			if (i > 0)
				u[len++] = ',';
			memcpy(u + len, sk->u.nats.servers[i],
			    strlen(sk->u.nats.servers[i]));
			len += strlen(sk->u.nats.servers[i]);
		}
		free(sk->u.nats.urls);
		sk->u.nats.urls = u;
	}

	if ((am = conf_ymap_get(p->doc, map, "auth")) != NULL &&
	    !conf_yisnull(am)) {
		forms = (sk->u.nats.username != NULL ||
		    sk->u.nats.password != NULL) +
		    (sk->u.nats.token != NULL) +
		    (sk->u.nats.nkey_seed != NULL || sk->u.nats.jwt != NULL);
		if (forms != 1)
			conf_err(p, conf_yline(am), "%s.auth must hold exactly "
			    "one of {username, password}, {token} or "
			    "{nkey_seed, jwt}, got %d", path, forms);
		else if ((sk->u.nats.username == NULL) !=
		    (sk->u.nats.password == NULL))
			conf_err(p, conf_yline(am), "%s.auth.username and "
			    "password go together", path);
		else if (sk->u.nats.jwt != NULL && sk->u.nats.nkey_seed == NULL)
			conf_err(p, conf_yline(am), "%s.auth.jwt needs "
			    "nkey_seed", path);
		else if (sk->u.nats.nkey_seed != NULL &&
		    nkey_user_public(sk->u.nats.nkey_seed, pub) == -1)
			conf_err(p, conf_yline(am), "%s.auth.nkey_seed must be "
			    "a user NKey's seed (SU..., 58 characters)", path);
	}
}
