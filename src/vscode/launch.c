/*
 * vscode/launch.c: the entries of 'tdebug vscode' and what they are made of; see
 * vscode/launch.h.
 */
#include "vscode/launch.h"
#include "vscode/jsonc.h"
#include "process/spawn.h"

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/fsuid.h>
#include <sys/stat.h>
#include <unistd.h>

/* ------------------------------------------------------------------ */
/* The interpreter */

#define PROBE_TIMEOUT_MS 60000

/* Run by the target interpreter; imports neither torch (2 s) nor debugpy. */
static const char probe_script[] =
    "import sys, os, sysconfig, json, importlib.util as u\n"
    "t = u.find_spec('torch')\n"
    "lib = os.path.join(sysconfig.get_config_var('LIBDIR') or '',"
    " sysconfig.get_config_var('INSTSONAME') or sysconfig.get_config_var('LDLIBRARY') or '')\n"
    "print(json.dumps({'version': '%d.%d' % sys.version_info[:2], 'prefix': sys.prefix,\n"
    " 'libpython': lib if os.path.isfile(lib) else None,\n"
    " 'torch': list(t.submodule_search_locations)[0] if t and t.submodule_search_locations else None,\n"
    " 'debugpy': u.find_spec('debugpy') is not None}))\n";

static char *dup_string(json_t *o, const char *key)
{
    const char *s = json_string_value(json_object_get(o, key));
    return s ? tdb_xstrdup(s) : NULL;
}

int tdb_vscode_probe_python(const char *python, tdb_python_info *out, tdb_error *err)
{
    char *argv[] = {(char *)python, "-c", (char *)probe_script, NULL};
    tdb_spawn_result r = TDB_SPAWN_RESULT_INIT;
    tdb_error local = {0};
    json_t *v = NULL;
    int rc = -1;

    if (tdb_spawn_capture(argv, NULL, PROBE_TIMEOUT_MS, &r, &local) < 0) {
        tdb_error_set_exit(err, TDB_EXIT_NOEXEC, local.code, "cannot run '%s' as a Python "
                           "interpreter (it cannot be executed: %s)", python, local.msg);
        goto cleanup;
    }
    v = r.timed_out || r.status != 0 ? NULL : json_loads(r.out, 0, NULL);
    if (!json_is_object(v) || !json_is_string(json_object_get(v, "version"))) {
        tdb_error_set_exit(err, TDB_EXIT_NOEXEC, 0, "cannot run '%s' as a Python interpreter (it %s)",
                           python,
                           r.timed_out       ? "did not answer within a minute"
                           : r.status == 127 ? "cannot be executed"
                           : r.status != 0   ? "failed"
                                             : "printed something else");
        goto cleanup;
    }
    memset(out, 0, sizeof(*out));
    out->version = dup_string(v, "version");
    out->prefix = dup_string(v, "prefix");
    out->libpython = dup_string(v, "libpython");
    out->torch_dir = dup_string(v, "torch");
    out->has_debugpy = json_is_true(json_object_get(v, "debugpy"));
    rc = 0;
cleanup:
    json_decref(v);
    tdb_spawn_result_free(&r);
    return rc;
}

int tdb_vscode_probe_process_python(const char *python, uid_t owner, tdb_python_info *out,
                                    tdb_error *err)
{
    if (owner != geteuid()) {
        tdb_error_set(err, EPERM, "runs as uid %u: its interpreter '%s' is not run to learn its "
                                  "details (that would run their code as you)",
                      (unsigned)owner, python);
        return -1;
    }
    return tdb_vscode_probe_python(python, out, err);
}

void tdb_python_info_clear(tdb_python_info *info)
{
    free(info->version);
    free(info->prefix);
    free(info->libpython);
    free(info->torch_dir);
    memset(info, 0, sizeof(*info));
}

char *tdb_vscode_python_gdb_helper(const char *python, const tdb_python_info *info)
{
    const char *objects[] = {python, info->libpython};
    for (size_t i = 0; i < 2; i++) {
        char *real = objects[i] ? realpath(objects[i], NULL) : NULL;
        if (!real)
            continue;
        /* gdb's auto-load directory (Debian's python3-dbg puts it there),
         * the prefix's own, and beside the binary (a source build). */
        char *cands[3] = {
            tdb_xasprintf("/usr/share/gdb/auto-load%s-gdb.py", real),
            info->prefix ? tdb_xasprintf("%s/share/gdb/auto-load%s-gdb.py", info->prefix, real) : NULL,
            tdb_xasprintf("%s-gdb.py", real),
        };
        char *found = NULL;
        for (size_t k = 0; k < 3; k++) {
            if (!found && cands[k] && access(cands[k], R_OK) == 0) {
                found = cands[k];
                cands[k] = NULL;
            }
            free(cands[k]);
        }
        free(real);
        if (found)
            return found;
    }
    return NULL;
}

/* ------------------------------------------------------------------ */
/* The user's own libraries */

static int is_shared_object_name(const char *name)
{
    const char *so = strstr(name, ".so");
    while (so) {
        const char *rest = so + 3;
        if (*rest == '\0')
            return 1;
        if (*rest == '.') { /* libfoo.so.1.2 */
            while (*rest == '.' || (*rest >= '0' && *rest <= '9'))
                rest++;
            if (*rest == '\0')
                return 1;
        }
        so = strstr(so + 1, ".so");
    }
    return 0;
}

