/* SPDX-License-Identifier: ISC */
/*
 * submit.c: the hook submission's frame, both halves; see submit.h.
 *
 * Fatal: nothing.
 */
#include "config.h"

#include <stdint.h>
#include <string.h>

#include "msg.h"
#include "proc.h"
#include "submit.h"
#include "trace.h"
#include "utf8.h"

void
submit_tail_encode(struct msg *m, const struct submit_tail *t)
{
	uint32_t i;

	msg_add_str(m, t->dedupe);
	msg_add_u32(m, t->nheaders);
	for (i = 0; i < t->nheaders; i++) {
		msg_add_str(m, t->headers[i].name);
		msg_add_str(m, t->headers[i].value);
	}
	msg_add_u32(m, t->nlanes);
	for (i = 0; i < t->nlanes; i++) {
		msg_add_u32(m, t->lanes[i].sink);
		msg_add_u64(m, t->lanes[i].hash);
	}
	msg_add_str(m, t->evtype);
	msg_add_u64(m, t->match);
	msg_add_u64(m, t->filter_errors);
	msg_add_u64(m, t->filter_budget);
}

int
submit_tail_decode(struct msg *m, struct submit_tail *t)
{
	uint32_t i;

	if (msg_get_str(m, &t->dedupe) == -1 ||
	    msg_get_u32(m, &t->nheaders) == -1 ||
	    t->nheaders > SUBMIT_MAX_HEADERS)
		return -1;
	for (i = 0; i < t->nheaders; i++)
		if (msg_get_str(m, &t->headers[i].name) == -1 ||
		    msg_get_str(m, &t->headers[i].value) == -1)
			return -1;
	if (msg_get_u32(m, &t->nlanes) == -1 || t->nlanes > SUBMIT_MAX_LANES)
		return -1;
	for (i = 0; i < t->nlanes; i++)
		if (msg_get_u32(m, &t->lanes[i].sink) == -1 ||
		    msg_get_u64(m, &t->lanes[i].hash) == -1)
			return -1;
	if (msg_get_str(m, &t->evtype) == -1 ||
	    strlen(t->evtype) > SUBMIT_EVTYPE_MAX ||
	    !utf8_text(t->evtype, strlen(t->evtype)) ||
	    msg_get_u64(m, &t->match) == -1 ||
	    msg_get_u64(m, &t->filter_errors) == -1 ||
	    msg_get_u64(m, &t->filter_budget) == -1)
		return -1;
	return 0;
}

int
submit_encode(struct msg *m, uint64_t id, const struct submit *s)
{
	msg_init(m, MSG_HOOK_SUBMIT, id);
	msg_add_str(m, s->tenant);
	msg_add_str(m, s->source);
	msg_add_str(m, s->method);
	msg_add_str(m, s->path);
	msg_add_str(m, s->content_type);
	msg_add_u64(m, s->received_at);
	msg_add_u8(m, s->verdict);
	msg_add_str(m, s->verify_reason);
	msg_add_u8(m, s->verification);
	msg_add_data(m, s->trace, sizeof(s->trace));
	msg_add_str(m, s->tracestate);
	submit_tail_encode(m, &s->tail);
	msg_add_data(m, s->sha256, sizeof(s->sha256));
	if (proc_add_body(m, "hook", s->body, s->body_len) == -1) {
		msg_free(m);
		return -1;
	}
	return 0;
}

int
submit_decode(struct msg *m, struct submit *s)
{
	const void *sha, *data, *trace;
	size_t shalen, datalen, tracelen;

	if (msg_get_str(m, &s->tenant) == -1 ||
	    msg_get_str(m, &s->source) == -1 ||
	    msg_get_str(m, &s->method) == -1 ||
	    msg_get_str(m, &s->path) == -1 ||
	    msg_get_str(m, &s->content_type) == -1 ||
	    msg_get_u64(m, &s->received_at) == -1 ||
	    msg_get_u8(m, &s->verdict) == -1 || s->verdict >= VERDICT_MAX ||
	    msg_get_str(m, &s->verify_reason) == -1 ||
	    msg_get_u8(m, &s->verification) == -1 ||
	    s->verification >= VERIFICATION_MAX ||
	    msg_get_data(m, &trace, &tracelen) == -1 ||
	    tracelen != sizeof(s->trace) ||
	    msg_get_str(m, &s->tracestate) == -1 ||
	    (s->tracestate[0] != '\0' &&
	    !trace_state_valid(s->tracestate, strlen(s->tracestate))) ||
	    submit_tail_decode(m, &s->tail) == -1 ||
	    msg_get_data(m, &sha, &shalen) == -1 ||
	    shalen != sizeof(s->sha256) ||
	    msg_get_u64(m, &s->body_len) == -1)
		return -1;
	memcpy(s->sha256, sha, sizeof(s->sha256));
	memcpy(s->trace, trace, sizeof(s->trace));
	s->body = NULL;
	if (m->fd == -1) {
		if (msg_get_data(m, &data, &datalen) == -1 ||
		    datalen != s->body_len)
			return -1;
		s->body = data;
	}
	return msg_end(m);
}
