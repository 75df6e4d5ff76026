/* SPDX-License-Identifier: ISC */
/*
 * msg.h: frames between the master and its children.
 *
 * A frame is a fixed 16-byte header (type u16, flags u16, payload length
 * u32, request or job id u64, all big-endian) and a payload built field by
 * field with msg_add_* and read back strictly with msg_get_* and msg_end,
 * which fails on leftover or missing bytes.  No struct is sent raw.  A frame
 * may carry one file descriptor (MSG_F_FD), sent with SCM_RIGHTS together
 * with the frame's first byte: bodies above MSG_INLINE_MAX travel so.
 *
 * struct chan is one end of a socketpair driven by libevent: it reassembles
 * frames, collects passed descriptors and queues output.  A peer that sends
 * a malformed frame makes the channel fail (the error callback runs); what
 * to do then is the owner's business (the master recycles the child).
 */
#ifndef ANKUSA_MSG_H
#define ANKUSA_MSG_H

#include <stddef.h>
#include <stdint.h>

struct event_base;

#define MSG_PROTO_VERSION	11
#define MSG_HDR_LEN		16
#define MSG_MAX_PAYLOAD		(4U * 1024 * 1024)	/* bodies go by fd */
#define MSG_INLINE_MAX		(4U * 1024)		/* larger bodies: memfd */
#define MSG_F_FD		0x0001

/* The one enum of message types.  Append only; bump MSG_PROTO_VERSION when
 * a payload changes shape. */
enum msg_type {
	MSG_NONE = 0,
	MSG_CHILD_HELLO,	/* child->master: u32 proto, str kind, u32 gen, u32 pid */
	MSG_CHILD_RETIRE,	/* master->child: stop accepting, finish, exit */
	MSG_HOOK_SUBMIT,	/* edge->master: one verified hook
				 * (common/submit.h) */
	MSG_HOOK_RESULT,	/* master->edge: u8 hook_result, str id, u32 retry_after_s */
	MSG_READY_QUERY,	/* edge->master: may /ready say yes? */
	MSG_READY_RESULT,	/* master->edge: u8 ready, str reason */
	MSG_INGEST_EVENT,	/* edge->master: refused requests, for metrics:
				 * str reason, str source ("" if none),
				 * str scheme ("" unless a verify failure),
				 * u32 count (>= 1) of such refusals; reason
				 * "handshake": providers' handshakes the
				 * edge answered, source and scheme set */
	MSG_QUARANTINE_CHECK,	/* master->edge: re-verify a held hook */
	MSG_QUARANTINE_VERDICT,	/* edge->master: its verdict: u8 pass, str
				 * reason, and when it passed the tail of
				 * common/submit.h */
	MSG_DELIVER_JOB,	/* master->deliver: one attempt (common/job.h);
				 * the id is the job id */
	MSG_DELIVER_OUTCOME,	/* deliver->master: its outcome, same id */
	MSG_BATCH_JOB,		/* master->deliver: attempts of one sink
				 * (common/job.h); the id is the batch id */
	MSG_BATCH_OUTCOME,	/* deliver->master: one outcome per entry */
	MSG_CLAIM_JOB,		/* master->deliver: check bodies in as one
				 * claim pack (common/job.h); id: job id */
	MSG_CLAIM_OUTCOME,	/* deliver->master: ok or not, the URNs */
	MSG_DELIVER_NEXT,	/* master->deliver: the attempt to start when
				 * the one in hand ends, if common/deck.h
				 * says so; payload of MSG_DELIVER_JOB */
	MSG_TYPE_MAX
};

/* What verification made of a submitted hook (MSG_HOOK_SUBMIT). */
enum hook_verdict {
	VERDICT_OK = 0,		/* verified, or verify none */
	VERDICT_FLAGGED,	/* failed, on_verify_failure accept_flag */
	VERDICT_QUARANTINE,	/* failed, on_verify_failure quarantine: the
				 * headers are all of them, for release */
	VERDICT_MAX
};

/* The verification a hook's deliveries state (x-ankusa-verification):
 * the edge's result at ingest, stored with the hook so that a config
 * changed later does not change what its deliveries say. */
enum hook_verification {
	VERIFICATION_OK = 0,	/* verified */
	VERIFICATION_FAILED,	/* failed, held in the quarantine pen (a
				 * release passed the check again: ok) */
	VERIFICATION_FLAGGED,	/* failed, on_verify_failure accept_flag */
	VERIFICATION_SKIPPED,	/* verify none */
	VERIFICATION_MAX
};

