/* SPDX-License-Identifier: ISC */
/*
 * conf_json.c: the effective configuration as JSON, redacted by an
 * allowlist (the admin API's GET /v1/config).
 *
 * The object has the file's shape: one member per key of the table
 * (conf_keys.c), sections as objects, sources and tenants by id, sinks as
 * a list; every key appears, with the value in force (defaults included),
 * null where unset.  What is shown is decided by an allowlist, never by
 * looking for secrets: a value is shown only when its type cannot carry
 * free text (numbers, booleans, names from a fixed list, addresses, ids,
 * header names, paths into JSON), or its key is named in cjson_plain[]
 * below as a string known to be no secret.  Anything else is the string
 * "<redacted>": every secret (F_SECRET, whatever its type; null when
 * unset), a header's value, a credential's id, a token.  A URL keeps its
 * scheme, host, port and path; its userinfo and its query are replaced by
 * "<redacted>" and a fragment is dropped; so is each segment of its path
 * that may be a credential (cjson_token_like: Slack's
 * /services/T.../B.../XXXX, an API key or a signed id in a path).  A key
 * added to the table is therefore redacted until it is allowlisted here.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <jansson.h>

#include "conf.h"
#include "conf_int.h"
#include "conf_json.h"
#include "scope.h"
#include "utf8.h"

#define CJSON_REDACTED	"<redacted>"

static int	 cjson_parent_is(const struct conf_key *, const char *);
static int	 cjson_is_plain(const char *);
static json_t	*cjson_url(const char *);
static int	 cjson_token_like(const char *, size_t);
static json_t	*cjson_str(const char *);
static json_t	*cjson_value(const struct conf_key *, const char *);
static json_t	*cjson_section(const struct conf *, const char *, int,
		    const void *const *);
static void	 cjson_set(json_t *, const char *, json_t *);

/*
 * Free-text keys whose values are known to be no secret.  Every other
 * T_STR (and every T_HEADERS value) is redacted.
 */
static const char *const cjson_plain[] = {
	"node.data_dir",
	"node.user",
	"node.child_user",
	"claim_check.store.root",
	"claim_check.store.s3.bucket",
	"claim_check.store.s3.region",
	"replication.local",
	"sources.*.verify.signature_header",
	"sources.*.verify.signed",
	"sources.*.verify.sig_prefix",
	"sources.*.verify.timestamp_header",
	"sources.*.verify.sig_key",
	"sources.*.verify.version",
	"sources.*.sinks[].region",
	"sources.*.sinks[].message_group_id",
	"sources.*.sinks[].project",
	"sources.*.sinks[].topic",
	"sources.*.sinks[].ordering_key",
	"sources.*.sinks[].channel",
	"sources.*.sinks[].stream",
	"sources.*.sinks[].subject",
	"sources.*.sinks[].auth.scope",
	"sources.*.sinks[].auth.audience",
	"sources.*.sinks[].tls.client_cert_file",
	"sources.*.sinks[].tls.client_key_file",
	"sources.*.sinks[].tls.ca_file",
	"sources.*.sinks[].tls.server_name",
	"sources.*.sinks[].key",
	NULL
};

/* The scopes a section's keys are stored in: bases[scope]. */
enum { CJ_NSCOPE = S_RATE + 1 };

static int
cjson_is_plain(const char *name)
{
	size_t i;

	for (i = 0; cjson_plain[i] != NULL; i++)
		if (strcmp(cjson_plain[i], name) == 0)
			return 1;
	return 0;
}

/* True if k sits directly in the section named pat. */
static int
cjson_parent_is(const struct conf_key *k, const char *pat)
{
	size_t pl = strlen(pat);

	if (strncmp(k->name, pat, pl) != 0 || k->name[pl] != '.')
		return 0;
	return strchr(k->name + pl + 1, '.') == NULL;
}

static void
cjson_set(json_t *o, const char *key, json_t *v)
{
	if (v == NULL || json_object_set_new(o, key, v) == -1)
		abort();
}

/* A string, cleaned when it is not UTF-8 (a value from the environment
 * may be anything): never NULL. */
static json_t *
cjson_str(const char *s)
{
	json_t *j;
	char *buf;
	size_t n;

	if (s == NULL)
		return json_null();
	if ((j = json_string(s)) != NULL)
		return j;
	n = strlen(s) * 4 + 1;
	if ((buf = malloc(n)) == NULL)
		abort();
	(void)utf8_clean(buf, n, s, strlen(s));
	j = json_string(buf);
	free(buf);
	return j;
}

