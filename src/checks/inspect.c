/* checks/inspect.c: module names and processes turned into files (see checks/inspect.h). */
#include "checks/inspect.h"
#include "native/elf.h"
#include "process/spawn.h"

#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int tdb_looks_like_module(const char *arg)
{
    struct stat st;
    if (!*arg || strchr(arg, '/') || stat(arg, &st) == 0)
        return 0;
    /* identifier(.identifier)* */
    const char *p = arg;
    for (;;) {
        if (!(isalpha((unsigned char)*p) || *p == '_'))
            return 0;
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
        if (!*p)
            return 1;
        if (*p != '.')
            return 0;
        p++;
    }
}

int tdb_py_json(const char *python, const char *code, char *const args[], int timeout_ms,
                json_t **out, tdb_error *err)
{
    size_t nargs = 0;
    while (args && args[nargs])
        nargs++;
    char **argv = tdb_xcalloc(nargs + 4, sizeof(char *));
    argv[0] = (char *)python;
    argv[1] = "-c";
    argv[2] = (char *)code;
    for (size_t i = 0; i < nargs; i++)
        argv[3 + i] = args[i];
    /* The interpreter must answer for itself: no user site tweaks that
     * would print, no bytecode written into the user's tree. */
    char *env[] = {"PYTHONDONTWRITEBYTECODE=1", "PYTHONWARNINGS=ignore", "PYTHONSTARTUP", NULL};
    tdb_spawn_result r = TDB_SPAWN_RESULT_INIT;
    int rc = -1;

    if (tdb_spawn_capture(argv, env, timeout_ms, &r, err) < 0)
        goto cleanup;
    if (r.timed_out) {
        tdb_error_set(err, ETIMEDOUT, "'%s' did not answer within %d s", python,
                      timeout_ms / 1000);
        goto cleanup;
    }
    /* The answer is the last line: anything the interpreter printed
     * before (a sitecustomize, a noisy import) is ignored. */
    char *last = r.out + strlen(r.out);
    while (last > r.out && (last[-1] == '\n' || last[-1] == ' '))
        *--last = '\0';
    char *nl = strrchr(r.out, '\n');
    const char *line = nl ? nl + 1 : r.out;
    json_error_t jerr;
    json_t *j = *line ? json_loads(line, 0, &jerr) : NULL;
    if (r.status != 0 || !j) {
        json_decref(j);
        /* A traceback's last line says what went wrong. */
        char *e = r.err + strlen(r.err);
        while (e > r.err && (e[-1] == '\n' || e[-1] == ' '))
            *--e = '\0';
        char *lastl = strrchr(r.err, '\n');
        const char *why = lastl ? lastl + 1 : *r.err ? r.err : line;
        tdb_error_set(err, 0, "'%s' failed (exit %d)%s%s", python, r.status,
                      *why ? ": " : "", why);
        goto cleanup;
    }
    *out = j;
    rc = 0;
cleanup:
    tdb_spawn_result_free(&r);
    free(argv);
    return rc;
}

int tdb_py_executable(const char *python, const char *module, int timeout_ms, char **out_exe,
                      int *out_has_module, tdb_error *err)
{
    /* Bytes, not text: a path that is not UTF-8 must come out whole. */
    static const char probe[] =
        "import importlib.util, os, sys\n"
        "sys.stdout.buffer.write(os.fsencode(sys.executable) + b'\\n')\n"
        "sys.stdout.flush()\n"
        "try:\n"
        "    found = len(sys.argv) < 2 or importlib.util.find_spec(sys.argv[1]) is not None\n"
        "except Exception:\n"
        "    found = False\n"
        "sys.exit(0 if found else 3)\n";
    char *argv[] = {(char *)python, "-c", (char *)probe, (char *)module, NULL};
    tdb_spawn_result r = TDB_SPAWN_RESULT_INIT;
    char *exe = NULL;
    int rc = -1;

    if (tdb_spawn_capture(argv, NULL, timeout_ms, &r, err) < 0)
        return -1;
    exe = tdb_first_line(r.out);
    if (r.timed_out || (r.status != 0 && r.status != 3) || exe[0] != '/') {
        tdb_error_set_exit(err, TDB_EXIT_NOEXEC, 0, "cannot run '%s': it does not work as a "
                           "Python interpreter%s", python,
                           r.timed_out ? " (it did not answer in time)" : "");
        goto cleanup;
    }
    if (out_has_module)
        *out_has_module = r.status == 0;
    *out_exe = exe;
    exe = NULL;
    rc = 0;
cleanup:
    free(exe);
    tdb_spawn_result_free(&r);
    return rc;
}

/* Walk the dotted name down with PathFinder, which reads directories but
 * runs no package __init__; fall back to importlib.util.find_spec (which
 * imports the parents) for namespace tricks and custom finders. */
