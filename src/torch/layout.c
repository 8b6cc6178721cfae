/* torch/layout.c: the tensor layout of a torch build, by calibration in a
 * helper process (whose probes torch/solve.c solves and verifies), and
 * cached per build (see torch/layout.h). */
#include "torch/layout.h"

#include "native/elf.h"
#include "process/spawn.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define HELPER_TIMEOUT_MS 60000
#define LAYOUT_FORMAT 1

/*
 * The helper: the target's interpreter on the target's torch package
 * (argv[1]: the directory holding torch/).  Each probe is a tensor whose
 * every field torch itself reports; the solver finds where each is kept.
 * What each probe is for:
 *  - "strided": sizes, strides and storage offset all distinct and unusual;
 *  - "dtype-*": one tensor per dtype, same shape, made by a factory and
 *    filled in place (torch.tensor() and views get autograd metadata,
 *    these do not: "plain"): the dtype's code and size;
 *  - "dims6", "dims7": more dimensions than fit inline in TensorImpl;
 *  - "meta" (and "cuda" where there is one): device codes;
 *  - "leaf-grad*", "nonleaf": where autograd metadata, its requires_grad_
 *    flag and grad_fn are (a leaf that had requires_grad switched off keeps
 *    its metadata with the flag down);
 *  - "pow-*": PowBackward0 nodes saving the exponent as a c10::Scalar of
 *    each kind (double, int, bool, complex): the Scalar's tag and value;
 *  - "clamp-*": ClampBackward1 nodes saving c10::optional<c10::Scalar>
 *    min and max, one of them empty: the optional's flag.
 * It prints one line, then waits for its stdin to close.
 */
static const char helper_script[] =
    "import sys, json, os\n"
    "sys.path.insert(0, sys.argv[1])\n"
    "import torch\n"
    "keep, probes = [], []\n"
    "def num(v):\n"
    "    return [v.real, v.imag] if isinstance(v, complex) else v\n"
    "def add(name, t, plain=False, **extra):\n"
    "    keep.append(t)\n"
    "    d = {'name': name, 'impl': t._cdata, 'obj': id(t), 'sizes': list(t.shape),\n"
    "         'strides': list(t.stride()), 'offset': t.storage_offset(),\n"
    "         'dtype': str(t.dtype).replace('torch.', ''), 'itemsize': t.element_size(),\n"
    "         'device': t.device.type, 'index': -1 if t.device.index is None else t.device.index,\n"
    "         'requires_grad': t.requires_grad, 'leaf': t.is_leaf, 'plain': plain, 'numel': t.numel()}\n"
    "    if t.device.type == 'cpu':\n"
    "        st = t.storage()\n"
    "        d['data'] = st.data_ptr()\n"
    "        d['nbytes'] = st.nbytes()\n"
    "        d['values'] = [num(v) for v in t.detach().flatten()[:8].tolist()]\n"
    "    d.update(extra)\n"
    "    probes.append(d)\n"
    "add('strided', torch.arange(1000, dtype=torch.float32).as_strided((3, 5, 7), (97, 13, 2), 11))\n"
    "for dt in (torch.float32, torch.float64, torch.float16, torch.bfloat16, torch.int8, torch.uint8,\n"
    "           torch.int16, torch.int32, torch.int64, torch.bool, torch.complex64, torch.complex128):\n"
    "    vals = [[0, 1, 2], [3, 4, 5]]\n"
    "    if dt is torch.bool:\n"
    "        vals = [[False, True, True], [False, False, True]]\n"
    "    elif dt.is_complex:\n"
    "        vals = [[0, 1+2j, 2], [3-1j, 4, 5j]]\n"
    "    t = torch.empty(2, 3, dtype=dt)\n"
    "    t.copy_(torch.tensor(vals))\n"
    "    add('dtype-' + str(dt).replace('torch.', ''), t, plain=True)\n"
    "z = torch.empty((), dtype=torch.float64)\n"
    "z.fill_(2.5)\n"
    "add('zero-dim', z, plain=True)\n"
    "add('dims6', torch.arange(48, dtype=torch.float32).reshape(2, 1, 3, 1, 2, 4))\n"
    "add('dims7', torch.arange(96, dtype=torch.int32).reshape(2, 3, 1, 2, 1, 2, 4).transpose(0, 1))\n"
    "add('transposed', torch.arange(12, dtype=torch.float64).reshape(3, 4).t())\n"
    "add('empty', torch.empty(0, 3), plain=True)\n"
    "add('offset', torch.arange(10)[4:])\n"
    "add('meta', torch.empty(2, 3, device='meta'), plain=True)\n"
    "if torch.cuda.is_available():\n"
    "    add('cuda', torch.ones(2, device='cuda'), plain=True)\n"
    "a = torch.ones(3, requires_grad=True)\n"
    "add('leaf-grad-unused', torch.ones(4, requires_grad=True))\n"
    "add('leaf-grad', a)\n"
    "off = torch.ones(5, requires_grad=True)\n"
    "off.requires_grad_(False)\n"
    "add('leaf-grad-off', off)\n"
    "ac = torch.ones(3, dtype=torch.complex128, requires_grad=True)\n"
    "add('nonleaf', a * 3)\n"
    "for kind, v in (('double', 2.75), ('int', -123457), ('bool', True), ('complex', 2 + 3j)):\n"
    "    add('pow-' + kind, (ac if kind == 'complex' else a).pow(v), scalar={'kind': kind, 'value': num(v)})\n"
    "add('clamp-min', a.clamp(min=2.75), clamp={'min': 2.75})\n"
    "add('clamp-min2', a.clamp(min=-7.25), clamp={'min': -7.25})\n"
    "add('clamp-max', a.clamp(max=-5.5), clamp={'max': -5.5})\n"
    "def lib(part):\n"
    "    for line in open('/proc/self/maps'):\n"
    "        f = line.split()\n"
    "        if len(f) >= 6 and os.path.basename(f[5]).startswith(part):\n"
    "            return f[5]\n"
    "print('TDEBUG-PROBES ' + json.dumps({'version': torch.__version__,\n"
    "      'torch': os.path.dirname(torch.__file__),\n"
    "      'libs': {'c10': lib('libc10.so'), 'cpu': lib('libtorch_cpu.so'),\n"
    "               'python': lib('libtorch_python.so')},\n"
    "      'probes': probes}), flush=True)\n"
    "sys.stdin.read()\n";

