/* SPDX-License-Identifier: ISC */
/*
 * edge_tls.c: the edge's TLS context; see edge_tls.h.  The PEM is parsed
 * from memory: the edge, in its sandbox, opens no file.
 */
#include "config.h"

#include <sys/socket.h>

#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <openssl/bio.h>
#include <openssl/err.h>
#include <openssl/pem.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <openssl/x509v3.h>

#include "conf.h"
#include "edge_tls.h"
#include "log.h"
#include "tlsmat.h"
#include "verify.h"

/* ALPN: the one protocol the edge speaks, in the wire's form. */
static const unsigned char alpn_http11[] = "\x08http/1.1";

static int	alpn_select(SSL *, const unsigned char **, unsigned char *,
		    const unsigned char *, unsigned int, void *);
static int	use_chain(SSL_CTX *, const struct tlsmat *);
static int	use_key(SSL_CTX *, const struct tlsmat *);
static int	use_client_ca(SSL_CTX *, const struct tlsmat *);
static char	*san_value(const GENERAL_NAME *);

void
edge_tls_error(char *buf, size_t len)
{
	unsigned long e = ERR_peek_last_error();

	if (e == 0)
		snprintf(buf, len, "no OpenSSL error");
	else
		ERR_error_string_n(e, buf, len);
	ERR_clear_error();
}

/* http/1.1 when the client offers it; a client that offers only others
 * (h2) gets the no_application_protocol alert (RFC 7301): it would not
 * understand our answers.  A client without ALPN is served. */
static int
alpn_select(SSL *ssl, const unsigned char **out, unsigned char *outlen,
    const unsigned char *in, unsigned int inlen, void *arg)
{
	unsigned char *sel;

	if (SSL_select_next_proto(&sel, outlen, alpn_http11,
	    sizeof(alpn_http11) - 1, in, inlen) != OPENSSL_NPN_NEGOTIATED)
		return SSL_TLSEXT_ERR_ALERT_FATAL;
	*out = sel;
	return SSL_TLSEXT_ERR_OK;
}

/* The first certificate is the server's, the rest its chain. */
static int
use_chain(SSL_CTX *ctx, const struct tlsmat *m)
{
	BIO *b;
	X509 *x;
	int rc = -1;

	if ((b = BIO_new_mem_buf(m->cert, (int)m->certlen)) == NULL)
		return -1;
	if ((x = PEM_read_bio_X509_AUX(b, NULL, NULL, NULL)) == NULL ||
	    SSL_CTX_use_certificate(ctx, x) != 1)
		goto done;
	X509_free(x);
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL)
		if (SSL_CTX_add0_chain_cert(ctx, x) != 1)
			goto done;
	/* The end of the PEM is an error on the queue, not one of ours. */
	ERR_clear_error();
	rc = 0;
	x = NULL;
 done:
	X509_free(x);
	BIO_free(b);
	return rc;
}

static int
use_key(SSL_CTX *ctx, const struct tlsmat *m)
{
	EVP_PKEY *k;
	BIO *b;
	int rc = -1;

	if ((b = BIO_new_mem_buf(m->key, (int)m->keylen)) == NULL)
		return -1;
	if ((k = PEM_read_bio_PrivateKey(b, NULL, NULL, NULL)) != NULL &&
	    SSL_CTX_use_PrivateKey(ctx, k) == 1 &&
	    SSL_CTX_check_private_key(ctx) == 1)
		rc = 0;
	EVP_PKEY_free(k);
	BIO_free(b);
	return rc;
}

/* The client CAs: trusted for the check, and named to the client. */
static int
use_client_ca(SSL_CTX *ctx, const struct tlsmat *m)
{
	X509_STORE *st = SSL_CTX_get_cert_store(ctx);
	STACK_OF(X509_NAME) *names;
	BIO *b;
	X509 *x;
	int n = 0;

	if ((names = sk_X509_NAME_new_null()) == NULL)
		return -1;
	if ((b = BIO_new_mem_buf(m->ca, (int)m->calen)) == NULL) {
		sk_X509_NAME_free(names);
		return -1;
	}
	while ((x = PEM_read_bio_X509(b, NULL, NULL, NULL)) != NULL) {
		if (X509_STORE_add_cert(st, x) != 1 ||
		    sk_X509_NAME_push(names,
		    X509_NAME_dup(X509_get_subject_name(x))) == 0) {
			X509_free(x);
			BIO_free(b);
			sk_X509_NAME_pop_free(names, X509_NAME_free);
			return -1;
		}
		X509_free(x);
		n++;
	}
	ERR_clear_error();
	BIO_free(b);
	if (n == 0) {
		sk_X509_NAME_free(names);
		return -1;
	}
	SSL_CTX_set_client_CA_list(ctx, names);
	SSL_CTX_set_verify(ctx, SSL_VERIFY_PEER, NULL);
	return 0;
}

