/* inspect.c: module names and processes turned into files (see inspect.h). */
#include "inspect.h"
#include "elf.h"
#include "spawn.h"

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

tdb_target *tdb_resolve_targets(char *const *args, size_t n_args, const char *python, pid_t pid,
                                int which, size_t *out_n)
{
    tdb_target *t = tdb_xcalloc(n_args + 1, sizeof(*t));
    size_t n = 0;
    for (size_t i = 0; i < n_args; i++, n++) {
        t[n].label = tdb_xstrdup(args[i]);
        t[n].path = tdb_looks_like_module(args[i]) ? tdb_py_module_path(python, args[i], &t[n].err)
                                                    : tdb_xstrdup(args[i]);
    }
    if (pid > 0) {
        size_t k = 0;
        tdb_error err = {0};
        char **objs = tdb_pid_objects(pid, which, &k, &err);
        t = tdb_xrealloc(t, (n + k + 1) * sizeof(*t));
        memset(t + n, 0, (k + 1) * sizeof(*t));
        if (!objs) {
            t[n].label = tdb_xasprintf("pid %d", (int)pid);
            t[n++].err = err;
        }
        for (size_t i = 0; objs && i < k; i++, n++) {
            t[n].label = tdb_xasprintf("pid %d", (int)pid);
            t[n].path = objs[i];
        }
        free(objs);
    }
    *out_n = n;
    return t;
}

tdb_elf_report *tdb_target_inspect(tdb_target *t, const tdb_elf_options *opt, json_t *errors)
{
    tdb_elf_report *r = t->path ? tdb_elf_inspect(t->path, opt, &t->err) : NULL;
    if (r)
        return r;
    json_t *e = json_object();
    tdb_json_set_str(e, "target", t->label);
    tdb_json_set_str(e, "error", t->err.msg);
    json_array_append_new(errors, e);
    return NULL;
}

void tdb_targets_free(tdb_target *t, size_t n)
{
    for (size_t i = 0; t && i < n; i++) {
        free(t[i].label);
        free(t[i].path);
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

