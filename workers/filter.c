/* SPDX-License-Identifier: ISC */
/*
 * filter.c: the sinks' filters; see filter.h.
 *
 * The jq programs are compiled here, in the edge, before its sandbox;
 * the evaluator processes (jqeval.c) forked then hold them and run them
 * by number, one evaluation a round trip.
 */
#include "config.h"

#include <stdlib.h>
#include <string.h>

#include <jq.h>

#include "conf.h"
#include "filter.h"
#include "jqeval.h"
#include "log.h"

/* The compiled programs of the loaded configuration by number, and each
 * sink's number by source index and sink index (-1: no jq filter). */
static const struct conf	 *fl_conf;
static jq_state			**fl_progs;
static int			  fl_nprogs;
static int			**fl_num;
static int			  fl_nnum;	/* its sources */

static void	 jq_quiet_cb(void *, jv);
static jq_state	*jq_make(const char *);
static void	 fl_add(jq_state *);

int
filter_types_match(char *const *types, int ntypes, const char *evtype)
{
	size_t n;
	int i;

	if (evtype == NULL || evtype[0] == '\0')
		return 0;
	for (i = 0; i < ntypes; i++) {
		n = strlen(types[i]);
		if (n > 0 && types[i][n - 1] == '*') {
			if (strncmp(types[i], evtype, n - 1) == 0)
				return 1;
		} else if (strcmp(types[i], evtype) == 0)
			return 1;
	}
	return 0;
}

/* libjq prints its errors to stderr unless told otherwise: ours are
 * values (jq_next's invalid), counted by the caller. */
static void
jq_quiet_cb(void *arg, jv msg)
{
	jv_free(msg);
}

static jq_state *
jq_make(const char *prog)
{
	jq_state *jq;

	if ((jq = jq_init()) == NULL)
		fatalx("filter: jq_init");
	jq_set_error_cb(jq, jq_quiet_cb, NULL);
	if (!jq_compile(jq, prog)) {
		jq_teardown(&jq);
		return NULL;
	}
	return jq;
}

static void
fl_add(jq_state *jq)
{
	jq_state **p;

	if ((p = reallocarray(fl_progs, fl_nprogs + 1, sizeof(*p))) == NULL)
		fatal("filter_load");
	fl_progs = p;
	fl_progs[fl_nprogs++] = jq;
}

int
filter_load(const struct conf *cf)
{
	const struct source_conf *src;
	jq_state *jq;
	int i, k;

	filter_unload();
	fl_conf = cf;
	if ((fl_num = calloc(cf->nsources + 1, sizeof(*fl_num))) == NULL)
		fatal("filter_load");
	fl_nnum = cf->nsources;
	for (i = 0; i < cf->nsources; i++) {
		src = &cf->sources[i];
		if ((fl_num[i] = calloc(src->nsinks + 1,
		    sizeof(**fl_num))) == NULL)
			fatal("filter_load");
		for (k = 0; k < src->nsinks; k++) {
			fl_num[i][k] = -1;
			if (src->sinks[k].filter_jq == NULL)
				continue;
			if ((jq = jq_make(src->sinks[k].filter_jq)) == NULL) {
				log_warnx("sources.%s.sinks[%d].filter.jq: "
				    "does not compile", src->id, k);
				return -1;
			}
			fl_num[i][k] = fl_nprogs;
			fl_add(jq);
		}
	}
	if (fl_nprogs > 0 && jqeval_start(fl_progs, fl_nprogs,
	    cf->http.jq_timeout_ms, cf->http.jq_max_memory_bytes) == -1) {
		log_warn("filter: the jq evaluators cannot start");
		return -1;
	}
	return 0;
}

void
filter_unload(void)
{
	int i;

	jqeval_stop();
	for (i = 0; i < fl_nprogs; i++)
		jq_teardown(&fl_progs[i]);
	free(fl_progs);
	fl_progs = NULL;
	fl_nprogs = 0;
	for (i = 0; i < fl_nnum; i++)
		free(fl_num[i]);
	free(fl_num);
	fl_num = NULL;
	fl_nnum = 0;
	fl_conf = NULL;
}

int
filter_needs_body(const struct source_conf *src)
{
	int k;

	for (k = 0; k < src->nsinks; k++)
		if (src->sinks[k].filter_jq != NULL)
			return 1;
	return 0;
}

void
filter_sinks(const struct source_conf *src, const char *evtype,
    const void *body, size_t len, struct filter_out *out)
{
	const struct sink_conf *sk;
	enum filter_result r;
	int *num = NULL, k;

	memset(out, 0, sizeof(*out));
	if (fl_conf != NULL && src >= fl_conf->sources &&
	    src < fl_conf->sources + fl_conf->nsources)
		num = fl_num[src - fl_conf->sources];
	for (k = 0; k < src->nsinks && k < 64; k++) {
		sk = &src->sinks[k];
		if (sk->filter_jq != NULL) {
			if (num == NULL || num[k] < 0)
				fatalx("filter: sources.%s.sinks[%d]: not "
				    "loaded", src->id, k);
			r = jqeval_run((uint32_t)num[k], body, len,
			    FILTER_WALL(fl_conf->http.jq_timeout_ms));
		} else if (sk->filter_types != NULL)
			r = filter_types_match(sk->filter_types,
			    sk->nfilter_types, evtype) ? FILTER_MATCH :
			    FILTER_NO;
		else
			r = FILTER_MATCH;
		out->result[k] = (uint8_t)r;
		if (r != FILTER_NO)
			out->match |= (uint64_t)1 << k;
		if (r == FILTER_ERROR)
			out->errors |= (uint64_t)1 << k;
		if (r == FILTER_BUDGET || r == FILTER_MEMORY)
			out->budget |= (uint64_t)1 << k;
	}
}

int
filter_stuck(void)
{
	return jqeval_broken();
}

enum filter_result
filter_jq_once(const char *prog, const void *body, size_t len,
    uint64_t budget_ms, uint64_t mem_bytes)
{
	jq_state *jq;

	filter_unload();
	if ((jq = jq_make(prog)) == NULL)
		return FILTER_ERROR;
	fl_add(jq);
	if (jqeval_start(fl_progs, fl_nprogs, budget_ms, mem_bytes) == -1)
		fatal("filter_jq_once: the evaluator");
	return jqeval_run(0, body, len, FILTER_WALL(budget_ms));
}
