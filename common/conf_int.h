/* SPDX-License-Identifier: ISC */
/*
 * conf_int.h: what the files of the configuration loader share (conf.c,
 * conf_keys.c and the rest of conf_*.c), and tests/check_conf.c, which
 * reads the key table; nothing else includes it.  The interface is
 * conf.h.
 */
#ifndef ANKUSA_CONF_INT_H
#define ANKUSA_CONF_INT_H

#include <stddef.h>
#include <stdint.h>

#include <yaml.h>

#include "conf.h"

/* The configured paths (configure, Makefile.am): the directory of
 * ankusa.yml, and the control socket's default path, the one definition
 * that ankusactl and the systemd unit share. */
#if !defined(ANKUSA_SYSCONFDIR) || !defined(ANKUSA_CONTROLSOCKET)
#error "ANKUSA_SYSCONFDIR and ANKUSA_CONTROLSOCKET come from the Makefile"
#endif
/* node.data_dir when the file does not say: the Elixir Ankusa's default. */
#ifndef ANKUSA_DATADIR
#define ANKUSA_DATADIR		"/var/lib/ankusa"
#endif

enum ckey_type {
	T_SECTION,		/* a map of known keys */
	T_MAPOF,		/* a map of id -> section */
	T_LISTOF,		/* a list of sections (sinks) */
	T_DEDUPE,		/* a preset name, or a section */
	T_BOOL,			/* int */
	T_U16,			/* uint16_t */
	T_U32,			/* uint32_t */
	T_U64,			/* uint64_t */
	T_FLOAT,		/* double, > 0 */
	T_MODE,			/* uint32_t, written in octal */
	T_STR,			/* char *, non-empty */
	T_IDENT,		/* char *, [A-Za-z0-9_-]{1,64} */
	T_ADDR,			/* char *, numeric IPv4 or IPv6 address */
	T_URL,			/* char *, http:// or https:// */
	T_PREFIX,		/* char *, URL path prefix, "/" stored as "" */
	T_SOCKPATH,		/* char *, fits in sun_path */
	T_ENUM,			/* int, index into names */
	T_ENUMSTR,		/* char *, the canonical name */
	T_SINKTYPE,		/* enum sink_type of the sink */
	T_SECRETS,		/* struct blob[] at off, int count at off2 */
	T_STRLIST,		/* char ** at off, int count at off2 */
	T_CIDRS,		/* the same, of egress.allow entries */
	T_HOSTPORTS,		/* the same, of host:port (checked by the
				 * section's check) */
	T_NAMES,		/* the same, of names as written (not empty;
				 * event types) */
	T_HEADERS,		/* struct header_kv * at off, count at off2 */
	T_KEYHDR,		/* struct keyspec: a header name */
	T_KEYJSON,		/* struct keyspec: a JSON dot path */
	T_ONLY,			/* a string that must be names[0]: the
				 * Elixir Ankusa's others are refused */
	T_OFF,			/* a boolean that must be false */
	T_ROLES,		/* node.roles: a list, or a comma-separated
				 * string, that names every role; not stored */
	T_STATUSES,		/* a list of HTTP statuses: uint64_t bits at
				 * off, int "set" at off2 */
	T_TOKENS,		/* struct conf_token * at off, count at off2:
				 * a list of {name, token | token_file |
				 * token_sha256} (with scopes when F_SCOPES;
				 * min: a token's least length in bytes;
				 * conf_tokens.c) */
	T_MSLIST,		/* uint64_t[RETRY_SCHEDULE_MAX] at off, int
				 * count at off2: 1..RETRY_SCHEDULE_MAX
				 * integers, each in min..max */
};

/* Which object a key's offset is relative to. */
enum ckey_scope {
	S_NONE = 0,
	S_CONF,
	S_SOURCE,
	S_SINK,
	S_TENANT,		/* struct tenant_window */
	S_RATE,			/* struct rate_limit */
};

/* What a section creates or marks when it is present. */
enum ckey_obj {
	O_NONE = 0,
	O_RATE_DEFAULT,
	O_RATE_TENANT,
	O_TENANT,
	O_SOURCE,
	O_SINK,
	O_CLAIM,
	O_RETRY,
	O_REPL,
	O_NOTIFY,		/* notifications.sinks: the reserved source's
				 * sinks, walked as sources.*.sinks[] */
};

