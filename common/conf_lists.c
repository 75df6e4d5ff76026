/* SPDX-License-Identifier: ISC */
/*
 * conf_lists.c: the loader's setters of the keys whose value is a list or
 * a map (conf_yaml.c's cset_node calls them by the key's type): secrets,
 * strings, CIDRs and host names, HTTP statuses, delays, headers.  Each
 * names the item it refuses by its path ("key[2]").
 *
 * Fatal: out of memory (abort).
 */
#include "config.h"

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "b64.h"
#include "conf.h"
#include "conf_int.h"
#include "conf_secret.h"
#include "netaddr.h"

static void	cstrlist_commas(struct cparse *, const struct conf_key *,
		    void *, yaml_node_t *, const char *);

/* One secret or a list of up to CONF_MAX_SECRETS, decoded as the context
 * says: whsec_ + base64, or raw bytes.  None may be empty. */
void
conf_set_secrets(struct cparse *p, struct cctx *c, const struct conf_key *k,
    void *base, yaml_node_t *n, const char *path)
{
	struct blob *bl = (struct blob *)(void *)((char *)base + k->off);
	int *np = (int *)(void *)((char *)base + k->off2);
	yaml_node_item_t *it;
	yaml_node_t *e, *items[CONF_MAX_SECRETS];
	char ipath[CPATH_MAX], *v;
	const char *why;
	int i, ni = 0, whsec = conf_secret_whsec(p, c), line;

	if (n->type == YAML_SCALAR_NODE && !conf_yisnull(n))
		items[ni++] = n;
	else if (n->type == YAML_SEQUENCE_NODE) {
		for (it = n->data.sequence.items.start;
		    it < n->data.sequence.items.top; it++) {
			if (ni == CONF_MAX_SECRETS) {
				conf_err(p, conf_yline(n),
				    "%s must be a list of at "
				    "most %d secrets, got a list of %d", path,
				    CONF_MAX_SECRETS,
				    (int)(n->data.sequence.items.top -
				    n->data.sequence.items.start));
				return;
			}
			items[ni++] = yaml_document_get_node(p->doc, *it);
		}
		if (ni == 0) {
			conf_bad_node(p, k, path, n);
			return;
		}
	} else {
		conf_bad_node(p, k, path, n);
		return;
	}
	conf_free_blobs(bl, *np);
	*np = 0;
	for (i = 0; i < ni; i++) {
		e = items[i];
		if (n->type == YAML_SEQUENCE_NODE)
			conf_fmt(ipath, sizeof(ipath), "%s[%d]", path, i);
		else
			conf_fmt(ipath, sizeof(ipath), "%s", path);
		line = conf_yline(e);
		if (e == NULL || e->type != YAML_SCALAR_NODE || conf_yisnull(e))
		    {
			conf_err(p, line,
			    "%s must be a non-empty string, got %s", ipath,
			    conf_ykind(e));
			continue;
		}
		if ((v = conf_scalar(p, e, ipath)) == NULL)
			continue;
		if (v[0] == '\0')
			conf_err(p, line,
			    "%s must be a non-empty secret, got \"\"", ipath);
		else if (whsec) {
			/* Canonical base64 only: the SDKs that verify a
			 * delivery refuse any other spelling of the
			 * secret, so it would sign nothing they accept. */
			why = strncmp(v, "whsec_", 6) != 0 ? "not whsec_" :
			    b64_noncanonical(v + 6, strlen(v + 6));
			if (why != NULL || conf_b64_decode(v + 6, &bl[*np]) == -1)
				conf_err(p, line,
				    "%s must be whsec_ followed by "
				    "non-empty, padded, canonical base64, got "
				    "a %zu-byte value that is %s", ipath,
				    strlen(v), why != NULL ? why :
				    "not base64");
			else
				(*np)++;
		} else {
			bl[*np].len = strlen(v);
			if ((bl[*np].data = malloc(bl[*np].len)) == NULL)
				abort();
			memcpy(bl[*np].data, v, bl[*np].len);
			(*np)++;
		}
		explicit_bzero(v, strlen(v));
		free(v);
	}
}

/*
 * One string of host:port separated by commas (F_COMMA), each entry
 * trimmed of blanks, empty ones skipped, as the Elixir Ankusa reads
 * "${KAFKA_BROKERS}"; none at all is an error.
 */
