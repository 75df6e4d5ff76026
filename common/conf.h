/* SPDX-License-Identifier: ISC */
/*
 * conf.h: the configuration of an Ankusa node, as parsed from YAML.
 *
 * Every key is declared once, in the table in conf_keys.c (dotted name,
 * type, default, bounds, reloadable); the parser, the validator, the reload
 * check and the ankusa.yml(5) text all read that table.  conf_parse() builds a
 * struct conf from YAML text; any error leaves no struct and fills errors
 * reading "<dotted.key> must be <constraint>, got <value>" (with ", line N"
 * where libyaml knows it).  A struct conf is immutable once built: a reload
 * builds a new one and swaps.
 */
#ifndef ANKUSA_CONF_H
#define ANKUSA_CONF_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#define CONF_ID_MAX		64	/* tenant and source ids: [A-Za-z0-9_-]{1,64} */
#define CONF_CLAIM_KEY_MIN	32	/* bytes of claim_check.signing_key */
#define CONF_MAX_SECRETS	8
#define CONF_MAX_BROKERS	64	/* a kafka sink's bootstrap list */
#define CONF_MAX_SINKS		64	/* per source */
/* The most deliver processes (conf_deliver_pool); the config check
 * refuses a config that needs more (ankusa.yml(5), dispatch.concurrency). */
#define CONF_DELIVER_MAX	2048
/* The reserved tenant and source of the operational notices
 * (notifications.sinks): refused as a user's (ankusa.yml(5)). */
#define CONF_NOTIFY_TENANT	"_ankusa"
#define CONF_NOTIFY_SOURCE	"_notifications"
/* HTTP statuses a disable_on list can hold: 0..CONF_STATUS_MAX - 1. */
#define CONF_STATUS_MAX		600

enum sink_type {
	SINK_HTTP = 1,
	SINK_SQS,
	SINK_PUBSUB,
	SINK_LOG,
	/* The brokers (issue 39): named in conf_sink_types, and refused
	 * (conf_sink_refused) until this build has each. */
	SINK_RABBITMQ,
	SINK_NATS,
	SINK_REDIS,
	SINK_KAFKA,
};

enum routing {
	ROUTING_PATH = 0,
	ROUTING_TENANT_PATH,
};

enum verify_type {
	VERIFY_NONE = 0,
	VERIFY_STRIPE,
	VERIFY_GITHUB,
	VERIFY_STANDARD_WEBHOOKS,
	VERIFY_SHOPIFY,
	VERIFY_SLACK,
	VERIFY_HMAC,
	VERIFY_MTLS,	/* the client certificate of http.tls */
	VERIFY_META,	/* X-Hub-Signature-256; the hub.challenge GET */
	VERIFY_ZOOM,	/* x-zm-signature; endpoint.url_validation */
};
#define VERIFY_TYPE_LAST	VERIFY_ZOOM	/* the loops' bound */

enum verify_failure {
	VFAIL_REJECT = 0,
	VFAIL_QUARANTINE,
	VFAIL_ACCEPT_FLAG,
};

/* Where a key (dedupe, order_key) comes from. */
enum keyspec_kind {
	KEY_NONE = 0,
	KEY_HEADER,		/* name: a request header, matched without case */
	KEY_JSON,		/* name: dot path through JSON objects */
};

struct keyspec {
	enum keyspec_kind	 kind;
	char			*name;
};

struct blob {
	unsigned char	*data;
	size_t		 len;
};

#define RETRY_SCHEDULE_MAX	64	/* steps of a retry.schedule_ms */

struct retry_policy {
	uint64_t	base_ms;	/* 100 */
	uint64_t	max_ms;		/* 300000 */
	uint32_t	max_attempts;	/* 84 */
	int		jitter;		/* 1 */
	uint64_t	max_elapsed_ms;	/* 86400000 */
	/* schedule_ms: the delay after attempt n is schedule[n - 1], the
	 * last step repeating; nschedule 0: the exponential form above. */
	uint64_t	schedule[RETRY_SCHEDULE_MAX];
	int		nschedule;
};

