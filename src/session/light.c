/*
 * session/light.c: a light session (session/internal.h): 'tdebug run' with a
 * gdb that reads no library.
 *
 * What costs under gdb is not ptrace but gdb's own work on libraries
 * (measured here, bench/run_import.py has the numbers): finding and
 * opening the file of each of the ~300 libraries torch._C brings (0.1-0.15
 * s at an attach, as much when they load), stopping at every dlopen to
 * read the loader's list again, and reading libtorch_cpu's 35,000 symbols
 * (0.3-0.75 s) to place a breakpoint in it or unwind through it.  A gdb
 * whose sysroot does not exist finds no library and not even the dynamic
 * loader, so it sets no breakpoint on the loader's events: the program
 * runs under it about as fast as without it.  What gdb no longer does,
 * tdebug does itself:
 *   - the program is started by tdebug (its child: tdebug's stdio, a
 *     process group of its own, killed with tdebug) with the preloaded
 *     library (lib/, action "trap"), while gdb starts (0.07 s), and gdb
 *     attaches to it at once (10 ms without libraries);
 *   - the library traps (SIGTRAP to itself, tdebug_preload.h) when a
 *     watched library is mapped: the module of --stop-at-import, and for
 *     --break the libraries a breakpoint may be in (torch, c10, the
 *     working and script directories, as gdb's ordinary sessions read);
 *     before gdb has attached it waits for it;
 *   - at a trap tdebug reads the memory map, finds PyInit_<name> and the
 *     breakpoints' functions in those libraries' symbol tables (native/elf.c)
 *     and gives gdb their addresses (with debug info, after the prologue,
 *     where gdb itself would break: native/dwsource.h);
 *   - at a stop the stack is unwound by tdebug (native/unwind.c, libdw) from the
 *     registers gdb reports, and named from the symbol tables, as frames
 *     gdb cannot name always were; libraries are named as the loader's
 *     list names them (what gdb shows), read through its _r_debug.
 * gdb stays attached after the last stop asked for: with no library read
 * it costs next to nothing there (no loader events; a thread's start is
 * one ptrace stop), and a later crash still stops the program with its
 * stack.  Whatever needs gdb's own view (a prompt, commands, a crash's
 * stack with its source lines, a frame in a library with debug info of its
 * own, a breakpoint with several places) makes the session an ordinary one
 * first: tdb_session_light_upgrade() gives gdb its sysroot back, and from
 * then on gdb reads libraries as it always did.  TDEBUG_LIGHT=0 turns
 * light sessions off.
 */
#include "session/internal.h"

#include "native/dwsource.h"
#include "native/elf.h"
#include "process/paused.h"
#include "process/preload.h"
#include "native/unwind.h"

#include <ctype.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

/* A sysroot under which gdb finds no file at all. */
#define LIGHT_SYSROOT "/nonexistent/tdebug-light-session"

/* ---- when ---- */

/* A location the symbol tables answer for: a C name ("getppid") or a C++
 * qualified one ("at::_ops::add_Tensor::call"), nothing else (no file, line,
 * address, parameter list, template, operator or condition: gdb's). */
static int plain_function(const char *loc)
{
    const char *p = loc;
    for (;;) {
        if (!isalpha((unsigned char)*p) && *p != '_')
            return 0;
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
        if (!*p)
            return 1;
        if (p[0] != ':' || p[1] != ':')
            return 0;
        p += 2;
    }
}

/* Do S's options allow a light session at all (WARN: say so of garbage in
 * TDEBUG_LIGHT)? */
static int options_allow(tdb_session *s, int warn)
{
    const tdb_session_options *o = &s->opts;
    const char *env = getenv("TDEBUG_LIGHT");
    if (!o->light)
        return 0;
    if (env && strcmp(env, "0") == 0)
        return 0;
    if (warn && env && *env && strcmp(env, "1") != 0)
        say(s, "warning", "TDEBUG_LIGHT='%s' is neither 0 nor 1: a light session where the "
                          "stops allow one (set TDEBUG_LIGHT=0 to turn them off)", env);
    return !(o->all_symbols || o->n_symbols || o->cpython_symbols || o->n_stop_at_load ||
             o->n_catch_throw || o->n_catch_raise);
}

/* Are the breakpoints a front-end placed before the launch (the DAP's
 * setBreakpoints) all Python lines and functions (or none)?  A Python
 * exception's catchpoint is not: it reads a c10::Error's throw site
 * through gdb (session/pyexc.c). */
static int only_python_bps(const tdb_session *s)
{
    for (size_t i = 0; i < s->n_bps; i++)
        if (s->bps[i].kind != BP_PYTHON || s->bps[i].py_exc)
            return 0;
    return 1;
}

int tdb_session_light_applies_at_launch(tdb_session *s)
{
    if (s->light.env_changed)
        return 0;
    if (s->light.wanted)
        return 1;
    return s->n_bps && only_python_bps(s) && options_allow(s, 0);
}