static int is_elf(const char *path)
{
    char magic[4];
    int fd = open(path, O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, magic, 4);
    close(fd);
    return n == 4 && !memcmp(magic, "\177ELF", 4);
}

static int skip_dir(const char *parent, const char *name)
{
    if (name[0] == '.' || !strcmp(name, "__pycache__") || !strcmp(name, "site-packages") ||
        !strcmp(name, "dist-packages") || !strcmp(name, "node_modules"))
        return 1;
    char *cfg = tdb_xasprintf("%s/%s/pyvenv.cfg", parent, name); /* a virtual environment */
    int venv = access(cfg, F_OK) == 0;
    free(cfg);
    return venv;
}

static void find_libs(const char *dir, int depth, json_t *names, size_t *budget)
{
    DIR *d = opendir(dir);
    struct dirent *de;
    if (!d)
        return;
    while ((de = readdir(d)) && *budget > 0) {
        (*budget)--;
        if (!strcmp(de->d_name, ".") || !strcmp(de->d_name, ".."))
            continue;
        char *path = tdb_xasprintf("%s/%s", dir, de->d_name);
        struct stat st;
        if (lstat(path, &st) == 0) { /* symlinked directories are not followed: no loops */
            if (S_ISDIR(st.st_mode)) {
                if (depth > 0 && !skip_dir(dir, de->d_name))
                    find_libs(path, depth - 1, names, budget);
            } else if (is_shared_object_name(de->d_name) && is_elf(path)) {
                json_t *where = json_object_get(names, de->d_name);
                if (!where)
                    json_object_set_new(names, de->d_name, where = json_array());
                json_array_append_new(where, json_string(path));
            }
        }
        free(path);
    }
    closedir(d);
}

static int cmp_str(const void *a, const void *b)
{
    return strcmp(*(const char *const *)a, *(const char *const *)b);
}

void tdb_vscode_find_libraries(const char *dir, int max_depth, json_t *patterns, json_t *paths)
{
    json_t *names = json_object();
    size_t budget = 20000; /* entries looked at: a workspace that is $HOME stays quick */
    size_t n = 0, i;
    const char *key;
    json_t *v;

    find_libs(dir, max_depth, names, &budget);
    const char **sorted = tdb_xcalloc(json_object_size(names) + 1, sizeof(*sorted));
    json_object_foreach(names, key, v) {
        int covered = 0; /* by a pattern already listed, e.g. _C.cpython*.so */
        json_t *pat;
        if (paths)
            json_array_extend(paths, v);
        json_array_foreach(patterns, i, pat) covered |= fnmatch(json_string_value(pat), key, 0) == 0;
        if (!covered)
            sorted[n++] = key;
    }
    qsort(sorted, n, sizeof(*sorted), cmp_str);
    for (i = 0; i < n; i++)
        json_array_append_new(patterns, json_string(sorted[i]));
    free(sorted);
    json_decref(names);
}

/* ------------------------------------------------------------------ */
/* Where PyTorch was built */

char *tdb_vscode_build_root_in(const char *buf, size_t len)
{
    static const char marker[] = "c10/core/";
    const char *p = buf, *end = buf + len;
    while ((p = memmem(p, (size_t)(end - p), marker, sizeof(marker) - 1))) {
        /* The string starts after the previous NUL or quote (c10 embeds
         * __FILE__ in messages like 'failed at "./c10/core/X.cpp":12'). */
        const char *s = p;
        while (s > buf && s[-1] != '\0' && s[-1] != '"' && s[-1] != ' ' && (unsigned char)s[-1] >= 0x20)
            s--;
        /* Only a path that ends in a source file name counts. */
        const char *e = p;
        while (e < end && *e && *e != '"' && *e != ' ' && *e != ':')
            e++;
        if ((e - p > 4 && !memcmp(e - 4, ".cpp", 4)) || (e - p > 2 && !memcmp(e - 2, ".h", 2))) {
            size_t n = (size_t)(p - s);
            if (n == 0)
                return tdb_xstrdup(".");
            if (s[n - 1] == '/')
                n--;
            return n ? tdb_xstrndup(s, n) : tdb_xstrdup("/");
        }
        p += sizeof(marker) - 1;
    }
    return NULL;
}

char *tdb_vscode_torch_build_root(const char *torch_dir)
{
    char *path = tdb_xasprintf("%s/lib/libc10.so", torch_dir);
    size_t len;
    char *data = tdb_read_file(path, &len, NULL);
    char *root = data ? tdb_vscode_build_root_in(data, len) : NULL;
    free(data);
    free(path);
    return root;
}

/* ------------------------------------------------------------------ */
/* Words for MIEngine and gdb's shell */

static int shell_safe(unsigned char c)
{
    return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
           (c && strchr("_@%+=:,./-", c));
}

/* Append S to B as the inside of a double-quoted sh word: '"', '\' and
 * '`' escaped, '$' as "'$'" (a quote closed, a single-quoted $, a quote
 * opened), so that no "${" is left for VS Code's substitution either. */
static void add_double_quoted(tdb_buf *b, const char *s)
{
    for (; *s; s++) {
        if (*s == '$')
            tdb_buf_adds(b, "\"'$'\"");
        else {
            if (strchr("\"\\`", *s))
                tdb_buf_addc(b, '\\');
            tdb_buf_addc(b, *s);
        }
    }
}

