/* SPDX-License-Identifier: ISC */
/*
 * edge_tls.h: the edge's TLS context for http.tls, built from the bytes
 * the master read (common/tlsmat.h): the certificate chain and key, the
 * oldest version (http.tls.min_version; never below 1.2), the TLS 1.2
 * ciphers, ALPN http/1.1 only, and client certificates asked for and
 * checked against http.tls.client_ca_file when it is set (a client that
 * sends none is served; one that sends a certificate that does not
 * verify fails its handshake).
 */
#ifndef ANKUSA_EDGE_TLS_H
#define ANKUSA_EDGE_TLS_H

#include <stddef.h>

#include <openssl/ssl.h>

struct conf;
struct tlsmat;

/* The context, or NULL with the reason in err. */
SSL_CTX	*edge_tls_ctx(const struct conf *, const struct tlsmat *, char *err,
	    size_t errlen);
struct verify_peer;
/* The client certificate of a connection whose handshake is done, as
 * verification reads it (verify.h), or NULL: none was sent (or it did not
 * verify, which fails the handshake before this). */
struct verify_peer *edge_tls_peer(SSL *);
/* The latest OpenSSL error of this thread as text (for a log line). */
void	 edge_tls_error(char *buf, size_t len);

#endif
