/* SPDX-License-Identifier: ISC */
/*
 * conf.c: the configuration loader's entry points: parse and load, free, the
 * lookups and the reload check.
 *
 * The other files of the loader, sharing conf_int.h:
 *	conf_keys.c	the key table, the reference of every key
 *	conf_yaml.c	the walk of the YAML document and ${VAR} interpolation
 *	conf_check.c	the checks that relate keys
 *	conf_elixir.c	the Elixir Ankusa's keys: node.roles, what this build
 *			refuses, the ANKUSA_* overrides
 *	conf_json.c	the configuration as JSON, redacted (GET /v1/config)
 *	conf_man.c	ankusa.yml(5), written from the table (ankusad -M)
 *
 * The file is loaded with libyaml's document API into a node tree, which is
 * walked once.  Errors are collected, never fatal: conf_parse() reports all
 * of them and returns NULL if there was any.  Nothing here logs or exits.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <yaml.h>

#include "conf.h"
#include "conf_int.h"

#define CONF_MAX_ERRORS	100	/* stop collecting after so many */

static void	 cerr_push(struct conf_errors *, char *);
static void	 cfree_sink(struct sink_conf *);
static void	 cfree_secret(char *);
static void	 cfree_auth(struct sink_auth *);
static void	 cfree_tls(struct sink_tls *);
static void	 cfree_source(struct source_conf *);
static struct conf *cparse_text(const char *, size_t, const char *, int,
		    struct conf_errors *);
static void	 cfree_names(char **);

/*
 * Errors.
 */

static void
cerr_push(struct conf_errors *errs, char *msg)
{
	char **n;

	if (errs == NULL || msg == NULL) {
		free(msg);
		return;
	}
	n = reallocarray(errs->msgs, errs->n + 1, sizeof(*n));
	if (n == NULL) {
		free(msg);
		return;
	}
	errs->msgs = n;
	errs->msgs[errs->n++] = msg;
}

/* Record an error; ", line N" is appended when line > 0. */
void
conf_err(struct cparse *p, int line, const char *fmt, ...)
{
	va_list ap;
	char *m, *ml;

	p->nerr++;
	if (p->nerr > CONF_MAX_ERRORS)
		return;
	va_start(ap, fmt);
	if (vasprintf(&m, fmt, ap) == -1)
		m = NULL;
	va_end(ap);
	if (m == NULL)
		return;
	if (p->nerr == CONF_MAX_ERRORS)
		line = 0;
	if (line > 0) {
		if (asprintf(&ml, "%s, line %d", m, line) == -1)
			ml = NULL;
		free(m);
		m = ml;
	}
	cerr_push(p->errs, m);
	if (p->nerr == CONF_MAX_ERRORS)
		cerr_push(p->errs, strdup("too many errors, giving up"));
}

const char *
conf_getenv(struct cparse *p, const char *name)
{
	const char *v;
	char **n;
	int i;

	if ((v = getenv(name)) == NULL)
		return NULL;
	for (i = 0; i < p->nenv_read; i++)
		if (strcmp(p->env_read[i], name) == 0)
			return v;
	if ((n = reallocarray(p->env_read, p->nenv_read + 2,
	    sizeof(*n))) == NULL)
		abort();
	p->env_read = n;
	if ((n[p->nenv_read] = strdup(name)) == NULL)
		abort();
	n[++p->nenv_read] = NULL;
	return v;
}

static void
cfree_names(char **names)
{
	char **n;

	if (names == NULL)
		return;
	for (n = names; *n != NULL; n++)
		free(*n);
	free(names);
}

void
conf_errors_free(struct conf_errors *errs)
{
	int i;

	if (errs == NULL)
		return;
	for (i = 0; i < errs->n; i++)
		free(errs->msgs[i]);
	free(errs->msgs);
	errs->msgs = NULL;
	errs->n = 0;
}

/*
 * Public functions.
 */

struct conf *
conf_parse(const char *text, size_t len, const char *name,
    struct conf_errors *errs)
{
	return cparse_text(text, len, name, -1, errs);
}

struct conf *
conf_parse_role(const char *text, size_t len, enum conf_role role,
    struct conf_errors *errs)
{
	return cparse_text(text, len, "config", role, errs);
}

/* role: a child's part (which may have no sources key, but an edge's),
 * or -1 for the master's text. */
