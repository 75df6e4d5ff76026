/* SPDX-License-Identifier: ISC */
/*
 * conf_check.c: the checks that relate keys.
 *
 * The table bounds each key alone.  What one key requires of another is
 * here: a section's check (the table's .check) runs once its keys are set,
 * and conf_finish() once the whole file is, with the checks that need it all
 * and the values derived from other keys.  They name the keys they relate.
 */
#include "config.h"

#include <sys/socket.h>

#include <arpa/inet.h>
#include <netinet/in.h>

#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "amqpurl.h"
#include "conf.h"
#include "conf_int.h"
#include "netaddr.h"
#include "redisurl.h"

static void	ccheck_deliver_pool(struct cparse *, yaml_node_t *,
		    yaml_node_t *);
static void	ccheck_trusted_proxies(struct cparse *, yaml_node_t *);
static void	conf_check_redis(struct cparse *, struct sink_conf *,
		    yaml_node_t *, const char *);
static void	ccheck_tls(struct cparse *, yaml_node_t *);
static void	ccheck_mtls(struct cparse *, const struct source_conf *,
		    yaml_node_t *, const char *, int);
static int	chostname(const char *, size_t);
static void	ccheck_brokers(struct cparse *, const struct sink_conf *,
		    yaml_node_t *, const char *);

/*
 * verify type mtls: something to match (else any certificate of any
 * client_ca_file CA would do, which http.tls.client_ca_file says alone),
 * a fingerprint that is one, and no quarantine: a held hook is verified
 * again at its release, without its connection's certificate.
 */
static void
ccheck_mtls(struct cparse *p, const struct source_conf *s, yaml_node_t *vm,
    const char *path, int line)
{
	const struct verify_conf *v = &s->verify;
	const char *f;
	int hex = 0;

	if (v->mtls_subject == NULL && v->mtls_san == NULL &&
	    v->mtls_fingerprint == NULL)
		conf_err(p, line, "%s.verify needs subject, san or fingerprint "
		    "with verify type mtls", path);
	if ((f = v->mtls_fingerprint) != NULL) {
		for (; *f != '\0'; f++)
			if (isxdigit((unsigned char)*f))
				hex++;
			else if (*f != ':')
				break;
		if (*f != '\0' || hex != 64)
			conf_err(p, conf_yline(conf_ymap_get(p->doc, vm,
			    "fingerprint")), "%s.verify.fingerprint must be a "
			    "SHA-256 in hex (64 digits, colons allowed), got %s",
			    path, v->mtls_fingerprint);
	}
	if (s->on_verify_failure == VFAIL_QUARANTINE)
		conf_err(p, line, "%s.on_verify_failure must be reject or "
		    "accept_flag with verify type mtls (a held hook is "
		    "verified again without its client certificate)", path);
	if (p->conf->http.tls.client_ca_file == NULL)
		conf_err(p, line, "%s.verify type mtls needs "
		    "http.tls.client_ca_file (no client is asked for a "
		    "certificate without it)", path);
}

void
conf_check_source(struct cparse *p, struct cctx *c, yaml_node_t *map,
    const char *path)
{
	struct source_conf *s = c->src;
	struct verify_conf *v = &s->verify;
	yaml_node_t *vm, *n;
	const char *vt = conf_verify_types[v->type];
	int i, line;

	vm = conf_ymap_get(p->doc, map, "verify");
	line = vm != NULL ? conf_yline(vm) : conf_yline(map);

	if (v->type == VERIFY_NONE || v->type == VERIFY_MTLS) {
		if ((n = conf_ymap_get(p->doc, vm, "secret")) != NULL)
			conf_err(p, conf_yline(n),
			    "%s.verify.secret must not be set "
			    "with verify type %s", path, vt);
	} else if (v->nsecrets == 0 &&
	    conf_ymap_get(p->doc, vm, "secret") == NULL)
		conf_err(p, line,
		    "%s.verify.secret is required for verify type %s", path,
		    vt);

	if (v->type == VERIFY_HMAC) {
		if (v->signature_header == NULL)
			conf_err(p, line,
			    "%s.verify.signature_header is required "
			    "for verify type hmac", path);
		if (v->signed_template == NULL)
			conf_err(p, line,
			    "%s.verify.signed is required for verify type hmac",
			    path);
		if (v->parse != NULL && strcmp(v->parse, "csv_pairs") == 0 &&
		    v->sig_key == NULL)
			conf_err(p, line, "%s.verify.sig_key is required with "
			    "parse csv_pairs", path);
		if (v->parse != NULL &&
		    strcmp(v->parse, "space_versions") == 0 &&
		    v->version == NULL)
			conf_err(p, line, "%s.verify.version is required with "
			    "parse space_versions", path);
	} else {
		for (i = 0; conf_hmac_keys[i] != NULL; i++)
			if ((n = conf_ymap_get(p->doc, vm, conf_hmac_keys[i]))
			    != NULL)
				conf_err(p, conf_yline(n),
				    "%s.verify.%s is only valid "
				    "with verify type hmac, not %s", path,
				    conf_hmac_keys[i], vt);
	}

	if (v->type == VERIFY_MTLS) {
		ccheck_mtls(p, s, vm, path, line);
	} else
		for (i = 0; conf_mtls_keys[i] != NULL; i++)
			if ((n = conf_ymap_get(p->doc, vm, conf_mtls_keys[i]))
			    != NULL)
				conf_err(p, conf_yline(n),
				    "%s.verify.%s is only valid "
				    "with verify type mtls, not %s", path,
				    conf_mtls_keys[i], vt);

	if (v->type != VERIFY_META &&
	    (n = conf_ymap_get(p->doc, vm, "verify_token")) != NULL)
		conf_err(p, conf_yline(n), "%s.verify.verify_token is only "
		    "valid with verify type meta, not %s", path, vt);

	/* A shared source that checks nothing would let anyone post under
	 * any tenant's URL. */
	if (p->conf->http.routing == ROUTING_TENANT_PATH &&
	    s->tenant == NULL && v->type == VERIFY_NONE &&
	    !s->trust_url_tenant) {
		n = conf_ymap_get(p->doc, map, "trust_url_tenant");
		conf_err(p, n != NULL ? conf_yline(n) : conf_yline(map),
		    "%s.trust_url_tenant must be true for a shared source "
		    "with verify none under tenant_path routing, got false",
		    path);
	}
}