static void
cstrlist_commas(struct cparse *p, const struct conf_key *k, void *base,
    yaml_node_t *n, const char *path)
{
	char ***lp = (char ***)(void *)((char *)base + k->off);
	int *np = (int *)(void *)((char *)base + k->off2);
	char *v, *s, *e, *end;
	size_t cnt = 1;

	if ((v = conf_scalar(p, n, path)) == NULL)
		return;
	for (s = v; *s != '\0'; s++)
		cnt += *s == ',';
	if ((*lp = calloc(cnt + 1, sizeof(**lp))) == NULL)
		abort();
	for (s = v; s != NULL; s = e) {
		if ((e = strchr(s, ',')) != NULL)
			*e++ = '\0';
		s += strspn(s, " \t");
		for (end = s + strlen(s); end > s && (end[-1] == ' ' ||
		    end[-1] == '\t'); end--)
			;
		*end = '\0';
		if (*s == '\0')
			continue;
		if (((*lp)[(*np)++] = strdup(s)) == NULL)
			abort();
	}
	if (*np == 0)
		conf_err(p, conf_yline(n), "%s must be a list of hosts or one "
		    "string of them separated by commas, got none", path);
	free(v);
}

/* A list of header names, stored lowercase, or of egress.allow entries,
 * host:port or names, stored as written; [] is an empty, non-NULL list. */
void
conf_set_strlist(struct cparse *p, const struct conf_key *k, void *base,
    yaml_node_t *n, const char *path)
{
	char ***lp = (char ***)(void *)((char *)base + k->off);
	int *np = (int *)(void *)((char *)base + k->off2);
	yaml_node_item_t *it;
	yaml_node_t *e;
	struct netaddr_cidr cidr;
	char ipath[CPATH_MAX], *v, *s;
	const char *what = k->type == T_CIDRS ? "an address or CIDR like "
	    "10.0.0.0/8, 127.0.0.1/32:8080 or [::1]/128:443" :
	    k->type == T_HOSTPORTS ? "host:port" :
	    k->type == T_NAMES ? "a name" : "a header name";
	size_t cnt;
	int i;

	if (conf_yisnull(n))
		return;
	if (n->type == YAML_SCALAR_NODE && (k->flags & F_COMMA)) {
		cstrlist_commas(p, k, base, n, path);
		return;
	}
	if (n->type != YAML_SEQUENCE_NODE) {
		conf_bad_node(p, k, path, n);
		return;
	}
	cnt = n->data.sequence.items.top - n->data.sequence.items.start;
	if ((*lp = calloc(cnt + 1, sizeof(**lp))) == NULL)
		abort();
	for (i = 0, it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++, i++) {
		e = yaml_document_get_node(p->doc, *it);
		conf_fmt(ipath, sizeof(ipath), "%s[%d]", path, i);
		if (e == NULL || e->type != YAML_SCALAR_NODE || conf_yisnull(e))
		    {
			conf_err(p, conf_yline(e), "%s must be %s, got %s",
			    ipath, what, conf_ykind(e));
			continue;
		}
		if ((v = conf_scalar(p, e, ipath)) == NULL)
			continue;
		if (k->type == T_CIDRS ? netaddr_cidr_parse(v, &cidr) == -1 :
		    k->type == T_HOSTPORTS || k->type == T_NAMES ?
		    v[0] == '\0' : !conf_valid_token(v)) {
			conf_err(p, conf_yline(e), "%s must be %s, got %s",
			    ipath, what, v[0] != '\0' ? v : "\"\"");
			free(v);
			continue;
		}
		for (s = v; k->type == T_STRLIST && *s != '\0'; s++)
			if (*s >= 'A' && *s <= 'Z')
				*s += 'a' - 'A';
		(*lp)[(*np)++] = v;
	}
}

/* A list of 1..RETRY_SCHEDULE_MAX integers, each in k->min..k->max
 * (retry.schedule_ms). */
void
conf_set_mslist(struct cparse *p, const struct conf_key *k, void *base,
    yaml_node_t *n, const char *path)
{
	uint64_t *lp = (uint64_t *)(void *)((char *)base + k->off), u;
	int *np = (int *)(void *)((char *)base + k->off2);
	yaml_node_item_t *it;
	yaml_node_t *e;
	char ipath[CPATH_MAX], want[128], *v;
	size_t cnt;
	int i;

	if (n == NULL || n->type != YAML_SEQUENCE_NODE ||
	    (cnt = n->data.sequence.items.top -
	    n->data.sequence.items.start) == 0 || cnt > RETRY_SCHEDULE_MAX) {
		conf_bad_node(p, k, path, n);
		return;
	}
	*np = 0;
	for (i = 0, it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++, i++) {
		e = yaml_document_get_node(p->doc, *it);
		conf_fmt(ipath, sizeof(ipath), "%s[%d]", path, i);
		snprintf(want, sizeof(want), "an integer in %llu..%llu",
		    (unsigned long long)k->min, (unsigned long long)k->max);
		if (e == NULL || e->type != YAML_SCALAR_NODE ||
		    conf_yisnull(e)) {
			conf_err(p, conf_yline(e), "%s must be %s, got %s",
			    ipath, want, conf_ykind(e));
			continue;
		}
		if ((v = conf_scalar(p, e, ipath)) == NULL)
			continue;
		if (conf_parse_u64(v, &u) == -1 || u < k->min || u > k->max)
			conf_err(p, conf_yline(e), "%s must be %s, got %s",
			    ipath, want, v[0] != '\0' ? v : "\"\"");
		else
			lp[(*np)++] = u;
		free(v);
	}
}