static struct conf *
cparse_text(const char *text, size_t len, const char *name, int role,
    struct conf_errors *errs)
{
	yaml_parser_t parser;
	yaml_document_t doc, more;
	yaml_node_t *root;
	struct cparse p;
	struct cctx c;
	struct conf *cf = NULL;

	memset(&p, 0, sizeof(p));
	memset(&c, 0, sizeof(c));
	p.errs = errs;
	p.role = role;
	p.nosources = role != -1 && role != CONF_ROLE_EDGE;
	if (name == NULL)
		name = "configuration";
	if (!yaml_parser_initialize(&parser)) {
		conf_err(&p, 0, "%s: cannot start the YAML parser", name);
		return NULL;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text,
	    len);
	if (!yaml_parser_load(&parser, &doc)) {
		conf_err(&p, (int)parser.problem_mark.line + 1,
		    "%s is not valid YAML: %s%s%s%s", name,
		    parser.problem != NULL ? parser.problem : "error",
		    parser.context != NULL ? " (" : "",
		    parser.context != NULL ? parser.context : "",
		    parser.context != NULL ? ")" : "");
		yaml_parser_delete(&parser);
		return NULL;
	}
	p.doc = &doc;
	root = yaml_document_get_root_node(&doc);
	if (root == NULL)
		conf_err(&p, 0,
		    "%s must be a map with at least a sources key, got "
		    "an empty document", name);
	else if (root->type != YAML_MAPPING_NODE)
		conf_err(&p, conf_yline(root),
		    "%s must be a map at the top level, got %s", name,
		    conf_ykind(root));
	else {
		if ((cf = calloc(1, sizeof(*cf))) == NULL)
			abort();
		p.conf = cf;
		conf_defaults(&p, &c, S_CONF, 0);
		conf_walk_section(&p, &c, "", root, "");
		conf_env_apply(&p, &c);
		conf_finish(&p, root);
	}

	/* One document per file. */
	if (!yaml_parser_load(&parser, &more))
		conf_err(&p, (int)parser.problem_mark.line + 1,
		    "%s is not valid YAML: %s%s%s%s", name,
		    parser.problem != NULL ? parser.problem : "error",
		    parser.context != NULL ? " (" : "",
		    parser.context != NULL ? parser.context : "",
		    parser.context != NULL ? ")" : "");
	else {
		if (yaml_document_get_root_node(&more) != NULL)
			conf_err(&p, (int)more.start_mark.line + 1,
			    "%s must hold one YAML document, got more", name);
		yaml_document_delete(&more);
	}
	yaml_document_delete(&doc);
	yaml_parser_delete(&parser);

	if (p.nerr > 0) {
		conf_free(cf);
		cfree_names(p.env_read);
		return NULL;
	}
	if (p.env_read == NULL && (p.env_read = calloc(1,
	    sizeof(*p.env_read))) == NULL)
		abort();
	cf->env_read = p.env_read;
	return cf;
}

struct conf *
conf_load(const char *path, char **textp, size_t *lenp,
    struct conf_errors *errs)
{
	struct cparse p;
	struct conf *cf;
	char *buf = NULL, *n;
	size_t len = 0, cap = 0;
	ssize_t r;
	int fd;

	memset(&p, 0, sizeof(p));
	p.errs = errs;
	if ((fd = open(path, O_RDONLY | O_CLOEXEC)) == -1) {
		conf_err(&p, 0, "cannot read %s: %s", path, strerror(errno));
		return NULL;
	}
	for (;;) {
		if (len + 1 >= cap) {
			cap = cap ? cap * 2 : 8192;
			if ((n = realloc(buf, cap)) == NULL)
				abort();
			buf = n;
		}
		r = read(fd, buf + len, cap - len - 1);
		if (r == -1 && errno == EINTR)
			continue;
		if (r == -1) {
			conf_err(&p, 0, "cannot read %s: %s", path,
			    strerror(errno));
			close(fd);
			free(buf);
			return NULL;
		}
		if (r == 0)
			break;
		len += r;
	}
	close(fd);
	buf[len] = '\0';
	if ((cf = conf_parse(buf, len, path, errs)) == NULL) {
		free(buf);
		return NULL;
	}
	if (textp != NULL)
		*textp = buf;
	else
		free(buf);
	if (lenp != NULL)
		*lenp = len;
	return cf;
}

const char *
conf_default_text(void)
{
	return conf_default_yaml;
}

