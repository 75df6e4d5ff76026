/* SPDX-License-Identifier: ISC */
/*
 * sandbox.c: what a child may do once it has set itself up (SECURITY in
 * ankusad(8)).
 *
 * A child calls sandbox_enter() once, after it has opened and loaded what
 * it needs (its config, its listener, libcurl and OpenSSL, syslog's
 * socket, which log_init connects at once), and before it reads a byte
 * from outside.  In this order it sets:
 *
 *  - rlimits: no core files (a core holds the secrets in memory),
 *    descriptors to what its kind needs, no POSIX message queues, no
 *    locked memory; each hard limit equal to its soft one, so that it
 *    cannot be raised again;
 *  - the warm-ups: the time zone, OpenSSL's config and random generator,
 *    jansson's hash seed, and (for the kinds that connect out) one name
 *    lookup, so that NSS modules are loaded before the filter;
 *  - PR_SET_NO_NEW_PRIVS, and PR_SET_DUMPABLE 0 (no core, no ptrace and
 *    no /proc/PID/mem or environ for the children's user's processes);
 *  - a Landlock ruleset (the kernel's documented system calls; none when
 *    the kernel lacks it, which is logged): an edge may open no path; a
 *    deliver process may read the CA certificates, the resolver's files
 *    and shared libraries, and read and write the local claim store; a
 *    claim gateway the same, the claim store read-only; an edge's jq
 *    supervisor none;
 *  - a seccomp filter (libseccomp), one per kind, below: an allowlist of
 *    system calls, anything else kills the process (SCMP_ACT_KILL_PROCESS,
 *    SIGSYS), which the master reaps and respawns like any crashed child;
 *    signals, rlimits and ioctls only on the process itself and with the
 *    requests it makes, and an edge's setsockopt and shutdown never on the
 *    ingest listener (sandbox_self_only: refused with an errno there).
 *    An edge cannot open, create a socket or connect; a deliver process or
 *    a gateway can, within what Landlock lets it open.  New threads are
 *    allowed (libcurl's resolver; libnats's, workers/sink_nats.c;
 *    librdkafka's in a deliver process, which name themselves: prctl
 *    PR_SET_NAME there, no other prctl), new processes are not: clone3
 *    answers ENOSYS, so that glibc falls back to clone, whose flags must
 *    include CLONE_THREAD.  The one exception is an edge's jq supervisor
 *    (workers/jqeval.c), which the edge forks before its own sandbox:
 *    it may fork its evaluators, and each evaluator loads a second
 *    filter (SANDBOX_JQ_EVAL) that leaves it reading and writing its
 *    socket, memory, its CPU timer and exiting.
 *
 * Built with the sanitizers, or run under valgrind, a child has no seccomp
 * filter and no Landlock ruleset (both need system calls this list does
 * not have: LeakSanitizer's ptrace, valgrind's own), and logs so once;
 * rlimits and no_new_privs stay.
 *
 * Fatal: a filter or a ruleset that cannot be loaded (the child exits 1
 * rather than run unconfined).
 */
#include "config.h"

#include <sys/types.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/ioctl.h>

#include <errno.h>
#include <fcntl.h>
#include <netdb.h>
#include <sched.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#ifdef HAVE_SECCOMP
#include <seccomp.h>
#endif
#ifdef HAVE_LINUX_LANDLOCK_H
#include <linux/landlock.h>
#endif

#include "log.h"
#include "proc.h"
#include "sandbox.h"

/* Descriptors each kind needs: an edge and a gateway one per connection
 * (http.max_conns_per_ip and the gateway's cap bound them further); a
 * deliver process runs one job at a time (its channel, the deck, a body,
 * libcurl's cached connections). */
#define SANDBOX_NOFILE_EDGE	16384
#define SANDBOX_NOFILE_GATEWAY	4096
#define SANDBOX_NOFILE_DELIVER	256
/* An edge's jq supervisor: its channel, stdio, an evaluator's pair. */
#define SANDBOX_NOFILE_JQ	16