void
conf_check_dedupe(struct cparse *p, struct cctx *c, yaml_node_t *n,
    const char *path)
{
	struct dedupe_conf *d = &c->src->dedupe;
	int i;

	if (d->preset != NULL && d->key.kind != KEY_NONE) {
		conf_err(p, conf_yline(n),
		    "%s must have one of preset, header, json, got more", path);
		return;
	}
	if (d->preset == NULL && d->key.kind == KEY_NONE) {
		/* An error was reported for a bad value already. */
		if (n->type == YAML_MAPPING_NODE &&
		    conf_ymap_get(p->doc, n, "preset") == NULL &&
		    conf_ymap_get(p->doc, n, "header") == NULL &&
		    conf_ymap_get(p->doc, n, "json") == NULL)
			conf_err(p, conf_yline(n),
			    "%s must have one of preset, header, "
			    "json, got none", path);
		return;
	}
	if (d->preset == NULL)
		return;
	for (i = 0; conf_presets[i] != NULL; i++)
		if (strcmp(conf_presets[i], d->preset) == 0) {
			d->key.kind = conf_preset_keys[i].kind;
			conf_set_str(&d->key.name, conf_preset_keys[i].name);
		}
}

void
conf_check_order_key(struct cparse *p, struct cctx *c, yaml_node_t *n,
    const char *path)
{
	if (c->sink->order_key.kind == KEY_NONE &&
	    conf_ymap_get(p->doc, n, "header") == NULL &&
	    conf_ymap_get(p->doc, n, "json") == NULL)
		conf_err(p, conf_yline(n),
		    "%s must have one of header, json, got none", path);
}

/*
 * A URL a sink or the claim store connects to, against the egress guard
 * (egress is walked first): a host that is a literal address must be one
 * the guard lets through, and a numeric host must be in inet_pton form
 * (netaddr_literal says why).  A name is checked where it resolves, at
 * connect (workers/egress.c).  key is the URL's key in map.
 */
void
conf_check_egress_url(struct cparse *p, yaml_node_t *map, const char *path,
    const char *key, const char *url)
{
	yaml_node_t *n;
	char host[256];
	uint16_t port;
	int plain, line;

	if (url == NULL)
		return;
	n = conf_ymap_get(p->doc, map, key);
	line = n != NULL ? conf_yline(n) : conf_yline(map);
	if (netaddr_url(url, host, sizeof(host), &port, &plain) == -1) {
		conf_err(p, line,
		    "%s.%s must be an http:// or https:// URL with a host "
		    "(no %%) and a port in 1..65535", path, key);
		return;
	}
	conf_check_egress_host(p, line, path, key, host, port, plain);
}

