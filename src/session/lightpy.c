/*
 * session/lightpy.c: Python breakpoints in a light session (session/light.c),
 * whose gdb knows no name: the hook's gdb expressions (session/python.c,
 * session/pytable.c) by address, the names they call found in the symbol
 * tables of the interpreter, libpython, libc and the hook, their strings
 * copied into a page mapped in the process; and the stop where the hook
 * is loaded, Py_RunMain, by address.
 */
#include "session/internal.h"

#include "native/elf.h"

#include <ctype.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* ---- Python breakpoints ---- */

/* What the Python hook's gdb expressions name (session/python.c,
 * session/pytable.c), which a light session's gdb does not know: the
 * functions they call, and the hook's control block. */
static const char *const hook_functions[] = {
    "dlopen", "mmap", "Py_AddPendingCall", "PyErr_CheckSignals", "Py_RunMain",
    "_PyEval_EvalFrameDefault", "tdebug_pyhook_install", "tdebug_pyhook_eval",
    "tdebug_pyhook_step_arm", "tdebug_pyhook_stop", NULL};
static const char *const hook_variables[] = {"tdebug_pyhook_control", NULL};

static int in_list(const char *const *list, const char *name, size_t len)
{
    for (; *list; list++)
        if (strlen(*list) == len && strncmp(*list, name, len) == 0)
            return 1;
    return 0;
}

/* Is the file mapped at PATH (EXE: the interpreter's real path) one those
 * names are in: the interpreter, libpython, libc, the hook? */
static int hook_file(const char *path, const char *exe)
{
    const char *base = tdb_base_name(path);
    return (exe && strcmp(path, exe) == 0) || strncmp(base, "libpython", 9) == 0 ||
           strncmp(base, "libc.so", 7) == 0 || strncmp(base, "libc-", 5) == 0 ||
           strncmp(base, "libtdebug-pyhook", 16) == 0;
}

/* NAME's address in the process (read from the symbol tables of the files
 * hook_file() takes, once), 0 when none defines it. */
static uint64_t hook_address(tdb_session *s, const char *name)
{
    for (size_t k = 0; k < s->light.n_fn; k++)
        if (strcmp(s->light.fn_name[k], name) == 0)
            return s->light.fn_addr[k];
    tdb_maps maps = {0};
    uint64_t addr = 0;
    char *exe = realpath(s->light.exe, NULL);
    if (tdb_maps_read(s->pid, &maps, NULL) < 0)
        goto cleanup;
    tdb_light_read_link_map(s, &maps);
    tdb_light_note_maps(s, &maps); /* the hook's range hides its frames (session/python.c) */
    for (size_t i = 0; i < maps.n && !addr; i++) {
        const char *path = maps.v[i].path;
        if (!path || path[0] != '/' || (i && maps.v[i - 1].path &&
                                        strcmp(maps.v[i - 1].path, path) == 0) ||
            !hook_file(path, exe))
            continue;
        tdb_elf *e = tdb_elf_open_tables(path, NULL);
        uint64_t value, bias;
        if (e && tdb_elf_find_symbol(e, name, &value, NULL, NULL) == 0 && value &&
            tdb_light_bias_of(e, &maps, path, &bias) == 0)
            addr = bias + value;
        tdb_elf_free(e);
    }
    if (addr) {
        size_t n = s->light.n_fn;
        tdb_ptrs_push(&s->light.fn_name, &n, tdb_xstrdup(name));
        s->light.fn_addr = tdb_xrealloc(s->light.fn_addr, (n + 1) * sizeof(uint64_t));
        s->light.fn_addr[s->light.n_fn++] = addr;
    }
cleanup:
    free(exe);
    tdb_maps_free(&maps);
    return addr;
}

char *tdb_session_light_location(tdb_session *s, const char *name)
{
    uint64_t addr = s->light.on ? hook_address(s, name) : 0;
    return addr ? tdb_xasprintf("*0x%llx", (unsigned long long)addr) : NULL;
}

