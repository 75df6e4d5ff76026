/* SPDX-License-Identifier: ISC */
/*
 * nats_tool.c: the tests' JetStream client (tests/e2e/test_nats.py,
 * scripts/bench-nats), through libnats as the sink is.
 *
 *   nats_tool [opts] URL stream NAME SUBJECT
 *	create the stream NAME (file storage) over SUBJECT
 *   nats_tool [opts] URL dump NAME
 *	every message the stream holds, one JSON line each, in order:
 *	{"seq":n,"subject":..,"headers":{name:value},"data":"<base64>"}
 *   nats_tool [opts] URL count NAME
 *	the stream's message count
 *   nats_tool [opts] URL bench SUBJECT N SIZE
 *	N JetStream publishes of SIZE bytes, async, each acknowledged;
 *	prints "published N in S s: R/s"
 *
 *   nats_tool nkey
 *	a new user NKey: its seed and public key on one line (no server)
 *   nats_tool jwt
 *	a new operator, account and user for a server in operator mode
 *	(no server): lines "operator JWT", "account PUBLIC-KEY JWT" (its
 *	JetStream unlimited), "system PUBLIC-KEY JWT" (the server's system
 *	account) and "user SEED JWT" (of the first account), each JWT
 *	signed by its issuer's key
 *
 * opts: -u user -p password, -t token, -s user seed with -j its JWT, -c CA
 * file (then TLS) with -n the name expected in the certificate.  Exits 1 on any error, with a line.
 */
#include "config.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include <jansson.h>
#include <nats/nats.h>
#include <openssl/evp.h>
#include <openssl/rand.h>

#include "nkey.h"

static void
die(const char *what, natsStatus st)
{
	fprintf(stderr, "nats_tool: %s: %s (%s)\n", what,
	    natsStatus_GetText(st), nats_GetLastError(NULL));
	exit(1);
}

/* base64url without padding of n bytes, malloc'd. */
static char *
b64url(const unsigned char *p, int n)
{
	char *s;
	int i, k;

	if ((s = malloc(4 * ((size_t)n / 3 + 1) + 1)) == NULL)
		exit(1);
	k = EVP_EncodeBlock((unsigned char *)s, p, n);
	while (k > 0 && s[k - 1] == '=')
		s[--k] = '\0';
	for (i = 0; i < k; i++)
		s[i] = s[i] == '+' ? '-' : s[i] == '/' ? '_' : s[i];
	return s;
}

/* A key of type: its raw seed, its seed and public key. */
static void
newkey(uint8_t type, uint8_t raw[NKEY_SEED_RAW],
    char seed[NKEY_SEED_LEN + 1], char pub[NKEY_PUB_LEN + 1])
{
	if (RAND_bytes(raw, NKEY_SEED_RAW) != 1)
		exit(1);
	nkey_seed(type, raw, seed);
	if (nkey_public(type, seed, pub) == -1)
		exit(1);
}

/* Ed25519 of s with the raw seed (libnats's nats_Sign takes user seeds
 * alone). */
static void
sign(const uint8_t raw[NKEY_SEED_RAW], const char *s, unsigned char *sig,
    size_t *siglen)
{
	EVP_PKEY *pk;
	EVP_MD_CTX *md;

	if ((pk = EVP_PKEY_new_raw_private_key(EVP_PKEY_ED25519, NULL, raw,
	    NKEY_SEED_RAW)) == NULL || (md = EVP_MD_CTX_new()) == NULL ||
	    EVP_DigestSignInit(md, NULL, NULL, NULL, pk) != 1 ||
	    EVP_DigestSign(md, sig, siglen, (const unsigned char *)s,
	    strlen(s)) != 1)
		exit(1);
	EVP_MD_CTX_free(md);
	EVP_PKEY_free(pk);
}

/* A JWT of the claims nats (an object, consumed) for subject sub, issued
 * and signed by the key of raw seed iss (public key isspub). */
static char *
jwt(const uint8_t *iss, const char *isspub, const char *sub, json_t *nats)
{
	static const char hdr[] = "{\"typ\":\"JWT\",\"alg\":\"ed25519-nkey\"}";
	json_t *c = json_object();
	unsigned char sig[64];
	size_t siglen = sizeof(sig);
	char *cs, *h, *b, *input, *sg, *out;

	json_object_set_new(c, "jti", json_string(sub));
	json_object_set_new(c, "iat", json_integer((json_int_t)time(NULL)));
	json_object_set_new(c, "iss", json_string(isspub));
	json_object_set_new(c, "name", json_string("ankusa-test"));
	json_object_set_new(c, "sub", json_string(sub));
	json_object_set_new(c, "nats", nats);
	cs = json_dumps(c, JSON_COMPACT);
	json_decref(c);
	h = b64url((const unsigned char *)hdr, (int)strlen(hdr));
	b = b64url((const unsigned char *)cs, (int)strlen(cs));
	if (asprintf(&input, "%s.%s", h, b) == -1)
		exit(1);
	sign(iss, input, sig, &siglen);
	sg = b64url(sig, (int)siglen);
	if (asprintf(&out, "%s.%s", input, sg) == -1)
		exit(1);
	free(cs);
	free(h);
	free(b);
	free(input);
	free(sg);
	return out;
}

