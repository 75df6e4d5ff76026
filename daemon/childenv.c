/* SPDX-License-Identifier: ISC */
/*
 * childenv.c: the environment of each kind of child; see childenv.h.
 *
 * A child is executed with none of the master's environment but the
 * variables it reads, with the master's values:
 *
 *  - every kind: LD_LIBRARY_PATH (where the dynamic linker finds the
 *    libraries it was built with, as it found the master's), TZ (the
 *    times of its syslog lines: sandbox.c loads the zone before its
 *    ruleset), JOURNAL_STREAM (whether its stderr is the journal, log.c),
 *    OPENSSL_CONF (the configuration OpenSSL loads at its start,
 *    sandbox.c); in a build with the sanitizers, their options;
 *  - the variables its part of the configuration reads: the ${VAR} of its
 *    text and the ANKUSA_* overrides of its keys, found by parsing that
 *    text as the child will (conf.h, env_read);
 *  - an edge: ANKUSA_NODE_ROLE, which the master sets (repl.c) for the
 *    edges' /health;
 *  - a deliver process: the proxy variables (libcurl's, and http1.c's,
 *    which leaves a proxied URL to libcurl); AWS_* (every variable so
 *    named) when an sqs sink without access_key_id or the claim store in
 *    S3 without credentials or region takes them from there;
 *    GCE_METADATA_HOST when a google_pubsub sink authenticates with the
 *    metadata server;
 *  - a claim gateway whose claim store is in S3: the proxy variables, and
 *    AWS_* as above.
 *
 * So no child sees the service manager's variables (NOTIFY_SOCKET,
 * WATCHDOG_*, LISTEN_*), the descriptors the master hands its next image
 * (ANKUSA_INHERIT_FDS, reexec.c), nor a secret in a variable its part
 * does not name: a provider's secret reaches the edges alone, AWS
 * credentials only the processes that sign with them.  No PATH, HOME or
 * locale either: no child executes a program, reads a home directory or
 * sets a locale; no LD_PRELOAD (a library preloaded into the master, a
 * test's clock or shim, is the master's).  The master's own environment
 * is untouched: it needs all of it for its own parse at a reload and
 * hands it whole to its next image (reexec.c).
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "childenv.h"
#include "conf.h"
#include "log.h"

extern char	**environ;

/* An environment being made: n strings in v, NULL after them. */
struct envb {
	char	**v;
	size_t	  n;
};

static const char *const childenv_all[] = {
	"LD_LIBRARY_PATH", "TZ", "JOURNAL_STREAM", "OPENSSL_CONF",
#ifdef ANKUSA_SANITIZERS
	"ASAN_OPTIONS", "LSAN_OPTIONS", "UBSAN_OPTIONS",
#endif
	NULL
};
static const char *const childenv_proxies[] = {
	"http_proxy", "HTTP_PROXY", "https_proxy", "HTTPS_PROXY",
	"all_proxy", "ALL_PROXY", "no_proxy", "NO_PROXY", NULL
};

static void	envb_add(struct envb *, const char *, size_t);
static void	envb_list(struct envb *, const char *const *);
static void	envb_prefix(struct envb *, const char *);
static int	childenv_s3(const struct conf *);
static int	childenv_s3_aws(const struct conf *);
static void	childenv_sinks(const struct conf *, int *, int *);

/* The variable named by the len bytes at name, when the master has it. */
static void
envb_add(struct envb *b, const char *name, size_t len)
{
	char **e, **n;
	size_t i;

	for (e = environ; *e != NULL; e++)
		if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
			break;
	if (*e == NULL)
		return;
	for (i = 0; i < b->n; i++)
		if (strncmp(b->v[i], name, len) == 0 && b->v[i][len] == '=')
			return;
	if ((n = reallocarray(b->v, b->n + 2, sizeof(*n))) == NULL ||
	    (n[b->n] = strdup(*e)) == NULL)
		fatal("childenv");
	b->v = n;
	n[++b->n] = NULL;
}

static void
envb_list(struct envb *b, const char *const *names)
{
	for (; *names != NULL; names++)
		envb_add(b, *names, strlen(*names));
}

