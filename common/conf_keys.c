/* SPDX-License-Identifier: ISC */
/*
 * conf_keys.c: the configuration key table, the reference of every key.
 *
 * Every key is declared once, in conf_tab[] below: its dotted name pattern
 * ("*" stands for an id, "[]" for a list element), its type, where it is
 * stored, its default (as YAML text, run through the same setter as a value
 * from the file), its bounds, whether a reload can change it, and a line of
 * documentation.  The walker, the validator, conf_reload_keep() and
 * conf_write_manual() all read that table; nothing else knows key names,
 * except the cross checks, which name the keys they relate.  The order of
 * the table is the order of ankusa.yml(5).  The types (T_*), scopes (S_*)
 * and flags (F_*) of an entry are explained in conf_int.h.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>

#include "conf.h"
#include "conf_int.h"

static const char *const log_levels[] = {
	"error", "warning", "info", "debug", NULL
};
static const char *const log_formats[] = { "text", "json", NULL };
static const char *const log_delivery_sets[] = {
	"all", "failures", "none", NULL
};
static const char *const routings[] = { "path", "tenant_path", NULL };
static const char *const tls_versions[] = { "1.2", "1.3", NULL };
const char *const conf_verify_types[] = {
	"none", "stripe", "github", "standard_webhooks", "shopify", "slack",
	"hmac", "mtls", "meta", "zoom", NULL
};
static const char *const vfails[] = {
	"reject", "quarantine", "accept_flag", NULL
};
const char *const conf_presets[] = {
	"github", "standard_webhooks", "svix", "shopify", "stripe", NULL
};
static const char *const hashes[] = { "sha256", "sha512", "sha1", NULL };
static const char *const encodings[] = { "hex", "base64", NULL };
static const char *const parses[] = {
	"whole", "csv_pairs", "space_versions", NULL
};
static const char *const decodes[] = { "raw", "whsec_base64", NULL };
static const char *const methods[] = { "post", "put", "patch", NULL };
static const char *const auths[] = { "metadata", "token", "none", NULL };
/* Indexed by enum sink_auth_type. */
static const char *const auth_types[] = {
	"none", "bearer", "basic", "oauth2_client_credentials", NULL
};
static const char *const client_auths[] = { "basic", "post", NULL };
static const char *const store_types[] = { "local", "s3", NULL };
static const char *const ack_policies[] = { "quorum", "all", NULL };
static const char *const store_refused[] = { "gcs", NULL };
/* The keys accepted at the one value this daemon runs with (T_ONLY). */
static const char *const wal_types[] = { "disk", NULL };
static const char *const wal_refused[] = { "none", "postgres", NULL };
static const char *const source_stores[] = { "static", NULL };
static const char *const source_stores_refused[] = {
	"persistent", "redis", NULL
};
/* Indexed by enum sink_type - 1. */
const char *const conf_sink_types[] = {
	"http", "sqs", "google_pubsub", "log", "rabbitmq", "nats", "redis",
	"kafka", NULL
};
/* Sink types of the Elixir Ankusa that this build does not have (a
 * name here is skipped in conf_sink_types: conf_name_refused). */
const char *const conf_sink_refused[] = {
	NULL
};
static const char *const exchange_types[] = {
	"topic", "direct", "fanout", "headers", NULL
};
static const char *const sasl_mechanisms[] = {
	"plain", "scram_sha_256", "scram_sha_512", NULL
};

/* The key each dedupe preset reads; indexed like conf_presets[]. */
const struct cpreset_key conf_preset_keys[] = {
	{ KEY_HEADER, "x-github-delivery" },
	{ KEY_HEADER, "webhook-id" },
	{ KEY_HEADER, "svix-id" },
	{ KEY_HEADER, "x-shopify-webhook-id" },
	{ KEY_JSON, "id" },
};

/* The hmac descriptor keys, only valid with verify.type hmac. */
const char *const conf_hmac_keys[] = {
	"signature_header", "signed", "hash", "encoding", "sig_prefix",
	"timestamp_header", "parse", "sig_key", "version", "secret_decode",
	NULL
};
const char *const conf_mtls_keys[] = { "subject", "san", "fingerprint", NULL };

#define CO(f)	offsetof(struct conf, f)
#define SO(f)	offsetof(struct source_conf, f)
#define KO(f)	offsetof(struct sink_conf, f)
#define TO(f)	offsetof(struct tenant_window, f)
#define RO(f)	offsetof(struct rate_limit, f)

#define MS_DAY		86400000ULL
#define GIB		1073741824ULL
#define TIB		1099511627776ULL

