/*
 * session/symbols.c: which symbols gdb reads, and the libraries tdebug
 * tracks (see session/internal.h).  gdb reads no library's symbols by
 * itself ('auto-solib-add off'); the core reads the module being imported,
 * libc and ld.so at a stop, the libraries a breakpoint may live in (the
 * interest: torch, c10, the working and script directories, --symbols),
 * whose files the load catchpoint watches, the libraries outside the
 * system's directories that define a function a pending breakpoint names,
 * the libraries with DWARF a stepped library calls into, and the
 * libraries on a stack.
 * CPython's own debug info is hidden from gdb unless asked for.
 */
#include "session/internal.h"

#include "native/dwsource.h"
#include "native/elf.h"

#include <regex.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* Escape S for a POSIX basic regex. */
static void bre_escape(tdb_buf *b, const char *s)
{
    for (; *s; s++) {
        if (strchr(".[]*^$\\", *s))
            tdb_buf_addc(b, '\\');
        tdb_buf_addc(b, *s);
    }
}

char *tdb_module_file_regex(const char *name)
{
    tdb_buf b = TDB_BUF_INIT;
    tdb_buf_addc(&b, '/');
    for (const char *p = name; *p; p++)
        tdb_buf_addc(&b, *p == '.' ? '/' : *p);
    /* _C.so, _C.abi3.so, _C.cpython-311-x86_64-linux-gnu.so */
    tdb_buf_adds(&b, "\\.\\([^/]*\\.\\)\\{0,1\\}so$");
    return tdb_buf_detach(&b);
}

static const char *module_init_name(const char *module, tdb_buf *b)
{
    const char *last = strrchr(module, '.');
    tdb_buf_reset(b);
    tdb_buf_addf(b, "PyInit_%s", last ? last + 1 : module);
    return tdb_buf_str(b);
}

lib_info *tdb_session_find_lib(tdb_session *s, const char *path)
{
    for (size_t i = 0; i < s->n_libs; i++)
        if (strcmp(s->libs[i].path, path) == 0)
            return &s->libs[i];
    return NULL;
}

lib_info *tdb_session_lib_at(tdb_session *s, unsigned long addr)
{
    for (size_t i = 0; i < s->n_libs; i++)
        if (addr >= s->libs[i].lo && addr < s->libs[i].hi)
            return &s->libs[i];
    return NULL;
}

lib_info *tdb_session_note_lib(tdb_session *s, const char *path)
{
    lib_info *l = tdb_session_find_lib(s, path);
    if (l)
        return l;
    if (s->n_libs == s->cap_libs) {
        s->cap_libs = s->cap_libs ? s->cap_libs * 2 : 64;
        s->libs = tdb_xrealloc(s->libs, s->cap_libs * sizeof(*s->libs));
    }
    l = &s->libs[s->n_libs++];
    memset(l, 0, sizeof(*l));
    l->path = tdb_xstrdup(path);
    return l;
}

/* Read the symbols of every library matching the basic regex RE, and mark
 * them as read.  Breakpoints that bind meanwhile are updated (their PLT
 * locations dropped) at once. */
int tdb_session_load_symbols(tdb_session *s, const char *re, tdb_error *err)
{
    if (tdb_session_console(s, SYMBOLS_TIMEOUT_MS, err, "sharedlibrary %s", re) < 0)
        return -1;
    regex_t rx;
    if (regcomp(&rx, re, REG_NOSUB) == 0) {
        for (size_t i = 0; i < s->n_libs; i++)
            if (regexec(&rx, s->libs[i].path, 0, NULL, 0) == 0)
                s->libs[i].symbols = 1;
        regfree(&rx);
    }
    tdb_session_drain(s);
    return 0;
}

int tdb_session_load_library_symbols(tdb_session *s, const char *path, tdb_error *err)
{
    tdb_buf re = TDB_BUF_INIT;
    tdb_buf_addc(&re, '^');
    bre_escape(&re, path);
    tdb_buf_addc(&re, '$');
    int rc = tdb_session_load_symbols(s, tdb_buf_str(&re), err);
    tdb_buf_free(&re);
    return rc;
}

int tdb_session_outside_system(const char *path)
{
    static const char *const system[] = {"/usr/lib", "/lib", NULL};
    if (!path || path[0] != '/')
        return 0;
    for (const char *const *d = system; *d; d++)
        if (strncmp(path, *d, strlen(*d)) == 0)
            return 0;
    return 1;
}