/* A list of HTTP statuses, a bit each; [] is an empty list, set. */
void
conf_set_statuses(struct cparse *p, const struct conf_key *k, void *base,
    yaml_node_t *n, const char *path)
{
	uint64_t *bits = (uint64_t *)(void *)((char *)base + k->off);
	int *setp = (int *)(void *)((char *)base + k->off2);
	yaml_node_item_t *it;
	yaml_node_t *e;
	char ipath[CPATH_MAX], *v, *end;
	unsigned long st;
	int i;

	if (conf_yisnull(n))
		return;
	if (n->type != YAML_SEQUENCE_NODE) {
		conf_bad_node(p, k, path, n);
		return;
	}
	memset(bits, 0, (CONF_STATUS_MAX + 63) / 64 * sizeof(*bits));
	*setp = 1;
	for (i = 0, it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++, i++) {
		e = yaml_document_get_node(p->doc, *it);
		conf_fmt(ipath, sizeof(ipath), "%s[%d]", path, i);
		if (e == NULL || e->type != YAML_SCALAR_NODE ||
		    conf_yisnull(e) || (v = conf_scalar(p, e, ipath)) == NULL) {
			conf_err(p, conf_yline(e), "%s must be an HTTP status "
			    "in 100..%d, got %s", ipath, CONF_STATUS_MAX - 1,
			    conf_ykind(e));
			continue;
		}
		st = strtoul(v, &end, 10);
		if (v[0] < '0' || v[0] > '9' || *end != '\0' || st < 100 ||
		    st >= CONF_STATUS_MAX) {
			conf_err(p, conf_yline(e), "%s must be an HTTP status "
			    "in 100..%d, got %s", ipath, CONF_STATUS_MAX - 1,
			    v);
			free(v);
			continue;
		}
		bits[st / 64] |= (uint64_t)1 << (st % 64);
		free(v);
	}
}

/* A map of header name to value (values may be empty). */
void
conf_set_headers(struct cparse *p, const struct conf_key *k, void *base,
    yaml_node_t *n, const char *path)
{
	struct header_kv **hp =
	    (struct header_kv **)(void *)((char *)base + k->off);
	int *np = (int *)(void *)((char *)base + k->off2);
	yaml_node_pair_t *pr;
	yaml_node_t *kn, *vn;
	char ipath[CPATH_MAX], *v, *c;
	size_t cnt;

	if (conf_yisnull(n))
		return;
	if (n->type != YAML_MAPPING_NODE) {
		conf_bad_node(p, k, path, n);
		return;
	}
	cnt = n->data.mapping.pairs.top - n->data.mapping.pairs.start;
	if ((*hp = calloc(cnt + 1, sizeof(**hp))) == NULL)
		abort();
	for (pr = n->data.mapping.pairs.start;
	    pr < n->data.mapping.pairs.top; pr++) {
		kn = yaml_document_get_node(p->doc, pr->key);
		vn = yaml_document_get_node(p->doc, pr->value);
		if (kn == NULL || kn->type != YAML_SCALAR_NODE ||
		    !conf_valid_token((const char *)kn->data.scalar.value)) {
			conf_err(p, conf_yline(kn),
			    "%s must be %s, got a key that is "
			    "not a header name", path,
			    "a map of header names to strings");
			continue;
		}
		conf_join(ipath, sizeof(ipath), path,
		    (const char *)kn->data.scalar.value);
		if (vn == NULL || vn->type != YAML_SCALAR_NODE) {
			conf_err(p, conf_yline(vn),
			    "%s must be a string, got %s", ipath,
			    conf_ykind(vn));
			continue;
		}
		if ((v = conf_scalar(p, vn, ipath)) == NULL)
			continue;
		for (c = v; *c != '\0'; c++)
			if (((unsigned char)*c < 0x20 && *c != '\t') ||
			    (unsigned char)*c == 0x7f)
				break;
		if (*c != '\0') {
			conf_err(p, conf_yline(vn),
			    "%s must be a header value without "
			    "control characters, got %s", ipath, "one with");
			free(v);
			continue;
		}
		(*hp)[*np].value = v;
		conf_set_str(&(*hp)[*np].name,
		    (const char *)kn->data.scalar.value);
		(*np)++;
	}
}
