/* SPDX-License-Identifier: ISC */
/*
 * jqeval.c: the processes that run an edge's jq filters (filter.h), so
 * that the kernel can stop an evaluation libjq cannot: libjq 1.6 has no
 * step limit, no interrupt and no allocator hook, so a program that loops
 * or allocates without bound is stopped only by killing its process.
 *
 * Three processes:
 *
 *  - the edge, which sends an evaluation (a sequence number, a program's
 *    number and the body) on its socket to the current evaluator and
 *    waits for the answer (the sequence number and the result), at most
 *    wall_ms by the clock: one round trip on a socketpair;
 *  - the supervisor ("ankusa-jq"), forked by the edge before the edge
 *    enters its sandbox (which allows no new process after it), with the
 *    compiled programs in its memory.  It keeps only its channel to the
 *    edge (no master channel, no listener, stdio on /dev/null) and its
 *    own /proc/self/status (read at each fork), enters a sandbox of its
 *    own (SANDBOX_JQ: no file, no socket but socketpair, may fork) and,
 *    for each byte the edge sends it, makes a socketpair, forks an
 *    evaluator with one end and passes the edge the other
 *    (SCM_RIGHTS).  It reaps nothing (SIGCHLD ignored) and says nothing:
 *    it exits when the edge's channel closes, or with the edge
 *    (PR_SET_PDEATHSIG);
 *  - an evaluator ("ankusa-jqeval"), one at a time, which holds only its
 *    socket, sets its memory budget (RLIMIT_DATA: what the supervisor
 *    held when it forked it plus mem_bytes; hard equal to soft), loads a
 *    second seccomp filter (SANDBOX_JQ_EVAL: reading, writing, memory,
 *    its timer, exiting) and serves evaluations until its socket closes.
 *    Each evaluation arms ITIMER_PROF with cpu_ms (user and system time)
 *    before the body is parsed and disarms it after the answer is
 *    written and the values freed.
 *
 * An evaluation past its CPU time gets SIGPROF, whose handler writes the
 * budget's answer and exits.  One past its memory gets a null from
 * malloc, with errno ENOMEM; libjq 1.6 then aborts (its jv_nomem_handler
 * is not called) or, where it does not check, faults: the handler of
 * SIGABRT, SIGSEGV and SIGBUS (on its own stack) writes the memory
 * answer when errno is ENOMEM, an error's otherwise, and exits.  The
 * handlers write with write(2) and end with _exit(2), nothing else.  An
 * evaluator that dies otherwise (a builtin's system call its filter
 * refuses: SIGSYS) closes its socket without an answer: an error.
 * Either way the edge closes its end and asks the supervisor for a fresh
 * evaluator at its next evaluation; the edge itself is never retired for
 * a filter (only when its supervisor is gone: jqeval_broken).
 *
 * The wall clock is the safety net of a machine so loaded that CPU time
 * accrues slowly: past wall_ms the edge gives the evaluator up (closes
 * its end; the evaluator dies at its CPU budget at the latest, or at its
 * answer's write, SIGPIPE) and counts the budget.  A socket belongs to
 * one evaluator, and an answer must carry the sequence number of the
 * evaluation it answers (else the evaluator is given up and the
 * evaluation is an error), so a late answer is never taken for another.
 *
 * Why not the master's supervisor spawning evaluators: the evaluator
 * would need its programs compiled again and the edge a channel to it
 * set up by the master, and the master would relay each death; the fork
 * from a supervisor the edge made needs neither, and keeps the edge's
 * sandbox as it was (no fork).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <jq.h>

#include "clock.h"
#include "fdpass.h"
#include "filter.h"
#include "jqeval.h"
#include "proc.h"
#include "sandbox.h"

/* In the supervisor, its channel to the edge; in an evaluator, its
 * socket.  Descriptors above it are closed. */
#define JQEVAL_FD		3
/* How long the edge waits for the supervisor to pass an evaluator. */
#define JQEVAL_SPAWN_MS		5000