static const char *const sandbox_names[] = {
	[SANDBOX_EDGE] = "edge",
	[SANDBOX_DELIVER] = "deliver",
	[SANDBOX_GATEWAY] = "gateway",
	[SANDBOX_JQ] = "jq supervisor",
	[SANDBOX_JQ_EVAL] = "jq evaluator",
};

/* What a process that connects out reads: the CA certificates (curl's
 * bundle and directory and what their links point at), OpenSSL's config,
 * the resolver's files, shared libraries (an NSS module a changed
 * nsswitch.conf names). */
static const char *const sandbox_read_paths[] = {
	"/etc/ssl",
	"/etc/ca-certificates",
	"/etc/pki",
	"/usr/share/ca-certificates",
	"/usr/local/share/ca-certificates",
	"/usr/lib/ssl",
	"/etc/hosts",
	"/etc/resolv.conf",
	"/etc/nsswitch.conf",
	"/etc/host.conf",
	"/etc/gai.conf",
	"/etc/services",
	"/etc/localtime",
	"/etc/ld.so.cache",
	"/usr/lib",
	"/lib",
	NULL
};

static void	sandbox_rlimits(enum sandbox_kind, int);
static void	sandbox_warm(enum sandbox_kind);
static int	sandbox_off(void);
static int	sandbox_landlock(enum sandbox_kind, const char *);

static const char *const sandbox_features[SANDBOX_F_COUNT] = {
	"rlimits", "no_new_privs", "landlock", "seccomp", "not_dumpable",
};

/* The descriptors sandbox_protect_fd named. */
static int	protect[4];
static int	nprotect;

void
sandbox_protect_fd(int fd)
{
	if (nprotect < (int)(sizeof(protect) / sizeof(protect[0])))
		protect[nprotect++] = fd;
}

const char *
sandbox_feature_name(int i)
{
	return i >= 0 && i < SANDBOX_F_COUNT ? sandbox_features[i] : NULL;
}
static void	sandbox_mkdirs(const char *);

/* A limit that cannot be set is fatal, but under a tool that keeps the
 * process's limits to itself (valgrind: lenient). */
static void
sandbox_rlimit(int res, rlim_t want, const char *what, int lenient)
{
	struct rlimit rl;

	if (getrlimit(res, &rl) == -1)
		fatal("sandbox: getrlimit %s", what);
	if (rl.rlim_max != RLIM_INFINITY && want > rl.rlim_max)
		want = rl.rlim_max;
	rl.rlim_cur = rl.rlim_max = want;
	if (setrlimit(res, &rl) == 0)
		return;
	if (!lenient)
		fatal("sandbox: setrlimit %s %llu", what,
		    (unsigned long long)want);
	log_warn("sandbox: setrlimit %s %llu", what, (unsigned long long)want);
}

static void
sandbox_rlimits(enum sandbox_kind kind, int lenient)
{
	rlim_t nofile;

	nofile = kind == SANDBOX_EDGE ? SANDBOX_NOFILE_EDGE :
	    kind == SANDBOX_GATEWAY ? SANDBOX_NOFILE_GATEWAY :
	    kind == SANDBOX_JQ ? SANDBOX_NOFILE_JQ :
	    SANDBOX_NOFILE_DELIVER;
	sandbox_rlimit(RLIMIT_CORE, 0, "core", lenient);
	sandbox_rlimit(RLIMIT_NOFILE, nofile, "nofile", lenient);
	sandbox_rlimit(RLIMIT_MSGQUEUE, 0, "msgqueue", lenient);
	sandbox_rlimit(RLIMIT_MEMLOCK, 0, "memlock", lenient);
}

static void
sandbox_warm(enum sandbox_kind kind)
{
	struct addrinfo hints, *res;
	struct tm tm;
	unsigned char buf[32];
	unsigned int len = sizeof(buf);
	time_t now = time(NULL);

	tzset();
	(void)localtime_r(&now, &tm);
	/* OpenSSL reads its config and seeds its generator at first use. */
	if (!OPENSSL_init_crypto(OPENSSL_INIT_LOAD_CONFIG, NULL) ||
	    RAND_bytes(buf, sizeof(buf)) != 1 ||
	    EVP_Digest("", 0, buf, &len, EVP_sha256(), NULL) != 1)
		fatalx("sandbox: OpenSSL cannot start");
	/* jansson seeds its hash tables from /dev/urandom at first use. */
	json_object_seed(0);
	if (kind == SANDBOX_EDGE || kind == SANDBOX_JQ)
		return;
	/* A lookup of a name from /etc/hosts: no traffic, but every NSS
	 * module of "hosts" is loaded. */
	memset(&hints, 0, sizeof(hints));
	hints.ai_socktype = SOCK_STREAM;
	if (getaddrinfo("localhost", "80", &hints, &res) == 0)
		freeaddrinfo(res);
}

