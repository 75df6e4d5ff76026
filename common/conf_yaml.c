/* SPDX-License-Identifier: ISC */
/*
 * conf_yaml.c: the walk of the YAML document, and the typing of its values.
 *
 * The node tree libyaml built is walked once, section by section, each key
 * looked up in the table (conf_keys.c) and its value typed, bounded and
 * stored where the table says; the defaults go through the same setters.
 *
 * Environment interpolation, in every scalar value (never in keys), before
 * the value is typed:
 *	${VAR}		the value of VAR; an unset VAR is an error naming
 *			the key
 *			(a VAR set to the empty string gives "")
 *	${VAR:-text}	the value of VAR, or text when VAR is unset or empty;
 *			text is taken literally and cannot contain "}"
 *	$${		a literal "${"; any other "$" is literal too
 *	${file:PATH}, ${credential:NAME}
 *			the bytes of a file, one trailing newline stripped
 *			(conf_secret.c)
 * Whether a value is null is decided on the text in the file, before
 * interpolation: a variable never makes a value null.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/un.h>

#include <arpa/inet.h>
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <yaml.h>

#include "b64.h"
#include "conf.h"
#include "conf_secret.h"
#include "conf_int.h"
#include "netaddr.h"

#define CSHOW_MAX	64	/* longest value echoed in a message */

/* A growing string. */
struct cbuf {
	char	*s;
	size_t	 len;
	size_t	 cap;
};

static const struct conf_key *ckey_find(const char *, int, int *);
static int	 ckey_parent_is(const struct conf_key *, const char *);
static void	 cshow(const struct conf_key *, const char *, char *, size_t);
static void	 cbad(struct cparse *, const struct conf_key *, const char *,
		    const char *, int);
static void	 cbuf_add(struct cbuf *, const char *, size_t);
static char	*cinterp(struct cparse *, const char *, const char *, int);
static int	 cparse_bool(const char *, int *);
static int	 cparse_mode(const char *, uint64_t *);
static int	 cenum(const struct conf_key *, const char *);
static int	 cvalid_url(const char *);
static int	 cvalid_jsonpath(const char *);
static void	 cset_null(const struct conf_key *, void *);
static void	 cset_node(struct cparse *, struct cctx *,
		    const struct conf_key *, yaml_node_t *, const char *);
static void	 cwalk_value(struct cparse *, struct cctx *,
		    const struct conf_key *, yaml_node_t *, const char *);
static void	 cwalk_mapof(struct cparse *, struct cctx *,
		    const struct conf_key *, yaml_node_t *, const char *);
static void	 cwalk_sinks(struct cparse *, struct cctx *,
		    const struct conf_key *, yaml_node_t *, const char *);

/*
 * YAML nodes.
 */

int
conf_yline(const yaml_node_t *n)
{
	return n == NULL ? 0 : (int)n->start_mark.line + 1;
}

/* Null is decided on the text in the file: a plain ~, null or nothing, or
 * an explicit !!null. */
int
conf_yisnull(const yaml_node_t *n)
{
	const char *v;

	if (n == NULL)
		return 1;
	if (n->type != YAML_SCALAR_NODE)
		return 0;
	if (n->tag != NULL && strcmp((const char *)n->tag, YAML_NULL_TAG) == 0)
		return 1;
	if (n->data.scalar.style != YAML_PLAIN_SCALAR_STYLE)
		return 0;
	v = (const char *)n->data.scalar.value;
	return v[0] == '\0' || strcmp(v, "~") == 0 || strcmp(v, "null") == 0 ||
	    strcmp(v, "Null") == 0 || strcmp(v, "NULL") == 0;
}

const char *
conf_ykind(const yaml_node_t *n)
{
	if (conf_yisnull(n))
		return "null";
	switch (n->type) {
	case YAML_MAPPING_NODE:
		return "a map";
	case YAML_SEQUENCE_NODE:
		return "a list";
	default:
		return "a string";
	}
}

yaml_node_t *
conf_ymap_get(yaml_document_t *doc, yaml_node_t *map, const char *key)
{
	yaml_node_pair_t *pr;
	yaml_node_t *k;

	if (map == NULL || map->type != YAML_MAPPING_NODE)
		return NULL;
	for (pr = map->data.mapping.pairs.start;
	    pr < map->data.mapping.pairs.top; pr++) {
		k = yaml_document_get_node(doc, pr->key);
		if (k != NULL && k->type == YAML_SCALAR_NODE &&
		    strcmp((const char *)k->data.scalar.value, key) == 0)
			return yaml_document_get_node(doc, pr->value);
	}
	return NULL;
}

/*
 * The table.
 */

/* The entry named pat that applies to sink type mask (mask 0: outside any
 * sink).  *other is set to 1 if pat names a key of another sink type. */
static const struct conf_key *
ckey_find(const char *pat, int mask, int *other)
{
	size_t i;

	if (other != NULL)
		*other = 0;
	for (i = 0; i < CONF_TAB_N; i++) {
		if (strcmp(conf_tab[i].name, pat) != 0)
			continue;
		if (mask == 0 || (conf_tab[i].sinks & mask))
			return &conf_tab[i];
		if (other != NULL)
			*other = 1;
	}
	return NULL;
}

const struct conf_key *
conf_key_byname(const char *name)
{
	size_t i;

	for (i = 0; i < CONF_TAB_N; i++)
		if (strcmp(conf_tab[i].name, name) == 0)
			return &conf_tab[i];
	return NULL;
}