/*
 * A bearer token of a list of them (admin.tokens, claim_check.auth.tokens;
 * common/conf_tokens.c): only the SHA-256 of the token is kept.  A
 * token_file entry has its digest once conf_tokens_read ran (ankusad,
 * before it drops root); a child gets the digest in its part of the
 * config (conf_role.c).  Tokens are matched by common/bearer.c.
 */
enum conf_token_kind {
	TOKEN_INLINE = 1,	/* token: */
	TOKEN_FILE,		/* token_file: */
	TOKEN_SHA256,		/* token_sha256: */
};

struct conf_token {
	char			*name;
	enum conf_token_kind	 kind;
	char			*file;		/* TOKEN_FILE */
	unsigned char		 digest[32];
	int			 has_digest;
	uint32_t		 scopes;	/* admin.tokens: common/scope.h */
};

struct rate_limit {
	int		set;		/* 0: unlimited */
	double		rate;		/* hooks per second */
	uint32_t	burst;
};

struct tenant_window {
	char		*tenant;	/* NULL for dispatch.tenants.default */
	uint32_t	 max_inflight;
	uint64_t	 max_inflight_bytes;
	uint32_t	 concurrency;
};

struct tenant_rate {
	char			*tenant;
	struct rate_limit	 limit;
};

struct header_kv {
	char	*name;
	char	*value;
};

struct verify_conf {
	enum verify_type	 type;
	struct blob		 secrets[CONF_MAX_SECRETS];	/* decoded keys */
	int			 nsecrets;
	uint32_t		 tolerance_seconds;		/* 300 */
	/* custom hmac descriptor (type hmac) */
	char			*signature_header;
	char			*signed_template;		/* "signed" */
	char			*hash;				/* sha256|sha512|sha1 */
	char			*encoding;			/* hex|base64 */
	char			*sig_prefix;
	char			*timestamp_header;
	char			*parse;		/* whole|csv_pairs|space_versions */
	char			*sig_key;
	char			*version;
	char			*secret_decode;	/* raw|whsec_base64 */
	/* type mtls: what the client certificate must match (NULL: any) */
	char			*mtls_subject;	/* RFC 2253 */
	char			*mtls_san;
	char			*mtls_fingerprint;	/* SHA-256, hex */
	/* type meta: what hub.verify_token must be (NULL: unset) */
	char			*verify_token;
};

struct dedupe_conf {
	int		 enabled;
	char		*preset;	/* github, standard_webhooks, svix, shopify, stripe, or NULL */
	struct keyspec	 key;		/* resolved: the preset's key or the custom one */
	uint64_t	 ttl_seconds;	/* 259200 */
};

/* An http sink's auth.type. */
enum sink_auth_type {
	SINK_AUTH_NONE = 0,
	SINK_AUTH_BEARER,
	SINK_AUTH_BASIC,
	SINK_AUTH_OAUTH2,		/* oauth2_client_credentials */
};

/* An http sink's auth: the fields of its type, NULL the others. */
struct sink_auth {
	int		 type;		/* enum sink_auth_type */
	char		*token;		/* bearer */
	char		*username;	/* basic */
	char		*password;
	char		*token_url;	/* oauth2 */
	char		*client_id;
	char		*client_secret;
	char		*scope;		/* NULL: none sent */
	char		*audience;
	int		 client_post;	/* the client's credentials in
					 * the form, else HTTP basic */
};

/* An http sink's tls: the files as written, and their PEM text, which
 * the master reads when it parses the configuration (the deliver
 * process, sandboxed, opens no file). */
struct sink_tls {
	char		*client_cert_file;
	char		*client_key_file;
	char		*ca_file;
	char		*server_name;	/* NULL: the URL's host */
	char		*client_cert;	/* PEM, or NULL */
	char		*client_key;
	char		*ca;
};

/* A sink's proxy, beside egress.proxy and egress.no_proxy. */
enum sink_proxy_mode {
	SINK_PROXY_INHERIT = 0,		/* absent: egress.proxy's */
	SINK_PROXY_NONE,		/* null or "": none, not even
					 * egress.proxy's or the
					 * environment's */
	SINK_PROXY_URL,			/* its own, whatever no_proxy
					 * says */
};

