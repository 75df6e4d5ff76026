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
 *
 * opts: -u user -p password, -t token, -c CA file (then TLS) with -n the
 * name expected in the certificate.  Exits 1 on any error, with a line.
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
	const char *name = NULL, *subjects[1];
	int ch, rc = 0;

	while ((ch = getopt(argc, argv, "c:n:p:t:u:")) != -1)
		switch (ch) {
		case 'c': ca = optarg; break;
		case 'n': name = optarg; break;
		case 'p': pass = optarg; break;
		case 't': token = optarg; break;
		case 'u': user = optarg; break;
		default: exit(2);
		}
	argc -= optind;
	argv += optind;
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
