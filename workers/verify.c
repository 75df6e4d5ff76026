/* SPDX-License-Identifier: ISC */
/*
 * verify.c: webhook signature verification; see verify.h.
 *
 * Every preset is written as the custom hmac descriptor it amounts to
 * (struct scheme), so one code path parses headers and computes HMACs for
 * all of them.  The signed bytes are never assembled: the template is fed
 * piece by piece to the MAC, so the body is not copied.
 */
#include "config.h"

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

#include <openssl/core_names.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/params.h>

#include "b64.h"
#include "conf.h"
#include "keys.h"
#include "log.h"
#include "sha256.h"
#include "verify.h"

#define MD_MAX		64	/* SHA-512 */
#define TS_MAX		1000000000000000000ULL	/* saturate here: 10^18 */
#define HNAME_MAX	256	/* longest {header:NAME} name */

enum parse {
	PARSE_WHOLE = 0,	/* the header is one signature */
	PARSE_CSV,		/* k=v,k=v: signatures under sig_key */
	PARSE_SPACE,		/* space-separated "<version>,<sig>" tokens */
};

/* A verification scheme: a preset or the custom descriptor. */
struct scheme {
	const char	*sig_header;	/* carries the signature(s) */
	const char	*prefix;	/* whole: before the signature */
	enum parse	 parse;
	const char	*sig_key;	/* csv: the key of a signature */
	const char	*version;	/* space: the version of a token */
	size_t		 versionlen;	/* without a trailing ',' */
	const char	*ts_header;	/* the timestamp's header, or NULL */
	int		 ts_csv;	/* csv: the "t" item is the timestamp */
	const char	*tmpl;		/* the signed bytes */
	const char	*md;		/* OpenSSL digest name */
	size_t		 mdlen;
	int		 base64;	/* else hex */
};

/* The signatures of a header that can match: decoded, mdlen bytes each. */
struct sigs {
	unsigned char	 dec[VERIFY_HEADER_MAX];
	int		 n;		/* of mdlen bytes in dec */
	int		 seen;		/* well-formed ones, of any length */
	const char	*ts;		/* csv: the "t" item, or NULL */
	size_t		 tslen;
};

/* What the template's {ts} and {header:NAME} read. */
struct inputs {
	const struct keys_hdrs	*hdrs;
	const void		*body;
	size_t			 bodylen;
	const char		*ts;
	size_t			 tslen;
};

static int	 scheme_of(const struct verify_conf *, struct scheme *);
static int	 tmpl_has_ts(const char *);
static int	 tmpl_feed(const char *, const struct inputs *, EVP_MAC_CTX *);
static enum verify_reason sigs_parse(const struct scheme *, const char *,
		    size_t, struct sigs *);
static enum verify_reason sig_add(const struct scheme *, struct sigs *,
		    const char *, size_t);
static int	 hex_decode(const char *, size_t, unsigned char *, size_t *);
static int	 ts_parse(const char *, size_t, uint64_t *);
static int	 ts_within(uint64_t, int64_t, uint32_t);
static void	 trim(const char **, size_t *);
static int	 eq(const char *, size_t, const char *);