static int
jwts(void)
{
	char os[NKEY_SEED_LEN + 1], op[NKEY_PUB_LEN + 1];
	char as[NKEY_SEED_LEN + 1], ap[NKEY_PUB_LEN + 1];
	char us[NKEY_SEED_LEN + 1], up[NKEY_PUB_LEN + 1];
	char ss[NKEY_SEED_LEN + 1], sp[NKEY_PUB_LEN + 1];
	uint8_t o[NKEY_SEED_RAW], a[NKEY_SEED_RAW], u[NKEY_SEED_RAW];
	uint8_t a2[NKEY_SEED_RAW];
	json_t *lim;

	newkey(NKEY_OPERATOR, o, os, op);
	newkey(NKEY_ACCOUNT, a, as, ap);
	newkey(NKEY_USER, u, us, up);
	printf("operator %s\n", jwt(o, op, op, json_pack(
	    "{s:s, s:i}", "type", "operator", "version", 2)));
	lim = json_pack("{s:i, s:i, s:i, s:i, s:i, s:b, s:i, s:i, s:i, s:i, "
	    "s:i, s:i}", "subs", -1, "data", -1, "payload", -1, "imports", -1,
	    "exports", -1, "wildcards", 1, "conn", -1, "leaf", -1,
	    "mem_storage", -1, "disk_storage", -1, "streams", -1,
	    "consumer", -1);
	printf("account %s %s\n", ap, jwt(o, op, ap, json_pack(
	    "{s:o, s:{s:{}, s:{}}, s:s, s:i}", "limits", lim,
	    "default_permissions", "pub", "sub", "type", "account",
	    "version", 2)));
	/* The server's system account, which JetStream needs. */
	newkey(NKEY_ACCOUNT, a2, ss, sp);
	printf("system %s %s\n", sp, jwt(o, op, sp, json_pack(
	    "{s:s, s:i}", "type", "account", "version", 2)));
	printf("user %s %s\n", us, jwt(a, ap, up, json_pack(
	    "{s:{}, s:{}, s:i, s:i, s:i, s:s, s:i}", "pub", "sub", "subs", -1,
	    "data", -1, "payload", -1, "type", "user", "version", 2)));
	return 0;
}

static natsStatus
user_jwt(char **out, char **why, void *arg)
{
	if ((*out = strdup(arg)) == NULL)
		return NATS_NO_MEMORY;
	return NATS_OK;
}

static natsStatus
user_sign(char **why, unsigned char **sig, int *siglen, const char *nonce,
    void *seed)
{
	return nats_Sign(seed, nonce, sig, siglen);
}

static int
dump(jsCtx *js, const char *stream, int count_only)
{
	jsStreamInfo *si = NULL;
	jsErrCode ec = 0;
	natsMsg *m;
	natsStatus st;
	const char **keys, *v;
	uint64_t seq;
	json_t *o, *h;
	unsigned char *b64;
	int nk, i, len;
	char *line;

	if ((st = js_GetStreamInfo(&si, js, stream, NULL, &ec)) != NATS_OK)
		die("stream info", st);
	if (count_only) {
		printf("%llu\n", (unsigned long long)si->State.Msgs);
		jsStreamInfo_Destroy(si);
		return 0;
	}
	for (seq = si->State.FirstSeq; seq <= si->State.LastSeq &&
	    si->State.Msgs > 0; seq++) {
		m = NULL;
		if ((st = js_GetMsg(&m, js, stream, seq, NULL, &ec)) !=
		    NATS_OK) {
			if (st == NATS_NOT_FOUND)
				continue;
			die("get message", st);
		}
		o = json_object();
		h = json_object();
		json_object_set_new(o, "seq", json_integer((json_int_t)seq));
		json_object_set_new(o, "subject",
		    json_string(natsMsg_GetSubject(m)));
		keys = NULL;
		nk = 0;
		if (natsMsgHeader_Keys(m, &keys, &nk) == NATS_OK) {
			for (i = 0; i < nk; i++)
				if (natsMsgHeader_Get(m, keys[i], &v) ==
				    NATS_OK)
					json_object_set_new(h, keys[i],
					    json_string(v));
			free((void *)keys);
		}
		json_object_set_new(o, "headers", h);
		len = natsMsg_GetDataLength(m);
		if ((b64 = malloc(4 * ((size_t)len / 3 + 1) + 1)) == NULL)
			exit(1);
		EVP_EncodeBlock(b64, (const unsigned char *)natsMsg_GetData(m),
		    len);
		json_object_set_new(o, "data", json_string((char *)b64));
		free(b64);
		line = json_dumps(o, JSON_COMPACT);
		printf("%s\n", line);
		free(line);
		json_decref(o);
		natsMsg_Destroy(m);
	}
	jsStreamInfo_Destroy(si);
	return 0;
}

