/* SPDX-License-Identifier: ISC */
/*
 * check_sandbox.c: unit tests of the children's seccomp filters
 * (common/sandbox.c, sandbox_filter_load).
 *
 * Each case forks; the child sets no_new_privs, loads the filter of one
 * kind and makes one system call.  An allowed call returns and the child
 * exits 0; a forbidden one kills it with SIGSYS; one the filter refuses
 * with an errno makes the child exit EXIT_ERRNO + errno.  The table lists,
 * per kind, what it must be able to do and what it must not.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <check.h>

#include "sandbox.h"

#define TIMEOUT	10

#ifdef HAVE_SECCOMP
enum call {
	CALL_GETPID,
	CALL_CLOCK,
	CALL_MEMFD,
	CALL_SOCKETPAIR,
	CALL_OPEN,
	CALL_SOCKET,
	CALL_CONNECT,
	CALL_THREAD,
	CALL_FORK,
	CALL_EXECVE,
	CALL_PTRACE,
	CALL_SETUID,
	CALL_KILL_SELF,		/* kill(getpid(), 0) */
	CALL_KILL_PARENT,	/* kill(getppid(), 0) */
	CALL_KILL_GROUP,	/* kill(0, 0): the process group */
	CALL_TGKILL_SELF,	/* tgkill(getpid(), gettid(), 0) */
	CALL_TGKILL_PARENT,	/* tgkill(getppid(), getppid(), 0) */
	CALL_PRLIMIT_0,		/* prlimit(0, RLIMIT_NOFILE) read */
	CALL_PRLIMIT_SELF,
	CALL_PRLIMIT_PARENT,
	CALL_PRLIMIT_1,		/* prlimit(1, ...): below our pid */
	CALL_IOCTL_FIONREAD,
	CALL_IOCTL_TIOCSTI,	/* a request no child makes */
	CALL_SETSOCKOPT_LISTEN,	/* on PROC_FD_LISTEN */
	CALL_SETSOCKOPT_OTHER,	/* on descriptor 9 */
	CALL_SHUTDOWN_LISTEN,
	CALL_SHUTDOWN_OTHER,
	CALL_PRCTL_NAME,	/* prctl(PR_SET_NAME): a thread's name */
	CALL_PRCTL_OTHER,	/* prctl(PR_GET_NAME) */
};

static const char *const call_names[] = {
	"getpid", "clock_gettime", "memfd_create", "socketpair", "open",
	"socket", "connect", "thread", "fork", "execve", "ptrace", "setuid",
	"kill self", "kill parent", "kill group", "tgkill self",
	"tgkill parent", "prlimit 0", "prlimit self", "prlimit parent",
	"prlimit 1", "ioctl FIONREAD", "ioctl TIOCSTI",
	"setsockopt listener", "setsockopt other", "shutdown listener",
	"shutdown other", "prctl PR_SET_NAME", "prctl PR_GET_NAME",
};

/* What a case expects: allowed (exit 0), killed (SIGSYS), or refused with
 * an errno (exit EXIT_ERRNO + errno). */
#define KILLED		0
#define ALLOWED		1
#define EXIT_ERRNO	64
#define REFUSED(e)	(EXIT_ERRNO + (e))

struct filter_case {
	enum sandbox_kind	 kind;
	enum call		 call;
	int			 allowed;
};

