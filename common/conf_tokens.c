/* SPDX-License-Identifier: ISC */
/*
 * conf_tokens.c: admin.tokens, the admin API's credentials.
 *
 * A list of maps {name, token | token_file | token_sha256, scopes}:
 * exactly one of the three credential forms, a name unique in the list
 * (the actor an audit record names), and a non-empty list of scopes
 * (common/scope.h), each known.  Only the SHA-256 of a token is kept:
 * token: is hashed as it is parsed and its text wiped, token_sha256: is
 * the digest in hex, and token_file: is read by conf_tokens_read, which
 * ankusad calls while it is still root, so that the file may be root's
 * alone.  A file's token is its first line (a final newline is not
 * part of it).  An exec of ankusad by itself (daemon/reexec.h) runs as
 * node.user already: the digests read from files are handed down to it
 * in a memfd (conf_tokens_save, conf_tokens_restore) instead of read
 * again.
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

/* One entry into t: 0, or -1 after an error. */
static int
token_entry(struct cparse *p, yaml_node_t *e, const char *path,
    struct admin_token *t)
{
	yaml_node_pair_t *pr;
	yaml_node_t *kn, *vn;
	char fpath[TOKEN_PATH_MAX], *v;
	const char *cred = NULL;
	int i, ncred = 0, bad = 0;