void
conf_check_egress_host(struct cparse *p, int line, const char *path,
    const char *key, const char *host, uint16_t port, int plain)
{
	const struct conf *cf = p->conf;
	struct netaddr_cidr *allow;
	struct netaddr na;
	enum netaddr_class cls;
	char a[NETADDR_STRLEN];
	int bad;

	switch (netaddr_literal(host, &na)) {
	case -1:
		conf_err(p, line, "%s.%s must have a name or an address in "
		    "standard form (a.b.c.d or [v6]) as its host, got %s", path,
		    key, host);
		return;
	case 0:
		return;
	}
	na.port = port;
	netaddr_format(&na, a, sizeof(a));
	/* Only valid entries were stored. */
	if (netaddr_allow_load(cf->egress.allow, cf->egress.nallow, &allow,
	    &bad) == -1)
		return;
	switch (netaddr_egress(allow, cf->egress.nallow,
	    cf->egress.allow_plain_http, &na, plain, &cls)) {
	case NETADDR_DENIED:
		conf_err(p, line, "%s.%s must reach a public address or one "
		    "egress.allow covers, got %s port %u (%s)", path, key, a,
		    port, netaddr_class_name(cls));
		break;
	case NETADDR_PLAIN:
		conf_err(p, line,
		    "%s.%s must be %s to reach a non-loopback address "
		    "with egress.allow_plain_http false, got %s to %s",
		    path, key, plain == CONF_PLAIN_REDIS ? "rediss://" :
		    "https://", plain == CONF_PLAIN_REDIS ? "redis://" :
		    "http://", a);
		break;
	case NETADDR_GO:
		break;
	}
	free(allow);
}

/*
 * A retry section (dispatch.retry, a source's, a sink's): schedule_ms
 * replaces base_ms and max_ms, so it is not written with them; a section
 * that writes either without it takes the exponential form, dropping a
 * schedule it inherits.
 */
void
conf_check_retry(struct cparse *p, struct cctx *c, yaml_node_t *map,
    const char *path)
{
	struct retry_policy *rp = c->sink != NULL ? &c->sink->retry :
	    c->src != NULL ? &c->src->retry : &p->conf->dispatch.retry;
	yaml_node_t *sn, *n;

	n = conf_ymap_get(p->doc, map, "base_ms");
	if (n == NULL)
		n = conf_ymap_get(p->doc, map, "max_ms");
	sn = conf_ymap_get(p->doc, map, "schedule_ms");
	if (sn != NULL && n != NULL)
		conf_err(p, conf_yline(n), "%s.schedule_ms and %s.%s "
		    "exclude each other", path, path,
		    conf_ymap_get(p->doc, map, "base_ms") != NULL ?
		    "base_ms" : "max_ms");
	else if (n != NULL)
		rp->nschedule = 0;
}

/* A rabbitmq sink: its url an AMQP URI whose host the egress guard lets
 * through (amqp:// is plain, as http:// is). */
static void
conf_check_amqp(struct cparse *p, yaml_node_t *map, const char *path,
    const struct sink_conf *sk)
{
	struct amqpurl u;
	yaml_node_t *n;
	char why[128];
	int line;

	n = conf_ymap_get(p->doc, map, "url");
	line = n != NULL ? conf_yline(n) : conf_yline(map);
	if (sk->u.rabbitmq.url != NULL) {
		if (amqpurl_parse(sk->u.rabbitmq.url, &u, why,
		    sizeof(why)) == -1)
			conf_err(p, line, "%s.url must be an amqp:// or "
			    "amqps:// URL: %s", path, why);
		else {
			conf_check_egress_host(p, line, path, "url", u.host,
			    u.port, !u.tls);
			amqpurl_free(&u);
		}
	}
}

/*
 * kafka's brokers: host:port each, and a literal address one the egress
 * guard lets through, plaintext (ssl false) judged as plain http is.
 * Names, and the brokers the cluster's metadata names, are checked at
 * connect (workers/sink_kafka.c).
 */
static void
ccheck_brokers(struct cparse *p, const struct sink_conf *sk, yaml_node_t *map,
    const char *path)
{
	yaml_node_t *n = conf_ymap_get(p->doc, map, "brokers");
	const char *b;
	char *host, written[256];
	unsigned port;
	int i, line = n != NULL ? conf_yline(n) : conf_yline(map);
	size_t hl;

	if (sk->u.kafka.nbrokers > CONF_MAX_BROKERS)
		conf_err(p, line, "%s.brokers must have at most %d brokers, "
		    "got %d", path, CONF_MAX_BROKERS, sk->u.kafka.nbrokers);
	for (i = 0; i < sk->u.kafka.nbrokers; i++) {
		b = sk->u.kafka.brokers[i];
		if (conf_hostport(b, &host, &port) == -1) {
			conf_err(p, line, "%s.brokers[%d] must be host:port or "
			    "[v6]:port with a port in 1..65535, got %s", path,
			    i, b);
			continue;
		}
		free(host);
		/* The host as written, brackets and all (netaddr_literal). */
		hl = strrchr(b, ':') - b;
		if (hl >= sizeof(written))
			continue;
		memcpy(written, b, hl);
		written[hl] = '\0';
		conf_check_egress_host(p, line, path, "brokers", written,
		    (uint16_t)port, !sk->u.kafka.ssl);
	}
}