char *tdb_vscode_arg(const char *arg)
{
    tdb_buf b = TDB_BUF_INIT;
    const char *p;

    if (strpbrk(arg, "\n\r"))
        return NULL;
    for (p = arg; *p && shell_safe((unsigned char)*p); p++)
        ;
    if (*arg && !*p)
        return tdb_xstrdup(arg);
    /* Starting with '"', the word is one MIEngine passes on untouched. */
    tdb_buf_addc(&b, '"');
    add_double_quoted(&b, arg);
    tdb_buf_addc(&b, '"');
    return tdb_buf_detach(&b);
}

int tdb_vscode_has_variable(const char *s)
{
    /* VS Code takes "${" as a variable when its braces close: counting
     * '{' up and '}' down from the one after '$', the count gets back to
     * 0.  With D(x) the '{' minus the '}' before byte x, that is a later
     * D no greater than the one just after the "${" '{': suffix minima
     * decide every "${" in one pass. */
    size_t n = strlen(s);
    long *depth, *min_after, d = 0; /* depth[x]: D(x); min_after[x]: the least from x on */
    int found = 0;
    if (!strstr(s, "${"))
        return 0;
    depth = tdb_xcalloc(n + 1, sizeof(*depth));
    min_after = tdb_xcalloc(n + 1, sizeof(*min_after));
    for (size_t x = 0; x < n; x++) {
        depth[x] = d;
        d += s[x] == '{' ? 1 : s[x] == '}' ? -1 : 0;
    }
    depth[n] = d;
    min_after[n] = depth[n];
    for (size_t x = n; x-- > 0;)
        min_after[x] = depth[x] < min_after[x + 1] ? depth[x] : min_after[x + 1];
    for (size_t m = 0; m + 3 <= n && !found; m++)
        if (s[m] == '$' && s[m + 1] == '{')
            found = min_after[m + 3] <= depth[m + 1];
    free(min_after);
    free(depth);
    return found;
}

char *tdb_vscode_glob_regex(const char *glob)
{
    tdb_buf b = TDB_BUF_INIT;
    tdb_buf_addc(&b, '/');
    for (const char *p = glob; *p; p++) {
        if (*p == '*') {
            tdb_buf_adds(&b, "[^/]*");
        } else if (*p == '?') {
            tdb_buf_adds(&b, "[^/]");
        } else if (*p == '[') {
            /* fnmatch's bracket: '!' (or '^') negates, a ']' first is a
             * member; without its ']' the '[' is itself. */
            const char *q = p + 1;
            int negate = *q == '!' || *q == '^';
            if (negate)
                q++;
            if (*q == ']')
                q++;
            while (*q && *q != ']')
                q++;
            if (!*q) {
                tdb_buf_adds(&b, "\\[");
                continue;
            }
            tdb_buf_adds(&b, negate ? "[^" : "[");
            for (const char *c = p + 1 + negate; c < q; c++)
                if (*c != '\\')
                    tdb_buf_addc(&b, *c);
            tdb_buf_addc(&b, ']');
            p = q;
        } else {
            if (*p == '\\' && p[1])
                p++;
            /* special in a basic regex; any other escaped would turn GNU
             * operators (\+, \?, \|) on */
            if (strchr(".[\\*^$", *p))
                tdb_buf_addc(&b, '\\');
            tdb_buf_addc(&b, *p);
        }
    }
    tdb_buf_addc(&b, '$');
    return tdb_buf_detach(&b);
}

/* The script as an argument: "${workspaceFolder}/REL" when it is in the
 * workspace (VS Code puts the folder's path in, which then must need no
 * escaping inside double quotes), else its absolute path.  New string. */
static char *script_arg(const char *script, const char *workspace)
{
    size_t wl = workspace ? strlen(workspace) : 0;
    if (wl && !strncmp(script, workspace, wl) && script[wl] == '/' &&
        !strpbrk(workspace, "\"\\`$\n\r")) {
        tdb_buf b = TDB_BUF_INIT;
        tdb_buf_adds(&b, "\"${workspaceFolder}/");
        add_double_quoted(&b, script + wl + 1);
        tdb_buf_addc(&b, '"');
        return tdb_buf_detach(&b);
    }
    return tdb_vscode_arg(script);
}

tdb_vscode_attach_plan tdb_vscode_plan_attach(int yama_scope, int is_root, int user_ok,
                                              int can_signal, int ptracer_ok, int root_ok)
{
    if ((user_ok && can_signal) || (yama_scope == 1 && ptracer_ok && can_signal))
        return TDB_VSCODE_ATTACH_DIRECT;
    if (yama_scope > 0 && !is_root && root_ok)
        return TDB_VSCODE_ATTACH_ELEVATED;
    /* without Yama MIEngine starts gdb as the user whatever is written */
    if (user_ok)
        return TDB_VSCODE_ATTACH_DIRECT;
    return TDB_VSCODE_ATTACH_REFUSED;
}

/* ------------------------------------------------------------------ */
/* The entries */

/* What an entry is for: "attach", "attach when torch loads", or the label. */
static const char *subject(const tdb_vscode_spec *spec)
{
    return spec->wait ? "attach when torch loads" : spec->pick ? "attach to a picked process"
           : spec->attach_pid ? "attach" : spec->label;
}

