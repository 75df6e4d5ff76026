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

/*
 * The scheduler's wall clock (the master's dispatch: due times, backoffs):
 * CLOCK_REALTIME, except that a step back of more than TIME_SCHED_STEP_MS
 * does not take it back.  From such a step on it runs from where it was,
 * at the monotonic clock's pace, until the real clock catches up.  Why:
 * the stored due times were set on the clock before the step, and read
 * against the stepped one a row backing off for a second would wait as
 * long as the step (an hour, test_chaos_clock_step).  A step forward
 * passes through: the rows due within it come due at once, each attempted
 * once, and back off from the new time.  Smaller steps back (and the
 * slewing of NTP) pass through too.  One caller thread (the loop's); the
 * state is the process's, so a restart within a held stretch reads the
 * stored due times against the real clock again (they wait at most the
 * part of the step not yet caught up).
 */
#define TIME_SCHED_STEP_MS	1000

uint64_t
time_sched_ms(void)
{
	static uint64_t last, last_mono;
	static int holding;
	uint64_t real = time_wall_ms(), mono = time_mono_ms(), expect;

	expect = last + (mono - last_mono);
	if (last_mono != 0 && real < expect &&
	    (holding || real + TIME_SCHED_STEP_MS < expect))
		holding = 1;
	else {
		holding = 0;
		expect = real;
	}
	last = expect;
	last_mono = mono;
	return expect;
}