int tdb_session_light_applies(tdb_session *s)
{
    const tdb_session_options *o = &s->opts;
    if (!options_allow(s, 1))
        return 0;
    if (!o->n_stop_at_import && !o->n_breaks)
        return 0; /* nothing to stop at: the ordinary session costs as little */
    /* A Python line or function (FILE.py:LINE) is the hook's, which a
     * light session loads by address (tdb_light_arm_python()).  Not beside a
     * function's: the preloaded library then watches the libraries
     * outside the system's directories, the hook's among them, and its
     * trap would land inside gdb's call that loads the hook. */
    int python = 0, native = 0;
    for (size_t i = 0; i < o->n_breaks; i++) {
        if (tdb_break_location_kind(o->breaks[i]) == TDB_BREAK_PYTHON_FILE)
            python = 1;
        else if (plain_function(o->breaks[i]))
            native = 1;
        else
            return 0;
    }
    return !(python && native);
}

/* ---- the preloaded library's variables ---- */

/* Find the preloaded library's variables in MAPS (once). */
static void find_audit(tdb_session *s, const tdb_maps *maps)
{
    if (s->light.state_addr)
        return;
    for (size_t i = 0; i < maps->n; i++) {
        const tdb_map *m = &maps->v[i];
        if (!m->path || strcmp(m->path, s->light.audit) != 0)
            continue;
        tdb_elf *e = tdb_elf_open_tables(m->path, NULL);
        uint64_t bias, state, release;
        if (e && tdb_elf_load_bias(e, m->start, m->offset, &bias, NULL) == 0 &&
            tdb_elf_find_symbol(e, TDEBUG_PRELOAD_SYM_STATE, &state, NULL, NULL) == 0 &&
            tdb_elf_find_symbol(e, TDEBUG_PRELOAD_SYM_RELEASE, &release, NULL, NULL) == 0) {
            s->light.state_addr = bias + state;
            s->light.release_addr = bias + release;
        }
        tdb_elf_free(e);
        return;
    }
}

/* No more traps: nothing is left to wait for. */
static void disarm(tdb_session *s)
{
    if (s->light.disarmed || !s->light.release_addr)
        return;
    s->light.disarmed = 1;
    tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-data-write-memory-bytes 0x%llx %02x000000",
                (unsigned long long)s->light.release_addr, TDEBUG_RELEASE_DISARM);
}

/* ---- the loader's names ---- */

/* gdb names a library as the loader's list does (link_map's l_name:
 * "/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13"), the memory map by the file
 * it opened ("/usr/lib/x86_64-linux-gnu/libtorch_cpu.so.1.13.0").  Read
 * that list from the process, through the loader's _r_debug, and note the
 * real path of each name. */
void tdb_light_read_link_map(tdb_session *s, const tdb_maps *maps)
{
    for (size_t i = 0; !s->light.r_debug && i < maps->n; i++) {
        const tdb_map *m = &maps->v[i];
        if (!m->path || !strstr(tdb_base_name(m->path), "ld-linux"))
            continue;
        tdb_elf *e = tdb_elf_open_tables(m->path, NULL);
        uint64_t bias, value;
        if (e && tdb_elf_load_bias(e, m->start, m->offset, &bias, NULL) == 0 &&
            tdb_elf_find_symbol(e, "_r_debug", &value, NULL, NULL) == 0)
            s->light.r_debug = bias + value;
        tdb_elf_free(e);
    }
    uint64_t lm = 0;
    if (!s->light.r_debug ||
        tdb_mem_read_full(&s->light.mem, s->light.r_debug + 8, &lm, sizeof(lm)) < 0)
        return;
    /* struct link_map: l_addr, l_name, l_ld, l_next, l_prev */
    for (size_t guard = 0; lm && guard < 100000; guard++) {
        uint64_t link[4];
        char name[4096];
        if (tdb_mem_read_full(&s->light.mem, lm, link, sizeof(link)) < 0)
            return;
        ssize_t got = link[1] ? tdb_mem_read(&s->light.mem, link[1], name, sizeof(name) - 1) : 0;
        lm = link[3];
        if (got <= 0)
            continue;
        name[got] = '\0';
        if (name[0] != '/' || strlen(name) == (size_t)got)
            continue; /* the program itself (""), or cut short */
        int known = 0;
        for (size_t k = 0; k < s->light.n_ln && !known; k++)
            known = strcmp(s->light.ln_name[k], name) == 0;
        char *real = known ? NULL : realpath(name, NULL);
        if (!real)
            continue;
        size_t n = s->light.n_ln;
        tdb_ptrs_push(&s->light.ln_real, &n, real);
        tdb_ptrs_push(&s->light.ln_name, &s->light.n_ln, tdb_xstrdup(name));
    }
}

/* The name gdb would give the file mapped at PATH: the loader's, else
 * PATH itself. */
static const char *loader_name(tdb_session *s, const char *path)
{
    for (size_t k = 0; k < s->light.n_ln; k++)
        if (strcmp(s->light.ln_real[k], path) == 0)
            return s->light.ln_name[k];
    return path;
}

