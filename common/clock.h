/* SPDX-License-Identifier: ISC */
/*
 * clock.h: the clocks, in milliseconds or microseconds.
 *
 * CLOCK_REALTIME follows the steps of the system clock, CLOCK_MONOTONIC
 * does not.  (The file is not time.h: with -Icommon that name would shadow
 * <time.h>.)
 */
#ifndef ANKUSA_CLOCK_H
#define ANKUSA_CLOCK_H

#include <stdint.h>

uint64_t time_wall_ms(void);		/* CLOCK_REALTIME in ms */
uint64_t time_wall_us(void);		/* CLOCK_REALTIME in us */
uint64_t time_mono_ms(void);		/* CLOCK_MONOTONIC in ms */
uint64_t time_mono_us(void);		/* CLOCK_MONOTONIC in us */
uint64_t time_sched_ms(void);		/* wall ms that a step back does not
					 * take back: the scheduler's */

#endif
