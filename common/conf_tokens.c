/* SPDX-License-Identifier: ISC */
/*
 * conf_tokens.c: the lists of bearer tokens (T_TOKENS): admin.tokens,
 * the admin API's credentials, and claim_check.auth.tokens, the claim
 * gateway's.
 *
 * A list of maps {name, token | token_file | token_sha256}, and scopes
 * when the key has F_SCOPES (admin.tokens; refused as an unknown key
 * otherwise): exactly one of the three credential forms, a name unique
 * in the list (the actor an audit record names, the name a log line
 * gives), and a non-empty list of scopes (common/scope.h), each known.
 * A token is at least the key's min bytes long.  Only the SHA-256 of a
 * token is kept: token: is hashed as it is parsed and its text wiped,
 * token_sha256: is the digest in hex, and token_file: is read by
 * conf_tokens_read, which ankusad calls while it is still root, so that
 * the file may be root's alone.  A file's token is its first line (a
 * final newline is not part of it).  An exec of ankusad by itself
 * (daemon/reexec.h) runs as node.user already: the digests read from
 * files are handed down to it in a memfd (conf_tokens_save,
 * conf_tokens_restore) instead of read again; a child gets them in its
 * part of the config (conf_role.c, conf_tokens_digest).  Tokens are
 * matched by common/bearer.c.
 */
#include "config.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <yaml.h>

#include "conf.h"
#include "conf_int.h"
#include "proc.h"
#include "scope.h"
#include "sha256.h"

#define TOKEN_FILE_MAX	4096	/* bytes a token file may hold */
#define TOKEN_PATH_MAX	512	/* a key path in a message */

static const char *const token_fields[] = {
	"name", "token", "token_file", "token_sha256", "scopes", NULL
};

/* The list of key k in base, and its count (to read); where they are
 * (to write). */
#define CTOK_LIST(k, base)	(*(struct conf_token *const *)(const void *) \
	((const char *)(base) + (k)->off))
#define CTOK_N(k, base)		(*(const int *)(const void *)		\
	((const char *)(base) + (k)->off2))
#define CTOK_LISTP(k, base)	((struct conf_token **)(void *)		\
	((char *)(base) + (k)->off))
#define CTOK_NP(k, base)	((int *)(void *)((char *)(base) + (k)->off2))

/* 64 hex digits to 32 bytes: 0, or -1. */
static int
unhex_digest(const char *s, unsigned char out[SHA256_LEN])
{
	size_t len;

	if (strlen(s) != 2 * SHA256_LEN ||
	    OPENSSL_hexstr2buf_ex(out, SHA256_LEN, &len, s, '\0') != 1 ||
	    len != SHA256_LEN)
		return -1;
	return 0;
}

/* The scopes of one entry: the set, or 0 after an error. */
static uint32_t
token_scopes(struct cparse *p, yaml_node_t *n, const char *path)
{
	yaml_node_item_t *it;
	yaml_node_t *e;
	char ipath[TOKEN_PATH_MAX], *v;
	uint32_t set = 0, b;
	int i, bad = 0;

	if (n == NULL || n->type != YAML_SEQUENCE_NODE ||
	    n->data.sequence.items.top == n->data.sequence.items.start) {
		conf_err(p, conf_yline(n), "%s.scopes must be a non-empty list "
		    "of scopes, got %s", path, n == NULL ? "nothing" :
		    conf_ykind(n));
		return 0;
	}
	for (i = 0, it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++, i++) {
		e = yaml_document_get_node(p->doc, *it);
		snprintf(ipath, sizeof(ipath), "%s.scopes[%d]", path, i);
		if (e == NULL || e->type != YAML_SCALAR_NODE ||
		    conf_yisnull(e)) {
			conf_err(p, conf_yline(e), "%s must be a scope, got %s",
			    ipath, conf_ykind(e));
			bad = 1;
			continue;
		}
		if ((v = conf_scalar(p, e, ipath)) == NULL) {
			bad = 1;
			continue;
		}
		if ((b = scope_parse(v)) == 0) {
			conf_err(p, conf_yline(e), "%s: unknown scope %s (see "
			    "ADMIN API in ankusad(8))", ipath, v);
			bad = 1;
		}
		set |= b;
		free(v);
	}
	return bad ? 0 : set;
}

/* An entry's strings freed, its digest wiped, and it zeroed. */
static void
ctok_clear(struct conf_token *t)
{
	free(t->name);
	free(t->file);
	explicit_bzero(t, sizeof(*t));
}

