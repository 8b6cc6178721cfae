/*
 * Folder base/: what every other folder may use: errors (tdb_error), memory
 * and string helpers, a growable buffer, JSON helpers, files written
 * keeping the old one, and the one signals self-pipe (base/signals.h).  It
 * knows nothing of gdb, processes, Python or torch.  Only the printing
 * helpers the commands call (tdb_print_error, tdb_fail, tdb_warn,
 * tdb_error_exit) write to the terminal, and nothing here exits but on
 * running out of memory.
 * May include: nothing
 *
 * base/common.h: the few things every layer of tdebug shares: error reporting,
 * a growable string buffer, number parsing, and where tdebug's companion
 * files live.
 *
 * Errors follow jansson/redis: library functions return 0/-1 (or NULL) and
 * fill an optional caller-provided tdb_error; the first error set wins, so a
 * low-level cause is not overwritten by a vaguer one further up.  Only
 * main() and the cmd_*() functions print.
 */
#ifndef TDB_COMMON_H
#define TDB_COMMON_H

#include <jansson.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Exit statuses: the one table, tdb_exit_status_help (src/main.c), which
 * 'tdebug --help', every command's --help and tdebug(1) print. */
enum {
    TDB_EXIT_OK = 0,        /* success ('run': the program's own status) */
    TDB_EXIT_FAIL = 1,      /* failed: refused, not found, a requested stop
                             * never happened, a check failed */
    TDB_EXIT_USAGE = 2,     /* bad option or argument */
    TDB_EXIT_TOOL = 125,    /* gdb, or another tool tdebug needs, is missing,
                             * failed or died */
    TDB_EXIT_NOEXEC = 126,  /* the program cannot be executed */
    TDB_EXIT_NOTFOUND = 127 /* the program does not exist */
    /* 128+N: told to stop by signal N (129 SIGHUP, 130 SIGINT, 143 SIGTERM) */
};

typedef struct tdb_error {
    int set;        /* nonzero once an error was recorded */
    int code;       /* an errno value, or 0 */
    int exit_code;  /* the exit status a command should use; 0 = TDB_EXIT_TOOL */
    char msg[1024]; /* "cannot attach to pid 12: Operation not permitted (...)" */
} tdb_error;

/* Record an error unless one is already set (first error wins).  ERR may be
 * NULL.  The message follows git's rules: lower-case start, no final full
 * stop, the subject named. */