/* --- the helper --------------------------------------------------------- */

int tdb_torch_calibrate(const char *python, const char *torch_dir, tdb_tensor_layout *out,
                        json_t **out_libs, tdb_error *err)
{
    return tdb_torch_calibrate_as(python, torch_dir, NULL, out, out_libs, err);
}

int tdb_torch_calibrate_as(const char *python, const char *torch_dir, const tdb_child_user *as,
                           tdb_tensor_layout *out, json_t **out_libs, tdb_error *err)
{
    char *argv[] = {(char *)python, "-c", (char *)helper_script, (char *)torch_dir, NULL};
    /* Another user's: isolated (no PYTHON* variables, no user site), in an
     * environment of nothing but a PATH. */
    char *argv_as[] = {(char *)python, "-I", "-c", (char *)helper_script, (char *)torch_dir, NULL};
    char *env_as[] = {"PATH=/usr/local/bin:/usr/bin:/bin", "LANG=C.UTF-8", "TDEBUG_ACTION=off", NULL};
    /* The helper must not pause for a debugger like the programs started
     * from a shell where 'tdebug env' was evaluated. */
    char *env[] = {"LD_AUDIT", "TDEBUG_ACTION=off", NULL};
    tdb_child c;
    tdb_mem m;
    tdb_error e = {0};
    json_t *doc = NULL;
    char *line = NULL;
    int rc = -1;

    if (tdb_child_start_as(as ? argv_as : argv, as ? env_as : env, as, &c, &e) < 0) {
        tdb_error_set(err, e.code, "cannot calibrate for torch in '%s': %s", torch_dir, e.msg);
        return -1;
    }
    tdb_mem_init(&m, c.pid);
    line = tdb_child_wait_line(&c, "TDEBUG-PROBES ", HELPER_TIMEOUT_MS, &e);
    if (!line) {
        tdb_error_set(err, e.code, "cannot calibrate for torch in '%s': '%s' %s", torch_dir, python, e.msg);
        goto cleanup;
    }
    json_error_t je;
    doc = json_loads(line, 0, &je);
    if (!doc) {
        tdb_error_set(err, EINVAL, "cannot calibrate: the helper's answer is not JSON: %s", je.text);
        goto cleanup;
    }
    if (tdb_torch_solve(&m, json_object_get(doc, "probes"), out, err) < 0)
        goto cleanup;
    if (out_libs)
        *out_libs = json_incref(json_object_get(doc, "libs"));
    rc = 0;
cleanup:
    tdb_mem_close(&m);
    /* Killed, not asked to exit: the interpreter's finalization after
     * 'import torch' takes half a second, and the helper holds nothing. */
    tdb_child_finish(&c, 0);
    json_decref(doc);
    free(line);
    return rc;
}

