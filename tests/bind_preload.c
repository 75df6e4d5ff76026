/* SPDX-License-Identifier: ISC */
/*
 * bind_preload.c: a test-only LD_PRELOAD shim for the replication tests
 * (tests/e2e/repl.py).  Not installed, never linked into a product.
 *
 * Berkeley DB's replication manager connects to its peers without binding
 * the socket first, so on loopback every connection between the nodes of a
 * group comes from 127.0.0.1 and an `ip rule from X to Y blackhole` cannot
 * tell the nodes apart.  Preloaded into ankusad's master with
 * ANKUSA_TEST_BIND_ADDR=127.0.0.X, this connect() binds an unbound TCP
 * socket to that address (port 0: any) before it connects to a 127.0.0.0/8
 * address; then each node's connections come from its own address.
 *
 * It follows the process across an exec of its own executable (ankusad
 * executes itself again at a role change, reexec.c) and no further: an
 * execv or execve of any other program (the edges, deliver processes and
 * gateways the master starts, each under its seccomp filter) gets an
 * environment without this shim's LD_PRELOAD entry (other entries stay)
 * and without ANKUSA_TEST_BIND_ADDR.  A bind that fails fails the connect
 * (with bind's errno): a connection from the wrong address would make a
 * cut silently ineffective.  IPv4 only.
 */
#define _GNU_SOURCE

#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <dlfcn.h>
#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define SHIM_NAME	"bind_preload.so"

#define ADDR_VAR	"ANKUSA_TEST_BIND_ADDR"

extern char **environ;

static int (*real_connect)(int, const struct sockaddr *, socklen_t);
static int (*real_execve)(const char *, char *const [], char *const []);
static struct in_addr bind_addr;
static int have_addr;

static int
is_loopback(struct in_addr a)
{
	return (ntohl(a.s_addr) >> 24) == 127;
}

/* "LD_PRELOAD=..." without this shim's entry (entries are split by ':'
 * or ' '), or NULL when nothing is left (or no memory). */
static char *
preload_without_self(const char *var)
{
	const char *pre = var + strlen("LD_PRELOAD=");
	char *out, *copy, *tok, *save, *base;
	size_t n;

	n = strlen(var) + 1;
	if ((copy = strdup(pre)) == NULL || (out = calloc(1, n)) == NULL) {
		free(copy);
		return NULL;
	}
	strcpy(out, "LD_PRELOAD=");
	for (tok = strtok_r(copy, ": ", &save); tok != NULL;
	    tok = strtok_r(NULL, ": ", &save)) {
		base = strrchr(tok, '/');
		base = base != NULL ? base + 1 : tok;
		if (strcmp(base, SHIM_NAME) == 0)
			continue;
		if (out[strlen(out) - 1] != '=')
			strcat(out, ":");
		strcat(out, tok);
	}
	free(copy);
	if (out[strlen(out) - 1] == '=') {
		free(out);
		return NULL;
	}
	return out;
}

/* The same program as this process's? */
static int
is_self(const char *path)
{
	char a[PATH_MAX], b[PATH_MAX];

	if (realpath(path, a) == NULL || realpath("/proc/self/exe", b) == NULL)
		return 0;
	return strcmp(a, b) == 0;
}

__attribute__((constructor)) static void
shim_init(void)
{
	const char *a = getenv(ADDR_VAR);

	if (a != NULL && inet_pton(AF_INET, a, &bind_addr) == 1 &&
	    is_loopback(bind_addr))
		have_addr = 1;
	real_connect = (int (*)(int, const struct sockaddr *, socklen_t))
	    dlsym(RTLD_NEXT, "connect");
	real_execve = (int (*)(const char *, char *const [], char *const []))
	    dlsym(RTLD_NEXT, "execve");
}

int
execve(const char *path, char *const argv[], char *const envp[])
{
	char **env, *pre = NULL;
	size_t i, n, k;
	int ret;

	if (real_execve == NULL) {
		errno = ENOSYS;
		return -1;
	}
	if (envp == NULL || is_self(path))
		return real_execve(path, argv, envp);
	for (n = 0; envp[n] != NULL; n++)
		;
	if ((env = calloc(n + 1, sizeof(*env))) == NULL) {
		errno = ENOMEM;
		return -1;
	}
	for (i = 0, k = 0; i < n; i++) {
		if (strncmp(envp[i], ADDR_VAR "=", strlen(ADDR_VAR) + 1) == 0)
			continue;
		if (strncmp(envp[i], "LD_PRELOAD=", 11) == 0) {
			free(pre);
			if ((pre = preload_without_self(envp[i])) != NULL)
				env[k++] = pre;
			continue;
		}
		env[k++] = envp[i];
	}
	env[k] = NULL;
	ret = real_execve(path, argv, env);
	free(pre);
	free(env);
	return ret;
}

int
execv(const char *path, char *const argv[])
{
	return execve(path, argv, environ);
}

/* A TCP socket with no local address yet. */
static int
unbound_tcp(int fd)
{
	struct sockaddr_in self;
	socklen_t len = sizeof(self);
	int type, proto;
	socklen_t olen;

	olen = sizeof(type);
	if (getsockopt(fd, SOL_SOCKET, SO_TYPE, &type, &olen) == -1 ||
	    type != SOCK_STREAM)
		return 0;
	olen = sizeof(proto);
	if (getsockopt(fd, SOL_SOCKET, SO_PROTOCOL, &proto, &olen) == -1 ||
	    proto != IPPROTO_TCP)
		return 0;
	memset(&self, 0, sizeof(self));
	if (getsockname(fd, (struct sockaddr *)&self, &len) == -1 ||
	    self.sin_family != AF_INET)
		return 0;
	return self.sin_port == 0 && self.sin_addr.s_addr == htonl(INADDR_ANY);
}

int
connect(int fd, const struct sockaddr *sa, socklen_t salen)
{
	const struct sockaddr_in *to = (const struct sockaddr_in *)sa;
	struct sockaddr_in from;

	if (real_connect == NULL)
		real_connect = (int (*)(int, const struct sockaddr *,
		    socklen_t))dlsym(RTLD_NEXT, "connect");
	if (real_connect == NULL) {
		errno = ENOSYS;
		return -1;
	}
	if (have_addr && sa != NULL && salen >= sizeof(*to) &&
	    sa->sa_family == AF_INET && is_loopback(to->sin_addr) &&
	    unbound_tcp(fd)) {
		memset(&from, 0, sizeof(from));
		from.sin_family = AF_INET;
		from.sin_port = 0;
		from.sin_addr = bind_addr;
		if (bind(fd, (struct sockaddr *)&from, sizeof(from)) == -1)
			return -1;
	}
	return real_connect(fd, sa, salen);
}