void tdb_error_set(tdb_error *err, int code, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
/* Same, with the exit status a command should end with. */
void tdb_error_set_exit(tdb_error *err, int exit_code, int code, const char *fmt, ...)
    __attribute__((format(printf, 4, 5)));
/* Like tdb_error_set(), appending ": strerror(errno)". */
void tdb_error_errno(tdb_error *err, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
/* Forget any recorded error. */
void tdb_error_clear(tdb_error *err);

/* Print "tdebug: MSG" (or "tdebug: warning: MSG") on stderr.  For main()
 * and commands only. */
void tdb_print_error(const tdb_error *err);
void tdb_fail(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
void tdb_warn(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* Print "tdebug: MSG" for the error and return the exit status it asks for. */
int tdb_error_exit(const tdb_error *err);

/* Allocation that cannot fail: out of memory aborts with a message, as in
 * git's xmalloc().  Everything else in tdebug reports errors. */
void *tdb_xmalloc(size_t n);
void *tdb_xcalloc(size_t n, size_t size);
void *tdb_xrealloc(void *p, size_t n);
char *tdb_xstrdup(const char *s);
char *tdb_xstrndup(const char *s, size_t n);
char *tdb_xasprintf(const char *fmt, ...) __attribute__((format(printf, 1, 2)));
/* The N bytes at DATA as lower-case hex ("c561f3aa..."): a new string. */
char *tdb_hex(const void *data, size_t n);
/* Make room for element N of the growable array ARR of capacity CAP
 * (both lvalues), doubling it: git's ALLOC_GROW. */
#define TDB_GROW(arr, n, cap)                                            \
    do {                                                                 \
        if ((n) >= (cap)) {                                              \
            (cap) = (cap) ? 2 * (cap) : 16;                              \
            (arr) = tdb_xrealloc((arr), (cap) * sizeof(*(arr)));         \
        }                                                                \
    } while (0)

/* Append ITEM (the pointer is stored, not copied) to the array *LIST of *N
 * pointers, growing it.  The array stays NULL-terminated ((*LIST)[*N] is
 * NULL), so a list of strings built this way is a strv. */
void tdb_ptrs_push(char ***list, size_t *n, char *item);
/* Free a NULL-terminated array of strings and its strings.  Accepts NULL. */
void tdb_strv_free(char **v);

/* A growable, always NUL-terminated string. */
typedef struct tdb_buf {
    char *s;    /* NULL until the first append; tdb_buf_str() never is */
    size_t len;
    size_t cap;
} tdb_buf;
#define TDB_BUF_INIT {NULL, 0, 0}
void tdb_buf_add(tdb_buf *b, const char *data, size_t n);
void tdb_buf_adds(tdb_buf *b, const char *s);
void tdb_buf_addc(tdb_buf *b, char c);
void tdb_buf_addf(tdb_buf *b, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
void tdb_buf_vaddf(tdb_buf *b, const char *fmt, va_list ap);
const char *tdb_buf_str(const tdb_buf *b);
/* Hand the string to the caller (who frees it) and reset B. */
char *tdb_buf_detach(tdb_buf *b);
void tdb_buf_reset(tdb_buf *b);
void tdb_buf_free(tdb_buf *b);

/* Parse all of S as a base-10 integer in [MIN, MAX].  Returns 0 and writes
 * *OUT on success; -1 (nothing written) on garbage, overflow or range. */
int tdb_parse_long(const char *s, long min, long max, long *out);
/* Parse a duration in seconds ("30", "2.5"); -1 on garbage or negative. */
int tdb_parse_seconds(const char *s, double *out);

/* Monotonic clock in milliseconds. */
int64_t tdb_now_ms(void);

/* The file name of PATH: what follows its last '/', or PATH itself.  A
 * pointer into PATH (nothing is copied or changed, unlike basename(3)). */
const char *tdb_base_name(const char *path);

/* Append ARG to B quoted for a POSIX shell ('...' with '\'' for quotes). */
void tdb_shell_quote(tdb_buf *b, const char *arg);

/* Why gdb's 'set environment' cannot give a program NAME=VALUE exactly
 * (VALUE NULL: unsetting NAME), as words to follow "cannot pass
 * environment variable 'NAME' to the program: ": a name must be non-empty
 * without '=', blanks or newlines, and gdb drops newlines and the blanks
 * at the ends of a value.  NULL when it can.  Static string. */
const char *tdb_gdb_env_problem(const char *name, const char *value);

/* Where tdebug's companion files are: the directory of the running binary
 * when it holds NAME (a build tree), else BINDIR/../lib/tdebug (an install,
 * wherever it was put), else TDB_LIBDIR.  Returns a new string, or NULL
 * when NAME is in none of them. */
char *tdb_companion_path(const char *name);

/* tdebug's directory SUB ("gdb-index", "torch-layout") in the user's
 * cache: $XDG_CACHE_HOME/tdebug/SUB, else $HOME/.cache/tdebug/SUB, made
 * (mode 0700, parents too) when missing.  New string, or NULL with ERR
 * set when neither variable is set or the directory cannot be made, or
 * when it, or a directory between it and the variable's, is not ours (or
 * root's) or others may write there: root with another user's HOME uses no
 * cache rather than one that user controls. */
char *tdb_user_cache_dir(const char *sub, tdb_error *err);

/* The bound on a cache directory: $TDEBUG_CACHE_MAX in bytes, or with a
 * K, M or G suffix (powers of 1024); TDB_CACHE_MAX_DEFAULT when unset,
 * empty or not a size. */
#define TDB_CACHE_MAX_DEFAULT (200ull << 20)
uint64_t tdb_cache_max(void);

/* Bound the files of cache directory DIR (its regular files, not its
 * subdirectories) to MAX bytes: the least recently used first (the later
 * of their access and modification times) are removed until the rest fit.
 * Best effort: a file that cannot be removed is left.  Returns the bytes
 * removed. */
uint64_t tdb_cache_prune(const char *dir, uint64_t max);

/* A new directory of tdebug's own, mode 0700: $TMPDIR/PREFIX-XXXXXX when
 * TMPDIR is an absolute path of at most 64 characters (short enough for a
 * socket path inside), else (or when that fails) /tmp/PREFIX-XXXXXX.  New
 * string, or NULL with ERR naming mkdtemp.  The caller removes it. */
char *tdb_private_dir(const char *prefix, tdb_error *err);

/* NAME as execvp() would find it: itself when it has a slash, else the
 * first executable NAME in $PATH (default /usr/local/bin:/usr/bin:/bin).
 * New string, or NULL when there is none. */
char *tdb_which(const char *name);

/* The interpreter a command targets, by one rule for every command: GIVEN
 * (its --python option) when not NULL, else $TDEBUG_PYTHON when
 * set and not empty, else the build's PYTHON (tdb_default_python()).  The
 * string is borrowed from GIVEN, the environment or a constant. */
const char *tdb_target_python(const char *given);
/* The build's PYTHON ("make PYTHON=..."), the last step of
 * tdb_target_python()'s rule; commands use tdb_target_python(). */
const char *tdb_default_python(void);

/* Read a whole (small, e.g. /proc) file into a new NUL-terminated string.
 * Returns NULL with ERR set on failure; *OUT_LEN gets the length if given. */
char *tdb_read_file(const char *path, size_t *out_len, tdb_error *err);

/* "a FIFO", "a character device", "a directory", ... for messages. */
const char *tdb_file_kind(mode_t mode);

/* Read PATH as tdb_read_file() does, but only a regular file (after
 * following symbolic links): anything else is refused before it is opened,
 * so a FIFO never blocks and a device is never touched; ERR then says
 * "cannot update 'NAME': it is a FIFO, not a regular file (...)" (exit
 * status TDB_EXIT_FAIL).  A missing file gives NULL with ERR's code ENOENT.
 * NAME is PATH as messages show it (NULL: PATH). */
char *tdb_read_regular_file(const char *path, const char *name, size_t *out_len, tdb_error *err);

/* Write LEN bytes of DATA to PATH, never half written and never losing
 * what was there ('tdebug vscode' and 'tour --markdown' write through it):
 *  - a temporary file in the same directory, fsync'ed, renamed over PATH,
 *    then the directory fsync'ed; a symbolic link is followed and its
 *    target replaced; anything but a regular file (a FIFO, a device, a
 *    directory, also behind a link) is refused and left untouched;
 *  - the old file's mode is kept, and its owner when root writes a user's
 *    file; a new file gets what creat() would give (0666 & ~umask);
 *  - the previous bytes are first kept as PATH.~N~ (GNU numbered backups,
 *    as 'cp --backup=numbered' makes: N is one more than the highest
 *    existing, so the highest is the latest; backups are never deleted);
 *  - OLD/OLD_LEN are the bytes the caller read from PATH and based DATA on
 *    (NULL: PATH did not exist).  When PATH holds anything else now,
 *    nothing is written: ERR says "cannot update 'NAME': it changed while
 *    tdebug was working" (exit status TDB_EXIT_FAIL);
 *  - DATA equal to OLD writes nothing and makes no backup, so running a
 *    command twice changes nothing the second time.
 * NAME is PATH as messages show it (NULL: PATH).  *OUT_BACKUP (if given)
 * gets the backup's path (new string) or NULL; *OUT_CHANGED (if given) 1
 * when PATH was written, else 0.  Returns 0, or -1 with ERR set and PATH
 * untouched. */
int tdb_write_file_keeping(const char *path, const char *name, const char *old, size_t old_len,
                           const char *data, size_t len, char **out_backup, int *out_changed,
                           tdb_error *err);

typedef struct json_t json_t;

/* ---- JSON output that never drops data ----
 *
 * jansson refuses a string that is not valid UTF-8, and a command line, a
 * thread name, a file path or an environment value is bytes.  Every --json
 * output keeps such a string, escaped, by one convention (tdebug(1), "JSON
 * OUTPUT"): a valid UTF-8 string is emitted as it is; otherwise each
 * backslash becomes two and each byte that is not part of a valid UTF-8
 * sequence becomes the four characters \xNN (lower-case hex), and the
 * object holding it gets the sibling key KEY_escaped: true.  To get the
 * bytes back from a flagged value: "\\" is one backslash, "\xNN" byte NN,
 * everything else stands for itself. */

/* The length (1-4) of the valid UTF-8 sequence starting S[0] (N bytes
 * readable), 0 when there is none: a stray continuation byte, a sequence
 * cut short, an overlong form, a surrogate or a code point past U+10FFFF
 * (jansson's own rules).  NUL is a valid one-byte sequence. */
size_t tdb_utf8_seq_len(const char *s, size_t n);
/* Nonzero when all LEN bytes of S are valid UTF-8. */
int tdb_utf8_valid(const char *s, size_t len);

/* S (LEN bytes) as a JSON string keeping every byte, by the convention
 * above: S as it is when valid UTF-8, else escaped, with *OUT_ESCAPED (if
 * given) set to 1 (0 otherwise).  FORCE escapes even valid UTF-8 (for the
 * other strings of an array that has an escaped one).  A NULL S gives JSON
 * null.  Never NULL.  New reference. */
json_t *tdb_json_bytes(const char *s, size_t len, int force, int *out_escaped);
/* OBJ[KEY] = S as tdb_json_bytes() makes it (null for a NULL S), and
 * OBJ[KEY "_escaped"] = true when it was escaped. */
void tdb_json_set_str(json_t *obj, const char *key, const char *s);
/* OBJ[KEY] = the N strings of V as a JSON array; when any is not valid
 * UTF-8, every one of them is escaped and OBJ[KEY "_escaped"] = true (so a
 * backslash means the same in all of them). */
void tdb_json_set_strv(json_t *obj, const char *key, char *const *v, size_t n);

/* The version of every --json document's format ("version" key): grows
 * only by new keys while it stays the same. */
#define TDB_JSON_VERSION 1
/* DOC (an object; stolen) with "version": TDB_JSON_VERSION as its first key,
 * the way every command's --json document starts.  New reference. */
json_t *tdb_json_versioned(json_t *doc);

#endif