/* The presets, indexed by enum verify_type; NULL: not a preset. */
static const struct scheme presets[] = {
	[VERIFY_STRIPE] = {
		.sig_header = "Stripe-Signature", .parse = PARSE_CSV,
		.sig_key = "v1", .ts_csv = 1, .tmpl = "{ts}.{body}",
		.md = "SHA256", .mdlen = 32,
	},
	[VERIFY_GITHUB] = {
		.sig_header = "X-Hub-Signature-256", .prefix = "sha256=",
		.parse = PARSE_WHOLE, .tmpl = "{body}", .md = "SHA256",
		.mdlen = 32,
	},
	[VERIFY_STANDARD_WEBHOOKS] = {
		.sig_header = "webhook-signature", .parse = PARSE_SPACE,
		.version = "v1", .versionlen = 2,
		.ts_header = "webhook-timestamp",
		.tmpl = "{header:webhook-id}.{ts}.{body}", .md = "SHA256",
		.mdlen = 32, .base64 = 1,
	},
	[VERIFY_SHOPIFY] = {
		.sig_header = "X-Shopify-Hmac-SHA256", .parse = PARSE_WHOLE,
		.tmpl = "{body}", .md = "SHA256", .mdlen = 32, .base64 = 1,
	},
	[VERIFY_SLACK] = {
		.sig_header = "X-Slack-Signature", .prefix = "v0=",
		.parse = PARSE_WHOLE, .ts_header = "X-Slack-Request-Timestamp",
		.tmpl = "v0:{ts}:{body}", .md = "SHA256", .mdlen = 32,
	},
	/* Meta (Facebook, Instagram, WhatsApp) signs as GitHub does, with
	 * the app secret. */
	[VERIFY_META] = {
		.sig_header = "X-Hub-Signature-256", .prefix = "sha256=",
		.parse = PARSE_WHOLE, .tmpl = "{body}", .md = "SHA256",
		.mdlen = 32,
	},
	/* Zoom signs as Slack does, with the secret token. */
	[VERIFY_ZOOM] = {
		.sig_header = "x-zm-signature", .prefix = "v0=",
		.parse = PARSE_WHOLE, .ts_header = "x-zm-request-timestamp",
		.tmpl = "v0:{ts}:{body}", .md = "SHA256", .mdlen = 32,
	},
};

const char *
verify_reason_name(enum verify_reason r)
{
	switch (r) {
	case VERIFY_OK:
		return "ok";
	case VERIFY_MISSING_SIGNATURE:
		return "missing_signature";
	case VERIFY_MALFORMED_SIGNATURE:
		return "malformed_signature";
	case VERIFY_NO_MATCH:
		return "no_match";
	case VERIFY_TIMESTAMP_OUT_OF_TOLERANCE:
		return "timestamp_out_of_tolerance";
	case VERIFY_BAD_SECRET:
		return "bad_secret";
	case VERIFY_NO_CLIENT_CERTIFICATE:
		return "no_client_certificate";
	case VERIFY_CLIENT_CERTIFICATE_MISMATCH:
		return "client_certificate_mismatch";
	}
	return "unknown";
}

int
verify_reads_header(const struct verify_conf *v, const char *lname)
{
	struct scheme sc;
	const char *t, *end;
	size_t n = strlen(lname);

	if (v->type == VERIFY_NONE || scheme_of(v, &sc) == -1)
		return 0;
	if ((sc.sig_header != NULL && strcasecmp(sc.sig_header, lname) == 0) ||
	    (sc.ts_header != NULL && strcasecmp(sc.ts_header, lname) == 0))
		return 1;
	for (t = sc.tmpl; t != NULL && (t = strstr(t, "{header:")) != NULL;
	    t = end) {
		t += 8;
		if ((end = strchr(t, '}')) == NULL)
			break;
		if ((size_t)(end - t) == n && strncasecmp(t, lname, n) == 0)
			return 1;
	}
	return 0;
}