void
conf_check_sink(struct cparse *p, struct cctx *c, yaml_node_t *map,
    const char *path)
{
	struct sink_conf *sk = c->sink;
	yaml_node_t *n;

	switch (sk->type) {
	case SINK_HTTP:
		conf_check_egress_url(p, map, path, "url", sk->u.http.url);
		break;
	case SINK_SQS:
		/* The endpoint is connected to; the queue URL without one. */
		if (sk->u.sqs.endpoint != NULL)
			conf_check_egress_url(p, map, path, "endpoint",
			    sk->u.sqs.endpoint);
		else
			conf_check_egress_url(p, map, path, "queue_url",
			    sk->u.sqs.queue_url);
		break;
	case SINK_PUBSUB:
		conf_check_egress_url(p, map, path, "endpoint",
		    sk->u.pubsub.endpoint);
		break;
	case SINK_REDIS:
		conf_check_redis(p, sk, map, path);
		break;
	case SINK_RABBITMQ:
		conf_check_amqp(p, map, path, sk);
		break;
	case SINK_KAFKA:
		ccheck_brokers(p, sk, map, path);
		break;
	default:
		break;
	}

	conf_check_sinknet(p, sk, map, path);
	if ((n = conf_ymap_get(p->doc, map, "order_key")) != NULL &&
	    !conf_yisnull(n) && !sk->ordered)
		conf_err(p, conf_yline(n),
		    "%s.ordered must be true when order_key is set, got false",
		    path);
	if (sk->type == SINK_PUBSUB && sk->u.pubsub.auth != NULL) {
		if (strcmp(sk->u.pubsub.auth, "token") == 0 &&
		    sk->u.pubsub.token == NULL &&
		    conf_ymap_get(p->doc, map, "token") == NULL)
			conf_err(p, conf_yline(map),
			    "%s.token is required with auth token", path);
		if (strcmp(sk->u.pubsub.auth, "token") != 0 &&
		    (n = conf_ymap_get(p->doc, map, "token")) != NULL)
			conf_err(p, conf_yline(n),
			    "%s.token must not be set with auth %s", path,
			    sk->u.pubsub.auth);
	}
}

/* A redis sink: its url (common/redisurl.h) and its host as the egress
 * guard sees it (plain unless rediss://), exactly one of channel and
 * stream, maxlen with a stream, not both timeout_ms and
 * publish_timeout_ms.  It has no proxy key: it connects directly. */
static void
conf_check_redis(struct cparse *p, struct sink_conf *sk, yaml_node_t *map,
    const char *path)
{
	struct redis_url u;
	yaml_node_t *n;
	char err[128];
	int line;

	n = conf_ymap_get(p->doc, map, "url");
	line = n != NULL ? conf_yline(n) : conf_yline(map);
	if (sk->u.redis.url != NULL) {
		if (redis_url_parse(sk->u.redis.url, &u, err, sizeof(err)) ==
		    -1)
			conf_err(p, line, "%s.url must be "
			    "redis://[[user]:password@]host[:port][/db] or "
			    "rediss://...: %s", path, err);
		else {
			conf_check_egress_host(p, line, path, "url", u.host,
			    u.port, u.tls ? 0 : CONF_PLAIN_REDIS);
			redis_url_free(&u);
		}
	}
	if ((sk->u.redis.channel == NULL) == (sk->u.redis.stream == NULL))
		conf_err(p, conf_yline(map), "%s needs exactly one of channel "
		    "and stream", path);
	if (sk->u.redis.maxlen != 0 && sk->u.redis.stream == NULL)
		conf_err(p, conf_yline(conf_ymap_get(p->doc, map, "maxlen")),
		    "%s.maxlen goes with stream", path);
	/* One value, two names (the Elixir Ankusa's and ours). */
	if ((n = conf_ymap_get(p->doc, map, "timeout_ms")) != NULL &&
	    conf_ymap_get(p->doc, map, "publish_timeout_ms") != NULL)
		conf_err(p, conf_yline(n), "%s.timeout_ms and "
		    "publish_timeout_ms are one setting: give one of them",
		    path);
}