/* What the master says of a submitted hook; the edge maps it to HTTP. */
enum hook_result {
	HOOK_ACCEPTED = 0,	/* 201, committed and synced */
	HOOK_DUPLICATE,		/* 201 duplicate: true, original id */
	HOOK_OVERLOAD,		/* 503 overload, Retry-After */
	HOOK_STORE_UNAVAILABLE,	/* 503 store_unavailable, Retry-After */
	HOOK_DRAINING,		/* 503 draining, Retry-After */
	HOOK_RATE_LIMITED,	/* 429 rate_limited, Retry-After */
	HOOK_QUARANTINED,	/* 202 quarantined */
	HOOK_QUARANTINE_LIMITED,/* 429 quarantine_rate_limited */
	HOOK_QUARANTINE_FULL,	/* 503 quarantine_full */
	HOOK_UNKNOWN_SOURCE,	/* 404: the source vanished in a reload */
	HOOK_NOT_MASTER,	/* 503 not_master, Retry-After; the str of
				 * MSG_HOOK_RESULT is the master's host:port
				 * ("" if none is known), not an id */
	HOOK_FILTERED,		/* 200 filtered: no sink wants it, not
				 * stored; the id it was given */
	HOOK_RESULT_MAX
};

struct msg {
	uint16_t	 type;
	uint16_t	 flags;
	uint64_t	 id;
	unsigned char	*buf;		/* payload */
	size_t		 len;		/* payload bytes */
	size_t		 cap;
	size_t		 rpos;		/* read position for msg_get_* */
	int		 fd;		/* passed descriptor or -1 */
	int		 err;		/* a get ran past the end, or bad data */
};

const char	*msg_type_name(unsigned);

void	msg_init(struct msg *, uint16_t type, uint64_t id);
void	msg_free(struct msg *);
void	msg_set_fd(struct msg *, int);	/* the frame takes ownership */

void	msg_add_u8(struct msg *, uint8_t);
void	msg_add_u32(struct msg *, uint32_t);
void	msg_add_u64(struct msg *, uint64_t);
void	msg_add_str(struct msg *, const char *);	/* NULL sends "" */
void	msg_add_data(struct msg *, const void *, size_t);

/* Each returns 0, or -1 and sets m->err.  Strings and data point into the
 * frame and live as long as it; strings are NUL-terminated and contain no
 * NUL. */
int	msg_get_u8(struct msg *, uint8_t *);
int	msg_get_u32(struct msg *, uint32_t *);
int	msg_get_u64(struct msg *, uint64_t *);
int	msg_get_str(struct msg *, const char **);
int	msg_get_data(struct msg *, const void **, size_t *);
int	msg_end(struct msg *);		/* 0 only if all read and no error */

/* Frame codec, exposed for tests.  msg_encode_header writes MSG_HDR_LEN
 * bytes.  msg_decode_header returns 0 and fills type/flags/len/id, or -1
 * for a header that cannot be valid (length over MSG_MAX_PAYLOAD, type out
 * of range, unknown flags). */
void	msg_encode_header(const struct msg *, unsigned char *);
int	msg_decode_header(const unsigned char *, struct msg *);

struct chan;
/* A received frame's payload is borrowed from the channel: valid during the
 * callback only, never msg_free()d by the handler.  A handler that keeps
 * the passed descriptor sets m->fd = -1; otherwise it is closed after the
 * callback.  The handler may chan_free() the channel. */
typedef void (*chan_msg_cb)(struct chan *, struct msg *, void *);
/* err is 0 on a clean EOF, else an errno or EPROTO for a bad frame. */
typedef void (*chan_err_cb)(struct chan *, int err, void *);

struct chan	*chan_new(struct event_base *, int fd, chan_msg_cb, chan_err_cb,
		    void *);
/* Queue a frame; the message's fd (if any) passes to the channel, and the
 * payload is copied, so the caller still frees m. */
int		 chan_send(struct chan *, struct msg *);
int		 chan_fd(const struct chan *);
void		 chan_free(struct chan *);		/* closes the fd */
/* Blocking write of everything queued (at exit). */
void		 chan_flush_blocking(struct chan *);
/* Now instead of from the loop: read what the socket holds and hand over
 * its frames, as the read event would (the handler may free the channel,
 * as there); write the frames queued during this loop turn. */
void		 chan_poll(struct chan *);
void		 chan_flush_now(struct chan *);

#endif