/* A page mapped in the process for the strings of the hook's calls (once). */
static int map_scratch(tdb_session *s, tdb_error *err)
{
    uint64_t page = 0;
    if (s->light.scratch)
        return 0;
    if (tdb_hook_eval_u64(s, "(void *) mmap((void *) 0, (unsigned long) 4096, 3, 0x22, -1, "
                             "(long) 0)", &page, err) < 0)
        return -1;
    if (!page || page == (uint64_t)-1) {
        tdb_error_set(err, ENOMEM, "cannot map a page in the process for the Python hook");
        return -1;
    }
    s->light.scratch = page;
    return 0;
}

/* Copy the NUL-terminated LEN bytes of STR into the scratch page at *AT
 * (which moves past them). */
static int copy_string(tdb_session *s, const char *str, size_t len, uint64_t *at, tdb_error *err)
{
    if (*at + len > s->light.scratch + 4096) {
        tdb_error_set(err, E2BIG, "a string of %zu bytes for the Python hook: too long", len);
        return -1;
    }
    if (tdb_hook_write_mem(s, *at, str, len, err) < 0)
        return -1;
    *at += len;
    return 0;
}

char *tdb_session_light_expr(tdb_session *s, const char *expr, tdb_error *err)
{
    tdb_buf b = TDB_BUF_INIT, str = TDB_BUF_INIT;
    uint64_t at = s->light.scratch;
    const char *p = expr;
    while (*p) {
        if (*p == '"') {
            tdb_buf_reset(&str);
            for (p++; *p && *p != '"'; p++) {
                if (*p == '\\' && p[1])
                    p++;
                tdb_buf_addc(&str, *p);
            }
            p += *p == '"';
            if (map_scratch(s, err) < 0)
                goto fail;
            if (!at)
                at = s->light.scratch;
            uint64_t here = at;
            if (copy_string(s, tdb_buf_str(&str), str.len + 1, &at, err) < 0)
                goto fail;
            tdb_buf_addf(&b, "(char *) 0x%llx", (unsigned long long)here);
            continue;
        }
        if (!isalnum((unsigned char)*p) && *p != '_') {
            tdb_buf_addc(&b, *p++);
            continue;
        }
        const char *word = p;
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
        size_t len = (size_t)(p - word);
        int fn = in_list(hook_functions, word, len), var = in_list(hook_variables, word, len);
        if (!fn && !var) {
            tdb_buf_add(&b, word, len);
            continue;
        }
        char *name = tdb_xstrndup(word, len);
        uint64_t addr = hook_address(s, name);
        if (!addr) {
            tdb_error_set(err, ENOENT, "tdebug finds no %s in the process's symbol tables", name);
            free(name);
            goto fail;
        }
        free(name);
        /* A function as gdb calls one it has no type for (its arguments
         * are cast in EXPR); a variable as bytes, whose address '&' takes. */
        tdb_buf_addf(&b, fn ? "((long (*)()) 0x%llx)" : "(*(char *) 0x%llx)",
                     (unsigned long long)addr);
    }
    tdb_buf_free(&str);
    return tdb_buf_detach(&b);
fail:
    tdb_buf_free(&str);
    tdb_buf_free(&b);
    return NULL;
}

/* Python breakpoints among S's breakpoints: stop where the interpreter
 * starts the program (Py_RunMain, as an ordinary launch does:
 * tdb_session_python_launch()), by address, where the hook is loaded. */
int tdb_light_arm_python(tdb_session *s, tdb_error *err)
{
    uint64_t addr = hook_address(s, "Py_RunMain");
    if (!addr) {
        /* Not CPython's own main: the ordinary way, which says why not. */
        return tdb_session_light_upgrade(s, err) < 0 ? -1 : tdb_session_python_launch(s, err);
    }
    int n = tdb_light_break_at(s, addr, 0, err);
    if (!n)
        return -1;
    s->hook.safe_bps[0] = n;
    s->hook.state = PYHOOK_ARMING;
    return 0;
}