/* The scheme of a verify section; -1 if it cannot be used. */
static int
scheme_of(const struct verify_conf *v, struct scheme *sc)
{
	const char *s;

	if (v->type != VERIFY_HMAC) {
		if ((size_t)v->type >= sizeof(presets) / sizeof(presets[0]) ||
		    presets[v->type].sig_header == NULL)
			return -1;
		*sc = presets[v->type];
		return 0;
	}

	memset(sc, 0, sizeof(*sc));
	if ((sc->sig_header = v->signature_header) == NULL ||
	    (sc->tmpl = v->signed_template) == NULL)
		return -1;
	s = v->hash != NULL ? v->hash : "sha256";
	if (strcmp(s, "sha256") == 0)
		sc->md = "SHA256", sc->mdlen = 32;
	else if (strcmp(s, "sha512") == 0)
		sc->md = "SHA512", sc->mdlen = 64;
	else if (strcmp(s, "sha1") == 0)
		sc->md = "SHA1", sc->mdlen = 20;
	else
		return -1;
	s = v->encoding != NULL ? v->encoding : "hex";
	if (strcmp(s, "base64") == 0)
		sc->base64 = 1;
	else if (strcmp(s, "hex") != 0)
		return -1;
	s = v->parse != NULL ? v->parse : "whole";
	if (strcmp(s, "whole") == 0) {
		sc->parse = PARSE_WHOLE;
		if (v->sig_prefix != NULL && v->sig_prefix[0] != '\0')
			sc->prefix = v->sig_prefix;
	} else if (strcmp(s, "csv_pairs") == 0) {
		sc->parse = PARSE_CSV;
		if ((sc->sig_key = v->sig_key) == NULL)
			return -1;
		/* Without a header the timestamp is the pair "t". */
		sc->ts_csv = v->timestamp_header == NULL;
	} else if (strcmp(s, "space_versions") == 0) {
		sc->parse = PARSE_SPACE;
		if ((sc->version = v->version) == NULL)
			return -1;
		/* "v1" and "v1," (the token prefix) mean the same. */
		sc->versionlen = strlen(sc->version);
		if (sc->versionlen > 0 &&
		    sc->version[sc->versionlen - 1] == ',')
			sc->versionlen--;
		if (sc->versionlen == 0)
			return -1;
	} else
		return -1;
	sc->ts_header = v->timestamp_header;
	return 0;
}

static int
eq(const char *s, size_t len, const char *lit)
{
	return strlen(lit) == len && memcmp(s, lit, len) == 0;
}

/* Strip SP and HTAB at both ends. */
static void
trim(const char **s, size_t *len)
{
	while (*len > 0 && (**s == ' ' || **s == '\t')) {
		(*s)++;
		(*len)--;
	}
	while (*len > 0 && ((*s)[*len - 1] == ' ' || (*s)[*len - 1] == '\t'))
		(*len)--;
}

/* Hex of either case, an even number of digits, at least one byte. */
static int
hex_decode(const char *s, size_t len, unsigned char *out, size_t *outlen)
{
	size_t i;
	int hi = 0, lo;
	unsigned char c;

	if (len == 0 || len % 2 != 0)
		return -1;
	for (i = 0; i < len; i++) {
		c = s[i];
		if (c >= '0' && c <= '9')
			lo = c - '0';
		else if (c >= 'a' && c <= 'f')
			lo = c - 'a' + 10;
		else if (c >= 'A' && c <= 'F')
			lo = c - 'A' + 10;
		else
			return -1;
		if (i % 2 == 0)
			hi = lo;
		else
			out[i / 2] = (unsigned char)(hi << 4 | lo);
	}
	*outlen = len / 2;
	return 0;
}

/* Decode one presented signature; keep it if it has the digest's length. */
static enum verify_reason
sig_add(const struct scheme *sc, struct sigs *sg, const char *s, size_t len)
{
	unsigned char tmp[VERIFY_HEADER_MAX];
	size_t n;

	/* len is at most the header's length, so tmp has room. */
	if (len > VERIFY_HEADER_MAX)
		return VERIFY_MALFORMED_SIGNATURE;
	if (sc->base64) {
		if (B64_DECODED_MAX(len) > sizeof(tmp) ||
		    b64_decode(s, len, tmp, &n) == -1)
			return VERIFY_MALFORMED_SIGNATURE;
	} else if (hex_decode(s, len, tmp, &n) == -1)
		return VERIFY_MALFORMED_SIGNATURE;
	sg->seen++;
	/*
	 * Each kept signature took at least mdlen header bytes (hex 2 per
	 * byte, base64 4 per 3), so dec cannot overflow.
	 */
	if (n == sc->mdlen && (size_t)(sg->n + 1) * n <= sizeof(sg->dec)) {
		memcpy(sg->dec + (size_t)sg->n * n, tmp, n);
		sg->n++;
	}
	return VERIFY_OK;
}

