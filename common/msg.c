/* SPDX-License-Identifier: ISC */
/*
 * msg.c: frame building, strict reading, and the socketpair channel.
 *
 * Wire format of a frame: type u16, flags u16, payload length u32, id u64,
 * big-endian, then the payload.  Payload fields: u8/u16/u32/u64 big-endian;
 * str = u32 length, the bytes, one NUL (the NUL is checked on reading, and
 * an embedded NUL is refused); data = u32 length and the bytes.  A frame
 * with MSG_F_FD carries one descriptor, sent with SCM_RIGHTS on the
 * sendmsg() that writes the frame's first byte; the reader queues
 * descriptors in arrival order and hands the oldest to the next frame that
 * has the flag.  Anything that does not fit this (length over
 * MSG_MAX_PAYLOAD, unknown type or flag, a frame with MSG_F_FD and no
 * descriptor, descriptors left over) is EPROTO and fails the channel.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/event.h>

#include "log.h"
#include "msg.h"

#define CHAN_MAX_FDS	16	/* descriptors queued but not yet claimed */
#define CHAN_READ_CHUNK	65536
#define CHAN_IOV	64	/* frames per sendmsg */

struct chan_out {
	struct chan_out	*next;
	unsigned char	*buf;
	size_t		 len;
	size_t		 off;
	int		 fd;	/* sent with byte 0, then closed */
};

struct chan {
	int		 fd;
	struct event	*ev_read;
	struct event	*ev_write;
	chan_msg_cb	 on_msg;
	chan_err_cb	 on_err;
	void		*arg;
	unsigned char	*in;		/* bytes read, not yet framed */
	size_t		 inlen;
	size_t		 incap;
	int		 fds[CHAN_MAX_FDS];	/* passed, not yet claimed */
	int		 nfds;
	struct chan_out	*out_head;
	struct chan_out	*out_tail;
	struct event	*ev_flush;	/* end of the loop turn: write */
	int		 flush_armed;
	int		 failed;
	int		*alive;	/* cleared by chan_free during a callback */
};

static void	msg_grow(struct msg *, size_t);
static void	chan_read_cb(evutil_socket_t, short, void *);
static void	chan_write_cb(evutil_socket_t, short, void *);
static void	chan_flush_cb(evutil_socket_t, short, void *);
static int	chan_write_some(struct chan *);
static void	chan_fail(struct chan *, int);
static int	chan_parse(struct chan *);

static const char *msg_names[MSG_TYPE_MAX] = {
	[MSG_NONE] = "none",
	[MSG_CHILD_HELLO] = "child_hello",
	[MSG_CHILD_RETIRE] = "child_retire",
	[MSG_HOOK_SUBMIT] = "hook_submit",
	[MSG_HOOK_RESULT] = "hook_result",
	[MSG_READY_QUERY] = "ready_query",
	[MSG_READY_RESULT] = "ready_result",
	[MSG_INGEST_EVENT] = "ingest_event",
	[MSG_QUARANTINE_CHECK] = "quarantine_check",
	[MSG_QUARANTINE_VERDICT] = "quarantine_verdict",
	[MSG_DELIVER_JOB] = "deliver_job",
	[MSG_DELIVER_OUTCOME] = "deliver_outcome",
	[MSG_BATCH_JOB] = "batch_job",
	[MSG_BATCH_OUTCOME] = "batch_outcome",
	[MSG_CLAIM_JOB] = "claim_job",
	[MSG_CLAIM_OUTCOME] = "claim_outcome",
	[MSG_DELIVER_NEXT] = "deliver_next",
};

const char *
msg_type_name(unsigned t)
{
	if (t >= MSG_TYPE_MAX || msg_names[t] == NULL)
		return "unknown";
	return msg_names[t];
}

void
msg_init(struct msg *m, uint16_t type, uint64_t id)
{
	memset(m, 0, sizeof(*m));
	m->type = type;
	m->id = id;
	m->fd = -1;
}

void
msg_free(struct msg *m)
{
	free(m->buf);
	if (m->fd != -1)
		close(m->fd);
	m->buf = NULL;
	m->fd = -1;
	m->len = m->cap = m->rpos = 0;
}

void
msg_set_fd(struct msg *m, int fd)
{
	if (m->fd != -1)
		close(m->fd);
	m->fd = fd;
	if (fd == -1)
		m->flags &= ~MSG_F_FD;
	else
		m->flags |= MSG_F_FD;
}

static void
msg_grow(struct msg *m, size_t n)
{
	size_t cap;

	if (m->len + n <= m->cap)
		return;
	cap = m->cap ? m->cap : 256;
	while (cap < m->len + n)
		cap *= 2;
	if ((m->buf = realloc(m->buf, cap)) == NULL)
		fatal("msg_grow");
	m->cap = cap;
}

