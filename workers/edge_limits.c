/* SPDX-License-Identifier: ISC */
/*
 * edge_limits.c: connections per client address, body bytes held, the
 * body-rate deadline; see edge_limits.h.
 *
 * The address table is a hash of chained entries, one per address with a
 * connection open, freed with its last connection: it holds at most as
 * many entries as the edge has connections (EDGE_MAX_CONNS in edge.c).
 * Running out of memory is fatal, as everywhere in the edge.
 */
#include "config.h"

#include <sys/types.h>
#include <sys/socket.h>

#include <netinet/in.h>
#include <arpa/inet.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "edge_limits.h"
#include "ids.h"
#include "log.h"

#define ADDR_BUCKETS	1024

struct addr_entry {
	struct addr_entry	*next;		/* hash chain */
	unsigned char		 a[16];
	uint32_t		 conns;		/* open from this address */
	uint64_t		 held;		/* body bytes its requests hold */
};

static struct addr_entry *addrs[ADDR_BUCKETS];
static uint64_t		 buffered;	/* sum of every request's held */

static int		 addr_key(const struct sockaddr *, socklen_t, int,
			    unsigned char *);
static struct addr_entry **addr_find(const unsigned char *);

/* IPv6 cut to its first prefix bits; IPv4 as ::ffff:a.b.c.d, so that a
 * dual-stack listener's mapped clients and a v4 listener's count alike.
 * -1: no IP address. */
static int
addr_key(const struct sockaddr *sa, socklen_t len, int prefix,
    unsigned char *a)
{
	static const unsigned char mapped[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};
	const struct sockaddr_in *s4;
	const struct sockaddr_in6 *s6;
	int i;

	if (sa->sa_family == AF_INET && len >= sizeof(*s4)) {
		s4 = (const struct sockaddr_in *)(const void *)sa;
		memset(a, 0, 10);
		a[10] = a[11] = 0xff;
		memcpy(a + 12, &s4->sin_addr, 4);
		return 0;
	}
	if (sa->sa_family == AF_INET6 && len >= sizeof(*s6)) {
		s6 = (const struct sockaddr_in6 *)(const void *)sa;
		memcpy(a, &s6->sin6_addr, 16);
		if (memcmp(a, mapped, sizeof(mapped)) == 0 || prefix >= 128)
			return 0;
		if (prefix < 0)
			prefix = 0;
		for (i = prefix / 8; i < 16; i++)
			a[i] &= i == prefix / 8 ?
			    (unsigned char)(0xff00 >> (prefix % 8)) : 0;
		return 0;
	}
	return -1;
}

/* The link that points at a's entry, or at the NULL ending its chain. */
static struct addr_entry **
addr_find(const unsigned char *a)
{
	struct addr_entry **pp;

	pp = &addrs[ids_fnv1a(IDS_FNV_INIT, a, 16) % ADDR_BUCKETS];
	for (; *pp != NULL; pp = &(*pp)->next)
		if (memcmp((*pp)->a, a, 16) == 0)
			break;
	return pp;
}

int
edge_limits_conn_open(const struct sockaddr *sa, socklen_t len, uint32_t max,
    int v6prefix, struct edge_addr *out)
{
	struct addr_entry **pp, *e;

	memset(out, 0, sizeof(*out));
	out->prefix = v6prefix;
	if (addr_key(sa, len, v6prefix, out->a) == -1)
		return 1;
	pp = addr_find(out->a);
	if ((e = *pp) == NULL) {
		if ((e = calloc(1, sizeof(*e))) == NULL)
			fatal("edge_limits_conn_open");
		memcpy(e->a, out->a, 16);
		*pp = e;
	}
	if (e->conns >= max) {
		if (e->conns == 0) {
			*pp = e->next;
			free(e);
		}
		return -1;
	}
	e->conns++;
	out->counted = 1;
	out->e = e;
	return 0;
}

void
edge_limits_conn_close(struct edge_addr *ad)
{
	struct addr_entry **pp, *e;

	if (!ad->counted)
		return;
	ad->counted = 0;
	pp = addr_find(ad->a);
	if ((e = *pp) == NULL || e->conns == 0 || e != ad->e)
		fatalx("edge_limits: closing a connection never counted");
	ad->e = NULL;
	if (--e->conns == 0) {
		if (e->held != 0)
			fatalx("edge_limits: an address gone holding bytes");
		*pp = e->next;
		free(e);
	}
}

uint32_t
edge_limits_conns(const struct edge_addr *ad)
{
	struct addr_entry *e = *addr_find(ad->a);

	return e != NULL ? e->conns : 0;
}

void
edge_limits_addr_str(const struct edge_addr *ad, char *buf, size_t len)
{
	static const unsigned char mapped[12] = {
		0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff
	};

	char a[INET6_ADDRSTRLEN];

	if (memcmp(ad->a, mapped, sizeof(mapped)) == 0) {
		if (inet_ntop(AF_INET, ad->a + 12, buf, len) != NULL)
			return;
	} else if (inet_ntop(AF_INET6, ad->a, a, sizeof(a)) != NULL) {
		if (ad->prefix >= 128)
			snprintf(buf, len, "%s", a);
		else
			snprintf(buf, len, "%s/%d", a, ad->prefix);
		return;
	}
	snprintf(buf, len, "?");
}

/* Whether n more bytes keep a total of total, of which mine are the
 * request's own, within max: always when nothing is anyone else's. */
static int
fits(uint64_t total, uint64_t mine, uint64_t n, uint64_t max)
{
	return total == mine || (n <= max && total <= max - n);
}

int
edge_limits_charge(struct edge_addr *ad, uint64_t *held, uint64_t n,
    uint64_t max, uint64_t per_addr)
{
	struct addr_entry *e = ad->counted ? ad->e : NULL;

	if (!fits(buffered, *held, n, max) ||
	    (e != NULL && !fits(e->held, *held, n, per_addr)))
		return -1;
	buffered += n;
	*held += n;
	if (e != NULL)
		e->held += n;
	return 0;
}

void
edge_limits_hold(struct edge_addr *ad, uint64_t *held, uint64_t n)
{
	if (n > *held)
		fatalx("edge_limits: holding more than charged");
	buffered -= *held - n;
	if (ad->counted && ad->e != NULL)
		ad->e->held -= *held - n;
	*held = n;
}

void
edge_limits_release(struct edge_addr *ad, uint64_t *held)
{
	edge_limits_hold(ad, held, 0);
}

uint64_t
edge_limits_addr_held(const struct edge_addr *ad)
{
	return ad->counted && ad->e != NULL ? ad->e->held : 0;
}

uint64_t
edge_limits_buffered(void)
{
	return buffered;
}

/*
 * received bytes at rate bytes/s last until received * 1000 / rate ms
 * after the grace: the deadline by which the next byte must come.  A
 * count too large for the product is past any deadline of this century.
 */
uint64_t
edge_limits_body_deadline(uint64_t start, uint64_t received, uint64_t rate)
{
	uint64_t ms;

	if (rate == 0 || received > UINT64_MAX / 1000 ||
	    start > UINT64_MAX - EDGE_LIMITS_BODY_GRACE_MS)
		return UINT64_MAX;
	ms = received * 1000 / rate;
	if (ms > UINT64_MAX - start - EDGE_LIMITS_BODY_GRACE_MS)
		return UINT64_MAX;
	return start + EDGE_LIMITS_BODY_GRACE_MS + ms;
}