/*
 * scheme://host:port/path of a URL; "<redacted>@" for its userinfo and
 * "?<redacted>" for its query, so that their presence shows but nothing of
 * them.
 */
/*
 * A path segment that may be a credential, whatever the service: 8
 * characters or more holding a letter and a digit (Slack's T0123ABCD and
 * B0123ABCD, most API keys and ids), 16 or more holding upper- and
 * lower-case letters (a token of letters alone), or 32 or more of any
 * kind.  Words, short versions and numbers ("hooks", "v2", "services",
 * "production-events", "12345") are shown; a long word with a digit is
 * redacted too, which costs only what the operator sees.
 */
static int
cjson_token_like(const char *s, size_t len)
{
	int digit = 0, lower = 0, upper = 0;
	size_t i;

	if (len >= 32)
		return 1;
	if (len < 8)
		return 0;
	for (i = 0; i < len; i++) {
		if (s[i] >= '0' && s[i] <= '9')
			digit = 1;
		else if (s[i] >= 'a' && s[i] <= 'z')
			lower = 1;
		else if (s[i] >= 'A' && s[i] <= 'Z')
			upper = 1;
	}
	return (digit && (lower || upper)) || (len >= 16 && lower && upper);
}

static json_t *
cjson_url(const char *u)
{
	const char *auth, *end, *at, *q, *host, *seg;
	char *out;
	json_t *j;
	size_t n, plen, sl, o;

	if (u == NULL)
		return json_null();
	if ((auth = strstr(u, "://")) == NULL)
		return json_string(CJSON_REDACTED);
	auth += 3;
	end = auth + strcspn(auth, "/?#");
	for (at = NULL, q = auth; q < end; q++)
		if (*q == '@')
			at = q;
	plen = strcspn(end, "?#");
	/* Each segment may grow to the mark. */
	n = strlen(u) + sizeof(CJSON_REDACTED) * (plen + 3) + 4;
	if ((out = malloc(n)) == NULL)
		abort();
	host = at != NULL ? at + 1 : auth;
	o = snprintf(out, n, "%.*s%s%.*s", (int)(auth - u), u,
	    at != NULL ? CJSON_REDACTED "@" : "", (int)(end - host), host);
	for (seg = end; seg < end + plen; seg += sl) {
		if (*seg == '/') {
			out[o++] = '/';
			seg++;
		}
		sl = strcspn(seg, "/?#");
		o += snprintf(out + o, n - o, "%.*s",
		    cjson_token_like(seg, sl) ? (int)strlen(CJSON_REDACTED) :
		    (int)sl, cjson_token_like(seg, sl) ? CJSON_REDACTED : seg);
	}
	snprintf(out + o, n - o, "%s", end[plen] == '?' ? "?" CJSON_REDACTED :
	    "");
	j = cjson_str(out);
	free(out);
	return j;
}

/* A list of tokens (k at base): each token's name, scopes and
 * credential's form, never the credential. */
static json_t *
cjson_tokens(const struct conf_key *k, const char *base)
{
	static const char *const kinds[] = { "", "token", "token_file",
	    "token_sha256" };
	const struct conf_token *t;
	json_t *o, *sc;
	int i, s, n = *(const int *)(const void *)(base + k->off2);

	o = json_array();
	for (i = 0; i < n; i++) {
		t = &(*(struct conf_token *const *)(const void *)
		    (base + k->off))[i];
		if (!(k->flags & F_SCOPES)) {
			json_array_append_new(o, json_pack("{s:s, s:s}",
			    "name", t->name, kinds[t->kind], CJSON_REDACTED));
			continue;
		}
		sc = json_array();
		if (t->scopes == SCOPE_ALL)
			json_array_append_new(sc, json_string("*"));
		else
			for (s = SCOPE_NONE + 1; s < SCOPE_N; s++)
				if (scope_has(t->scopes, (enum scope)s))
					json_array_append_new(sc,
					    json_string(scope_name(
					    (enum scope)s)));
		json_array_append_new(o, json_pack("{s:s, s:s, s:o}", "name",
		    t->name, kinds[t->kind], CJSON_REDACTED, "scopes", sc));
	}
	return o;
}