static char *entry_name(const tdb_vscode_spec *spec, const char *what)
{
    return tdb_xasprintf(TDB_VSCODE_PREFIX "%s (%s)", subject(spec), what);
}

char *tdb_vscode_pick_name(const tdb_vscode_spec *spec)
{
    int alone = spec->compound && spec->attach_pid && !spec->port;
    return entry_name(spec, alone ? "C++, gdb" : "Python + C++");
}

char *tdb_vscode_debugpy_name(const tdb_vscode_spec *spec)
{
    return entry_name(spec, "Python, debugpy");
}

static json_t *setup_command(const char *description, const char *text)
{
    return json_pack("{s:s, s:s, s:b}", "description", description, "text", text, "ignoreFailures", 1);
}

/* The gdb command that loads, at every stop, the symbols of the shared
 * objects loaded from under WORKSPACE: a basic regex of its path, in a
 * Python string literal, handed to a stop-event hook.  New string. */
static char *workspace_hook(const char *workspace)
{
    tdb_buf re = TDB_BUF_INIT, cmd = TDB_BUF_INIT;
    tdb_buf_addc(&re, '^');
    for (const char *s = workspace; *s; s++) {
        if (strchr("\\.[]*^$", *s))
            tdb_buf_addc(&re, '\\');
        tdb_buf_addc(&re, *s);
    }
    tdb_buf_addc(&re, '/');
    tdb_buf_adds(&cmd, "python gdb.events.stop.connect(lambda event, where='");
    for (const char *s = tdb_buf_str(&re); *s; s++) {
        if (*s == '\\' || *s == '\'')
            tdb_buf_addc(&cmd, '\\');
        tdb_buf_addc(&cmd, *s);
    }
    tdb_buf_adds(&cmd, "': gdb.execute('sharedlibrary ' + where, to_string=True))");
    tdb_buf_free(&re);
    return tdb_buf_detach(&cmd);
}

/* What every cppdbg entry shares, added to CONF. */
static void add_gdb_settings(const tdb_vscode_spec *spec, json_t *conf)
{
    json_t *setup = json_array(), *map = json_object();
    tdb_buf list = TDB_BUF_INIT;
    size_t i;
    json_t *v;

    json_object_set_new(conf, "MIMode", json_string("gdb"));
    if (!spec->attach_direct)
        json_object_set_new(conf, "miDebuggerPath", json_string(spec->gdb));

    /* MIEngine turns auto-solib-add off and, at each library load, runs
     * 'sharedlibrary NAME' for the file names matching this list: the same
     * restricted loading as tdebug's own commands. */
    json_array_foreach(spec->libraries, i, v) {
        tdb_buf_adds(&list, i ? ";" : "");
        tdb_buf_adds(&list, json_string_value(v));
    }
    json_object_set_new(conf, "symbolLoadInfo",
                        json_pack("{s:b, s:s}", "loadAll", 0, "exceptionList", tdb_buf_str(&list)));
    tdb_buf_free(&list);

    /* MIEngine sends 'set debuginfod enabled off' itself. */
    json_array_append_new(setup, setup_command("Enable pretty-printing for gdb", "-enable-pretty-printing"));
    if (spec->workspace) {
        char *hook = workspace_hook(spec->workspace);
        json_array_append_new(setup, setup_command("Load the symbols of every shared object under "
                                                   "the workspace, whatever its name", hook));
        free(hook);
    }
    if (spec->gdb_helper) {
        char *cmd = tdb_xasprintf("source %s", spec->gdb_helper);
        json_array_append_new(setup, setup_command("Load CPython's gdb helpers (py-bt, py-list, py-print)", cmd));
        free(cmd);
    }
    json_array_append_new(setup, setup_command("Step over the C++ standard library", "skip -rfu ^std::"));
    json_array_append_new(setup, setup_command("Step over libstdc++ internals", "skip -rfu ^__gnu_cxx::"));
    json_array_append_new(setup, setup_command("Step over pybind11 internals", "skip -rfu ^pybind11::"));
    if (spec->torch_src) {
        /* Relative file names (Debian's reproducible builds record
         * "./aten/...") are found through gdb's source path. */
        char *cmd = tdb_xasprintf("directory %s", spec->torch_src);
        json_array_append_new(setup, setup_command("Find PyTorch's sources in --torch-src", cmd));
        free(cmd);
    }
    json_object_set_new(conf, "setupCommands", setup);

    /* A breakpoint in a mapped file goes to gdb by its full path; any
     * other by its file name alone, which binds every file of that name
     * (torch has several Copy.cpp). */
    if (spec->workspace)
        json_object_set_new(map, "${workspaceFolder}", json_string("${workspaceFolder}"));
    json_array_foreach(spec->source_dirs, i, v) json_object_set(map, json_string_value(v), v);
    if (spec->torch_src && spec->build_root)
        json_object_set_new(map, spec->build_root, json_string(spec->torch_src));
    if (json_object_size(map))
        json_object_set(conf, "sourceFileMap", map);
    json_decref(map);
}