/* Split the signature header into signatures and, under csv, "t". */
static enum verify_reason
sigs_parse(const struct scheme *sc, const char *h, size_t hlen,
    struct sigs *sg)
{
	enum verify_reason r;
	const char *item, *end = h + hlen, *sep, *val;
	size_t ilen, klen;

	switch (sc->parse) {
	case PARSE_WHOLE:
		if (sc->prefix != NULL) {
			klen = strlen(sc->prefix);
			if (hlen < klen || memcmp(h, sc->prefix, klen) != 0)
				return VERIFY_MALFORMED_SIGNATURE;
			h += klen;
			hlen -= klen;
		}
		if ((r = sig_add(sc, sg, h, hlen)) != VERIFY_OK)
			return r;
		break;
	case PARSE_CSV:
		/* Every item is key=value; empty items are garbage. */
		for (item = h;; item = sep + 1) {
			if ((sep = memchr(item, ',', end - item)) == NULL)
				sep = end;
			ilen = sep - item;
			trim(&item, &ilen);
			if (ilen == 0 ||
			    (val = memchr(item, '=', ilen)) == NULL)
				return VERIFY_MALFORMED_SIGNATURE;
			klen = val - item;
			val++;
			if (eq(item, klen, sc->sig_key)) {
				r = sig_add(sc, sg, val, ilen - klen - 1);
				if (r != VERIFY_OK)
					return r;
			} else if (sc->ts_csv && eq(item, klen, "t")) {
				if (sg->ts != NULL)
					return VERIFY_MALFORMED_SIGNATURE;
				sg->ts = val;
				sg->tslen = ilen - klen - 1;
			}
			/* Other keys (Stripe's v0, say) are not ours. */
			if (sep == end)
				break;
		}
		break;
	case PARSE_SPACE:
		/* Runs of spaces are one separator; other versions are
		 * skipped; a token without a comma is garbage. */
		for (item = h;; item = sep + 1) {
			if ((sep = memchr(item, ' ', end - item)) == NULL)
				sep = end;
			if ((ilen = sep - item) == 0) {
				if (sep == end)
					break;
				continue;
			}
			if ((val = memchr(item, ',', ilen)) == NULL)
				return VERIFY_MALFORMED_SIGNATURE;
			klen = val - item;
			val++;
			if (klen == sc->versionlen &&
			    memcmp(item, sc->version, klen) == 0) {
				r = sig_add(sc, sg, val, ilen - klen - 1);
				if (r != VERIFY_OK)
					return r;
			}
			if (sep == end)
				break;
		}
		break;
	}
	return sg->seen > 0 ? VERIFY_OK : VERIFY_MALFORMED_SIGNATURE;
}

/* 1*DIGIT, saturating at TS_MAX (far out of any tolerance). */
static int
ts_parse(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;
	size_t i;

	if (len == 0)
		return -1;
	for (i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return -1;
		if (v < TS_MAX)
			v = v * 10 + (uint64_t)(s[i] - '0');
	}
	*out = v < TS_MAX ? v : TS_MAX;
	return 0;
}

/*
 * |now - ts| <= tol.  ts is at most 10^18 and now any int64, so the true
 * difference is below 2^64: computed in unsigned arithmetic, it is exact.
 */
static int
ts_within(uint64_t ts, int64_t now, uint32_t tol)
{
	uint64_t d;

	if ((int64_t)ts >= now)
		d = ts - (uint64_t)now;
	else
		d = (uint64_t)now - ts;
	return d <= tol;
}

static int
tmpl_has_ts(const char *t)
{
	return strstr(t, "{ts}") != NULL;
}

/*
 * Feed the signed bytes to ctx (NULL: only check that every header the
 * template names is present).  {body}, {ts} and {header:NAME} are replaced;
 * any other brace is a literal byte.  -1 if a named header is absent.
 */
