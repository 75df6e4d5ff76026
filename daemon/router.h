/* SPDX-License-Identifier: ISC */
/*
 * router.h: where a child's frame goes in the master.
 *
 * The supervisor moves frames and keeps the children alive; it does not
 * know who handles what.  main (ankusad.c) fills the table once, at its
 * start: a route for each type of frame that a child may send after its
 * hello, with the kind of child that may send it and its handler, which
 * reads the frame and answers -1 when it is malformed.  A frame of a type
 * the table lacks, from another kind of child, or that its handler finds
 * malformed makes the supervisor recycle the child.
 *
 * Two frames the master answers from its own state, the edges'
 * ready_query and ingest_event, have their handlers here, for the table.
 */
#ifndef ANKUSA_ROUTER_H
#define ANKUSA_ROUTER_H

#include <stddef.h>
#include <stdint.h>

#include "supervisor.h"

struct msg;

struct router_route {
	int		 type;		/* enum msg_type */
	enum child_kind	 kind;		/* who may send it; KIND_MAX: any */
	/* The frame from child serial: 0, or -1 when it is malformed. */
	int		(*handle)(uint32_t serial, struct msg *);
	const char	*why;		/* the child is recycled for it then,
					 * or when another kind sent it */
};

/* The table, once, before the first child is spawned.  Fatal on a type
 * out of range or given twice. */
void		 router_init(const struct router_route *, size_t n);
/* A frame from child serial, of kind: NULL, or why the child is to be
 * recycled. */
const char	*router_msg(uint32_t serial, enum child_kind, struct msg *);

/* MSG_READY_QUERY: may the edge's /ready say yes (not draining, this
 * site writable, the store working)?  Answered MSG_READY_RESULT. */
int		 router_ready_query(uint32_t serial, struct msg *);
/* MSG_INGEST_EVENT: an edge's refused requests, counted. */
int		 router_ingest_event(uint32_t serial, struct msg *);

#endif