/* gdb started as the user through /bin/sh (MIEngine's pipe transport), so
 * that MIEngine does not wrap it in pkexec; MIEngine appends "GDB
 * --interpreter=mi" in place of ${debuggerCommand}, and interrupts the
 * program with "kill -5 PID" through the same shell. */
static json_t *direct_transport(const tdb_vscode_spec *spec)
{
    tdb_buf gdb = TDB_BUF_INIT;
    tdb_shell_quote(&gdb, spec->gdb);
    json_t *t = json_pack("{s:s, s:[s, s], s:s}", "pipeProgram", "/bin/sh", "pipeArgs", "-c",
                          "exec ${debuggerCommand}", "debuggerPath", tdb_buf_str(&gdb));
    tdb_buf_free(&gdb);
    return t;
}

static json_t *debugpy_attach(const tdb_vscode_spec *spec, const char *task)
{
    char *name = tdb_vscode_debugpy_name(spec);
    json_t *conf = json_pack("{s:s, s:s, s:s, s:{s:s, s:i}, s:b}", "name", name, "type", "debugpy",
                             "request", "attach", "connect", "host", spec->host, "port", spec->port,
                             "justMyCode", 0);
    if (task)
        json_object_set_new(conf, "preLaunchTask", json_string(task));
    free(name);
    return conf;
}

/* The script as the "tdebug" configuration's "program": under the
 * workspace "${workspaceFolder}/REL" (VS Code puts the folder in; what it
 * puts in is not searched for variables again), else its path.  New
 * string. */
static char *program_path(const char *script, const char *workspace)
{
    size_t wl = workspace ? strlen(workspace) : 0;
    if (wl && !strncmp(script, workspace, wl) && script[wl] == '/')
        return tdb_xasprintf("${workspaceFolder}/%s", script + wl + 1);
    return tdb_xstrdup(script);
}

/* The one "tdebug" configuration: what 'tdebug dap' takes for a launch or
 * an attach (vscode/extension/package.json's configurationAttributes). */
static json_t *tdebug_entry(const tdb_vscode_spec *spec)
{
    char *name = tdb_vscode_pick_name(spec);
    int attach = spec->attach_pid || spec->wait || spec->pick;
    json_t *conf = json_pack("{s:s, s:s, s:s}", "name", name, "type", "tdebug", "request",
                             attach ? "attach" : "launch");
    free(name);
    if (spec->wait) {
        json_object_set_new(conf, "wait", json_true());
    } else if (spec->pick) {
        /* The extension's command (the debugger's "variables"), run by
         * VS Code when the session starts: the pid picked, as a string. */
        json_object_set_new(conf, "processId", json_string("${command:pickProcess}"));
    } else if (spec->attach_pid) {
        json_object_set_new(conf, "processId", json_integer(spec->attach_pid));
    } else {
        json_t *args = json_array();
        if (spec->program) {
            char *path = program_path(spec->program, spec->workspace);
            json_object_set_new(conf, "program", json_string(path));
            free(path);
        } else {
            json_object_set_new(conf, "module", json_string(spec->module));
        }
        /* A JSON array: the adapter quotes each for gdb's shell itself. */
        for (int i = 0; i < spec->n_args; i++)
            json_array_append_new(args, json_string(spec->args[i]));
        json_object_set_new(conf, "args", args);
        json_object_set_new(conf, "python", json_string(spec->python));
        json_object_set_new(conf, "cwd", json_string("${workspaceFolder}"));
        if (spec->env && json_object_size(spec->env))
            json_object_set_new(conf, "env", json_deep_copy(spec->env));
    }
    if (spec->stop_on_entry)
        json_object_set_new(conf, "stopOnEntry", json_true());
    if (spec->n_stop_at_import) {
        json_t *mods = json_array();
        for (int i = 0; i < spec->n_stop_at_import; i++)
            json_array_append_new(mods, json_string(spec->stop_at_import[i]));
        json_object_set_new(conf, "stopAtImport", mods);
    }
    if (spec->symbols && json_array_size(spec->symbols))
        json_object_set_new(conf, "symbols", json_deep_copy(spec->symbols));
    if (spec->catch_throw)
        json_object_set_new(conf, "catchThrow", *spec->catch_throw ? json_string(spec->catch_throw)
                                                                   : json_true());
    return conf;
}

