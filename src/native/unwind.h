/*
 * native/unwind.h: native stacks of a paused process, without gdb.
 *
 * Two steps, so the process is held as briefly as possible:
 * 1. while paused (src/process/pause.h), tdb_capture_take() reads every stopped
 *    thread's registers (PTRACE_GETREGS) and copies the live top of its
 *    stack (from the stack pointer to the end of its stack mapping, capped);
 * 2. after the process is let go, tdb_capture_unwind() unwinds a thread
 *    from that copy with elfutils' libdw (CFI from .eh_frame/.debug_frame,
 *    frame pointers as a fallback) and names each frame from the ELF
 *    symbol tables (.symtab/.dynsym; separate debug files by build-id when
 *    installed), demangling C++ names.
 * Memory outside the copied stacks is read from the live process.
 */
#ifndef TDB_UNWIND_H
#define TDB_UNWIND_H

#include "base/common.h"
#include "native/frames.h"
#include "process/pause.h"
#include "process/procfs.h"

#include <stddef.h>
#include <sys/types.h>

typedef struct tdb_capture tdb_capture;

/* Function symbols of the libraries seen so far, sorted for binary search
 * and shared by every process unwound in one run: libtorch_cpu's 35,000
 * symbols are read once, not once per frame (libdw's own lookup is a
 * linear scan) nor once per DataLoader worker.  Keyed by path and build-id;
 * addresses are file-relative. */
typedef struct tdb_symcache tdb_symcache;
tdb_symcache *tdb_symcache_new(void);
void tdb_symcache_free(tdb_symcache *c); /* accepts NULL */

/* Names for the frames of a process someone else holds stopped (gdb in a
 * tdebug session), from its memory map and the same symbol tables as the
 * unwinder, without attaching: gdb, which tdebug keeps from reading
 * CPython's debug info for speed, names the interpreter's static
 * functions "??"; the symbol table of the separate debug file (found by
 * build-id) knows them. */
typedef struct tdb_symbolizer tdb_symbolizer;
/* A symbolizer for PID's libraries as mapped now, sharing CACHE (which
 * must outlive it).  NULL with ERR set when PID's map cannot be read. */
tdb_symbolizer *tdb_symbolizer_new(pid_t pid, tdb_symcache *cache, tdb_error *err);
/* Fill the function (and offset) and library of the frames lacking them;
 * FRAMES[0] is the innermost frame (its pc is exact), the others hold
 * return addresses. */
void tdb_symbolizer_name(tdb_symbolizer *s, tdb_native_frame *frames, size_t n);
void tdb_symbolizer_free(tdb_symbolizer *s); /* accepts NULL */

/* Default cap on the stack bytes copied per thread. */
#define TDB_STACK_COPY_MAX (1u << 20)

/* Capture the registers and stack tops of P's stopped threads; MAPS is the
 * process's memory map (read before the pause is fine: a stack not found
 * in it makes us read it again).  Never fails for one thread: that thread
 * is marked and unwinding it gives its error.  NULL with ERR set only on
 * an unsupported architecture. */
tdb_capture *tdb_capture_take(tdb_pause *p, const tdb_maps *maps, size_t stack_max,
                              tdb_error *err);

/* Capture thread TID of PID, which another tracer (gdb) holds stopped,
 * for tdb_capture_unwind(): REGS are its registers in the x86-64 psABI's
 * DWARF order (rax, rdx, rcx, rbx, rsi, rdi, rbp, rsp, r8-r15, rip); the
 * top of its stack is copied from its memory (MAPS, which may be NULL or
 * stale, says where that stack is), and the rest is read from the live
 * process, which must stay stopped until it is unwound.  NULL with ERR set
 * when its stack cannot be read (or on another architecture). */
tdb_capture *tdb_capture_from_regs(pid_t pid, pid_t tid, const uint64_t regs[17],
                                   const tdb_maps *maps, size_t stack_max, tdb_error *err);
/* Does the file of the library holding PC in C's process carry DWARF of
 * its own (a .debug_info section, not a separate debug file)?  A debugger
 * that reads it shows source lines and arguments there. */
int tdb_capture_own_debug_info(tdb_capture *c, uint64_t pc);
/* Is there a separate debug file for the library holding PC, found by its
 * build-id under DEBUG_DIR (DEBUG_DIR/.build-id/xx/yyyy.debug), as gdb
 * finds one? */
int tdb_capture_debug_file(tdb_capture *c, uint64_t pc, const char *debug_dir);

struct tdb_core;
/* The same for a core file (src/native/core.h): every thread the core holds,
 * unwound by libdw from the core's registers and memory, the libraries
 * found from the core's notes (and checked by build-id).  CORE must
 * outlive the capture.  NULL with ERR set when libdw cannot read it. */
tdb_capture *tdb_capture_from_core(struct tdb_core *core, tdb_error *err);

/* Unwind thread TID (at most MAX_FRAMES frames), naming frames through
 * SYMBOLS (NULL: a cache private to C).  0 with a new array in *OUT (free
 * with tdb_native_frames_free) and its length in *N; *NOTE gets a new
 * string when the stack is incomplete (why), else NULL.  -1 with ERR set
 * when nothing at all could be unwound.  SYMBOLS must outlive C. */
int tdb_capture_unwind(tdb_capture *c, pid_t tid, size_t max_frames, tdb_symcache *symbols,
                       tdb_native_frame **out, size_t *n, char **note, tdb_error *err);

/* Bytes of stack copied in total (for --verbose). */
size_t tdb_capture_bytes(const tdb_capture *c);

void tdb_capture_free(tdb_capture *c); /* accepts NULL */

/* Demangle a C++ symbol ("_ZN2at6native3addE..." -> "at::native::add(...)")
 * as a new string; a copy of NAME when it is not a mangled name. */
char *tdb_demangle(const char *name);
/* Demangle a mangled type as type_info::name() gives it ("N3c105ErrorE"
 * -> "c10::Error", "PKc" -> "char const*") as a new string; NULL when it
 * does not demangle. */
char *tdb_demangle_type(const char *mangled);

#endif
