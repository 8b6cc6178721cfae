/*
 * Folder process/: a live process seen from outside, at the lowest level:
 * /proc (memory maps, threads, memory), holding every thread still for a
 * moment (ptrace), running helper programs, TCP sockets, and the tdebug
 * side of the preloaded library.  It knows nothing of ELF, Python or torch,
 * never prints, never exits, and never leaves a process it paused stopped.
 * May include: base
 *
 * process/procfs.h: what /proc says about a process: its memory map, its threads,
 * its children, its name, its tracer; and reading its memory.
 *
 * Everything here reads a live, changing process: a pid or thread can
 * vanish between two calls, and callers treat ESRCH/ENOENT as "it exited".
 */
#ifndef TDB_PROCFS_H
#define TDB_PROCFS_H

#include "base/common.h"

#include <stdint.h>
#include <sys/types.h>

/* One line of /proc/PID/maps. */
typedef struct tdb_map {
    uint64_t start, end; /* [start, end) */
    uint64_t offset;     /* file offset of START */
    char perms[5];       /* "r-xp" */
    char *path;          /* the file, "[stack]", ... or NULL (anonymous) */
} tdb_map;

typedef struct tdb_maps {
    tdb_map *v; /* sorted by start, as the kernel prints them */
    size_t n;
    char *text; /* the file as read (for libdw once the process is gone) */
} tdb_maps;

/* Read /proc/PID/maps into *OUT (freed with tdb_maps_free).  -1 with ERR
 * set (code ESRCH when the process is gone, EACCES/EPERM when refused). */
int tdb_maps_read(pid_t pid, tdb_maps *out, tdb_error *err);
void tdb_maps_free(tdb_maps *m);
/* The mapping containing ADDR, or NULL.  Borrowed. */
const tdb_map *tdb_maps_find(const tdb_maps *m, uint64_t addr);

/* The threads of PID (its /proc/PID/task entries) as a new array in
 * *OUT, count in *N.  -1 with ERR set when the process is gone. */
int tdb_proc_tasks(pid_t pid, pid_t **out, size_t *n, tdb_error *err);

/* PID's descendants (children, their children, ...), depth first, parents
 * before children, as a new array.  PID itself is not included.  Processes
 * that exit while the tree is read are left out. */
int tdb_proc_descendants(pid_t pid, pid_t **out, size_t *n, tdb_error *err);

/* The thread's name (/proc/PID/task/TID/comm) as a new string, or NULL. */
char *tdb_proc_comm(pid_t pid, pid_t tid);
/* The command line with arguments joined by spaces (at most about MAX
 * bytes, "..." when cut), as a new string, or NULL when unreadable. */
char *tdb_proc_cmdline(pid_t pid, size_t max);
/* A process other than tdebug itself that has ARG, exactly, among its
 * arguments (after argv[0]), or 0 when there is none that tdebug can see. */
pid_t tdb_proc_with_arg(const char *arg);
/* The one reader of /proc/PID/status (and /proc/self/status) text: the
 * value on the line "NAME:\tVALUE", blanks after the colon skipped, as a
 * pointer into TEXT (it runs to the line's end), or NULL when TEXT has no
 * such line. */
const char *tdb_status_value(const char *text, const char *name);
/* The one reader of /proc/PID/stat text ("pid (comm) S ppid ..."): the
 * fields after the command name, which may itself hold spaces and ')'
 * ("S ppid pgrp ..."), or NULL when TEXT is no such line.  *COMM and
 * *COMM_LEN (when given) get the name's span in TEXT. */
const char *tdb_stat_fields(const char *text, const char **comm, size_t *comm_len);

/* TracerPid from /proc/PID/status: 0 untraced, -1 unreadable. */
pid_t tdb_proc_tracer(pid_t pid);
/* The process (thread group) that thread TID belongs to, or -1. */
pid_t tdb_proc_tgid(pid_t tid);
/* The state letter of a thread (R, S, D, T, t, Z, X...), or 0 when gone.
 * TID 0 means the process itself. */
char tdb_proc_state(pid_t pid, pid_t tid);
/* The system call a blocked thread is in, from /proc/PID/task/TID/syscall:
 * 0 and *NR, *ARG0 when it is blocked in one; -1 when it is running, not in
 * a call, or unreadable. */
int tdb_proc_syscall(pid_t pid, pid_t tid, long *nr, uint64_t *arg0);

/* A memory image other than a live process (a core file: src/native/core.h):
 * read up to LEN bytes at ADDR, as tdb_mem_read() does. */
typedef ssize_t (*tdb_mem_reader)(void *ctx, uint64_t addr, void *buf, size_t len);

/* Reading another process's memory: process_vm_readv, and /proc/PID/mem
 * when that is unavailable (seccomp, old kernels); or an image of it (a
 * core file).  Never follows a pointer by itself: callers bound every
 * read. */
typedef struct tdb_mem {
    pid_t pid;
    int fd;          /* /proc/PID/mem once the fallback is in use, else -1 */
    int use_fd;      /* process_vm_readv failed with ENOSYS/EPERM */
    unsigned long reads; /* number of reads, for --verbose statistics */
    tdb_mem_reader image; /* not NULL: read through it, not from PID */
    void *image_ctx;
} tdb_mem;

void tdb_mem_init(tdb_mem *m, pid_t pid);
/* Read through READER (with CTX, which must outlive M) instead of a
 * process. */
void tdb_mem_init_image(tdb_mem *m, tdb_mem_reader reader, void *ctx);
void tdb_mem_close(tdb_mem *m);
/* Read up to LEN bytes at ADDR.  Returns the number read (short when the
 * range runs into unmapped memory), or -1 with errno set when nothing
 * could be read. */
ssize_t tdb_mem_read(tdb_mem *m, uint64_t addr, void *buf, size_t len);
/* Read exactly LEN bytes; 0 on success, -1 (errno set, EFAULT for a short
 * read) otherwise. */
int tdb_mem_read_full(tdb_mem *m, uint64_t addr, void *buf, size_t len);

#endif