/* Every variable of the master's whose name begins with prefix. */
static void
envb_prefix(struct envb *b, const char *prefix)
{
	size_t pl = strlen(prefix);
	char **e, *eq;

	for (e = environ; *e != NULL; e++)
		if (strncmp(*e, prefix, pl) == 0 &&
		    (eq = strchr(*e, '=')) != NULL)
			envb_add(b, *e, eq - *e);
}

/* The claim store is in S3. */
static int
childenv_s3(const struct conf *cf)
{
	const char *t = cf->claim_check.store_type;

	return cf->claim_check.enabled && t != NULL && strcmp(t, "s3") == 0;
}

/* A claim store in S3 that takes credentials or region from AWS_*
 * (workers/blob_s3.c). */
static int
childenv_s3_aws(const struct conf *cf)
{
	return childenv_s3(cf) &&
	    (cf->claim_check.s3_access_key_id == NULL ||
	    *cf->claim_check.s3_access_key_id == '\0' ||
	    cf->claim_check.s3_region == NULL ||
	    *cf->claim_check.s3_region == '\0');
}

/* Whether a sink reads AWS_* (an sqs sink without access_key_id,
 * workers/sink_sqs.c) or GCE_METADATA_HOST (a google_pubsub sink that
 * authenticates with the metadata server, workers/sink_pubsub.c). */
static void
childenv_sinks(const struct conf *cf, int *aws, int *gce)
{
	const struct sink_conf *k;
	int i, j;

	*aws = *gce = 0;
	for (i = 0; i < cf->nsources; i++) {
		for (j = 0; j < cf->sources[i].nsinks; j++) {
			k = &cf->sources[i].sinks[j];
			if (k->type == SINK_SQS &&
			    (k->u.sqs.access_key_id == NULL ||
			    *k->u.sqs.access_key_id == '\0'))
				*aws = 1;
			if (k->type == SINK_PUBSUB &&
			    (k->u.pubsub.auth == NULL ||
			    strcmp(k->u.pubsub.auth, "metadata") == 0))
				*gce = 1;
		}
	}
}

char **
childenv_make(enum conf_role role, const char *text, size_t len,
    const struct conf *cf, char *err, size_t errlen)
{
	struct conf_errors errs = { NULL, 0 };
	struct envb b = { NULL, 0 };
	struct conf *part;
	char **n;
	int aws, gce;

	if ((part = conf_parse_role(text, len, role, &errs)) == NULL) {
		snprintf(err, errlen, "its part of the config: %s",
		    errs.n > 0 ? errs.msgs[0] : "refused");
		conf_errors_free(&errs);
		return NULL;
	}
	if ((b.v = calloc(1, sizeof(*b.v))) == NULL)
		fatal("childenv");
	envb_list(&b, childenv_all);
	for (n = part->env_read; *n != NULL; n++)
		envb_add(&b, *n, strlen(*n));
	switch (role) {
	case CONF_ROLE_EDGE:
		envb_add(&b, "ANKUSA_NODE_ROLE", strlen("ANKUSA_NODE_ROLE"));
		break;
	case CONF_ROLE_DELIVER:
		envb_list(&b, childenv_proxies);
		childenv_sinks(cf, &aws, &gce);
		if (aws || childenv_s3_aws(part))
			envb_prefix(&b, "AWS_");
		if (gce)
			envb_add(&b, "GCE_METADATA_HOST",
			    strlen("GCE_METADATA_HOST"));
		break;
	case CONF_ROLE_GATEWAY:
		if (childenv_s3(part))
			envb_list(&b, childenv_proxies);
		if (childenv_s3_aws(part))
			envb_prefix(&b, "AWS_");
		break;
	default:
		break;
	}
	conf_free(part);
	return b.v;
}

void
childenv_free(char **env)
{
	char **e;

	if (env == NULL)
		return;
	for (e = env; *e != NULL; e++)
		free(*e);
	free(env);
}

int
childenv_same(char *const *a, char *const *b)
{
	for (; *a != NULL && *b != NULL; a++, b++)
		if (strcmp(*a, *b) != 0)
			return 0;
	return *a == NULL && *b == NULL;
}