void
conf_check_claim(struct cparse *p, struct cctx *c, yaml_node_t *map,
    const char *path)
{
	struct conf *cf = p->conf;
	yaml_node_t *st, *n;
	int s3 = cf->claim_check.store_type != NULL &&
	    strcmp(cf->claim_check.store_type, "s3") == 0;

	st = conf_ymap_get(p->doc, map, "store");
	if (s3) {
		if (cf->claim_check.s3_bucket == NULL)
			conf_err(p, conf_yline(st),
			    "%s.store.s3.bucket is required with store type s3",
			    path);
		if ((n = conf_ymap_get(p->doc, st, "root")) != NULL)
			conf_err(p, conf_yline(n),
			    "%s.store.root must not be set with store type s3",
			    path);
		if ((n = conf_ymap_get(p->doc, map, "retention_days")) != NULL
		    && !conf_yisnull(n))
			conf_err(p, conf_yline(n),
			    "%s.retention_days must be null with "
			    "store type s3, got %s", path, (const char
			    *)n->data.scalar.value);
		if ((n = conf_ymap_get(p->doc, st, "s3")) != NULL)
			conf_check_egress_url(p, n, "claim_check.store.s3",
			    "endpoint", cf->claim_check.s3_endpoint);
	} else if ((n = conf_ymap_get(p->doc, st, "s3")) != NULL)
		conf_err(p, conf_yline(n),
		    "%s.store.s3 must not be set with store type local", path);
	/* Every reference is signed: no key, no claim check. */
	n = conf_ymap_get(p->doc, map, "signing_key");
	if (cf->claim_check.signing_key == NULL)
		conf_err(p, conf_yline(map), "%s.signing_key is required: "
		    "claim references are signed (v2); give at least %d "
		    "random bytes, e.g. the output of openssl rand -base64 "
		    "48", path, CONF_CLAIM_KEY_MIN);
	else if (strlen(cf->claim_check.signing_key) < CONF_CLAIM_KEY_MIN)
		conf_err(p, conf_yline(n), "%s.signing_key must be at least "
		    "%d bytes", path, CONF_CLAIM_KEY_MIN);
}

/*
 * replication: local and peers as host:port ("[v6]:port" for an IPv6
 * address), each peer once and none the local site, and heartbeats that
 * can tell a silent master from an idle one.
 */
/* A host name of letters, digits and hyphens in dot-separated labels of
 * 1-63, none starting or ending with a hyphen; all digits and dots is an
 * IPv4 address or nothing. */
static int
chostname(const char *h, size_t len)
{
	struct in_addr a4;
	char buf[256];
	size_t i, lab = 0;
	int digits = 1;

	if (len == 0 || len >= sizeof(buf))
		return -1;
	memcpy(buf, h, len);
	buf[len] = '\0';
	for (i = 0; i < len; i++) {
		if (buf[i] == '.') {
			if (lab == 0 || buf[i - 1] == '-')
				return -1;
			lab = 0;
			continue;
		}
		if (!isalnum((unsigned char)buf[i]) && buf[i] != '-')
			return -1;
		if (buf[i] == '-' && lab == 0)
			return -1;
		if (!isdigit((unsigned char)buf[i]))
			digits = 0;
		if (++lab > 63)
			return -1;
	}
	if (lab == 0 || buf[len - 1] == '-')
		return -1;
	return digits && inet_pton(AF_INET, buf, &a4) != 1 ? -1 : 0;
}

int
conf_hostport(const char *s, char **host, unsigned *port)
{
	struct in6_addr a6;
	char v6[INET6_ADDRSTRLEN], canon[INET6_ADDRSTRLEN];
	const char *colon, *h, *he;
	char *end, *p;
	unsigned long v;

	if (s[0] == '[') {
		if ((he = strchr(s, ']')) == NULL || he[1] != ':')
			return -1;
		h = s + 1;
		colon = he + 1;
	} else {
		if ((colon = strrchr(s, ':')) == NULL ||
		    memchr(s, ':', colon - s) != NULL)
			return -1;
		h = s;
		he = colon;
	}
	if (he == h || colon[1] < '0' || colon[1] > '9')
		return -1;
	v = strtoul(colon + 1, &end, 10);
	if (*end != '\0' || v == 0 || v > 65535)
		return -1;
	if (s[0] == '[') {
		if ((size_t)(he - h) >= sizeof(v6))
			return -1;
		memcpy(v6, h, he - h);
		v6[he - h] = '\0';
		if (inet_pton(AF_INET6, v6, &a6) != 1 ||
		    inet_ntop(AF_INET6, &a6, canon, sizeof(canon)) == NULL)
			return -1;
		*host = strdup(canon);
	} else {
		if (chostname(h, he - h) == -1)
			return -1;
		*host = strndup(h, he - h);
	}
	if (*host == NULL)
		return -1;
	for (p = *host; *p != '\0'; p++)
		*p = tolower((unsigned char)*p);
	*port = (unsigned)v;
	return 0;
}

static int
crepl_same(const char *host, unsigned port, const struct conf_hostport *hp)
{
	return port == hp->port && strcmp(host, hp->host) == 0;
}

/* local_host, local_port and peers again from local and peer_list (a
 * reload that kept the running section's values): 0, or -1. */
