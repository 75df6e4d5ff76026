/* SPDX-License-Identifier: ISC */
/*
 * probe-verify-hop.c: what moving the providers' secrets out of the edge
 * would cost (docs/DEPARTURES 41).  Not built by make; from a built tree:
 *
 *   cc -O2 -o build/probe-verify-hop scripts/probe-verify-hop.c -lcrypto
 *   build/probe-verify-hop [-n hooks] [-b body bytes] [-r rounds]
 *
 * Today an edge verifies a hook's signature itself (HMAC-SHA256 over the
 * body with the source's secret, workers/verify.c).  The alternative keeps
 * the secrets in a process of their own, as OpenSMTPD keeps its keys out
 * of its network process: for each hook the edge puts the body in a memfd
 * (memfd_create, write), passes it on a socketpair (SCM_RIGHTS) with the
 * signature, and waits for the verdict; the verifier reads the body,
 * computes the HMAC, compares, answers one byte.
 *
 * Each round (7 by default) runs both, one after the other, over the same
 * N hooks (20000, 1 KiB bodies): "inline", the HMAC in the process, and
 * "hop", the same through a verifier child.  The CPU of both processes
 * (getrusage, the child's by wait4) and the wall time per hook are
 * printed for each round, then the medians and the hop's extra CPU and
 * wall time per hook.  scripts/bench-ingest run beside it gives today's
 * 201/s: extra CPU x 201/s is the share of a CPU the hop would take at
 * that rate.
 */
#define _GNU_SOURCE
#include <sys/types.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/time.h>
#include <sys/wait.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>

static const char secret[] = "whsec-probe-verify-hop-0123456789";

static double
now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static double
tv_s(struct timeval tv)
{
	return tv.tv_sec + tv.tv_usec / 1e6;
}

static double
cpu_self(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return tv_s(ru.ru_utime) + tv_s(ru.ru_stime);
}

static void
sign(const unsigned char *body, size_t len, unsigned char mac[32])
{
	unsigned int ml = 32;

	HMAC(EVP_sha256(), secret, sizeof(secret) - 1, body, len, mac, &ml);
}

/* The verifier: a memfd and a MAC per datagram, one byte back. */
static void
verifier(int s, size_t blen)
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cm;
	unsigned char mac[32], want[32], ok, *body;
	struct iovec iov = { mac, sizeof(mac) };
	struct msghdr mh;
	struct cmsghdr *ch;
	int fd;

	if ((body = malloc(blen)) == NULL)
		_exit(1);
	for (;;) {
		memset(&mh, 0, sizeof(mh));
		mh.msg_iov = &iov;
		mh.msg_iovlen = 1;
		mh.msg_control = cm.buf;
		mh.msg_controllen = sizeof(cm.buf);
		if (recvmsg(s, &mh, 0) <= 0)
			_exit(0);
		ch = CMSG_FIRSTHDR(&mh);
		if (ch == NULL)
			_exit(1);
		memcpy(&fd, CMSG_DATA(ch), sizeof(int));
		if (pread(fd, body, blen, 0) != (ssize_t)blen)
			_exit(1);
		close(fd);
		sign(body, blen, want);
		ok = CRYPTO_memcmp(want, mac, 32) == 0;
		if (write(s, &ok, 1) != 1)
			_exit(1);
	}
}

/* One hook through the verifier: 0 when it says the MAC is good. */
static int
hop(int s, const unsigned char *body, size_t blen, unsigned char mac[32])
{
	union {
		struct cmsghdr	hdr;
		char		buf[CMSG_SPACE(sizeof(int))];
	} cm;
	struct iovec iov = { mac, 32 };
	struct msghdr mh;
	struct cmsghdr *ch;
	unsigned char ok;
	int fd;

	if ((fd = memfd_create("body", MFD_CLOEXEC)) == -1 ||
	    write(fd, body, blen) != (ssize_t)blen)
		return -1;
	memset(&mh, 0, sizeof(mh));
	memset(&cm, 0, sizeof(cm));
	mh.msg_iov = &iov;
	mh.msg_iovlen = 1;
	mh.msg_control = cm.buf;
	mh.msg_controllen = sizeof(cm.buf);
	ch = CMSG_FIRSTHDR(&mh);
	ch->cmsg_level = SOL_SOCKET;
	ch->cmsg_type = SCM_RIGHTS;
	ch->cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(ch), &fd, sizeof(int));
	if (sendmsg(s, &mh, 0) != 32) {
		close(fd);
		return -1;
	}
	close(fd);
	if (read(s, &ok, 1) != 1)
		return -1;
	return ok ? 0 : -1;
}