static int
tmpl_feed(const char *t, const struct inputs *in, EVP_MAC_CTX *ctx)
{
	const char *lit = t, *p = t, *close, *v;
	char name[HNAME_MAX];
	size_t n, len;

#define FEED(d, l) do {							\
	if (ctx != NULL && (l) > 0 &&					\
	    !EVP_MAC_update(ctx, (const unsigned char *)(d), (l)))	\
		fatalx("verify: EVP_MAC_update failed");		\
} while (0)

	while ((p = strchr(p, '{')) != NULL) {
		v = NULL;
		len = 0;
		n = 0;
		if (strncmp(p, "{body}", 6) == 0) {
			v = in->body != NULL ? in->body : "";
			len = in->bodylen;
			n = 6;
		} else if (strncmp(p, "{ts}", 4) == 0) {
			v = in->ts != NULL ? in->ts : "";
			len = in->tslen;
			n = 4;
		} else if (strncmp(p, "{header:", 8) == 0 &&
		    (close = strchr(p + 8, '}')) != NULL &&
		    (size_t)(close - (p + 8)) < sizeof(name)) {
			memcpy(name, p + 8, close - (p + 8));
			name[close - (p + 8)] = '\0';
			if ((v = keys_header(in->hdrs, name, &len)) == NULL)
				return -1;
			n = close + 1 - p;
		}
		if (n == 0) {
			p++;
			continue;
		}
		FEED(lit, (size_t)(p - lit));
		FEED(v, len);
		p += n;
		lit = p;
	}
	FEED(lit, strlen(lit));
#undef FEED
	return 0;
}

enum verify_reason
verify_request(const struct verify_conf *v, const struct keys_hdrs *hdrs,
    const void *body, size_t len, int64_t now_s)
{
	struct scheme sc;
	struct sigs sg;
	struct inputs in;
	enum verify_reason r;
	EVP_MAC_CTX *ctx;
	OSSL_PARAM params[2];
	unsigned char md[MD_MAX];
	const char *h, *ts = NULL;
	size_t hlen, tslen = 0, mdlen;
	uint64_t tsv;
	uint32_t tol;
	int i, j, match = 0;

	if (v->type == VERIFY_NONE)
		return VERIFY_OK;
	if (v->type == VERIFY_MTLS)
		return VERIFY_NO_CLIENT_CERTIFICATE;
	if (v->nsecrets <= 0 || v->nsecrets > CONF_MAX_SECRETS ||
	    scheme_of(v, &sc) == -1)
		return VERIFY_BAD_SECRET;
	for (i = 0; i < v->nsecrets; i++)
		if (v->secrets[i].data == NULL || v->secrets[i].len == 0)
			return VERIFY_BAD_SECRET;

	if ((h = keys_header(hdrs, sc.sig_header, &hlen)) == NULL)
		return VERIFY_MISSING_SIGNATURE;
	if (hlen == 0 || hlen > VERIFY_HEADER_MAX)
		return VERIFY_MALFORMED_SIGNATURE;
	memset(&sg, 0, sizeof(sg));
	if ((r = sigs_parse(&sc, h, hlen, &sg)) != VERIFY_OK)
		return r;

	/* The timestamp, before any hashing. */
	if (sc.ts_header != NULL)
		ts = keys_header(hdrs, sc.ts_header, &tslen);
	else if (sc.ts_csv) {
		ts = sg.ts;
		tslen = sg.tslen;
	}
	if (ts == NULL && (sc.ts_header != NULL || tmpl_has_ts(sc.tmpl)))
		return VERIFY_MALFORMED_SIGNATURE;
	if (ts != NULL) {
		if (ts_parse(ts, tslen, &tsv) == -1)
			return VERIFY_MALFORMED_SIGNATURE;
		tol = v->tolerance_seconds != 0 ? v->tolerance_seconds :
		    VERIFY_TOLERANCE_DEFAULT;
		if (!ts_within(tsv, now_s, tol))
			return VERIFY_TIMESTAMP_OUT_OF_TOLERANCE;
	}

	in.hdrs = hdrs;
	in.body = body;
	in.bodylen = len;
	in.ts = ts;
	in.tslen = tslen;
	if (tmpl_feed(sc.tmpl, &in, NULL) == -1)
		return VERIFY_MALFORMED_SIGNATURE;
	/* Well-formed, but none has the digest's length. */
	if (sg.n == 0)
		return VERIFY_NO_MATCH;

	if ((ctx = EVP_MAC_CTX_new(hmac_alg())) == NULL)
		fatalx("verify: cannot set up HMAC");
	params[0] = OSSL_PARAM_construct_utf8_string(OSSL_MAC_PARAM_DIGEST,
	    (char *)sc.md, 0);
	params[1] = OSSL_PARAM_construct_end();
	/* Every secret, every signature: rotation puts the match anywhere. */
	for (i = 0; i < v->nsecrets && !match; i++) {
		if (!EVP_MAC_init(ctx, v->secrets[i].data, v->secrets[i].len,
		    params))
			fatalx("verify: EVP_MAC_init failed");
		tmpl_feed(sc.tmpl, &in, ctx);
		if (!EVP_MAC_final(ctx, md, &mdlen, sizeof(md)) ||
		    mdlen != sc.mdlen)
			fatalx("verify: EVP_MAC_final failed");
		for (j = 0; j < sg.n && !match; j++)
			match = CRYPTO_memcmp(md, sg.dec + (size_t)j * mdlen,
			    mdlen) == 0;
	}
	EVP_MAC_CTX_free(ctx);
	OPENSSL_cleanse(md, sizeof(md));
	return match ? VERIFY_OK : VERIFY_NO_MATCH;
}