int
conf_repl_derive(struct conf_repl *r)
{
	size_t i;

	free(r->local_host);
	r->local_host = NULL;
	for (i = 0; i < r->npeers; i++)
		free(r->peers[i].host);
	free(r->peers);
	r->peers = NULL;
	r->npeers = 0;
	if (r->local == NULL || conf_hostport(r->local, &r->local_host,
	    &r->local_port) == -1)
		return -1;
	if (r->npeer_list > 0 && (r->peers = calloc(r->npeer_list,
	    sizeof(*r->peers))) == NULL)
		return -1;
	for (i = 0; i < (size_t)r->npeer_list; i++) {
		if (conf_hostport(r->peer_list[i], &r->peers[i].host,
		    &r->peers[i].port) == -1)
			return -1;
		r->npeers++;
	}
	return 0;
}

void
conf_check_repl(struct cparse *p, struct cctx *c, yaml_node_t *map,
    const char *path)
{
	struct conf_repl *r = &p->conf->repl;
	yaml_node_t *n;
	int i, j, line;

	(void)c;
	n = conf_ymap_get(p->doc, map, "peers");
	line = n != NULL ? conf_yline(n) : conf_yline(map);
	if (r->local != NULL && conf_hostport(r->local, &r->local_host,
	    &r->local_port) == -1)
		conf_err(p, conf_yline(conf_ymap_get(p->doc, map, "local")),
		    "%s.local must "
		    "be host:port (a name, an IPv4 address or [IPv6], and a "
		    "port 1-65535), got \"%s\"", path, r->local);
	if (r->npeer_list > 32)
		conf_err(p, line, "%s.peers has %d entries, at most 32", path,
		    r->npeer_list);
	else if (r->npeer_list > 0 && (r->peers = calloc(r->npeer_list,
	    sizeof(*r->peers))) == NULL)
		conf_err(p, line, "%s.peers: out of memory", path);
	for (i = 0; r->peers != NULL && i < r->npeer_list; i++) {
		if (conf_hostport(r->peer_list[i], &r->peers[r->npeers].host,
		    &r->peers[r->npeers].port) == -1) {
			conf_err(p, line, "%s.peers[%d] must be host:port, got "
			    "\"%s\"", path, i, r->peer_list[i]);
			continue;
		}
		r->npeers++;
		if (r->local_host != NULL && crepl_same(r->local_host,
		    r->local_port, &r->peers[r->npeers - 1]))
			conf_err(p, line,
			    "%s.peers[%d] is %s.local (%s): list the "
			    "other nodes only", path, i, path, r->local);
		for (j = 0; j < (int)r->npeers - 1; j++)
			if (crepl_same(r->peers[j].host, r->peers[j].port,
			    &r->peers[r->npeers - 1]))
				conf_err(p, line,
				    "%s.peers[%d] repeats %s.peers[%d] (%s)",
				    path, i, path, j, r->peer_list[i]);
	}
	if (r->npeer_list == 0 && !r->create)
		conf_err(p, line,
		    "%s.peers must list the other nodes of the group "
		    "(empty only with %s.create: true, the first node of a new "
		    "group)", path, path);
	if (r->heartbeat_ms != 0 && r->heartbeat_timeout_ms != 0 &&
	    r->heartbeat_timeout_ms <= r->heartbeat_ms)
		conf_err(p, conf_yline(map),
		    "%s.heartbeat_timeout_ms must exceed "
		    "%s.heartbeat_ms (%u), got %u", path, path, r->heartbeat_ms,
		    r->heartbeat_timeout_ms);
}

/*
 * The deliver pool (conf_deliver_pool) is at most CONF_DELIVER_MAX
 * processes: concurrency C, plus S for each of the K batching sinks (S is
 * sink_concurrency, or C when it is null), plus one.  The error names the
 * key that can bring it there alone: concurrency if a smaller one can, else
 * sink_concurrency; else both, or the sinks when even 1 and 1 are too many.
 */
