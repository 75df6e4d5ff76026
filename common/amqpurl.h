/* SPDX-License-Identifier: ISC */
/*
 * amqpurl.h: an AMQP 0-9-1 URI (the RabbitMQ sink's url), read the way
 * RabbitMQ's own clients read it.  Pure: no I/O.
 *
 *   amqp[s]://[user[:password]@]host[:port][/vhost]
 *
 * user, password and vhost are percent-decoded; absent, they are guest,
 * guest and "/" (an empty path too: "amqp://h/" is the vhost "/", as
 * librabbitmq reads it).  The port defaults to 5672, 5671 for amqps.  The
 * host is a name or a literal address, a v6 one in brackets (kept, as
 * netaddr_literal takes it); no '%' (a zone), no query or fragment.  The
 * config check (common/conf_check.c) and the sink (workers/
 * sink_rabbitmq.c) both read a URL with this, so the address the check
 * judged is the one the sink connects to.
 */
#ifndef ANKUSA_AMQPURL_H
#define ANKUSA_AMQPURL_H

#include <stddef.h>
#include <stdint.h>

struct amqpurl {
	int		 tls;		/* amqps:// */
	char		*user;
	char		*password;
	char		*host;		/* as written: [v6] keeps brackets */
	uint16_t	 port;
	char		*vhost;
};

/* 0 with u filled (malloc'd strings: amqpurl_free), or -1 with why in err
 * and nothing to free. */
int	amqpurl_parse(const char *url, struct amqpurl *u, char *err,
	    size_t errlen);
/* Frees the strings; the password is zeroed first. */
void	amqpurl_free(struct amqpurl *u);
/* host without its brackets, for the resolver; into buf. */
const char *amqpurl_bare_host(const struct amqpurl *u, char *buf,
	    size_t bufsz);

#endif