struct sink_conf {
	enum sink_type	 type;
	int		 ordered;
	struct keyspec	 order_key;	/* KEY_NONE: one lane per sink */
	uint64_t	 timeout_ms;	/* http, sqs, pubsub: 5000 */
	uint64_t	 inline_max_bytes;	/* sqs, pubsub: 65536 */
	uint64_t	 max_message_bytes;	/* sqs 1048576, pubsub 10000000,
						 * kafka's max_record_bytes
						 * 1000000 */
	/* rate: the sink key's token bucket (daemon/dispatch/bucket.h);
	 * per_second 0: none; burst 0: max(1, ceil(per_second)). */
	double		 rate_per_second;
	uint32_t	 rate_burst;
	/* retry: its own policy, over its source's (has_retry 0: the
	 * source's) */
	int		 has_retry;
	struct retry_policy retry;
	int		 proxy_mode;	/* enum sink_proxy_mode */
	char		*proxy;		/* SINK_PROXY_URL's URL */
	/* filter (workers/filter.h): at most one of the two; neither: every
	 * hook */
	char		**filter_types;	/* event_types: names, "prefix*" */
	int		 nfilter_types;
	char		*filter_jq;	/* jq: the program's text */
	/* disable_on: the statuses that disable the sink key, a bit each;
	 * disable_on_set 0: the key is absent, [410] stands. */
	uint64_t	 disable_on[(CONF_STATUS_MAX + 63) / 64];
	int		 disable_on_set;
	uint64_t	 disable_after_s;	/* 0: off */
	union {
		struct {
			char		*url;
			char		*method;	/* post|put|patch */
			struct header_kv *headers;
			int		 nheaders;
			struct blob	 secrets[CONF_MAX_SECRETS];
			int		 nsecrets;
			uint64_t	 max_response_bytes;	/* 65536 */
			struct sink_auth auth;
			struct sink_tls	 tls;
		} http;
		struct {
			char	*queue_url;
			char	*region;
			char	*endpoint;
			char	*message_group_id;
			char	*access_key_id;
			char	*secret_access_key;
			char	*session_token;
		} sqs;
		struct {
			char	*project;
			char	*topic;
			char	*endpoint;
			char	*ordering_key;
			char	*auth;		/* metadata|token|none */
			char	*token;
		} pubsub;
		struct {
			char		*url;	/* redis:// or rediss:// */
			char		*channel;	/* PUBLISH, or */
			char		*stream;	/* XADD */
			uint64_t	 maxlen;	/* 0: none */
			struct sink_tls	 tls;	/* rediss:// */
		} redis;
		struct {
			char		**servers;	/* as written */
			int		 nservers;
			char		*urls;		/* servers joined by
							 * ',' (conf_sinknet.c):
							 * what a job carries */
			char		*subject;
			uint64_t	 publish_timeout_ms;	/* 5000 */
			/* auth: one of the three (the check) */
			char		*username;
			char		*password;
			char		*token;
			char		*nkey_seed;
			char		*jwt;
			int		 tls_on;	/* tls set, or a tls://
							 * server */
			struct sink_tls	 tls;
		} nats;
		struct {
			char	*url;		/* amqp[s]:// (amqpurl.h) */
			char	*exchange;
			char	*exchange_type;	/* topic|direct|fanout|headers */
			char	*routing_key;	/* NULL: tenant.source */
			uint32_t max_inflight;	/* unconfirmed publishes: 256 */
		} rabbitmq;
		struct {
			char	**brokers;	/* host:port, as written */
			int	 nbrokers;
			char	*topic;
			char	*key;		/* NULL: tenant/source */
			int	 ssl;
			char	*sasl_mechanism;	/* plain|scram_sha_256|
							 * scram_sha_512, or
							 * NULL: none */
			char	*sasl_username;
			char	*sasl_password;
		} kafka;
	} u;
};

struct conf_hostport {
	char		*host;
	unsigned	 port;
};

/* The replication section (absent: enabled 0, a single node). */
struct conf_repl {
	int			 enabled;
	char			*local;		/* as written */
	char			**peer_list;	/* as written */
	int			 npeer_list;
	char			*local_host;	/* parsed (conf_check_repl) */
	unsigned		 local_port;
	struct conf_hostport	*peers;
	size_t			 npeers;
	unsigned		 priority;
	int			 create;
	int			 ack_all;	/* ack_policy all, else quorum */
	unsigned		 ack_timeout_ms;
	unsigned		 heartbeat_ms;
	unsigned		 heartbeat_timeout_ms;
	int			 insecure_public;	/* a public local */
};