void
conf_free_blobs(struct blob *b, int n)
{
	int i;

	for (i = 0; i < n; i++) {
		if (b[i].data != NULL)
			explicit_bzero(b[i].data, b[i].len);
		free(b[i].data);
		b[i].data = NULL;
		b[i].len = 0;
	}
}

/* A secret string: zeroed, then freed. */
static void
cfree_secret(char *s)
{
	if (s != NULL)
		explicit_bzero(s, strlen(s));
	free(s);
}

static void
cfree_auth(struct sink_auth *a)
{
	cfree_secret(a->token);
	free(a->username);
	cfree_secret(a->password);
	free(a->token_url);
	free(a->client_id);
	cfree_secret(a->client_secret);
	free(a->scope);
	free(a->audience);
}

static void
cfree_tls(struct sink_tls *t)
{
	free(t->client_cert_file);
	free(t->client_key_file);
	free(t->ca_file);
	free(t->server_name);
	free(t->client_cert);
	cfree_secret(t->client_key);
	free(t->ca);
}

static void
cfree_sink(struct sink_conf *sk)
{
	int i;

	free(sk->order_key.name);
	free(sk->proxy);
	for (i = 0; i < sk->nfilter_types; i++)
		free(sk->filter_types[i]);
	free(sk->filter_types);
	free(sk->filter_jq);
	switch (sk->type) {
	case SINK_HTTP:
		free(sk->u.http.url);
		free(sk->u.http.method);
		for (i = 0; i < sk->u.http.nheaders; i++) {
			free(sk->u.http.headers[i].name);
			free(sk->u.http.headers[i].value);
		}
		free(sk->u.http.headers);
		conf_free_blobs(sk->u.http.secrets, sk->u.http.nsecrets);
		cfree_auth(&sk->u.http.auth);
		cfree_tls(&sk->u.http.tls);
		break;
	case SINK_SQS:
		free(sk->u.sqs.queue_url);
		free(sk->u.sqs.region);
		free(sk->u.sqs.endpoint);
		free(sk->u.sqs.message_group_id);
		free(sk->u.sqs.access_key_id);
		free(sk->u.sqs.secret_access_key);
		free(sk->u.sqs.session_token);
		break;
	case SINK_PUBSUB:
		free(sk->u.pubsub.project);
		free(sk->u.pubsub.topic);
		free(sk->u.pubsub.endpoint);
		free(sk->u.pubsub.ordering_key);
		free(sk->u.pubsub.auth);
		free(sk->u.pubsub.token);
		break;
	case SINK_REDIS:
		cfree_secret(sk->u.redis.url);
		free(sk->u.redis.channel);
		free(sk->u.redis.stream);
		cfree_tls(&sk->u.redis.tls);
		break;
	case SINK_NATS:
		for (i = 0; i < sk->u.nats.nservers; i++)
			free(sk->u.nats.servers[i]);
		free(sk->u.nats.servers);
		free(sk->u.nats.urls);
		free(sk->u.nats.subject);
		free(sk->u.nats.username);
		cfree_secret(sk->u.nats.password);
		cfree_secret(sk->u.nats.token);
		cfree_secret(sk->u.nats.nkey_seed);
		free(sk->u.nats.jwt);
		cfree_tls(&sk->u.nats.tls);
		break;
	case SINK_RABBITMQ:
		cfree_secret(sk->u.rabbitmq.url);
		free(sk->u.rabbitmq.exchange);
		free(sk->u.rabbitmq.exchange_type);
		free(sk->u.rabbitmq.routing_key);
		break;
	case SINK_KAFKA:
		for (i = 0; i < sk->u.kafka.nbrokers; i++)
			free(sk->u.kafka.brokers[i]);
		free(sk->u.kafka.brokers);
		free(sk->u.kafka.topic);
		free(sk->u.kafka.key);
		free(sk->u.kafka.sasl_mechanism);
		free(sk->u.kafka.sasl_username);
		cfree_secret(sk->u.kafka.sasl_password);
		break;
	case SINK_LOG:
		break;
	}
}