/* True if the key sits directly in the section named pat ("" for the top). */
static int
ckey_parent_is(const struct conf_key *k, const char *pat)
{
	size_t pl = strlen(pat);
	const char *rest;

	if (pl == 0)
		rest = k->name;
	else if (strncmp(k->name, pat, pl) == 0 && k->name[pl] == '.')
		rest = k->name + pl + 1;
	else
		return 0;
	return strchr(rest, '.') == NULL && strchr(rest, '[') == NULL &&
	    strcmp(rest, "*") != 0;
}

void *
conf_key_base(struct cparse *p, struct cctx *c, const struct conf_key *k)
{
	switch (k->scope) {
	case S_CONF:
		return p->conf;
	case S_SOURCE:
		return c->src;
	case S_SINK:
		return c->sink;
	case S_TENANT:
		return c->tw;
	case S_RATE:
		return c->rl;
	case S_NONE:
		break;
	}
	return NULL;
}

/* What a key must be: the words after "must be". */
void
conf_key_want(const struct conf_key *k, char *buf, size_t sz)
{
	const char *const *e;
	size_t n;

	switch (k->type) {
	case T_SECTION:
		snprintf(buf, sz, "a map");
		break;
	case T_MAPOF:
		snprintf(buf, sz, "a map of ids");
		break;
	case T_LISTOF:
		snprintf(buf, sz, "a list of at least one sink");
		break;
	case T_DEDUPE:
		snprintf(buf, sz, "a preset name or a map");
		break;
	case T_BOOL:
		snprintf(buf, sz, "true or false");
		break;
	case T_U16:
	case T_U32:
	case T_U64:
		snprintf(buf, sz, "%san integer in %llu..%llu",
		    (k->flags & F_NULLABLE) ? "null or " : "",
		    (unsigned long long)k->min, (unsigned long long)k->max);
		break;
	case T_FLOAT:
		snprintf(buf, sz, "a number greater than 0 and at most %.15g",
		    k->fmax);
		break;
	case T_MODE:
		snprintf(buf, sz, "an octal mode in %04llo..%04llo",
		    (unsigned long long)k->min, (unsigned long long)k->max);
		break;
	case T_STR:
		snprintf(buf, sz, "a non-empty string");
		break;
	case T_IDENT:
		snprintf(buf, sz, "an id matching [A-Za-z0-9_-]{1,%d}",
		    CONF_ID_MAX);
		break;
	case T_ADDR:
		snprintf(buf, sz, "an IPv4 or IPv6 address");
		break;
	case T_URL:
		snprintf(buf, sz, "an http:// or https:// URL");
		break;
	case T_PREFIX:
		snprintf(buf, sz, "a path starting with / and not ending with "
		    "/ (or just /)");
		break;
	case T_SOCKPATH:
		snprintf(buf, sz, "a path of 1..%zu bytes",
		    sizeof(((struct sockaddr_un *)NULL)->sun_path) - 5);
		break;
	case T_OFF:
		snprintf(buf, sz, "false");
		break;
	case T_ROLES:
		snprintf(buf, sz, "a list of edge, dispatch, storage, "
		    "claim_check");
		break;
	case T_ONLY:
	case T_ENUM:
	case T_ENUMSTR:
	case T_SINKTYPE:
		n = snprintf(buf, sz, "one of ");
		for (e = k->names; *e != NULL && n < sz; e++)
			if (!conf_name_refused(k, *e))
				n += snprintf(buf + n, sz - n, "%s%s",
				    n > strlen("one of ") ? ", " : "", *e);
		break;
	case T_SECRETS:
		snprintf(buf, sz, "a secret or a list of 1..%d secrets",
		    CONF_MAX_SECRETS);
		break;
	case T_STRLIST:
		snprintf(buf, sz, "a list of header names");
		break;
	case T_CIDRS:
		snprintf(buf, sz, "a list of addresses or CIDRs, each with an "
		    "optional :port");
		break;
	case T_HOSTPORTS:
		snprintf(buf, sz, "a list of hosts, each in the form "
		    "below%s", k->flags & F_COMMA ? ", or one string of them "
		    "separated by commas" : "");
		break;
	case T_NAMES:
		snprintf(buf, sz, "a list of names");
		break;
	case T_HEADERS:
		snprintf(buf, sz, "a map of header names to strings");
		break;
	case T_MSLIST:
		snprintf(buf, sz, "a list of 1..%d integers, each in "
		    "%llu..%llu", RETRY_SCHEDULE_MAX,
		    (unsigned long long)k->min, (unsigned long long)k->max);
		break;
	case T_TOKENS:
		snprintf(buf, sz, "a list of {name, token | token_file | "
		    "token_sha256%s}", k->flags & F_SCOPES ? ", scopes" : "");
		break;
	case T_STATUSES:
		snprintf(buf, sz, "a list of HTTP statuses in 100..%d",
		    CONF_STATUS_MAX - 1);
		break;
	case T_KEYHDR:
		snprintf(buf, sz, "a header name");
		break;
	case T_KEYJSON:
		snprintf(buf, sz, "a dot path like a.b");
		break;
	}
}

/* A value as echoed in a message: secrets hidden, long ones cut. */
static void
cshow(const struct conf_key *k, const char *v, char *buf, size_t sz)
{
	size_t len = strlen(v);

	if (k != NULL && (k->flags & F_SECRET))
		snprintf(buf, sz, "a %zu-byte value (not shown)", len);
	else if (len == 0)
		snprintf(buf, sz, "\"\"");
	else if (len > CSHOW_MAX)
		snprintf(buf, sz, "%.*s...", CSHOW_MAX, v);
	else
		snprintf(buf, sz, "%s", v);
}