void tdb_vscode_entries(const tdb_vscode_spec *spec, json_t **out_configurations,
                        json_t **out_compounds, json_t **out_tasks)
{
    json_t *configurations = json_array(), *compounds = json_array(), *tasks = json_array();
    char *gdb_name = entry_name(spec, "C++, gdb");
    char *py_name = tdb_vscode_debugpy_name(spec);
    char *both = entry_name(spec, "Python + C++");
    json_t *conf;

    if (!spec->compound) {
        json_array_append_new(configurations, tdebug_entry(spec));
    } else if (spec->attach_pid) {
        conf = json_pack("{s:s, s:s, s:s, s:s, s:i}", "name", gdb_name, "type", "cppdbg", "request",
                         "attach", "program", spec->attach_program, "processId", (int)spec->attach_pid);
        add_gdb_settings(spec, conf);
        if (spec->attach_direct)
            json_object_set_new(conf, "pipeTransport", direct_transport(spec));
        json_array_append_new(configurations, conf);
        if (spec->port) {
            /* No stopAll: VS Code would stop the other member with
             * 'disconnect' and terminateDebuggee, and debugpy would kill
             * the process. */
            json_array_append_new(configurations, debugpy_attach(spec, NULL));
            json_array_append_new(compounds, json_pack("{s:s, s:[s, s]}", "name", both,
                                                       "configurations", gdb_name, py_name));
        }
    } else {
        char *endpoint = tdb_xasprintf("%s:%d", spec->host, spec->port);
        char *task = tdb_xasprintf(TDB_VSCODE_PREFIX "wait for debugpy (%s)", spec->label);
        json_t *args = json_array();

        /* 3.11 freezes core modules, which hides them from debugpy's
         * breakpoints; debugpy warns unless this is off. */
        if (spec->python_version && strverscmp(spec->python_version, "3.11") >= 0)
            json_array_append_new(args, json_string("-Xfrozen_modules=off"));
        /* The runner: listen on H:P, wait for the Python side a while, run
         * the program (SCRIPT, or -m MODULE) with its arguments. */
        const char *plain[] = {spec->runner, endpoint, NULL, spec->module ? "-m" : NULL,
                               spec->module};
        char wait[16];
        snprintf(wait, sizeof(wait), "%d", TDB_VSCODE_PYTHON_WAIT);
        plain[2] = wait;
        for (size_t k = 0; k < sizeof(plain) / sizeof(*plain); k++) {
            char *word = plain[k] ? tdb_vscode_arg(plain[k]) : NULL;
            if (word)
                json_array_append_new(args, json_string(word));
            free(word);
        }
        if (spec->program) {
            char *word = script_arg(spec->program, spec->workspace);
            json_array_append_new(args, json_string(word));
            free(word);
        }
        for (int i = 0; i < spec->n_args; i++) {
            char *word = tdb_vscode_arg(spec->args[i]);
            if (word) /* the caller refused line breaks */
                json_array_append_new(args, json_string(word));
            free(word);
        }

        conf = json_pack("{s:s, s:s, s:s, s:s, s:o, s:s, s:[], s:b, s:b}", "name", gdb_name, "type",
                         "cppdbg", "request", "launch", "program", spec->python, "args", args, "cwd",
                         "${workspaceFolder}", "environment", "externalConsole", 0, "stopAtEntry", 0);
        add_gdb_settings(spec, conf);
        json_array_append_new(configurations, conf);
        json_array_append_new(configurations, debugpy_attach(spec, task));
        json_array_append_new(compounds, json_pack("{s:s, s:[s, s], s:b}", "name", both,
                                                   "configurations", gdb_name, py_name, "stopAll", 1));
        /* A process task: no shell, so no quoting to get wrong.  It gives
         * up early when no program that would listen has started (the
         * Python side started alone, or restarted). */
        json_array_append_new(tasks, json_pack("{s:s, s:s, s:s, s:[s, s, s, s, s, s], s:[], s:{s:s}}",
                                               "label", task, "type", "process", "command",
                                               spec->tdebug, "args", "wait-port", endpoint,
                                               "--timeout", "120", "--started-within", "30",
                                               "problemMatcher", "presentation", "reveal", "silent"));
        free(endpoint);
        free(task);
    }
    free(gdb_name);
    free(py_name);
    free(both);
    *out_configurations = configurations;
    *out_compounds = compounds;
    *out_tasks = tasks;
}

void tdb_vscode_stale_names(const tdb_vscode_spec *spec, tdb_vscode_stale *out)
{
    size_t nc = 0, nm = 0, nt = 0;
    out->configurations = tdb_xcalloc(1, sizeof(char *)); /* empty lists, not NULL */
    out->compounds = tdb_xcalloc(1, sizeof(char *));
    out->tasks = tdb_xcalloc(1, sizeof(char *));
    if (spec->wait || spec->pick)
        return; /* a name of its own: nothing else was ever written for it */
    if (!spec->compound) {
        /* The compound of the same program (or attach) and what it used. */
        tdb_ptrs_push(&out->configurations, &nc, entry_name(spec, "C++, gdb"));
        tdb_ptrs_push(&out->configurations, &nc, tdb_vscode_debugpy_name(spec));
        tdb_ptrs_push(&out->compounds, &nm, entry_name(spec, "Python + C++"));
        if (!spec->attach_pid)
            tdb_ptrs_push(&out->tasks, &nt,
                          tdb_xasprintf(TDB_VSCODE_PREFIX "wait for debugpy (%s)", spec->label));
        return;
    }
    /* The "tdebug" configuration of the same name as the compound. */
    tdb_ptrs_push(&out->configurations, &nc, entry_name(spec, "Python + C++"));
    if (spec->attach_pid && !spec->port) {
        /* A process without a debugpy server: the debugpy entry and the
         * compound of an earlier attach go. */
        tdb_ptrs_push(&out->configurations, &nc, tdb_vscode_debugpy_name(spec));
        tdb_ptrs_push(&out->compounds, &nm, entry_name(spec, "Python + C++"));
    }
}

void tdb_vscode_stale_clear(tdb_vscode_stale *stale)
{
    tdb_strv_free(stale->configurations);
    tdb_strv_free(stale->compounds);
    tdb_strv_free(stale->tasks);
    memset(stale, 0, sizeof(*stale));
}

/* ------------------------------------------------------------------ */
/* The files */