static void
ccheck_deliver_pool(struct cparse *p, yaml_node_t *root, yaml_node_t *dm)
{
	const struct conf *cf = p->conf;
	unsigned long long c = cf->dispatch.concurrency, k, maxc, maxs;
	unsigned long long s = cf->dispatch.sink_concurrency;
	unsigned long long room = CONF_DELIVER_MAX - 1;

	if (conf_deliver_pool(cf) <= CONF_DELIVER_MAX)
		return;
	k = conf_batching_sinks(cf);
	if (s == 0)
		maxc = room / (k + 1);
	else
		maxc = room > s * k ? room - s * k : 0;
	maxs = k > 0 && room > c ? (room - c) / k : 0;
	if (maxc >= 1 && s == 0)
		conf_err(p, conf_yline(conf_ymap_get(p->doc, dm,
		    "concurrency")),
		    "dispatch.concurrency must be at most %llu (the deliver "
		    "pool, concurrency + concurrency (dispatch.sink_concurrency "
		    "null) for each of %llu batching sinks + 1, is at most %d "
		    "processes), got %llu", maxc, k,
		    CONF_DELIVER_MAX, c);
	else if (maxc >= 1)
		conf_err(p, conf_yline(conf_ymap_get(p->doc, dm,
		    "concurrency")),
		    "dispatch.concurrency must be at most %llu (the deliver "
		    "pool, concurrency + %llu (dispatch.sink_concurrency) for "
		    "each of %llu batching sinks + 1, is at most %d processes), "
		    "got %llu", maxc, s, k, CONF_DELIVER_MAX, c);
	else if (s != 0 && maxs >= 1)
		conf_err(p, conf_yline(conf_ymap_get(p->doc, dm,
		    "sink_concurrency")),
		    "dispatch.sink_concurrency must be at most %llu (the "
		    "deliver pool, dispatch.concurrency %llu + sink_concurrency "
		    "for each of %llu batching sinks + 1, is at most %d "
		    "processes), got %llu", maxs, c, k,
		    CONF_DELIVER_MAX, s);
	else if (k + 2 <= CONF_DELIVER_MAX)
		conf_err(p, conf_yline(dm), "dispatch.concurrency and "
		    "dispatch.sink_concurrency must be lower (the deliver pool, "
		    "concurrency + sink_concurrency for each of %llu batching "
		    "sinks + 1, is at most %d processes), got %llu and %llu", k, CONF_DELIVER_MAX, c, s != 0 ? s : c);
	else
		conf_err(p, conf_yline(conf_ymap_get(p->doc, root,
		    "sources")), "sources "
		    "must have at most %d batching sinks in all (the deliver "
		    "pool, dispatch.concurrency + "
		    "dispatch.sink_concurrency for each + 1, is at most %d "
		    "processes), got %llu", CONF_DELIVER_MAX - 2,
		    CONF_DELIVER_MAX, k);
}

/* http.trusted_proxies are addresses: a proxy connects from any port. */
static void
ccheck_trusted_proxies(struct cparse *p, yaml_node_t *root)
{
	const struct conf *cf = p->conf;
	struct netaddr_cidr c;
	int i;

	for (i = 0; i < cf->http.ntrusted_proxies; i++)
		if (netaddr_cidr_parse(cf->http.trusted_proxies[i], &c) == 0 &&
		    c.port != 0)
			conf_err(p, conf_yline(conf_ymap_get(p->doc,
			    conf_ymap_get(p->doc, root, "http"),
			    "trusted_proxies")), "http.trusted_proxies[%d] "
			    "must be an address or CIDR without a port, got %s",
			    i, cf->http.trusted_proxies[i]);
}

/* http.tls: a certificate needs its key; the TLS listener is not the
 * plain one. */
static void
ccheck_tls(struct cparse *p, yaml_node_t *root)
{
	const struct conf *cf = p->conf;
	yaml_node_t *tn;

	tn = conf_ymap_get(p->doc, conf_ymap_get(p->doc, root, "http"),
	    "tls");
	if (cf->http.tls.cert_file == NULL) {
		if (cf->http.tls.key_file != NULL ||
		    cf->http.tls.client_ca_file != NULL)
			conf_err(p, conf_yline(tn), "http.tls.cert_file is "
			    "required with http.tls.key_file and "
			    "http.tls.client_ca_file");
		return;
	}
	if (cf->http.tls.key_file == NULL)
		conf_err(p, conf_yline(tn), "http.tls.key_file is required "
		    "with http.tls.cert_file");
	if (cf->http.tls.port == cf->http.port)
		conf_err(p, conf_yline(tn), "http.tls.port must differ from "
		    "http.port, got %u", cf->http.tls.port);
}

/* 1 when the numeric address ip is 127.0.0.0/8 or ::1. */
static int
ccheck_loopback(const char *ip)
{
	struct in_addr a4;
	struct in6_addr a6;

	if (inet_pton(AF_INET, ip, &a4) == 1)
		return (ntohl(a4.s_addr) >> 24) == 127;
	return inet_pton(AF_INET6, ip, &a6) == 1 &&
	    IN6_IS_ADDR_LOOPBACK(&a6);
}