/* snprintf for key paths: a path too long for the buffer is cut, which
 * only shortens a message. */
void
conf_fmt(char *buf, size_t sz, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	(void)vsnprintf(buf, sz, fmt, ap);
	va_end(ap);
}

void
conf_join(char *buf, size_t sz, const char *a, const char *b)
{
	if (a[0] == '\0')
		conf_fmt(buf, sz, "%s", b);
	else
		conf_fmt(buf, sz, "%s.%s", a, b);
}

/* "<path> must be <constraint>, got <value>, line N" */
static void
cbad(struct cparse *p, const struct conf_key *k, const char *path,
    const char *v, int line)
{
	char want[256], got[CSHOW_MAX + 32];

	conf_key_want(k, want, sizeof(want));
	cshow(k, v, got, sizeof(got));
	conf_err(p, line, "%s must be %s, got %s", path, want, got);
}

/* The same for a node that has the wrong shape. */
void
conf_bad_node(struct cparse *p, const struct conf_key *k, const char *path,
    const yaml_node_t *n)
{
	char want[256];

	conf_key_want(k, want, sizeof(want));
	if (n != NULL && n->type == YAML_SCALAR_NODE && !conf_yisnull(n))
		cbad(p, k, path, (const char *)n->data.scalar.value,
		    conf_yline(n));
	else
		conf_err(p, conf_yline(n), "%s must be %s, got %s", path, want,
		    conf_ykind(n));
}

/*
 * Scalars: interpolation and typing.
 */

static void
cbuf_add(struct cbuf *b, const char *s, size_t len)
{
	char *n;
	size_t cap;

	if (b->len + len + 1 > b->cap) {
		cap = b->cap ? b->cap : 64;
		while (cap < b->len + len + 1)
			cap *= 2;
		if ((n = realloc(b->s, cap)) == NULL)
			abort();
		b->s = n;
		b->cap = cap;
	}
	memcpy(b->s + b->len, s, len);
	b->len += len;
	b->s[b->len] = '\0';
}

/* See the file header for the syntax.  NULL (and an error) on a bad or
 * unset reference. */
static char *
cinterp(struct cparse *p, const char *in, const char *path, int line)
{
	struct cbuf b = { NULL, 0, 0 };
	const char *s = in, *end, *name, *def, *v;
	char var[256];
	size_t nl;

	cbuf_add(&b, "", 0);
	while (*s != '\0') {
		if (s[0] == '$' && s[1] == '$' && s[2] == '{') {
			cbuf_add(&b, "${", 2);
			s += 3;
			continue;
		}
		if (s[0] != '$' || s[1] != '{') {
			cbuf_add(&b, s, 1);
			s++;
			continue;
		}
		name = s + 2;
		if ((end = strchr(name, '}')) == NULL) {
			conf_err(p, line, "%s: unterminated ${ in value", path);
			goto fail;
		}
		/* ${file:PATH}, ${credential:NAME} (conf_secret.c). */
		if (conf_secret_is_ref(name, end - name)) {
			char why[512], *fv;

			if ((fv = conf_secret_read(name, end - name, why,
			    sizeof(why))) == NULL) {
				conf_err(p, line, "%s: %s", path, why);
				goto fail;
			}
			cbuf_add(&b, fv, strlen(fv));
			free(fv);
			s = end + 1;
			continue;
		}
		nl = strspn(name, "ABCDEFGHIJKLMNOPQRSTUVWXYZ"
		    "abcdefghijklmnopqrstuvwxyz0123456789_");
		def = NULL;
		if (name + nl != end) {
			if (name[nl] == ':' && name[nl + 1] == '-')
				def = name + nl + 2;
			else
				nl = 0;
		}
		if (nl == 0 || nl >= sizeof(var) ||
		    (name[0] >= '0' && name[0] <= '9')) {
			conf_err(p, line, "%s: bad variable reference %.*s",
			    path, (int)(end - s + 1), s);
			goto fail;
		}
		memcpy(var, name, nl);
		var[nl] = '\0';
		v = conf_getenv(p, var);
		if (def != NULL && (v == NULL || v[0] == '\0'))
			cbuf_add(&b, def, end - def);
		else if (v != NULL)
			cbuf_add(&b, v, strlen(v));
		else {
			conf_err(p, line,
			    "%s: environment variable %s is not set", path,
			    var);
			goto fail;
		}
		s = end + 1;
	}
	return b.s;
 fail:
	free(b.s);
	return NULL;
}

/* A decimal integer, digits only. */
int
conf_parse_u64(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (*s == '+')
		s++;
	if (*s == '\0')
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '9')
			return -1;
		if (v > (UINT64_MAX - (uint64_t)(*s - '0')) / 10)
			return -1;
		v = v * 10 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

static int
cparse_bool(const char *s, int *out)
{
	static const char *const yes[] = { "true", "yes", "on", NULL };
	static const char *const no[] = { "false", "no", "off", NULL };
	int i;

	for (i = 0; yes[i] != NULL; i++)
		if (strcasecmp(s, yes[i]) == 0) {
			*out = 1;
			return 0;
		}
	for (i = 0; no[i] != NULL; i++)
		if (strcasecmp(s, no[i]) == 0) {
			*out = 0;
			return 0;
		}
	return -1;
}