/* The value of leaf k stored at base (NULL for keys not stored). */
static json_t *
cjson_value(const struct conf_key *k, const char *base)
{
	const char *p = base != NULL ? base + k->off : NULL;
	const struct header_kv *h;
	const struct keyspec *ks;
	char *const *sl;
	json_t *o;
	char mode[16];
	int i, n;

	/* A secret: whether it is set shows, nothing of it. */
	if (k->flags & F_SECRET) {
		if (k->type == T_SECRETS ?
		    *(const int *)(const void *)(base + k->off2) == 0 :
		    *(char *const *)(const void *)p == NULL)
			return json_null();
		return json_string(CJSON_REDACTED);
	}
	switch (k->type) {
	case T_BOOL:
		return json_boolean(*(const int *)(const void *)p);
	case T_U16:
		return json_integer(*(const uint16_t *)(const void *)p);
	case T_U32:
		if ((k->flags & F_NULLABLE) &&
		    *(const uint32_t *)(const void *)p == 0)
			return json_null();
		return json_integer(*(const uint32_t *)(const void *)p);
	case T_U64:
		if ((k->flags & F_NULLABLE) &&
		    *(const uint64_t *)(const void *)p == 0)
			return json_null();
		return json_integer((json_int_t)
		    *(const uint64_t *)(const void *)p);
	case T_FLOAT:
		return json_real(*(const double *)(const void *)p);
	case T_MODE:
		snprintf(mode, sizeof(mode), "%04o",
		    (unsigned int)*(const uint32_t *)(const void *)p);
		return json_string(mode);
	case T_ENUM:
		return json_string(k->names[*(const int *)(const void *)p]);
	case T_SINKTYPE:
		return json_string(conf_sink_type_name(
		    *(const enum sink_type *)(const void *)p));
	case T_IDENT:
	case T_ADDR:
	case T_PREFIX:
	case T_SOCKPATH:
	case T_ENUMSTR:
		return cjson_str(*(char *const *)(const void *)p);
	case T_STR:
		if (!cjson_is_plain(k->name) &&
		    *(char *const *)(const void *)p != NULL)
			return json_string(CJSON_REDACTED);
		return cjson_str(*(char *const *)(const void *)p);
	case T_URL:
		return cjson_url(*(char *const *)(const void *)p);
	case T_ONLY:
	case T_OFF:
		/* The one value this daemon runs with. */
		return k->type == T_OFF ? json_false() : json_string(k->def);
	case T_ROLES:
		return json_pack("[sss]", "edge", "dispatch", "storage");
	case T_STRLIST:
	case T_CIDRS:
	case T_HOSTPORTS:
	case T_NAMES:
		sl = *(char **const *)(const void *)p;
		n = *(const int *)(const void *)(base + k->off2);
		if (sl == NULL)
			return json_null();
		o = json_array();
		for (i = 0; i < n; i++)
			json_array_append_new(o, cjson_str(sl[i]));
		return o;
	case T_STATUSES:
		o = json_array();
		if (!*(const int *)(const void *)(base + k->off2))
			json_array_append_new(o, json_integer(410));
		for (i = 0; i < CONF_STATUS_MAX &&
		    *(const int *)(const void *)(base + k->off2); i++)
			if (((const uint64_t *)(const void *)p)[i / 64] >>
			    (i % 64) & 1)
				json_array_append_new(o, json_integer(i));
		return o;
	case T_TOKENS:
		return cjson_tokens(k, base);
	case T_MSLIST:
		n = *(const int *)(const void *)(base + k->off2);
		if (n == 0)
			return json_null();
		o = json_array();
		for (i = 0; i < n; i++)
			json_array_append_new(o, json_integer((json_int_t)
			    ((const uint64_t *)(const void *)p)[i]));
		return o;
	case T_HEADERS:
		/* Names shown, values never: they may be credentials. */
		h = *(struct header_kv *const *)(const void *)p;
		n = *(const int *)(const void *)(base + k->off2);
		o = json_object();
		for (i = 0; i < n; i++)
			cjson_set(o, h[i].name, json_string(CJSON_REDACTED));
		return o;
	case T_KEYHDR:
	case T_KEYJSON:
		ks = (const struct keyspec *)(const void *)p;
		if (ks->kind != (k->type == T_KEYHDR ? KEY_HEADER : KEY_JSON))
			return json_null();
		return cjson_str(ks->name);
	default:
		/* T_SECRETS is F_SECRET; sections are not leaves. */
		return json_string(CJSON_REDACTED);
	}
}

