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
 * At load it takes itself out of LD_PRELOAD (other entries stay) and drops
 * ANKUSA_TEST_BIND_ADDR, so the children the master execs (edges, deliver
 * processes, gateways: each under its seccomp filter) run without it.  A
 * bind that fails fails the connect (with bind's errno): a connection from
 * the wrong address would make a cut silently ineffective.  IPv4 only.
 */
#define _GNU_SOURCE

#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <dlfcn.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#define SHIM_NAME	"bind_preload.so"

static int (*real_connect)(int, const struct sockaddr *, socklen_t);
static struct in_addr bind_addr;
static int have_addr;

static int
is_loopback(struct in_addr a)
{
	return (ntohl(a.s_addr) >> 24) == 127;
}

/* This shim's entry out of LD_PRELOAD (entries are split by ':' or ' '). */
static void
drop_self(void)
{
	const char *pre = getenv("LD_PRELOAD");
	char *out, *copy, *tok, *save, *base;
	size_t n;

	if (pre == NULL)
		return;
	n = strlen(pre) + 1;
	if ((copy = strdup(pre)) == NULL || (out = calloc(1, n)) == NULL) {
		free(copy);
		unsetenv("LD_PRELOAD");
		return;
	}
	for (tok = strtok_r(copy, ": ", &save); tok != NULL;
	    tok = strtok_r(NULL, ": ", &save)) {
		base = strrchr(tok, '/');
		base = base != NULL ? base + 1 : tok;
		if (strcmp(base, SHIM_NAME) == 0)
			continue;
		if (out[0] != '\0')
			strcat(out, ":");
		strcat(out, tok);
	}
	if (out[0] == '\0')
		unsetenv("LD_PRELOAD");
	else
		setenv("LD_PRELOAD", out, 1);
	free(out);
	free(copy);
}

__attribute__((constructor)) static void
shim_init(void)
{
	const char *a = getenv("ANKUSA_TEST_BIND_ADDR");

	if (a != NULL && inet_pton(AF_INET, a, &bind_addr) == 1 &&
	    is_loopback(bind_addr))
		have_addr = 1;
	unsetenv("ANKUSA_TEST_BIND_ADDR");
	drop_self();
	real_connect = (int (*)(int, const struct sockaddr *, socklen_t))
	    dlsym(RTLD_NEXT, "connect");
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