/* Octal digits, optionally 0o-prefixed: 660, 0660 and 0o660 are 0660. */
static int
cparse_mode(const char *s, uint64_t *out)
{
	uint64_t v = 0;

	if (s[0] == '0' && (s[1] == 'o' || s[1] == 'O'))
		s += 2;
	if (*s == '\0' || strlen(s) > 8)
		return -1;
	for (; *s != '\0'; s++) {
		if (*s < '0' || *s > '7')
			return -1;
		v = v * 8 + (uint64_t)(*s - '0');
	}
	*out = v;
	return 0;
}

static int
cenum(const struct conf_key *k, const char *s)
{
	int i;

	for (i = 0; k->names[i] != NULL; i++)
		if (strcasecmp(k->names[i], s) == 0 &&
		    !conf_name_refused(k, k->names[i]))
			return i;
	return -1;
}

/* http:// or https://, a host, no spaces or control characters. */
static int
cvalid_url(const char *s)
{
	const char *h, *c;

	if (strncasecmp(s, "http://", 7) == 0)
		h = s + 7;
	else if (strncasecmp(s, "https://", 8) == 0)
		h = s + 8;
	else
		return 0;
	if (*h == '\0' || *h == '/' || *h == ':' || *h == '?' || *h == '#')
		return 0;
	for (c = s; *c != '\0'; c++)
		if ((unsigned char)*c <= 0x20 || (unsigned char)*c >= 0x7f)
			return 0;
	return 1;
}

/* An HTTP header name (RFC 9110 token). */
int
conf_valid_token(const char *s)
{
	static const char tchar[] = "!#$%&'*+-.^_`|~"
	    "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";

	return s[0] != '\0' && strspn(s, tchar) == strlen(s);
}

/* Non-empty segments separated by dots. */
static int
cvalid_jsonpath(const char *s)
{
	size_t len = strlen(s);

	return len > 0 && s[0] != '.' && s[len - 1] != '.' &&
	    strstr(s, "..") == NULL;
}

/* Strict base64, see b64.h; the result is non-empty and malloc'd. */
int
conf_b64_decode(const char *s, struct blob *out)
{
	size_t len = strlen(s), n;
	unsigned char *d;

	if ((d = malloc(B64_DECODED_MAX(len))) == NULL)
		return -1;
	if (b64_decode(s, len, d, &n) == -1) {
		free(d);
		return -1;
	}
	out->data = d;
	out->len = n;
	return 0;
}

/* Whether the secrets of the key being set are whsec_ + base64. */
int
conf_secret_whsec(struct cparse *p, struct cctx *c)
{
	struct verify_conf *v;

	if (c->sink != NULL)
		return 1;
	v = &c->src->verify;
	return v->type == VERIFY_STANDARD_WEBHOOKS ||
	    (v->type == VERIFY_HMAC && v->secret_decode != NULL &&
	    strcmp(v->secret_decode, "whsec_base64") == 0);
}

void
conf_set_str(char **dst, const char *v)
{
	char *n;

	if ((n = strdup(v)) == NULL)
		abort();
	free(*dst);
	*dst = n;
}