/* The mapped library named NEEDED (a DT_NEEDED entry: the loader names it
 * by the file it opened, whose base name that is), or NULL. */
static lib_info *mapped_needed(tdb_session *s, const char *needed)
{
    for (size_t i = 0; i < s->n_libs; i++) {
        const char *base = strrchr(s->libs[i].path, '/');
        if (base && strcmp(base + 1, needed) == 0)
            return &s->libs[i];
    }
    return NULL;
}

int tdb_session_read_dep_symbols(tdb_session *s, const char *lib, tdb_error *err)
{
    char **todo = NULL;
    size_t n_todo = 0;
    int rc = 0;
    if (s->opts.all_symbols)
        return 0;
    tdb_ptrs_push(&todo, &n_todo, tdb_xstrdup(lib));
    for (size_t k = 0; k < n_todo && rc == 0; k++) {
        lib_info *l = tdb_session_note_lib(s, todo[k]);
        if (l->deps_read)
            continue;
        l->deps_read = 1;
        char **deps = NULL;
        size_t n_deps = 0;
        tdb_elf_dynamic dyn = {0};
        tdb_elf *e = tdb_elf_open_tables(todo[k], NULL);
        if (e && tdb_elf_read_dynamic(e, &dyn, NULL) == 0) {
            for (size_t i = 0; i < dyn.n_needed; i++) {
                lib_info *d = mapped_needed(s, dyn.needed[i]);
                /* The system's libraries carry no DWARF (a -dbg package's is
                 * a separate file): only a user's own ones are read. */
                if (!d || !tdb_session_outside_system(d->path) || !tdb_dwarf_present(d->path))
                    continue;
                char *path = tdb_xstrdup(d->path); /* reading may move the table */
                tdb_ptrs_push(&deps, &n_deps, tdb_xstrdup(path));
                tdb_ptrs_push(&todo, &n_todo, path);
                if (!d->symbols && tdb_session_load_library_symbols(s, path, err) < 0)
                    rc = -1;
            }
        }
        tdb_elf_dynamic_release(&dyn);
        tdb_elf_free(e);
        tdb_ptrs_push(&deps, &n_deps, NULL);
        l = tdb_session_note_lib(s, todo[k]); /* the table may have moved */
        l->deps = deps;
    }
    tdb_ptrs_push(&todo, &n_todo, NULL);
    tdb_strv_free(todo);
    return rc;
}

int tdb_session_ensure_base_symbols(tdb_session *s, tdb_error *err)
{
    if (s->base_symbols || s->opts.all_symbols)
        return 0;
    if (tdb_session_load_symbols(s, "/ld-linux[^/]*$\\|/libc\\.so[^/]*$", err) < 0)
        return -1;
    s->base_symbols = 1;
    return 0;
}

/* Place the breakpoint on module M's PyInit function inside library LIB,
 * just mapped: read LIB's symbols (it is small; its dependencies are not
 * even mapped yet), insert a temporary breakpoint and keep only the
 * location inside LIB, so another module's PyInit of the same name
 * (functorch._C also has PyInit__C) cannot fire it. */
int tdb_session_arm_import_stop(tdb_session *s, module_watch *m, const char *lib, tdb_error *err)
{
    tdb_buf name = TDB_BUF_INIT;
    tdb_buf cmd = TDB_BUF_INIT;
    json_t *res = NULL;
    int rc = -1;

    if (tdb_session_load_library_symbols(s, lib, err) < 0)
        goto cleanup;
    module_init_name(m->name, &name);
    tdb_buf_adds(&cmd, "-break-insert -t ");
    tdb_mi_quote(&cmd, tdb_buf_str(&name));
    tdb_error local = {0};
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, &local, "%s", tdb_buf_str(&cmd)) < 0) {
        say(s, "warning", "'%s' has no %s: cannot stop before its init (%s)", lib,
            tdb_buf_str(&name), local.msg);
        rc = 0;
        goto cleanup;
    }
    json_t *bkpt = json_object_get(res, "bkpt");
    const char *num = tdb_mi_str(bkpt, "number");
    if (!num) {
        tdb_error_set(err, 0, "gdb gave no breakpoint number for %s", tdb_buf_str(&name));
        goto cleanup;
    }
    lib_info *l = tdb_session_find_lib(s, lib);
    json_t *locations = json_object_get(bkpt, "locations");
    if (json_is_array(locations) && l && l->hi > l->lo) {
        size_t i;
        json_t *loc;
        json_array_foreach(locations, i, loc)
        {
            unsigned long a = parse_addr(tdb_mi_str(loc, "addr"));
            const char *locno = tdb_mi_str(loc, "number");
            if (locno && (a < l->lo || a >= l->hi))
                tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-disable %s", locno);
        }
    }
    bp_info *b = tdb_session_add_bp(s, atoi(num), BP_IMPORT, tdb_buf_str(&name), m->name);
    b->temporary = 1;
    rc = 0;