const struct conf_key conf_tab[] = {
	/* node */
	{ .name = "node", .type = T_SECTION,
	  .doc = "This node." },
	{ .name = "node.roles", .type = T_ROLES,
	  .doc = "The roles of this node, from edge, dispatch, storage and "
	    "claim_check: this build runs every role in one node, so the "
	    "list must name edge, dispatch and storage (claim_check is "
	    "optional: the claim gateway listens when claim_check is "
	    "configured).  Accepted for the Elixir Ankusa's files." },
	{ .name = "node.data_dir", .type = T_STR, .scope = S_CONF,
	  .off = CO(data_dir), .def = ANKUSA_DATADIR, .flags = F_RESTART,
	  .doc = "The directory of the store (Berkeley DB's tables and "
	    "log; its region files, rebuilt at every start, go to a private "
	    "directory under /dev/shm), its lock file and, by default, "
	    "local claims." },

	{ .name = "node.user", .type = T_STR, .scope = S_CONF,
	  .off = CO(user), .flags = F_RESTART,
	  .doc = "The user every process runs as (see SECURITY in "
	    "ankusad(8)).  Started as root, ankusad opens its listeners, its "
	    "control socket and the store, then runs as this user (ankusa "
	    "when the key is unset), with its groups; its children run as "
	    "it from their start.  A user that does not exist is an error "
	    "(exit 78).  Started as any other user, ankusad runs as that "
	    "user: the key must then be unset or name that user." },
	{ .name = "node.child_user", .type = T_STR, .scope = S_CONF,
	  .off = CO(child_user), .flags = F_RESTART,
	  .doc = "The user the children (edges, deliver processes, claim "
	    "gateways) run as, ankusa-child when the key is unset (see "
	    "SECURITY in ankusad(8)): another user than node.user, with a "
	    "group of its own, so that a child can neither signal the "
	    "master, nor connect to its control socket, nor read the "
	    "config or the store.  A user that does not exist, root, or "
	    "one with node.user's group is an error (exit 78); node.user "
	    "itself is a warning.  Only a start as root can use it: "
	    "started as another user, ankusad's children run as that user, "
	    "with a warning." },

	/* log */
	{ .name = "log", .type = T_SECTION, .doc = "Logging." },
	{ .name = "log.level", .type = T_ENUMSTR, .scope = S_CONF,
	  .off = CO(log_level), .def = "info", .names = log_levels,
	  .doc = "The least severe level logged." },
	{ .name = "log.format", .type = T_ENUMSTR, .scope = S_CONF,
	  .off = CO(log_format), .def = "text", .names = log_formats,
	  .flags = F_RESTART,
	  .doc = "How every line of every process is written: text (a date, "
	    "the process, the level, the text) or json (one JSON object a "
	    "line: time, level, process, pid and msg, or a delivery line's "
	    "fields; see LOGGING in ankusad(8)).  Not changed by a reload, "
	    "so that one stream never mixes the two." },
	{ .name = "log.deliveries", .type = T_ENUMSTR, .scope = S_CONF,
	  .off = CO(log_deliveries), .def = "all", .names = log_delivery_sets,
	  .doc = "Which delivery lines the master writes (ankusad(8), "
	    "DELIVERY LOG LINES): all (each attempt's outcome and each "
	    "delivered hook), failures (deferred, bounced and expired only: "
	    "a busy node's successes left out), or none." },

	/* http */
	{ .name = "http", .type = T_SECTION,
	  .doc = "The ingest listener (see ankusad(8))." },
	{ .name = "http.ip", .type = T_ADDR, .scope = S_CONF,
	  .off = CO(http.ip), .def = "0.0.0.0", .flags = F_RESTART,
	  .doc = "The address the ingest listener binds." },
	{ .name = "http.port", .type = T_U16, .scope = S_CONF,
	  .off = CO(http.port), .def = "4000", .max = 65535,
	  .flags = F_RESTART,
	  .doc = "The ingest listener's TCP port." },
	{ .name = "http.max_body_bytes", .type = T_U64, .scope = S_CONF,
	  .off = CO(http.max_body_bytes), .def = "8000000", .min = 1,
	  .max = GIB,
	  .doc = "The largest request body accepted; a larger one is "
	    "answered 413." },
	{ .name = "http.routing", .type = T_ENUM, .scope = S_CONF,
	  .off = CO(http.routing), .def = "path", .names = routings,
	  .doc = "path: POST {prefix}/{source_id}; tenant_path: POST "
	    "{prefix}/{tenant_id}/{source_id}, the tenant taken from the "
	    "URL." },
	{ .name = "http.prefix", .type = T_PREFIX, .scope = S_CONF,
	  .off = CO(http.prefix), .def = "/webhooks",
	  .doc = "The path segments before the ids; \"/\" means none.  It "
	    "starts with a slash and, unless it is \"/\", does not end with "
	    "one." },
	{ .name = "http.workers", .type = T_U32, .scope = S_CONF,
	  .off = CO(http.workers), .def = "2", .min = 1, .max = 64,
	  .doc = "The number of ankusa-edge processes." },
	{ .name = "http.header_timeout_ms", .type = T_U64, .scope = S_CONF,
	  .off = CO(http.header_timeout_ms), .def = "10000", .min = 1,
	  .max = 3600000,
	  .doc = "The time a whole request head has to arrive, in total, "
	    "however it trickles: from the request's first byte (from the "
	    "accept for a connection's first request).  Past it the request "
	    "is answered 408 and the connection closed (a connection that "
	    "sent nothing is just closed).  The wait between the requests "
	    "of a keep-alive connection is not counted: an idle connection "
	    "is closed after 60 s." },
	{ .name = "http.min_body_rate", .type = T_U64, .scope = S_CONF,
	  .off = CO(http.min_body_rate), .def = "1024", .min = 1, .max = GIB,
	  .doc = "The slowest a request body may arrive, in bytes a second "
	    "averaged from 10 s after the end of the head: a body of which "
	    "fewer than rate x (t - 10 s) bytes have arrived t seconds "
	    "after its head is answered 408 and the connection closed.  A "
	    "body that stalls 60 s is cut the same way, whatever its "
	    "average." },
	{ .name = "http.max_conns_per_ip", .type = T_U32, .scope = S_CONF,
	  .off = CO(http.max_conns_per_ip), .def = "256", .min = 1,
	  .max = 4096,
	  .doc = "The most connections one client address may hold on each "
	    "ankusa-edge process (IPv6 by http.ipv6_prefix, IPv4-mapped as "
	    "IPv4); a connection past it is closed as it is accepted, "
	    "counted in ankusa_ingest_refused_total{reason=\"conns_per_ip\"} "
	    "and logged, at most once a second.  An edge holds 4096 "
	    "connections in all." },
	{ .name = "http.max_buffered_bytes", .type = T_U64, .scope = S_CONF,
	  .off = CO(http.max_buffered_bytes), .def = "268435456", .min = 1,
	  .max = 64 * GIB,
	  .doc = "The bytes of request bodies each ankusa-edge process may "
	    "hold: the bytes of bodies being read, counted as they arrive "
	    "(what a Content-Length only announces is not counted), and "
	    "bodies the master has not answered yet.  A request whose bytes "
	    "would take the edge past it is answered 503 overload with "
	    "Retry-After: 1 and the connection closed; a body larger than "
	    "the bound alone is taken only when the edge holds no other." },
	{ .name = "http.max_buffered_bytes_per_ip", .type = T_U64,
	  .scope = S_CONF, .off = CO(http.max_buffered_bytes_per_ip),
	  .def = "67108864", .min = 1, .max = 64 * GIB,
	  .doc = "The part of http.max_buffered_bytes that the requests of "
	    "one client address may hold on each ankusa-edge process, "
	    "counted as the bytes arrive: a request whose bytes would take "
	    "its address past it is answered 503 overload, so that one "
	    "address cannot fill the edge and make others wait or be "
	    "refused.  One request that holds all its address's bytes may go "
	    "past it (a body larger than the bound)." },
	{ .name = "http.ipv6_prefix", .type = T_U32, .scope = S_CONF,
	  .off = CO(http.ipv6_prefix), .def = "64", .min = 16, .max = 128,
	  .doc = "The leading bits of an IPv6 client address that make one "
	    "client for http.max_conns_per_ip and "
	    "http.max_buffered_bytes_per_ip: a /64 by default, since one "
	    "host is given a whole /64 as easily as one address; 128 counts "
	    "each address.  IPv4 addresses (and IPv4-mapped ones) count "
	    "whole." },
	{ .name = "http.trusted_proxies", .type = T_CIDRS, .scope = S_CONF,
	  .off = CO(http.trusted_proxies), .off2 = CO(http.ntrusted_proxies),
	  .doc = "The proxies (addresses or CIDRs, v4 or v6, without a port) "
	    "whose connections begin with a PROXY protocol header, version 1 "
	    "or 2 (HAProxy's send-proxy and send-proxy-v2): the client "
	    "address it carries is the one the limits and the logs use.  A "
	    "connection from such an address without a valid header, and a "
	    "connection from any other address that begins with one, is "
	    "closed, counted in ankusa_ingest_refused_total "
	    "(proxy_missing, proxy_untrusted) and logged, at most once a "
	    "second.  Empty (the default): no connection may send one." },
	{ .name = "http.tls", .type = T_SECTION,
	  .doc = "A second ingest listener that speaks HTTPS, served by the "
	    "same ankusa-edge processes beside the plain one (http.ip, "
	    "http.port); it is opened when cert_file is set.  The master "
	    "reads the files at start, before it drops its privileges, and "
	    "at each reload, as node.user (make them readable to it), and "
	    "hands their bytes to the edges: a reload puts a new "
	    "certificate in force for new connections.  See ankusad(8), "
	    "SECURITY." },
	{ .name = "http.tls.ip", .type = T_ADDR, .scope = S_CONF,
	  .off = CO(http.tls.ip), .def = "0.0.0.0", .flags = F_RESTART,
	  .doc = "The address the TLS listener binds." },
	{ .name = "http.tls.port", .type = T_U16, .scope = S_CONF,
	  .off = CO(http.tls.port), .def = "4443", .min = 1, .max = 65535,
	  .flags = F_RESTART,
	  .doc = "The TLS listener's TCP port." },
	{ .name = "http.tls.cert_file", .type = T_STR, .scope = S_CONF,
	  .off = CO(http.tls.cert_file), .flags = F_RESTART,
	  .doc = "The certificate, PEM, followed by its chain; setting it "
	    "opens the TLS listener (a restart), a change of its contents "
	    "needs a reload only." },
	{ .name = "http.tls.key_file", .type = T_STR, .scope = S_CONF,
	  .off = CO(http.tls.key_file),
	  .doc = "The certificate's private key, PEM, unencrypted; required "
	    "with cert_file." },
	{ .name = "http.tls.min_version", .type = T_ENUM, .scope = S_CONF,
	  .off = CO(http.tls.min_version), .def = "1.2", .names = tls_versions,
	  .doc = "The oldest TLS version a client may speak: 1.2 or 1.3.  "
	    "TLS 1.1, 1.0 and SSL are never spoken." },
	{ .name = "http.tls.ciphers", .type = T_STR, .scope = S_CONF,
	  .off = CO(http.tls.ciphers),
	  .doc = "The TLS 1.2 cipher list, in OpenSSL's syntax; unset: "
	    "OpenSSL's default.  TLS 1.3's suites are OpenSSL's." },
	{ .name = "http.tls.client_ca_file", .type = T_STR, .scope = S_CONF,
	  .off = CO(http.tls.client_ca_file),
	  .doc = "The CA certificates, PEM, that client certificates are "
	    "checked against; set, a client is asked for a certificate and "
	    "one that does not verify fails the handshake, and a client that "
	    "sends none is still served.  Unset: no client certificate is "
	    "asked for." },
	{ .name = "http.jq_timeout_ms", .type = T_U64, .scope = S_CONF,
	  .off = CO(http.jq_timeout_ms), .def = "50", .min = 1, .max = 1000,
	  .doc = "The CPU time one evaluation of a sink's jq filter may "
	    "take (its budget; see FILTERS in ankusad(8)): past it the "
	    "kernel kills the edge's evaluator process, the hook counts as "
	    "a match and a fresh evaluator takes the next one.  An edge "
	    "waits at most four times this and 200 ms more by the clock." },
	{ .name = "http.jq_max_memory_bytes", .type = T_U64, .scope = S_CONF,
	  .off = CO(http.jq_max_memory_bytes), .def = "67108864",
	  .min = 1048576, .max = GIB,
	  .doc = "The memory one evaluation of a sink's jq filter may hold "
	    "(its parsed body, its values and its stack; RLIMIT_DATA of the "
	    "evaluator process): past it the evaluator is killed, the hook "
	    "counts as a match and a fresh evaluator takes the next one." },

	/* admin */
	{ .name = "admin", .type = T_SECTION,
	  .doc = "The admin API: health, metrics, configuration, dead "
	    "letters, replays.  Its routes need a token (admin.tokens) "
	    "with their scope, but /health and /ready." },
	{ .name = "admin.enabled", .type = T_BOOL, .scope = S_CONF,
	  .off = CO(admin.enabled), .def = "true", .flags = F_RESTART,
	  .doc = "Whether the admin listener is opened." },
	{ .name = "admin.ip", .type = T_ADDR, .scope = S_CONF,
	  .off = CO(admin.ip), .def = "127.0.0.1", .flags = F_RESTART,
	  .doc = "The address the admin listener binds." },
	{ .name = "admin.port", .type = T_U16, .scope = S_CONF,
	  .off = CO(admin.port), .def = "4002", .max = 65535,
	  .flags = F_RESTART,
	  .doc = "The admin listener's TCP port." },
	{ .name = "admin.gauge_interval_ms", .type = T_U64, .scope = S_CONF,
	  .off = CO(admin.gauge_interval_ms), .def = "15000", .min = 1,
	  .max = MS_DAY,
	  .doc = "Accepted for the Elixir Ankusa's files, and without "
	    "effect: the gauges of /metrics are read from counters the "
	    "store keeps, at each scrape, not sampled." },
	{ .name = "admin.audit", .type = T_SECTION,
	  .doc = "The audit trail: every change made through the admin API "
	    "or the control socket, kept in the store (GET /v1/audit, "
	    "ankusactl audit)." },
	{ .name = "admin.audit.max_age_s", .type = T_U64, .scope = S_CONF,
	  .off = CO(admin.audit_max_age_s), .def = "7776000", .min = 1,
	  .max = 3153600000ULL,
	  .doc = "How long an audit entry is kept, in seconds (90 days); "
	    "older ones are pruned in bounded steps after each "
	    "checkpoint." },

	{ .name = "admin.tokens", .type = T_TOKENS, .scope = S_CONF,
	  .off = CO(admin.tokens), .off2 = CO(admin.ntokens),
	  .flags = F_RESTART | F_SCOPES,
	  .doc = "The admin API's credentials: a list of {name, token | "
	    "token_file | token_sha256, scopes}.  A request carries one as "
	    "Authorization: Bearer <token>.  name (an id, unique) is the "
	    "actor the audit trail records; exactly one of token (the "
	    "token), token_file (an absolute path to a file whose first "
	    "line is the token, read at start before ankusad leaves root) "
	    "and token_sha256 (the SHA-256 of the token, 64 hex digits) "
	    "gives the token; scopes lists what it may do (ADMIN API in "
	    "ankusad(8) names the scope of each route; \"*\" is every "
	    "one).  Only SHA-256 digests are kept in memory.  With no token, "
	    "the listener serves only a loopback admin.ip, unauthenticated "
	    "as before, with a warning at start." },
	{ .name = "admin.metrics_public", .type = T_BOOL, .scope = S_CONF,
	  .off = CO(admin.metrics_public), .def = "false",
	  .doc = "Whether GET /metrics is served without a token; else it "
	    "needs the scope metrics:read." },
	{ .name = "admin.hosts", .type = T_HOSTPORTS, .scope = S_CONF,
	  .off = CO(admin.hosts), .off2 = CO(admin.nhosts),
	  .doc = "More names a request's Host may give (a name, or "
	    "name:port), besides admin.ip with admin.port and localhost: "
	    "the names a proxy or a load balancer reaches the listener "
	    "by.  Any other Host, and an Origin that does not match the "
	    "Host, is refused 403." },
	{ .name = "admin.max_conns", .type = T_U32, .scope = S_CONF,
	  .off = CO(admin.max_conns), .def = "64", .min = 1, .max = 65536,
	  .flags = F_RESTART,
	  .doc = "The admin listener's connections at once; more wait in "
	    "the kernel's backlog until one closes." },
	{ .name = "admin.head_timeout_ms", .type = T_U64, .scope = S_CONF,
	  .off = CO(admin.head_timeout_ms), .def = "10000", .min = 100,
	  .max = 3600000, .flags = F_RESTART,
	  .doc = "The time a request's head may take to arrive, from the "
	    "connection (or the previous answer on it); then the connection "
	    "is closed." },
	{ .name = "admin.body_timeout_ms", .type = T_U64, .scope = S_CONF,
	  .off = CO(admin.body_timeout_ms), .def = "30000", .min = 100,
	  .max = 3600000, .flags = F_RESTART,
	  .doc = "The time a request's body may take to arrive after its "
	    "head; then the connection is closed." },

	/* control */
	{ .name = "control", .type = T_SECTION,
	  .doc = "The control socket of ankusactl(8)." },
	{ .name = "control.socket", .type = T_SOCKPATH, .scope = S_CONF,
	  .off = CO(control.socket), .def = ANKUSA_CONTROLSOCKET,
	  .flags = F_RESTART,
	  .doc = "The path of the UNIX socket; at most 103 bytes." },
	{ .name = "control.mode", .type = T_MODE, .scope = S_CONF,
	  .off = CO(control.mode), .def = "0660", .max = 0777,
	  .doc = "The socket's permissions, in octal (0660 or \"0660\"; "
	    "every digit is read as octal)." },
	{ .name = "control.group", .type = T_STR, .scope = S_CONF,
	  .off = CO(control.group), .flags = F_RESTART,
	  .doc = "The group whose members may use the control socket, "
	    "besides root (its peer's credentials are checked at each "
	    "connection: the user's primary group, its supplementary groups "
	    "or the group's member list).  The socket is made root's and "
	    "this group's.  node.user is never admitted, being the user of "
	    "the master and its children.  Unset: root only." },

	/* rate_limits */
	{ .name = "rate_limits", .type = T_SECTION,
	  .doc = "Per-tenant ingest limits, charged after verification: a "
	    "token bucket of burst hooks refilled at rate per second.  A "
	    "tenant with no entry takes the default; no default means "
	    "unlimited.  A hook over its limit is answered 429." },
	{ .name = "rate_limits.default", .type = T_SECTION,
	  .obj = O_RATE_DEFAULT, .flags = F_NULLABLE,
	  .doc = "The limit of a tenant with no entry of its own; null "
	    "(the default) means unlimited." },
	{ .name = "rate_limits.default.rate", .type = T_FLOAT,
	  .scope = S_RATE, .off = RO(rate), .fmax = 1e9, .flags = F_REQUIRED,
	  .doc = "Hooks per second; fractions are allowed." },
	{ .name = "rate_limits.default.burst", .type = T_U32,
	  .scope = S_RATE, .off = RO(burst), .min = 1, .max = 1000000000,
	  .flags = F_REQUIRED,
	  .doc = "The most hooks admitted back to back." },
	{ .name = "rate_limits.tenants", .type = T_MAPOF,
	  .obj = O_RATE_TENANT,
	  .doc = "One limit per tenant id." },
	{ .name = "rate_limits.tenants.*", .type = T_SECTION,
	  .doc = "The limit of one tenant." },
	{ .name = "rate_limits.tenants.*.rate", .type = T_FLOAT,
	  .scope = S_RATE, .off = RO(rate), .fmax = 1e9, .flags = F_REQUIRED,
	  .doc = "Hooks per second; fractions are allowed." },
	{ .name = "rate_limits.tenants.*.burst", .type = T_U32,
	  .scope = S_RATE, .off = RO(burst), .min = 1, .max = 1000000000,
	  .flags = F_REQUIRED,
	  .doc = "The most hooks admitted back to back." },

	/* quarantine */
	{ .name = "quarantine", .type = T_SECTION,
	  .doc = "The pen for hooks that fail verification on a source with "
	    "on_verify_failure: quarantine.  A held hook keeps its headers "
	    "to be verified again, but of those left out of forwarding by "
	    "default (authorization, proxy-authorization, cookie, x-api-key, "
	    "host, the framing ones, x-ankusa-*) only the ones its source's "
	    "verification, dedupe key or a lane key reads." },
	{ .name = "quarantine.burst", .type = T_U32, .scope = S_CONF,
	  .off = CO(quarantine.burst), .def = "100", .min = 1,
	  .max = 1000000000,
	  .doc = "Per source: the most hooks quarantined back to back." },
	{ .name = "quarantine.rate", .type = T_FLOAT, .scope = S_CONF,
	  .off = CO(quarantine.rate), .def = "20", .fmax = 1e9,
	  .doc = "Per source: hooks quarantined per second beyond the burst; "
	    "over it the answer is 429." },
	{ .name = "quarantine.max_bytes", .type = T_U64, .scope = S_CONF,
	  .off = CO(quarantine.max_bytes), .def = "1073741824", .min = 1,
	  .max = TIB,
	  .doc = "The bytes the whole pen may hold; a full pen answers 503." },

	/* queue */
	{ .name = "queue", .type = T_SECTION,
	  .doc = "The delivery queue in the store." },
	{ .name = "queue.dlq", .type = T_SECTION,
	  .doc = "Dead letters: rows that gave up, kept with their hooks "
	    "until replayed or purged." },
	{ .name = "queue.dlq.max_age_s", .type = T_U64, .scope = S_CONF,
	  .off = CO(dlq.max_age_s), .def = "null", .min = 1,
	  .max = 3153600000ULL, .flags = F_NULLABLE,
	  .doc = "Dead letters older than this many seconds (by their dead "
	    "time) are purged with their hooks, in steps, checked every "
	    "second; null (the default) keeps them." },
	{ .name = "queue.dlq.warn_rows", .type = T_U64, .scope = S_CONF,
	  .off = CO(dlq.warn_rows), .def = "null", .min = 1,
	  .max = 1000000000000ULL, .flags = F_NULLABLE,
	  .doc = "A warning is logged once when the dead letters pass this "
	    "many, and a line when they are back under it; null (the "
	    "default): no warning." },

	/* batcher */
	{ .name = "batcher", .type = T_SECTION,
	  .doc = "The commit queue (group commit) in front of the store." },
	{ .name = "batcher.partitions", .type = T_U32, .scope = S_CONF,
	  .off = CO(batcher.partitions), .def = "1", .min = 1, .max = 1024,
	  .doc = "Accepted for the Elixir Ankusa's files, and without "
	    "effect: this daemon has one commit queue, in the master, the "
	    "store's only writer." },
	{ .name = "batcher.max_batch", .type = T_U32, .scope = S_CONF,
	  .off = CO(batcher.max_batch), .def = "256", .min = 1, .max = 65536,
	  .doc = "The most hooks committed in one transaction." },
	{ .name = "batcher.max_delay_ms", .type = T_U64, .scope = S_CONF,
	  .off = CO(batcher.max_delay_ms), .def = "0", .max = 60000,
	  .doc = "How long a batch may wait to grow; 0 commits as soon as "
	    "the previous commit is done." },
	{ .name = "batcher.max_queue", .type = T_U32, .scope = S_CONF,
	  .off = CO(batcher.max_queue), .def = "10000", .min = 1,
	  .max = 10000000,
	  .doc = "Hooks buffered or committing; over it ingest answers 503." },
	{ .name = "batcher.max_queue_bytes", .type = T_U64, .scope = S_CONF,
	  .off = CO(batcher.max_queue_bytes), .def = "268435456", .min = 1,
	  .max = 64 * GIB,
	  .doc = "The same bound in body bytes." },

	/* dispatch */
	{ .name = "dispatch", .type = T_SECTION,
	  .doc = "Delivery: windows, per-sink isolation, breakers, retries." },
	{ .name = "dispatch.batch", .type = T_U32, .scope = S_CONF,
	  .off = CO(dispatch.batch), .def = "128", .min = 1, .max = 65536,
	  .doc = "The most due rows claimed per scan." },
	{ .name = "dispatch.concurrency", .type = T_U32, .scope = S_CONF,
	  .off = CO(dispatch.concurrency), .def = "32", .min = 1, .max = 1024,
	  .doc = "The most delivery attempts running at once.  The deliver "
	    "pool has as many processes, plus dispatch.sink_concurrency "
	    "for each batching sink (sqs, google_pubsub and the brokers: "
	    "its batch requests in flight; concurrency when "
	    "sink_concurrency is null), plus one "
	    "for claim-check uploads: at most 2048 in all, or the config is "
	    "refused.  Each process costs about 2 MiB of memory and the "
	    "master one descriptor (ankusad(8), RESOURCES)." },
	{ .name = "dispatch.max_inflight", .type = T_U32, .scope = S_CONF,
	  .off = CO(dispatch.max_inflight), .def = "4096", .min = 1,
	  .max = 10000000,
	  .doc = "The most rows claimed and not yet settled." },
	{ .name = "dispatch.max_inflight_bytes", .type = T_U64,
	  .scope = S_CONF, .off = CO(dispatch.max_inflight_bytes),
	  .def = "134217728", .min = 1, .max = TIB,
	  .doc = "The most body bytes of claimed rows." },
	{ .name = "dispatch.attempt_timeout_ms", .type = T_U64,
	  .scope = S_CONF, .off = CO(dispatch.attempt_timeout_ms),
	  .def = "30000", .min = 1, .max = MS_DAY,
	  .doc = "An attempt still running after this is killed and counts "
	    "as failed.  Keep it above every sink's timeout_ms." },
	{ .name = "dispatch.sink_concurrency", .type = T_U32, .scope = S_CONF,
	  .off = CO(dispatch.sink_concurrency), .def = "8", .min = 1,
	  .max = 1024, .flags = F_NULLABLE | F_CROSS,
	  .doc = "The most attempts of one sink running at once, at most "
	    "dispatch.concurrency; null means only the global cap.  When "
	    "not set it is 8, or dispatch.concurrency if that is lower." },
	{ .name = "dispatch.breaker_failures", .type = T_U32, .scope = S_CONF,
	  .off = CO(dispatch.breaker_failures), .def = "5", .max = 1000000,
	  .doc = "Consecutive failures that open a sink's breaker; 0 turns "
	    "breakers off." },
	{ .name = "dispatch.breaker_open_ms", .type = T_U64, .scope = S_CONF,
	  .off = CO(dispatch.breaker_open_ms), .def = "30000", .min = 1,
	  .max = MS_DAY,
	  .doc = "How long an open breaker first stays open; it doubles on "
	    "each consecutive open." },
	{ .name = "dispatch.breaker_max_open_ms", .type = T_U64,
	  .scope = S_CONF, .off = CO(dispatch.breaker_max_open_ms),
	  .def = "300000", .min = 1, .max = MS_DAY, .flags = F_CROSS,
	  .doc = "The longest a breaker stays open; at least "
	    "dispatch.breaker_open_ms (when not set, raised to it)." },
	{ .name = "dispatch.tenants", .type = T_MAPOF, .obj = O_TENANT,
	  .doc = "Per-tenant windows, so that one tenant's backlog cannot "
	    "take every slot.  The entry named default applies to every "
	    "tenant without one; its unset fields are a share of the global "
	    "window (a quarter of max_inflight and max_inflight_bytes, three "
	    "quarters of concurrency), so that a slow tenant never fills the "
	    "whole of it; a tenant's unset fields are the default entry's." },
	{ .name = "dispatch.tenants.*", .type = T_SECTION,
	  .doc = "The window of one tenant, or of every other tenant "
	    "(default)." },
	{ .name = "dispatch.tenants.*.max_inflight", .type = T_U32,
	  .scope = S_TENANT, .off = TO(max_inflight), .min = 1,
	  .max = 10000000,
	  .doc = "The most claimed rows of the tenant." },
	{ .name = "dispatch.tenants.*.max_inflight_bytes", .type = T_U64,
	  .scope = S_TENANT, .off = TO(max_inflight_bytes), .min = 1,
	  .max = TIB,
	  .doc = "The most body bytes of the tenant's claimed rows." },
	{ .name = "dispatch.tenants.*.concurrency", .type = T_U32,
	  .scope = S_TENANT, .off = TO(concurrency), .min = 1, .max = 1024,
	  .doc = "The most attempts of the tenant running at once." },
	{ .name = "dispatch.retry", .type = T_SECTION, .obj = O_RETRY,
	  .check = conf_check_retry,
	  .doc = "The retry policy of every source without its own: delay = "
	    "min(max_ms, base_ms * 2^(attempt-1)), or the schedule_ms step "
	    "of the attempt, times a factor in [0.5, 1] with jitter; a "
	    "sink's Retry-After is a floor." },
	{ .name = "dispatch.retry.base_ms", .type = T_U64, .scope = S_CONF,
	  .off = CO(dispatch.retry.base_ms), .def = "100", .min = 1,
	  .max = MS_DAY,
	  .doc = "The first delay." },
	{ .name = "dispatch.retry.max_ms", .type = T_U64, .scope = S_CONF,
	  .off = CO(dispatch.retry.max_ms), .def = "300000", .min = 1,
	  .max = MS_DAY,
	  .doc = "The longest delay." },
	{ .name = "dispatch.retry.max_attempts", .type = T_U32,
	  .scope = S_CONF, .off = CO(dispatch.retry.max_attempts),
	  .def = "84", .min = 1, .max = 1000000,
	  .doc = "Attempts before the row is dead-lettered." },
	{ .name = "dispatch.retry.jitter", .type = T_BOOL, .scope = S_CONF,
	  .off = CO(dispatch.retry.jitter), .def = "true",
	  .doc = "Multiply each delay by a random factor in [0.5, 1]." },
	{ .name = "dispatch.retry.max_elapsed_ms", .type = T_U64,
	  .scope = S_CONF, .off = CO(dispatch.retry.max_elapsed_ms),
	  .def = "86400000", .min = 1, .max = 365 * MS_DAY,
	  .doc = "The retry horizon from the first attempt; past it the row "
	    "is dead-lettered, and so is a row whose sink's Retry-After "
	    "ends past it (no attempt comes sooner than a Retry-After "
	    "asks)." },
	{ .name = "dispatch.retry.schedule_ms", .type = T_MSLIST,
	  .scope = S_CONF, .off = CO(dispatch.retry.schedule),
	  .off2 = CO(dispatch.retry.nschedule), .min = 1, .max = MS_DAY,
	  .doc = "The delays after the first, second, ... attempt, in "
	    "place of base_ms and max_ms (not with them in one retry "
	    "section; a retry section that sets base_ms or max_ms without "
	    "it drops a schedule it would inherit); the last step repeats "
	    "until max_attempts or max_elapsed_ms.  Up to 64 steps." },

	/* attempts */
	{ .name = "attempts", .type = T_SECTION,
	  .doc = "The attempt log: every attempt of every row, with the "
	    "sink's answer, kept in the store (GET /v1/hooks/{id}/attempts, "
	    "ankusactl show)." },
	{ .name = "attempts.capture_bytes", .type = T_U32, .scope = S_CONF,
	  .off = CO(attempts.capture_bytes), .def = "1024", .min = 0,
	  .max = 65536,
	  .doc = "Bytes of each answer's body kept with its attempt, made "
	    "valid UTF-8 with control bytes replaced by the deliver "
	    "process; 0 keeps none.  Deliver processes started after a "
	    "reload read it." },
	{ .name = "attempts.max_per_row", .type = T_U32, .scope = S_CONF,
	  .off = CO(attempts.max_per_row), .def = "100", .min = 0,
	  .max = 100000,
	  .doc = "Attempts kept per row and round (a replay starts a round), "
	    "the oldest dropped as each new one is written; 0 records "
	    "none.  A cap lowered by a reload leaves the attempts already "
	    "past it to the retention." },

	/* retention */
	{ .name = "retention", .type = T_SECTION,
	  .doc = "How long what a hook leaves behind is kept." },
	{ .name = "retention.attempts_s", .type = T_U64, .scope = S_CONF,
	  .off = CO(retention.attempts_s), .def = "604800", .min = 0,
	  .max = 3153600000ULL,
	  .doc = "How long a hook's attempts are kept after the hook went "
	    "(its last row delivered), in seconds (7 days); pruned in "
	    "bounded steps after each checkpoint.  While the hook lives (a "
	    "row pending or dead-lettered) its attempts stay.  An "
	    "operator's delete of a hook, or a purge of its last dead "
	    "letter, takes its attempts at once.  A delivered hook kept by "
	    "retention.delivered_s keeps its attempts until it goes." },
	{ .name = "retention.delivered_s", .type = T_U64, .scope = S_CONF,
	  .off = CO(retention.delivered_s), .def = "0", .min = 0,
	  .max = 3153600000ULL,
	  .doc = "How long a delivered hook is kept, in seconds after its "
	    "last delivery, with its body and each row's delivery time: "
	    "listed by GET /v1/hooks, shown by GET /v1/hooks/{id}, sent "
	    "again by a replay of kind archive; pruned in bounded steps, "
	    "checked every second.  0 (the default): a hook goes with its "
	    "last row, as before.  A kept hook is never dispatched but by "
	    "a replay, and is not pending." },
	{ .name = "retention.max_bytes", .type = T_U64, .scope = S_CONF,
	  .off = CO(retention.max_bytes), .def = "1073741824", .min = 0,
	  .max = 1125899906842624ULL,
	  .doc = "The most bytes (the hooks' records and bodies) the kept "
	    "delivered hooks take: past it the oldest kept are pruned "
	    "first, whatever their age.  0: no cap." },

	/* claim_check */
	{ .name = "claim_check", .type = T_SECTION, .scope = S_CONF,
	  .off = CO(claim_check.enabled), .obj = O_CLAIM,
	  .flags = F_RESTART, .check = conf_check_claim,
	  .doc = "Large bodies go to a blob store by reference; the "
	    "read-only gateway listens only when this section is present." },
	{ .name = "claim_check.ip", .type = T_ADDR, .scope = S_CONF,
	  .off = CO(claim_check.ip), .def = "127.0.0.1", .flags = F_RESTART,
	  .doc = "The address the claim gateway binds." },
	{ .name = "claim_check.port", .type = T_U16, .scope = S_CONF,
	  .off = CO(claim_check.port), .def = "4001", .max = 65535,
	  .flags = F_RESTART,
	  .doc = "The claim gateway's TCP port." },
	{ .name = "claim_check.pack_max_bytes", .type = T_U64,
	  .scope = S_CONF, .off = CO(claim_check.pack_max_bytes),
	  .def = "16777216", .min = 1, .max = 4294967295ULL,
	  .doc = "The target size of one pack." },
	{ .name = "claim_check.retention_days", .type = T_U32,
	  .scope = S_CONF, .off = CO(claim_check.retention_days),
	  .def = "null", .min = 1, .max = 36500, .flags = F_NULLABLE,
	  .doc = "Days a local pack is kept; null keeps them.  Local store "
	    "only: use a bucket lifecycle rule for S3." },
	{ .name = "claim_check.store", .type = T_SECTION,
	  .doc = "Where claims live." },
	{ .name = "claim_check.store.type", .type = T_ENUMSTR,
	  .scope = S_CONF, .off = CO(claim_check.store_type), .def = "local",
	  .names = store_types, .refused = store_refused, .flags = F_FIRST,
	  .doc = "local: files under root; s3: an S3-compatible bucket." },
	{ .name = "claim_check.store.root", .type = T_STR, .scope = S_CONF,
	  .off = CO(claim_check.root),
	  .doc = "The directory of a local store; default "
	    "node.data_dir/claims." },
	{ .name = "claim_check.store.s3", .type = T_SECTION,
	  .doc = "The bucket of an s3 store.  Credentials not given here "
	    "come from the AWS_* environment." },
	{ .name = "claim_check.store.s3.bucket", .type = T_STR,
	  .scope = S_CONF, .off = CO(claim_check.s3_bucket),
	  .doc = "The bucket; required with type s3." },
	{ .name = "claim_check.store.s3.region", .type = T_STR,
	  .scope = S_CONF, .off = CO(claim_check.s3_region),
	  .doc = "The bucket's region." },
	{ .name = "claim_check.store.s3.endpoint", .type = T_URL,
	  .scope = S_CONF, .off = CO(claim_check.s3_endpoint),
	  .doc = "An S3-compatible endpoint (MinIO ...)." },
	{ .name = "claim_check.store.s3.access_key_id", .type = T_STR,
	  .scope = S_CONF, .off = CO(claim_check.s3_access_key_id),
	  .doc = "The access key id." },
	{ .name = "claim_check.store.s3.secret_access_key", .type = T_STR,
	  .scope = S_CONF, .off = CO(claim_check.s3_secret_access_key),
	  .flags = F_SECRET,
	  .doc = "The secret access key." },
	{ .name = "claim_check.store.s3.session_token", .type = T_STR,
	  .scope = S_CONF, .off = CO(claim_check.s3_session_token),
	  .flags = F_SECRET,
	  .doc = "A session token for temporary credentials." },
	{ .name = "claim_check.signing_key", .type = T_STR, .scope = S_CONF,
	  .off = CO(claim_check.signing_key), .flags = F_SECRET,
	  .doc = "The key (at least 32 bytes) that signs every claim "
	    "reference (v2, HMAC-SHA256); required.  Only the deliver "
	    "processes, which sign, and the gateways, which check, are "
	    "given it.  A new key makes the references already handed "
	    "out unreadable (the next delivery of a hook signs its "
	    "reference anew).  Every node of a fleet or group needs the "
	    "same key." },
	{ .name = "claim_check.ref_ttl_s", .type = T_U64, .scope = S_CONF,
	  .off = CO(claim_check.ref_ttl_s), .def = "604800", .min = 1,
	  .max = 3153600000ULL,
	  .doc = "Seconds a claim reference is good for from the delivery "
	    "that carries it (each delivery renews the reference stored "
	    "with the hook); past it the gateway answers 410 ref_expired." },
	{ .name = "claim_check.accept_v1", .type = T_BOOL, .scope = S_CONF,
	  .off = CO(claim_check.accept_v1), .def = "false",
	  .doc = "The gateway also serves the unsigned v1 references "
	    "(urn:ankusa:claim:v1:...) of claims checked in before "
	    "references were signed; anyone who can guess one can read "
	    "it.  false: they are answered 400 bad_signature." },
	{ .name = "claim_check.auth", .type = T_SECTION,
	  .doc = "Who may read claims from the gateway." },
	{ .name = "claim_check.auth.tokens", .type = T_TOKENS,
	  .scope = S_CONF, .off = CO(claim_check.tokens),
	  .off2 = CO(claim_check.ntokens), .min = 16,
	  .flags = F_SECRET | F_RESTART,
	  .doc = "Bearer tokens, each {name, token | token_file | "
	    "token_sha256}: a token of at least 16 bytes, an absolute path "
	    "to a file whose first line is one (read at start before ankusad "
	    "leaves root; the gateways get its SHA-256), or its SHA-256 in "
	    "hex, as admin.tokens' but without scopes.  When set, the "
	    "gateway answers a request without Authorization: Bearer and "
	    "one of them 401 {\"error\":\"unauthenticated\"} with "
	    "WWW-Authenticate: Bearer; unset, it serves anyone who holds a "
	    "reference.  Only their SHA-256 is kept, compared in constant "
	    "time." },

	/* replication */
	{ .name = "replication", .type = T_SECTION, .scope = S_CONF,
	  .off = CO(repl.enabled), .obj = O_REPL, .flags = F_RESTART,
	  .check = conf_check_repl,
	  .doc = "This node is a site of a replication group (ankusad(8), "
	    "REPLICATION): its store is shared with the others by Berkeley "
	    "DB's replication manager, the master answers 201 only once a "
	    "quorum of the group holds the hook, and a new master is "
	    "elected when it dies.  Absent: a single node.  Give every "
	    "node of a group the same ack_policy.  The keys a reload "
	    "cannot change are restart-only because Berkeley DB 5.3 stops "
	    "waiting for a quorum after an ack policy or a priority "
	    "changes at run time." },
	{ .name = "replication.local", .type = T_STR, .scope = S_CONF,
	  .off = CO(repl.local), .flags = F_REQUIRED | F_RESTART,
	  .doc = "host:port this node listens on for the group (host a "
	    "name, an IPv4 address or [IPv6]), and is known by to the "
	    "others: the same string in their peers.  Neither encrypted "
	    "nor authenticated: a private network only." },
	{ .name = "replication.peers", .type = T_HOSTPORTS, .scope = S_CONF,
	  .off = CO(repl.peer_list), .off2 = CO(repl.npeer_list),
	  .flags = F_RESTART,
	  .doc = "host:port of the other nodes (at most 32), which a node "
	    "asks to let it join; empty only with create." },
	{ .name = "replication.priority", .type = T_U32, .scope = S_CONF,
	  .off = CO(repl.priority), .def = "100", .max = 10000,
	  .flags = F_RESTART,
	  .doc = "Which node an election prefers among those with the "
	    "newest log; 0: never master." },
	{ .name = "replication.create", .type = T_BOOL, .scope = S_CONF,
	  .off = CO(repl.create), .def = "false", .flags = F_RESTART,
	  .doc = "true on the first node of a new group, for its first "
	    "start: it makes the group, of one.  Ignored once the node is "
	    "a member." },
	{ .name = "replication.ack_policy", .type = T_ENUM, .scope = S_CONF,
	  .off = CO(repl.ack_all), .def = "quorum", .names = ack_policies,
	  .flags = F_RESTART,
	  .doc = "quorum: a commit waits for enough nodes that an election "
	    "after it keeps it (two of three); all: for every node, which a "
	    "node down turns into no wait at all." },
	{ .name = "replication.ack_timeout_ms", .type = T_U32,
	  .scope = S_CONF, .off = CO(repl.ack_timeout_ms), .def = "300",
	  .min = 1, .max = 60000,
	  .doc = "How long a commit waits for the acknowledgements; past "
	    "it the batch's hooks are answered 503 store_unavailable." },
	{ .name = "replication.heartbeat_ms", .type = T_U32, .scope = S_CONF,
	  .off = CO(repl.heartbeat_ms), .def = "500", .max = 60000,
	  .doc = "How often an idle master tells the others it lives; 0: "
	    "never." },
	{ .name = "replication.heartbeat_timeout_ms", .type = T_U32,
	  .scope = S_CONF, .off = CO(repl.heartbeat_timeout_ms),
	  .def = "2000", .max = 600000,
	  .doc = "How long a client hears nothing from the master before it "
	    "calls an election; 0: only when the connection breaks.  Must "
	    "exceed heartbeat_ms." },
	{ .name = "replication.insecure_public", .type = T_BOOL,
	  .scope = S_CONF, .off = CO(repl.insecure_public), .def = "false",
	  .flags = F_RESTART,
	  .doc = "Let replication.local be a public address (or a name that "
	    "resolves to one).  The group's traffic is neither encrypted "
	    "nor authenticated, so by default ankusad refuses to start "
	    "(exit 78) unless local is loopback, private (RFC 1918, "
	    "fc00::/7), carrier-grade NAT (100.64/10) or link-local: run "
	    "the group over a private network or WireGuard (ankusad(8), "
	    "REPLICATION)." },

	/* egress: walked first, the sinks' and the claim store's URLs are
	 * checked against it. */
	{ .name = "egress", .type = T_SECTION, .flags = F_FIRST,
	  .check = conf_check_egress,
	  .doc = "The egress guard: where sinks and the s3 claim store may "
	    "connect (see ankusad(8), SECURITY).  Loopback, private, "
	    "link-local, carrier-grade NAT, unspecified, multicast and "
	    "reserved addresses, and the IPv6 forms that carry one, are "
	    "refused unless egress.allow covers them, on the address "
	    "actually connected to, after resolution, on every connection; "
	    "a refused delivery is dead-lettered egress_denied:<address>.  "
	    "A URL whose host is such an address, literally, is a config "
	    "error." },
	{ .name = "egress.allow", .type = T_CIDRS, .scope = S_CONF,
	  .off = CO(egress.allow), .off2 = CO(egress.nallow),
	  .doc = "The denied addresses that may be reached anyway: "
	    "addresses or CIDRs, v4 or v6, each with an optional port "
	    "(10.0.0.0/8, 127.0.0.1/32:8080, [::1]/128:443; a bare address "
	    "is /32 or /128; host bits past the prefix are an error).  A v4 "
	    "entry also covers the IPv6 forms that carry its addresses.  "
	    "Public addresses need no entry.  A proxy from the environment "
	    "is the address connected to: allow it if it is a denied one." },
	{ .name = "egress.allow_plain_http", .type = T_BOOL, .scope = S_CONF,
	  .off = CO(egress.allow_plain_http), .def = "true",
	  .doc = "Whether an http:// URL may reach a non-loopback address.  "
	    "Set it to false where every sink speaks https: plain http "
	    "carries the bodies and the signatures in the clear, and anyone "
	    "on the path can read, change or redirect them, so a sink URL "
	    "mistyped as http:// would leak every hook.  With false, such a "
	    "URL with a literal non-loopback host is a config error, and a "
	    "name that resolves to a non-loopback address is refused at "
	    "connect.  Loopback stays allowed (a local proxy or test sink)." },
	{ .name = "egress.proxy", .type = T_URL, .scope = S_CONF,
	  .off = CO(egress.proxy), .flags = F_NULLABLE,
	  .doc = "A forward proxy for every sink (http, sqs, google_pubsub) "
	    "and every OAuth2 token endpoint: http://[user:pass@]host:port.  "
	    "https URLs go through it by CONNECT, http URLs in absolute "
	    "form; user:pass is sent as Proxy-Authorization basic.  A "
	    "sink's proxy overrides it.  The guard checks the proxy's "
	    "address and, before the request, the destination's as the "
	    "deliver process resolves it (the proxy resolves the name "
	    "again: ankusad(8), DELIVERIES).  A failure at the proxy is "
	    "proxy_error: retried, not charged to the destination's "
	    "breaker.  Unset: the environment's http_proxy and https_proxy "
	    "as before, without those checks." },
	{ .name = "egress.no_proxy", .type = T_HOSTPORTS, .scope = S_CONF,
	  .off = CO(egress.no_proxy), .off2 = CO(egress.nno_proxy),
	  .doc = "Destinations reached without egress.proxy, each a host "
	    "name (example.com: it and its subdomains), a .suffix "
	    "(.example.com: its subdomains only), an address or a CIDR "
	    "(matched against a URL's literal address, never a resolved "
	    "one), or * for all; no port." },

	/* What the Elixir Ankusa has and this daemon is at one value only. */
	{ .name = "routes", .type = T_SECTION,
	  .doc = "Route management; only routes.enabled: false is accepted." },
	{ .name = "routes.enabled", .type = T_OFF, .def = "false",
	  .nosup = "every POST to a source's URL is captured",
	  .doc = "Must be false: every POST to a source's URL is captured." },
	{ .name = "wal", .type = T_SECTION,
	  .doc = "How a hook is made durable before its 201." },
	{ .name = "wal.type", .type = T_ONLY, .def = "disk",
	  .names = wal_types, .refused = wal_refused,
	  .nosup = "every hook is committed to this node's store before its "
	    "201",
	  .doc = "Must be disk: every hook is committed to this node's "
	    "store, synced, before its 201." },
	{ .name = "backup", .type = T_SECTION,
	  .doc = "Continuous backup; only backup.enabled: false is "
	    "accepted.  ankusactl backup DIR copies the running store." },
	{ .name = "backup.enabled", .type = T_OFF, .def = "false",
	  .nosup = "ankusactl backup DIR copies the running store",
	  .doc = "Must be false (see ankusactl(8), backup)." },
	{ .name = "source_store", .type = T_SECTION,
	  .doc = "Where sources come from; only this file." },
	{ .name = "source_store.type", .type = T_ONLY, .def = "static",
	  .names = source_stores, .refused = source_stores_refused,
	  .nosup = "sources come from this file only",
	  .doc = "Must be static: sources come from this file (a reload "
	    "applies changes)." },

	/* sources */
	{ .name = "sources", .type = T_MAPOF, .obj = O_SOURCE,
	  .flags = F_REQUIRED | F_LAST,
	  .doc = "The sources, by id: POST {prefix}/{id} under routing path.  "
	    "At least one." },
	{ .name = "sources.*", .type = T_SECTION, .check = conf_check_source,
	  .doc = "One source: a provider endpoint." },
	{ .name = "sources.*.tenant", .type = T_IDENT, .scope = S_SOURCE,
	  .off = SO(tenant), .flags = F_NULLABLE | F_DEFNULL,
	  .doc = "The tenant the source belongs to; absent or default: a "
	    "shared source (under tenant_path the URL names the tenant)." },
	{ .name = "sources.*.trust_url_tenant", .type = T_BOOL,
	  .scope = S_SOURCE, .off = SO(trust_url_tenant), .def = "false",
	  .doc = "Under routing tenant_path, a shared source with verify "
	    "none must set this to true: anyone can then post under any "
	    "tenant." },
	{ .name = "sources.*.verify", .type = T_SECTION,
	  .doc = "How requests are authenticated.  Absent: type none." },
	{ .name = "sources.*.verify.type", .type = T_ENUM, .scope = S_SOURCE,
	  .off = SO(verify.type), .def = "none", .names = conf_verify_types,
	  .flags = F_FIRST,
	  .doc = "The signature scheme; every type but none requires "
	    "secret.  meta (Facebook, Instagram, WhatsApp: "
	    "X-Hub-Signature-256 under the app secret) and zoom "
	    "(x-zm-signature under the secret token) are presets like the "
	    "others; slack, meta and zoom sources also answer their "
	    "provider's handshake in the edge, never stored (PROVIDER "
	    "HANDSHAKES in ankusad(8))." },
	{ .name = "sources.*.verify.secret", .type = T_SECRETS,
	  .scope = S_SOURCE, .off = SO(verify.secrets),
	  .off2 = SO(verify.nsecrets), .flags = F_SECRET,
	  .doc = "A secret, or a list of up to 8 (newest first, every one is "
	    "tried).  standard_webhooks secrets (and hmac ones with "
	    "secret_decode whsec_base64) are whsec_ followed by padded, "
	    "canonical base64 (whsec_dGVzdA== for \"test\"; whsec_dGVzdA is "
	    "refused); the others are used as written.  None may be "
	    "empty." },
	{ .name = "sources.*.verify.tolerance_seconds", .type = T_U32,
	  .scope = S_SOURCE, .off = SO(verify.tolerance_seconds),
	  .def = "300", .min = 1, .max = 31536000,
	  .doc = "The largest accepted distance between a signed timestamp "
	    "and now." },
	{ .name = "sources.*.verify.signature_header", .type = T_STR,
	  .scope = S_SOURCE, .off = SO(verify.signature_header),
	  .doc = "hmac: the header carrying the signature (required)." },
	{ .name = "sources.*.verify.signed", .type = T_STR, .scope = S_SOURCE,
	  .off = SO(verify.signed_template),
	  .doc = "hmac: the signed bytes, a template of {body}, {ts} and "
	    "{header:NAME} (required; quote it)." },
	{ .name = "sources.*.verify.hash", .type = T_ENUMSTR,
	  .scope = S_SOURCE, .off = SO(verify.hash), .def = "sha256",
	  .names = hashes,
	  .doc = "hmac: the hash function." },
	{ .name = "sources.*.verify.encoding", .type = T_ENUMSTR,
	  .scope = S_SOURCE, .off = SO(verify.encoding), .def = "hex",
	  .names = encodings,
	  .doc = "hmac: how the signature is encoded." },
	{ .name = "sources.*.verify.sig_prefix", .type = T_STR,
	  .scope = S_SOURCE, .off = SO(verify.sig_prefix),
	  .doc = "hmac: a prefix before the signature (sha256=)." },
	{ .name = "sources.*.verify.timestamp_header", .type = T_STR,
	  .scope = S_SOURCE, .off = SO(verify.timestamp_header),
	  .doc = "hmac: the header carrying the signed timestamp." },
	{ .name = "sources.*.verify.parse", .type = T_ENUMSTR,
	  .scope = S_SOURCE, .off = SO(verify.parse), .def = "whole",
	  .names = parses,
	  .doc = "hmac: whole (the header is one signature), csv_pairs "
	    "(k=v pairs, the signatures under sig_key) or space_versions "
	    "(space-separated tokens starting with version)." },
	{ .name = "sources.*.verify.sig_key", .type = T_STR,
	  .scope = S_SOURCE, .off = SO(verify.sig_key),
	  .doc = "hmac: the pair key of a signature under parse csv_pairs "
	    "(required there)." },
	{ .name = "sources.*.verify.version", .type = T_STR,
	  .scope = S_SOURCE, .off = SO(verify.version),
	  .doc = "hmac: the token prefix under parse space_versions, e.g. "
	    "\"v1,\" (required there)." },
	{ .name = "sources.*.verify.secret_decode", .type = T_ENUMSTR,
	  .scope = S_SOURCE, .off = SO(verify.secret_decode), .def = "raw",
	  .names = decodes, .flags = F_FIRST,
	  .doc = "hmac: raw, or whsec_base64 for whsec_ secrets." },
	{ .name = "sources.*.verify.subject", .type = T_STR,
	  .scope = S_SOURCE, .off = SO(verify.mtls_subject),
	  .doc = "mtls: the client certificate's subject, as OpenSSL writes "
	    "it in RFC 2253 form (CN=provider,O=Example), matched exactly." },
	{ .name = "sources.*.verify.san", .type = T_STR, .scope = S_SOURCE,
	  .off = SO(verify.mtls_san),
	  .doc = "mtls: a subjectAltName the client certificate must hold: a "
	    "DNS name, a URI, an email address or an IP address, written "
	    "bare (provider.example) and matched without case." },
	{ .name = "sources.*.verify.fingerprint", .type = T_STR,
	  .scope = S_SOURCE, .off = SO(verify.mtls_fingerprint),
	  .doc = "mtls: the SHA-256 of the client certificate (DER), in hex, "
	    "colons allowed (openssl x509 -fingerprint -sha256)." },
	{ .name = "sources.*.verify.verify_token", .type = T_STR,
	  .scope = S_SOURCE, .off = SO(verify.verify_token), .flags = F_SECRET,
	  .doc = "meta: the Verify Token entered in Meta's webhook settings; "
	    "a GET handshake (hub.mode=subscribe) whose hub.verify_token is "
	    "another, or any when this is unset, is refused 403." },
	{ .name = "sources.*.on_verify_failure", .type = T_ENUM,
	  .scope = S_SOURCE, .off = SO(on_verify_failure), .def = "reject",
	  .names = vfails,
	  .doc = "reject (401), quarantine (202, held in the pen) or "
	    "accept_flag (stored, flagged, without dedupe)." },
	{ .name = "sources.*.dedupe", .type = T_DEDUPE,
	  .check = conf_check_dedupe,
	  .doc = "Drop a hook whose key was seen within ttl_seconds: a "
	    "preset name, or a map of preset, header or json, and "
	    "ttl_seconds.  Absent: no dedupe." },
	{ .name = "sources.*.dedupe.preset", .type = T_ENUMSTR,
	  .scope = S_SOURCE, .off = SO(dedupe.preset), .names = conf_presets,
	  .doc = "github (x-github-delivery), standard_webhooks "
	    "(webhook-id), svix (svix-id), shopify (x-shopify-webhook-id), "
	    "stripe (JSON id)." },
	{ .name = "sources.*.dedupe.header", .type = T_KEYHDR,
	  .scope = S_SOURCE, .off = SO(dedupe.key),
	  .doc = "The key is this request header." },
	{ .name = "sources.*.dedupe.json", .type = T_KEYJSON,
	  .scope = S_SOURCE, .off = SO(dedupe.key),
	  .doc = "The key is this dot path through the JSON body." },
	{ .name = "sources.*.dedupe.ttl_seconds", .type = T_U64,
	  .scope = S_SOURCE, .off = SO(dedupe.ttl_seconds), .def = "259200",
	  .min = 1, .max = 31536000,
	  .doc = "How long a key is remembered." },
	{ .name = "sources.*.forward_headers", .type = T_STRLIST,
	  .scope = S_SOURCE, .off = SO(forward_headers),
	  .off2 = SO(nforward_headers), .flags = F_NULLABLE,
	  .doc = "The request headers passed to sinks (names, any case).  "
	    "Absent: every header but credentials, framing, hop-by-hop and "
	    "x-ankusa-*." },
	{ .name = "sources.*.event_type", .type = T_SECTION,
	  .check = conf_check_event_type,
	  .doc = "Where the hooks' event type is read: a map of header or "
	    "json (a dot path).  Absent: the verify preset's (stripe and "
	    "standard_webhooks: the body's type; github: X-GitHub-Event, "
	    "and with the body's action, EVENT.ACTION; shopify: "
	    "X-Shopify-Topic; slack: the body's event.type, else its type; "
	    "zoom: the body's event), else none.  Stored with the hook; "
	    "the sinks' filters read it." },
	{ .name = "sources.*.event_type.header", .type = T_KEYHDR,
	  .scope = S_SOURCE, .off = SO(event_type),
	  .doc = "The event type is this request header." },
	{ .name = "sources.*.event_type.json", .type = T_KEYJSON,
	  .scope = S_SOURCE, .off = SO(event_type),
	  .doc = "The event type is this dot path through the JSON body." },
	{ .name = "sources.*.retry", .type = T_SECTION, .obj = O_RETRY,
	  .check = conf_check_retry,
	  .doc = "This source's retry policy; each key absent here is "
	    "dispatch.retry's." },
	{ .name = "sources.*.retry.base_ms", .type = T_U64, .scope = S_SOURCE,
	  .off = SO(retry.base_ms), .min = 1, .max = MS_DAY,
	  .doc = "The first delay." },
	{ .name = "sources.*.retry.max_ms", .type = T_U64, .scope = S_SOURCE,
	  .off = SO(retry.max_ms), .min = 1, .max = MS_DAY,
	  .doc = "The longest delay." },
	{ .name = "sources.*.retry.max_attempts", .type = T_U32,
	  .scope = S_SOURCE, .off = SO(retry.max_attempts), .min = 1,
	  .max = 1000000,
	  .doc = "Attempts before the row is dead-lettered." },
	{ .name = "sources.*.retry.jitter", .type = T_BOOL, .scope = S_SOURCE,
	  .off = SO(retry.jitter),
	  .doc = "Multiply each delay by a random factor in [0.5, 1]." },
	{ .name = "sources.*.retry.max_elapsed_ms", .type = T_U64,
	  .scope = S_SOURCE, .off = SO(retry.max_elapsed_ms), .min = 1,
	  .max = 365 * MS_DAY,
	  .doc = "The retry horizon from the first attempt." },
	{ .name = "sources.*.retry.schedule_ms", .type = T_MSLIST,
	  .scope = S_SOURCE, .off = SO(retry.schedule),
	  .off2 = SO(retry.nschedule), .min = 1, .max = MS_DAY,
	  .doc = "The delays after each attempt, the last repeating (see "
	    "dispatch.retry.schedule_ms)." },
	{ .name = "sources.*.sinks", .type = T_LISTOF, .obj = O_SINK,
	  .flags = F_REQUIRED | F_LAST,
	  .doc = "Where the source's hooks are delivered: a list of at least "
	    "one sink, each delivered at least once." },
	{ .name = "sources.*.sinks[]", .type = T_SECTION, .sinks = M_ALL,
	  .check = conf_check_sink,
	  .doc = "One sink: a type and its options." },
	{ .name = "sources.*.sinks[].type", .type = T_SINKTYPE,
	  .scope = S_SINK, .off = KO(type), .names = conf_sink_types,
	  .refused = conf_sink_refused, .flags = F_REQUIRED | F_FIRST,
	  .sinks = M_ALL,
	  .doc = "http, sqs, google_pubsub, log, rabbitmq, nats, redis or "
	    "kafka." },
	{ .name = "sources.*.sinks[].ordered", .type = T_BOOL,
	  .scope = S_SINK, .off = KO(ordered), .def = "false", .sinks = M_ALL,
	  .doc = "Deliver in order, one at a time, per lane: per order_key, "
	    "or one lane for the sink." },
	{ .name = "sources.*.sinks[].order_key", .type = T_SECTION,
	  .sinks = M_ALL, .check = conf_check_order_key,
	  .doc = "The lane key of an ordered sink: a map of header or "
	    "json.  Absent: one lane per sink." },
	{ .name = "sources.*.sinks[].order_key.header", .type = T_KEYHDR,
	  .scope = S_SINK, .off = KO(order_key), .sinks = M_ALL,
	  .doc = "The lane key is this request header." },
	{ .name = "sources.*.sinks[].order_key.json", .type = T_KEYJSON,
	  .scope = S_SINK, .off = KO(order_key), .sinks = M_ALL,
	  .doc = "The lane key is this dot path through the JSON body." },
	{ .name = "sources.*.sinks[].filter", .type = T_SECTION,
	  .sinks = M_ALL, .check = conf_check_filter,
	  .doc = "Which hooks the sink gets, decided in the edge: a map of "
	    "event_types or jq.  A hook no sink of its source wants is "
	    "answered 200 filtered and not stored.  Absent: every hook." },
	{ .name = "sources.*.sinks[].filter.event_types", .type = T_NAMES,
	  .scope = S_SINK, .off = KO(filter_types), .off2 = KO(nfilter_types),
	  .sinks = M_ALL,
	  .doc = "The event types the sink gets (the source's event_type): "
	    "exact names, and patterns ending in * that match every type "
	    "beginning with what precedes it (invoice.* matches "
	    "invoice.paid, not invoice).  A hook without an event type "
	    "matches none." },
	{ .name = "sources.*.sinks[].filter.jq", .type = T_STR,
	  .scope = S_SINK, .off = KO(filter_jq), .sinks = M_ALL,
	  .doc = "A jq program run on the JSON body (null when the body is "
	    "not JSON): the sink gets the hook when its first output is "
	    "true.  Compiled when the configuration loads (one that does not "
	    "compile is an error); an evaluation that fails or runs past "
	    "its budget (http.jq_timeout_ms of CPU, "
	    "http.jq_max_memory_bytes) counts as a match, and is logged and "
	    "counted." },
	{ .name = "sources.*.sinks[].url", .type = T_URL, .scope = S_SINK,
	  .off = KO(u.http.url), .flags = F_REQUIRED, .sinks = M_HTTP,
	  .doc = "The endpoint, http:// or https://." },
	{ .name = "sources.*.sinks[].method", .type = T_ENUMSTR,
	  .scope = S_SINK, .off = KO(u.http.method), .def = "post",
	  .names = methods, .sinks = M_HTTP,
	  .doc = "The request method." },
	{ .name = "sources.*.sinks[].headers", .type = T_HEADERS,
	  .scope = S_SINK, .off = KO(u.http.headers),
	  .off2 = KO(u.http.nheaders), .sinks = M_HTTP,
	  .doc = "Headers added to every delivery: a map of name to value.  "
	    "They never replace the headers Ankusa sets: x-ankusa-*, "
	    "traceparent and tracestate, and with secret the Standard "
	    "Webhooks ones." },
	{ .name = "sources.*.sinks[].secret", .type = T_SECRETS,
	  .scope = S_SINK, .off = KO(u.http.secrets),
	  .off2 = KO(u.http.nsecrets), .flags = F_SECRET, .sinks = M_HTTP,
	  .doc = "Sign deliveries the Standard Webhooks way: a whsec_ "
	    "secret (padded, canonical base64, as the SDKs read it: "
	    "whsec_dGVzdA is refused), or a list of up to 8 while "
	    "rotating." },
	{ .name = "sources.*.sinks[].max_response_bytes", .type = T_U64,
	  .scope = S_SINK, .off = KO(u.http.max_response_bytes),
	  .def = "65536", .min = 1, .max = GIB, .sinks = M_HTTP,
	  .doc = "At most this much of an answer is read." },
	{ .name = "sources.*.sinks[].timeout_ms", .type = T_U64,
	  .scope = S_SINK, .off = KO(timeout_ms), .def = "5000", .min = 1,
	  .max = 3600000, .sinks = M_NET,
	  .doc = "The time one request may take." },
	{ .name = "sources.*.sinks[].inline_max_bytes", .type = T_U64,
	  .scope = S_SINK, .off = KO(inline_max_bytes), .def = "65536",
	  .min = 1, .max = GIB, .sinks = M_QUEUE,
	  .doc = "A larger body is sent by claim reference." },
	{ .name = "sources.*.sinks[].max_message_bytes", .type = T_U64,
	  .scope = S_SINK, .off = KO(max_message_bytes), .def = "1048576",
	  .min = 1, .max = 1048576, .sinks = M_SQS,
	  .doc = "sqs: the largest message sent; a larger one is "
	    "dead-lettered." },
	{ .name = "sources.*.sinks[].max_message_bytes", .type = T_U64,
	  .scope = S_SINK, .off = KO(max_message_bytes), .def = "10000000",
	  .min = 1, .max = 10000000, .sinks = M_PUBSUB,
	  .doc = "google_pubsub: the largest message sent; a larger one is "
	    "dead-lettered." },
	{ .name = "sources.*.sinks[].queue_url", .type = T_URL,
	  .scope = S_SINK, .off = KO(u.sqs.queue_url), .flags = F_REQUIRED,
	  .sinks = M_SQS,
	  .doc = "The queue (never created); a name ending .fifo is a FIFO "
	    "queue." },
	{ .name = "sources.*.sinks[].region", .type = T_STR, .scope = S_SINK,
	  .off = KO(u.sqs.region), .sinks = M_SQS,
	  .doc = "The AWS region." },
	{ .name = "sources.*.sinks[].endpoint", .type = T_URL,
	  .scope = S_SINK, .off = KO(u.sqs.endpoint), .sinks = M_SQS,
	  .doc = "sqs: the endpoint; default the queue URL's origin." },
	{ .name = "sources.*.sinks[].message_group_id", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.sqs.message_group_id), .sinks = M_SQS,
	  .doc = "The MessageGroupId; on a FIFO queue default "
	    "tenant/source." },
	{ .name = "sources.*.sinks[].access_key_id", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.sqs.access_key_id), .sinks = M_SQS,
	  .doc = "The access key id; absent: the AWS_* environment." },
	{ .name = "sources.*.sinks[].secret_access_key", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.sqs.secret_access_key),
	  .flags = F_SECRET, .sinks = M_SQS,
	  .doc = "The secret access key." },
	{ .name = "sources.*.sinks[].session_token", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.sqs.session_token), .flags = F_SECRET,
	  .sinks = M_SQS,
	  .doc = "A session token for temporary credentials." },
	{ .name = "sources.*.sinks[].project", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.pubsub.project), .flags = F_REQUIRED,
	  .sinks = M_PUBSUB,
	  .doc = "The Google Cloud project." },
	{ .name = "sources.*.sinks[].topic", .type = T_STR, .scope = S_SINK,
	  .off = KO(u.pubsub.topic), .flags = F_REQUIRED, .sinks = M_PUBSUB,
	  .doc = "The topic (never created)." },
	{ .name = "sources.*.sinks[].endpoint", .type = T_URL,
	  .scope = S_SINK, .off = KO(u.pubsub.endpoint),
	  .def = "https://pubsub.googleapis.com", .sinks = M_PUBSUB,
	  .doc = "google_pubsub: the API endpoint (or an emulator)." },
	{ .name = "sources.*.sinks[].ordering_key", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.pubsub.ordering_key),
	  .sinks = M_PUBSUB,
	  .doc = "A static ordering key." },
	{ .name = "sources.*.sinks[].auth", .type = T_ENUMSTR,
	  .scope = S_SINK, .off = KO(u.pubsub.auth), .def = "metadata",
	  .names = auths, .sinks = M_PUBSUB,
	  .doc = "metadata (the GCE/GKE metadata server), token (the token "
	    "below) or none (an emulator)." },
	{ .name = "sources.*.sinks[].token", .type = T_STR, .scope = S_SINK,
	  .off = KO(u.pubsub.token), .flags = F_SECRET, .sinks = M_PUBSUB,
	  .doc = "The bearer token; required with auth token, refused "
	    "otherwise." },
	{ .name = "sources.*.sinks[].rate", .type = T_SECTION, .sinks = M_ALL,
	  .doc = "A token bucket per sink key: at most per_second attempts "
	    "a second (a batching sink: entries), burst at once.  A row "
	    "whose key has no token stays due and spends no attempt.  A "
	    "429 or 503 with Retry-After holds the key until then.  "
	    "PUT /v1/tenants/{t}/sources/{s}/sinks/{i}/rate overrides it." },
	{ .name = "sources.*.sinks[].rate.per_second", .type = T_FLOAT,
	  .scope = S_SINK, .off = KO(rate_per_second), .fmax = 1e6,
	  .flags = F_REQUIRED, .sinks = M_ALL,
	  .doc = "Tokens a second (0.5: one every 2 s)." },
	{ .name = "sources.*.sinks[].rate.burst", .type = T_U32,
	  .scope = S_SINK, .off = KO(rate_burst), .min = 1, .max = 1000000,
	  .sinks = M_ALL,
	  .doc = "The bucket's size; default max(1, ceil(per_second))." },
	{ .name = "sources.*.sinks[].retry", .type = T_SECTION,
	  .obj = O_RETRY, .sinks = M_ALL, .check = conf_check_retry,
	  .doc = "This sink's retry policy; each key absent here is its "
	    "source's (then dispatch.retry's)." },
	{ .name = "sources.*.sinks[].retry.base_ms", .type = T_U64,
	  .scope = S_SINK, .off = KO(retry.base_ms), .min = 1, .max = MS_DAY,
	  .sinks = M_ALL, .doc = "The first delay." },
	{ .name = "sources.*.sinks[].retry.max_ms", .type = T_U64,
	  .scope = S_SINK, .off = KO(retry.max_ms), .min = 1, .max = MS_DAY,
	  .sinks = M_ALL, .doc = "The longest delay." },
	{ .name = "sources.*.sinks[].retry.max_attempts", .type = T_U32,
	  .scope = S_SINK, .off = KO(retry.max_attempts), .min = 1,
	  .max = 1000000, .sinks = M_ALL,
	  .doc = "Attempts before the row is dead-lettered." },
	{ .name = "sources.*.sinks[].retry.jitter", .type = T_BOOL,
	  .scope = S_SINK, .off = KO(retry.jitter), .sinks = M_ALL,
	  .doc = "Multiply each delay by a random factor in [0.5, 1]." },
	{ .name = "sources.*.sinks[].retry.max_elapsed_ms", .type = T_U64,
	  .scope = S_SINK, .off = KO(retry.max_elapsed_ms), .min = 1,
	  .max = 365 * MS_DAY, .sinks = M_ALL,
	  .doc = "The retry horizon from the first attempt." },
	{ .name = "sources.*.sinks[].retry.schedule_ms", .type = T_MSLIST,
	  .scope = S_SINK, .off = KO(retry.schedule),
	  .off2 = KO(retry.nschedule), .min = 1, .max = MS_DAY,
	  .sinks = M_ALL,
	  .doc = "The delays after each attempt, the last repeating (see "
	    "dispatch.retry.schedule_ms)." },
	/* Not kafka's: its brokers speak their own protocol, not HTTP. */
	{ .name = "sources.*.sinks[].proxy", .type = T_URL, .scope = S_SINK,
	  .off = KO(proxy), .flags = F_NULLABLE,
	  .sinks = M_HTTP | M_SQS | M_PUBSUB,
	  .doc = "This sink's forward proxy, as egress.proxy, which it "
	    "overrides (egress.no_proxy too); null or \"\": no proxy at "
	    "all." },
	{ .name = "sources.*.sinks[].auth", .type = T_SECTION,
	  .sinks = M_HTTP,
	  .doc = "http: how the sink is authenticated: type bearer "
	    "(token), basic (username, password) or "
	    "oauth2_client_credentials (token_url, client_id, "
	    "client_secret, scope, audience, client_auth).  An OAuth2 access "
	    "token is fetched by each deliver process, kept per sink until "
	    "shortly before its expires_in, and dropped on a 401 from the "
	    "sink (a 401 is then transient: the next attempt fetches "
	    "another).  A failure to get one is a transient attempt error "
	    "naming the token endpoint." },
	{ .name = "sources.*.sinks[].auth.type", .type = T_ENUM,
	  .scope = S_SINK, .off = KO(u.http.auth.type), .names = auth_types,
	  .flags = F_REQUIRED, .sinks = M_HTTP,
	  .doc = "bearer, basic or oauth2_client_credentials." },
	{ .name = "sources.*.sinks[].auth.token", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.http.auth.token), .flags = F_SECRET,
	  .sinks = M_HTTP,
	  .doc = "bearer: the token sent as Authorization: Bearer." },
	{ .name = "sources.*.sinks[].auth.username", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.http.auth.username), .sinks = M_HTTP,
	  .doc = "basic: the user name (no colon)." },
	{ .name = "sources.*.sinks[].auth.password", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.http.auth.password),
	  .flags = F_SECRET, .sinks = M_HTTP,
	  .doc = "basic: the password." },
	{ .name = "sources.*.sinks[].auth.token_url", .type = T_URL,
	  .scope = S_SINK, .off = KO(u.http.auth.token_url), .sinks = M_HTTP,
	  .doc = "oauth2_client_credentials: the token endpoint; https, or "
	    "plain http to loopback only.  The egress guard and the proxy "
	    "apply to it as to the sink." },
	{ .name = "sources.*.sinks[].auth.client_id", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.http.auth.client_id), .sinks = M_HTTP,
	  .doc = "oauth2_client_credentials: the client id." },
	{ .name = "sources.*.sinks[].auth.client_secret", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.http.auth.client_secret),
	  .flags = F_SECRET, .sinks = M_HTTP,
	  .doc = "oauth2_client_credentials: the client secret." },
	{ .name = "sources.*.sinks[].auth.scope", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.http.auth.scope), .sinks = M_HTTP,
	  .doc = "oauth2_client_credentials: the scope asked for; absent: "
	    "none." },
	{ .name = "sources.*.sinks[].auth.audience", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.http.auth.audience), .sinks = M_HTTP,
	  .doc = "oauth2_client_credentials: the audience asked for (Auth0 "
	    "and others); absent: none." },
	{ .name = "sources.*.sinks[].auth.client_auth", .type = T_ENUM,
	  .scope = S_SINK, .off = KO(u.http.auth.client_post),
	  .names = client_auths, .def = "basic", .sinks = M_HTTP,
	  .doc = "oauth2_client_credentials: how the client authenticates "
	    "to the token endpoint: basic (HTTP basic, RFC 6749 2.3.1) or "
	    "post (client_id and client_secret in the form)." },
	{ .name = "sources.*.sinks[].tls", .type = T_SECTION,
	  .sinks = M_HTTP,
	  .doc = "http: TLS towards the sink.  The files are read by "
	    "ankusad when it loads the configuration (at a reload as "
	    "node.user) and their bytes go to the deliver processes with "
	    "each job." },
	{ .name = "sources.*.sinks[].tls.client_cert_file", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.http.tls.client_cert_file),
	  .sinks = M_HTTP,
	  .doc = "A client certificate (PEM, its chain may follow) for "
	    "mutual TLS; with client_key_file." },
	{ .name = "sources.*.sinks[].tls.client_key_file", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.http.tls.client_key_file),
	  .sinks = M_HTTP,
	  .doc = "The client certificate's private key (PEM, unencrypted)." },
	{ .name = "sources.*.sinks[].tls.ca_file", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.http.tls.ca_file), .sinks = M_HTTP,
	  .doc = "The CAs (PEM) the sink's certificate is verified "
	    "against, in place of the system's." },
	{ .name = "sources.*.sinks[].tls.server_name", .type = T_STR,
	  .scope = S_SINK, .off = KO(u.http.tls.server_name),
	  .sinks = M_HTTP,
	  .doc = "The name sent in SNI and verified in the sink's "
	    "certificate (and sent as Host), in place of the URL's host, "
	    "which is still the address connected to." },
	{ .name = "sources.*.sinks[].disable_on", .type = T_STATUSES,
	  .scope = S_SINK, .off = KO(disable_on), .off2 = KO(disable_on_set),
	  .sinks = M_NET,
	  .doc = "The answers that disable the sink key (source and sink "
	    "index, in every tenant), default [410]; [] never: the row "
	    "answered is held with the key's others, its attempt counted, "
	    "until ankusactl resume (ankusad(8), DELIVERIES, "
	    "Auto-disable)." },
	{ .name = "sources.*.sinks[].disable_after_s", .type = T_U64,
	  .scope = S_SINK, .off = KO(disable_after_s), .def = "null",
	  .min = 1, .max = 31536000, .flags = F_NULLABLE, .sinks = M_NET,
	  .doc = "Disable the sink key when every attempt of it has failed "
	    "for this long (a success starts the count again; a restart "
	    "too).  Null: never." },