	if (e == NULL || e->type != YAML_MAPPING_NODE) {
		conf_err(p, conf_yline(e), "%s must be a map {name, token | "
		    "token_file | token_sha256, scopes}, got %s", path,
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
		if (token_fields[i] == NULL) {
			conf_err(p, conf_yline(kn), "%s.%s: unknown key (a "
			    "token has name, token, token_file, token_sha256 "
			    "and scopes)", path, kn->data.scalar.value);
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
	if ((t->scopes = token_scopes(p, conf_ymap_get(p->doc, e, "scopes"),
	    path)) == 0)
		bad = 1;
	return bad ? -1 : 0;
}

void
conf_tokens_set(struct cparse *p, struct conf *cf, yaml_node_t *n,
    const char *path)
{
	yaml_node_item_t *it;
	struct admin_token *t;
	char epath[TOKEN_PATH_MAX];
	size_t cnt;
	int i, j;

	conf_tokens_free(cf->admin.tokens, cf->admin.ntokens);
	free(cf->admin.tokens);
	cf->admin.tokens = NULL;
	cf->admin.ntokens = 0;
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
	if ((cf->admin.tokens = calloc(cnt, sizeof(*t))) == NULL)
		abort();
	for (i = 0, it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++, i++) {
		snprintf(epath, sizeof(epath), "%s[%d]", path, i);
		t = &cf->admin.tokens[cf->admin.ntokens];
		if (token_entry(p, yaml_document_get_node(p->doc, *it), epath,
		    t) == -1) {
			conf_tokens_free(t, 1);
			memset(t, 0, sizeof(*t));
			continue;
		}
		for (j = 0; j < cf->admin.ntokens; j++)
			if (strcmp(cf->admin.tokens[j].name, t->name) == 0)
				break;
		if (j < cf->admin.ntokens) {
			conf_err(p, conf_yline(yaml_document_get_node(p->doc,
			    *it)), "%s.name: %s is the name of another token "
			    "too", epath, t->name);
			conf_tokens_free(t, 1);
			memset(t, 0, sizeof(*t));
			continue;
		}
		cf->admin.ntokens++;
	}
}

int
conf_tokens_read(struct conf *cf, char *err, size_t errlen)
{
	struct admin_token *t;
	char buf[TOKEN_FILE_MAX + 1];
	ssize_t r;
	size_t len;
	int i, fd;

	for (i = 0; i < cf->admin.ntokens; i++) {
		t = &cf->admin.tokens[i];
		if (t->kind != TOKEN_FILE || t->has_digest)
			continue;
		if ((fd = open(t->file, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)) ==
		    -1) {
			snprintf(err, errlen, "admin.tokens[%d].token_file %s: "
			    "%s", i, t->file, strerror(errno));
			return -1;
		}
		len = 0;
		while (len < sizeof(buf) &&
		    (r = read(fd, buf + len, sizeof(buf) - len)) != 0) {
			if (r == -1) {
				if (errno == EINTR)
					continue;
				snprintf(err, errlen, "admin.tokens[%d]."
				    "token_file %s: %s", i, t->file,
				    strerror(errno));
				close(fd);
				explicit_bzero(buf, sizeof(buf));
				return -1;
			}
			len += (size_t)r;
		}
		close(fd);
		if (len > TOKEN_FILE_MAX) {
			snprintf(err, errlen, "admin.tokens[%d].token_file %s: "
			    "longer than %d bytes", i, t->file,
			    TOKEN_FILE_MAX);
			explicit_bzero(buf, sizeof(buf));
			return -1;
		}
		/* The first line, without its newline (and a CR before). */
		buf[len] = '\0';
		len = strcspn(buf, "\n");
		if (len > 0 && buf[len - 1] == '\r')
			len--;
		if (len == 0) {
			snprintf(err, errlen, "admin.tokens[%d].token_file %s: "
			    "empty", i, t->file);
			return -1;
		}
		sha256(buf, len, t->digest);
		t->has_digest = 1;
		explicit_bzero(buf, sizeof(buf));
	}
	return 0;
}

void
conf_tokens_free(struct admin_token *t, int n)
{
	int i;

	for (i = 0; t != NULL && i < n; i++) {
		free(t[i].name);
		free(t[i].file);
		explicit_bzero(t[i].digest, sizeof(t[i].digest));
	}
}

int
conf_tokens_differ(const struct conf *a, const struct conf *b)
{
	const struct admin_token *x, *y;
	int i;

	if (a->admin.ntokens != b->admin.ntokens)
		return 1;
	for (i = 0; i < a->admin.ntokens; i++) {
		x = &a->admin.tokens[i];
		y = &b->admin.tokens[i];
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
conf_tokens_copy(const struct conf *from, struct conf *to)
{
	struct admin_token *t;
	int i;

	conf_tokens_free(to->admin.tokens, to->admin.ntokens);
	free(to->admin.tokens);
	to->admin.tokens = NULL;
	to->admin.ntokens = 0;
	if (from->admin.ntokens == 0)
		return 0;
	if ((t = calloc(from->admin.ntokens, sizeof(*t))) == NULL)
		return -1;
	to->admin.tokens = t;
	for (i = 0; i < from->admin.ntokens; i++) {
		t[i] = from->admin.tokens[i];
		t[i].name = strdup(from->admin.tokens[i].name);
		t[i].file = from->admin.tokens[i].file != NULL ?
		    strdup(from->admin.tokens[i].file) : NULL;
		to->admin.ntokens++;
		if (t[i].name == NULL || (from->admin.tokens[i].file != NULL &&
		    t[i].file == NULL))
			return -1;
	}
	return 0;
}

/* A saved record: the file's path, NUL, its token's digest. */
int
conf_tokens_save(const struct conf *cf)
{
	char buf[16384];
	size_t n = 0, len;
	int i, fd;

	for (i = 0; i < cf->admin.ntokens; i++) {
		if (cf->admin.tokens[i].kind != TOKEN_FILE ||
		    !cf->admin.tokens[i].has_digest)
			continue;
		len = strlen(cf->admin.tokens[i].file) + 1;
		if (n + len + SHA256_LEN > sizeof(buf))
			break;
		memcpy(buf + n, cf->admin.tokens[i].file, len);
		memcpy(buf + n + len, cf->admin.tokens[i].digest, SHA256_LEN);
		n += len + SHA256_LEN;
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
	char *buf;
	size_t len, off, plen;
	int i;

	if ((buf = proc_read_all(fd, &len)) == NULL)
		return;
	for (off = 0; off < len; off += plen + 1 + SHA256_LEN) {
		plen = strnlen(buf + off, len - off);
		if (off + plen + 1 + SHA256_LEN > len)
			break;
		for (i = 0; i < cf->admin.ntokens; i++)
			if (cf->admin.tokens[i].kind == TOKEN_FILE &&
			    !cf->admin.tokens[i].has_digest &&
			    strcmp(cf->admin.tokens[i].file, buf + off) == 0) {
				memcpy(cf->admin.tokens[i].digest,
				    buf + off + plen + 1, SHA256_LEN);
				cf->admin.tokens[i].has_digest = 1;
			}
	}
	explicit_bzero(buf, len);
	free(buf);
}