cleanup:
    json_decref(res);
    tdb_buf_free(&name);
    tdb_buf_free(&cmd);
    return rc;
}

/* The load catchpoint fired: arm import stops for watched modules and read
 * the symbols of interesting libraries so pending breakpoints bind. */
int tdb_session_library_event(tdb_session *s, const json_t *added, module_watch **out_load,
                                tdb_error *err)
{
    size_t i;
    json_t *v;
    json_array_foreach(added, i, v)
    {
        const char *lib = json_is_string(v) ? json_string_value(v) : tdb_mi_str(v, "library");
        if (!lib)
            continue;
        tdb_session_note_lib(s, lib);
        for (size_t k = 0; k < s->n_mods; k++) {
            module_watch *m = &s->mods[k];
            if (!m->seen && regexec(&m->re, lib, 0, NULL, 0) == 0) {
                m->seen = 1;
                m->library = tdb_xstrdup(lib);
                if (m->at_import && tdb_session_arm_import_stop(s, m, lib, err) < 0)
                    return -1;
                if (m->at_load && !*out_load)
                    *out_load = m;
                if (!m->at_import)
                    m->stopped = 1; /* a load stop is all that was asked */
            }
        }
        lib_info *l = tdb_session_find_lib(s, lib);
        int wanted = s->have_interest && regexec(&s->interest_re, lib, 0, NULL, 0) == 0;
        /* A shared libpython, and the libraries outside the system's
         * directories (a user's extension installed anywhere), are watched
         * for the pending breakpoints on functions: their symbols are read
         * when they define one of them. */
        if (!wanted && l && !l->symbols && s->libpython_watched &&
            (regexec(&s->libpython_re, lib, 0, NULL, 0) == 0 || tdb_session_outside_system(lib)))
            wanted = tdb_session_defines_pending(s, lib);
        if (wanted && l && !l->symbols && tdb_session_load_library_symbols(s, lib, err) < 0)
            return -1;
    }
    return 0;
}

const char *const tdb_session_interest_words[] = {"torch", "c10", NULL};

char **tdb_session_interest_dirs(const char *script_dir)
{
    char **dirs = NULL, cwd[4096];
    size_t n = 0;
    if (getcwd(cwd, sizeof(cwd)) && strcmp(cwd, "/") != 0)
        tdb_ptrs_push(&dirs, &n, tdb_xstrdup(cwd));
    if (script_dir && strcmp(script_dir, "/") != 0)
        tdb_ptrs_push(&dirs, &n, tdb_xstrdup(script_dir));
    tdb_ptrs_push(&dirs, &n, NULL);
    return dirs;
}

/* The basic regex of libraries whose symbols a --break may need, plus
 * --symbols; NULL when nothing beyond the watched modules is wanted. */
static char *interest_regex(tdb_session *s, const char *script_dir, int breaks)
{
    tdb_buf b = TDB_BUF_INIT;
    for (size_t i = 0; i < s->opts.n_symbols; i++) {
        if (b.len)
            tdb_buf_adds(&b, "\\|");
        tdb_buf_adds(&b, s->opts.symbols[i]);
    }
    if (breaks) {
        /* A breakpoint may be in torch/c10 or in the user's own extensions,
         * which live under the working directory or beside the script. */
        for (const char *const *w = tdb_session_interest_words; *w; w++) {
            if (b.len)
                tdb_buf_adds(&b, "\\|");
            tdb_buf_adds(&b, *w);
        }
        char **dirs = tdb_session_interest_dirs(script_dir);
        for (char **d = dirs; *d; d++) {
            tdb_buf_adds(&b, "\\|^");
            bre_escape(&b, *d);
            tdb_buf_addc(&b, '/');
        }
        tdb_strv_free(dirs);
    }
    if (!b.len) {
        tdb_buf_free(&b);
        return NULL;
    }
    return tdb_buf_detach(&b);
}