/* The checks that need the whole file, and values derived from others. */
void
conf_finish(struct cparse *p, yaml_node_t *root)
{
	struct conf *cf = p->conf;
	struct tenant_window *td = &cf->dispatch.tenant_default, *tw;
	yaml_node_t *dm, *n, *mo;
	int i;

	dm = conf_ymap_get(p->doc, root, "dispatch");

	/* sink_concurrency: explicit values are bounded by concurrency; the
	 * default (8) shrinks to it. */
	n = conf_ymap_get(p->doc, dm, "sink_concurrency");
	if (n == NULL) {
		if (cf->dispatch.sink_concurrency > cf->dispatch.concurrency)
			cf->dispatch.sink_concurrency =
			    cf->dispatch.concurrency;
	} else if (cf->dispatch.sink_concurrency > cf->dispatch.concurrency)
		conf_err(p, conf_yline(n),
		    "dispatch.sink_concurrency must be null or "
		    "an integer in 1..%u (dispatch.concurrency), got %u",
		    cf->dispatch.concurrency, cf->dispatch.sink_concurrency);

	/* The notices retry as dispatch.retry says. */
	cf->notify.retry = cf->dispatch.retry;
	ccheck_deliver_pool(p, root, dm);
	ccheck_trusted_proxies(p, root);
	ccheck_tls(p, root);

	/* breaker_max_open_ms: an explicit one must be at least open_ms; the
	 * default grows to it. */
	mo = conf_ymap_get(p->doc, dm, "breaker_max_open_ms");
	if (cf->dispatch.breaker_max_open_ms < cf->dispatch.breaker_open_ms) {
		if (mo == NULL)
			cf->dispatch.breaker_max_open_ms =
			    cf->dispatch.breaker_open_ms;
		else
			conf_err(p, conf_yline(mo),
			    "dispatch.breaker_max_open_ms must "
			    "be at least dispatch.breaker_open_ms (%llu), got "
			    "%llu", (unsigned long long)
			    cf->dispatch.breaker_open_ms, (unsigned long long)
			    cf->dispatch.breaker_max_open_ms);
	}

	/*
	 * Tenant windows: unset fields inherit.  The default tenant window
	 * is a share of the global one (a quarter of the rows and bytes,
	 * three quarters of the attempts), so that a tenant whose sink is
	 * slow fills its own window and never the whole global window: the
	 * others always find room to claim and slots to run.
	 */
	if (td->max_inflight == 0)
		td->max_inflight = cf->dispatch.max_inflight / 4 > 0 ?
		    cf->dispatch.max_inflight / 4 : 1;
	if (td->max_inflight_bytes == 0)
		td->max_inflight_bytes = cf->dispatch.max_inflight_bytes / 4 > 0 ?
		    cf->dispatch.max_inflight_bytes / 4 : 1;
	if (td->concurrency == 0)
		td->concurrency = cf->dispatch.concurrency * 3 / 4 > 0 ?
		    cf->dispatch.concurrency * 3 / 4 : 1;
	for (i = 0; i < cf->dispatch.ntenants; i++) {
		tw = &cf->dispatch.tenants[i];
		if (tw->max_inflight == 0)
			tw->max_inflight = td->max_inflight;
		if (tw->max_inflight_bytes == 0)
			tw->max_inflight_bytes = td->max_inflight_bytes;
		if (tw->concurrency == 0)
			tw->concurrency = td->concurrency;
	}

	/* Listeners on one address cannot share a port. */
	if (cf->admin.enabled && cf->admin.port != 0 &&
	    cf->admin.port == cf->http.port)
		conf_err(p, conf_yline(conf_ymap_get(p->doc,
		    conf_ymap_get(p->doc, root, "admin"), "port")),
		    "admin.port must differ from http.port, got %u",
		    cf->admin.port);
	if (cf->claim_check.enabled && cf->claim_check.port != 0 &&
	    (cf->claim_check.port == cf->http.port ||
	    (cf->admin.enabled && cf->claim_check.port == cf->admin.port)))
		conf_err(p, conf_yline(conf_ymap_get(p->doc,
		    conf_ymap_get(p->doc, root, "claim_check"), "port")),
		    "claim_check.port must differ "
		    "from http.port and admin.port, got %u",
		    cf->claim_check.port);

	/* An admin API without tokens is only for this host's operators. */
	if (cf->admin.enabled && cf->admin.ntokens == 0 &&
	    !ccheck_loopback(cf->admin.ip))
		conf_err(p, conf_yline(conf_ymap_get(p->doc,
		    conf_ymap_get(p->doc, root, "admin"), "ip")),
		    "admin.ip %s is not a loopback address, and admin.tokens "
		    "is empty: the admin API would be open to anyone who "
		    "reaches it; give admin.tokens, or admin.ip 127.0.0.1",
		    cf->admin.ip);

	if (cf->claim_check.enabled && cf->claim_check.root == NULL &&
	    strcmp(cf->claim_check.store_type, "local") == 0) {
		if (asprintf(&cf->claim_check.root, "%s/claims",
		    cf->data_dir) == -1)
			abort();
	}

	for (cf->nsinks = 0, i = 0; i < cf->nsources; i++)
		cf->nsinks += cf->sources[i].nsinks;
}