/* The file mapped for the library gdb would call NAME. */
static const char *mapped_file(tdb_session *s, const char *name)
{
    for (size_t k = 0; k < s->light.n_ln; k++)
        if (strcmp(s->light.ln_name[k], name) == 0)
            return s->light.ln_real[k];
    return name;
}

/* ---- libraries and stops by address ---- */

/* The load bias of PATH, from its first mapping in MAPS, through E. */
int tdb_light_bias_of(tdb_elf *e, const tdb_maps *maps, const char *path, uint64_t *out)
{
    for (size_t i = 0; i < maps->n; i++)
        if (maps->v[i].path && strcmp(maps->v[i].path, path) == 0)
            return tdb_elf_load_bias(e, maps->v[i].start, maps->v[i].offset, out, NULL);
    return -1;
}

/* "FUNC in LIB" for ADDR, named as tdebug names frames. */
static char *describe_addr(tdb_session *s, tdb_symbolizer **sym, uint64_t addr, const char *lib)
{
    tdb_native_frame f = {.pc = addr};
    if (!*sym) {
        if (!s->symcache)
            s->symcache = tdb_symcache_new();
        *sym = tdb_symbolizer_new(s->pid, s->symcache, NULL);
    }
    if (*sym)
        tdb_symbolizer_name(*sym, &f, 1);
    char *what = f.function ? tdb_xasprintf("%s in %s", f.function, tdb_base_name(lib))
                            : tdb_xasprintf("0x%llx in %s", (unsigned long long)addr,
                                            tdb_base_name(lib));
    free(f.function);
    free(f.library);
    return what;
}

/* A gdb breakpoint at ADDR (temporary when TEMP): its number, or 0 with ERR
 * set (gdb died). */
int tdb_light_break_at(tdb_session *s, uint64_t addr, int temp, tdb_error *err)
{
    json_t *res = NULL;
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err, "-break-insert%s *0x%llx",
                    temp ? " -t" : "", (unsigned long long)addr) < 0)
        return 0;
    const char *num = tdb_mi_str(json_object_get(res, "bkpt"), "number");
    int n = num ? atoi(num) : 0;
    json_decref(res);
    if (!n)
        tdb_error_set(err, 0, "gdb gave no breakpoint number for *0x%llx",
                      (unsigned long long)addr);
    return n;
}

/* Module M's file PATH is mapped: stop in its PyInit (as arm_import_stop()
 * does in an ordinary session, here by address). */
static int arm_import(tdb_session *s, module_watch *m, const char *path, const tdb_maps *maps,
                      tdb_error *err)
{
    const char *last = strrchr(m->name, '.');
    char *init = tdb_xasprintf("PyInit_%s", last ? last + 1 : m->name);
    tdb_elf *e = tdb_elf_open_tables(path, NULL);
    uint64_t value, bias;
    int rc = 0;
    if (!e || tdb_elf_find_symbol(e, init, &value, NULL, NULL) < 0 ||
        tdb_light_bias_of(e, maps, mapped_file(s, path), &bias) < 0) {
        say(s, "warning", "'%s' has no %s: cannot stop before its init", path, init);
    } else {
        int n = tdb_light_break_at(s, bias + value, 1, err);
        if (!n) {
            rc = -1;
        } else {
            bp_info *b = tdb_session_add_bp(s, n, BP_IMPORT, init, m->name);
            b->temporary = 1;
            b->by_address = 1;
        }
    }
    tdb_elf_free(e);
    free(init);
    return rc;
}

/* The places found for one held breakpoint. */
typedef struct found {
    uint64_t *addr;
    char **lib;
    size_t n;
} found;

/* Breakpoint B (held: not in gdb yet) is at ADDR in LIB: give gdb the
 * address, with tdebug's own name for it. */
static int place(tdb_session *s, bp_info *b, uint64_t addr, const char *lib,
                 tdb_symbolizer **sym, tdb_error *err)
{
    int n = tdb_light_break_at(s, addr, b->temporary, err);
    if (!n)
        return -1;
    char *what = describe_addr(s, sym, addr, lib);
    b->number = n;
    b->pending = 0;
    b->by_address = 1;
    b->locs = tdb_xcalloc(1, sizeof(*b->locs));
    b->locs[0] = (bp_loc){.addr = addr, .what = tdb_xstrdup(what)};
    b->n_locs = 1;
    free(b->where);
    b->where = what;
    tdb_session_bp_give_state(s, b);
    return 0;
}

/* Note the libraries of MAPS (named as gdb would, their code's range):
 * the number noted before. */
size_t tdb_light_note_maps(tdb_session *s, const tdb_maps *maps)
{
    size_t old = s->n_libs;
    for (size_t i = 0; i < maps->n; i++) {
        const tdb_map *m = &maps->v[i];
        if (!m->path || m->path[0] != '/' || m->perms[2] != 'x')
            continue;
        size_t before = s->n_libs;
        lib_info *l = tdb_session_note_lib(s, loader_name(s, m->path));
        if (s->n_libs > before || l->hi <= l->lo) {
            l->lo = m->start;
            l->hi = m->end;
        }
    }
    return old;
}