static const struct filter_case cases[] = {
	{ SANDBOX_EDGE, CALL_GETPID, 1 },
	{ SANDBOX_EDGE, CALL_CLOCK, 1 },
	{ SANDBOX_EDGE, CALL_MEMFD, 1 },
	{ SANDBOX_EDGE, CALL_SOCKETPAIR, 1 },
	{ SANDBOX_EDGE, CALL_OPEN, 0 },
	{ SANDBOX_EDGE, CALL_SOCKET, 0 },
	{ SANDBOX_EDGE, CALL_CONNECT, 0 },
	{ SANDBOX_EDGE, CALL_THREAD, 1 },
	{ SANDBOX_EDGE, CALL_FORK, 0 },
	{ SANDBOX_EDGE, CALL_EXECVE, 0 },
	{ SANDBOX_EDGE, CALL_PTRACE, 0 },
	{ SANDBOX_EDGE, CALL_SETUID, 0 },
	{ SANDBOX_DELIVER, CALL_GETPID, 1 },
	{ SANDBOX_DELIVER, CALL_MEMFD, 1 },
	{ SANDBOX_DELIVER, CALL_OPEN, 1 },
	{ SANDBOX_DELIVER, CALL_SOCKET, 1 },
	{ SANDBOX_DELIVER, CALL_CONNECT, 1 },
	{ SANDBOX_DELIVER, CALL_THREAD, 1 },
	/* librdkafka's threads name themselves; nothing else of prctl. */
	{ SANDBOX_DELIVER, CALL_PRCTL_NAME, ALLOWED },
	{ SANDBOX_DELIVER, CALL_PRCTL_OTHER, KILLED },
	{ SANDBOX_EDGE, CALL_PRCTL_NAME, KILLED },
	{ SANDBOX_DELIVER, CALL_FORK, 0 },
	{ SANDBOX_DELIVER, CALL_EXECVE, 0 },
	{ SANDBOX_DELIVER, CALL_PTRACE, 0 },
	{ SANDBOX_DELIVER, CALL_SETUID, 0 },
	{ SANDBOX_GATEWAY, CALL_GETPID, 1 },
	{ SANDBOX_GATEWAY, CALL_OPEN, 1 },
	{ SANDBOX_GATEWAY, CALL_CONNECT, 1 },
	{ SANDBOX_GATEWAY, CALL_FORK, 0 },
	{ SANDBOX_GATEWAY, CALL_EXECVE, 0 },
	{ SANDBOX_GATEWAY, CALL_PTRACE, 0 },
	{ SANDBOX_EDGE, CALL_KILL_SELF, ALLOWED },
	{ SANDBOX_EDGE, CALL_KILL_PARENT, REFUSED(EPERM) },
	{ SANDBOX_EDGE, CALL_KILL_GROUP, REFUSED(EPERM) },
	{ SANDBOX_EDGE, CALL_TGKILL_SELF, ALLOWED },
	{ SANDBOX_EDGE, CALL_TGKILL_PARENT, REFUSED(EPERM) },
	{ SANDBOX_EDGE, CALL_PRLIMIT_0, ALLOWED },
	{ SANDBOX_EDGE, CALL_PRLIMIT_SELF, ALLOWED },
	{ SANDBOX_EDGE, CALL_PRLIMIT_PARENT, REFUSED(EPERM) },
	{ SANDBOX_EDGE, CALL_PRLIMIT_1, REFUSED(EPERM) },
	{ SANDBOX_EDGE, CALL_IOCTL_FIONREAD, ALLOWED },
	{ SANDBOX_EDGE, CALL_IOCTL_TIOCSTI, REFUSED(ENOTTY) },
	{ SANDBOX_EDGE, CALL_SETSOCKOPT_LISTEN, REFUSED(EPERM) },
	{ SANDBOX_EDGE, CALL_SETSOCKOPT_OTHER, ALLOWED },
	{ SANDBOX_EDGE, CALL_SHUTDOWN_LISTEN, REFUSED(EPERM) },
	{ SANDBOX_EDGE, CALL_SHUTDOWN_OTHER, ALLOWED },
	{ SANDBOX_DELIVER, CALL_KILL_PARENT, REFUSED(EPERM) },
	{ SANDBOX_DELIVER, CALL_PRLIMIT_PARENT, REFUSED(EPERM) },
	{ SANDBOX_DELIVER, CALL_PRLIMIT_0, ALLOWED },
	{ SANDBOX_DELIVER, CALL_IOCTL_TIOCSTI, REFUSED(ENOTTY) },
	{ SANDBOX_DELIVER, CALL_SETSOCKOPT_LISTEN, ALLOWED },
	{ SANDBOX_GATEWAY, CALL_KILL_PARENT, REFUSED(EPERM) },
	{ SANDBOX_GATEWAY, CALL_TGKILL_PARENT, REFUSED(EPERM) },
	{ SANDBOX_GATEWAY, CALL_PRLIMIT_PARENT, REFUSED(EPERM) },
	/* An edge's jq supervisor forks its evaluators, opens nothing. */
	{ SANDBOX_JQ, CALL_GETPID, ALLOWED },
	{ SANDBOX_JQ, CALL_SOCKETPAIR, ALLOWED },
	{ SANDBOX_JQ, CALL_FORK, ALLOWED },
	{ SANDBOX_JQ, CALL_OPEN, KILLED },
	{ SANDBOX_JQ, CALL_SOCKET, KILLED },
	{ SANDBOX_JQ, CALL_CONNECT, KILLED },
	{ SANDBOX_JQ, CALL_EXECVE, KILLED },
	{ SANDBOX_JQ, CALL_PTRACE, KILLED },
	{ SANDBOX_JQ, CALL_SETUID, KILLED },
	{ SANDBOX_JQ, CALL_KILL_PARENT, REFUSED(EPERM) },
	{ SANDBOX_JQ, CALL_PRLIMIT_PARENT, REFUSED(EPERM) },
	{ SANDBOX_JQ, CALL_IOCTL_TIOCSTI, REFUSED(ENOTTY) },
	/* A jq evaluator: memory, its socket, its timer, abort. */
	{ SANDBOX_JQ_EVAL, CALL_GETPID, ALLOWED },
	{ SANDBOX_JQ_EVAL, CALL_CLOCK, ALLOWED },
	{ SANDBOX_JQ_EVAL, CALL_TGKILL_SELF, ALLOWED },
	{ SANDBOX_JQ_EVAL, CALL_TGKILL_PARENT, KILLED },
	{ SANDBOX_JQ_EVAL, CALL_KILL_PARENT, KILLED },
	{ SANDBOX_JQ_EVAL, CALL_FORK, KILLED },
	{ SANDBOX_JQ_EVAL, CALL_THREAD, KILLED },
	{ SANDBOX_JQ_EVAL, CALL_SOCKETPAIR, KILLED },
	{ SANDBOX_JQ_EVAL, CALL_MEMFD, KILLED },
	{ SANDBOX_JQ_EVAL, CALL_OPEN, KILLED },
	{ SANDBOX_JQ_EVAL, CALL_SOCKET, KILLED },
	{ SANDBOX_JQ_EVAL, CALL_EXECVE, KILLED },
	{ SANDBOX_JQ_EVAL, CALL_PRLIMIT_0, KILLED },
	{ SANDBOX_JQ_EVAL, CALL_IOCTL_FIONREAD, KILLED },
	{ SANDBOX_JQ_EVAL, CALL_SETSOCKOPT_OTHER, KILLED },
};