/* One entry of k's list into t: 0, or -1 after an error. */
static int
token_entry(struct cparse *p, const struct conf_key *k, yaml_node_t *e,
    const char *path, struct conf_token *t)
{
	yaml_node_pair_t *pr;
	yaml_node_t *kn, *vn;
	char fpath[TOKEN_PATH_MAX], *v;
	const char *cred = NULL, *sc;
	int i, ncred = 0, bad = 0;

	sc = k->flags & F_SCOPES ? ", scopes" : "";
	if (e == NULL || e->type != YAML_MAPPING_NODE) {
		conf_err(p, conf_yline(e), "%s must be a map {name, token | "
		    "token_file | token_sha256%s}, got %s", path, sc,
		    conf_ykind(e));
		return -1;
	}
	for (pr = e->data.mapping.pairs.start;
	    pr < e->data.mapping.pairs.top; pr++) {
		kn = yaml_document_get_node(p->doc, pr->key);
		if (kn == NULL || kn->type != YAML_SCALAR_NODE)
			continue;
		for (i = 0; token_fields[i] != NULL; i++)
			if (strcmp((const char *)kn->data.scalar.value,
			    token_fields[i]) == 0)
				break;
		if (token_fields[i] == NULL || (i == 4 &&
		    !(k->flags & F_SCOPES))) {
			conf_err(p, conf_yline(kn), "%s.%s: unknown key (a "
			    "token has name, token, token_file%s "
			    "token_sha256%s)", path, kn->data.scalar.value,
			    *sc ? "," : " and", *sc ? " and scopes" : "");
			bad = 1;
		} else if (i >= 1 && i <= 3) {
			cred = token_fields[i];
			ncred++;
		}
	}
	if (ncred != 1) {
		conf_err(p, conf_yline(e), "%s must have exactly one of token, "
		    "token_file and token_sha256, got %d", path, ncred);
		return -1;
	}
	snprintf(fpath, sizeof(fpath), "%s.name", path);
	if ((vn = conf_ymap_get(p->doc, e, "name")) == NULL) {
		conf_err(p, conf_yline(e), "%s is required", fpath);
		return -1;
	}
	if (vn->type != YAML_SCALAR_NODE || conf_yisnull(vn) ||
	    (v = conf_scalar(p, vn, fpath)) == NULL) {
		conf_err(p, conf_yline(vn), "%s must be an id matching "
		    "[A-Za-z0-9_-]{1,%d}", fpath, CONF_ID_MAX);
		return -1;
	}
	if (!conf_valid_id(v)) {
		conf_err(p, conf_yline(vn), "%s must be an id matching "
		    "[A-Za-z0-9_-]{1,%d}, got %s", fpath, CONF_ID_MAX, v);
		free(v);
		return -1;
	}
	t->name = v;
	snprintf(fpath, sizeof(fpath), "%s.%s", path, cred);
	vn = conf_ymap_get(p->doc, e, cred);
	if (vn == NULL || vn->type != YAML_SCALAR_NODE || conf_yisnull(vn) ||
	    (v = conf_scalar(p, vn, fpath)) == NULL || v[0] == '\0') {
		conf_err(p, conf_yline(vn), "%s must be a non-empty string",
		    fpath);
		return -1;
	}
	if (strcmp(cred, "token") == 0) {
		t->kind = TOKEN_INLINE;
		if (strlen(v) < k->min) {
			conf_err(p, conf_yline(vn), "%s must be at least %d "
			    "bytes", fpath, (int)k->min);
			bad = 1;
		}
		sha256(v, strlen(v), t->digest);
		t->has_digest = 1;
		explicit_bzero(v, strlen(v));
		free(v);
	} else if (strcmp(cred, "token_sha256") == 0) {
		t->kind = TOKEN_SHA256;
		if (unhex_digest(v, t->digest) == -1) {
			conf_err(p, conf_yline(vn), "%s must be 64 hex digits "
			    "(the SHA-256 of the token), got %zu characters "
			    "that are not", fpath, strlen(v));
			bad = 1;
		} else
			t->has_digest = 1;
		free(v);
	} else {
		t->kind = TOKEN_FILE;
		if (v[0] != '/') {
			conf_err(p, conf_yline(vn), "%s must be an absolute "
			    "path, got %s", fpath, v);
			bad = 1;
		}
		t->file = v;
	}
	if ((k->flags & F_SCOPES) && (t->scopes = token_scopes(p,
	    conf_ymap_get(p->doc, e, "scopes"), path)) == 0)
		bad = 1;
	return bad ? -1 : 0;
}