/* --- a process's torch -------------------------------------------------- */

enum { LIB_C10, LIB_CPU, LIB_PYTHON, N_LIBS };
static const char *const lib_prefix[N_LIBS] = {"libc10.so", "libtorch_cpu.so", "libtorch_python.so"};
static const char *const lib_key[N_LIBS] = {"c10", "cpu", "python"};

struct tdb_torch {
    pid_t pid;
    char *python;          /* the interpreter (/proc/PID/exe) */
    char *torch_dir;       /* the directory holding torch/, or NULL */
    char *lib[N_LIBS];     /* paths as mapped */
    char *build_id[N_LIBS];
    char *key;
    char *cache_path;      /* NULL without a cache directory */
    tdb_tensor_layout layout;
    int origin;            /* 0, 1 cache, 2 calibrated */
    uid_t uid;             /* the process's owner (effective ids) */
    gid_t gid;
    int as_owner;          /* calibrated with the owner's rights: not cached */
    double seconds;
    tdb_error failed;      /* a calibration that failed is not retried */
};

void tdb_torch_free(tdb_torch *t)
{
    if (!t)
        return;
    free(t->python);
    free(t->torch_dir);
    for (int i = 0; i < N_LIBS; i++) {
        free(t->lib[i]);
        free(t->build_id[i]);
    }
    free(t->key);
    free(t->cache_path);
    free(t);
}

static int load_cache(tdb_torch *t)
{
    json_error_t je;
    tdb_tensor_layout l;
    json_t *doc = t->cache_path ? json_load_file(t->cache_path, 0, &je) : NULL;
    int ok = doc && json_integer_value(json_object_get(doc, "format")) == LAYOUT_FORMAT &&
             json_is_string(json_object_get(doc, "key")) &&
             !strcmp(json_string_value(json_object_get(doc, "key")), t->key) &&
             tdb_tensor_layout_from_json(json_object_get(doc, "layout"), &l, NULL) == 0;
    if (ok) {
        t->layout = l;
        t->origin = 1;
    }
    json_decref(doc);
    return ok;
}

/* Write the cache file whole or not at all: a temporary file renamed. */
static void save_cache(const tdb_torch *t)
{
    if (!t->cache_path)
        return;
    json_t *doc = json_pack("{s:i,s:s,s:o}", "format", LAYOUT_FORMAT, "key", t->key, "layout",
                            tdb_tensor_layout_to_json(&t->layout));
    json_t *libs = json_object();
    for (int i = 0; i < N_LIBS; i++)
        if (t->lib[i])
            json_object_set_new(libs, lib_key[i], json_pack("{s:s,s:s?}", "path", t->lib[i], "build_id",
                                                            t->build_id[i]));
    json_object_set_new(doc, "libraries", libs);
    char *text = json_dumps(doc, JSON_INDENT(1) | JSON_SORT_KEYS);
    char *tmp = tdb_xasprintf("%s.tmp.%d", t->cache_path, (int)getpid());
    int fd = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0600);
    if (fd >= 0) {
        size_t len = strlen(text);
        int ok = write(fd, text, len) == (ssize_t)len && fsync(fd) == 0;
        close(fd);
        if (!ok || rename(tmp, t->cache_path) < 0)
            unlink(tmp); /* best effort: a cache that cannot be written only costs time */
    }
    free(tmp);
    free(text);
    json_decref(doc);
}