/* Type one scalar (after interpolation) into base + k->off. */
int
conf_set_text(struct cparse *p, struct cctx *c, const struct conf_key *k,
    void *base, const char *v, const char *path, int line)
{
	char *dst = base != NULL ? (char *)base + k->off : NULL;
	struct keyspec *ks;
	unsigned char a6[16];
	uint64_t u;
	double d;
	char *end;
	int i;

	switch (k->type) {
	case T_BOOL:
		if (cparse_bool(v, &i) == -1)
			goto bad;
		*(int *)(void *)dst = i;
		break;
	case T_U16:
	case T_U32:
	case T_U64:
		if (conf_parse_u64(v, &u) == -1 || u < k->min || u > k->max)
			goto bad;
		if (k->type == T_U16)
			*(uint16_t *)(void *)dst = (uint16_t)u;
		else if (k->type == T_U32)
			*(uint32_t *)(void *)dst = (uint32_t)u;
		else
			*(uint64_t *)(void *)dst = u;
		break;
	case T_FLOAT:
		errno = 0;
		d = strtod(v, &end);
		if (v[0] == '\0' || *end != '\0' || errno != 0 ||
		    !isfinite(d) || d <= 0 || d > k->fmax)
			goto bad;
		*(double *)(void *)dst = d;
		break;
	case T_MODE:
		if (cparse_mode(v, &u) == -1 || u < k->min || u > k->max)
			goto bad;
		*(uint32_t *)(void *)dst = (uint32_t)u;
		break;
	case T_STR:
		if (v[0] == '\0')
			goto bad;
		conf_set_str((char **)(void *)dst, v);
		break;
	case T_IDENT:
		if (!conf_valid_id(v))
			goto bad;
		if ((k->flags & F_DEFNULL) && strcmp(v, "default") == 0) {
			free(*(char **)(void *)dst);
			*(char **)(void *)dst = NULL;
		} else
			conf_set_str((char **)(void *)dst, v);
		break;
	case T_ADDR:
		if (inet_pton(AF_INET, v, a6) != 1 &&
		    inet_pton(AF_INET6, v, a6) != 1)
			goto bad;
		conf_set_str((char **)(void *)dst, v);
		break;
	case T_URL:
		/* "" as null where null is taken (a sink's proxy: none). */
		if (v[0] == '\0' && (k->flags & F_NULLABLE)) {
			cset_null(k, base);
			break;
		}
		if (!cvalid_url(v))
			goto bad;
		conf_set_str((char **)(void *)dst, v);
		break;
	case T_PREFIX:
		if (strcmp(v, "/") == 0) {
			conf_set_str((char **)(void *)dst, "");
			break;
		}
		if (v[0] != '/' || v[strlen(v) - 1] == '/' ||
		    strcspn(v, " \t?#%") != strlen(v) ||
		    strstr(v, "//") != NULL)
			goto bad;
		conf_set_str((char **)(void *)dst, v);
		break;
	case T_SOCKPATH:
		/* 5 bytes short of sun_path: the portable bound (BSD's 104). */
		if (v[0] == '\0' || strlen(v) >
		    sizeof(((struct sockaddr_un *)NULL)->sun_path) - 5)
			goto bad;
		conf_set_str((char **)(void *)dst, v);
		break;
	case T_ENUM:
		if ((i = cenum(k, v)) == -1)
			goto bad;
		*(int *)(void *)dst = i;
		break;
	case T_ENUMSTR:
		if ((i = cenum(k, v)) == -1) {
			if (conf_refused(p, k, path, v, line))
				return -1;
			goto bad;
		}
		conf_set_str((char **)(void *)dst, k->names[i]);
		break;
	case T_ONLY:
		/* Accepted at the one value this daemon runs with. */
		if (cenum(k, v) == -1) {
			if (conf_refused(p, k, path, v, line))
				return -1;
			goto bad;
		}
		break;
	case T_OFF:
		if (cparse_bool(v, &i) == -1)
			goto bad;
		if (i) {
			conf_err(p, line, "%s: true is not supported by this "
			    "build: %s", path, k->nosup);
			return -1;
		}
		break;
	case T_ROLES:
		return conf_roles(p, NULL, 0, v, path, line);
	case T_SINKTYPE:
		if ((i = cenum(k, v)) == -1) {
			if (conf_refused(p, k, path, v, line))
				return -1;
			goto bad;
		}
		*(enum sink_type *)(void *)dst = (enum sink_type)(i + 1);
		break;
	case T_KEYHDR:
	case T_KEYJSON:
		ks = (struct keyspec *)(void *)dst;
		if (k->type == T_KEYHDR ? !conf_valid_token(v) :
		    !cvalid_jsonpath(v))
			goto bad;
		if (ks->kind != KEY_NONE) {
			conf_err(p, line, "%s must not be set together with %s",
			    path, k->type == T_KEYHDR ? "json" : "header");
			return -1;
		}
		ks->kind = k->type == T_KEYHDR ? KEY_HEADER : KEY_JSON;
		conf_set_str(&ks->name, v);
		break;
	default:
		/* Sections, lists and secrets are not scalars. */
		goto bad;
	}
	return 0;
 bad:
	cbad(p, k, path, v, line);
	return -1;
}

static void
cset_null(const struct conf_key *k, void *base)
{
	char *dst = (char *)base + k->off;

	switch (k->type) {
	case T_U16:
		*(uint16_t *)(void *)dst = 0;
		break;
	case T_U32:
	case T_MODE:
		*(uint32_t *)(void *)dst = 0;
		break;
	case T_U64:
		*(uint64_t *)(void *)dst = 0;
		break;
	case T_STR:
	case T_IDENT:
	case T_ADDR:
	case T_URL:
	case T_PREFIX:
	case T_SOCKPATH:
	case T_ENUMSTR:
		free(*(char **)(void *)dst);
		*(char **)(void *)dst = NULL;
		break;
	default:
		break;
	}
}

/* The interpolated text of a scalar node; NULL (and an error) otherwise. */
char *
conf_scalar(struct cparse *p, const yaml_node_t *n, const char *path)
{
	return cinterp(p, (const char *)n->data.scalar.value, path,
	    conf_yline(n));
}

/* 1 when a value (a scalar, or a list's items) is written in the file
 * itself: set, and no ${...} reference in it. */
static int
cnode_literal(struct cparse *p, yaml_node_t *n)
{
	yaml_node_item_t *it;

	if (conf_yisnull(n))
		return 0;
	if (n->type == YAML_SCALAR_NODE)
		return strstr((const char *)n->data.scalar.value, "${") == NULL;
	if (n->type != YAML_SEQUENCE_NODE)
		return 0;
	for (it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++)
		if (cnode_literal(p, yaml_document_get_node(p->doc, *it)))
			return 1;
	return 0;
}

/* Set a leaf from a node. */
static void
cset_node(struct cparse *p, struct cctx *c, const struct conf_key *k,
    yaml_node_t *n, const char *path)
{
	void *base;
	char *v;

	/* Keys of scope S_NONE are checked, not stored. */
	if ((base = conf_key_base(p, c, k)) == NULL && k->scope != S_NONE)
		return;
	if ((k->flags & F_SECRET) && p->conf->secret_inline == NULL &&
	    cnode_literal(p, n) && !((k->flags & F_URLCRED) &&
	    n->type == YAML_SCALAR_NODE &&
	    strchr((const char *)n->data.scalar.value, '@') == NULL) &&
	    (p->conf->secret_inline = strdup(path)) == NULL)
		abort();
	switch (k->type) {
	case T_ROLES:
		conf_set_roles(p, k, n, path);
		return;
	case T_SECRETS:
		conf_set_secrets(p, c, k, base, n, path);
		return;
	case T_STRLIST:
	case T_CIDRS:
	case T_HOSTPORTS:
	case T_NAMES:
		conf_set_strlist(p, k, base, n, path);
		return;
	case T_HEADERS:
		conf_set_headers(p, k, base, n, path);
		return;
	case T_MSLIST:
		conf_set_mslist(p, k, base, n, path);
		return;
	case T_STATUSES:
		conf_set_statuses(p, k, base, n, path);
		return;
	case T_TOKENS:
		conf_tokens_set(p, k, base, n, path);
		return;
	default:
		break;
	}
	if (conf_yisnull(n)) {
		if (k->flags & F_NULLABLE)
			cset_null(k, base);
		else
			conf_bad_node(p, k, path, n);
		return;
	}
	if (n->type != YAML_SCALAR_NODE) {
		conf_bad_node(p, k, path, n);
		return;
	}
	if ((v = conf_scalar(p, n, path)) == NULL)
		return;
	conf_set_text(p, c, k, base, v, path, conf_yline(n));
	free(v);
}