enum io_dir {
	IO_READ,
	IO_SEND,
	IO_WRITE,
};

struct jqeval_req {
	uint64_t	seq;
	uint32_t	prog;
	uint32_t	len;	/* the body's bytes that follow */
};

struct jqeval_ans {
	uint64_t	seq;
	uint32_t	result;	/* enum filter_result */
	uint32_t	pad;
};

/* The edge's side. */
static int		 js_ctl = -1;	/* to the supervisor */
static int		 js_fd = -1;	/* to the current evaluator */
static int		 js_broken;
static uint64_t		 js_seq;

/* An evaluator's side (its copy of the supervisor's memory). */
static jq_state *const	*ev_progs;
static int		 ev_nprogs;
static uint64_t		 ev_cpu_ms;
static volatile uint64_t ev_seq;	/* the evaluation in hand */

static void	sup_main(pid_t, uint64_t) __attribute__((noreturn));
static void	sup_fds(int);
static uint64_t	sup_data_bytes(int);
static void	ev_main(uint64_t, int) __attribute__((noreturn));
static void	ev_answer_exit(enum filter_result) __attribute__((noreturn));
static void	ev_cpu_cb(int);
static void	ev_crash_cb(int);
static void	ev_timer(uint64_t);
static int	io_full(int, void *, size_t, enum io_dir);
static enum filter_result ev_eval(jq_state *, const void *, size_t);
static int	js_spawn(uint64_t);
static void	js_drop(void);
static void	js_check(void);

int
jqeval_start(jq_state *const *progs, int nprogs, uint64_t cpu_ms,
    uint64_t mem_bytes)
{
	int sv[2];
	pid_t pid;

	jqeval_stop();
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) == -1)
		return -1;
	ev_progs = progs;
	ev_nprogs = nprogs;
	ev_cpu_ms = cpu_ms;
	switch ((pid = fork())) {
	case -1:
		close(sv[0]);
		close(sv[1]);
		return -1;
	case 0:
		close(sv[0]);
		sup_fds(sv[1]);
		sup_main(getppid(), mem_bytes);
	}
	close(sv[1]);
	js_ctl = sv[0];
	js_broken = 0;
	return 0;
}

void
jqeval_stop(void)
{
	js_drop();
	if (js_ctl != -1)
		close(js_ctl);
	js_ctl = -1;
}

int
jqeval_broken(void)
{
	return js_broken;
}

/* Read (IO_READ) or write len bytes in full (0), or -1 (an error, or the
 * end: errno 0).  The edge sends (IO_SEND: no SIGPIPE); an evaluator
 * writes (IO_WRITE: its filter has no sendto, and SIGPIPE ends it). */
static int
io_full(int fd, void *buf, size_t len, enum io_dir dir)
{
	char *p = buf;
	ssize_t n;

	while (len > 0) {
		n = dir == IO_SEND ? send(fd, p, len, MSG_NOSIGNAL) :
		    dir == IO_WRITE ? write(fd, p, len) : read(fd, p, len);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			if (n == 0)
				errno = 0;
			return -1;
		}
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* The supervisor's descriptors: stdio on /dev/null (libjq's stderr
 * builtin writes there, and nothing of ours is said by this process),
 * its channel at JQEVAL_FD, nothing else (not the master's channel, not
 * the listeners). */
static void
sup_fds(int ctl)
{
	int fd;

	if ((fd = open("/dev/null", O_RDWR)) != -1) {
		(void)dup2(fd, STDIN_FILENO);
		(void)dup2(fd, STDOUT_FILENO);
		(void)dup2(fd, STDERR_FILENO);
		if (fd > STDERR_FILENO && fd != ctl)
			close(fd);
	}
	if (ctl != JQEVAL_FD) {
		if (dup2(ctl, JQEVAL_FD) == -1)
			_exit(1);
		close(ctl);
	}
	if (close_range(JQEVAL_FD + 1, ~0U, 0) == -1)
		_exit(1);
}