void
conf_tokens_set(struct cparse *p, const struct conf_key *k, void *base,
    yaml_node_t *n, const char *path)
{
	struct conf_token **tp = CTOK_LISTP(k, base), *t;
	int *np = CTOK_NP(k, base);
	yaml_node_item_t *it;
	char epath[TOKEN_PATH_MAX];
	size_t cnt;
	int i, j;

	conf_tokens_free(*tp, *np);
	*tp = NULL;
	*np = 0;
	if (conf_yisnull(n))
		return;
	if (n->type != YAML_SEQUENCE_NODE) {
		conf_err(p, conf_yline(n), "%s must be a list of tokens, got "
		    "%s", path, conf_ykind(n));
		return;
	}
	cnt = n->data.sequence.items.top - n->data.sequence.items.start;
	if (cnt == 0)
		return;
	if ((*tp = calloc(cnt, sizeof(*t))) == NULL)
		abort();
	for (i = 0, it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++, i++) {
		snprintf(epath, sizeof(epath), "%s[%d]", path, i);
		t = &(*tp)[*np];
		if (token_entry(p, k, yaml_document_get_node(p->doc, *it),
		    epath, t) == -1) {
			ctok_clear(t);
			continue;
		}
		for (j = 0; j < *np; j++)
			if (strcmp((*tp)[j].name, t->name) == 0)
				break;
		if (j < *np) {
			conf_err(p, conf_yline(yaml_document_get_node(p->doc,
			    *it)), "%s.name: %s is the name of another token "
			    "too", epath, t->name);
			ctok_clear(t);
			continue;
		}
		(*np)++;
	}
}

/* The list of k is one conf_tokens_read reads: its section (the key's
 * first part) is enabled, by the section's own flag or its enabled. */
static int
ctok_section_on(const struct conf *cf, const struct conf_key *k)
{
	const struct conf_key *s;
	char name[64];
	size_t len = strcspn(k->name, ".");

	snprintf(name, sizeof(name), "%.*s", (int)len, k->name);
	if ((s = conf_key_byname(name)) != NULL && s->type == T_SECTION &&
	    s->scope == S_CONF)
		return *(const int *)(const void *)((const char *)cf + s->off);
	snprintf(name, sizeof(name), "%.*s.enabled", (int)len, k->name);
	if ((s = conf_key_byname(name)) != NULL && s->type == T_BOOL &&
	    s->scope == S_CONF)
		return *(const int *)(const void *)((const char *)cf + s->off);
	return 1;
}