static void
cfree_source(struct source_conf *s)
{
	struct verify_conf *v = &s->verify;
	int i;

	free(s->id);
	free(s->tenant);
	conf_free_blobs(v->secrets, v->nsecrets);
	free(v->signature_header);
	free(v->signed_template);
	free(v->mtls_subject);
	free(v->mtls_san);
	free(v->mtls_fingerprint);
	free(v->verify_token);
	free(v->hash);
	free(v->encoding);
	free(v->sig_prefix);
	free(v->timestamp_header);
	free(v->parse);
	free(v->sig_key);
	free(v->version);
	free(v->secret_decode);
	free(s->dedupe.preset);
	free(s->dedupe.key.name);
	free(s->event_type.name);
	for (i = 0; i < s->nforward_headers; i++)
		free(s->forward_headers[i]);
	free(s->forward_headers);
	for (i = 0; i < s->nsinks; i++)
		cfree_sink(&s->sinks[i]);
	free(s->sinks);
}

void
conf_free(struct conf *cf)
{
	int i;

	if (cf == NULL)
		return;
	free(cf->data_dir);
	free(cf->user);
	free(cf->child_user);
	free(cf->secret_inline);
	free(cf->log_level);
	free(cf->log_format);
	free(cf->log_deliveries);
	free(cf->http.ip);
	free(cf->http.prefix);
	free(cf->admin.ip);
	conf_tokens_free(cf->admin.tokens, cf->admin.ntokens);
	for (i = 0; i < cf->admin.nhosts; i++)
		free(cf->admin.hosts[i]);
	free(cf->admin.hosts);
	free(cf->control.socket);
	free(cf->control.group);
	for (i = 0; i < cf->nrate_tenants; i++)
		free(cf->rate_tenants[i].tenant);
	free(cf->rate_tenants);
	for (i = 0; i < cf->dispatch.ntenants; i++)
		free(cf->dispatch.tenants[i].tenant);
	free(cf->dispatch.tenants);
	free(cf->claim_check.ip);
	free(cf->claim_check.store_type);
	free(cf->claim_check.root);
	free(cf->claim_check.s3_bucket);
	free(cf->claim_check.s3_region);
	free(cf->claim_check.s3_endpoint);
	free(cf->claim_check.s3_access_key_id);
	if (cf->claim_check.s3_secret_access_key != NULL)
		explicit_bzero(cf->claim_check.s3_secret_access_key,
		    strlen(cf->claim_check.s3_secret_access_key));
	free(cf->claim_check.s3_secret_access_key);
	free(cf->claim_check.s3_session_token);
	if (cf->claim_check.signing_key != NULL)
		explicit_bzero(cf->claim_check.signing_key,
		    strlen(cf->claim_check.signing_key));
	free(cf->claim_check.signing_key);
	conf_tokens_free(cf->claim_check.tokens, cf->claim_check.ntokens);
	for (i = 0; i < cf->egress.nallow; i++)
		free(cf->egress.allow[i]);
	free(cf->egress.allow);
	free(cf->egress.proxy);
	for (i = 0; i < cf->egress.nno_proxy; i++)
		free(cf->egress.no_proxy[i]);
	free(cf->egress.no_proxy);
	for (i = 0; i < cf->http.ntrusted_proxies; i++)
		free(cf->http.trusted_proxies[i]);
	free(cf->http.trusted_proxies);
	free(cf->http.tls.ip);
	free(cf->http.tls.cert_file);
	free(cf->http.tls.key_file);
	free(cf->http.tls.ciphers);
	free(cf->http.tls.client_ca_file);
	free(cf->repl.local);
	for (i = 0; i < cf->repl.npeer_list; i++)
		free(cf->repl.peer_list[i]);
	free(cf->repl.peer_list);
	free(cf->repl.local_host);
	for (i = 0; i < (int)cf->repl.npeers; i++)
		free(cf->repl.peers[i].host);
	free(cf->repl.peers);
	for (i = 0; i < cf->nsources; i++)
		cfree_source(&cf->sources[i]);
	free(cf->sources);
	cfree_source(&cf->notify);
	cfree_names(cf->env_read);
	free(cf);
}

const struct source_conf *
conf_source(const struct conf *cf, const char *id)
{
	int i;

	for (i = 0; i < cf->nsources; i++)
		if (strcmp(cf->sources[i].id, id) == 0)
			return &cf->sources[i];
	if (cf->notify.nsinks > 0 && strcmp(id, CONF_NOTIFY_SOURCE) == 0)
		return &cf->notify;
	return NULL;
}

int
conf_disable_status(const struct sink_conf *sk, uint32_t status)
{
	if (!sk->disable_on_set)
		return status == 410;
	return status < CONF_STATUS_MAX &&
	    (sk->disable_on[status / 64] >> (status % 64) & 1);
}