/* The private data the process holds (VmData of its /proc/self/status,
 * open on fd), which RLIMIT_DATA counts; 0 when it does not say. */
static uint64_t
sup_data_bytes(int fd)
{
	unsigned long long kb;
	char buf[4096], *p;
	ssize_t n;

	if (fd == -1 || (n = pread(fd, buf, sizeof(buf) - 1, 0)) <= 0)
		return 0;
	buf[n] = '\0';
	if ((p = strstr(buf, "\nVmData:")) == NULL ||
	    sscanf(p + 1, "VmData: %llu kB", &kb) != 1)
		return 0;
	return (uint64_t)kb * 1024;
}

static void
sup_main(pid_t edge, uint64_t mem_bytes)
{
	uint64_t limit = 0;
	unsigned int have;
	ssize_t n;
	char b;
	int sv[2], st;

	/* Gone with the edge. */
	if (prctl(PR_SET_PDEATHSIG, SIGKILL) == -1 || getppid() != edge)
		_exit(0);
	(void)prctl(PR_SET_NAME, "ankusa-jq");
	signal(SIGCHLD, SIG_IGN);	/* the evaluators need no reaping */
	signal(SIGPIPE, SIG_IGN);
	/* Opened now, read at each fork: what an evaluator starts with is
	 * what this process holds then (its sandbox's set-up included). */
	st = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
	have = sandbox_enter(SANDBOX_JQ, NULL);
	for (;;) {
		n = read(JQEVAL_FD, &b, 1);
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0)
			_exit(0);
		/* No descriptor in the answer: the edge takes it as a
		 * failure, and asks again at its next evaluation. */
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1) {
			(void)fdpass_send(JQEVAL_FD, &b, 1, NULL, 0);
			continue;
		}
		if (mem_bytes > 0 && (limit = sup_data_bytes(st)) > 0)
			limit += mem_bytes;
		switch (fork()) {
		case -1:
			(void)fdpass_send(JQEVAL_FD, &b, 1, NULL, 0);
			break;
		case 0:
			if (dup2(sv[1], JQEVAL_FD) == -1)
				_exit(1);
			close(sv[0]);
			close(sv[1]);
			if (st != -1)
				close(st);
			ev_main(limit, (have & SANDBOX_F_SECCOMP) != 0);
		default:
			(void)fdpass_send(JQEVAL_FD, &b, 1, &sv[0], 1);
		}
		close(sv[0]);
		close(sv[1]);
	}
}

/* An evaluator: limit is its RLIMIT_DATA (0: none known); seccomp, load
 * SANDBOX_JQ_EVAL over the supervisor's filter. */