/* The sanitizers and valgrind make system calls of their own. */
static int
sandbox_off(void)
{
	const char *pre = getenv("LD_PRELOAD");

#ifdef ANKUSA_SANITIZERS
	log_info("sandbox: built with the sanitizers: no seccomp filter, no "
	    "Landlock ruleset");
	return 1;
#endif
	if (pre != NULL && strstr(pre, "vgpreload") != NULL) {
		log_info("sandbox: running under valgrind: no seccomp filter, "
		    "no Landlock ruleset");
		return 1;
	}
	return 0;
}

/* mkdir -p: a rule needs its directory to exist, and the claim store's
 * root may not yet (blob_local.c would make it at the first write). */
static void
sandbox_mkdirs(const char *path)
{
	char buf[4096], *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return;
	/* The directories above: existing ones answer EEXIST (or EACCES
	 * where we may not write, as /tmp's parent), which is fine. */
	for (p = buf + 1; *p != '\0'; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		(void)mkdir(buf, 0750);
		*p = '/';
	}
	if (mkdir(buf, 0750) == -1 && errno != EEXIST)
		log_warn("sandbox: mkdir %s", buf);
}

#ifdef HAVE_LINUX_LANDLOCK_H
#define SANDBOX_FS_FILE	(LANDLOCK_ACCESS_FS_READ_FILE | \
	LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_EXECUTE)

/* Allow access beneath path (a file or a directory); a path that does not
 * exist is skipped. */
static void
sandbox_ll_allow(int rs, const char *path, uint64_t access)
{
	struct landlock_path_beneath_attr pb;
	struct stat st;
	int fd;

	if ((fd = open(path, O_PATH | O_CLOEXEC)) == -1)
		return;
	if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
		access &= SANDBOX_FS_FILE
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
		    | LANDLOCK_ACCESS_FS_TRUNCATE
#endif
		    ;
	memset(&pb, 0, sizeof(pb));
	pb.allowed_access = access;
	pb.parent_fd = fd;
	if (syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH,
	    &pb, 0) == -1)
		fatal("sandbox: landlock_add_rule %s", path);
	close(fd);
}

/* Landlock's ruleset: 1 when in force, 0 when the kernel or a filter
 * above us refuses Landlock (a warning: the child runs without it). */