/* Apply the defaults of every key of one scope (and sink type). */
void
conf_defaults(struct cparse *p, struct cctx *c, enum ckey_scope scope, int mask)
{
	size_t i;
	const struct conf_key *k;
	void *base;

	for (i = 0; i < CONF_TAB_N; i++) {
		k = &conf_tab[i];
		if (k->scope != scope || k->def == NULL ||
		    k->type == T_SINKTYPE)
			continue;
		if (scope == S_SINK && !(k->sinks & mask))
			continue;
		if ((base = conf_key_base(p, c, k)) == NULL)
			continue;
		if (strcmp(k->def, "null") == 0)
			cset_null(k, base);
		else
			conf_set_text(p, c, k, base, k->def, k->name, 0);
	}
}

/*
 * The walk.
 */

/* Walk the keys of one map, in three passes: F_FIRST keys (which others
 * depend on), the rest, F_LAST keys.  Then check required keys. */
void
conf_walk_section(struct cparse *p, struct cctx *c, const char *pat,
    yaml_node_t *map, const char *path)
{
	const struct conf_key *k;
	const struct cnosup *u;
	yaml_node_pair_t *pr, *q;
	yaml_node_t *kn, *vn, *qn;
	char cpat[CPATH_MAX], cpath[CPATH_MAX];
	const char *key, *leaf;
	int pass, want, other, dup;
	size_t i;

	for (pass = 0; pass < 3; pass++) {
		for (pr = map->data.mapping.pairs.start;
		    pr < map->data.mapping.pairs.top; pr++) {
			kn = yaml_document_get_node(p->doc, pr->key);
			vn = yaml_document_get_node(p->doc, pr->value);
			if (kn == NULL || kn->type != YAML_SCALAR_NODE) {
				if (pass == 1)
					conf_err(p, conf_yline(kn),
					    "%s has a key that is not a string",
					    path[0] != '\0' ? path :
					    "the top level");
				continue;
			}
			key = (const char *)kn->data.scalar.value;
			conf_join(cpat, sizeof(cpat), pat, key);
			conf_join(cpath, sizeof(cpath), path, key);
			k = ckey_find(cpat, c->mask, &other);
			want = 1;
			if (k != NULL && (k->flags & F_FIRST))
				want = 0;
			else if (k != NULL && (k->flags & F_LAST))
				want = 2;
			if (want != pass)
				continue;
			for (dup = 0, q = map->data.mapping.pairs.start;
			    q < pr; q++) {
				qn = yaml_document_get_node(p->doc, q->key);
				if (qn != NULL &&
				    qn->type == YAML_SCALAR_NODE &&
				    strcmp((const char *)qn->data.scalar.value,
				    key) == 0)
					dup = 1;
			}
			if (dup) {
				conf_err(p, conf_yline(kn), "%s is set twice",
				    cpath);
				continue;
			}
			if (k == NULL && other)
				conf_err(p, conf_yline(kn),
				    "%s is not a known key for sink type %s",
				    cpath, conf_sink_type_name(c->sink->type));
			else if (k == NULL && (u = conf_nosup_find(cpat)) !=
			    NULL)
				conf_err(p, conf_yline(kn),
				    "%s is not supported by this build: %s",
				    cpath, u->why);
			else if (k == NULL)
				conf_err(p, conf_yline(kn),
				    "%s is not a known key", cpath);
			else
				cwalk_value(p, c, k, vn, cpath);
		}
	}

	for (i = 0; i < CONF_TAB_N; i++) {
		k = &conf_tab[i];
		if (!(k->flags & F_REQUIRED) || !ckey_parent_is(k, pat))
			continue;
		if (p->nosources && k->obj == O_SOURCE)
			continue;
		if (c->mask != 0 && !(k->sinks & c->mask))
			continue;
		leaf = pat[0] == '\0' ? k->name : k->name + strlen(pat) + 1;
		if (conf_ymap_get(p->doc, map, leaf) != NULL)
			continue;
		conf_join(cpath, sizeof(cpath), path, leaf);
		if (c->mask != 0)
			conf_err(p, conf_yline(map),
			    "%s is required for sink type %s", cpath,
			    conf_sink_type_name(c->sink->type));
		else
			conf_err(p, conf_yline(map), "%s is required", cpath);
	}
}