static void
ev_main(uint64_t limit, int seccomp)
{
	static char altstack[64 * 1024];
	struct jqeval_req rq;
	struct jqeval_ans a;
	struct sigaction sa;
	struct rlimit rl;
	stack_t ss;
	enum filter_result r;
	char *body;

	(void)prctl(PR_SET_PDEATHSIG, SIGKILL);
	(void)prctl(PR_SET_NAME, "ankusa-jqeval");
	/* An edge that gave us up closes our socket: the answer's write
	 * ends us. */
	signal(SIGPIPE, SIG_DFL);
	signal(SIGCHLD, SIG_DFL);
	if (limit > 0) {
		rl.rlim_cur = rl.rlim_max = limit;
		if (setrlimit(RLIMIT_DATA, &rl) == -1)
			_exit(1);
	}
	memset(&ss, 0, sizeof(ss));
	ss.ss_sp = altstack;
	ss.ss_size = sizeof(altstack);
	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = ev_cpu_cb;
	sigfillset(&sa.sa_mask);
	if (sigaction(SIGPROF, &sa, NULL) == -1 ||
	    sigaltstack(&ss, NULL) == -1)
		_exit(1);
	sa.sa_handler = ev_crash_cb;
	sa.sa_flags = SA_ONSTACK;
	if (sigaction(SIGABRT, &sa, NULL) == -1 ||
	    sigaction(SIGSEGV, &sa, NULL) == -1 ||
	    sigaction(SIGBUS, &sa, NULL) == -1)
		_exit(1);
	if (seccomp && sandbox_filter_load(SANDBOX_JQ_EVAL) == -1)
		_exit(1);
	for (;;) {
		if (io_full(JQEVAL_FD, &rq, sizeof(rq), IO_READ) == -1)
			_exit(0);
		ev_seq = rq.seq;
		body = NULL;
		if (rq.len > 0 && (body = malloc(rq.len)) == NULL)
			ev_answer_exit(FILTER_MEMORY);
		if (rq.len > 0 &&
		    io_full(JQEVAL_FD, body, rq.len, IO_READ) == -1)
			_exit(0);
		ev_timer(ev_cpu_ms);
		r = rq.prog < (uint32_t)ev_nprogs ?
		    ev_eval(ev_progs[rq.prog], body, rq.len) : FILTER_ERROR;
		free(body);
		ev_timer(0);
		memset(&a, 0, sizeof(a));
		a.seq = rq.seq;
		a.result = r;
		if (io_full(JQEVAL_FD, &a, sizeof(a), IO_WRITE) == -1)
			_exit(0);
	}
}

/* Arm ITIMER_PROF for ms of CPU time (0: disarm). */
static void
ev_timer(uint64_t ms)
{
	struct itimerval it;

	memset(&it, 0, sizeof(it));
	it.it_value.tv_sec = ms / 1000;
	it.it_value.tv_usec = (suseconds_t)(ms % 1000) * 1000;
	if (setitimer(ITIMER_PROF, &it, NULL) == -1)
		_exit(1);
}

/* The answer of the evaluation in hand, then the end (async-signal-safe:
 * a write and _exit). */
static void
ev_answer_exit(enum filter_result r)
{
	struct jqeval_ans a;
	ssize_t n;

	memset(&a, 0, sizeof(a));
	a.seq = ev_seq;
	a.result = r;
	n = write(JQEVAL_FD, &a, sizeof(a));
	_exit(n == sizeof(a) ? 0 : 1);
}

static void
ev_cpu_cb(int sig)
{
	ev_answer_exit(FILTER_BUDGET);
}

/* errno is the interrupted code's: ENOMEM when a malloc failed last. */
static void
ev_crash_cb(int sig)
{
	ev_answer_exit(errno == ENOMEM ? FILTER_MEMORY : FILTER_ERROR);
}

/* One evaluation: the first output decides (filter.h).  The input is the
 * body by jq's parser, null when it is empty or not JSON. */
static enum filter_result
ev_eval(jq_state *jq, const void *body, size_t len)
{
	enum filter_result r;
	jv in, out;

	in = len == 0 || len > INT_MAX ? jv_null() :
	    jv_parse_sized(body, (int)len);
	if (!jv_is_valid(in)) {
		jv_free(in);
		in = jv_null();
	}
	jq_start(jq, in, 0);
	out = jq_next(jq);
	switch (jv_get_kind(out)) {
	case JV_KIND_TRUE:
		r = FILTER_MATCH;
		break;
	case JV_KIND_FALSE:
	case JV_KIND_NULL:
		r = FILTER_NO;
		break;
	case JV_KIND_INVALID:
		/* No output at all, or an error (which has a message), or
		 * halt / halt_error: an error too. */
		r = jv_invalid_has_msg(jv_copy(out)) || jq_halted(jq) ?
		    FILTER_ERROR : FILTER_NO;
		break;
	default:
		r = FILTER_ERROR;
	}
	jv_free(out);
	/* The rest of the run's values, before the timer is disarmed. */
	jq_start(jq, jv_null(), 0);
	return r;
}