static int
cmp(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double
median(double *v, int n)
{
	qsort(v, n, sizeof(*v), cmp);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

int
main(int argc, char *argv[])
{
	unsigned char *body, mac[32], want[32];
	double t0, c0, ic[64], iw[64], hc[64], hw[64];
	struct rusage ru;
	size_t blen = 1024;
	int n = 20000, rounds = 7, ch, r, i, sv[2], status;
	pid_t pid;

	while ((ch = getopt(argc, argv, "n:b:r:")) != -1) {
		switch (ch) {
		case 'n':
			n = atoi(optarg);
			break;
		case 'b':
			blen = strtoul(optarg, NULL, 10);
			break;
		case 'r':
			rounds = atoi(optarg);
			break;
		default:
			fprintf(stderr, "usage: probe-verify-hop [-n hooks] "
			    "[-b body bytes] [-r rounds]\n");
			return 2;
		}
	}
	if (n < 1 || blen < 1 || rounds < 1 || rounds > 64)
		return 2;
	if ((body = malloc(blen)) == NULL)
		return 1;
	for (i = 0; i < (int)blen; i++)
		body[i] = "{\"probe\":1}"[i % 11];
	sign(body, blen, want);
	printf("%-6s %14s %14s %14s %14s\n", "round", "inline_cpu_us",
	    "inline_wall_us", "hop_cpu_us", "hop_wall_us");
	for (r = 0; r < rounds; r++) {
		/* Inline: what an edge does today. */
		c0 = cpu_self();
		t0 = now_s();
		for (i = 0; i < n; i++) {
			sign(body, blen, mac);
			if (CRYPTO_memcmp(mac, want, 32) != 0)
				return 1;
		}
		iw[r] = (now_s() - t0) / n * 1e6;
		ic[r] = (cpu_self() - c0) / n * 1e6;

		/* Hop: the same through a verifier process. */
		if (socketpair(AF_UNIX, SOCK_SEQPACKET, 0, sv) == -1)
			return 1;
		if ((pid = fork()) == 0) {
			close(sv[0]);
			verifier(sv[1], blen);
		}
		close(sv[1]);
		c0 = cpu_self();
		t0 = now_s();
		for (i = 0; i < n; i++)
			if (hop(sv[0], body, blen, want) == -1)
				return 1;
		hw[r] = (now_s() - t0) / n * 1e6;
		hc[r] = cpu_self() - c0;
		close(sv[0]);
		if (wait4(pid, &status, 0, &ru) != pid || !WIFEXITED(status) ||
		    WEXITSTATUS(status) != 0)
			return 1;
		hc[r] = (hc[r] + tv_s(ru.ru_utime) + tv_s(ru.ru_stime)) / n *
		    1e6;
		printf("%-6d %14.2f %14.2f %14.2f %14.2f\n", r + 1, ic[r], iw[r],
		    hc[r], hw[r]);
	}
	{
		double mic = median(ic, rounds), miw = median(iw, rounds);
		double mhc = median(hc, rounds), mhw = median(hw, rounds);

		printf("inline_cpu_us_per_hook  %.2f\n", mic);
		printf("inline_wall_us_per_hook %.2f\n", miw);
		printf("hop_cpu_us_per_hook     %.2f\n", mhc);
		printf("hop_wall_us_per_hook    %.2f\n", mhw);
		printf("extra_cpu_us_per_hook   %.2f\n", mhc - mic);
		printf("extra_wall_us_per_hook  %.2f\n", mhw - miw);
	}
	return 0;
}