/* The effective uid and gid of PID (/proc/PID/status). */
static int owner_of(pid_t pid, uid_t *uid, gid_t *gid, tdb_error *err)
{
    char path[64], line[256];
    unsigned int u[4], g[4];
    int got = 0;
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    FILE *f = fopen(path, "re");
    if (!f) {
        tdb_error_errno(err, "cannot read '%s'", path);
        return -1;
    }
    while (fgets(line, sizeof(line), f)) {
        if (sscanf(line, "Uid: %u %u %u %u", &u[0], &u[1], &u[2], &u[3]) == 4)
            got |= 1;
        else if (sscanf(line, "Gid: %u %u %u %u", &g[0], &g[1], &g[2], &g[3]) == 4)
            got |= 2;
    }
    fclose(f);
    if (got != 3) {
        tdb_error_set(err, EINVAL, "cannot tell who owns pid %d from '%s'", (int)pid, path);
        return -1;
    }
    *uid = u[1];
    *gid = g[1];
    return 0;
}

int tdb_torch_open(pid_t pid, const tdb_maps *maps, tdb_torch **out, tdb_error *err)
{
    tdb_maps own = {NULL, 0, NULL};
    tdb_torch *t = NULL;
    int rc = -1;
    char exe[64], buf[4096];

    if (!maps) {
        if (tdb_maps_read(pid, &own, err) < 0)
            return -1;
        maps = &own;
    }
    t = tdb_xcalloc(1, sizeof(*t));
    t->pid = pid;
    for (size_t i = 0; i < maps->n; i++) {
        const char *path = maps->v[i].path;
        if (!path || path[0] != '/')
            continue;
        const char *base = tdb_base_name(path);
        for (int k = 0; k < N_LIBS; k++)
            if (!t->lib[k] && !strncmp(base, lib_prefix[k], strlen(lib_prefix[k])))
                t->lib[k] = tdb_xstrdup(path);
        const char *c = strstr(path, "/torch/_C.");
        if (!t->torch_dir && c && strchr(c + 1, '/') == c + 6)
            t->torch_dir = tdb_xstrndup(path, (size_t)(c - path));
    }
    if (!t->lib[LIB_C10]) {
        rc = 1;
        goto cleanup;
    }
    if (owner_of(pid, &t->uid, &t->gid, err) < 0)
        goto cleanup;
    snprintf(exe, sizeof(exe), "/proc/%d/exe", (int)pid);
    ssize_t n = readlink(exe, buf, sizeof(buf) - 1);
    if (n > 0) {
        buf[n] = '\0';
        char *del = strstr(buf, " (deleted)");
        if (del && del[10] == '\0')
            *del = '\0';
        t->python = tdb_xstrdup(buf);
    }
    tdb_buf key = TDB_BUF_INIT, file = TDB_BUF_INIT;
    for (int k = 0; k < N_LIBS; k++) {
        if (!t->lib[k])
            continue;
        tdb_elf *elf = tdb_elf_open(t->lib[k], err);
        if (!elf) {
            tdb_buf_free(&key);
            tdb_buf_free(&file);
            goto cleanup;
        }
        t->build_id[k] = tdb_elf_build_id(elf);
        tdb_elf_free(elf);
        tdb_buf_addf(&key, "%s%s %s", key.len ? ", " : "", lib_key[k],
                     t->build_id[k] ? t->build_id[k] : "none");
        tdb_buf_addf(&file, "%s%s", file.len ? "-" : "", t->build_id[k] ? t->build_id[k] : "none");
    }
    t->key = tdb_buf_detach(&key);
    char *dir = tdb_user_cache_dir("torch-layout", NULL);
    if (dir && t->build_id[LIB_C10])
        t->cache_path = tdb_xasprintf("%s/%s.json", dir, tdb_buf_str(&file));
    free(dir);
    tdb_buf_free(&file);
    load_cache(t);
    *out = t;
    t = NULL;
    rc = 0;
cleanup:
    tdb_torch_free(t);
    if (maps == &own)
        tdb_maps_free(&own);
    return rc;
}

