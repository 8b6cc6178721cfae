/*
 * native/frames.h: one thread's native frames, as the unwinder
 * (native/unwind.h) or gdb (-stack-list-frames) gives them.
 *
 * The type every reader of native stacks shares: the unwinder fills it,
 * stacks/merge.h interleaves it with Python frames, the session core turns
 * gdb's answers into it.  Nothing here knows Python (stacks/merge.h
 * classifies frames as CPython's own).
 */
#ifndef TDB_NATIVE_FRAMES_H
#define TDB_NATIVE_FRAMES_H

#include "base/common.h"
#include "process/procfs.h"

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

/* One native frame.  The strings belong to whoever filled the array and
 * are freed by tdb_native_frames_free(). */
typedef struct tdb_native_frame {
    uint64_t pc;      /* return address (the instruction pointer at level 0) */
    char *function;   /* demangled name, or NULL when unknown */
    uint64_t offset;  /* pc - start of FUNCTION, when known */
    char *library;    /* path of the object holding PC, or NULL */
    int is_eval;      /* a _PyEval_EvalFrameDefault frame */
    int in_interp;    /* in CPython's own code (the executable or libpython) */
} tdb_native_frame;

void tdb_native_frames_free(tdb_native_frame *frames, size_t n); /* accepts NULL */

/* Strip what symbol tables add to a function's name, in place: the symbol
 * version ("@GLIBC_2.2.5") and GCC's clone suffixes (".lto_priv.0",
 * ".constprop.0", ".cold", ...).  Mangled C++ names are left to the
 * demangler.  Accepts NULL. */
void tdb_native_name_clean(char *name);

/* Convert the value of gdb's -stack-list-frames "stack" result (an array
 * of frame={level,addr,func,from,...} as src/gdb/mi_parser.h produces it) into
 * a new array of native frames, innermost first.  Inlined frames (several
 * frames at one address) are kept: they fold like any other.  Returns 0,
 * or -1 when STACK is not such an array. */
int tdb_native_frames_from_mi(const json_t *stack, tdb_native_frame **out, size_t *n);

/* Fill the library of frames that have none from the process's memory map
 * (gdb names no library for the main executable). */
void tdb_native_frames_fill_libraries(tdb_native_frame *frames, size_t n, const tdb_maps *maps);

#endif