static const char module_code[] =
    "import sys, json, importlib.util, importlib.machinery as m\n"
    "name = sys.argv[1]\n"
    "parts = name.split('.')\n"
    "spec = None\n"
    "try:\n"
    "    spec = m.PathFinder.find_spec(parts[0])\n"
    "    for part in parts[1:]:\n"
    "        if spec is None or spec.submodule_search_locations is None:\n"
    "            spec = None\n"
    "            break\n"
    "        spec = m.PathFinder.find_spec(part, list(spec.submodule_search_locations))\n"
    "except Exception:\n"
    "    spec = None\n"
    "err = None\n"
    "if spec is None:\n"
    "    try:\n"
    "        spec = importlib.util.find_spec(name)\n"
    "    except ModuleNotFoundError as e:\n"
    "        err = 'no module named %r' % e.name\n"
    "    except Exception as e:\n"
    "        err = '%s: %s' % (type(e).__name__, e)\n"
    "if spec is None:\n"
    "    print(json.dumps({'error': err or 'no module named %r' % name}))\n"
    "else:\n"
    "    print(json.dumps({'origin': spec.origin,\n"
    "        'extension': isinstance(spec.loader, m.ExtensionFileLoader),\n"
    "        'builtin': spec.origin in ('built-in', 'frozen'),\n"
    "        'executable': sys.executable}))\n";

char *tdb_py_module_path(const char *python, const char *module, tdb_error *err)
{
    json_t *j = NULL;
    char *path = NULL;
    char *args[] = {(char *)module, NULL};

    if (tdb_py_json(python, module_code, args, 120000, &j, err) < 0)
        return NULL;
    const char *e = json_string_value(json_object_get(j, "error"));
    const char *origin = json_string_value(json_object_get(j, "origin"));
    if (e) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, 0, "cannot inspect module '%s': %s (as seen by %s)",
                           module, e, python);
    } else if (json_is_true(json_object_get(j, "builtin"))) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, 0, "cannot inspect module '%s': it is built into "
                           "the interpreter (inspect '%s' itself)", module,
                           json_string_value(json_object_get(j, "executable")));
    } else if (!origin || !json_is_true(json_object_get(j, "extension"))) {
        tdb_error_set_exit(err, TDB_EXIT_FAIL, 0, "cannot inspect module '%s': it is Python "
                           "source (%s), not a native extension (name an extension module, "
                           "e.g. 'torch._C')", module, origin ? origin : "no file");
    } else {
        path = tdb_xstrdup(origin);
    }
    json_decref(j);
    return path;
}

static int has_suffix(const char *s, const char *suffix)
{
    size_t n = strlen(s), m = strlen(suffix);
    return n >= m && strcmp(s + n - m, suffix) == 0;
}

static int is_extension_module(const char *path)
{
    const char *base = tdb_base_name(path);
    return strstr(base, ".cpython-") || has_suffix(base, ".abi3.so");
}

int tdb_object_matters(const char *path, const char *exe)
{
    const char *base = tdb_base_name(path);
    if (exe && strcmp(path, exe) == 0)
        return 1;
    if (!strncmp(base, "libpython", 9))
        return 1;
    /* Extension modules: foo.cpython-311-x86_64-linux-gnu.so, foo.abi3.so,
     * and plain foo.so in lib-dynload or site-packages. */
    if (is_extension_module(path))
        return 1;
    if (has_suffix(base, ".so") && (strstr(path, "/lib-dynload/") ||
                                    strstr(path, "-packages/")))
        return 1;
    return tdb_is_torch_object(path) || !strncmp(base, "libshm", 6) ||
           !strncmp(base, "libcaffe2", 9);
}

int tdb_is_torch_object(const char *path)
{
    const char *base = tdb_base_name(path);
    return strstr(path, "/torch/") || !strncmp(base, "libtorch", 8) || !strncmp(base, "libc10", 6);
}

