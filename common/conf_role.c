/* SPDX-License-Identifier: ISC */
/*
 * conf_role.c: the text each kind of child gets of the configuration
 * (each child only the part it needs: ankusad(8), SECURITY).
 *
 * The master's text is loaded again as a YAML document and written out
 * with only the keys of the child's role, by an allowlist of patterns of
 * the key table (conf_keys.c), as conf_json.c's is: a key is kept when its
 * dotted pattern is one of the role's, or lies below one; anything else,
 * a key added to the table included, stays with the master until it is
 * allowlisted here.
 *
 *  - An edge gets http, log and the sources (their tenants, verification
 *    with its secrets, dedupe, forwarded headers, failure policy, event
 *    type), but of each sink only its lane options (ordered, order_key),
 *    its filter (which the edge runs) and, in place of its type, "log":
 *    so the edge still computes the lanes of each sink index, and holds
 *    no sink's URL, headers, credentials or signing secret.  A source's
 *    retry stays with the master.
 *  - A deliver process and a claim gateway get log, node.data_dir,
 *    claim_check and egress (the guard of their connections), a deliver
 *    process also attempts.capture_bytes (the answer's bytes it keeps):
 *    a deliver process receives each sink's options with its job, and
 *    never a provider's secret; the gateway serves the claim store.
 *
 * A token_file of a list of tokens (claim_check.auth.tokens) becomes
 * token_sha256, the digest the master read from the file while root
 * (conf_role_text_tokens), so the file may be root's alone.
 *
 * Other values are copied as written, ${VAR} references included (but
 * for ${file:...} and ${credential:...}, which a child could not read:
 * what they stand for is written in their place, conf_secret.c): a child
 * interpolates them as the master did, from the variables of the master's
 * environment that its parse reads (conf.h, env_read), which the master
 * gives it (daemon/childenv.c).  An ANKUSA_* override applies in a
 * child's parse only to a key of its part (conf_role_keeps).
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/crypto.h>
#include <yaml.h>

#include "conf.h"
#include "conf_secret.h"
#include "conf_int.h"

/* The patterns kept for each role; a key below one is kept with it. */
static const char *const crole_edge[] = {
	"log",
	"http",
	"sources.*.tenant",
	"sources.*.trust_url_tenant",
	"sources.*.verify",
	"sources.*.on_verify_failure",
	"sources.*.dedupe",
	"sources.*.forward_headers",
	"sources.*.event_type",
	"sources.*.sinks[].ordered",
	"sources.*.sinks[].order_key",
	"sources.*.sinks[].filter",
	NULL
};
static const char *const crole_claims[] = {
	"log",
	"node.data_dir",
	"claim_check",
	"egress",
	NULL
};
static const char *const crole_deliver[] = {
	"log",
	"node.data_dir",
	"claim_check",
	"egress",
	"attempts.capture_bytes",
	NULL
};
static const char *const *const crole_keep[CONF_ROLE_MAX] = {
	[CONF_ROLE_EDGE] = crole_edge,
	[CONF_ROLE_DELIVER] = crole_deliver,
	[CONF_ROLE_GATEWAY] = crole_claims,
};

/* What an edge's sink says in place of its type. */
#define CROLE_EDGE_SINK	"log"

struct crole {
	yaml_document_t		*in;
	yaml_document_t		 out;
	enum conf_role		 role;
	char			 err[512];	/* a file reference failed */
	const struct conf	*cf;	/* the token files' digests, or NULL */
};

struct crole_buf {
	char	*s;
	size_t	 len;
	size_t	 cap;
};

static int	crole_copy(struct crole *, yaml_node_t *);
static int	crole_scalar(struct crole *, const char *);
static int	crole_map(struct crole *, yaml_node_t *, const char *);

/* 1: keep pat whole; 2: a section on the way to a kept key; 0: drop. */
static int
crole_wants(enum conf_role role, const char *pat)
{
	const char *const *k;
	size_t pl = strlen(pat), kl;

	for (k = crole_keep[role]; *k != NULL; k++) {
		kl = strlen(*k);
		if (strncmp(pat, *k, kl) == 0 && (pat[kl] == '\0' ||
		    pat[kl] == '.'))
			return 1;
		if (kl > pl && strncmp(*k, pat, pl) == 0 &&
		    ((*k)[pl] == '.' || (*k)[pl] == '['))
			return 2;
	}
	return 0;
}

/* A scalar as it is, but for its ${file:...} and ${credential:...}
 * references, which the child could not read: what they stand for, in
 * place (conf_secret_inline). */
static int
crole_copy_scalar(struct crole *r, yaml_node_t *n)
{
	const char *v = (const char *)n->data.scalar.value;
	char *s;
	int changed, id;

	if (strstr(v, "${file:") == NULL && strstr(v, "${credential:") == NULL)
		return yaml_document_add_scalar(&r->out, n->tag,
		    n->data.scalar.value, (int)n->data.scalar.length,
		    n->data.scalar.style);
	if ((s = conf_secret_inline(v, &changed, r->err,
	    sizeof(r->err))) == NULL)
		return 0;
	/* Any style: the emitter quotes what the text needs. */
	id = yaml_document_add_scalar(&r->out, n->tag, (yaml_char_t *)s,
	    (int)strlen(s), changed ? YAML_ANY_SCALAR_STYLE :
	    n->data.scalar.style);
	free(s);
	return id;
}