/* A call that failed: the child exits with its errno. */
static void
check_rc(long rc)
{
	if (rc == -1)
		_exit(EXIT_ERRNO + (errno & 63));
}

static void *
thread_main(void *arg)
{
	return arg;
}

/* Make the call; returns only if the filter let it through. */
static void
do_call(enum call c)
{
	struct sockaddr_in sin;
	struct timespec ts;
	pthread_t t;
	char *const argv[] = { "/bin/true", NULL }, name[16];
	struct rlimit rl;
	int sv[2], fd, n;

	switch (c) {
	case CALL_GETPID:
		(void)getpid();
		break;
	case CALL_CLOCK:
		(void)clock_gettime(CLOCK_MONOTONIC, &ts);
		break;
	case CALL_MEMFD:
		if ((fd = memfd_create("t", MFD_CLOEXEC)) == -1)
			_exit(3);
		break;
	case CALL_SOCKETPAIR:
		if (socketpair(AF_UNIX, SOCK_STREAM, 0, sv) == -1)
			_exit(3);
		break;
	case CALL_OPEN:
		if ((fd = open("/dev/null", O_RDONLY)) == -1)
			_exit(3);
		break;
	case CALL_SOCKET:
		if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1)
			_exit(3);
		break;
	case CALL_CONNECT:
		/* A socket made before the filter: only connect is tried.
		 * Port 9 on loopback: refused, which is an answer. */
		fd = 9;
		memset(&sin, 0, sizeof(sin));
		sin.sin_family = AF_INET;
		sin.sin_port = htons(9);
		sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
		(void)connect(fd, (struct sockaddr *)&sin, sizeof(sin));
		break;
	case CALL_THREAD:
		if (pthread_create(&t, NULL, thread_main, NULL) != 0)
			_exit(3);
		pthread_join(t, NULL);
		break;
	case CALL_FORK:
		(void)syscall(SYS_clone, SIGCHLD, 0, 0, 0, 0);
		break;
	case CALL_EXECVE:
		execv(argv[0], argv);
		break;
	case CALL_PTRACE:
		(void)syscall(SYS_ptrace, 0, 0, 0, 0);
		break;
	case CALL_SETUID:
		(void)syscall(SYS_setuid, 0);
		break;
	case CALL_KILL_SELF:
		check_rc(kill(getpid(), 0));
		break;
	case CALL_KILL_PARENT:
		check_rc(kill(getppid(), 0));
		break;
	case CALL_KILL_GROUP:
		check_rc(kill(0, 0));
		break;
	case CALL_TGKILL_SELF:
		check_rc(syscall(SYS_tgkill, getpid(), gettid(), 0));
		break;
	case CALL_TGKILL_PARENT:
		check_rc(syscall(SYS_tgkill, getppid(), getppid(), 0));
		break;
	case CALL_PRLIMIT_0:
		check_rc(prlimit(0, RLIMIT_NOFILE, NULL, &rl));
		break;
	case CALL_PRLIMIT_SELF:
		check_rc(prlimit(getpid(), RLIMIT_NOFILE, NULL, &rl));
		break;
	case CALL_PRLIMIT_PARENT:
		check_rc(prlimit(getppid(), RLIMIT_NOFILE, NULL, &rl));
		break;
	case CALL_PRLIMIT_1:
		check_rc(prlimit(1, RLIMIT_NOFILE, NULL, &rl));
		break;
	case CALL_IOCTL_FIONREAD:
		check_rc(ioctl(9, FIONREAD, &n));
		break;
	case CALL_IOCTL_TIOCSTI:
		check_rc(ioctl(0, TIOCSTI, "x"));
		break;
	case CALL_SETSOCKOPT_LISTEN:
	case CALL_SETSOCKOPT_OTHER:
		n = 1;
		check_rc(setsockopt(c == CALL_SETSOCKOPT_LISTEN ? 4 : 9,
		    SOL_SOCKET, SO_KEEPALIVE, &n, sizeof(n)));
		break;
	case CALL_SHUTDOWN_LISTEN:
		/* On a socket that is not connected: ENOTCONN once allowed. */
		if (shutdown(4, SHUT_RD) == -1 && errno != ENOTCONN)
			check_rc(-1);
		break;
	case CALL_SHUTDOWN_OTHER:
		if (shutdown(9, SHUT_RD) == -1 && errno != ENOTCONN)
			check_rc(-1);
		break;
	case CALL_PRCTL_NAME:
		check_rc(prctl(PR_SET_NAME, "probe", 0, 0, 0));
		break;
	case CALL_PRCTL_OTHER:
		check_rc(prctl(PR_GET_NAME, name, 0, 0, 0));
		break;
	}
}

