/*
 * torch/layout.h: the tensor layout of the torch build a process runs,
 * found by calibration and cached per build.
 *
 * Debian's torch (like PyPI's) has no debug info, and TensorImpl's layout
 * is in no header a user has: tdebug types no offsets.  Instead, once per
 * torch build:
 *  1. the build is named by the GNU build-ids of the libc10,
 *     libtorch_cpu and libtorch_python the process has mapped;
 *  2. a helper process runs the process's own interpreter
 *     (/proc/PID/exe) on the same torch package (the directory of the
 *     torch/_C module it has mapped), makes tensors of known sizes,
 *     strides, storage offsets, dtypes, devices and requires_grad (and
 *     autograd nodes holding known c10::Scalar values), prints what torch
 *     says of each (x._cdata is the TensorImpl, id(x) the Python object,
 *     x.data_ptr() the data) and waits;
 *  3. tdebug reads the helper's memory and finds, for each field, the one
 *     offset where every probe holds its known value (tdb_torch_solve());
 *  4. the layout is checked by decoding every probe with it (torch/tensor.h)
 *     and comparing with what torch said; only then is it used, and
 *     written to the cache ($XDG_CACHE_HOME/tdebug/torch-layout/, else
 *     ~/.cache/tdebug/torch-layout/; one JSON file per build, written
 *     atomically), so the next process of the same build reads it at once.
 * The helper never touches the target; it is killed after at most 60 s.
 * Every later decode still checks each tensor (torch/tensor.h).
 *
 * Use from a session (the process stopped by gdb):
 *
 *     tdb_torch *t;
 *     if (tdb_torch_open(pid, maps, &t, &err) == 0) {   // cheap
 *         const tdb_tensor_layout *l = tdb_torch_layout(t, &err); // calibrates once
 *         json_t *x = l ? tdb_tensor_decode_any(&mem, l, addr, -1, NULL, &err) : NULL;
 *     }
 */
#ifndef TDB_TORCHLAYOUT_H
#define TDB_TORCHLAYOUT_H

#include "base/common.h"
#include "process/procfs.h"
#include "torch/tensor.h"
#include "process/spawn.h"

#include <jansson.h>
#include <sys/types.h>

typedef struct tdb_torch tdb_torch;

/* Find torch in process PID from its memory map MAPS (NULL: read it): the
 * libraries, their build-ids, the interpreter and the torch package, and
 * the cached layout of this build when there is one.  Does not calibrate.
 * 0 and *OUT (free with tdb_torch_free); 1 when PID has no libc10 mapped
 * (no torch); -1 with ERR set (the process is gone, a library unreadable). */
int tdb_torch_open(pid_t pid, const tdb_maps *maps, tdb_torch **out, tdb_error *err);
void tdb_torch_free(tdb_torch *t); /* accepts NULL */

/* The layout for T's build: from the cache, else calibrated now (about
 * a second: the helper's 'import torch') and cached.  Borrowed from T; NULL
 * with ERR set when calibration fails (the message says what the helper
 * said or which field was not found): decoding must then be refused. */
const tdb_tensor_layout *tdb_torch_layout(tdb_torch *t, tdb_error *err);

/* What tdb_torch_layout() did: 0 nothing yet, 1 read the cache, 2
 * calibrated (and *OUT_SECONDS, if given, how long it took). */
int tdb_torch_layout_origin(const tdb_torch *t, double *out_seconds);
/* The cache file of T's build (borrowed; NULL when there is no cache
 * directory) and the build key ("c10 BUILDID, cpu BUILDID, python
 * BUILDID"). */
const char *tdb_torch_cache_path(const tdb_torch *t);
const char *tdb_torch_key(const tdb_torch *t);
/* Nonzero when the layout was learned with the rights of the process's
 * owner, another user (*OUT_UID, if given): the helper ran their code, so
 * what it said is not cached (tdb_torch_cache_path() is then NULL). */
int tdb_torch_calibrated_as(const tdb_torch *t, uid_t *out_uid);

/* Calibrate: run PYTHON on the torch package in TORCH_DIR (the directory
 * holding torch/), solve and verify the layout into *OUT.  *OUT_LIBS (if
 * given) gets a new reference to the helper's report of the libraries it
 * loaded ({"c10": path, "cpu": path, "python": path}).  0, or -1 with ERR
 * set. */
int tdb_torch_calibrate(const char *python, const char *torch_dir, tdb_tensor_layout *out,
                        json_t **out_libs, tdb_error *err);
/* The same with AS's rights (not NULL: a user other than ours), isolated
 * ('python -I') in an environment of nothing but PATH and LANG. */
int tdb_torch_calibrate_as(const char *python, const char *torch_dir, const tdb_child_user *as,
                           tdb_tensor_layout *out, json_t **out_libs, tdb_error *err);

/* The solver, on its own: PROBES is the helper's JSON (an array of
 * {"name", "impl", "obj", "sizes", "strides", "offset", "dtype",
 * "itemsize", "device", "index", "requires_grad", "leaf", "plain",
 * "numel", "data", "nbytes", "values", "scalar", "clamp"}; see
 * torch/layout.c), M the memory holding those objects.  Fills *OUT and
 * verifies it on every probe.  0, or -1 with ERR naming the field not
 * found or the probe that did not verify. */
int tdb_torch_solve(tdb_mem *m, const json_t *probes, tdb_tensor_layout *out, tdb_error *err);

/* What the Python-values reader calls for a torch.Tensor object: the
 * tensor JSON of torch/tensor.h for the Python tensor object at OBJ (a
 * THPVariable), with CTX's torch build and memory. */
typedef struct tdb_tensor_ctx {
    tdb_torch *torch; /* the process's torch (tdb_torch_open) */
    tdb_mem *mem;     /* its memory */
    int max_values;   /* first values shown; <0: TDB_TENSOR_VALUES_DEFAULT */
} tdb_tensor_ctx;

/* 0 and *OUT (new reference), or -1 with ERR set (no layout: calibration
 * failed; or the object holds no valid tensor). */
int tdb_tensor_from_pyobject(const tdb_tensor_ctx *ctx, uint64_t obj, json_t **out,
                             tdb_error *err);

#endif
