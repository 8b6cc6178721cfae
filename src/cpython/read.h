/*
 * cpython/read.h: the Python reader's insides, shared by cpython/runtime.c
 * (finding the interpreter), cpython/objects.c (reading objects, which this
 * header declares), cpython/frames.c (threads and frames) and
 * cpython/values.c (values of locals).  Not a public interface.
 *
 * Every read goes through tdb_mem and is bounded; every object's type is
 * compared with the interpreter's own type objects before its fields are
 * believed.
 */
#ifndef TDB_PYREAD_H
#define TDB_PYREAD_H

#include "cpython/frames.h"
#include "cpython/offsets.h"
#include "process/procfs.h"

#include <stdint.h>
#include <string.h>

/* Caps on what target memory can make us do. */
#define TDB_PY_MAX_STR 4096        /* code points of a string read */
#define TDB_PY_MAX_BYTES (4u << 20) /* bytes of a bytes object read */
#define TDB_PY_MAX_DICT 100000     /* entries of a dict walked */
#define TDB_PY_MAX_ACTIVE 8        /* interpreters whose threading._active is kept */

/* The interpreter's type objects and singletons, by address. */
typedef struct tdb_py_types {
    uint64_t code, unicode, bytes, long_, float_, bool_, tuple, list, dict, cell, module,
        type, none, true_, false_, frame;
    /* Optional (0 when the interpreter does not export them): values of
     * these types are then shown as "<T object at 0x...>". */
    uint64_t set, frozenset, method, cfunction, base_exception;
} tdb_py_types;

struct tdb_py_process {
    pid_t pid;           /* the process (for a core: the one it was) */
    int is_core;
    tdb_mem mem;
    char *module;        /* path of the interpreter file, as mapped */
    char version[32];    /* "3.12.1", or "3.9" when the micro is unknown */
    int major, minor;
    tdb_py_layout L;     /* the layout in use */
    char *layout_source;
    uint64_t runtime;    /* &_PyRuntime */
    tdb_py_types t;
    uint64_t eval_lo, eval_hi;
    uint64_t *text;      /* [lo, hi) pairs of the interpreter's code */
    size_t ntext;
    int32_t pthread_tid; /* offset of the TID in glibc's struct pthread, or -1 */
    struct tdb_pidns_map *ns; /* a live process in a nested PID namespace: its
                               * thread ids to ours (process/pidns.h), else NULL */
    struct {
        uint64_t interp, dict;
    } active[8];         /* threading._active of each interpreter, once found */
    size_t n_active;
};

/* The field F of the layout, or TDB_PYO_NONE. */
#define TDB_PY_OFF(p, f) ((p)->L.v[TDB_PYO_##f])
#define TDB_PY_HAS(p, f) (TDB_PY_OFF(p, f) != TDB_PYO_NONE)

int tdb_py_rd(tdb_py_process *p, uint64_t addr, void *buf, size_t len);
/* The 8- or 4-byte field at offset OFF of a struct read into B (any
 * alignment). */
static inline uint64_t tdb_py_get_u64(const uint8_t *b, int32_t off)
{
    uint64_t v;
    memcpy(&v, b + off, sizeof(v));
    return v;
}
static inline int32_t tdb_py_get_i32(const uint8_t *b, int32_t off)
{
    int32_t v;
    memcpy(&v, b + off, sizeof(v));
    return v;
}
/* A pointer-sized, int-sized or byte field at ADDR + the layout's F
 * (absent fields fail). */
int tdb_py_ptr(tdb_py_process *p, uint64_t addr, int field, uint64_t *out);
int tdb_py_i32(tdb_py_process *p, uint64_t addr, int field, int32_t *out);
int tdb_py_i64(tdb_py_process *p, uint64_t addr, int field, int64_t *out);
/* The type of the object at ADDR, 0 when unreadable. */
uint64_t tdb_py_type_of(tdb_py_process *p, uint64_t addr);
/* Is TYPE the type T, or a subclass of it (by tp_base, a bounded walk)? */
int tdb_py_type_is(tdb_py_process *p, uint64_t type, uint64_t t);
/* The type's tp_name as a new string ("torch.Tensor"), or NULL. */
char *tdb_py_type_name(tdb_py_process *p, uint64_t type);

/* A str object's text, at most MAX code points (0: TDB_PY_MAX_STR), as new
 * UTF-8 with "..." when cut; *TRUNC (if given) says so, *LEN_OUT (if given)
 * gets its length in code points.  NULL when ADDR is not a readable str.
 * Characters that cannot be shown (lone surrogates, control characters)
 * become U+FFFD and '?' only when RAW is 0; with RAW they are kept as
 * their UTF-8 (surrogates as U+FFFD still). */
char *tdb_py_str(tdb_py_process *p, uint64_t addr, size_t max, int raw, int *trunc,
                 int64_t *len_out);
/* The same, with its length in bytes in *NBYTES (a str may hold U+0000,
 * which RAW keeps as a NUL byte). */
char *tdb_py_strn(tdb_py_process *p, uint64_t addr, size_t max, int raw, int *trunc,
                  int64_t *len_out, size_t *nbytes);
/* A bytes object's contents (new buffer, *LEN), at most MAX bytes, or NULL;
 * *FULL_LEN gets its real size. */
uint8_t *tdb_py_bytes(tdb_py_process *p, uint64_t addr, size_t max, size_t *len,
                      int64_t *full_len);

/* Walk a dict: calls FN(key, value, ctx) for each live entry, in order,
 * until FN returns nonzero or MAX entries were seen.  Returns the number
 * of entries seen, or -1 when ADDR is not a readable dict. */
typedef int (*tdb_py_dict_fn)(tdb_py_process *p, uint64_t key, uint64_t value, void *ctx);
long tdb_py_dict_walk(tdb_py_process *p, uint64_t addr, size_t max, tdb_py_dict_fn fn,
                      void *ctx);
/* The dict's ma_used, or -1. */
int64_t tdb_py_dict_len(tdb_py_process *p, uint64_t addr);
/* The value for the str key NAME, 0 when absent or unreadable. */
uint64_t tdb_py_dict_get(tdb_py_process *p, uint64_t addr, const char *name);
/* Walk the attributes of the object at OBJ (its instance dict, or its
 * inline or split values), as tdb_py_dict_walk: 0 when it has a dict
 * that is not there yet, -1 when it has none that can be read (its class
 * has __slots__, say). */
long tdb_py_instance_walk(tdb_py_process *p, uint64_t obj, size_t max, tdb_py_dict_fn fn,
                          void *ctx);
/* The attribute NAME in the instance dict (or inline values) of the
 * object at OBJ, 0 when absent or unreadable. */
uint64_t tdb_py_instance_attr(tdb_py_process *p, uint64_t obj, const char *name);

/* A tuple's (or list's) size and item I. */
int64_t tdb_py_seq_len(tdb_py_process *p, uint64_t addr);
uint64_t tdb_py_seq_item(tdb_py_process *p, uint64_t addr, int64_t i);

/* Where the frame object at OBJ is: its code's file and name (new
 * strings) and its line (-1 when unknown).  Returns 0, or -1 when OBJ is
 * not a readable frame object (nothing set). */
int tdb_py_frame_object_where(tdb_py_process *p, uint64_t obj, char **file, char **name,
                              int *line);

/* A pointer read from a frame slot: 3.14's tagged references cleared. */
uint64_t tdb_py_untag(const tdb_py_process *p, uint64_t v);

#endif