int tdb_session_set_interest(tdb_session *s, char *re, tdb_error *err)
{
    if (s->have_interest)
        regfree(&s->interest_re);
    s->have_interest = 0;
    free(s->interest);
    s->interest = re;
    if (!re)
        return 0;
    if (regcomp(&s->interest_re, re, REG_NOSUB) != 0) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, 0, "invalid --symbols regex in '%s'", re);
        return -1;
    }
    s->have_interest = 1;
    return 0;
}

/* (Re)place the load catchpoint for the watched modules and the
 * interesting libraries. */
int tdb_session_place_load_catchpoint(tdb_session *s, tdb_error *err)
{
    tdb_buf re = TDB_BUF_INIT;
    json_t *res = NULL;
    int rc = 0;
    for (size_t i = 0; i < s->n_mods; i++) {
        if (re.len)
            tdb_buf_adds(&re, "\\|");
        tdb_buf_adds(&re, s->mods[i].regex);
    }
    if (s->have_interest) {
        if (re.len)
            tdb_buf_adds(&re, "\\|");
        tdb_buf_adds(&re, s->interest);
    }
    if (!s->opts.all_symbols && tdb_session_any_pending_function(s)) {
        if (!s->libpython_watched && regcomp(&s->libpython_re, LIBPYTHON_RE, REG_NOSUB) == 0)
            s->libpython_watched = 1;
        if (re.len)
            tdb_buf_adds(&re, "\\|");
        tdb_buf_adds(&re, LIBPYTHON_RE "\\|" OUTSIDE_SYSTEM_RE);
    }
    if (s->catch_load_bp > 0) {
        /* one catchpoint, the widest regex: the old one goes */
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-delete %d", s->catch_load_bp);
        s->catch_load_bp = 0;
    }
    if (re.len) {
        tdb_buf cmd = TDB_BUF_INIT;
        tdb_buf_addf(&cmd, "catch load %s", tdb_buf_str(&re));
        char *out = tdb_gdb_console(s->gdb, CMD_TIMEOUT_MS, err, tdb_buf_str(&cmd));
        tdb_buf_free(&cmd);
        rc = out ? 0 : -1;
        free(out);
        tdb_session_drain(s); /* its number: =breakpoint-created */
    }
    json_decref(res);
    tdb_buf_free(&re);
    return rc;
}

int tdb_session_add_interest(tdb_session *s, const char *regex, tdb_error *err)
{
    if (s->opts.all_symbols || (s->interest && strstr(s->interest, regex)))
        return 0;
    tdb_buf re = TDB_BUF_INIT;
    tdb_buf_addf(&re, "%s%s%s", s->interest ? s->interest : "", s->interest ? "\\|" : "", regex);
    if (tdb_session_set_interest(s, tdb_buf_detach(&re), err) < 0)
        return -1;
    /* Before the run, tdb_session_arm() places the catchpoint; one it placed already
     * must take the new regex too (a shared libpython added by Python
     * breakpoints after it). */
    return s->state == NOT_STARTED && s->catch_load_bp <= 0 ? 0 : tdb_session_place_load_catchpoint(s, err);
}

/* Add the libraries a breakpoint may be in to those whose symbols are
 * read when they load (the load catchpoint's regex), for a breakpoint
 * whose library is not mapped yet. */
int tdb_session_widen_interest(tdb_session *s, tdb_error *err)
{
    if (s->opts.all_symbols)
        return 0;
    /* Already covered: the break regex is in. */
    if (s->interest && strstr(s->interest, "torch\\|c10"))
        return 0;
    char *re = interest_regex(s, NULL, 1);
    if (tdb_session_set_interest(s, re, err) < 0)
        return -1;
    return tdb_session_place_load_catchpoint(s, err);
}

int tdb_session_prepare_interest(tdb_session *s, const char *script_dir, tdb_error *err)
{
    tdb_session_step_dirs(s, script_dir);
    /* Breakpoints and catch throw placed before the program started (a
     * front-end's, tdb_session_breakpoint_add()) need the same symbols as
     * a native --break.  A Python --break (FILE.py:LINE) needs none of
     * them: only libpython's (tdb_session_python_launch()), so torch's
     * libraries load unwatched and gdb reads none of their symbols. */
    int native_bps = 0;
    for (size_t i = 0; i < s->n_bps; i++)
        native_bps |= s->bps[i].kind == BP_NATIVE;
    for (size_t i = 0; i < s->opts.n_breaks; i++)
        native_bps |= !tdb_session_location_is_python(s->opts.breaks[i]);
    if (!s->opts.all_symbols &&
        tdb_session_set_interest(s, interest_regex(s, script_dir, native_bps), err) < 0)
        return -1;
    if (s->stdcxx_interest && !s->opts.all_symbols &&
        tdb_session_set_interest(s, tdb_xasprintf("%s%s%s", s->interest ? s->interest : "",
                                      s->interest ? "\\|" : "", STDCXX_RE), err) < 0)
        return -1;
    return 0;
}