struct source_conf {
	char			*id;
	char			*tenant;	/* NULL: not tenant-bound ("default") */
	int			 trust_url_tenant;
	struct verify_conf	 verify;
	enum verify_failure	 on_verify_failure;
	struct dedupe_conf	 dedupe;
	char			**forward_headers;	/* NULL: the default exclusion list */
	int			 nforward_headers;
	int			 has_retry;
	struct retry_policy	 retry;		/* effective: dispatch.retry overlaid */
	struct sink_conf	*sinks;
	int			 nsinks;
	struct keyspec		 event_type;	/* KEY_NONE: the preset's
						 * (workers/evtype.h) */
};

/* http.tls.min_version */
enum conf_tls_version {
	CONF_TLS_1_2 = 0,
	CONF_TLS_1_3,
};

struct conf {
	char		*data_dir;
	char		*user;			/* node.user; NULL: unset */
	char		*child_user;		/* node.child_user; NULL: unset */
	char		*secret_inline;		/* the first secret key whose
						 * value the file itself holds
						 * (no ${...}); NULL: none */
	char		*log_level;		/* error|warning|info|debug */
	char		*log_format;		/* text|json */
	char		*log_deliveries;	/* all|failures|none */

	struct {
		char		*ip;
		uint16_t	 port;
		uint64_t	 max_body_bytes;
		enum routing	 routing;
		char		*prefix;	/* "" for no prefix */
		uint32_t	 workers;
		uint64_t	 header_timeout_ms;	/* a whole head */
		uint64_t	 min_body_rate;		/* bytes/s, after grace */
		uint32_t	 max_conns_per_ip;	/* per edge */
		uint64_t	 max_buffered_bytes;	/* per edge */
		uint64_t	 max_buffered_bytes_per_ip; /* per edge */
		uint32_t	 ipv6_prefix;		/* bits of a client */
		char		**trusted_proxies;	/* as written */
		int		  ntrusted_proxies;
		struct {
			char		*ip;
			uint16_t	 port;
			char		*cert_file;	/* NULL: no TLS */
			char		*key_file;
			int		 min_version;	/* CONF_TLS_1_* */
			char		*ciphers;	/* NULL: OpenSSL's */
			char		*client_ca_file;
		} tls;
		uint64_t	 jq_timeout_ms;	/* a jq filter's CPU budget */
		uint64_t	 jq_max_memory_bytes; /* and its memory's */
	} http;

	struct {
		int		 enabled;
		char		*ip;
		uint16_t	 port;
		uint64_t	 gauge_interval_ms;	/* accepted, unused */
		uint64_t	 audit_max_age_s;	/* the trail's prune */
		struct conf_token *tokens;	/* admin.tokens */
		int		 ntokens;
		int		 metrics_public;
		char		**hosts;	/* more names for Host */
		int		 nhosts;
		uint32_t	 max_conns;
		uint64_t	 head_timeout_ms;
		uint64_t	 body_timeout_ms;
	} admin;

	struct {
		char		*socket;
		uint32_t	 mode;
		char		*group;		/* NULL: root only */
	} control;

	struct rate_limit	 rate_default;
	struct tenant_rate	*rate_tenants;
	int			 nrate_tenants;

	struct {
		uint32_t	 partitions;	/* accepted, unused: one writer */
		uint32_t	 max_batch;
		uint64_t	 max_delay_ms;
		uint32_t	 max_queue;
		uint64_t	 max_queue_bytes;
	} batcher;

	struct {
		uint32_t		 batch;
		uint32_t		 concurrency;
		uint32_t		 max_inflight;
		uint64_t		 max_inflight_bytes;
		uint64_t		 attempt_timeout_ms;
		uint32_t		 sink_concurrency;	/* 0: only the global cap */
		uint32_t		 breaker_failures;
		uint64_t		 breaker_open_ms;
		uint64_t		 breaker_max_open_ms;
		struct tenant_window	 tenant_default;
		struct tenant_window	*tenants;
		int			 ntenants;
		struct retry_policy	 retry;
	} dispatch;