/*
 * The keys directly in section pat, of the objects in bases[] (indexed by
 * scope), for sink type mask (0: outside a sink).
 */
static json_t *
cjson_section(const struct conf *cf, const char *pat, int mask,
    const void *const *bases)
{
	const void *b2[CJ_NSCOPE];
	const struct conf_key *k;
	const struct source_conf *src;
	const struct tenant_window *tw;
	const struct tenant_rate *tr;
	const char *leaf;
	char sub[256];
	json_t *o, *v, *m;
	size_t i;
	int j;

	o = json_object();
	for (i = 0; i < CONF_TAB_N; i++) {
		k = &conf_tab[i];
		if (pat[0] == '\0' ? strchr(k->name, '.') != NULL :
		    !cjson_parent_is(k, pat))
			continue;
		if (mask != 0 && k->sinks != 0 && !(k->sinks & mask))
			continue;
		leaf = pat[0] == '\0' ? k->name : k->name + strlen(pat) + 1;
		/* An element's pattern: its map or list walks it. */
		if (strcmp(leaf, "*") == 0 ||
		    (strlen(leaf) > 2 && strcmp(leaf + strlen(leaf) - 2,
		    "[]") == 0))
			continue;
		memcpy(b2, bases, sizeof(b2));
		switch (k->type) {
		case T_SECTION:
			if ((k->obj == O_CLAIM && !cf->claim_check.enabled) ||
			    (k->obj == O_REPL && !cf->repl.enabled)) {
				v = json_null();
				break;
			}
			if (k->obj == O_RATE_DEFAULT) {
				if (!cf->rate_default.set) {
					v = json_null();
					break;
				}
				b2[S_RATE] = &cf->rate_default;
			}
			v = cjson_section(cf, k->name, mask, b2);
			break;
		case T_DEDUPE:
			src = bases[S_SOURCE];
			v = src->dedupe.enabled ? cjson_section(cf, k->name,
			    mask, b2) : json_null();
			break;
		case T_MAPOF:
			v = json_object();
			snprintf(sub, sizeof(sub), "%s.*", k->name);
			if (k->obj == O_SOURCE)
				for (j = 0; j < cf->nsources; j++) {
					b2[S_SOURCE] = src = &cf->sources[j];
					cjson_set(v, src->id, cjson_section(cf,
					    sub, 0, b2));
				}
			else if (k->obj == O_TENANT) {
				b2[S_TENANT] = &cf->dispatch.tenant_default;
				cjson_set(v, "default", cjson_section(cf, sub,
				    0, b2));
				for (j = 0; j < cf->dispatch.ntenants; j++) {
					b2[S_TENANT] = tw =
					    &cf->dispatch.tenants[j];
					cjson_set(v, tw->tenant, cjson_section(
					    cf, sub, 0, b2));
				}
			} else if (k->obj == O_RATE_TENANT)
				for (j = 0; j < cf->nrate_tenants; j++) {
					tr = &cf->rate_tenants[j];
					b2[S_RATE] = &tr->limit;
					cjson_set(v, tr->tenant, cjson_section(
					    cf, sub, 0, b2));
				}
			break;
		case T_LISTOF:
			v = json_array();
			src = k->obj == O_NOTIFY ? &cf->notify :
			    bases[S_SOURCE];
			snprintf(sub, sizeof(sub), "%s[]", k->obj ==
			    O_NOTIFY ? "sources.*.sinks" : k->name);
			for (j = 0; j < src->nsinks; j++) {
				b2[S_SINK] = &src->sinks[j];
				m = cjson_section(cf, sub,
				    1 << src->sinks[j].type, b2);
				json_array_append_new(v, m);
			}
			break;
		default:
			v = cjson_value(k, bases[k->scope]);
			break;
		}
		cjson_set(o, leaf, v);
	}
	return o;
}

json_t *
conf_json(const struct conf *cf)
{
	const void *bases[CJ_NSCOPE];

	memset(bases, 0, sizeof(bases));
	bases[S_CONF] = cf;
	return cjson_section(cf, "", 0, bases);
}