/* Symbol loading policy, before any symbol file is read: no library's
 * symbols unless asked, and gdb's index cache in tdebug's cache directory
 * (later starts on the same interpreter skip rebuilding its index). */
int tdb_session_setup_symbols(tdb_session *s, tdb_error *err)
{
    if (!s->opts.all_symbols &&
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-gdb-set auto-solib-add off") < 0)
        return -1;
    /* Best effort: an unwritable cache only costs time. */
    char *dir = tdb_user_cache_dir("gdb-index", NULL);
    if (dir) {
        /* gdb never removes an index it wrote: one a build of every
         * library it ever read. */
        tdb_cache_prune(dir, tdb_cache_max());
        tdb_buf cmd = TDB_BUF_INIT;
        tdb_buf_adds(&cmd, "set index-cache directory ");
        tdb_buf_adds(&cmd, dir);
        if (tdb_session_console(s, CMD_TIMEOUT_MS, NULL, "%s", tdb_buf_str(&cmd)) == 0)
            tdb_session_console(s, CMD_TIMEOUT_MS, NULL, "set index-cache enabled on");
        tdb_buf_free(&cmd);
        free(dir);
    }
    tdb_session_printers_load(s);
    return 0;
}

/* gdb reads CPython's debug info (python3-dbg: 11 MB without an index)
 * when it loads the interpreter, and its first backtrace expands ceval.c's
 * compile unit: 0.8 s and 1 s measured here, most of a session's cost.
 * tdebug reads Python frames from memory and names the interpreter's
 * functions from its symbol table instead, so unless --cpython-symbols
 * (or --all-symbols) the debug file is hidden from gdb while it loads the
 * interpreter, and shown again for every other library. */
void tdb_session_hide_cpython_debuginfo(tdb_session *s)
{
    json_t *res = NULL;
    if (s->opts.cpython_symbols || s->opts.all_symbols ||
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, NULL, "-gdb-show debug-file-directory") < 0)
        return;
    const char *dir = tdb_mi_str(res, "value");
    if (dir && tdb_session_console(s, CMD_TIMEOUT_MS, NULL,
                       "set debug-file-directory /nonexistent/tdebug-hides-cpython-debug-info") == 0)
        s->hidden_debug_dir = tdb_xstrdup(dir);
    json_decref(res);
}

void tdb_session_restore_debuginfo(tdb_session *s)
{
    if (!s->hidden_debug_dir)
        return;
    if (s->gdb) /* else gdb is gone (an attach to a process that died) */
        tdb_session_console(s, CMD_TIMEOUT_MS, NULL, "set debug-file-directory %s", s->hidden_debug_dir);
    free(s->hidden_debug_dir);
    s->hidden_debug_dir = NULL;
}

int tdb_session_read_symbols(tdb_session *s, const char *re, tdb_error *err)
{
    return tdb_session_load_symbols(s, re, err);
}

char **tdb_session_complete_symbols(tdb_session *s, const char *prefix)
{
    char **out = NULL;
    size_t n = 0;
    if (s->state == STOPPED && s->gdb) {
        /* gdb's own completer knows the symbols it has read. */
        tdb_buf cmd = TDB_BUF_INIT, req = TDB_BUF_INIT;
        json_t *res = NULL;
        tdb_buf_adds(&cmd, "-complete ");
        tdb_buf_addf(&req, "break %s", prefix);
        tdb_mi_quote(&cmd, tdb_buf_str(&req));
        if (tdb_gdb_cmd(s->gdb, 5000, &res, NULL, "%s", tdb_buf_str(&cmd)) == 0) {
            size_t i;
            json_t *m;
            json_array_foreach(json_object_get(res, "matches"), i, m)
            {
                const char *v = json_string_value(m);
                if (v && strncmp(v, "break ", 6) == 0 && n < 500)
                    tdb_ptrs_push(&out, &n, tdb_xstrdup(v + 6));
            }
        }
        json_decref(res);
        tdb_buf_free(&cmd);
        tdb_buf_free(&req);
    }
    tdb_ptrs_push(&out, &n, NULL);
    return out;
}
