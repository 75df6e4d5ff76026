/* SPDX-License-Identifier: ISC */
/*
 * dispatch_policy.c: the scheduler's pure arithmetic and names, apart from
 * its state (dispatch.c): the sink modules a row binds to, their names,
 * which of them batch, and the retry delays.  No I/O, no clock.
 */
#include "config.h"

#include <stdint.h>

#include "dispatch.h"

const char *
dispatch_module_name(uint8_t m)
{
	switch (m) {
	case MODULE_HTTP:
		return "http";
	case MODULE_SQS:
		return "sqs";
	case MODULE_PUBSUB:
		return "google_pubsub";
	case MODULE_LOG:
		return "log";
	case MODULE_RABBITMQ:
		return "rabbitmq";
	case MODULE_NATS:
		return "nats";
	case MODULE_REDIS:
		return "redis";
	case MODULE_KAFKA:
		return "kafka";
	}
	return "unknown";
}

int
dispatch_module_batches(uint8_t m)
{
	int t;

	/* The sink type of the module, and the config's answer for it. */
	for (t = SINK_HTTP; t <= SINK_KAFKA; t++)
		if (dispatch_sink_module((enum sink_type)t) == m)
			return conf_sink_batches((enum sink_type)t);
	return 0;
}

uint8_t
dispatch_sink_module(enum sink_type t)
{
	switch (t) {
	case SINK_HTTP:
		return MODULE_HTTP;
	case SINK_SQS:
		return MODULE_SQS;
	case SINK_PUBSUB:
		return MODULE_PUBSUB;
	case SINK_LOG:
		return MODULE_LOG;
	case SINK_RABBITMQ:
		return MODULE_RABBITMQ;
	case SINK_NATS:
		return MODULE_NATS;
	case SINK_REDIS:
		return MODULE_REDIS;
	case SINK_KAFKA:
		return MODULE_KAFKA;
	}
	return 0;
}

/*
 * delay(n) = min(max_ms, base_ms * 2^(n-1)) for the retry after the n-th
 * attempt; the shift stops once past max_ms, so it cannot overflow.
 */
uint64_t
dispatch_backoff(uint64_t base_ms, uint64_t max_ms, uint32_t attempts)
{
	uint64_t delay = base_ms;
	uint32_t i;

	for (i = 1; i < attempts && delay < max_ms; i++)
		delay *= 2;
	return delay < max_ms ? delay : max_ms;
}

/* schedule[n - 1] after the n-th attempt, the last step repeating. */
uint64_t
dispatch_retry_delay(const struct retry_policy *p, uint32_t attempts)
{
	uint32_t i;

	if (p->nschedule <= 0)
		return dispatch_backoff(p->base_ms, p->max_ms, attempts);
	i = attempts > 0 ? attempts - 1 : 0;
	if (i >= (uint32_t)p->nschedule)
		i = p->nschedule - 1;
	return p->schedule[i];
}