/* Read the memory map: note the libraries, arm the watched modules that
 * mapped, look the held breakpoints up in the new libraries that
 * breakpoints may be in (FIRST: every library, the program's own ones at
 * the attach), then turn the traps off when nothing is left to wait for. */
static int scan(tdb_session *s, int first, tdb_error *err)
{
    tdb_maps maps = {0};
    tdb_symbolizer *sym = NULL;
    found *places = NULL;
    size_t n_held = 0;
    int rc = -1, ambiguous = 0;

    if (tdb_maps_read(s->pid, &maps, err) < 0)
        return -1;
    find_audit(s, &maps);
    tdb_light_read_link_map(s, &maps);
    size_t old = tdb_light_note_maps(s, &maps);
    for (size_t k = 0; k < s->n_mods; k++) {
        module_watch *m = &s->mods[k];
        for (size_t i = first ? 0 : old; i < s->n_libs && !m->seen; i++) {
            if (regexec(&m->re, s->libs[i].path, 0, NULL, 0) != 0)
                continue;
            m->seen = 1;
            m->library = tdb_xstrdup(s->libs[i].path);
            if (m->at_import && arm_import(s, m, m->library, &maps, err) < 0)
                goto cleanup;
            if (!m->at_import)
                m->stopped = 1;
        }
    }
    places = tdb_xcalloc(s->n_bps + 1, sizeof(*places));
    /* Before the startup trap the loader may still be mapping the
     * program's libraries, the preloaded library's own copies first (its
     * namespace's libc): the held breakpoints wait for that trap. */
    for (size_t j = 0; j < s->n_bps && !s->light.startup_pending; j++)
        n_held += s->bps[j].kind == BP_NATIVE && s->bps[j].number == 0;
    for (size_t i = first ? 0 : old; i < s->n_libs && n_held; i++) {
        const char *path = s->libs[i].path;
        if (!first && !(s->have_interest && regexec(&s->interest_re, path, 0, NULL, 0) == 0) &&
            !tdb_session_outside_system(path))
            continue;
        /* One file noted twice: by its path at an attach made while the
         * loader's list did not name it yet, then by the loader's name,
         * which gdb shows: that one is searched. */
        int renamed = 0;
        for (size_t k = first ? 0 : old; k < s->n_libs && !renamed; k++)
            renamed = k != i && strcmp(mapped_file(s, s->libs[k].path), path) == 0;
        if (renamed)
            continue;
        tdb_elf *e = tdb_elf_open_tables(path, NULL);
        uint64_t bias;
        if (!e || tdb_light_bias_of(e, &maps, mapped_file(s, path), &bias) < 0) {
            tdb_elf_free(e);
            continue;
        }
        for (size_t j = 0; j < s->n_bps; j++) {
            bp_info *b = &s->bps[j];
            uint64_t *v = NULL;
            size_t n = 0;
            if (b->kind != BP_NATIVE || b->number != 0 ||
                tdb_elf_functions_named(e, b->location, &v, &n, NULL) < 0)
                continue;
            for (size_t k = 0; k < n; k++) {
                /* With debug info, after the prologue as gdb would put it:
                 * arguments and locals are valid at the stop. */
                tdb_dwarf_after_prologue(path, v[k], &v[k], NULL);
                places[j].addr = tdb_xrealloc(places[j].addr, (places[j].n + 1) * sizeof(uint64_t));
                places[j].lib = tdb_xrealloc(places[j].lib, (places[j].n + 1) * sizeof(char *));
                places[j].addr[places[j].n] = bias + v[k];
                places[j].lib[places[j].n++] = s->libs[i].path;
            }
            free(v);
        }
        tdb_elf_free(e);
    }
    for (size_t j = 0; j < s->n_bps; j++) {
        if (places[j].n == 1 && place(s, &s->bps[j], places[j].addr[0], places[j].lib[0], &sym,
                                      err) < 0)
            goto cleanup;
        ambiguous |= places[j].n > 1;
    }
    int waiting = 0;
    for (size_t k = 0; k < s->n_mods; k++)
        waiting |= !s->mods[k].seen;
    for (size_t j = 0; j < s->n_bps; j++)
        waiting |= s->bps[j].kind == BP_NATIVE && s->bps[j].number == 0;
    if (!waiting)
        disarm(s);
    /* Overloads, or one function in several libraries: gdb's breakpoint
     * with several locations (and its description of them) is the one. */
    rc = ambiguous ? tdb_session_light_upgrade(s, err) : 0;
cleanup:
    for (size_t j = 0; places && j < s->n_bps; j++) {
        free(places[j].addr);
        free(places[j].lib);
    }
    free(places);
    tdb_symbolizer_free(sym);
    tdb_maps_free(&maps);
    return rc;
}