/*
 * The digest, in hex, of the token file of n when n is an entry {name,
 * token_file} of a list of tokens in the role's part that r->cf read:
 * 1, else 0.
 */
static int
crole_token_hex(struct crole *r, yaml_node_t *n, char *hex, size_t len)
{
	const unsigned char *d = NULL;
	yaml_node_t *name;
	size_t m, got;

	if (r->cf == NULL || conf_ymap_get(r->in, n, "token_file") == NULL ||
	    (name = conf_ymap_get(r->in, n, "name")) == NULL ||
	    name->type != YAML_SCALAR_NODE)
		return 0;
	for (m = 0; m < CONF_TAB_N && d == NULL; m++)
		if (conf_tab[m].type == T_TOKENS &&
		    crole_wants(r->role, conf_tab[m].name) == 1)
			d = conf_tokens_digest(r->cf, conf_tab[m].name,
			    (const char *)name->data.scalar.value);
	return d != NULL && OPENSSL_buf2hexstr_ex(hex, len, &got, d, 32,
	    '\0') == 1;
}

/* A node and everything below it, as it is (a token_file as its
 * digest: crole_token_hex). */
static int
crole_copy(struct crole *r, yaml_node_t *n)
{
	yaml_node_pair_t *pr;
	yaml_node_item_t *it;
	yaml_node_t *kn;
	char hex[65];
	int id, k, v, dig;

	switch (n->type) {
	case YAML_SCALAR_NODE:
		return crole_copy_scalar(r, n);
	case YAML_SEQUENCE_NODE:
		if ((id = yaml_document_add_sequence(&r->out, n->tag,
		    n->data.sequence.style)) == 0)
			return 0;
		for (it = n->data.sequence.items.start;
		    it < n->data.sequence.items.top; it++)
			if ((v = crole_copy(r, yaml_document_get_node(r->in,
			    *it))) == 0 ||
			    !yaml_document_append_sequence_item(&r->out, id, v))
				return 0;
		return id;
	case YAML_MAPPING_NODE:
		if ((id = yaml_document_add_mapping(&r->out, n->tag,
		    n->data.mapping.style)) == 0)
			return 0;
		dig = crole_token_hex(r, n, hex, sizeof(hex));
		for (pr = n->data.mapping.pairs.start;
		    pr < n->data.mapping.pairs.top; pr++) {
			kn = yaml_document_get_node(r->in, pr->key);
			if (dig && kn->type == YAML_SCALAR_NODE &&
			    strcmp((const char *)kn->data.scalar.value,
			    "token_file") == 0) {
				k = crole_scalar(r, "token_sha256");
				v = crole_scalar(r, hex);
			} else {
				k = crole_copy(r, kn);
				v = k == 0 ? 0 : crole_copy(r,
				    yaml_document_get_node(r->in, pr->value));
			}
			if (k == 0 || v == 0 ||
			    !yaml_document_append_mapping_pair(&r->out, id, k,
			    v))
				return 0;
		}
		OPENSSL_cleanse(hex, sizeof(hex));
		return id;
	default:
		return 0;
	}
}

static int
crole_scalar(struct crole *r, const char *s)
{
	return yaml_document_add_scalar(&r->out, NULL,
	    (yaml_char_t *)(uintptr_t)s, (int)strlen(s), YAML_ANY_SCALAR_STYLE);
}

/* The pattern below pat for a map's key or a list's elements: an id of a
 * map of ids is "*", an element of a list of sections "[]". */
static void
crole_sub(char *buf, size_t len, const char *pat, const char *key)
{
	char probe[256];

	snprintf(probe, sizeof(probe), "%s%s*", pat, pat[0] ? "." : "");
	if (key == NULL)
		snprintf(buf, len, "%s[]", pat);
	else if (conf_key_byname(probe) != NULL)
		snprintf(buf, len, "%s", probe);
	else
		snprintf(buf, len, "%s%s%s", pat, pat[0] ? "." : "", key);
}

/* A value at pattern pat that is on the way to kept keys: 0 on failure. */
static int
crole_value(struct crole *r, yaml_node_t *n, const char *pat)
{
	yaml_node_item_t *it;
	char sub[256];
	int id, v;

	if (n->type == YAML_MAPPING_NODE)
		return crole_map(r, n, pat);
	if (n->type != YAML_SEQUENCE_NODE)
		return crole_copy(r, n);
	crole_sub(sub, sizeof(sub), pat, NULL);
	if ((id = yaml_document_add_sequence(&r->out, n->tag,
	    n->data.sequence.style)) == 0)
		return 0;
	for (it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++)
		if ((v = crole_value(r, yaml_document_get_node(r->in, *it),
		    sub)) == 0 ||
		    !yaml_document_append_sequence_item(&r->out, id, v))
			return 0;
	return id;
}