static int
bench(jsCtx *js, const char *subject, long n, long size)
{
	jsPubOptions po;
	struct timespec a, b;
	char *data;
	natsStatus st;
	double s;
	long i;

	if ((data = malloc(size)) == NULL)
		exit(1);
	memset(data, 'x', size);
	jsPubOptions_Init(&po);
	po.MaxWait = 30000;
	clock_gettime(CLOCK_MONOTONIC, &a);
	for (i = 0; i < n; i++)
		if ((st = js_PublishAsync(js, subject, data, (int)size, NULL)) !=
		    NATS_OK)
			die("publish", st);
	if ((st = js_PublishAsyncComplete(js, &po)) != NATS_OK)
		die("complete", st);
	clock_gettime(CLOCK_MONOTONIC, &b);
	s = (b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9;
	printf("published %ld in %.6f s: %.0f/s\n", n, s, n / s);
	free(data);
	return 0;
}

int
main(int argc, char *argv[])
{
	natsOptions *o = NULL;
	natsConnection *nc = NULL;
	jsCtx *js = NULL;
	jsOptions jo;
	jsStreamConfig sc;
	jsStreamInfo *si = NULL;
	jsErrCode ec = 0;
	natsStatus st;
	const char *user = NULL, *pass = NULL, *token = NULL, *ca = NULL;
	const char *name = NULL, *subjects[1], *ujwt = NULL, *useed = NULL;
	int ch, rc = 0;

	while ((ch = getopt(argc, argv, "c:j:n:p:s:t:u:")) != -1)
		switch (ch) {
		case 'c': ca = optarg; break;
		case 'j': ujwt = optarg; break;
		case 's': useed = optarg; break;
		case 'n': name = optarg; break;
		case 'p': pass = optarg; break;
		case 't': token = optarg; break;
		case 'u': user = optarg; break;
		default: exit(2);
		}
	argc -= optind;
	argv += optind;
	if (argc == 1 && strcmp(argv[0], "jwt") == 0)
		return jwts();
	if (argc == 1 && strcmp(argv[0], "nkey") == 0) {
		uint8_t raw[NKEY_SEED_RAW];
		char seed[NKEY_SEED_LEN + 1], pub[NKEY_PUB_LEN + 1];

		if (RAND_bytes(raw, sizeof(raw)) != 1)
			exit(1);
		nkey_user_seed(raw, seed);
		if (nkey_user_public(seed, pub) == -1)
			exit(1);
		printf("%s %s\n", seed, pub);
		return 0;
	}
	if (argc < 3) {
		fprintf(stderr, "usage: nats_tool [-u user -p pass] [-t token] "
		    "[-c ca -n name] URL stream|dump|count|bench ...\n");
		exit(2);
	}
	if ((st = natsOptions_Create(&o)) != NATS_OK ||
	    (st = natsOptions_SetURL(o, argv[0])) != NATS_OK ||
	    (st = natsOptions_SetTimeout(o, 5000)) != NATS_OK)
		die("options", st);
	if (user != NULL && (st = natsOptions_SetUserInfo(o, user, pass)) !=
	    NATS_OK)
		die("user", st);
	if (token != NULL && (st = natsOptions_SetToken(o, token)) != NATS_OK)
		die("token", st);
	if (useed != NULL && ujwt != NULL && (st =
	    natsOptions_SetUserCredentialsCallbacks(o, user_jwt, (void *)ujwt,
	    user_sign, (void *)useed)) != NATS_OK)
		die("credentials", st);
	if (ca != NULL && ((st = natsOptions_SetSecure(o, true)) != NATS_OK ||
	    (st = natsOptions_LoadCATrustedCertificates(o, ca)) != NATS_OK ||
	    (name != NULL && (st = natsOptions_SetExpectedHostname(o,
	    name)) != NATS_OK)))
		die("tls", st);
	if ((st = natsConnection_Connect(&nc, o)) != NATS_OK)
		die("connect", st);
	jsOptions_Init(&jo);
	jo.Wait = 10000;
	jo.PublishAsync.MaxPending = 4096;
	if ((st = natsConnection_JetStream(&js, nc, &jo)) != NATS_OK)
		die("jetstream", st);

	if (strcmp(argv[1], "stream") == 0 && argc == 4) {
		jsStreamConfig_Init(&sc);
		sc.Name = argv[2];
		subjects[0] = argv[3];
		sc.Subjects = subjects;
		sc.SubjectsLen = 1;
		sc.Storage = js_FileStorage;
		if ((st = js_AddStream(&si, js, &sc, NULL, &ec)) != NATS_OK)
			die("add stream", st);
		jsStreamInfo_Destroy(si);
	} else if (strcmp(argv[1], "dump") == 0 && argc == 3)
		rc = dump(js, argv[2], 0);
	else if (strcmp(argv[1], "count") == 0 && argc == 3)
		rc = dump(js, argv[2], 1);
	else if (strcmp(argv[1], "bench") == 0 && argc == 5)
		rc = bench(js, argv[2], atol(argv[3]), atol(argv[4]));
	else {
		fprintf(stderr, "nats_tool: bad command\n");
		rc = 2;
	}
	jsCtx_Destroy(js);
	natsConnection_Destroy(nc);
	natsOptions_Destroy(o);
	nats_Close();
	return rc;
}
