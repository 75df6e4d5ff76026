/* SPDX-License-Identifier: ISC */
/*
 * fuzz_proxyproto.c: a libFuzzer target for the PROXY protocol header
 * (workers/proxyproto.c), the first bytes an edge reads from a trusted
 * proxy's connection.
 *
 * The input is the connection's first bytes.  Besides what the sanitizers
 * catch, it checks the parser's contract on every input: a header found
 * is no longer than the bytes given and at most PROXYPROTO_V2_MAX (v1:
 * PROXYPROTO_V1_MAX); the same header is found from its own bytes alone;
 * every shorter prefix of it asks for more, never errs; an address found
 * is IPv4 or IPv6 with its length; an error has a reason; what
 * proxyproto_sniff says agrees (a header or its prefix is never "not a
 * header").  A broken contract aborts.
 *
 * Run: ./fuzz_proxyproto -max_total_time=240 NEW_DIR
 *   tests/fuzz-corpus-proxyproto
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>

#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "proxyproto.h"

int	LLVMFuzzerTestOneInput(const uint8_t *, size_t);

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	struct proxyproto pp, again;
	size_t i, step;

	switch (proxyproto_parse(data, size, &pp)) {
	case PROXYPROTO_MORE:
		if (size >= PROXYPROTO_V2_MAX ||
		    proxyproto_sniff(data, size) == 0)
			abort();
		break;
	case PROXYPROTO_ERROR:
		if (pp.error == NULL)
			abort();
		break;
	case PROXYPROTO_DONE:
		if (proxyproto_sniff(data, size) != 1)
			abort();
		if (pp.len == 0 || pp.len > size ||
		    pp.len > (pp.version == 1 ? PROXYPROTO_V1_MAX :
		    PROXYPROTO_V2_MAX))
			abort();
		if (pp.has_src && !(pp.src.ss_family == AF_INET &&
		    pp.srclen == sizeof(struct sockaddr_in)) &&
		    !(pp.src.ss_family == AF_INET6 &&
		    pp.srclen == sizeof(struct sockaddr_in6)))
			abort();
		if (proxyproto_parse(data, pp.len, &again) != PROXYPROTO_DONE ||
		    again.len != pp.len || again.has_src != pp.has_src ||
		    memcmp(&again.src, &pp.src, sizeof(pp.src)) != 0)
			abort();
		/* Every prefix (a sample of them for a long one). */
		step = pp.len / 256 + 1;
		for (i = 0; i < pp.len; i += step)
			if (proxyproto_parse(data, i, &again) !=
			    PROXYPROTO_MORE)
				abort();
		break;
	}
	return 0;
}