/* The edge asks the supervisor for an evaluator: 0, or -1 (broken set
 * when the supervisor is gone). */
static int
js_spawn(uint64_t wall_ms)
{
	struct pollfd pfd;
	struct timeval tv;
	ssize_t n;
	char b = 'e';
	int fds[PROC_MAX_FDS], nfds = 0;

	if (js_ctl == -1 || send(js_ctl, &b, 1, MSG_NOSIGNAL) != 1)
		goto gone;
	pfd.fd = js_ctl;
	pfd.events = POLLIN;
	while ((n = poll(&pfd, 1, JQEVAL_SPAWN_MS)) == -1 && errno == EINTR)
		;
	if (n <= 0 || fdpass_recv(js_ctl, &b, 1, fds, &nfds) <= 0)
		goto gone;
	if (nfds != 1) {
		while (nfds > 0)
			close(fds[--nfds]);
		return -1;	/* its socketpair or fork failed: next time */
	}
	/* A send never waits past the wall clock either. */
	tv.tv_sec = (time_t)(wall_ms / 1000);
	tv.tv_usec = (suseconds_t)(wall_ms % 1000) * 1000;
	(void)setsockopt(fds[0], SOL_SOCKET, SO_SNDTIMEO, &tv, sizeof(tv));
	js_fd = fds[0];
	return 0;
 gone:
	js_broken = 1;
	return -1;
}

/* Give the current evaluator up: it dies of it, at the latest at its
 * CPU budget. */
static void
js_drop(void)
{
	if (js_fd != -1)
		close(js_fd);
	js_fd = -1;
}

/* An evaluator died without a word: if its supervisor is gone too (it
 * dies with it), no other can be had (js_broken now, not at the next
 * evaluation). */
static void
js_check(void)
{
	struct pollfd pfd;

	pfd.fd = js_ctl;
	pfd.events = POLLIN;
	if (js_ctl != -1 && poll(&pfd, 1, 0) == 1 &&
	    (pfd.revents & (POLLHUP | POLLERR)))
		js_broken = 1;
}

enum filter_result
jqeval_run(uint32_t prog, const void *body, size_t len, uint64_t wall_ms)
{
	struct jqeval_req rq;
	struct jqeval_ans a;
	struct pollfd pfd;
	uint64_t deadline, now;
	int n;

	if (js_broken || (js_fd == -1 && js_spawn(wall_ms) == -1))
		return FILTER_ERROR;
	deadline = time_mono_ms() + wall_ms;
	memset(&rq, 0, sizeof(rq));
	rq.seq = ++js_seq;
	rq.prog = prog;
	/* http.max_body_bytes is at most a GiB. */
	rq.len = len > UINT32_MAX ? 0 : (uint32_t)len;
	/* A send that fails (the evaluator died: at its memory budget,
	 * before it took the body) may still have an answer to read. */
	if (io_full(js_fd, &rq, sizeof(rq), IO_SEND) == 0 && rq.len > 0)
		(void)io_full(js_fd, (void *)body, rq.len, IO_SEND);
	pfd.fd = js_fd;
	pfd.events = POLLIN;
	for (;;) {
		now = time_mono_ms();
		n = now >= deadline ? 0 : poll(&pfd, 1,
		    (int)(deadline - now > INT_MAX ? INT_MAX : deadline - now));
		if (n == -1 && errno == EINTR)
			continue;
		if (n <= 0) {
			js_drop();
			return FILTER_BUDGET;
		}
		break;
	}
	if (io_full(js_fd, &a, sizeof(a), IO_READ) == -1 || a.seq != rq.seq ||
	    a.result > FILTER_MEMORY) {
		js_drop();
		js_check();
		return FILTER_ERROR;
	}
	/* Past a budget the evaluator has exited. */
	if (a.result == FILTER_BUDGET || a.result == FILTER_MEMORY)
		js_drop();
	return (enum filter_result)a.result;
}