static void
put_be(unsigned char *p, uint64_t v, int n)
{
	int i;

	for (i = n - 1; i >= 0; i--) {
		p[i] = v & 0xff;
		v >>= 8;
	}
}

static uint64_t
get_be(const unsigned char *p, int n)
{
	uint64_t v = 0;
	int i;

	for (i = 0; i < n; i++)
		v = (v << 8) | p[i];
	return v;
}

static void
msg_add_be(struct msg *m, uint64_t v, int n)
{
	msg_grow(m, n);
	put_be(m->buf + m->len, v, n);
	m->len += n;
}

void
msg_add_u8(struct msg *m, uint8_t v)
{
	msg_add_be(m, v, 1);
}

void
msg_add_u32(struct msg *m, uint32_t v)
{
	msg_add_be(m, v, 4);
}

void
msg_add_u64(struct msg *m, uint64_t v)
{
	msg_add_be(m, v, 8);
}

void
msg_add_str(struct msg *m, const char *s)
{
	size_t n = s != NULL ? strlen(s) : 0;

	msg_add_be(m, n, 4);
	msg_grow(m, n + 1);
	if (n > 0)
		memcpy(m->buf + m->len, s, n);
	m->buf[m->len + n] = '\0';
	m->len += n + 1;
}

void
msg_add_data(struct msg *m, const void *p, size_t n)
{
	msg_add_be(m, n, 4);
	msg_grow(m, n);
	if (n > 0)
		memcpy(m->buf + m->len, p, n);
	m->len += n;
}

static int
msg_get_be(struct msg *m, uint64_t *v, int n)
{
	if (m->err || m->len - m->rpos < (size_t)n) {
		m->err = 1;
		return -1;
	}
	*v = get_be(m->buf + m->rpos, n);
	m->rpos += n;
	return 0;
}

int
msg_get_u8(struct msg *m, uint8_t *v)
{
	uint64_t x;

	if (msg_get_be(m, &x, 1) == -1)
		return -1;
	*v = x;
	return 0;
}

int
msg_get_u32(struct msg *m, uint32_t *v)
{
	uint64_t x;

	if (msg_get_be(m, &x, 4) == -1)
		return -1;
	*v = x;
	return 0;
}

int
msg_get_u64(struct msg *m, uint64_t *v)
{
	return msg_get_be(m, v, 8);
}

int
msg_get_str(struct msg *m, const char **s)
{
	uint64_t n;
	const char *p;

	if (msg_get_be(m, &n, 4) == -1)
		return -1;
	if (m->len - m->rpos < n + 1) {
		m->err = 1;
		return -1;
	}
	p = (const char *)m->buf + m->rpos;
	if (p[n] != '\0' || memchr(p, '\0', n) != NULL) {
		m->err = 1;
		return -1;
	}
	m->rpos += n + 1;
	*s = p;
	return 0;
}

int
msg_get_data(struct msg *m, const void **p, size_t *len)
{
	uint64_t n;

	if (msg_get_be(m, &n, 4) == -1)
		return -1;
	if (m->len - m->rpos < n) {
		m->err = 1;
		return -1;
	}
	*p = m->buf + m->rpos;
	*len = n;
	m->rpos += n;
	return 0;
}

int
msg_end(struct msg *m)
{
	if (m->err || m->rpos != m->len) {
		m->err = 1;
		return -1;
	}
	return 0;
}

void
msg_encode_header(const struct msg *m, unsigned char *p)
{
	put_be(p, m->type, 2);
	put_be(p + 2, m->flags, 2);
	put_be(p + 4, m->len, 4);
	put_be(p + 8, m->id, 8);
}

int
msg_decode_header(const unsigned char *p, struct msg *m)
{
	uint64_t type, flags, len;

	type = get_be(p, 2);
	flags = get_be(p + 2, 2);
	len = get_be(p + 4, 4);
	if (type == MSG_NONE || type >= MSG_TYPE_MAX)
		return -1;
	if (flags & ~(uint64_t)MSG_F_FD)
		return -1;
	if (len > MSG_MAX_PAYLOAD)
		return -1;
	msg_init(m, type, get_be(p + 8, 8));
	m->flags = flags;
	m->len = len;
	return 0;
}

/* --- channel --- */

struct chan *
chan_new(struct event_base *base, int fd, chan_msg_cb on_msg,
    chan_err_cb on_err, void *arg)
{
	struct chan *c;

	if ((c = calloc(1, sizeof(*c))) == NULL)
		fatal("chan_new");
	c->fd = fd;
	c->on_msg = on_msg;
	c->on_err = on_err;
	c->arg = arg;
	if (fcntl(fd, F_SETFL, fcntl(fd, F_GETFL) | O_NONBLOCK) == -1)
		fatal("chan_new: fcntl");
	c->ev_read = event_new(base, fd, EV_READ | EV_PERSIST, chan_read_cb, c);
	c->ev_write = event_new(base, fd, EV_WRITE, chan_write_cb, c);
	c->ev_flush = evtimer_new(base, chan_flush_cb, c);
	if (c->ev_read == NULL || c->ev_write == NULL || c->ev_flush == NULL)
		fatalx("chan_new: event_new");
	event_add(c->ev_read, NULL);
	return c;
}