	struct {
		uint32_t	 capture_bytes;	/* 0: none */
		uint32_t	 max_per_row;	/* a round's; 0: no log */
	} attempts;

	struct {
		uint64_t	 attempts_s;	/* after the hook went */
		uint64_t	 delivered_s;	/* delivered hooks kept
						 * (admin_archive.c); 0: a hook
						 * goes at its last row */
		uint64_t	 max_bytes;	/* the archive's cap, 0: none */
	} retention;

	struct {
		int		 enabled;	/* the section is present */
		char		*ip;
		uint16_t	 port;
		uint64_t	 pack_max_bytes;
		uint32_t	 retention_days;	/* 0: keep */
		char		*store_type;	/* local|s3 */
		char		*root;
		char		*s3_bucket;
		char		*s3_region;
		char		*s3_endpoint;
		char		*s3_access_key_id;
		char		*s3_secret_access_key;
		char		*s3_session_token;
		char		*signing_key;	/* signs the references */
		uint64_t	 ref_ttl_s;	/* a reference's lifetime */
		int		 accept_v1;	/* read unsigned v1 refs */
		struct conf_token *tokens;	/* auth.tokens; none: open */
		int		 ntokens;
	} claim_check;

	struct conf_repl	 repl;		/* replication */

	/* The egress guard (common/netaddr.h, workers/egress.c). */
	struct {
		char		**allow;	/* egress.allow, as written */
		int		  nallow;
		int		  allow_plain_http;
		char		 *proxy;	/* egress.proxy, or NULL */
		char		**no_proxy;	/* egress.no_proxy */
		int		  nno_proxy;
	} egress;

	struct source_conf	*sources;
	int			 nsources;
	/* notifications.sinks: the sinks of the reserved source
	 * CONF_NOTIFY_SOURCE (tenant CONF_NOTIFY_TENANT), which conf_source
	 * finds by its id; nsinks 0: no notices. */
	struct source_conf	 notify;
	int			 nsinks;	/* over all sources */

	/* Dead letters' upkeep (daemon/admin/admin_dlq.c). */
	struct {
		uint64_t	 max_age_s;	/* 0 (null): kept */
		uint64_t	 warn_rows;	/* 0 (null): no warning */
	} dlq;

	/* The pen for hooks that fail verification under on_verify_failure:
	 * quarantine; one token bucket per source. */
	struct {
		uint32_t	 burst;		/* 100 */
		double		 rate;		/* 20 per second */
		uint64_t	 max_bytes;	/* 1073741824 */
	} quarantine;

	/* The environment variables the parse read that are set, NULL
	 * terminated (never NULL itself): the ${VAR} of the text and the
	 * ANKUSA_* overrides.  A child's parse (conf_parse_role) reads
	 * those of its part only, so they are what its environment needs
	 * to parse its text as the master did (daemon/childenv.c). */
	char			**env_read;
};

struct conf_errors {
	char	**msgs;
	int	  n;
};

/* Parse YAML text.  NULL on error, with errors filled. name is used in
 * messages only. */
struct conf	*conf_parse(const char *text, size_t len, const char *name,
		    struct conf_errors *);
/* The children's texts (conf_role.c): what each kind of child needs of
 * the config, and nothing else. */
enum conf_role {
	CONF_ROLE_EDGE,		/* http, log, the sources with their
				 * verification; each sink only its lane
				 * options and filter, as a log sink */
	CONF_ROLE_DELIVER,	/* log, node.data_dir, claim_check, egress
				 * (every job brings its sink's options) */
	CONF_ROLE_GATEWAY,	/* the same: the claim store */
	CONF_ROLE_MAX
};
/* The text a child of role gets, built from the master's text (which
 * conf_parse accepted); NULL (and an error) on failure.  The ${VAR}
 * references stay as written. */
char		*conf_role_text(const char *text, size_t len, enum conf_role,
		    size_t *lenp, struct conf_errors *);
/* The same, each token_file of a list of tokens in the part replaced by
 * token_sha256, the digest cf read from it (conf_tokens_read): so that a
 * child running as node.user needs no access to the file.  An entry is
 * found by its name as written; one cf has no digest for stays as it
 * is. */
char		*conf_role_text_tokens(const char *text, size_t len,
		    enum conf_role, const struct conf *cf, size_t *lenp,
		    struct conf_errors *);
