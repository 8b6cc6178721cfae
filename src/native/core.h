/*
 * native/core.h: a core file (from gcore or a crash) as a process to look at:
 * its threads and their registers (NT_PRSTATUS), its command line
 * (NT_PRPSINFO), the files it had mapped (NT_FILE) and its memory: the
 * core's own segments, and for what the core left out (code, read-only
 * data) the mapped files themselves.
 *
 * A mapped file is used only when it is the one the process had: its
 * build-id, read from the ELF headers the core kept of each mapping, must
 * match the file on disk (gcore and the kernel's default coredump_filter
 * keep them).  A file that changed or is gone is reported, never read.
 */
#ifndef TDB_CORE_H
#define TDB_CORE_H

#include "base/common.h"
#include "process/procfs.h"

#include <stdint.h>
#include <sys/types.h>

typedef struct tdb_core tdb_core;

typedef struct tdb_core_thread {
    pid_t tid;
    int signal;          /* pr_cursig: the signal it stopped with, or 0 */
    uint64_t regs[27];   /* struct user_regs_struct of x86-64, as dumped */
    uint64_t fs_base;    /* its thread pointer (glibc's struct pthread) */
} tdb_core_thread;

/* Open core file PATH.  EXE (may be NULL) is the executable to use
 * instead of the path the core names (a program moved since, or looked at
 * from another machine).  Returns 0 and *OUT (free with tdb_core_free), or
 * -1 with ERR set: not a core file, truncated, another architecture. */
int tdb_core_open(const char *path, const char *exe, tdb_core **out, tdb_error *err);
void tdb_core_free(tdb_core *c); /* accepts NULL */

const char *tdb_core_path(const tdb_core *c);
pid_t tdb_core_pid(const tdb_core *c);
/* The command line as the core has it (pr_psargs: at most 80 bytes), the
 * executable's path as it was mapped. */
const char *tdb_core_cmdline(const tdb_core *c);
const char *tdb_core_exe(const tdb_core *c);
/* The signal that made the core (0 for gcore). */
int tdb_core_signal(const tdb_core *c);

/* Threads, in the core's order (the crashing thread first). */
size_t tdb_core_n_threads(const tdb_core *c);
const tdb_core_thread *tdb_core_thread_at(const tdb_core *c, size_t i);

/* The mapped files as a memory map: one entry per NT_FILE range (path,
 * start, end, file offset; perms from the core's segment flags).
 * Borrowed. */
const tdb_maps *tdb_core_maps(const tdb_core *c);

/* Make M read the process's memory from the core and its mapped files.
 * C must outlive M. */
void tdb_core_mem(tdb_core *c, tdb_mem *m);

/* The path to open for the file the process had mapped as MAPPED: the
 * same path (or EXE for the executable) when its build-id is the one the
 * core recorded (or the core kept none to compare).  NULL with ERR set
 * when it is missing or changed since ("'/usr/lib/libx.so' changed since
 * the core was written (build-id ... there, ... in the core)").  New
 * string. */
char *tdb_core_file(tdb_core *c, const char *mapped, tdb_error *err);

/* What is wrong with the files of the core, one line each ("...changed
 * since the core was written..."), or NULL when nothing: a NULL-terminated
 * list, borrowed. */
char *const *tdb_core_problems(const tdb_core *c);

/* The ELF handle libelf opened on the core (for libdw), borrowed. */
struct Elf *tdb_core_elf(const tdb_core *c);

#endif
