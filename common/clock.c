/* SPDX-License-Identifier: ISC */
/*
 * clock.c: the clocks; see clock.h.
 */
#include "config.h"

#include <stdint.h>
#include <time.h>

#include "clock.h"

uint64_t
time_wall_ms(void)
{
	return time_wall_us() / 1000;
}

uint64_t
time_wall_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t
time_mono_us(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000 + ts.tv_nsec / 1000;
}

uint64_t
time_mono_ms(void)
{
	return time_mono_us() / 1000;
}