static void
cwalk_value(struct cparse *p, struct cctx *c, const struct conf_key *k,
    yaml_node_t *n, const char *path)
{
	struct cctx c2;
	const struct conf_key *pk;
	char *v;

	switch (k->type) {
	case T_SECTION:
		/* A null section is an absent one: its defaults stand. */
		if (conf_yisnull(n))
			return;
		if (n->type != YAML_MAPPING_NODE) {
			conf_bad_node(p, k, path, n);
			return;
		}
		c2 = *c;
		switch (k->obj) {
		case O_RATE_DEFAULT:
			c2.rl = &p->conf->rate_default;
			c2.rl->set = 1;
			break;
		case O_CLAIM:
			p->conf->claim_check.enabled = 1;
			break;
		case O_REPL:
			p->conf->repl.enabled = 1;
			break;
		case O_RETRY:
			if (c->sink != NULL)
				c->sink->has_retry = 1;
			else if (c->src != NULL)
				c->src->has_retry = 1;
			break;
		default:
			break;
		}
		conf_walk_section(p, &c2, k->name, n, path);
		if (k->check != NULL)
			k->check(p, &c2, n, path);
		break;
	case T_DEDUPE:
		if (conf_yisnull(n))
			return;
		c->src->dedupe.enabled = 1;
		if (n->type == YAML_SCALAR_NODE) {
			pk = conf_key_byname("sources.*.dedupe.preset");
			if ((v = conf_scalar(p, n, path)) == NULL)
				return;
			conf_set_text(p, c, pk, c->src, v, path, conf_yline(n));
			free(v);
		} else if (n->type == YAML_MAPPING_NODE)
			conf_walk_section(p, c, k->name, n, path);
		else {
			conf_bad_node(p, k, path, n);
			return;
		}
		if (k->check != NULL)
			k->check(p, c, n, path);
		break;
	case T_MAPOF:
		cwalk_mapof(p, c, k, n, path);
		break;
	case T_LISTOF:
		cwalk_sinks(p, c, k, n, path);
		break;
	case T_SINKTYPE:
		/* Set by cwalk_sinks before the walk. */
		break;
	default:
		cset_node(p, c, k, n, path);
		break;
	}
}

/* A map of id -> section: sources, dispatch.tenants, rate_limits.tenants. */
static void
cwalk_mapof(struct cparse *p, struct cctx *c, const struct conf_key *k,
    yaml_node_t *n, const char *path)
{
	struct conf *cf = p->conf;
	const struct conf_key *ek;
	yaml_node_pair_t *pr, *q;
	yaml_node_t *kn, *vn, *qn;
	struct cctx c2;
	struct source_conf *src;
	struct tenant_window *tw;
	struct tenant_rate *tr;
	char epat[CPATH_MAX], epath[CPATH_MAX];
	const char *id;
	size_t cnt;
	int pass, dup, isdef;

	if (conf_yisnull(n) && k->obj != O_SOURCE)
		return;
	if (conf_yisnull(n) || n->type != YAML_MAPPING_NODE ||
	    (k->obj == O_SOURCE && n->data.mapping.pairs.top ==
	    n->data.mapping.pairs.start)) {
		if (k->obj == O_SOURCE && n->type == YAML_MAPPING_NODE)
			conf_err(p, conf_yline(n),
			    "%s must be a map of at least one "
			    "source, got an empty map", path);
		else
			conf_bad_node(p, k, path, n);
		return;
	}
	conf_fmt(epat, sizeof(epat), "%s.*", k->name);
	ek = conf_key_byname(epat);
	cnt = n->data.mapping.pairs.top - n->data.mapping.pairs.start;
	switch (k->obj) {
	case O_SOURCE:
		if ((cf->sources = calloc(cnt, sizeof(*cf->sources))) == NULL)
			abort();
		break;
	case O_TENANT:
		if ((cf->dispatch.tenants = calloc(cnt,
		    sizeof(*cf->dispatch.tenants))) == NULL)
			abort();
		break;
	case O_RATE_TENANT:
		if ((cf->rate_tenants = calloc(cnt,
		    sizeof(*cf->rate_tenants))) == NULL)
			abort();
		break;
	default:
		return;
	}

	/* dispatch.tenants.default first: the others inherit from it. */
	for (pass = 0; pass < 2; pass++) {
		for (pr = n->data.mapping.pairs.start;
		    pr < n->data.mapping.pairs.top; pr++) {
			kn = yaml_document_get_node(p->doc, pr->key);
			vn = yaml_document_get_node(p->doc, pr->value);
			if (kn == NULL || kn->type != YAML_SCALAR_NODE) {
				if (pass == 1)
					conf_err(p, conf_yline(kn),
					    "%s has a key that is not a string",
					    path);
				continue;
			}
			id = (const char *)kn->data.scalar.value;
			isdef = k->obj == O_TENANT &&
			    strcmp(id, "default") == 0;
			if ((pass == 0) != isdef)
				continue;
			conf_join(epath, sizeof(epath), path, id);
			for (dup = 0, q = n->data.mapping.pairs.start; q < pr;
			    q++) {
				qn = yaml_document_get_node(p->doc, q->key);
				if (qn != NULL &&
				    qn->type == YAML_SCALAR_NODE &&
				    strcmp((const char *)qn->data.scalar.value,
				    id) == 0)
					dup = 1;
			}
			if (dup) {
				conf_err(p, conf_yline(kn), "%s is set twice",
				    epath);
				continue;
			}
			if (!conf_valid_id(id)) {
				conf_err(p, conf_yline(kn),
				    "%s keys must be ids "
				    "matching [A-Za-z0-9_-]{1,%d}, got %s",
				    path, CONF_ID_MAX, id[0] != '\0' ? id :
				    "\"\"");
				continue;
			}
			if (vn == NULL || vn->type != YAML_MAPPING_NODE) {
				conf_bad_node(p, ek, epath, vn);
				continue;
			}
			c2 = *c;
			switch (k->obj) {
			case O_SOURCE:
				src = &cf->sources[cf->nsources++];
				conf_set_str(&src->id, id);
				src->retry = cf->dispatch.retry;
				c2.src = src;
				conf_defaults(p, &c2, S_SOURCE, 0);
				break;
			case O_TENANT:
				if (isdef)
					tw = &cf->dispatch.tenant_default;
				else {
					tw = &cf->dispatch.tenants[
					    cf->dispatch.ntenants++];
					conf_set_str(&tw->tenant, id);
				}
				c2.tw = tw;
				break;
			case O_RATE_TENANT:
				tr = &cf->rate_tenants[cf->nrate_tenants++];
				conf_set_str(&tr->tenant, id);
				tr->limit.set = 1;
				c2.rl = &tr->limit;
				break;
			default:
				break;
			}
			conf_walk_section(p, &c2, epat, vn, epath);
			if (ek != NULL && ek->check != NULL)
				ek->check(p, &c2, vn, epath);
			/* The notices' own, never a user's. */
			if (k->obj == O_SOURCE && (strcmp(id,
			    CONF_NOTIFY_SOURCE) == 0 || (c2.src->tenant !=
			    NULL && strcmp(c2.src->tenant,
			    CONF_NOTIFY_TENANT) == 0)))
				conf_err(p, conf_yline(kn), "%s: the source "
				    "%s and the tenant %s are reserved for "
				    "the notifications", epath,
				    CONF_NOTIFY_SOURCE, CONF_NOTIFY_TENANT);
		}
	}
}

