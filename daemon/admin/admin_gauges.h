/* SPDX-License-Identifier: ISC */
/*
 * admin_gauges.h: the gauges of GET /metrics and ankusactl stats, read without
 * a walk of any table (metrics.h holds their families).
 *
 * A new gauge is a line in metrics.c's table plus either a metrics_set
 * call where its value changes, or a reader in admin_gauges.c's readers[] (one
 * line) that sets it from counters the master keeps; gauges_update runs
 * the readers before each scrape.
 */
#ifndef ANKUSA_GAUGES_H
#define ANKUSA_GAUGES_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

#include "dispatch/dispatch.h"
#include "store/store.h"

/* The per-tenant pass (ankusa_tenant_pending): its first run now, then
 * on its own timer in bounded steps until env->draining. */
void	gauges_init(void);
/* Set every gauge that a reader keeps. */
void	gauges_update(void);
/* The same but the ankusa_sink_* gauges, whose cost grows with the sink
 * keys: the node's own figures. */
void	gauges_update_core(void);
/* From the settles: the lane head of rowkey is waiting out a retry or a
 * park (blocked 1), or has ended (0). */
void	gauges_lane_head(const unsigned char rowkey[STORE_ROWKEY_LEN],
	    int blocked);
/* A settle, as pipeline_on_settle tells it: a lane head rescheduled
 * (a retry or a park: it keeps state HEAD) blocks its lane, a settle that
 * ends a row unblocks it (gauges_lane_head). */
void	gauges_settled(enum settle_kind, enum settle_written,
	    const unsigned char *, const struct store_row *, void *);
/* The blocked lane heads kept (ankusa_dispatch_lanes_blocked). */
size_t	gauges_lanes_blocked(void);
/* The children's sandboxes, for ankusactl status: {"edge": {"seccomp":
 * true, ...}, ...}, a kind with no running child left out. */
json_t	*gauges_sandbox_json(void);

#endif