#define F_REQUIRED	0x001	/* must be present in its section */
#define F_RESTART	0x002	/* a reload cannot change it */
#define F_NULLABLE	0x004	/* null is accepted: 0 or NULL */
#define F_SECRET	0x008	/* never echoed in a message */
#define F_FIRST		0x010	/* walked before its siblings */
#define F_LAST		0x020	/* walked after its siblings */
#define F_CROSS		0x040	/* also bounded by another key (conf_finish) */
#define F_DEFNULL	0x080	/* the id "default" means unset */
#define F_SCOPES	0x100	/* T_TOKENS: each entry has scopes (scope.h) */
#define F_URLCRED	0x200	/* with F_SECRET: a URL whose secret is its
				 * userinfo; written without an '@' it holds
				 * none (no warning of a secret inline) */
#define F_COMMA		0x400	/* T_HOSTPORTS: one string of them separated
				 * by commas is a list too (the form one
				 * ${VAR} carries: kafka's brokers) */

#define M_HTTP		(1 << SINK_HTTP)
#define M_SQS		(1 << SINK_SQS)
#define M_PUBSUB	(1 << SINK_PUBSUB)
#define M_LOG		(1 << SINK_LOG)
#define M_RABBITMQ	(1 << SINK_RABBITMQ)
#define M_NATS		(1 << SINK_NATS)
#define M_REDIS		(1 << SINK_REDIS)
#define M_KAFKA		(1 << SINK_KAFKA)
#define M_BROKER	(M_RABBITMQ | M_NATS | M_REDIS | M_KAFKA)
#define M_NET		(M_HTTP | M_SQS | M_PUBSUB | M_BROKER)
#define M_QUEUE		(M_SQS | M_PUBSUB | M_BROKER)
#define M_ALL		(M_NET | M_LOG)

struct cparse;
struct cctx;

/* A cross check of a section, run after its keys were walked and set. */
typedef void	 ccheck_fn(struct cparse *, struct cctx *, yaml_node_t *,
		    const char *);

struct conf_key {
	const char		*name;
	enum ckey_type		 type;
	enum ckey_scope		 scope;
	size_t			 off;
	size_t			 off2;
	const char		*def;
	uint64_t		 min;
	uint64_t		 max;
	double			 fmax;
	const char *const	*names;		/* T_ENUM, T_ENUMSTR, T_ONLY */
	/* Values of the Elixir Ankusa that this build refuses (T_ENUMSTR,
	 * T_ONLY, T_SINKTYPE), and why (T_ONLY, T_OFF, or NULL). */
	const char *const	*refused;
	const char		*nosup;
	int			 flags;
	int			 sinks;		/* sink types it applies to */
	enum ckey_obj		 obj;
	ccheck_fn		*check;		/* run after a section's walk */
	const char		*doc;
};

/* A key of the Elixir Ankusa that this build does not have: name is a
 * dotted pattern as in conf_tab[], and covers every key below it. */
struct cnosup {
	const char	*name;
	const char	*why;		/* the words after "not supported by
					 * this build: " */
};

/* An environment variable that overrides a key (the Elixir image's). */
struct cenv {
	const char	*var;
	const char	*key;		/* dotted name, as in conf_tab[] */
	const char	*unless;	/* not read when this one is set */
};

/* One parse: the document, the result and the errors so far. */
struct cparse {
	yaml_document_t		*doc;
	struct conf		*conf;
	struct conf_errors	*errs;
	int			 nerr;
	int			 nosources;	/* a child's text without the
						 * sources (conf_role.c) */
	int			 role;		/* a child's part: its enum
						 * conf_role; -1: the master's
						 * text */
	char			**env_read;	/* conf.h; nenv_read names */
	int			 nenv_read;
};

/* The objects that keys of each scope are stored in, at this point of the
 * walk. */
struct cctx {
	struct source_conf	*src;
	struct sink_conf	*sink;
	struct tenant_window	*tw;
	struct rate_limit	*rl;
	int			 mask;		/* 1 << sink type, 0: no sink */
};

/* The key a dedupe preset reads. */
struct cpreset_key {
	enum keyspec_kind	 kind;
	const char		*name;
};

/* conf_keys.c: the table and the names it refers to. */
extern const struct conf_key	 conf_tab[];
extern const size_t		 conf_tab_n;
#define CONF_TAB_N	conf_tab_n	/* the entries of conf_tab[] */
extern const char *const	 conf_verify_types[];
extern const char *const	 conf_presets[];
extern const struct cpreset_key	 conf_preset_keys[];
extern const char *const	 conf_hmac_keys[];
extern const char *const	 conf_mtls_keys[];
extern const char *const	 conf_sink_types[];
extern const char *const	 conf_sink_refused[];
extern const struct cnosup	 conf_nosup_keys[];
extern const struct cenv	 conf_env_keys[];
extern const char		 conf_default_yaml[];

/* Record an error; ", line N" is appended when line > 0. */
void		 conf_err(struct cparse *, int, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
/* getenv(name) for the parse, which keeps the name when it is set
 * (env_read): every variable a parse reads is read through it. */
const char	*conf_getenv(struct cparse *, const char *);

/* YAML nodes: the line of a node (0: none), whether it is null, what it
 * is in a message ("a map", "a list", ...). */
int		 conf_yline(const yaml_node_t *);
int		 conf_yisnull(const yaml_node_t *);
const char	*conf_ykind(const yaml_node_t *);
yaml_node_t	*conf_ymap_get(yaml_document_t *, yaml_node_t *, const char *);

/* What a key must be: the words after "must be". */
void		 conf_key_want(const struct conf_key *, char *, size_t);
void		 conf_set_str(char **, const char *);

/* The walk: the defaults of one scope (and sink type), then a section. */
void		 conf_defaults(struct cparse *, struct cctx *, enum ckey_scope,
		    int);
void		 conf_walk_section(struct cparse *, struct cctx *, const char *,
		    yaml_node_t *, const char *);

/* conf_yaml.c: the table's lookups, and the setters. */
const struct conf_key *conf_key_byname(const char *);
void		*conf_key_base(struct cparse *, struct cctx *,
		    const struct conf_key *);
#define CPATH_MAX	512	/* longest dotted key path in a message */

/* snprintf for key paths (cut when too long: it only shortens a
 * message), and a parent's path joined to a key with a dot. */
void		 conf_fmt(char *, size_t, const char *, ...)
		    __attribute__((format(printf, 3, 4)));
void		 conf_join(char *, size_t, const char *, const char *);
/* Decimal digits (a + before them allowed) that fit 64 bits: 0, or -1
 * when s is not that. */
int		 conf_parse_u64(const char *, uint64_t *);
/* Whether s is an HTTP token (RFC 9110's tchar, one or more). */
int		 conf_valid_token(const char *);
/* Standard base64 into a blob: 0, or -1 when s is not base64. */
int		 conf_b64_decode(const char *, struct blob *);
/* Whether the secrets here are whsec_ ones (a sink's, a verify's of a
 * Standard Webhooks type) rather than raw bytes. */
int		 conf_secret_whsec(struct cparse *, struct cctx *);
/* The list- and map-valued keys' setters (conf_lists.c), by type:
 * T_SECRETS; T_STRS, T_CIDRS, T_HOSTPORTS, T_NAMES; T_STATUSES; T_MSLIST;
 * T_HEADERS. */
void		 conf_set_secrets(struct cparse *, struct cctx *,
		    const struct conf_key *, void *, yaml_node_t *,
		    const char *);
void		 conf_set_strlist(struct cparse *, const struct conf_key *,
		    void *, yaml_node_t *, const char *);
void		 conf_set_statuses(struct cparse *, const struct conf_key *,
		    void *, yaml_node_t *, const char *);
void		 conf_set_mslist(struct cparse *, const struct conf_key *,
		    void *, yaml_node_t *, const char *);
void		 conf_set_headers(struct cparse *, const struct conf_key *,
		    void *, yaml_node_t *, const char *);
/* "<path> must be <what k wants>, got <what n is>". */
void		 conf_bad_node(struct cparse *, const struct conf_key *,
		    const char *, const yaml_node_t *);
/* The interpolated text of a scalar node; NULL (and an error) otherwise. */
char		*conf_scalar(struct cparse *, const yaml_node_t *,
		    const char *);
/* Type one scalar (after interpolation) into base + k->off: 0 or -1. */
int		 conf_set_text(struct cparse *, struct cctx *,
		    const struct conf_key *, void *, const char *,
		    const char *, int);

/* conf_tokens.c: a T_TOKENS list from its node (the previous list
 * freed); whether two configurations' lists of k differ; a copy of o's
 * list of k into w (-1: out of memory); n entries' strings and digests
 * freed, and the array. */
void		 conf_tokens_set(struct cparse *, const struct conf_key *,
		    void *, yaml_node_t *, const char *);
int		 conf_tokens_differ(const struct conf_key *, const char *,
		    const char *);
int		 conf_tokens_copy(const struct conf_key *, const char *, char *);
void		 conf_tokens_free(struct conf_token *, int);
/* Every list of o copied into w, as conf_tokens_copy (-1: out of
 * memory). */
int		 conf_tokens_copy_all(const struct conf *, struct conf *);

/* conf_elixir.c: the Elixir Ankusa's keys. */
/* 1 (and an error) if v is a value of k this build refuses, else 0. */
/* 1 when name is in the NULL-terminated list (which may be NULL). */
int		 conf_in_list(const char *const *, const char *);
#define conf_name_refused(k, name)	conf_in_list((k)->refused, (name))
int		 conf_refused(struct cparse *, const struct conf_key *,
		    const char *, const char *, int);
/* The entry of conf_nosup_keys[] covering the dotted pattern, or NULL. */
const struct cnosup *conf_nosup_find(const char *);
/* node.roles as n names or a comma-separated csv: 0, or -1 and an error. */
int		 conf_roles(struct cparse *, const char *const *, int,
		    const char *, const char *, int);
void		 conf_set_roles(struct cparse *, const struct conf_key *,
		    yaml_node_t *, const char *);
/* The ANKUSA_* environment overrides, after the walk of the file (of a
 * child's part, those of its keys). */
void		 conf_env_apply(struct cparse *, struct cctx *);

/* conf_role.c: 1 if the part of role holds the key (a dotted name as in
 * conf_tab[]), else 0. */
int		 conf_role_keeps(enum conf_role, const char *);

/* Zero and free n secrets (conf.c). */
void		 conf_free_blobs(struct blob *, int);

/* The checks that need the whole file, and values derived from others. */
void		 conf_finish(struct cparse *, yaml_node_t *);

/* The cross checks the table names. */
ccheck_fn	 conf_check_source;
ccheck_fn	 conf_check_dedupe;
ccheck_fn	 conf_check_sink;
ccheck_fn	 conf_check_filter;
ccheck_fn	 conf_check_event_type;
/* Whether the jq program compiles (conf_filter.c); else err says why. */
int		 conf_jq_compiles(const char *, char *err, size_t errlen);
ccheck_fn	 conf_check_order_key;
ccheck_fn	 conf_check_retry;
ccheck_fn	 conf_check_claim;
ccheck_fn	 conf_check_egress;
/* A sink's proxy, an http sink's auth and tls (conf_sinknet.c): checked,
 * the proxy's mode set, the tls files read. */
void		 conf_check_sinknet(struct cparse *, struct sink_conf *,
		    yaml_node_t *, const char *);
ccheck_fn	 conf_check_repl;
/* A URL at key of map is not one the egress guard refuses by its literal
 * host (conf_check.c). */
void		 conf_check_egress_url(struct cparse *, yaml_node_t *,
		    const char *path, const char *key, const char *url);
/* The same of a URL's host and port, as the guard checks plain http when
 * plain (a proxy's: 0, what it carries is the destination's scheme);
 * CONF_PLAIN_REDIS: plain, and the message names redis:// and rediss://
 * for http:// and https://. */
#define CONF_PLAIN_REDIS	2
void		 conf_check_egress_host(struct cparse *, int line,
		    const char *path, const char *key, const char *host,
		    uint16_t port, int plain);
int		 conf_repl_derive(struct conf_repl *);
/* "[v6]:port" or "host:port" (a host name, or an IPv4 address in
 * inet_pton form), the port 1..65535: 0 with *host malloc'd, lower-cased,
 * an IPv6 address in its canonical form, so that one site is one string;
 * or -1 (conf_check.c). */
int		 conf_hostport(const char *, char **host, unsigned *port);

#endif
