/* SPDX-License-Identifier: ISC */
/*
 * conf_filter.c: the checks of the delivery filters' keys: a source's
 * event_type and a sink's filter (workers/evtype.h, workers/filter.h run
 * them in the edge).
 *
 * A jq program is compiled here, by every process that loads the
 * configuration (the master first, so a program that does not compile
 * refuses the load or the reload, naming its key); compiling reads the
 * operator's text only, never a hook.  The edge compiles it again, once
 * per load, for its own evaluations (workers/filter.c).
 *
 * Fatal: nothing (libjq's own out-of-memory aborts).
 */
#include "config.h"

#include <stdio.h>
#include <string.h>

#include <jq.h>
#include <yaml.h>

#include "conf.h"
#include "conf_int.h"

/* The first error libjq reports while compiling. */
struct cjq_err {
	char	msg[160];
};

static void	cjq_error_cb(void *, jv);
static int	cfilter_pattern(const char *);

/* A name, or a prefix and one * at its end ("*" alone too). */
static int
cfilter_pattern(const char *t)
{
	const char *star = strchr(t, '*');

	return t[0] != '\0' && (star == NULL || star[1] == '\0');
}

/* libjq's message, on one line and without its "jq: error: ". */
static void
cjq_error_cb(void *arg, jv msg)
{
	struct cjq_err *e = arg;
	const char *m;
	size_t n;

	if (e->msg[0] == '\0' && jv_get_kind(msg) == JV_KIND_STRING) {
		m = jv_string_value(msg);
		if (strncmp(m, "jq: error: ", 11) == 0)
			m += 11;
		n = strcspn(m, "\n");
		snprintf(e->msg, sizeof(e->msg), "%.*s", (int)n, m);
	}
	jv_free(msg);
}

int
conf_jq_compiles(const char *prog, char *err, size_t errlen)
{
	struct cjq_err e = { "" };
	jq_state *jq;
	int ok;

	if ((jq = jq_init()) == NULL) {
		snprintf(err, errlen, "out of memory");
		return 0;
	}
	jq_set_error_cb(jq, cjq_error_cb, &e);
	ok = jq_compile(jq, prog);
	jq_teardown(&jq);
	if (!ok)
		snprintf(err, errlen, "%s", e.msg[0] != '\0' ? e.msg :
		    "a syntax error");
	return ok;
}

void
conf_check_event_type(struct cparse *p, struct cctx *c, yaml_node_t *n,
    const char *path)
{
	/* Not a map, or both keys: reported by the walk. */
	if (n->type != YAML_MAPPING_NODE)
		return;
	if (c->src->event_type.kind == KEY_NONE &&
	    conf_ymap_get(p->doc, n, "header") == NULL &&
	    conf_ymap_get(p->doc, n, "json") == NULL)
		conf_err(p, conf_yline(n),
		    "%s must have one of header, json, got none", path);
}

void
conf_check_filter(struct cparse *p, struct cctx *c, yaml_node_t *n,
    const char *path)
{
	struct sink_conf *sk = c->sink;
	yaml_node_t *types;
	char err[200];
	int i;

	if (n->type != YAML_MAPPING_NODE)
		return;
	types = conf_ymap_get(p->doc, n, "event_types");
	if (types != NULL && conf_ymap_get(p->doc, n, "jq") != NULL) {
		conf_err(p, conf_yline(n),
		    "%s must have one of event_types, jq, got more", path);
		return;
	}
	if (types == NULL && sk->filter_jq == NULL) {
		if (conf_ymap_get(p->doc, n, "jq") == NULL)
			conf_err(p, conf_yline(n),
			    "%s must have one of event_types, jq, got none",
			    path);
		return;
	}
	if (types != NULL) {
		if (types->type == YAML_SEQUENCE_NODE &&
		    sk->nfilter_types == 0)
			conf_err(p, conf_yline(types), "%s.event_types must "
			    "list at least one event type", path);
		for (i = 0; i < sk->nfilter_types; i++)
			if (!cfilter_pattern(sk->filter_types[i]))
				conf_err(p, conf_yline(types), "%s.event_types: "
				    "\"%s\" is no event type: a name, or a "
				    "prefix and one * at its end", path,
				    sk->filter_types[i]);
		return;
	}
	if (!conf_jq_compiles(sk->filter_jq, err, sizeof(err)))
		conf_err(p, conf_yline(conf_ymap_get(p->doc, n, "jq")),
		    "%s.jq does not compile: %s", path, err);
}
