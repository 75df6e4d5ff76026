/* SPDX-License-Identifier: ISC */
/*
 * conf_elixir.c: what a file written for the Elixir Ankusa brings, beyond
 * the keys both daemons share: node.roles (all-in-one sets only), the keys
 * and values of what this build lacks (refused, each with a line saying
 * so: conf_nosup_keys[] and the refused values on a key), and its image's
 * ANKUSA_* variables (conf_env_keys[]), applied over the file.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <yaml.h>

#include "conf.h"
#include "conf_int.h"

/* If v is a value of the Elixir Ankusa's that this build refuses, say so
 * (one line naming the key and the value) and return 1. */
int
conf_refused(struct cparse *p, const struct conf_key *k, const char *path,
    const char *v, int line)
{
	if (!conf_name_refused(k, v))
		return 0;
	conf_err(p, line, "%s: %s is not supported by this build%s%s", path,
	    v, k->nosup != NULL ? ": " : "", k->nosup != NULL ? k->nosup : "");
	return 1;
}

int
conf_in_list(const char *const *list, const char *name)
{
	const char *const *e;

	for (e = list; e != NULL && *e != NULL; e++)
		if (strcmp(name, *e) == 0)
			return 1;
	return 0;
}

/* The entry of conf_nosup_keys[] that covers pattern pat, or NULL. */
const struct cnosup *
conf_nosup_find(const char *pat)
{
	const struct cnosup *u;
	size_t len;

	for (u = conf_nosup_keys; u->name != NULL; u++) {
		len = strlen(u->name);
		if (strncmp(pat, u->name, len) == 0 &&
		    (pat[len] == '\0' || pat[len] == '.'))
			return u;
	}
	return NULL;
}

/*
 * node.roles: n names (or, from ANKUSA_ROLES, one comma-separated string
 * csv).  Every name must be a role of the Elixir Ankusa's, and the set must
 * be all-in-one (edge, dispatch and storage), because this daemon is one
 * node that runs them all.
 */
int
conf_roles(struct cparse *p, const char *const *names, int n, const char *csv,
    const char *path, int line)
{
	static const char *const roles[] = {
		"edge", "dispatch", "storage", "claim_check", NULL
	};
	char *copy = NULL, *s, *tok, *last, miss[64];
	const char *name;
	unsigned int have = 0;
	size_t ml = 0;
	int i, r, bad = 0;

	if (csv != NULL && (copy = strdup(csv)) == NULL)
		abort();
	s = copy;
	for (i = 0;; i++) {
		if (csv != NULL) {
			tok = strtok_r(s, ",", &last);
			s = NULL;
			if (tok == NULL)
				break;
			tok += strspn(tok, " \t");
			tok[strcspn(tok, " \t")] = '\0';
			name = tok;
		} else if (i < n)
			name = names[i];
		else
			break;
		for (r = 0; roles[r] != NULL; r++)
			if (strcmp(name, roles[r]) == 0)
				break;
		if (roles[r] == NULL) {
			conf_err(p, line,
			    "%s must be a list of edge, dispatch, "
			    "storage, claim_check, got %s", path, name[0] !=
			    '\0' ? name : "\"\"");
			bad = 1;
			continue;
		}
		have |= 1U << r;
	}
	free(copy);
	if (bad)
		return -1;
	if ((have & 7) == 7)
		return 0;
	miss[0] = '\0';
	for (r = 0; r < 3; r++)
		if (!(have & (1U << r)))
			ml += snprintf(miss + ml, sizeof(miss) - ml, "%s%s",
			    ml > 0 ? ", " : "", roles[r]);
	conf_err(p, line,
	    "%s: a node without %s is not supported by this build: "
	    "it runs every role (edge, dispatch, storage) in one node", path,
	    miss);
	return -1;
}

/* node.roles from the file: a list of role names. */
void
conf_set_roles(struct cparse *p, const struct conf_key *k, yaml_node_t *n,
    const char *path)
{
	yaml_node_item_t *it;
	yaml_node_t *e;
	char **v;
	int i, cnt, ok = 1;

	if (conf_yisnull(n) || n->type != YAML_SEQUENCE_NODE) {
		conf_bad_node(p, k, path, n);
		return;
	}
	cnt = (int)(n->data.sequence.items.top -
	    n->data.sequence.items.start);
	if ((v = calloc(cnt + 1, sizeof(*v))) == NULL)
		abort();
	for (i = 0, it = n->data.sequence.items.start;
	    it < n->data.sequence.items.top; it++, i++) {
		e = yaml_document_get_node(p->doc, *it);
		if (e == NULL || e->type != YAML_SCALAR_NODE ||
		    conf_yisnull(e)) {
			conf_bad_node(p, k, path, e);
			ok = 0;
			break;
		}
		if ((v[i] = conf_scalar(p, e, path)) == NULL) {
			ok = 0;
			break;
		}
	}
	if (ok)
		conf_roles(p, (const char *const *)v, cnt, NULL, path,
		    conf_yline(n));
	for (i = 0; i < cnt; i++)
		free(v[i]);
	free(v);
}

/*
 * The ANKUSA_* overrides (conf_env_keys[]), applied over the file's values with
 * the same setters, so a bad value is the key's own error, naming the
 * variable: "http.port (ANKUSA_HTTP_PORT) must be ...".  A variable whose
 * key this build lacks is refused as that key would be.  A child's parse
 * applies (and reads) only those of the keys of its part: the others are
 * the master's.
 */
void
conf_env_apply(struct cparse *p, struct cctx *c)
{
	const struct cenv *e;
	const struct conf_key *k;
	const struct cnosup *u;
	char path[256];
	const char *v;

	for (e = conf_env_keys; e->var != NULL; e++) {
		/* A child's parse: its part's keys only. */
		if (p->role != -1 && !conf_role_keeps(p->role, e->key))
			continue;
		if ((v = conf_getenv(p, e->var)) == NULL ||
		    (e->unless != NULL && conf_getenv(p, e->unless) != NULL))
			continue;
		snprintf(path, sizeof(path), "%s (%s)", e->key, e->var);
		if ((k = conf_key_byname(e->key)) == NULL) {
			u = conf_nosup_find(e->key);
			conf_err(p, 0, "%s is not supported by this build: %s",
			    path, u != NULL ? u->why : "no such key");
			continue;
		}
		conf_set_text(p, c, k, conf_key_base(p, c, k), v, path, 0);
	}
}