int
chan_fd(const struct chan *c)
{
	return c->fd;
}

void
chan_free(struct chan *c)
{
	struct chan_out *o;
	int i;

	if (c == NULL)
		return;
	if (c->alive != NULL)
		*c->alive = 0;
	event_free(c->ev_read);
	event_free(c->ev_write);
	event_free(c->ev_flush);
	while ((o = c->out_head) != NULL) {
		c->out_head = o->next;
		if (o->fd != -1)
			close(o->fd);
		free(o->buf);
		free(o);
	}
	for (i = 0; i < c->nfds; i++)
		close(c->fds[i]);
	free(c->in);
	close(c->fd);
	free(c);
}

int
chan_send(struct chan *c, struct msg *m)
{
	struct chan_out *o;

	if (c->failed) {
		msg_set_fd(m, -1);
		return -1;
	}
	/* Not calloc, which skips glibc's per-thread cache (nor malloc and
	 * memset, which gcc turns into calloc): a frame is sent per job and
	 * per hook. */
	if ((o = malloc(sizeof(*o))) == NULL ||
	    (o->buf = malloc(MSG_HDR_LEN + m->len)) == NULL)
		fatal("chan_send");
	msg_encode_header(m, o->buf);
	if (m->len > 0)
		memcpy(o->buf + MSG_HDR_LEN, m->buf, m->len);
	o->next = NULL;
	o->len = MSG_HDR_LEN + m->len;
	o->off = 0;
	o->fd = m->fd;
	m->fd = -1;	/* the channel owns it now */
	if (c->out_tail != NULL)
		c->out_tail->next = o;
	else
		c->out_head = o;
	c->out_tail = o;
	/* Written at the end of the loop turn, all frames of the turn in one
	 * sendmsg: a master answering a batch of hooks makes one system call
	 * per edge, not one per hook. */
	if (!c->flush_armed) {
		struct timeval tv = { 0, 0 };

		evtimer_add(c->ev_flush, &tv);
		c->flush_armed = 1;
	}
	return 0;
}

void
chan_poll(struct chan *c)
{
	if (!c->failed)
		chan_read_cb(c->fd, EV_READ, c);
}

void
chan_flush_now(struct chan *c)
{
	if (!c->flush_armed)
		return;
	evtimer_del(c->ev_flush);
	chan_flush_cb(c->fd, EV_TIMEOUT, c);
}

static void
chan_flush_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct chan *c = arg;

	c->flush_armed = 0;
	if (c->failed)
		return;
	if (chan_write_some(c) == -1) {
		chan_fail(c, errno);
		return;
	}
	if (c->out_head != NULL)
		event_add(c->ev_write, NULL);
}

/*
 * Write what the socket takes; 0, or -1 with errno on a hard error.  Up to
 * CHAN_IOV frames go in one sendmsg; a frame with a descriptor is always
 * the first of its sendmsg, so the descriptor travels with its first byte.
 */
static int
chan_write_some(struct chan *c)
{
	struct chan_out *o;
	struct msghdr mh;
	struct iovec iov[CHAN_IOV];
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cm;
	ssize_t n;
	size_t left;
	int niov;

	while ((o = c->out_head) != NULL) {
		memset(&mh, 0, sizeof(mh));
		niov = 0;
		for (; o != NULL && niov < CHAN_IOV; o = o->next) {
			if (niov > 0 && o->fd != -1)
				break;
			iov[niov].iov_base = o->buf + o->off;
			iov[niov].iov_len = o->len - o->off;
			niov++;
		}
		o = c->out_head;
		mh.msg_iov = iov;
		mh.msg_iovlen = niov;
		if (o->off == 0 && o->fd != -1) {
			struct cmsghdr *ch;

			memset(&cm, 0, sizeof(cm));
			mh.msg_control = cm.buf;
			mh.msg_controllen = sizeof(cm.buf);
			ch = CMSG_FIRSTHDR(&mh);
			ch->cmsg_level = SOL_SOCKET;
			ch->cmsg_type = SCM_RIGHTS;
			ch->cmsg_len = CMSG_LEN(sizeof(int));
			memcpy(CMSG_DATA(ch), &o->fd, sizeof(int));
		}
		n = sendmsg(c->fd, &mh, MSG_NOSIGNAL);
		if (n == -1) {
			if (errno == EAGAIN || errno == EINTR)
				return 0;
			return -1;
		}
		if (o->off == 0 && o->fd != -1) {
			close(o->fd);
			o->fd = -1;
		}
		/* Consume n bytes over the frames sent. */
		for (left = n; left > 0 && (o = c->out_head) != NULL; ) {
			size_t take = o->len - o->off;

			if (take > left)
				take = left;
			o->off += take;
			left -= take;
			if (o->off < o->len)
				break;
			c->out_head = o->next;
			if (c->out_head == NULL)
				c->out_tail = NULL;
			free(o->buf);
			free(o);
		}
		if (c->out_head != NULL && c->out_head->off > 0)
			return 0;	/* the socket is full */
	}
	return 0;
}