const tdb_tensor_layout *tdb_torch_layout(tdb_torch *t, tdb_error *err)
{
    if (t->origin)
        return &t->layout;
    if (t->failed.set) {
        tdb_error_set(err, t->failed.code, "%s", t->failed.msg);
        return NULL;
    }
    if (!t->python || !t->torch_dir) {
        tdb_error_set(&t->failed, ENOENT,
                      "cannot learn the tensor layout of the torch in pid %d: %s", (int)t->pid,
                      !t->python ? "its executable is unknown"
                                 : "it has no torch/_C module mapped (tdebug calibrates through torch's Python package)");
    } else {
        int64_t t0 = tdb_now_ms();
        json_t *libs = NULL;
        tdb_tensor_layout l;
        tdb_error e = {0};
        /* The helper runs the process's interpreter on the process's torch
         * package: code its owner controls.  Another user's runs with that
         * user's rights only (and what it says is not cached for ours);
         * without the right to become them, not at all. */
        tdb_child_user owner = {t->uid, t->gid};
        const tdb_child_user *as = t->uid == geteuid() ? NULL : &owner;
        if (as && geteuid() != 0) {
            tdb_error_set(&e, EPERM,
                          "cannot learn the tensor layout of the torch in pid %d: its owner is uid "
                          "%u, and tdebug runs no Python of another user as you (run tdebug as "
                          "uid %u, or as root: its helper then runs as uid %u)",
                          (int)t->pid, (unsigned)t->uid, (unsigned)t->uid, (unsigned)t->uid);
            tdb_error_set(&t->failed, e.code, "%s", e.msg);
        } else if (tdb_torch_calibrate_as(t->python, t->torch_dir, as, &l, &libs, &e) < 0) {
            tdb_error_set(&t->failed, e.code, "%s", e.msg);
        } else {
            /* The helper must have loaded the very libraries of the target. */
            const char *theirs = json_string_value(json_object_get(libs, "c10"));
            char *a = theirs ? realpath(theirs, NULL) : NULL, *b = realpath(t->lib[LIB_C10], NULL);
            if (!a || !b || strcmp(a, b) != 0) {
                tdb_error_set(&t->failed, EXDEV,
                              "cannot learn the tensor layout of the torch in pid %d: a helper running "
                              "'%s' on '%s' loaded '%s', not the process's '%s'",
                              (int)t->pid, t->python, t->torch_dir, theirs ? theirs : "no libc10",
                              t->lib[LIB_C10]);
            } else {
                t->layout = l;
                t->origin = 2;
                t->seconds = (double)(tdb_now_ms() - t0) / 1000.0;
                t->as_owner = as != NULL;
                if (!as)
                    save_cache(t);
            }
            free(a);
            free(b);
        }
        json_decref(libs);
    }
    if (t->failed.set) {
        tdb_error_set(err, t->failed.code, "%s", t->failed.msg);
        return NULL;
    }
    return &t->layout;
}

int tdb_torch_layout_origin(const tdb_torch *t, double *out_seconds)
{
    if (out_seconds)
        *out_seconds = t->seconds;
    return t->origin;
}

const char *tdb_torch_cache_path(const tdb_torch *t)
{
    return t->as_owner ? NULL : t->cache_path;
}

int tdb_torch_calibrated_as(const tdb_torch *t, uid_t *out_uid)
{
    if (t->as_owner && out_uid)
        *out_uid = t->uid;
    return t->as_owner;
}

const char *tdb_torch_key(const tdb_torch *t)
{
    return t->key;
}

int tdb_tensor_from_pyobject(const tdb_tensor_ctx *ctx, uint64_t obj, json_t **out, tdb_error *err)
{
    const tdb_tensor_layout *l = tdb_torch_layout(ctx->torch, err);
    json_t *t = l ? tdb_tensor_decode_pyobject(ctx->mem, l, obj, ctx->max_values, err) : NULL;
    if (!t)
        return -1;
    *out = t;
    return 0;
}