const struct tenant_window *
conf_tenant_window(const struct conf *cf, const char *tenant)
{
	int i;

	if (tenant != NULL)
		for (i = 0; i < cf->dispatch.ntenants; i++)
			if (strcmp(cf->dispatch.tenants[i].tenant, tenant) == 0)
				return &cf->dispatch.tenants[i];
	return &cf->dispatch.tenant_default;
}

const struct rate_limit *
conf_rate_limit(const struct conf *cf, const char *tenant)
{
	int i;

	if (tenant != NULL)
		for (i = 0; i < cf->nrate_tenants; i++)
			if (strcmp(cf->rate_tenants[i].tenant, tenant) == 0)
				return &cf->rate_tenants[i].limit;
	return &cf->rate_default;
}

const char *
conf_sink_type_name(enum sink_type t)
{
	if (t >= SINK_HTTP && t <= SINK_KAFKA)
		return conf_sink_types[t - 1];
	return "unknown";
}

/* The same types today: every sink that sends the v1 queue message goes
 * through the batcher, and only those do.  Two names, for the two
 * questions callers ask. */
int
conf_sink_queue(enum sink_type t)
{
	return conf_sink_batches(t);
}

int
conf_sink_batches(enum sink_type t)
{
	switch (t) {
	case SINK_SQS:
	case SINK_PUBSUB:
	case SINK_RABBITMQ:
	case SINK_NATS:
	case SINK_REDIS:
	case SINK_KAFKA:
		return 1;
	case SINK_HTTP:
	case SINK_LOG:
		break;
	}
	return 0;
}

uint32_t
conf_batching_sinks(const struct conf *cf)
{
	uint32_t n = 0;
	int i, k;

	for (i = 0; i < cf->nsources; i++)
		for (k = 0; k < cf->sources[i].nsinks; k++)
			if (conf_sink_batches(cf->sources[i].sinks[k].type))
				n++;
	for (k = 0; k < cf->notify.nsinks; k++)
		if (conf_sink_batches(cf->notify.sinks[k].type))
			n++;
	return n;
}

/* A destination is a batching sink of a source, so the sum is known from
 * the config. */
uint64_t
conf_deliver_pool(const struct conf *cf)
{
	uint64_t per;

	per = cf->dispatch.sink_concurrency != 0 ?
	    cf->dispatch.sink_concurrency : cf->dispatch.concurrency;
	return (uint64_t)cf->dispatch.concurrency +
	    per * conf_batching_sinks(cf) + 1;
}

const char *
conf_verify_type_name(enum verify_type t)
{
	if (t >= VERIFY_NONE && t <= VERIFY_TYPE_LAST)
		return conf_verify_types[t];
	return "unknown";
}

/* A list of strings at k->off, its count at k->off2. */
static int
cstrlist_differs(const struct conf_key *k, const char *o, const char *w)
{
	char *const *a = *(char *const *const *)(const void *)(o + k->off);
	char *const *b = *(char *const *const *)(const void *)(w + k->off);
	int na = *(const int *)(const void *)(o + k->off2);
	int nb = *(const int *)(const void *)(w + k->off2);
	int i;

	if (na != nb)
		return 1;
	for (i = 0; i < na; i++)
		if (strcmp(a[i], b[i]) != 0)
			return 1;
	return 0;
}

static int
cstrlist_keep(const struct conf_key *k, const char *o, char *w)
{
	char **src = *(char **const *)(const void *)(o + k->off);
	char ***dst = (char ***)(void *)(w + k->off);
	int n = *(const int *)(const void *)(o + k->off2);
	int *dn = (int *)(void *)(w + k->off2);
	int i;

	for (i = 0; i < *dn; i++)
		free((*dst)[i]);
	free(*dst);
	*dst = NULL;
	*dn = 0;
	if ((*dst = calloc(n + 1, sizeof(**dst))) == NULL)
		return -1;
	for (i = 0; i < n; i++) {
		if (((*dst)[i] = strdup(src[i])) == NULL)
			return -1;
		(*dn)++;
	}
	return 0;
}