#include "conf_keys_brokers.inc"
	/* notifications */
	{ .name = "notifications", .type = T_SECTION,
	  .doc = "Operational notices (ankusad(8), DELIVERIES, "
	    "Notifications): sink.disabled, sink.enabled, breaker.opened, "
	    "breaker.closed, dlq.threshold, replay.finished, "
	    "replication.master_changed, as Standard Webhooks JSON {type, "
	    "timestamp, data}, stored as hooks of the reserved source "
	    "_notifications of the reserved tenant _ankusa and delivered as "
	    "any hook is." },
	{ .name = "notifications.sinks", .type = T_LISTOF, .obj = O_NOTIFY,
	  .doc = "The sinks of the notices, with the keys of "
	    "sources.*.sinks[] (secret signs them).  A notice about one of "
	    "them is logged only." },
};

const size_t conf_tab_n = sizeof(conf_tab) / sizeof(conf_tab[0]);

/*
 * The keys of the Elixir Ankusa's files for what this build does not have
 * (its config loader's schema): each is refused with a line naming it,
 * never as an unknown key.  Keys it shares with this daemon are in
 * conf_tab[]; a key not there and not here is unknown.
 */
const struct cnosup conf_nosup_keys[] = {
	{ "storage", "it keeps no segment archive; claims go to "
	    "claim_check.store" },
	{ "lifecycle", "it publishes no lifecycle events" },
	{ "wal.publish_timeout_ms", "it applies to wal.type none" },
	{ "routes.max_routes", "route management" },
	{ "routes.store", "route management" },
	{ "routes.cache", "route management" },
	{ "routes.trusted_proxies", "route management" },
	{ "routes.ip_rules", "route management" },
	{ "routes.admin", "route management" },
	{ "routes.log_sample", "route management" },
	{ "routes.ip_denied_status", "route management" },
	{ "routes.seed", "route management" },
	{ "backup.interval_ms", "ankusactl backup DIR copies the running "
	    "store" },
	{ "backup.keep", "ankusactl backup DIR copies the running store" },
	{ "backup.store", "ankusactl backup DIR copies the running store" },
	{ "source_store.url", "sources come from this file only" },
	{ "source_store.namespace", "sources come from this file only" },
	{ "source_store.tick_ms", "sources come from this file only" },
	{ "claim_check.store.gcs", "use a local or s3 store" },
	/* Its WAL era's: a shared log, a polling dispatcher, a claim
	 * gateway with tokens, and dedupe's first name. */
	{ "dispatch.poll_ms", "dispatch wakes at each commit and each due "
	    "time, it does not poll" },
	{ "wal.postgres", "every hook is committed to this node's store; a "
	    "replicated group shares one (replication)" },
	{ "claim_check.max_bytes", "a body is bounded by "
	    "http.max_body_bytes, a pack by claim_check.pack_max_bytes" },
	{ "claim_check.tokens", "the claim gateway's tokens are "
	    "claim_check.auth.tokens, without tenants" },
	{ "claim_check.remote", "every node reads the claims from "
	    "claim_check.store itself" },
	{ "sources.*.dedup", "it is dedupe now (a preset, or header, json "
	    "and ttl_seconds)" },
	{ NULL, NULL }
};

