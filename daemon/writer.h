/*
 * writer.h: the queue writer: the only code that adds hooks to the store.
 *
 * Edges' MSG_HOOK_SUBMIT frames wait in one open batch; a batch is
 * committed as one transaction and flushed once (group commit), and only
 * then is every edge of the batch answered.  Bounds: batcher.max_queue
 * records and batcher.max_queue_bytes bytes waiting (else 503 overload),
 * batcher.max_batch hooks per transaction, batcher.max_delay_ms to gather a
 * batch, and 15 s for a hook to start committing (else 503, dropped).  A
 * commit that has started is always waited out.
 */
#ifndef ANKUSA_WRITER_H
#define ANKUSA_WRITER_H

#include <stddef.h>
#include <stdint.h>

struct msg;

void	writer_init(void);
/* Take a submitted hook from child serial.  -1 on a malformed frame (the
 * caller recycles the child). */
int	writer_submit(uint32_t serial, struct msg *);
/* Commit everything queued now (shutdown). */
void	writer_flush_all(void);
size_t	writer_queued(void);
uint64_t writer_queued_bytes(void);

#endif