char **tdb_pid_objects(pid_t pid, int which, size_t *out_n, tdb_error *err)
{
    char mapsp[64], exep[64], exe[PATH_MAX];
    snprintf(mapsp, sizeof(mapsp), "/proc/%d/maps", (int)pid);
    snprintf(exep, sizeof(exep), "/proc/%d/exe", (int)pid);
    tdb_error rerr = {0};
    char *maps = tdb_read_file(mapsp, NULL, &rerr);
    if (!maps) {
        if (rerr.code == ENOENT)
            tdb_error_set_exit(err, TDB_EXIT_FAIL, ENOENT, "cannot inspect pid %d: no such "
                               "process", (int)pid);
        else
            tdb_error_set_exit(err, TDB_EXIT_FAIL, rerr.code, "cannot inspect pid %d: cannot "
                               "read %s: %s (run as the process's user, or as root)", (int)pid,
                               mapsp, strerror(rerr.code));
        return NULL;
    }
    ssize_t n = readlink(exep, exe, sizeof(exe) - 1);
    const char *exe_path = NULL;
    if (n > 0) {
        exe[n] = '\0';
        if (has_suffix(exe, " (deleted)"))
            exe[n - 10] = '\0';
        exe_path = exe;
    }

    /* First every ELF object mapped with code (or any .so with --all)... */
    char **mapped = NULL, **readable = NULL;
    size_t n_mapped = 0, n_readable = 0;
    char *save = NULL;
    for (char *line = strtok_r(maps, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        char perms[8] = "";
        unsigned long long inode = 0;
        int path_at = 0;
        if (sscanf(line, "%*s %7s %*s %*s %llu %n", perms, &inode, &path_at) < 2 ||
            !path_at || line[path_at] != '/' || inode == 0)
            continue;
        char *path = line + path_at;
        if (has_suffix(path, " (deleted)"))
            path[strlen(path) - 10] = '\0';
        /* Only code: data-only mappings (fonts, locale archives) are not
         * objects a debugger loads. */
        if (perms[2] != 'x' && (which != TDB_PID_ALL ||
                                (!has_suffix(path, ".so") && !strstr(path, ".so."))))
            continue;
        int dup = 0;
        for (size_t i = 0; i < n_mapped && !dup; i++)
            dup = strcmp(mapped[i], path) == 0;
        if (dup)
            continue;
        /* A process in another mount namespace sees other files under the
         * same names: read them through its root when ours differ. */
        struct stat st;
        tdb_ptrs_push(&mapped, &n_mapped, tdb_xstrdup(path));
        tdb_ptrs_push(&readable, &n_readable,
                      stat(path, &st) == 0 && (unsigned long long)st.st_ino == inode
                          ? tdb_xstrdup(path)
                          : tdb_xasprintf("/proc/%d/root%s", (int)pid, path));
    }
    /* ...then those that matter: by name, or living in the directory tree
     * of a mapped extension module (a package's own libraries, like
     * torch/lib or tinytensor/lib). */
    char **v = tdb_xcalloc(n_mapped + 1, sizeof(char *));
    size_t count = 0;
    for (size_t i = 0; i < n_mapped; i++) {
        int keep = which == TDB_PID_ALL || tdb_object_matters(mapped[i], exe_path);
        for (size_t j = 0; j < n_mapped && !keep; j++) {
            const char *slash = strrchr(mapped[j], '/');
            size_t dir = slash ? (size_t)(slash - mapped[j]) : 0;
            keep = dir > 1 && is_extension_module(mapped[j]) &&
                   !strncmp(mapped[i], mapped[j], dir) && mapped[i][dir] == '/';
        }
        if (keep)
            v[count++] = readable[i], readable[i] = NULL;
    }
    for (size_t i = 0; i < n_mapped; i++) {
        free(mapped[i]);
        free(readable[i]);
    }
    free(mapped);
    free(readable);
    free(maps);
    if (out_n)
        *out_n = count;
    return v;
}

/* --- What a target loads ------------------------------------------------ */

/* The program interpreter tdebug itself runs with: the loader to ask.  New
 * string, or NULL with ERR set. */
static char *our_loader(tdb_error *err)
{
    tdb_elf *e = tdb_elf_open_tables("/proc/self/exe", err);
    tdb_elf_dynamic d;
    char *interp = NULL;
    if (!e)
        return NULL;
    if (tdb_elf_read_dynamic(e, &d, err) == 0) {
        interp = d.interp;
        d.interp = NULL;
        tdb_elf_dynamic_release(&d);
        if (!interp)
            tdb_error_set(err, 0, "tdebug is linked statically: it has no dynamic loader to ask "
                          "which libraries an object loads");
    }
    tdb_elf_free(e);
    return interp;
}

ssize_t tdb_loader_list(const char *object, tdb_loaded_lib **out, tdb_error *err)
{
    char *ld = our_loader(err);
    if (!ld)
        return -1;
    /* What ldd runs: the loader maps OBJECT and what it needs, prints
     * them (a missing one as "not found") and runs none of their code.
     * "./" keeps a bare file name from being looked up as a program. */
    char *path = strchr(object, '/') ? tdb_xstrdup(object) : tdb_xasprintf("./%s", object);
    char *argv[] = {ld, path, NULL};
    /* An LD_AUDIT of 'tdebug env' would pause at torch._C. */
    char *env[] = {"LD_TRACE_LOADED_OBJECTS=1", "LD_AUDIT", "LD_PRELOAD", NULL};
    tdb_spawn_result r = TDB_SPAWN_RESULT_INIT;
    tdb_loaded_lib *v = NULL;
    size_t n = 0, cap = 0;
    ssize_t rc = -1;

    if (tdb_spawn_capture(argv, env, 60000, &r, err) < 0)
        goto cleanup;
    /* "\tNAME => PATH (0xADDRESS)" or "\tNAME => not found". */
    for (char *line = r.out; line && *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        char *arrow = strstr(line, " => ");
        if (arrow) {
            const char *name = line + strspn(line, " \t");
            char *where = arrow + 4;
            char *addr = strstr(where, " (0x");
            for (char *next; addr && (next = strstr(addr + 1, " (0x"));)
                addr = next; /* the last one: a path may hold " (0x" */
            TDB_GROW(v, n, cap);
            v[n].name = tdb_xstrndup(name, (size_t)(arrow - name));
            v[n].path = !strncmp(where, "not found", 9)
                            ? NULL
                            : tdb_xstrndup(where, addr ? (size_t)(addr - where) : strlen(where));
            n++;
        }
        line = nl ? nl + 1 : NULL;
    }
    if (r.timed_out || (!n && r.status != 0)) {
        char *why = tdb_first_line(*r.err ? r.err : r.out);
        tdb_error_set(err, 0, "the dynamic loader cannot list the libraries '%s' loads%s%s",
                      object, *why ? ": " : "", r.timed_out ? "it did not answer in time" : why);
        free(why);
        goto cleanup;
    }
    *out = v;
    v = NULL;
    rc = (ssize_t)n;
cleanup:
    tdb_loaded_libs_free(v, n);
    tdb_spawn_result_free(&r);
    free(path);
    free(ld);
    return rc;
}

void tdb_loaded_libs_free(tdb_loaded_lib *v, size_t n)
{
    for (size_t i = 0; v && i < n; i++) {
        free(v[i].name);
        free(v[i].path);
    }
    free(v);
}

/* The loader's default directories and the multiarch ones (/usr/lib and
 * /usr/lib/x86_64-linux-gnu): a file's neighbours there are not its own. */
static int is_system_lib_dir(const char *dir)
{
    static const char *const dirs[] = {"/lib", "/lib64", "/lib32", "/usr/lib", "/usr/lib64",
                                       "/usr/lib32", "/usr/local/lib"};
    for (size_t i = 0; i < sizeof(dirs) / sizeof(dirs[0]); i++)
        if (!strcmp(dir, dirs[i]))
            return 1;
    for (const char *const *pre = (const char *const[]){"/lib/", "/usr/lib/", NULL}; *pre; pre++)
        if (!strncmp(dir, *pre, strlen(*pre)) && !strchr(dir + strlen(*pre), '/') &&
            strstr(dir + strlen(*pre), "-linux-"))
            return 1;
    return 0;
}

/* The directory whose libraries belong to ROOT_PATH: for MODULE ("a.b._C")
 * its top package's directory, for a file its own directory unless that is
 * a system one.  New string, or NULL. */
static char *package_dir(const char *root_path, const char *module)
{
    char *dir = realpath(root_path, NULL);
    if (!dir)
        return NULL;
    size_t ups = 1;
    for (const char *p = module; p && (p = strchr(p, '.')); p++)
        ups++;
    if (module)
        ups--; /* "torch._C" lives in torch/: one level up is the file's directory */
    for (size_t i = 0; i < ups; i++) {
        char *slash = strrchr(dir, '/');
        if (!slash || slash == dir) {
            free(dir);
            return NULL; /* nothing to call a package at / */
        }
        *slash = '\0';
    }
    if (!module && !is_extension_module(root_path) && is_system_lib_dir(dir)) {
        free(dir);
        return NULL;
    }
    return dir;
}

static int path_under(const char *path, const char *dir)
{
    size_t n = strlen(dir);
    return !strncmp(path, dir, n) && path[n] == '/';
}

/* Is PATH one of the package's own libraries (under PKGDIR), or torch's? */
static int belongs(const char *path, const char *pkgdir)
{
    const char *base = tdb_base_name(path);
    if (tdb_is_torch_object(path) || !strncmp(base, "libshm", 6) || !strncmp(base, "libcaffe2", 9))
        return 1;
    if (!pkgdir)
        return 0;
    char *real = realpath(path, NULL);
    int in = path_under(path, pkgdir) || (real && path_under(real, pkgdir));
    free(real);
    return in;
}

/* Does the file name BASE name library NAME ("libc10.so" names
 * libc10.so.1.13, not libc10_cuda.so)? */
static int names_library(const char *name, const char *base)
{
    size_t n = strlen(name);
    return !strncmp(base, name, n) && (base[n] == '\0' || base[n] == '.');
}

/* A library name as a target: lib*.so*, no directory, not a file here. */
static int is_library_name(const char *arg)
{
    struct stat st;
    return !strchr(arg, '/') && !strncmp(arg, "lib", 3) && strstr(arg, ".so") &&
           stat(arg, &st) < 0;
}

/* The targets being built, and the real paths listed so far. */
typedef struct target_list {
    tdb_target *v;
    size_t n, cap;
    char **seen; /* real paths of the files listed */
    size_t n_seen;
} target_list;

static tdb_target *add_target(target_list *tl, char *label, char *path)
{
    TDB_GROW(tl->v, tl->n, tl->cap);
    tdb_target *t = &tl->v[tl->n++];
    memset(t, 0, sizeof(*t));
    t->label = label;
    t->path = path;
    if (path) {
        char *real = realpath(path, NULL);
        tdb_ptrs_push(&tl->seen, &tl->n_seen, real ? real : tdb_xstrdup(path));
    }
    return t;
}

static int listed(const target_list *tl, const char *path)
{
    char *real = realpath(path, NULL);
    int found = 0;
    for (size_t i = 0; i < tl->n_seen && !found; i++)
        found = !strcmp(tl->seen[i], real ? real : path);
    free(real);
    return found;
}

/* A named object: its path, module name (NULL for a file) and what the
 * loader loads with it (listed on first use). */
typedef struct root {
    const char *label;
    const char *path;
    const char *module;
    tdb_loaded_lib *libs;
    ssize_t n_libs; /* -2: not asked yet; -1: the loader failed (err) */
    tdb_error err;
} root;

static ssize_t root_libs(root *r)
{
    if (r->n_libs == -2)
        r->n_libs = tdb_loader_list(r->path, &r->libs, &r->err);
    return r->n_libs;
}

/* After root R: the libraries it loads that belong to it, breadth first
 * through its DT_NEEDED entries, each as the loader finds it. */
static void add_needed(target_list *tl, root *r)
{
    char *pkgdir = package_dir(r->path, r->module);
    char **todo = NULL, **failed = NULL;
    size_t n_todo = 0, n_failed = 0;

    tdb_ptrs_push(&todo, &n_todo, tdb_xstrdup(r->path));
    for (size_t head = 0; head < n_todo; head++) {
        const char *obj = todo[head];
        tdb_elf *e = tdb_elf_open_tables(obj, NULL);
        tdb_elf_dynamic d;
        if (!e || tdb_elf_read_dynamic(e, &d, NULL) < 0) {
            tdb_elf_free(e); /* said when the object itself is inspected */
            continue;
        }
        tdb_elf_free(e);
        for (size_t i = 0; i < d.n_needed; i++) {
            const char *name = d.needed[i];
            if (root_libs(r) < 0) {
                tdb_target *t = add_target(tl, tdb_xasprintf("the libraries %s loads", r->label),
                                           NULL);
                t->err = r->err;
                r->n_libs = 0; /* said once */
            }
            tdb_loaded_lib *lib = NULL;
            for (ssize_t k = 0; k < r->n_libs && !lib; k++)
                if (!strcmp(r->libs[k].name, name))
                    lib = &r->libs[k];
            if (!lib)
                continue; /* not loaded for it (the loader itself) */
            int said = 0;
            for (size_t k = 0; k < n_failed && !said; k++)
                said = !strcmp(failed[k], name);
            if (!lib->path && !said) {
                tdb_ptrs_push(&failed, &n_failed, tdb_xstrdup(name));
                tdb_target *t = add_target(tl, tdb_xasprintf("%s (loaded by %s)", name,
                                                             r->label), NULL);
                t->loaded_by = tdb_xstrdup(r->label);
                t->needed_by = tdb_xstrdup(obj);
                t->needed_as = tdb_xstrdup(name);
                tdb_error_set_exit(&t->err, TDB_EXIT_FAIL, ENOENT,
                                   "the dynamic loader cannot find '%s', which '%s' needs: %s "
                                   "cannot be loaded (install it, or add its directory to "
                                   "LD_LIBRARY_PATH)",
                                   name, obj, r->label);
            }
            if (!lib->path || !belongs(lib->path, pkgdir) || listed(tl, lib->path))
                continue;
            tdb_target *t = add_target(tl, tdb_xasprintf("%s (loaded by %s)", name, r->label),
                                       tdb_xstrdup(lib->path));
            t->loaded_by = tdb_xstrdup(r->label);
            t->needed_by = tdb_xstrdup(obj);
            t->needed_as = tdb_xstrdup(name);
            tdb_ptrs_push(&todo, &n_todo, tdb_xstrdup(lib->path));
        }
        tdb_elf_dynamic_release(&d);
    }
    tdb_strv_free(todo);
    tdb_strv_free(failed);
    free(pkgdir);
}

/* The distinct files a library name matched (by real path), as they were
 * named, and who loads each. */
typedef struct matches {
    char **real, **shown, **via;
    size_t n, n_shown, n_via;
} matches;

static void match_add(matches *m, const char *path, const char *by)
{
    char *real = realpath(path, NULL);
    for (size_t j = 0; j < m->n; j++) {
        if (!strcmp(m->real[j], real ? real : path)) {
            free(real);
            return;
        }
    }
    tdb_ptrs_push(&m->real, &m->n, real ? real : tdb_xstrdup(path));
    tdb_ptrs_push(&m->shown, &m->n_shown, tdb_xstrdup(path));
    tdb_ptrs_push(&m->via, &m->n_via, tdb_xstrdup(by));
}

/* NAME looked up by file name and soname among the libraries the ROOTS
 * load and PID's mapped OBJECTS. */
static void add_library(target_list *tl, const char *name, root *roots, size_t n_roots,
                        char *const *objects, const char *pid_label, const char *no_roots_why)
{
    matches m = {0};
    size_t total = 0;
    tdb_buf where = TDB_BUF_INIT;

    for (size_t i = 0; i < n_roots; i++) {
        ssize_t n = root_libs(&roots[i]);
        tdb_buf_addf(&where, "%s%s", i ? ", " : "", roots[i].label);
        for (ssize_t k = 0; k < n; k++, total++) {
            const tdb_loaded_lib *l = &roots[i].libs[k];
            if (l->path && (names_library(name, tdb_base_name(l->path)) ||
                            names_library(name, l->name)))
                match_add(&m, l->path, roots[i].label);
        }
    }
    for (char *const *o = objects; o && *o; o++, total++)
        if (names_library(name, tdb_base_name(*o)))
            match_add(&m, *o, pid_label);
    if (objects)
        tdb_buf_addf(&where, "%s%s", where.len ? ", " : "", pid_label);

    tdb_target *t = add_target(tl, tdb_xstrdup(name), m.n == 1 ? tdb_xstrdup(m.shown[0]) : NULL);
    if (m.n == 1) {
        t->loaded_by = tdb_xstrdup(m.via[0]);
    } else if (!n_roots && !objects) {
        tdb_error_set_exit(&t->err, TDB_EXIT_FAIL, ENOENT,
                           "cannot look library '%s' up: name what loads it (a module such as "
                           "torch._C, a file, or --pid), or give its path (%s)",
                           name, no_roots_why);
    } else if (!m.n) {
        tdb_error_set_exit(&t->err, TDB_EXIT_FAIL, ENOENT,
                           "cannot find library '%s' among the %zu that %s load%s (name what "
                           "loads it, e.g. 'tdebug inspect torch._C %s', or give its path)",
                           name, total, where.len ? tdb_buf_str(&where) : "no target",
                           n_roots + (objects != NULL) == 1 ? "s" : "", name);
    } else {
        tdb_buf list = TDB_BUF_INIT;
        for (size_t j = 0; j < m.n; j++)
            tdb_buf_addf(&list, "%s%s (loaded by %s)", j ? ", " : "", m.shown[j], m.via[j]);
        tdb_error_set_exit(&t->err, TDB_EXIT_FAIL, 0,
                           "library name '%s' is ambiguous: %s (give the file's path)", name,
                           tdb_buf_str(&list));
        tdb_buf_free(&list);
    }
    tdb_strv_free(m.real);
    tdb_strv_free(m.shown);
    tdb_strv_free(m.via);
    tdb_buf_free(&where);
}

tdb_target *tdb_resolve_targets(char *const *args, size_t n_args, const char *python, pid_t pid,
                                int which, int flags, size_t *out_n)
{
    target_list tl = {0};
    root *roots = tdb_xcalloc(n_args + 1, sizeof(*roots));
    size_t n_roots = 0, n_libnames = 0;
    char **objects = NULL, *pid_label = pid > 0 ? tdb_xasprintf("pid %d", (int)pid) : NULL;
    char *torch_path = NULL;
    tdb_error torch_err = {0};

    /* The files and modules named first: names of libraries are looked up
     * among what they load. */
    char **paths = tdb_xcalloc(n_args + 1, sizeof(char *));
    tdb_error *errs = tdb_xcalloc(n_args + 1, sizeof(*errs));
    for (size_t i = 0; i < n_args; i++) {
        if (is_library_name(args[i])) {
            n_libnames++;
            continue;
        }
        int module = tdb_looks_like_module(args[i]);
        paths[i] = module ? tdb_py_module_path(python, args[i], &errs[i]) : tdb_xstrdup(args[i]);
        if (paths[i])
            roots[n_roots++] = (root){args[i], paths[i], module ? args[i] : NULL, NULL, -2, {0}};
    }
    if (pid > 0 && n_libnames) /* every object it maps; a failure is said below */
        objects = tdb_pid_objects(pid, TDB_PID_ALL, NULL, NULL);
    if (n_libnames && !n_roots && pid <= 0) {
        /* Nothing named loads it: what 'import torch' loads. */
        torch_path = tdb_py_module_path(python, "torch._C", &torch_err);
        if (torch_path)
            roots[n_roots++] = (root){"torch._C", torch_path, "torch._C", NULL, -2, {0}};
    }

    /* A library named on the command line is shown where it was named,
     * not among the dependencies of another. */
    for (size_t i = 0; i < n_roots; i++) {
        char *real = realpath(roots[i].path, NULL);
        tdb_ptrs_push(&tl.seen, &tl.n_seen, real ? real : tdb_xstrdup(roots[i].path));
    }
    size_t r = 0;
    for (size_t i = 0; i < n_args; i++) {
        if (is_library_name(args[i])) {
            add_library(&tl, args[i], roots, n_roots, objects, pid_label, torch_err.msg);
            continue;
        }
        tdb_target *t = add_target(&tl, tdb_xstrdup(args[i]), paths[i]);
        paths[i] = NULL;
        if (!t->path) {
            t->err = errs[i];
            continue;
        }
        if (flags & TDB_TARGETS_NEEDED)
            add_needed(&tl, &roots[r]);
        r++;
    }
    if (pid > 0) {
        tdb_error pid_err = {0};
        char **mine = tdb_pid_objects(pid, which, NULL, &pid_err);
        if (!mine)
            add_target(&tl, tdb_xstrdup(pid_label), NULL)->err = pid_err;
        for (char **o = mine; o && *o; o++)
            add_target(&tl, tdb_xstrdup(pid_label), tdb_xstrdup(*o));
        tdb_strv_free(mine);
    }

    for (size_t i = 0; i < n_roots; i++)
        tdb_loaded_libs_free(roots[i].libs, roots[i].n_libs > 0 ? (size_t)roots[i].n_libs : 0);
    for (size_t i = 0; i < n_args; i++)
        free(paths[i]);
    free(paths);
    free(errs);
    free(roots);
    tdb_strv_free(objects);
    tdb_strv_free(tl.seen);
    free(torch_path);
    free(pid_label);
    *out_n = tl.n;
    return tl.v ? tl.v : tdb_xcalloc(1, sizeof(tdb_target));
}

tdb_elf_report *tdb_target_inspect(tdb_target *t, const tdb_elf_options *opt, json_t *errors)
{
    tdb_elf_report *r = t->path ? tdb_elf_inspect(t->path, opt, &t->err) : NULL;
    if (r)
        return r;
    json_t *e = json_object();
    tdb_target_json(t, e);
    tdb_json_set_str(e, "error", t->err.msg);
    json_array_append_new(errors, e);
    return NULL;
}

void tdb_target_json(const tdb_target *t, json_t *o)
{
    tdb_json_set_str(o, "target", t->label);
    if (t->loaded_by)
        tdb_json_set_str(o, "loaded_by", t->loaded_by);
    if (t->needed_by) {
        tdb_json_set_str(o, "needed_by", t->needed_by);
        tdb_json_set_str(o, "needed_as", t->needed_as);
    }
}

void tdb_targets_free(tdb_target *t, size_t n)
{
    for (size_t i = 0; t && i < n; i++) {
        free(t[i].label);
        free(t[i].path);
        free(t[i].loaded_by);
        free(t[i].needed_by);
        free(t[i].needed_as);
    }
    free(t);
}

/* --- The report as text --------------------------------------------------- */

static void add_size(tdb_buf *b, uint64_t n)
{
    if (n >= 10 * 1024 * 1024)
        tdb_buf_addf(b, "%.0f MiB", n / 1048576.0);
    else if (n >= 1024 * 1024)
        tdb_buf_addf(b, "%.1f MiB", n / 1048576.0);
    else if (n >= 1024)
        tdb_buf_addf(b, "%.1f KiB", n / 1024.0);
    else
        tdb_buf_addf(b, "%llu bytes", (unsigned long long)n);
}

static void add_section(tdb_buf *b, const char *name, const tdb_elf_section *s)
{
    tdb_buf_addf(b, "%s ", name);
    if (!s->present) {
        tdb_buf_adds(b, "missing");
        return;
    }
    add_size(b, s->size);
    if (s->compression)
        tdb_buf_addf(b, " (%s)", s->compression);
}

/* One producer, cut to fit a line. */
static void add_producer(tdb_buf *b, const char *p, size_t units)
{
    size_t len = strlen(p);
    if (!*p)
        p = "(no DW_AT_producer)", len = strlen(p);
    if (len > 100)
        tdb_buf_addf(b, "%.97s...", p);
    else
        tdb_buf_adds(b, p);
    tdb_buf_addf(b, "  [%zu unit%s]", units, units == 1 ? "" : "s");
}

static const char *optimisation_words(const tdb_elf_report *r)
{
    tdb_elf_verdict v;
    tdb_elf_get_verdict(r, &v);
    switch (v.opt) {
    case TDB_OPT_NONE: return "unoptimised";
    case TDB_OPT_DEBUG: return "optimised for debugging (-Og)";
    case TDB_OPT_ON: return "optimised";
    default: return "optimisation unknown";
    }
}

void tdb_elf_report_format(const tdb_elf_report *r, tdb_buf *b)
{
    tdb_elf_verdict v;
    tdb_elf_get_verdict(r, &v);

    tdb_buf_addf(b, "%s\n", r->path);
    if (strcmp(r->realpath, r->path))
        tdb_buf_addf(b, "  file        %s\n", r->realpath);
    tdb_buf_addf(b, "  kind        %s (%s), %s, %ld dynamic symbol%s\n",
                 tdb_elf_kind_name(r->kind), r->format,
                 r->has_symtab ? "not stripped" : "stripped", r->dynamic_symbols,
                 r->dynamic_symbols == 1 ? "" : "s");
    tdb_buf_addf(b, "  build-id    %s\n", r->build_id ? r->build_id : "none");
    if (r->n_pyinit) {
        /* An interpreter exports one per built-in module: name a few. */
        tdb_buf_adds(b, "  python      exports");
        for (size_t i = 0; i < r->n_pyinit && i < 4; i++)
            tdb_buf_addf(b, " %s (0x%llx)", r->pyinit[i],
                         (unsigned long long)r->pyinit_values[i]);
        if (r->n_pyinit > 4)
            tdb_buf_addf(b, " and %zu more PyInit_*", r->n_pyinit - 4);
        tdb_buf_addc(b, '\n');
    }
    if (r->debuglink)
        tdb_buf_addf(b, "  debuglink   %s (crc 0x%08x)\n", r->debuglink, r->debuglink_crc);
    if (r->debug_file) {
        tdb_buf_addf(b, "  debug file  %s (by %s)\n", r->debug_file, r->debug_file_via);
    } else if (r->n_searched) {
        tdb_buf_adds(b, "  debug file  not found; looked at:\n");
        for (size_t i = 0; i < r->n_searched; i++)
            tdb_buf_addf(b, "                %s\n", r->searched[i]);
    }
    for (size_t i = 0; i < r->n_rejected; i++)
        tdb_buf_addf(b, "  rejected    %s\n", r->rejected[i]);

    if (!r->dwarf_in) {
        tdb_buf_adds(b, "  DWARF       none\n");
    } else {
        tdb_buf_addf(b, "  DWARF       in the %s: ", r->dwarf_in);
        add_section(b, ".debug_info", &r->debug_info);
        tdb_buf_adds(b, ", ");
        add_section(b, ".debug_line", &r->debug_line);
        tdb_buf_addc(b, '\n');
        if (r->units) {
            tdb_buf_adds(b, "  units       ");
            int versions = 0;
            for (int i = 2; i <= 5; i++)
                if (r->versions & (1u << i))
                    tdb_buf_addf(b, "%sDWARF %d", versions++ ? "+" : "", i);
            tdb_buf_addf(b, ", %zu compile unit%s:", r->units, r->units == 1 ? "" : "s");
            static const struct { tdb_opt opt; const char *what; } classes[] = {
                {TDB_OPT_NONE, "unoptimised"}, {TDB_OPT_DEBUG, "-Og"},
                {TDB_OPT_ON, "optimised"}, {TDB_OPT_UNKNOWN, "flags not recorded"},
                {TDB_OPT_ASSEMBLER, "assembler"},
            };
            const char *sep = " ";
            for (size_t i = 0; i < sizeof(classes) / sizeof(classes[0]); i++) {
                if (r->n_opt[classes[i].opt]) {
                    tdb_buf_addf(b, "%s%zu %s", sep, r->n_opt[classes[i].opt], classes[i].what);
                    sep = ", ";
                }
            }
            if (r->line_tables_only)
                tdb_buf_addf(b, "%s%zu with line tables only", sep, r->line_tables_only);
            tdb_buf_addc(b, '\n');
        }
        size_t shown = 0;
        for (size_t i = 0; i < r->n_producers && shown < 3; i++) {
            if (r->producers[i].opt == TDB_OPT_ASSEMBLER && r->n_producers > 1)
                continue;
            tdb_buf_adds(b, shown ? "              " : "  producer    ");
            add_producer(b, r->producers[i].producer, r->producers[i].units);
            tdb_buf_addc(b, '\n');
            shown++;
        }
        if (r->n_producers + r->more_producers > shown)
            tdb_buf_addf(b, "              (%zu more producers: --json lists them)\n",
                         r->n_producers + r->more_producers - shown);
        if (r->n_opt[TDB_OPT_ON] && r->n_opt[TDB_OPT_NONE]) {
            tdb_buf_adds(b, "  optimised  ");
            for (size_t i = 0; i < r->n_optimised_examples; i++)
                tdb_buf_addf(b, " %s", r->optimised_examples[i]);
            if (r->n_opt[TDB_OPT_ON] > r->n_optimised_examples)
                tdb_buf_adds(b, " ...");
            tdb_buf_addc(b, '\n');
        }
        if (r->altlink)
            tdb_buf_addf(b, "  dwz file    %s%s\n", r->alt_file ? r->alt_file : r->altlink,
                         r->alt_file ? "" : " (not found: strings in it are unknown)");
        if (r->dwarf_error)
            tdb_buf_addf(b, "  warning     DWARF read stopped early: %s\n", r->dwarf_error);
    }

    if (!r->index_section) {
        tdb_buf_adds(b, "  gdb index   none\n");
    } else if (r->index_error) {
        tdb_buf_addf(b, "  gdb index   %s in the %s is unusable: %s\n", r->index_section,
                     r->index_in, r->index_error);
    } else {
        tdb_buf_addf(b, "  gdb index   %s version %u in the %s, %u unit%s, %u symbol%s%s\n",
                     r->index_section, r->index.version, r->index_in, r->index.units,
                     r->index.units == 1 ? "" : "s", r->index.symbols,
                     r->index.symbols == 1 ? "" : "s",
                     r->index.symbols ? "" : " (gdb ignores an index without symbols: "
                                             "compile with -ggnu-pubnames)");
    }

    if (v.debuggable) {
        tdb_buf_adds(b, "  verdict     debuggable: DWARF, unoptimised, indexed\n");
        return;
    }
    if (!v.dwarf) {
        tdb_buf_addf(b, "  verdict     not debuggable at source level: %s; gdb sees only "
                     "exported symbols (%s)\n",
                     r->dwarf_in ? "incomplete DWARF (no line table)" : "no DWARF",
                     r->debuglink ? "install the debug file, or rebuild with debug info: "
                                    "'tdebug profile'"
                                  : "rebuild with debug info: 'tdebug profile'");
        return;
    }
    tdb_buf_addf(b, "  verdict     source-level debugging works, but: ");
    const char *sep = "";
    if (v.opt == TDB_OPT_ON || v.opt == TDB_OPT_DEBUG) {
        tdb_buf_addf(b, "%s%s (expect <optimized out> and jumpy stepping)", sep,
                     optimisation_words(r));
        sep = "; ";
    } else if (v.opt == TDB_OPT_UNKNOWN && r->dwarf_error && !r->units) {
        tdb_buf_addf(b, "%sthe compile units cannot be read (damaged DWARF: see the warning)",
                     sep);
        sep = "; ";
    } else if (v.opt == TDB_OPT_UNKNOWN) {
        tdb_buf_addf(b, "%sno compile flags recorded (clang: add -grecord-command-line)", sep);
        sep = "; ";
    }
    if (!v.indexed) {
        tdb_buf_addf(b, "%sno usable gdb index (gdb reads all DWARF at start; link with "
                     "--gdb-index or run gdb-add-index)", sep);
    }
    tdb_buf_addc(b, '\n');
}

