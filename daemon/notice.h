/* SPDX-License-Identifier: ISC */
/*
 * notice.h: the operational notices (notifications.sinks; ankusad(8),
 * DELIVERIES): sink.disabled, sink.enabled, breaker.opened,
 * breaker.closed, dlq.threshold, replay.finished,
 * replication.master_changed, each as Standard Webhooks' JSON
 * {"type", "timestamp" (RFC 3339), "data"}, made by the master (no
 * provider's bytes in it) and stored as a hook of the reserved source
 * CONF_NOTIFY_SOURCE under the reserved tenant CONF_NOTIFY_TENANT, so
 * that it is delivered as any hook is (durable once committed, at least
 * once, signed by a sink's secret) in a tenant of its own, which user
 * traffic cannot starve.
 *
 * It calls nothing above it: the post (the writer's writer_notice) is the
 * function main gives notice_on_post.
 */
#ifndef ANKUSA_NOTICE_H
#define ANKUSA_NOTICE_H

#include <stddef.h>
#include <stdint.h>

#include <jansson.h>

/* Before the first notice: fn(tenant, source, body, len) queues one (0),
 * or refuses it (-1: logged, the notice is lost). */
void	notice_on_post(int (*fn)(const char *, const char *, const void *,
	    size_t));
/*
 * Post a notice of type with data (taken: freed here).  Nothing when no
 * notifications.sinks are configured.  A notice about a notification
 * sink itself (data's "source" is CONF_NOTIFY_SOURCE) is logged only,
 * never posted: a failing notification sink cannot feed itself notices.
 */
void	notice_emit(const char *type, json_t *data);
/* data of a notice about a sink key. */
json_t	*notice_sink_data(const char *tenant, const char *source,
	    uint32_t sink, uint8_t module, const char *reason);

#endif
