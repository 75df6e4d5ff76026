/* SPDX-License-Identifier: ISC */
/*
 * tlsmat.h: the TLS material of the ingest edges (http.tls): the bytes of
 * the certificate chain, its private key and the client CAs, read by the
 * master (at start as root, before the drop; at a reload as node.user)
 * and handed to each edge in a memfd on PROC_FD_TLS, since an edge, in
 * its sandbox, opens no file.  Both halves of the memfd's codec are here:
 * three big-endian 32-bit lengths (cert, key, CA), then the bytes in that
 * order.  The edge parses the PEM; the master only reads files.
 */
#ifndef ANKUSA_TLSMAT_H
#define ANKUSA_TLSMAT_H

#include <stddef.h>

struct conf;

/* The most bytes a file may hold: a PEM chain is a few KiB. */
#define TLSMAT_FILE_MAX	(1024 * 1024)

struct tlsmat {
	char	*cert;		/* NUL-terminated, certlen bytes */
	size_t	 certlen;
	char	*key;
	size_t	 keylen;
	char	*ca;		/* NULL: no client_ca_file */
	size_t	 calen;
};

/* Read http.tls's files into m: 0, or -1 with the reason in err (the
 * file and the error).  No TLS configured: 0 and m empty. */
int	tlsmat_load(const struct conf *, struct tlsmat *m, char *err,
	    size_t errlen);
/* The memfd of m, for an edge; -1 with errno. */
int	tlsmat_memfd(const struct tlsmat *m);
/* Read a memfd made by tlsmat_memfd: 0, or -1. */
int	tlsmat_read(int fd, struct tlsmat *m);
/* Zero the key and free. */
void	tlsmat_free(struct tlsmat *m);

#endif