/* Whether restart-only key k (of struct conf) differs between o and w. */
static int
ckey_differs(const struct conf_key *k, const char *o, const char *w)
{
	const char *a, *b;

	switch (k->type) {
	case T_U16:
		return *(const uint16_t *)(const void *)(o + k->off) !=
		    *(const uint16_t *)(const void *)(w + k->off);
	case T_U32:
		return *(const uint32_t *)(const void *)(o + k->off) !=
		    *(const uint32_t *)(const void *)(w + k->off);
	case T_U64:
		return *(const uint64_t *)(const void *)(o + k->off) !=
		    *(const uint64_t *)(const void *)(w + k->off);
	case T_BOOL:
	case T_ENUM:
	case T_SECTION:		/* the section's presence */
		return *(const int *)(const void *)(o + k->off) !=
		    *(const int *)(const void *)(w + k->off);
	case T_HOSTPORTS:
		return cstrlist_differs(k, o, w);
	case T_TOKENS:
		return conf_tokens_differ(k, o, w);
	default:
		a = *(char *const *)(const void *)(o + k->off);
		b = *(char *const *)(const void *)(w + k->off);
		return (a == NULL) != (b == NULL) ||
		    (a != NULL && strcmp(a, b) != 0);
	}
}

/* Put o's value of key k (of struct conf) into w.  -1: out of memory. */
static int
ckey_keep(const struct conf_key *k, const char *o, char *w)
{
	char **dst, *const *src;

	switch (k->type) {
	case T_U16:
		memcpy(w + k->off, o + k->off, sizeof(uint16_t));
		return 0;
	case T_U32:
	case T_MODE:
		memcpy(w + k->off, o + k->off, sizeof(uint32_t));
		return 0;
	case T_U64:
		memcpy(w + k->off, o + k->off, sizeof(uint64_t));
		return 0;
	case T_FLOAT:
		memcpy(w + k->off, o + k->off, sizeof(double));
		return 0;
	case T_BOOL:
	case T_SECTION:
	case T_ENUM:
		memcpy(w + k->off, o + k->off, sizeof(int));
		return 0;
	case T_HOSTPORTS:
		return cstrlist_keep(k, o, w);
	case T_TOKENS:
		return conf_tokens_copy(k, o, w);
	case T_STR:
	case T_IDENT:
	case T_ADDR:
	case T_URL:
	case T_PREFIX:
	case T_SOCKPATH:
	case T_ENUMSTR:
		dst = (char **)(void *)(w + k->off);
		src = (char *const *)(const void *)(o + k->off);
		if (*dst != NULL)
			explicit_bzero(*dst, strlen(*dst));	/* a secret */
		free(*dst);
		*dst = NULL;
		if (*src != NULL && (*dst = strdup(*src)) == NULL)
			return -1;
		return 0;
	default:
		return 0;	/* no such key is restart-only */
	}
}

static int
conf_restart_keys(const struct conf *old, struct conf *nw, int keep,
    void (*report)(const char *, void *), void *arg)
{
	const struct conf_key *k, *j;
	const char *o = (const char *)old;
	char *w = (char *)nw;
	size_t i, m, len;
	int n = 0;

	for (i = 0; i < CONF_TAB_N; i++) {
		k = &conf_tab[i];
		if (!(k->flags & F_RESTART) || k->scope != S_CONF ||
		    !ckey_differs(k, o, w))
			continue;
		n++;
		if (report != NULL)
			report(k->name, arg);
		if (!keep)
			continue;
		if (ckey_keep(k, o, w) == -1)
			return -1;
		if (k->type != T_SECTION)
			continue;
		/* A section added or removed: all of it as it was. */
		len = strlen(k->name);
		for (m = 0; m < CONF_TAB_N; m++) {
			j = &conf_tab[m];
			if (j->scope == S_CONF && j != k &&
			    strncmp(j->name, k->name, len) == 0 &&
			    j->name[len] == '.' && ckey_keep(j, o, w) == -1)
				return -1;
		}
	}
	return n;
}

int
conf_reload_keep(const struct conf *old, struct conf *nw,
    void (*report)(const char *, void *), void *arg)
{
	int n;

	if ((n = conf_restart_keys(old, nw, 1, report, arg)) == -1)
		return -1;
	/* The tokens stay those read at start, changed or not: a reload
	 * cannot read a token_file that only root may read. */
	if (conf_tokens_copy_all(old, nw) == -1)
		return -1;
	/* The replication section's parsed addresses, of what was kept. */
	if (n > 0 && nw->repl.enabled && conf_repl_derive(&nw->repl) == -1)
		return -1;
	return n;
}

int
conf_valid_id(const char *s)
{
	size_t len = strlen(s);

	return len >= 1 && len <= CONF_ID_MAX &&
	    strspn(s, "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz"
	    "0123456789_-") == len;
}