void tdb_vscode_written_clear(tdb_vscode_written *w)
{
    free(w->path);
    free(w->backup);
    memset(w, 0, sizeof(*w));
}

int tdb_vscode_existing_port(const char *workspace, const char *name)
{
    char *path = tdb_xasprintf("%s/.vscode/launch.json", workspace);
    tdb_jsonc_doc *doc = tdb_jsonc_load(path, path, NULL);
    int port = 0;

    free(path);
    if (!doc)
        return 0;
    const tdb_jsonc_node *conf = tdb_jsonc_get(tdb_jsonc_root(doc), "configurations");
    for (size_t i = 0; conf && conf->type == TDB_JSONC_ARRAY && i < conf->n_items; i++) {
        const tdb_jsonc_node *n = tdb_jsonc_get(conf->items[i], "name");
        if (!n || n->type != TDB_JSONC_STRING || strcmp(n->string, name))
            continue;
        json_t *v = tdb_jsonc_to_json(doc, conf->items[i]);
        json_int_t p = json_integer_value(json_object_get(json_object_get(v, "connect"), "port"));
        if (p > 0 && p < 65536)
            port = (int)p;
        json_decref(v);
        break;
    }
    tdb_jsonc_doc_free(doc);
    return port;
}

/* Hold WORKSPACE's .vscode directory (DFD) for this process: one 'tdebug
 * vscode' at a time reads, edits and replaces its files, so that two runs
 * for two programs both keep their entries.  flock() on the directory
 * itself leaves no lock file behind.  Where the filesystem has no flock on
 * directories (NFS), the runs are not serialised and tdb_write_file_keeping()
 * still refuses to replace a file that changed since it was read. */
static void lock_dir(int dfd, tdb_vscode_wait_fn on_wait, void *arg)
{
    if (flock(dfd, LOCK_EX | LOCK_NB) == 0 || errno != EWOULDBLOCK)
        return;
    if (on_wait)
        on_wait(arg);
    while (flock(dfd, LOCK_EX) < 0 && errno == EINTR)
        ;
}

/* Whether DOC's root has the array ARRAY_KEY, and an element of it whose
 * ID_KEY is one of NAMES (NULL-terminated) when NAMES is given. */
static int has_member(const tdb_jsonc_doc *doc, const char *array_key, const char *id_key,
                      char *const *names)
{
    const tdb_jsonc_node *a = tdb_jsonc_get(tdb_jsonc_root(doc), array_key);
    if (!a || a->type != TDB_JSONC_ARRAY)
        return 0;
    if (!names)
        return 1;
    for (size_t i = 0; i < a->n_items; i++) {
        const tdb_jsonc_node *id = tdb_jsonc_get(a->items[i], id_key);
        for (char *const *n = names; id && id->type == TDB_JSONC_STRING && *n; n++)
            if (id->string_len == strlen(*n) && !memcmp(id->string, *n, id->string_len))
                return 1;
    }
    return 0;
}

/* Whose is WORKSPACE (resolved; GIVEN: as the command line named it),
 * for root writing there: the folder's owner, unless a link on the way
 * GIVEN names belongs to another user than root (theirs: a link to /etc
 * makes /etc no folder of root's to write in).  0 with *OUT's st_uid and
 * st_gid, or -1. */
static int workspace_owner(const char *workspace, const char *given, struct stat *out)
{
    if (stat(workspace, out) < 0)
        return -1;
    char *path = tdb_xstrdup(given);
    for (char *p = path + 1;; p++) {
        char c = *p;
        if (c == '/' || c == '\0') {
            struct stat l;
            *p = '\0';
            if (lstat(path, &l) == 0 && S_ISLNK(l.st_mode) && l.st_uid != 0) {
                out->st_uid = l.st_uid;
                out->st_gid = l.st_gid;
            }
            *p = c;
        }
        if (c == '\0')
            break;
    }
    free(path);
    return 0;
}