static void
chan_write_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct chan *c = arg;

	if (chan_write_some(c) == -1) {
		chan_fail(c, errno);
		return;
	}
	if (c->out_head != NULL)
		event_add(c->ev_write, NULL);
}

void
chan_flush_blocking(struct chan *c)
{
	int fl = fcntl(c->fd, F_GETFL);

	fcntl(c->fd, F_SETFL, fl & ~O_NONBLOCK);
	(void)chan_write_some(c);
	fcntl(c->fd, F_SETFL, fl);
}

static void
chan_fail(struct chan *c, int err)
{
	if (c->failed)
		return;
	c->failed = 1;
	event_del(c->ev_read);
	event_del(c->ev_write);
	c->on_err(c, err, c->arg);
}

static void
chan_read_cb(evutil_socket_t fd, short ev, void *arg)
{
	struct chan *c = arg;
	struct msghdr mh;
	struct iovec iov;
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int) * 8)];
	} cm;
	struct cmsghdr *ch;
	ssize_t n;

	if (c->incap - c->inlen < CHAN_READ_CHUNK) {
		c->incap = c->inlen + CHAN_READ_CHUNK;
		if ((c->in = realloc(c->in, c->incap)) == NULL)
			fatal("chan_read");
	}
	memset(&mh, 0, sizeof(mh));
	iov.iov_base = c->in + c->inlen;
	iov.iov_len = c->incap - c->inlen;
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	n = recvmsg(c->fd, &mh, MSG_CMSG_CLOEXEC);
	if (n == -1) {
		if (errno == EAGAIN || errno == EINTR)
			return;
		chan_fail(c, errno);
		return;
	}
	for (ch = CMSG_FIRSTHDR(&mh); ch != NULL; ch = CMSG_NXTHDR(&mh, ch)) {
		int *fds, nf, i;

		if (ch->cmsg_level != SOL_SOCKET || ch->cmsg_type != SCM_RIGHTS)
			continue;
		fds = (int *)CMSG_DATA(ch);
		nf = (ch->cmsg_len - CMSG_LEN(0)) / sizeof(int);
		for (i = 0; i < nf; i++) {
			if (c->nfds == CHAN_MAX_FDS) {
				close(fds[i]);
				chan_fail(c, EPROTO);
				return;
			}
			c->fds[c->nfds++] = fds[i];
		}
	}
	if (mh.msg_flags & MSG_CTRUNC) {
		chan_fail(c, EPROTO);
		return;
	}
	if (n == 0) {
		chan_fail(c, c->inlen == 0 ? 0 : EPROTO);
		return;
	}
	c->inlen += n;
	if (chan_parse(c) == -1)
		chan_fail(c, EPROTO);
}

/* Deliver every complete frame; -1 on a bad one.  The callback may free
 * the channel: c->alive tells. */
static int
chan_parse(struct chan *c)
{
	size_t off = 0;
	int alive = 1;

	c->alive = &alive;
	while (c->inlen - off >= MSG_HDR_LEN) {
		struct msg m;

		if (msg_decode_header(c->in + off, &m) == -1) {
			c->alive = NULL;
			return -1;
		}
		if (c->inlen - off - MSG_HDR_LEN < m.len)
			break;
		if (m.flags & MSG_F_FD) {
			if (c->nfds == 0) {
				c->alive = NULL;
				return -1;
			}
			m.fd = c->fds[0];
			memmove(c->fds, c->fds + 1, --c->nfds * sizeof(int));
		}
		m.buf = c->in + off + MSG_HDR_LEN;	/* borrowed */
		m.cap = 0;
		off += MSG_HDR_LEN + m.len;
		c->on_msg(c, &m, c->arg);
		if (!alive)
			return 0;
		if (m.fd != -1)
			close(m.fd);	/* not claimed by the handler */
		if (c->failed) {
			c->alive = NULL;
			return 0;
		}
	}
	c->alive = NULL;
	if (off > 0) {
		memmove(c->in, c->in + off, c->inlen - off);
		c->inlen -= off;
	}
	return 0;
}