int tdb_session_light_trap(tdb_session *s, tdb_error *err)
{
    int32_t state = 0;
    if (!s->light.on)
        return 0;
    if (!s->light.state_addr) {
        tdb_maps maps = {0};
        if (tdb_maps_read(s->pid, &maps, NULL) == 0)
            find_audit(s, &maps);
        tdb_maps_free(&maps);
    }
    if (!s->light.state_addr ||
        tdb_mem_read_full(&s->light.mem, s->light.state_addr, &state, sizeof(state)) < 0 ||
        state != TDEBUG_STATE_TRAPPED)
        return 0;
    /* The first trap (the startup one, unless the program stopped waiting
     * for gdb): every library mapped is looked at, as at the attach. */
    int first = s->light.startup_pending;
    s->light.startup_pending = 0;
    return scan(s, first, err) < 0 ? -1 : 1;
}

/* ---- starting ---- */

/* How many of S's --break are native (plain functions): the others are
 * Python's, which need no library watched. */
static size_t native_breaks(const tdb_session *s)
{
    size_t n = 0;
    for (size_t i = 0; i < s->opts.n_breaks; i++)
        n += tdb_break_location_kind(s->opts.breaks[i]) == TDB_BREAK_NATIVE;
    return n;
}

/* The TDEBUG_WATCH_FILES of S's stops: the modules' files, and with
 * NATIVE breakpoints the libraries they may be in. */
static char *watch_files(tdb_session *s, const char *script_dir, size_t native)
{
    tdb_buf b = TDB_BUF_INIT;
    for (size_t i = 0; i < s->opts.n_stop_at_import; i++)
        tdb_preload_add_module_files(&b, s->opts.stop_at_import[i]);
    if (native) {
        for (const char *const *w = tdb_session_interest_words; *w; w++)
            tdb_buf_addf(&b, "%s*/*%s*", b.len ? "," : "", *w);
        char **dirs = tdb_session_interest_dirs(script_dir);
        for (char **d = dirs; *d; d++)
            tdb_preload_add_dir_files(&b, *d);
        tdb_strv_free(dirs);
        /* and a user's extension installed anywhere: the libraries outside
         * the system's directories, as OUTSIDE_SYSTEM_RE (fnmatch's '*'
         * matches '/' too) */
        tdb_buf_addf(&b, ",/[!ul]*,/u[!s]*,/us[!r]*,/usr[!/]*,/usr/[!l]*,/usr/l[!i]*,"
                         "/usr/li[!b]*,/l[!i]*,/li[!b]*");
    }
    return tdb_buf_detach(&b);
}

/* Kill and reap the program (a launch that failed half way). */
static void kill_child(tdb_session *s)
{
    tdb_session_light_end(s);
}

/* The program ended before gdb could attach: its status is the session's
 * end. */
static int ended_early(tdb_session *s, tdb_error *err)
{
    int ws;
    if (waitpid(s->light.child, &ws, WNOHANG) != s->light.child)
        return 0;
    s->light.child = -1;
    s->signalled = WIFSIGNALED(ws);
    s->exit_status = s->signalled ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);
    s->have_exit = 1;
    s->state = EXITED;
    if (s->signalled)
        say(s, "signalled", "program was killed by SIG%s (%s)", sigabbrev_np(WTERMSIG(ws)),
            strsignal(WTERMSIG(ws)));
    if (!s->gdb) {
        /* The attach closed a gdb stuck on the dead process. */
        tdb_gdb_options gopts = {.stderr_fd = -1, .own_pgrp = 1};
        s->gdb = tdb_gdb_start(&gopts, err);
        if (!s->gdb)
            return -1;
        tdb_gdb_set_cancel_fd(s->gdb, s->cancel_fd);
    }
    tdb_error_clear(err);
    return 1;
}

/* Start the program ARGV with the preloaded library, as tdebug's child
 * (PYTHON: Python breakpoints wait for the hook; NATIVE: that many native
 * ones wait for their libraries): 1 started (s->pid, s->light.child), 0
 * when it cannot start light here (nothing started: the library is not
 * built, ptrace would refuse, or the patterns are too many for it), -1
 * with ERR set. */
static int spawn_light(tdb_session *s, char *const argv[], const char *script_dir, int python,
                       size_t native, tdb_error *err)
{
    tdb_preload_settings set = {.action = "trap", .announce = "off"};
    tdb_ptracer_plan plan = tdb_ptracer_plan_for(tdb_yama_ptrace_scope(),
                                                 tdb_have_cap_sys_ptrace());
    json_t *env = NULL;
    char *library = NULL, *watch = NULL;
    int rc = 0;

    if (plan != TDB_PTRACER_REFUSED)
        library = tdb_preload_library(NULL);
    if (library) {
        free(s->light.audit);
        s->light.audit = realpath(library, NULL);
        set.watch_files = watch = watch_files(s, script_dir, native);
        /* gdb attaches before the program's own code runs: a native
         * breakpoint may be in it, the Python hook's stop is in
         * Py_RunMain. */
        set.trap_startup = native || python ? "1" : NULL;
        /* Breakpoints may be hit by the constructors of the libraries
         * they are in: those wait for gdb.  Import stops need only the
         * modules' inits to. */
        set.trap_wait = native ? "load" : "init";
        s->light.startup_pending = native > 0;
    }
    if (!library || !s->light.audit || tdb_preload_check(&set, NULL) < 0)
        goto cleanup;
    env = tdb_preload_env(library, &set, getenv("LD_AUDIT"));
    json_object_update(env, s->light.env); /* the front-end's ('env' of a DAP launch) */
    tdb_spawn_how how = {.fds = s->saved_fds, .own_pgrp = 1, .plan = plan,
                         .pid_var = TDEBUG_ENV_TRAP_PID};
    pid_t pid = tdb_paused_spawn_with(argv, env, &how, err);
    if (pid < 0) {
        rc = -1;
        goto cleanup;
    }
    s->light.child = s->pid = pid;
    tdb_mem_init(&s->light.mem, pid);
    if (s->fe.program_started)
        s->fe.program_started(s->fe.data, pid); /* the terminal is the program's */
    rc = 1;
cleanup:
    if (rc == 0) {
        free(s->light.audit);
        s->light.audit = NULL;
    }
    json_decref(env);
    free(watch);
    free(library);
    return rc;
}