static int
sandbox_landlock(enum sandbox_kind kind, const char *rwdir)
{
	struct landlock_ruleset_attr ra;
	uint64_t all, rd;
	long abi;
	int rs, i;

	abi = syscall(SYS_landlock_create_ruleset, NULL, 0,
	    LANDLOCK_CREATE_RULESET_VERSION);
	if (abi < 1) {
		log_warnx("sandbox: no Landlock (%s%s): file opens are not "
		    "confined to this %s's paths", strerror(errno),
		    errno == EPERM ? ": a seccomp filter above ankusad refuses "
		    "its system calls, e.g. a systemd unit's SystemCallFilter= "
		    "without landlock_create_ruleset, landlock_add_rule and "
		    "landlock_restrict_self" : errno == ENOSYS ? ": the kernel "
		    "was built without it" : errno == EOPNOTSUPP ? ": it is "
		    "off at boot (lsm=)" : "", sandbox_names[kind]);
		return 0;
	}
	all = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE |
	    LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR |
	    LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_REMOVE_FILE |
	    LANDLOCK_ACCESS_FS_MAKE_CHAR | LANDLOCK_ACCESS_FS_MAKE_DIR |
	    LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_SOCK |
	    LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_BLOCK |
	    LANDLOCK_ACCESS_FS_MAKE_SYM;
#ifdef LANDLOCK_ACCESS_FS_REFER
	if (abi >= 2)
		all |= LANDLOCK_ACCESS_FS_REFER;
#endif
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
	if (abi >= 3)
		all |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
	memset(&ra, 0, sizeof(ra));
	ra.handled_access_fs = all;
	if ((rs = syscall(SYS_landlock_create_ruleset, &ra, sizeof(ra), 0)) ==
	    -1)
		fatal("sandbox: landlock_create_ruleset");
	rd = LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
	if (kind == SANDBOX_DELIVER || kind == SANDBOX_GATEWAY)
		for (i = 0; sandbox_read_paths[i] != NULL; i++)
			sandbox_ll_allow(rs, sandbox_read_paths[i], rd);
	if (rwdir != NULL)
		sandbox_ll_allow(rs, rwdir, kind == SANDBOX_DELIVER ?
		    all & ~(LANDLOCK_ACCESS_FS_EXECUTE |
		    LANDLOCK_ACCESS_FS_MAKE_CHAR |
		    LANDLOCK_ACCESS_FS_MAKE_BLOCK |
		    LANDLOCK_ACCESS_FS_MAKE_SOCK |
		    LANDLOCK_ACCESS_FS_MAKE_FIFO |
		    LANDLOCK_ACCESS_FS_MAKE_SYM) : rd);
	if (syscall(SYS_landlock_restrict_self, rs, 0) == -1)
		fatal("sandbox: landlock_restrict_self");
	close(rs);
	return 1;
}
#else
static int
sandbox_landlock(enum sandbox_kind kind, const char *rwdir)
{
	log_info("sandbox: built without Landlock: file opens are not "
	    "confined to this %s's paths", sandbox_names[kind]);
	return 0;
}
#endif

#ifdef HAVE_SECCOMP
/* Every kind: memory, time, signals, its descriptors, its event loop. */
static const int sandbox_sys_common[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(readv), SCMP_SYS(writev),
	SCMP_SYS(pread64), SCMP_SYS(pwrite64), SCMP_SYS(lseek),
	SCMP_SYS(close), SCMP_SYS(fstat), SCMP_SYS(newfstatat),
	SCMP_SYS(statx), SCMP_SYS(fcntl), SCMP_SYS(dup), SCMP_SYS(dup2),
	SCMP_SYS(dup3), SCMP_SYS(ftruncate), SCMP_SYS(memfd_create),
	SCMP_SYS(mmap), SCMP_SYS(munmap), SCMP_SYS(mprotect),
	SCMP_SYS(mremap), SCMP_SYS(madvise), SCMP_SYS(brk),
	SCMP_SYS(futex), SCMP_SYS(set_robust_list), SCMP_SYS(rseq),
	SCMP_SYS(sched_yield), SCMP_SYS(sched_getaffinity),
	SCMP_SYS(rt_sigaction), SCMP_SYS(rt_sigprocmask),
	SCMP_SYS(rt_sigreturn), SCMP_SYS(sigaltstack),
	SCMP_SYS(restart_syscall), SCMP_SYS(exit), SCMP_SYS(exit_group),
	SCMP_SYS(getpid), SCMP_SYS(gettid), SCMP_SYS(getppid),
	SCMP_SYS(getuid), SCMP_SYS(geteuid), SCMP_SYS(getgid),
	SCMP_SYS(getegid), SCMP_SYS(clock_gettime),
	SCMP_SYS(clock_getres), SCMP_SYS(clock_nanosleep),
	SCMP_SYS(nanosleep), SCMP_SYS(gettimeofday), SCMP_SYS(time),
	SCMP_SYS(getrandom), SCMP_SYS(uname), SCMP_SYS(sysinfo),
	SCMP_SYS(getrlimit),
	SCMP_SYS(epoll_create1), SCMP_SYS(epoll_ctl), SCMP_SYS(epoll_wait),
	SCMP_SYS(epoll_pwait), SCMP_SYS(poll), SCMP_SYS(ppoll),
	SCMP_SYS(select), SCMP_SYS(pselect6), SCMP_SYS(pipe2),
	SCMP_SYS(eventfd2), SCMP_SYS(socketpair), SCMP_SYS(recvfrom),
	SCMP_SYS(recvmsg), SCMP_SYS(sendto), SCMP_SYS(sendmsg),
	SCMP_SYS(sendmmsg), SCMP_SYS(recvmmsg),
	SCMP_SYS(getsockopt), SCMP_SYS(getsockname),
	SCMP_SYS(getpeername), SCMP_SYS(fsync),
	SCMP_SYS(fdatasync),
};