static int
crole_map(struct crole *r, yaml_node_t *n, const char *pat)
{
	yaml_node_pair_t *pr;
	yaml_node_t *kn, *vn;
	char sub[256];
	int id, k, v, w;

	if ((id = yaml_document_add_mapping(&r->out, n->tag,
	    n->data.mapping.style)) == 0)
		return 0;
	/* An edge's sink is a log sink with its lane options. */
	if (r->role == CONF_ROLE_EDGE && strcmp(pat, "sources.*.sinks[]") == 0)
		if ((k = crole_scalar(r, "type")) == 0 ||
		    (v = crole_scalar(r, CROLE_EDGE_SINK)) == 0 ||
		    !yaml_document_append_mapping_pair(&r->out, id, k, v))
			return 0;
	for (pr = n->data.mapping.pairs.start; pr < n->data.mapping.pairs.top;
	    pr++) {
		kn = yaml_document_get_node(r->in, pr->key);
		vn = yaml_document_get_node(r->in, pr->value);
		if (kn == NULL || vn == NULL || kn->type != YAML_SCALAR_NODE)
			continue;
		crole_sub(sub, sizeof(sub), pat,
		    (const char *)kn->data.scalar.value);
		if ((w = crole_wants(r->role, sub)) == 0)
			continue;
		if ((k = crole_copy(r, kn)) == 0 ||
		    (v = w == 1 ? crole_copy(r, vn) : crole_value(r, vn,
		    sub)) == 0 ||
		    !yaml_document_append_mapping_pair(&r->out, id, k, v))
			return 0;
	}
	return id;
}

int
conf_role_keeps(enum conf_role role, const char *key)
{
	return crole_wants(role, key) == 1;
}

static int
crole_write(void *arg, unsigned char *buf, size_t len)
{
	struct crole_buf *b = arg;
	char *n;

	if (b->len + len + 1 > b->cap) {
		b->cap = (b->len + len + 1) * 2;
		if ((n = realloc(b->s, b->cap)) == NULL)
			return 0;
		b->s = n;
	}
	memcpy(b->s + b->len, buf, len);
	b->len += len;
	b->s[b->len] = '\0';
	return 1;
}

char *
conf_role_text(const char *text, size_t len, enum conf_role role,
    size_t *lenp, struct conf_errors *errs)
{
	return conf_role_text_tokens(text, len, role, NULL, lenp, errs);
}

char *
conf_role_text_tokens(const char *text, size_t len, enum conf_role role,
    const struct conf *cf, size_t *lenp, struct conf_errors *errs)
{
	struct cparse p;
	struct crole r;
	struct crole_buf b = { NULL, 0, 0 };
	yaml_parser_t parser;
	yaml_emitter_t em;
	yaml_document_t in;
	yaml_node_t *root;
	int ok = 0;

	memset(&p, 0, sizeof(p));
	p.errs = errs;
	memset(&r, 0, sizeof(r));
	r.role = role;
	r.cf = cf;
	r.in = &in;
	if (!yaml_parser_initialize(&parser)) {
		conf_err(&p, 0, "config: cannot start the YAML parser");
		return NULL;
	}
	yaml_parser_set_input_string(&parser, (const unsigned char *)text,
	    len);
	if (!yaml_parser_load(&parser, &in)) {
		conf_err(&p, 0, "config: not valid YAML");
		yaml_parser_delete(&parser);
		return NULL;
	}
	yaml_parser_delete(&parser);
	if (!yaml_document_initialize(&r.out, NULL, NULL, NULL, 1, 1)) {
		yaml_document_delete(&in);
		conf_err(&p, 0, "config: out of memory");
		return NULL;
	}
	root = yaml_document_get_root_node(&in);
	if (root != NULL && root->type == YAML_MAPPING_NODE &&
	    crole_map(&r, root, "") != 0 && yaml_emitter_initialize(&em)) {
		yaml_emitter_set_output(&em, crole_write, &b);
		yaml_emitter_set_unicode(&em, 1);
		/* The dump takes the document, and deletes it. */
		ok = yaml_emitter_dump(&em, &r.out) && yaml_emitter_close(&em) &&
		    yaml_emitter_flush(&em) && b.s != NULL;
		yaml_emitter_delete(&em);
	} else
		yaml_document_delete(&r.out);
	yaml_document_delete(&in);
	if (!ok && r.err[0] != '\0') {
		free(b.s);
		conf_err(&p, 0, "config: %s", r.err);
		return NULL;
	}
	if (!ok) {
		free(b.s);
		conf_err(&p, 0, "config: cannot write the %s's part",
		    role == CONF_ROLE_EDGE ? "edge" :
		    role == CONF_ROLE_DELIVER ? "deliver" : "gateway");
		return NULL;
	}
	*lenp = b.len;
	return b.s;
}
