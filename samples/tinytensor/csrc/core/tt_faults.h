/*
 * tt_faults.h: a native hang on purpose, for samples/hang_native.py.
 *
 * Nothing in torch is meant to do this; it is the shape of a real bug
 * (two threads taking two locks in opposite orders) made deterministic so
 * that 'tdebug attach' and 'tdebug stacks' have something to show.
 */
#ifndef TT_FAULTS_H
#define TT_FAULTS_H

#include "tt_error.h"

/* Start a worker thread ("tt-deadlock") and deadlock with it: the caller
 * holds lock A and waits for B, the worker holds B and waits for A.  Never
 * returns, except -1 with ERR set when the thread cannot be started. */
int tt_deadlock(tt_error *err);

#endif
