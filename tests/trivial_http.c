/* SPDX-License-Identifier: ISC */
/*
 * trivial_http.c: the raw HTTP baseline of scripts/bench-ingest.
 *
 *   trivial_http port [nproc]
 *
 * Listens on 127.0.0.1:port and answers every request, whatever its method
 * and path, 201 with a small JSON body, after reading the whole request
 * (evhttp reads the body before calling us, as an edge must).  nproc
 * processes (default 2, the default http.workers of ankusad) share the
 * listener, each with one event loop: the same shape as the edges, so the
 * ratio compares like with like.  The parent serves too; on SIGTERM or
 * SIGINT it stops and reaps its children, which also die with it if it is
 * killed (Linux PR_SET_PDEATHSIG).  Exits 1 on a setup error.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>
#include <sys/wait.h>
#ifdef __linux__
#include <sys/prctl.h>
#endif

#include <netinet/in.h>
#include <arpa/inet.h>

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <event2/buffer.h>
#include <event2/event.h>
#include <event2/http.h>
#include <event2/keyvalq_struct.h>

#define TRIVIAL_BODY	"{\"status\":\"accepted\",\"id\":\"0\"}"
#define NPROC_MAX	64

static void	 answer(struct evhttp_request *, void *);
static void	 on_signal(evutil_socket_t, short, void *);
static int	 listen_on(int);
static void	 serve(int);
static void	 usage(void) __attribute__((noreturn));

static void
usage(void)
{
	fprintf(stderr, "usage: trivial_http port [nproc]\n");
	exit(1);
}

/* Every request: 201 and a fixed body. */
static void
answer(struct evhttp_request *req, void *arg)
{
	struct evbuffer *out;

	(void)arg;
	if ((out = evbuffer_new()) == NULL) {
		evhttp_send_error(req, 500, NULL);
		return;
	}
	evbuffer_add(out, TRIVIAL_BODY, sizeof(TRIVIAL_BODY) - 1);
	evhttp_add_header(evhttp_request_get_output_headers(req),
	    "Content-Type", "application/json");
	evhttp_send_reply(req, 201, "Created", out);
	evbuffer_free(out);
}

static void
on_signal(evutil_socket_t sig, short what, void *arg)
{
	(void)sig;
	(void)what;
	event_base_loopexit(arg, NULL);
}

static int
listen_on(int port)
{
	struct sockaddr_in sin;
	int fd, on = 1;

	if ((fd = socket(AF_INET, SOCK_STREAM, 0)) == -1) {
		perror("trivial_http: socket");
		return -1;
	}
	setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &on, sizeof(on));
	memset(&sin, 0, sizeof(sin));
	sin.sin_family = AF_INET;
	sin.sin_port = htons(port);
	sin.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
	if (bind(fd, (struct sockaddr *)&sin, sizeof(sin)) == -1 ||
	    listen(fd, 1024) == -1 || evutil_make_socket_nonblocking(fd) == -1) {
		fprintf(stderr, "trivial_http: 127.0.0.1:%d: %s\n", port,
		    strerror(errno));
		close(fd);
		return -1;
	}
	return fd;
}

/* One event loop on the shared listener, until SIGTERM or SIGINT. */
static void
serve(int fd)
{
	struct event_base *base;
	struct evhttp *http;
	struct event *sigterm, *sigint;

	if ((base = event_base_new()) == NULL ||
	    (http = evhttp_new(base)) == NULL) {
		fprintf(stderr, "trivial_http: libevent setup failed\n");
		exit(1);
	}
	evhttp_set_allowed_methods(http, EVHTTP_REQ_GET | EVHTTP_REQ_POST |
	    EVHTTP_REQ_PUT | EVHTTP_REQ_HEAD);
	evhttp_set_gencb(http, answer, NULL);
	if (evhttp_accept_socket(http, fd) != 0) {
		fprintf(stderr, "trivial_http: evhttp_accept_socket failed\n");
		exit(1);
	}
	sigterm = evsignal_new(base, SIGTERM, on_signal, base);
	sigint = evsignal_new(base, SIGINT, on_signal, base);
	if (sigterm == NULL || sigint == NULL ||
	    event_add(sigterm, NULL) == -1 || event_add(sigint, NULL) == -1) {
		fprintf(stderr, "trivial_http: signal events failed\n");
		exit(1);
	}
	event_base_dispatch(base);
	event_free(sigterm);
	event_free(sigint);
	evhttp_free(http);
	event_base_free(base);
}

int
main(int argc, char *argv[])
{
	pid_t kids[NPROC_MAX], parent;
	char *end;
	long port, nproc = 2;
	int fd, i;

	if (argc < 2 || argc > 3)
		usage();
	port = strtol(argv[1], &end, 10);
	if (*end != '\0' || port < 1 || port > 65535)
		usage();
	if (argc == 3) {
		nproc = strtol(argv[2], &end, 10);
		if (*end != '\0' || nproc < 1 || nproc > NPROC_MAX)
			usage();
	}
	signal(SIGPIPE, SIG_IGN);
	if ((fd = listen_on((int)port)) == -1)
		return 1;

	/* nproc - 1 children; the parent serves as the last one. */
	parent = getpid();
	for (i = 0; i < nproc - 1; i++) {
		if ((kids[i] = fork()) == -1) {
			perror("trivial_http: fork");
			return 1;
		}
		if (kids[i] == 0) {
#ifdef __linux__
			prctl(PR_SET_PDEATHSIG, SIGTERM);
#endif
			/* The parent may have gone before prctl. */
			if (getppid() == parent)
				serve(fd);
			_exit(0);
		}
	}
	fprintf(stderr, "trivial_http: 127.0.0.1:%ld, %ld process%s\n", port,
	    nproc, nproc == 1 ? "" : "es");
	serve(fd);
	for (i = 0; i < nproc - 1; i++)
		kill(kids[i], SIGTERM);
	for (i = 0; i < nproc - 1; i++)
		waitpid(kids[i], NULL, 0);
	return 0;
}