/* gdb (reading no library) attaches to the program just spawned, the
 * stops are placed by address and it runs: 0, or -1 with ERR set (the
 * program killed).  FIRST: the session's first start, whose --break are
 * placed now; a restart's breakpoints are those it had. */
static int attach_and_go(tdb_session *s, int first, int python, tdb_error *err)
{
    s->light.on = 1;
    if (tdb_session_gdb_attach(s, s->pid, err) < 0) {
        int early = ended_early(s, err);
        if (early != 0)
            return early > 0 ? 0 : -1;
        kill_child(s);
        return -1;
    }
    s->state = STOPPED;
    tdb_session_drain(s);
    if (first && tdb_session_prepare_interest(s, s->light.script_dir, err) < 0)
        goto fail;
    /* The native breakpoints wait in tdebug until a library defines
     * them; the Python ones in the hook's table, until Py_RunMain loads
     * it (armed first: the hook is not loaded at a stop before it). */
    if (python && tdb_light_arm_python(s, err) < 0)
        goto fail;
    for (size_t i = 0; first && i < s->opts.n_breaks; i++) {
        const char *what = s->opts.breaks[i];
        if (tdb_break_location_kind(what) == TDB_BREAK_NATIVE)
            tdb_session_add_bp(s, 0, BP_NATIVE, what, NULL)->pending = 1;
        else if (tdb_session_arm_one(s, what, 1, err) < 0)
            goto fail;
    }
    s->light.scanned = 1;
    if (scan(s, 1, err) < 0 || tdb_session_resume(s, TDB_RESUME_CONTINUE, err) < 0)
        goto fail;
    return 0;
fail:
    kill_child(s);
    return -1;
}

int tdb_session_light_launch(tdb_session *s, char *const argv[], const char *script_dir,
                             tdb_error *err)
{
    json_t *res = NULL;
    s->light.wanted = 0;
    int python = native_breaks(s) < s->opts.n_breaks || s->n_bps > 0;
    int spawned = only_python_bps(s) ? spawn_light(s, argv, script_dir, python,
                                                   native_breaks(s), err)
                                     : 0;
    if (spawned <= 0) {
        /* An ordinary launch, then (gdb quits cleanly at the end). */
        if (spawned < 0) {
            tdb_gdb_handshake(s->gdb, NULL);
            return -1;
        }
        return tdb_gdb_handshake(s->gdb, err) < 0 ? -1 : 1;
    }
    for (size_t i = 0, n = 0; argv[i]; i++)
        tdb_ptrs_push(&s->light.argv, &n, tdb_xstrdup(argv[i]));
    s->light.exe = tdb_xstrdup(argv[0]);
    s->light.script_dir = script_dir ? tdb_xstrdup(script_dir) : NULL;

    /* Meanwhile gdb started. */
    if (tdb_gdb_handshake(s->gdb, err) < 0 || tdb_session_setup_symbols(s, err) < 0 ||
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err, "-gdb-show sysroot") < 0 ||
        tdb_session_console(s, CMD_TIMEOUT_MS, err, "set sysroot %s", LIGHT_SYSROOT) < 0) {
        json_decref(res);
        kill_child(s);
        return -1;
    }
    const char *sysroot = tdb_mi_str(res, "value");
    s->light.sysroot = tdb_xstrdup(sysroot && *sysroot ? sysroot : "target:");
    json_decref(res);
    return attach_and_go(s, 1, python, err);
}

/* ---- running it again ---- */

/* Can the breakpoints S has now make a light session (as
 * tdb_session_light_applies() says of the options at the start)? */
static int relaunch_applies(tdb_session *s)
{
    int python = 0, native = 0;
    if (s->light.env_changed || !options_allow(s, 0))
        return 0;
    for (size_t i = 0; i < s->n_bps; i++) {
        const bp_info *b = &s->bps[i];
        if (b->kind == BP_IMPORT)
            continue;
        /* gdb evaluates a native breakpoint's condition: with symbols */
        if ((b->kind == BP_PYTHON && b->py_exc) || b->kind == BP_CATCH || b->kind == BP_WATCH ||
            (b->kind == BP_NATIVE && (!plain_function(b->location) || b->condition)))
            return 0;
        python |= b->kind == BP_PYTHON;
        native |= b->kind == BP_NATIVE;
    }
    return !(python && native);
}