static int	fingerprint_match(const char *, const unsigned char *);

void
verify_peer_free(struct verify_peer *p)
{
	int i;

	if (p == NULL)
		return;
	free(p->subject);
	for (i = 0; i < p->nsans; i++)
		free(p->sans[i]);
	free(p);
}

/* The configured fingerprint (hex, colons allowed: conf_check.c) against
 * the certificate's SHA-256. */
static int
fingerprint_match(const char *hex, const unsigned char *md)
{
	unsigned char b[32];
	size_t n = 0;
	int hi = -1, d;

	for (; *hex != '\0'; hex++) {
		if (*hex == ':')
			continue;
		if ((d = OPENSSL_hexchar2int((unsigned char)*hex)) < 0 ||
		    (hi == -1 && n == sizeof(b)))
			return 0;
		if (hi == -1)
			hi = d;
		else {
			b[n++] = (unsigned char)(hi << 4 | d);
			hi = -1;
		}
	}
	return n == sizeof(b) && hi == -1 &&
	    CRYPTO_memcmp(b, md, sizeof(b)) == 0;
}

enum verify_reason
verify_mtls(const struct verify_conf *v, const struct verify_peer *peer)
{
	int i, found;

	if (peer == NULL)
		return VERIFY_NO_CLIENT_CERTIFICATE;
	if (v->mtls_subject != NULL && (peer->subject == NULL ||
	    strcmp(v->mtls_subject, peer->subject) != 0))
		return VERIFY_CLIENT_CERTIFICATE_MISMATCH;
	if (v->mtls_san != NULL) {
		for (found = 0, i = 0; i < peer->nsans && !found; i++)
			found = strcasecmp(v->mtls_san, peer->sans[i]) == 0;
		if (!found)
			return VERIFY_CLIENT_CERTIFICATE_MISMATCH;
	}
	if (v->mtls_fingerprint != NULL &&
	    !fingerprint_match(v->mtls_fingerprint, peer->sha256))
		return VERIFY_CLIENT_CERTIFICATE_MISMATCH;
	return VERIFY_OK;
}