/* The token in t's file into its digest: 0, or -1 with err set. */
static int
ctok_read(const struct conf_key *k, int i, struct conf_token *t, char *err,
    size_t errlen)
{
	char buf[TOKEN_FILE_MAX + 1];
	ssize_t r;
	size_t len;
	int fd;

	if ((fd = open(t->file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) == -1) {
		snprintf(err, errlen, "%s[%d].token_file %s: %s", k->name, i,
		    t->file, strerror(errno));
		return -1;
	}
	len = 0;
	while (len < sizeof(buf) &&
	    (r = read(fd, buf + len, sizeof(buf) - len)) != 0) {
		if (r == -1) {
			if (errno == EINTR)
				continue;
			snprintf(err, errlen, "%s[%d].token_file %s: %s",
			    k->name, i, t->file, strerror(errno));
			close(fd);
			explicit_bzero(buf, sizeof(buf));
			return -1;
		}
		len += (size_t)r;
	}
	close(fd);
	if (len > TOKEN_FILE_MAX) {
		snprintf(err, errlen, "%s[%d].token_file %s: longer than %d "
		    "bytes", k->name, i, t->file, TOKEN_FILE_MAX);
		explicit_bzero(buf, sizeof(buf));
		return -1;
	}
	/* The first line, without its newline (and a CR before). */
	buf[len] = '\0';
	len = strcspn(buf, "\n");
	if (len > 0 && buf[len - 1] == '\r')
		len--;
	if (len == 0 || len < k->min) {
		snprintf(err, errlen, "%s[%d].token_file %s: %s", k->name, i,
		    t->file, len == 0 ? "empty" : "a token shorter than the "
		    "least");
		explicit_bzero(buf, sizeof(buf));
		return -1;
	}
	sha256(buf, len, t->digest);
	t->has_digest = 1;
	explicit_bzero(buf, sizeof(buf));
	return 0;
}

int
conf_tokens_read(struct conf *cf, char *err, size_t errlen)
{
	const struct conf_key *k;
	struct conf_token *t;
	size_t m;
	int i;

	for (m = 0; m < CONF_TAB_N; m++) {
		k = &conf_tab[m];
		if (k->type != T_TOKENS || k->scope != S_CONF ||
		    !ctok_section_on(cf, k))
			continue;
		for (i = 0; i < CTOK_N(k, cf); i++) {
			t = &(*CTOK_LISTP(k, cf))[i];
			if (t->kind == TOKEN_FILE && !t->has_digest &&
			    ctok_read(k, i, t, err, errlen) == -1)
				return -1;
		}
	}
	return 0;
}

void
conf_tokens_free(struct conf_token *t, int n)
{
	int i;

	if (t == NULL)
		return;
	for (i = 0; i < n; i++)
		ctok_clear(&t[i]);
	free(t);
}

int
conf_tokens_differ(const struct conf_key *k, const char *o, const char *w)
{
	const struct conf_token *x, *y;
	int i;

	if (CTOK_N(k, o) != CTOK_N(k, w))
		return 1;
	for (i = 0; i < CTOK_N(k, o); i++) {
		x = &CTOK_LIST(k, o)[i];
		y = &CTOK_LIST(k, w)[i];
		if (strcmp(x->name, y->name) != 0 || x->kind != y->kind ||
		    x->scopes != y->scopes)
			return 1;
		/* A file is not read again on a reload: its path is what
		 * the configuration says of it. */
		if (x->kind == TOKEN_FILE ? strcmp(x->file, y->file) != 0 :
		    memcmp(x->digest, y->digest, sizeof(x->digest)) != 0)
			return 1;
	}
	return 0;
}

int
conf_tokens_copy(const struct conf_key *k, const char *o, char *w)
{
	const struct conf_token *from = CTOK_LIST(k, o);
	struct conf_token *t, **tp = CTOK_LISTP(k, w);
	int i, n = CTOK_N(k, o), *np = CTOK_NP(k, w);

	conf_tokens_free(*tp, *np);
	*tp = NULL;
	*np = 0;
	if (n == 0)
		return 0;
	if ((t = calloc(n, sizeof(*t))) == NULL)
		return -1;
	*tp = t;
	for (i = 0; i < n; i++) {
		t[i] = from[i];
		t[i].name = strdup(from[i].name);
		t[i].file = from[i].file != NULL ? strdup(from[i].file) : NULL;
		(*np)++;
		if (t[i].name == NULL || (from[i].file != NULL &&
		    t[i].file == NULL))
			return -1;
	}
	return 0;
}

int
conf_tokens_copy_all(const struct conf *from, struct conf *to)
{
	size_t m;

	for (m = 0; m < CONF_TAB_N; m++)
		if (conf_tab[m].type == T_TOKENS &&
		    conf_tab[m].scope == S_CONF &&
		    conf_tokens_copy(&conf_tab[m], (const char *)from,
		    (char *)to) == -1)
			return -1;
	return 0;
}

const unsigned char *
conf_tokens_digest(const struct conf *cf, const char *list, const char *name)
{
	const struct conf_key *k;
	const struct conf_token *t;
	int i;

	if ((k = conf_key_byname(list)) == NULL || k->type != T_TOKENS ||
	    k->scope != S_CONF)
		return NULL;
	for (i = 0; i < CTOK_N(k, cf); i++) {
		t = &CTOK_LIST(k, cf)[i];
		if (strcmp(t->name, name) == 0)
			return t->has_digest ? t->digest : NULL;
	}
	return NULL;
}

/* A saved record: the file's path, NUL, its token's digest. */
int
conf_tokens_save(const struct conf *cf)
{
	const struct conf_token *t;
	char buf[16384];
	size_t n = 0, len, m;
	int i, fd;

	for (m = 0; m < CONF_TAB_N; m++) {
		if (conf_tab[m].type != T_TOKENS || conf_tab[m].scope != S_CONF)
			continue;
		for (i = 0; i < CTOK_N(&conf_tab[m], cf); i++) {
			t = &CTOK_LIST(&conf_tab[m], cf)[i];
			if (t->kind != TOKEN_FILE || !t->has_digest)
				continue;
			len = strlen(t->file) + 1;
			if (n + len + SHA256_LEN > sizeof(buf))
				break;
			memcpy(buf + n, t->file, len);
			memcpy(buf + n + len, t->digest, SHA256_LEN);
			n += len + SHA256_LEN;
		}
	}
	if (n == 0)
		return -1;
	fd = proc_memfd("ankusa-tokens", buf, n);
	explicit_bzero(buf, sizeof(buf));
	return fd;
}

void
conf_tokens_restore(struct conf *cf, int fd)
{
	struct conf_token *t;
	char *buf;
	size_t len, off, plen, m;
	int i;

	if ((buf = proc_read_all(fd, &len)) == NULL)
		return;
	for (off = 0; off < len; off += plen + 1 + SHA256_LEN) {
		plen = strnlen(buf + off, len - off);
		if (off + plen + 1 + SHA256_LEN > len)
			break;
		for (m = 0; m < CONF_TAB_N; m++) {
			if (conf_tab[m].type != T_TOKENS ||
			    conf_tab[m].scope != S_CONF)
				continue;
			for (i = 0; i < CTOK_N(&conf_tab[m], cf); i++) {
				t = &(*CTOK_LISTP(&conf_tab[m], cf))[i];
				if (t->kind != TOKEN_FILE || t->has_digest ||
				    strcmp(t->file, buf + off) != 0)
					continue;
				memcpy(t->digest, buf + off + plen + 1,
				    SHA256_LEN);
				t->has_digest = 1;
			}
		}
	}
	explicit_bzero(buf, len);
	free(buf);
}
