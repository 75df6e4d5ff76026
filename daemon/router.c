/* SPDX-License-Identifier: ISC */
/*
 * router.c: the routes of the children's frames, as main gave them, and
 * the two frames the master answers from its own state; see router.h.
 *
 * Fatal: a table that main got wrong (a type out of range, or twice).
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "conf.h"
#include "log.h"
#include "master.h"
#include "metrics.h"
#include "msg.h"
#include "repl.h"
#include "router.h"
#include "supervisor.h"

/* By type; a NULL handler: no route. */
static struct router_route	 routes[MSG_TYPE_MAX];

void
router_init(const struct router_route *table, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++) {
		if (table[i].type <= MSG_NONE ||
		    table[i].type >= MSG_TYPE_MAX ||
		    routes[table[i].type].handle != NULL)
			fatalx("router: route %zu (%s): type out of range or "
			    "given twice", i, table[i].why);
		routes[table[i].type] = table[i];
	}
}

const char *
router_msg(uint32_t serial, enum child_kind kind, struct msg *m)
{
	const struct router_route *r;

	if (m->type >= MSG_TYPE_MAX || routes[m->type].handle == NULL)
		return "unexpected message";
	r = &routes[m->type];
	if ((r->kind != KIND_MAX && r->kind != kind) ||
	    r->handle(serial, m) == -1)
		return r->why;
	return NULL;
}

int
router_ready_query(uint32_t serial, struct msg *m)
{
	struct msg r;
	const char *reason = "";
	int ready = 1;

	if (msg_end(m) == -1)
		return -1;
	if (env->draining) {
		ready = 0;
		reason = "draining";
	} else if (!repl_writable()) {
		ready = 0;
		reason = "not_master";
	} else if (!env->store_ok) {
		ready = 0;
		reason = "store_unavailable";
	}
	msg_init(&r, MSG_READY_RESULT, m->id);
	msg_add_u8(&r, ready);
	msg_add_str(&r, reason);
	supervisor_send(serial, &r);
	msg_free(&r);
	return 0;
}

int
router_ingest_event(uint32_t serial, struct msg *m)
{
	const char *reason, *source, *scheme;
	uint32_t n;

	if (msg_get_str(m, &reason) == -1 || msg_get_str(m, &source) == -1 ||
	    msg_get_str(m, &scheme) == -1 || msg_get_u32(m, &n) == -1 ||
	    n == 0 || msg_end(m) == -1)
		return -1;
	/* Labelled by source only when the config knows it. */
	if (strcmp(reason, "handshake") == 0) {
		if (conf_source(env->conf, source) != NULL)
			metrics_handshake(source, n);
		return 0;
	}
	metrics_refused(reason, n);
	if (scheme[0] != '\0' && conf_source(env->conf, source) != NULL)
		metrics_verify_failure(source, scheme);
	return 0;
}