SSL_CTX *
edge_tls_ctx(const struct conf *cf, const struct tlsmat *m, char *err,
    size_t errlen)
{
	SSL_CTX *ctx;
	char e[256];
	const char *what;

	if ((ctx = SSL_CTX_new(TLS_server_method())) == NULL) {
		what = "SSL_CTX_new";
		goto fail;
	}
	what = "http.tls.min_version";
	if (SSL_CTX_set_min_proto_version(ctx,
	    cf->http.tls.min_version == CONF_TLS_1_3 ? TLS1_3_VERSION :
	    TLS1_2_VERSION) != 1)
		goto fail;
	what = "http.tls.ciphers";
	if (cf->http.tls.ciphers != NULL &&
	    SSL_CTX_set_cipher_list(ctx, cf->http.tls.ciphers) != 1)
		goto fail;
	what = "http.tls.cert_file";
	if (use_chain(ctx, m) == -1)
		goto fail;
	what = "http.tls.key_file";
	if (use_key(ctx, m) == -1)
		goto fail;
	what = "http.tls.client_ca_file";
	if (m->ca != NULL && use_client_ca(ctx, m) == -1)
		goto fail;
	/* Renegotiation is a client's lever on our CPU; tickets are kept
	 * (resumption is cheap), each edge with keys of its own. */
	SSL_CTX_set_options(ctx, SSL_OP_NO_RENEGOTIATION |
	    SSL_OP_CIPHER_SERVER_PREFERENCE);
	SSL_CTX_set_mode(ctx, SSL_MODE_RELEASE_BUFFERS);
	SSL_CTX_set_alpn_select_cb(ctx, alpn_select, NULL);
	return ctx;
 fail:
	edge_tls_error(e, sizeof(e));
	snprintf(err, errlen, "%s: %s", what, e);
	SSL_CTX_free(ctx);
	return NULL;
}

/* A subjectAltName's value as text, bare: DNS, URI, email, IP; NULL for
 * the other kinds or one that holds a NUL. */
static char *
san_value(const GENERAL_NAME *g)
{
	const ASN1_STRING *s;
	char buf[INET6_ADDRSTRLEN], *v;
	int len;

	switch (g->type) {
	case GEN_DNS:
	case GEN_URI:
	case GEN_EMAIL:
		s = g->d.ia5;
		len = ASN1_STRING_length(s);
		if (len < 0 || memchr(ASN1_STRING_get0_data(s), '\0',
		    (size_t)len) != NULL)
			return NULL;
		if ((v = malloc((size_t)len + 1)) == NULL)
			fatal("edge_tls_peer");
		memcpy(v, ASN1_STRING_get0_data(s), (size_t)len);
		v[len] = '\0';
		return v;
	case GEN_IPADD:
		s = g->d.ip;
		len = ASN1_STRING_length(s);
		if ((len != 4 && len != 16) || inet_ntop(len == 4 ? AF_INET :
		    AF_INET6, ASN1_STRING_get0_data(s), buf, sizeof(buf)) ==
		    NULL)
			return NULL;
		if ((v = strdup(buf)) == NULL)
			fatal("edge_tls_peer");
		return v;
	default:
		return NULL;
	}
}

struct verify_peer *
edge_tls_peer(SSL *ssl)
{
	struct verify_peer *p;
	GENERAL_NAMES *gens;
	X509 *x;
	BIO *b;
	char *v;
	unsigned int mdlen;
	long n;
	int i;

	if ((x = SSL_get0_peer_certificate(ssl)) == NULL ||
	    SSL_get_verify_result(ssl) != X509_V_OK)
		return NULL;
	if ((p = calloc(1, sizeof(*p))) == NULL)
		fatal("edge_tls_peer");
	if ((b = BIO_new(BIO_s_mem())) == NULL ||
	    X509_NAME_print_ex(b, X509_get_subject_name(x), 0,
	    XN_FLAG_RFC2253) < 0 || BIO_write(b, "", 1) != 1 ||
	    (n = BIO_get_mem_data(b, &v)) <= 0 ||
	    (p->subject = strdup(v)) == NULL)
		fatalx("edge_tls_peer: subject");
	BIO_free(b);
	gens = X509_get_ext_d2i(x, NID_subject_alt_name, NULL, NULL);
	for (i = 0; gens != NULL && i < sk_GENERAL_NAME_num(gens) &&
	    p->nsans < VERIFY_PEER_SANS; i++)
		if ((v = san_value(sk_GENERAL_NAME_value(gens, i))) != NULL)
			p->sans[p->nsans++] = v;
	GENERAL_NAMES_free(gens);
	if (X509_digest(x, EVP_sha256(), p->sha256, &mdlen) != 1 ||
	    mdlen != sizeof(p->sha256))
		fatalx("edge_tls_peer: digest");
	return p;
}