int tdb_session_light_rerun(tdb_session *s, tdb_error *err)
{
    /* The program tdebug started (never one it attached to: 'run' refuses
     * those first) ends, gdb's hold on it first. */
    if (s->state == STOPPED) {
        tdb_error local = {0};
        free(tdb_gdb_console(s->gdb, 30000, &local, "kill"));
        if (!tdb_gdb_alive(s->gdb)) {
            tdb_error_set(err, local.code, "%s", local.msg);
            return -1;
        }
    }
    tdb_session_light_end(s);
    tdb_session_light_reap(s);
    tdb_session_drain(s);
    tdb_session_forget_process(s);
    if (!relaunch_applies(s)) {
        /* Its breakpoints need an ordinary session now: gdb reads the
         * libraries again, and the caller has gdb start the program. */
        int was_light = s->light.on;
        s->light.on = 0;
        return was_light && tdb_session_console(s, CMD_TIMEOUT_MS, err, "set sysroot %s",
                                                s->light.sysroot) < 0 ? -1 : 1;
    }
    /* Made an ordinary session since: gdb forgets the interpreter's file
     * and finds no library again. */
    if (!s->light.on &&
        (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-file-exec-and-symbols") < 0 ||
         tdb_session_console(s, CMD_TIMEOUT_MS, err, "set sysroot %s", LIGHT_SYSROOT) < 0))
        return -1;
    int python = 0;
    size_t native = 0;
    for (size_t i = 0; i < s->n_bps; i++) {
        python |= s->bps[i].kind == BP_PYTHON;
        native += s->bps[i].kind == BP_NATIVE;
    }
    int spawned = spawn_light(s, s->light.argv, s->light.script_dir, python, native, err);
    if (spawned == 0)
        tdb_error_set(err, ENOENT, "cannot start the program light again (the preloaded "
                                   "library is missing or ptrace refuses): 'quit' and "
                                   "'tdebug run' again");
    if (spawned <= 0)
        return -1;
    return attach_and_go(s, 0, python, err);
}

/* ---- stacks ---- */

json_t *tdb_session_light_frames(tdb_session *s, int thread, int *need_gdb, tdb_error *err)
{
    json_t *res = NULL, *frames = NULL;
    tdb_capture *cap = NULL;
    tdb_native_frame *f = NULL;
    size_t n = 0;
    char *note = NULL;
    uint64_t g[17] = {0}; /* gdb's amd64 numbers: rax rbx rcx rdx rsi rdi rbp rsp r8-r15 rip */
    int max = s->opts.max_frames > 0 ? s->opts.max_frames : DEFAULT_MAX_FRAMES;

    *need_gdb = 0;
    int rc = thread > 0 ? tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err,
                                      "-data-list-register-values --thread %d x 0 1 2 3 4 5 6 7 "
                                      "8 9 10 11 12 13 14 15 16", thread)
                        : tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err,
                                      "-data-list-register-values x 0 1 2 3 4 5 6 7 8 9 10 11 "
                                      "12 13 14 15 16");
    if (rc < 0)
        goto cleanup;
    size_t i;
    json_t *r;
    json_array_foreach(json_object_get(res, "register-values"), i, r)
    {
        const char *num = tdb_mi_str(r, "number"), *value = tdb_mi_str(r, "value");
        long k = num ? atol(num) : -1;
        if (k >= 0 && k < 17 && value)
            g[k] = strtoull(value, NULL, 16);
    }
    const uint64_t dwarf[17] = {g[0], g[3], g[2],  g[1],  g[4],  g[5],  g[6],  g[7], g[8],
                                g[9], g[10], g[11], g[12], g[13], g[14], g[15], g[16]};
    pid_t lwp = tdb_session_thread_lwp(s, thread);
    tdb_session_make_stop_readers(s);
    cap = tdb_capture_from_regs(s->pid, lwp ? lwp : s->pid, dwarf, s->have_maps ? &s->maps : NULL,
                                TDB_STACK_COPY_MAX, err);
    if (!cap || tdb_capture_unwind(cap, lwp ? lwp : s->pid, (size_t)max, s->symcache, &f, &n,
                                   &note, err) < 0)
        goto cleanup;
    char *hook = s->hook.lib ? realpath(s->hook.lib, NULL) : NULL;
    for (size_t k = 0; k < n; k++) {
        if (hook && f[k].library && strcmp(f[k].library, hook) == 0)
            continue; /* the Python hook's frames, which stops hide */
        if (tdb_capture_own_debug_info(cap, k == 0 || !f[k].pc ? f[k].pc : f[k].pc - 1)) {
            free(hook);
            *need_gdb = 1; /* gdb shows its source lines and arguments */
            goto cleanup;
        }
    }
    /* Where the program stopped, in a library with a separate debug file
     * (libc with libc6-dbg): gdb reads it and shows the source line.  Not
     * the interpreter, whose debug info sessions hide (session/symbols.c). */
    char *exe = realpath(s->light.exe, NULL);
    int in_exe = exe && n && f[0].library &&
                 (strcmp(f[0].library, exe) == 0 || (hook && strcmp(f[0].library, hook) == 0));
    free(exe);
    free(hook);
    if (n && !in_exe &&
        tdb_capture_debug_file(cap, f[0].pc, TDB_DEBUG_DIR_DEFAULT)) {
        *need_gdb = 1;
        goto cleanup;
    }
    /* gdb's backtraces end at the program's entry point, not in it. */
    size_t shown = n;
    while (shown > 1 && f[shown - 1].function && strcmp(f[shown - 1].function, "_start") == 0)
        shown--;
    if (s->have_maps)
        tdb_light_read_link_map(s, &s->maps);
    frames = json_array();
    for (size_t k = 0; k < shown; k++) {
        json_t *o = json_object();
        json_object_set_new(o, "level", json_sprintf("%zu", k));
        json_object_set_new(o, "addr", json_sprintf("0x%016llx", (unsigned long long)f[k].pc));
        if (f[k].function)
            json_object_set_new(o, "func", json_string_nocheck(f[k].function));
        if (f[k].library)
            json_object_set_new(o, "from", json_string_nocheck(loader_name(s, f[k].library)));
        json_array_append_new(frames, o);
    }
    s->light.synth = 1;