/* A jq evaluator (workers/jqeval.c): its socket, memory, its CPU timer
 * and its handlers' return, exiting; what glibc's abort (and tgkill on
 * itself, sandbox_filter_load), stdio (the stderr builtin) and jq's
 * `now` ask for. */
static const int sandbox_sys_jq_eval[] = {
	SCMP_SYS(read), SCMP_SYS(write), SCMP_SYS(close), SCMP_SYS(fstat),
	SCMP_SYS(newfstatat), SCMP_SYS(mmap), SCMP_SYS(munmap),
	SCMP_SYS(mremap), SCMP_SYS(mprotect), SCMP_SYS(madvise),
	SCMP_SYS(brk), SCMP_SYS(futex), SCMP_SYS(rt_sigreturn),
	SCMP_SYS(rt_sigprocmask), SCMP_SYS(rt_sigaction),
	SCMP_SYS(setitimer), SCMP_SYS(getpid), SCMP_SYS(gettid),
	SCMP_SYS(clock_gettime), SCMP_SYS(gettimeofday), SCMP_SYS(time),
	SCMP_SYS(restart_syscall), SCMP_SYS(exit), SCMP_SYS(exit_group),
};

/* What a jq supervisor adds to the common list for its evaluators (a
 * stacked filter allows only what every filter allows): their timer and
 * their own filter (seccomp can only narrow what a process may do); and
 * prctl's PR_SET_PDEATHSIG and PR_SET_NAME (sandbox_filter_load). */
static const int sandbox_sys_jq[] = {
	SCMP_SYS(setitimer), SCMP_SYS(getitimer), SCMP_SYS(seccomp),
};

/* Serving connections on the listener the master passed. */
static const int sandbox_sys_accept[] = {
	SCMP_SYS(accept), SCMP_SYS(accept4),
};

/* Opening files (within Landlock's paths) and connecting out. */
static const int sandbox_sys_files_net[] = {
	SCMP_SYS(openat), SCMP_SYS(open), SCMP_SYS(socket),
	SCMP_SYS(connect), SCMP_SYS(bind), SCMP_SYS(getdents64),
	SCMP_SYS(access), SCMP_SYS(faccessat), SCMP_SYS(faccessat2),
	SCMP_SYS(readlink), SCMP_SYS(readlinkat), SCMP_SYS(statfs),
	SCMP_SYS(fstatfs), SCMP_SYS(stat), SCMP_SYS(lstat),
	SCMP_SYS(getcwd), SCMP_SYS(membarrier),
};

/* The local claim store's writes. */
static const int sandbox_sys_store_write[] = {
	SCMP_SYS(mkdir), SCMP_SYS(mkdirat), SCMP_SYS(rename),
	SCMP_SYS(renameat), SCMP_SYS(renameat2), SCMP_SYS(unlink),
	SCMP_SYS(unlinkat), SCMP_SYS(rmdir), SCMP_SYS(fchmod),
	SCMP_SYS(umask),
};

/* The ioctl requests the children make: libevent's FIONREAD, a
 * descriptor's non-blocking and close-on-exec flags, stdio's look at a
 * terminal.  Any other answers ENOTTY, as a descriptor that does not
 * know the request does. */
static const unsigned long sandbox_ioctls[] = {
	FIONREAD, FIONBIO, FIOCLEX, FIONCLEX, TCGETS, TIOCGWINSZ,
};

/* A pid, descriptor or request argument is compared on its low 32 bits
 * (an int the kernel may see sign-extended). */
#define SANDBOX_AEQ(n, v)	SCMP_CMP64((n), SCMP_CMP_MASKED_EQ, \
	0xffffffffULL, (scmp_datum_t)(uint32_t)(v))