int tdb_vscode_write(const char *workspace, const char *shown, json_t *configurations,
                     json_t *compounds, json_t *tasks, const tdb_vscode_stale *stale,
                     tdb_vscode_wait_fn on_wait, void *wait_arg, tdb_vscode_written out[2],
                     tdb_error *err)
{
    static const char *const files[2] = {"launch.json", "tasks.json"};
    char *dir = tdb_xasprintf("%s/.vscode", workspace);
    char *paths[2] = {NULL, NULL}, *names[2] = {NULL, NULL};
    char *texts[2] = {NULL, NULL};
    size_t lens[2] = {0, 0};
    tdb_jsonc_doc *docs[2] = {NULL, NULL};
    json_t *launch_version = json_string("0.2.0"), *tasks_version = json_string("2.0.0");
    struct stat ws_st, dir_st;
    int rc = -1, dfd = -1, cwd_fd = -1, here = !strcmp(shown, ".");

    memset(out, 0, 2 * sizeof(*out));
    /* root writing into a user's workspace (sudo): what tdebug creates
     * belongs to the folder's owner, as if the user had made it, and what
     * it reads and writes there it does with that user's rights (the
     * kernel's file-system ids): a .vscode, launch.json or tasks.json that
     * is the user's link to a file of root's is refused, not followed. */
    int give_away = geteuid() == 0 && workspace_owner(workspace, shown, &ws_st) == 0 && ws_st.st_uid != 0;
    if (give_away) {
        /* From inside the workspace, reached with root's rights: the user
         * may not be able to walk the path to it (a folder under root's). */
        if ((cwd_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC)) < 0 || chdir(workspace) < 0) {
            tdb_error_errno(err, "cannot enter '%s'", shown);
            goto cleanup;
        }
        free(dir);
        dir = tdb_xstrdup(".vscode");
        setfsgid(ws_st.st_gid);
        setfsuid(ws_st.st_uid);
    }
    int made_dir = mkdir(dir, 0777) == 0;
    if (!made_dir && errno != EEXIST) {
        tdb_error_errno(err, "cannot create '%s%s.vscode'", here ? "" : shown, here ? "" : "/");
        goto cleanup;
    }
    if (give_away && made_dir)
        (void)!chown(dir, ws_st.st_uid, ws_st.st_gid);
    if (give_away && stat(dir, &dir_st) < 0)
        give_away = 0;
    dfd = open(dir, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd < 0) {
        tdb_error_errno(err, "cannot open '%s%s.vscode'", here ? "" : shown, here ? "" : "/");
        goto cleanup;
    }
    lock_dir(dfd, on_wait, wait_arg);

    char *const *stale_conf = stale ? stale->configurations : NULL;
    char *const *stale_comp = stale ? stale->compounds : NULL;
    char *const *stale_tasks = stale && stale->tasks && *stale->tasks ? stale->tasks : NULL;
    int need_tasks = json_array_size(tasks) > 0;
    for (int i = 0; i < 2; i++) {
        paths[i] = tdb_xasprintf("%s/%s", dir, files[i]);
        names[i] = !strcmp(shown, ".") ? tdb_xasprintf(".vscode/%s", files[i])
                                       : tdb_xasprintf("%s/.vscode/%s", shown, files[i]);
        docs[i] = tdb_jsonc_load(paths[i], names[i], i == 0 || need_tasks ? err : NULL);
        if (!docs[i] && (i == 0 || need_tasks))
            goto cleanup;
    }
    /* Nothing to add to tasks.json: it is edited only to take a stale
     * task out, and only when it has one. */
    int edit_tasks = need_tasks || (docs[1] && tdb_jsonc_existed(docs[1]) && stale_tasks &&
                                    has_member(docs[1], "tasks", "label", stale_tasks));
    /* Edit both before writing either: a file that does not parse or has
     * the wrong shape leaves both untouched. */
    if (tdb_jsonc_ensure_member(docs[0], "version", launch_version, err) < 0 ||
        tdb_jsonc_update_array(docs[0], "configurations", "name", configurations,
                               (const char *const *)stale_conf, err) < 0)
        goto cleanup;
    if ((json_array_size(compounds) > 0 || has_member(docs[0], "compounds", "name", NULL)) &&
        tdb_jsonc_update_array(docs[0], "compounds", "name", compounds,
                               (const char *const *)stale_comp, err) < 0)
        goto cleanup;
    if (edit_tasks &&
        ((need_tasks && tdb_jsonc_ensure_member(docs[1], "version", tasks_version, err) < 0) ||
         tdb_jsonc_update_array(docs[1], "tasks", "label", tasks,
                                (const char *const *)stale_tasks, err) < 0))
        goto cleanup;
    for (int i = 0; i < 2; i++)
        if (i == 0 || edit_tasks)
            texts[i] = tdb_jsonc_render(docs[i], &lens[i]);

    /* tasks.json first: a task nobody uses yet is harmless, an entry whose
     * task is missing is not. */
    for (int i = 1; i >= 0; i--) {
        size_t old_len;
        if (i == 1 && !edit_tasks)
            continue; /* no task to write or take out: tasks.json is left alone */
        const char *old = tdb_jsonc_text(docs[i], &old_len);
        if (tdb_write_file_keeping(paths[i], names[i], tdb_jsonc_existed(docs[i]) ? old : NULL,
                                   old_len, texts[i], lens[i], &out[i].backup, &out[i].changed,
                                   err) < 0)
            goto cleanup;
        size_t pl = strlen(paths[i]);
        if (out[i].backup && !strncmp(out[i].backup, paths[i], pl)) { /* shown like the file */
            char *shown_backup = tdb_xasprintf("%s%s", names[i], out[i].backup + pl);
            free(out[i].backup);
            out[i].backup = shown_backup;
        }
        if (give_away && !tdb_jsonc_existed(docs[i]) && out[i].changed)
            (void)!chown(paths[i], dir_st.st_uid, dir_st.st_gid);
        out[i].path = names[i];
        names[i] = NULL;
    }
    rc = 0;
cleanup:
    if (give_away) {
        setfsuid(geteuid());
        setfsgid(getegid());
    }
    if (cwd_fd >= 0) {
        if (fchdir(cwd_fd) < 0 && rc == 0) {
            tdb_error_errno(err, "cannot go back to the working directory");
            rc = -1;
        }
        close(cwd_fd);
    }
    if (dfd >= 0)
        close(dfd); /* and so unlocked */
    for (int i = 0; i < 2; i++) {
        free(paths[i]);
        free(names[i]);
        free(texts[i]);
        tdb_jsonc_doc_free(docs[i]);
    }
    json_decref(launch_version);
    json_decref(tasks_version);
    free(dir);
    return rc;
}