START_TEST(test_filter)
{
	const struct filter_case *fc = &cases[_i];
	int status, s;
	pid_t pid;

	pid = fork();
	ck_assert_int_ne(pid, -1);
	if (pid == 0) {
		/* The socket connect is tried on, made before the filter. */
		if ((s = socket(AF_INET, SOCK_STREAM, 0)) == -1 ||
		    dup2(s, 9) == -1 || dup2(s, 4) == -1)
			_exit(4);
		if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
			_exit(5);
		/* An edge shares its listeners (workers/edge.c). */
		if (fc->kind == SANDBOX_EDGE) {
			sandbox_protect_fd(4);
			sandbox_protect_fd(6);
		}
		if (sandbox_filter_load(fc->kind) == -1)
			_exit(6);
		do_call(fc->call);
		_exit(0);
	}
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	if (fc->allowed >= EXIT_ERRNO) {
		ck_assert_msg(WIFEXITED(status) &&
		    WEXITSTATUS(status) == fc->allowed,
		    "kind %d: %s should fail with errno %d (status 0x%x)",
		    fc->kind, call_names[fc->call], fc->allowed - EXIT_ERRNO,
		    status);
	} else if (fc->allowed) {
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0,
		    "kind %d: %s should be allowed (status 0x%x)", fc->kind,
		    call_names[fc->call], status);
	} else {
		ck_assert_msg(WIFSIGNALED(status) && WTERMSIG(status) == SIGSYS,
		    "kind %d: %s should be killed by SIGSYS (status 0x%x)",
		    fc->kind, call_names[fc->call], status);
	}
}
END_TEST
#else
/* Built with --disable-seccomp: no filter, said so. */
START_TEST(test_no_seccomp)
{
	errno = 0;
	ck_assert_int_eq(sandbox_filter_load(SANDBOX_EDGE), -1);
	ck_assert_int_eq(errno, ENOSYS);
}
END_TEST
#endif

static Suite *
sandbox_suite(void)
{
	Suite *s = suite_create("sandbox");
	TCase *tc;

	tc = tcase_create("filters");
	tcase_set_timeout(tc, TIMEOUT);
#ifdef HAVE_SECCOMP
	tcase_add_loop_test(tc, test_filter, 0,
	    (int)(sizeof(cases) / sizeof(cases[0])));
#else
	tcase_add_test(tc, test_no_seccomp);
#endif
	suite_add_tcase(s, tc);
	return s;
}

int
main(void)
{
	SRunner *sr;
	int failed;

	sr = srunner_create(sandbox_suite());
	srunner_set_fork_status(sr, CK_FORK_GETENV);
	srunner_run_all(sr, CK_NORMAL);
	failed = srunner_ntests_failed(sr);
	srunner_free(sr);
	return failed ? 1 : 0;
}