/* sources.<id>.sinks: the type of each sink first, then its options. */
static void
cwalk_sinks(struct cparse *p, struct cctx *c, const struct conf_key *k,
    yaml_node_t *n, const char *path)
{
	struct source_conf *src = c->src;
	const struct conf_key *tk, *ek;
	const char *lpat = k->name;
	yaml_node_item_t *it;
	yaml_node_t *e, *tn;
	struct cctx c2;
	struct sink_conf *sk, tmp;
	char epat[CPATH_MAX], epath[CPATH_MAX], tpath[CPATH_MAX + 16], *v;
	size_t cnt;
	int i;

	if (conf_yisnull(n) || n->type != YAML_SEQUENCE_NODE ||
	    n->data.sequence.items.top == n->data.sequence.items.start) {
		if (n != NULL && n->type == YAML_SEQUENCE_NODE)
			conf_err(p, conf_yline(n),
			    "%s must be %s, got an empty list", path,
			    "a list of at least one sink");
		else
			conf_bad_node(p, k, path, n);
		return;
	}
	/* The notices' sinks are a source's: the reserved one's, with the
	 * keys of sources.*.sinks[]. */
	if (k->obj == O_NOTIFY) {
		src = &p->conf->notify;
		conf_set_str(&src->id, CONF_NOTIFY_SOURCE);
		conf_set_str(&src->tenant, CONF_NOTIFY_TENANT);
		c->src = src;
		lpat = "sources.*.sinks";
	}
	conf_fmt(epat, sizeof(epat), "%s[]", lpat);
	ek = conf_key_byname(epat);
	conf_fmt(tpath, sizeof(tpath), "%s.type", epat);
	tk = conf_key_byname(tpath);
	cnt = n->data.sequence.items.top - n->data.sequence.items.start;
	if (cnt > CONF_MAX_SINKS) {
		conf_err(p, conf_yline(n),
		    "%s must be a list of at most %d sinks, got %zu", path,
		    CONF_MAX_SINKS, cnt);
		return;
	}
	if ((src->sinks = calloc(cnt, sizeof(*src->sinks))) == NULL)
		abort();
	for (i = 0, it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++, i++) {
		e = yaml_document_get_node(p->doc, *it);
		conf_fmt(epath, sizeof(epath), "%s[%d]", path, i);
		if (e == NULL || e->type != YAML_MAPPING_NODE) {
			conf_bad_node(p, ek, epath, e);
			continue;
		}
		conf_fmt(tpath, sizeof(tpath), "%s.type", epath);
		if ((tn = conf_ymap_get(p->doc, e, "type")) == NULL) {
			conf_err(p, conf_yline(e), "%s is required", tpath);
			continue;
		}
		if (tn->type != YAML_SCALAR_NODE || conf_yisnull(tn)) {
			conf_bad_node(p, tk, tpath, tn);
			continue;
		}
		if ((v = conf_scalar(p, tn, tpath)) == NULL)
			continue;
		memset(&tmp, 0, sizeof(tmp));
		if (conf_set_text(p, c, tk, &tmp, v, tpath, conf_yline(tn)) ==
		    -1) {
			free(v);
			continue;
		}
		free(v);
		sk = &src->sinks[src->nsinks++];
		sk->type = tmp.type;
		/* Its retry keys overlay its source's (walked before the
		 * sinks: sources.*.sinks is F_LAST). */
		sk->retry = src->retry;
		c2 = *c;
		c2.sink = sk;
		c2.mask = 1 << sk->type;
		conf_defaults(p, &c2, S_SINK, c2.mask);
		conf_walk_section(p, &c2, epat, e, epath);
		if (ek != NULL && ek->check != NULL)
			ek->check(p, &c2, e, epath);
	}
}