/*
 * The ANKUSA_* variables of the Elixir image, each overriding one key over
 * the file.  Those whose key this build lacks are refused when set, as the
 * key would be.  ANKUSA_CONTROL_SOCKET is ours, the one ankusactl reads
 * too: the systemd unit puts the socket in its RuntimeDirectory with it.
 */
const struct cenv conf_env_keys[] = {
	{ "ANKUSA_ROLES", "node.roles", NULL },
	{ "ANKUSA_DATA_DIR", "node.data_dir", NULL },
	{ "ANKUSA_LOG_LEVEL", "log.level", NULL },
	{ "ANKUSA_HTTP_PORT", "http.port", NULL },
	{ "PORT", "http.port", "ANKUSA_HTTP_PORT" },
	{ "ANKUSA_ADMIN_PORT", "admin.port", NULL },
	{ "ANKUSA_ADMIN_IP", "admin.ip", NULL },
	{ "ANKUSA_CLAIM_CHECK_PORT", "claim_check.port", NULL },
	{ "ANKUSA_CLAIM_CHECK_IP", "claim_check.ip", NULL },
	{ "ANKUSA_ROUTES_ENABLED", "routes.enabled", NULL },
	{ "ANKUSA_ROUTES_STORE_URL", "routes.store.url", NULL },
	{ "ANKUSA_SOURCE_STORE_URL", "source_store.url", NULL },
	{ "ANKUSA_WAL_TYPE", "wal.type", NULL },
	{ "ANKUSA_WAL_POSTGRES_URL", "wal.postgres.url", NULL },
	{ "ANKUSA_STORAGE_TYPE", "storage.type", NULL },
	{ "ANKUSA_S3_BUCKET", "storage.s3.bucket", NULL },
	{ "ANKUSA_S3_REGION", "storage.s3.region", NULL },
	{ "ANKUSA_S3_ENDPOINT", "storage.s3.endpoint", NULL },
	{ "ANKUSA_GCS_BUCKET", "storage.gcs.bucket", NULL },
	{ "ANKUSA_STORAGE_KEY_PREFIX", "storage.key_prefix", NULL },
	{ "ANKUSA_BACKUP_ENABLED", "backup.enabled", NULL },
	{ "ANKUSA_CONTROL_SOCKET", "control.socket", NULL },
	{ NULL, NULL, NULL }
};

const char conf_default_yaml[] =
    "# The embedded default configuration of ankusad, used when no\n"
    "# configuration file exists: one open source, logged.\n"
    "#   curl -d '{\"hello\":1}' http://127.0.0.1:4000/webhooks/demo\n"
    "node:\n"
    "  data_dir: ./ankusa-data\n"
    "http:\n"
    "  ip: 127.0.0.1\n"
    "  port: 4000\n"
    "sources:\n"
    "  demo:\n"
    "    verify:\n"
    "      type: none\n"
    "    sinks:\n"
    "      - type: log\n";