cleanup:
    if (f)
        tdb_native_frames_free(f, n);
    free(note);
    tdb_capture_free(cap);
    json_decref(res);
    return frames;
}

/* ---- becoming an ordinary session ---- */

int tdb_session_light_upgrade(tdb_session *s, tdb_error *err)
{
    if (!s->light.on)
        return 0;
    s->light.on = 0;
    s->light.synth = 0;
    disarm(s); /* gdb's load catchpoint watches from now on */
    /* The interpreter's symbols (without CPython's debug info, as an
     * ordinary launch reads them), then every library's file. */
    tdb_buf cmd = TDB_BUF_INIT;
    tdb_buf_adds(&cmd, "-file-exec-and-symbols ");
    tdb_mi_quote(&cmd, s->light.exe);
    tdb_session_hide_cpython_debuginfo(s);
    int rc = tdb_gdb_cmd(s->gdb, SYMBOLS_TIMEOUT_MS, NULL, err, "%s", tdb_buf_str(&cmd));
    tdb_session_restore_debuginfo(s);
    tdb_buf_free(&cmd);
    if (rc < 0 ||
        tdb_session_console(s, SYMBOLS_TIMEOUT_MS, err, "set sysroot %s", s->light.sysroot) < 0)
        return -1;
    tdb_session_drain(s);
    /* gdb tells of the libraries it finds under the new sysroot by no
     * =library-loaded record: ask for them (their text ranges, which a
     * step through torch's bindings reads: session/stepinto.c). */
    json_t *r = NULL;
    if (tdb_gdb_cmd(s->gdb, SYMBOLS_TIMEOUT_MS, &r, err, "-file-list-shared-libraries") < 0)
        return -1;
    json_t *lib;
    size_t i;
    json_array_foreach(json_object_get(r, "shared-libraries"), i, lib)
        tdb_session_note_library(s, lib);
    json_decref(r);
    if (tdb_session_place_load_catchpoint(s, err) < 0)
        return -1;
    /* The Python hook, loaded by address: its calls by name from now on. */
    if (s->hook.loaded && tdb_session_load_symbols(s, PYHOOK_LIB_RE, err) < 0)
        return -1;
    for (size_t j = 0; j < s->n_bps; j++)
        if (s->bps[j].kind == BP_NATIVE && s->bps[j].number == 0 &&
            tdb_session_bind_held(s, &s->bps[j], err) < 0)
            return -1;
    return 0;
}

/* Reap PID within MS milliseconds: 1 reaped (or not ours), 0 not yet. */
static int reap_within(pid_t pid, int ms)
{
    int64_t deadline = tdb_now_ms() + ms;
    for (;;) {
        pid_t r = waitpid(pid, NULL, WNOHANG);
        if (r == pid || (r < 0 && errno != EINTR))
            return 1;
        if (tdb_now_ms() >= deadline)
            return 0;
        usleep(5000);
    }
}

void tdb_session_light_end(tdb_session *s)
{
    if (s->light.child <= 0)
        return;
    /* Gone already (a zombie until now), or killed by gdb: a program tdebug
     * started never outlives its session.  A child gdb still traces is
     * reaped by its parent only after gdb has waited for it, which a gdb
     * holding it stopped (just attached, before the first trap) does not
     * do: never block on it here, where a Ctrl-C or SIGTERM must end the
     * session; it is reaped once gdb is gone (tdb_session_light_reap()). */
    kill(s->light.child, SIGKILL);
    if (!reap_within(s->light.child, 500))
        s->light.unreaped = s->light.child;
    s->light.child = -1;
}

void tdb_session_light_reap(tdb_session *s)
{
    if (s->light.unreaped > 0)
        reap_within(s->light.unreaped, 2000);
    s->light.unreaped = -1;
}