/* Parse a child's text (conf_parse's rules; only an edge's text must
 * have sources; an ANKUSA_* override applies only to a key of its
 * part). */
struct conf	*conf_parse_role(const char *text, size_t len, enum conf_role,
		    struct conf_errors *);
/* Read a file; on success *textp (malloc'd) holds its bytes so the master
 * can pass exactly what it parsed to its children. */
struct conf	*conf_load(const char *path, char **textp, size_t *lenp,
		    struct conf_errors *);
const char	*conf_default_text(void);	/* the embedded default */
void		 conf_free(struct conf *);
void		 conf_errors_free(struct conf_errors *);

const struct source_conf *conf_source(const struct conf *, const char *id);
const struct tenant_window *conf_tenant_window(const struct conf *,
		    const char *tenant);
const struct rate_limit *conf_rate_limit(const struct conf *,
		    const char *tenant);
const char	*conf_sink_type_name(enum sink_type);
/* 1 when an answer of this HTTP status disables the sink key (its
 * disable_on, default [410]). */
int		 conf_disable_status(const struct sink_conf *, uint32_t status);
/* 1 for a sink type that sends the contracts' v1 queue message (its
 * inline_max_bytes, the claim check above it): sqs, google_pubsub and
 * the brokers, the same types as conf_sink_batches. */
int		 conf_sink_queue(enum sink_type);
/* 1 for a sink type whose attempts go through the batcher (a batch per
 * request): sqs, google_pubsub, rabbitmq, nats, redis, kafka. */
int		 conf_sink_batches(enum sink_type);
/* The sinks of every source that batch (conf_sink_batches). */
uint32_t	 conf_batching_sinks(const struct conf *);
/* The deliver processes cf needs (docs/ARCHITECTURE): dispatch.concurrency for
 * single attempts, plus the batch requests every batching sink may have
 * in flight (sink_concurrency each, or concurrency when it is null), plus
 * one for claim-check uploads. */
uint64_t	 conf_deliver_pool(const struct conf *);
const char	*conf_verify_type_name(enum verify_type);
/* A nats sink's server as servers holds it: nats://host:port,
 * tls://host:port or host:port (conf_sinknet.c).  The host (a v6
 * address without its brackets) into host, the port (4222 when absent)
 * and *tls (the tls:// scheme); 0, or -1 for anything else (a user or
 * path part, an empty host, a bad port). */
int		 conf_nats_server(const char *s, char *host, size_t hostsz,
		    uint16_t *port, int *tls);

/* Report every key that differs between old and new and cannot change
 * without a restart (report(key, arg) for each), and each such key of nw
 * takes old's value (a section added or removed: the whole section as it
 * was), so that nw can be swapped in and the restart-only keys stay as
 * they are until a restart (ankusad(8),
 * SIGNALS).  The count, or -1 when out of
 * memory (nw is then to be freed). */
int		 conf_reload_keep(const struct conf *old, struct conf *nw,
		    void (*report)(const char *key, void *), void *arg);

/* Read the token_file of every list of tokens whose section is enabled
 * (ankusad, as root): 0, or -1 with err naming the key. */
int		 conf_tokens_read(struct conf *, char *err, size_t errlen);
/* The digests read from token files, in a memfd for an exec of ankusad by
 * itself (-1: none, or no memfd), and taken back from it by the new
 * image's configuration (for the entries of the same files). */
int		 conf_tokens_save(const struct conf *);
void		 conf_tokens_restore(struct conf *, int fd);
/* The digest of list's entry name read from its token_file, or NULL
 * (list: a key's name, e.g. "claim_check.auth.tokens"). */
const unsigned char *conf_tokens_digest(const struct conf *, const char *list,
		    const char *name);

/* Write the key reference (ankusa.yml(5) body, man format) from the table. */
void		 conf_write_manual(FILE *);

/* True if s is a valid tenant or source id. */
int		 conf_valid_id(const char *s);

/* The whole ankusa.yml(5) page: header, description, the key reference of
 * conf_write_manual() and an example.  The page the build makes from
 * daemon/ankusa.yml.5.in (make update-man) is its output. */
void		 conf_write_manpage(FILE *);

#endif