#define SANDBOX_ANE(n, v)	SCMP_CMP64((n), SCMP_CMP_NE, \
	(scmp_datum_t)(uint32_t)(v))

/*
 * The calls allowed on some arguments only:
 *  - kill and tgkill on this process alone (its own pid; tgkill's thread
 *    group, the threads of libcurl's resolver), anything else EPERM, as
 *    the kernel answers for another user's process: a child signals no
 *    one else even where its uid would let it;
 *  - prlimit64 on this process alone (pid 0 or its own: getrlimit and
 *    setrlimit), anything else EPERM;
 *  - ioctl with the requests above, anything else ENOTTY;
 *  - setsockopt and shutdown on any descriptor but the listeners the
 *    process shares with others of its kind (sandbox_protect_fd: an
 *    edge's ingest listeners, plain and TLS): one that is compromised
 *    cannot attach a filter to them or shut them for the others (EPERM).
 *    A deliver process and a gateway hold no ingest listener
 *    (supervisor.c passes them to the edges alone).
 */
static int
sandbox_self_only(scmp_filter_ctx ctx, enum sandbox_kind kind)
{
	uint32_t self = (uint32_t)getpid();
	size_t i;

	if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(kill), 1,
	    SANDBOX_AEQ(0, self)) != 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(kill), 1,
	    SANDBOX_ANE(0, self)) != 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
	    SANDBOX_AEQ(0, self)) != 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(tgkill), 1,
	    SANDBOX_ANE(0, self)) != 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1,
	    SANDBOX_AEQ(0, 0)) != 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prlimit64), 1,
	    SANDBOX_AEQ(0, self)) != 0)
		return -1;
	/* Every other pid: above our own, and between 1 and our own. */
	if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64),
	    1, SCMP_CMP64(0, SCMP_CMP_GT, (scmp_datum_t)self)) != 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM), SCMP_SYS(prlimit64),
	    1, SCMP_CMP64(0, SCMP_CMP_LT, (scmp_datum_t)self)) != 0)
		return -1;
	for (i = 0; i < sizeof(sandbox_ioctls) / sizeof(sandbox_ioctls[0]);
	    i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(ioctl), 1,
		    SANDBOX_AEQ(1, sandbox_ioctls[i])) != 0)
			return -1;
	/* Any other request (libseccomp tries the equalities first: an
	 * unconditional rule would override them). */
	if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOTTY), SCMP_SYS(ioctl),
	    1, SCMP_CMP64(1, SCMP_CMP_GE, 0)) != 0)
		return -1;
	/* The listeners shared with other processes (sandbox_protect_fd):
	 * EPERM on each, anything else allowed (libseccomp tries the
	 * equalities first, as for ioctl). */
	for (i = 0; i < nprotect; i++)
		if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
		    SCMP_SYS(setsockopt), 1, SANDBOX_AEQ(0, protect[i])) != 0 ||
		    seccomp_rule_add(ctx, SCMP_ACT_ERRNO(EPERM),
		    SCMP_SYS(shutdown), 1, SANDBOX_AEQ(0, protect[i])) != 0)
			return -1;
	if (nprotect == 0)
		return (seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
		    SCMP_SYS(setsockopt), 0) != 0 ||
		    seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
		    SCMP_SYS(shutdown), 0) != 0) ? -1 : 0;
	if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(setsockopt), 1,
	    SCMP_CMP64(0, SCMP_CMP_GE, 0)) != 0 ||
	    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(shutdown), 1,
	    SCMP_CMP64(0, SCMP_CMP_GE, 0)) != 0)
		return -1;
	return 0;
}

static int
sandbox_allow(scmp_filter_ctx ctx, const int *sys, size_t n)
{
	size_t i;

	for (i = 0; i < n; i++)
		if (sys[i] >= 0 &&
		    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, sys[i], 0) != 0)
			return -1;
	return 0;
}

#define SANDBOX_ALLOW(ctx, a)	sandbox_allow((ctx), (a), \
	sizeof(a) / sizeof((a)[0]))

