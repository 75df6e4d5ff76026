/* SPDX-License-Identifier: ISC */
/*
 * proc.h: process helpers shared by the master and its children: spawning
 * an exec'd child with descriptors at fixed numbers, a child's start and
 * its hello, memfds and bodies in them, and reading a descriptor whole.
 */
#ifndef ANKUSA_PROC_H
#define ANKUSA_PROC_H

#include <sys/types.h>
#include <stddef.h>
#include <stdint.h>

#include "conf.h"

struct chan;
struct msg;

/* The descriptors every child finds: */
#define PROC_FD_CHAN	3	/* socketpair to the master */
#define PROC_FD_LISTEN	4	/* edge: the ingest listener */
#define PROC_FD_CONF	5	/* memfd with the child's part of the config */
#define PROC_FD_DECK	6	/* deliver: its on-deck page (common/deck.h) */
#define PROC_FD_LISTEN_TLS 6	/* edge: the http.tls listener, if any */
#define PROC_FD_TLS	7	/* edge: its TLS material (common/tlsmat.h) */

/* A child's exit status when it could not execute its program. */
#define PROC_EXEC_FAILED	127
/* The most descriptors a child is given (3 .. 3 + PROC_MAX_FDS - 1). */
#define PROC_MAX_FDS		8

/* fork + exec path with argv and the environment envp (nothing of the
 * caller's); fds[i] becomes descriptor 3 + i in the child (-1: left
 * closed), every other descriptor above 2 is closed; the child ignores
 * SIGTERM and SIGINT (the master's to act on), every other signal is at
 * its default.  Returns the pid, or -1 with errno; a child whose exec
 * fails exits PROC_EXEC_FAILED. */
pid_t	proc_spawn(const char *path, char *const argv[], char *const envp[],
	    const int *fds, int nfds);
/* proc_spawn's part in the child before its exec, for a caller that
 * forks by itself (privsep.c): signals and descriptors as above; exits
 * 127 when the descriptors cannot be put in place. */
void	proc_child_setup(const int *fds, int nfds);
/* A memfd holding a copy of data; -1 with errno. */
int	proc_memfd(const char *name, const void *data, size_t len);
/* A body into a frame: u64 its length, then the bytes inline when they fit
 * MSG_INLINE_MAX, else in a memfd (named name) passed with the frame.  0,
 * or -1 with errno when the memfd cannot be made. */
int	proc_add_body(struct msg *, const char *name, const void *body,
	    uint64_t len);
/* A child's start: parse its argv (-g GEN -i INDEX [-d] [-j] [-v]) and
 * set up logging as "<kind> GEN.INDEX" (to stderr with -d, else syslog;
 * JSON lines with -j, the master's log.format, so that even a child's
 * first line is in it; debug with -v).  0, or -1 on a usage error (the caller prints its usage). */
int	proc_child_start(int argc, char *argv[], const char *progname,
	    const char *kind, uint32_t *gen, uint32_t *idx, int *verbose);
/* The config text the master passed on PROC_FD_CONF (the part of role,
 * conf_role.c), parsed (and the descriptor closed), log.level applied
 * unless verbose; errors are logged and the child exits 78 (EX_CONFIG). */
struct conf *proc_child_conf(enum conf_role, int verbose);
/* MSG_CHILD_HELLO, a child's first frame: u32 MSG_PROTO_VERSION, str
 * its kind ("edge", "deliver", "gateway"), u32 its generation, u32 its
 * pid, u32 the features of its sandbox in force (sandbox.h's SANDBOX_F_*;
 * since version 6).  A child sends it once its sandbox holds (fatal if it
 * cannot); the master reads it strictly (0, or -1; kind points into m),
 * and a hello of another version only as far as its version, so that it
 * can say the versions differ. */
void	proc_child_hello(struct chan *master, const char *kind, uint32_t gen,
	    uint32_t sandbox);
int	proc_hello_decode(struct msg *m, uint32_t *proto, const char **kind,
	    uint32_t *gen, uint32_t *pid, uint32_t *sandbox);
/* A child's channel to the master failed with err (0: closed): a child
 * never outlives its master.  Exits 0 for a close or reset, else logs the
 * error and exits 1. */
void	proc_child_orphaned(int err) __attribute__((noreturn));
/* Read exactly len bytes from offset 0 of fd into a new buffer (with a NUL
 * after them); NULL with errno on a short read. */
char	*proc_read_fd(int fd, size_t len);
/* Read all of fd (a memfd or file) from offset 0; *lenp gets the size. */
char	*proc_read_all(int fd, size_t *lenp);

#endif