int
sandbox_filter_load(enum sandbox_kind kind)
{
	scmp_filter_ctx ctx;
	int rc = -1;

	if ((ctx = seccomp_init(SCMP_ACT_KILL_PROCESS)) == NULL)
		return -1;
	/* no_new_privs is set by sandbox_enter, and by the caller of a
	 * test; libseccomp must not set it behind our back either way. */
	if (seccomp_attr_set(ctx, SCMP_FLTATR_CTL_NNP, 0) != 0)
		goto out;
	if (kind == SANDBOX_JQ_EVAL) {
		/* abort's raise, on this process alone. */
		if (SANDBOX_ALLOW(ctx, sandbox_sys_jq_eval) == -1 ||
		    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(tgkill), 1,
		    SANDBOX_AEQ(0, getpid())) != 0)
			goto out;
		goto load;
	}
	if (SANDBOX_ALLOW(ctx, sandbox_sys_common) == -1 ||
	    sandbox_self_only(ctx, kind) == -1)
		goto out;
	if ((kind == SANDBOX_EDGE || kind == SANDBOX_GATEWAY) &&
	    SANDBOX_ALLOW(ctx, sandbox_sys_accept) == -1)
		goto out;
	if ((kind == SANDBOX_DELIVER || kind == SANDBOX_GATEWAY) &&
	    SANDBOX_ALLOW(ctx, sandbox_sys_files_net) == -1)
		goto out;
	/* Threads, no processes (see the header); a jq supervisor forks. */
	if (seccomp_rule_add(ctx, SCMP_ACT_ERRNO(ENOSYS),
	    SCMP_SYS(clone3), 0) != 0)
		goto out;
	if (kind == SANDBOX_JQ) {
		if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone),
		    0) != 0 || SANDBOX_ALLOW(ctx, sandbox_sys_jq) == -1 ||
		    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
		    SANDBOX_AEQ(0, PR_SET_PDEATHSIG)) != 0 ||
		    seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(prctl), 1,
		    SANDBOX_AEQ(0, PR_SET_NAME)) != 0)
			goto out;
	} else if (seccomp_rule_add(ctx, SCMP_ACT_ALLOW, SCMP_SYS(clone), 1,
	    SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD)) != 0)
		goto out;
	if (kind == SANDBOX_DELIVER &&
	    SANDBOX_ALLOW(ctx, sandbox_sys_store_write) == -1)
		goto out;
	/* A deliver process's threads name themselves (librdkafka's, the
	 * kafka sink's): prctl PR_SET_NAME, no other option. */
	if (kind == SANDBOX_DELIVER && seccomp_rule_add(ctx, SCMP_ACT_ALLOW,
	    SCMP_SYS(prctl), 1, SANDBOX_AEQ(0, PR_SET_NAME)) != 0)
		goto out;
 load:
	rc = seccomp_load(ctx) == 0 ? 0 : -1;
 out:
	seccomp_release(ctx);
	return rc;
}
#else
int
sandbox_filter_load(enum sandbox_kind kind)
{
	errno = ENOSYS;
	return -1;
}
#endif

unsigned int
sandbox_enter(enum sandbox_kind kind, const char *rwdir)
{
	unsigned int have = SANDBOX_F_RLIMITS | SANDBOX_F_NO_NEW_PRIVS;
	int off = sandbox_off();

	sandbox_rlimits(kind, off);
	sandbox_warm(kind);
	if (rwdir != NULL)
		sandbox_mkdirs(rwdir);
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == -1)
		fatal("sandbox: PR_SET_NO_NEW_PRIVS");
	if (off)
		return have;
	/* Not under the sanitizers: LeakSanitizer traces the process. */
	if (prctl(PR_SET_DUMPABLE, 0, 0, 0, 0) == -1)
		fatal("sandbox: PR_SET_DUMPABLE");
	have |= SANDBOX_F_NOT_DUMPABLE;
	if (sandbox_landlock(kind, rwdir))
		have |= SANDBOX_F_LANDLOCK;
#ifdef HAVE_SECCOMP
	if (sandbox_filter_load(kind) == -1)
		fatal("sandbox: cannot load the %s seccomp filter",
		    sandbox_names[kind]);
	have |= SANDBOX_F_SECCOMP;
#else
	log_info("sandbox: built without libseccomp: no system call filter");
#endif
	return have;
}
