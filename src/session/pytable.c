/*
 * session/pytable.c: the Python hook's control block in the process,
 * through gdb's memory commands (no call into the process but mmap and, in
 * an ordinary session, memcpy, for a larger breakpoint table): reading and writing its fields,
 * the breakpoint table's slots (lib/tdebug_pyhook.h, .table), and asking
 * the library to apply a new generation.  session/python.c drives it.
 */
#include "session/internal.h"

#include "tdebug_pyhook.h"

#include <errno.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

/* ---- the control block, through gdb ---- */

int tdb_hook_read_mem(tdb_session *s, uint64_t addr, void *buf, size_t len, tdb_error *err)
{
    json_t *res = NULL;
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err, "-data-read-memory-bytes 0x%llx %zu",
                    (unsigned long long)addr, len) < 0)
        return -1;
    const char *hex = tdb_mi_str(json_array_get(json_object_get(res, "memory"), 0), "contents");
    int rc = -1;
    if (hex && strlen(hex) == 2 * len) {
        unsigned char *out = buf;
        for (size_t i = 0; i < len; i++) {
            unsigned v;
            sscanf(hex + 2 * i, "%2x", &v);
            out[i] = (unsigned char)v;
        }
        rc = 0;
    } else {
        tdb_error_set(err, EIO, "gdb read %s bytes of the hook's state at 0x%llx, not %zu",
                      hex ? "other" : "no", (unsigned long long)addr, len);
    }
    json_decref(res);
    return rc;
}

int tdb_hook_write_mem(tdb_session *s, uint64_t addr, const void *buf, size_t len, tdb_error *err)
{
    tdb_buf hex = TDB_BUF_INIT;
    const unsigned char *in = buf;
    for (size_t i = 0; i < len; i++)
        tdb_buf_addf(&hex, "%02x", in[i]);
    int rc = tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-data-write-memory-bytes 0x%llx %s",
                         (unsigned long long)addr, tdb_buf_str(&hex));
    tdb_buf_free(&hex);
    return rc;
}


int tdb_hook_write_i32(tdb_session *s, uint64_t addr, int32_t v, tdb_error *err)
{
    return tdb_hook_write_mem(s, addr, &v, sizeof(v), err);
}

int tdb_hook_write_u64(tdb_session *s, uint64_t addr, uint64_t v, tdb_error *err)
{
    return tdb_hook_write_mem(s, addr, &v, sizeof(v), err);
}

/* After an edit of the control block: where the library asks for it
 * (3.12+: control.sync_slot), have the next Python call in any thread
 * apply it (lib/tdebug_pyhook.h, "Edits"): a memory write, no call. */
int tdb_hook_sync_soon(tdb_session *s, tdb_error *err)
{
    uint64_t sync[2]; /* sync_slot, sync_eval_frame */
    if (tdb_hook_read_mem(s, CONTROL(s, sync_slot), sync, sizeof(sync), err) < 0)
        return -1;
    return sync[0] ? tdb_hook_write_u64(s, sync[0], sync[1], err) : 0;
}

/* gdb's breakpoints and catchpoints off (ON 0) or back on (1) around a
 * call gdb makes in the process: one that fires inside the call (the load
 * catchpoint when dlopen maps the hook, a user's breakpoint on malloc)
 * would abandon it half done. */
static void breakpoints_during_call(tdb_session *s, int on)
{
    tdb_buf list = TDB_BUF_INIT;
    if (s->catch_load_bp > 0)
        tdb_buf_addf(&list, " %d", s->catch_load_bp);
    for (size_t i = 0; i < s->n_bps; i++)
        if (s->bps[i].number > 0 && s->bps[i].enabled)
            tdb_buf_addf(&list, " %d", s->bps[i].number);
    if (s->hook.stop_bp > 0)
        tdb_buf_addf(&list, " %d", s->hook.stop_bp);
    if (list.len)
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, NULL, "-break-%s%s", on ? "enable" : "disable",
                    tdb_buf_str(&list));
    tdb_buf_free(&list);
}

/* An expression's value (a number), or -1 with ERR set.  It may call a
 * function in the process: no breakpoint can interrupt that. */
int tdb_hook_eval_u64(tdb_session *s, const char *expr, uint64_t *out, tdb_error *err)
{
    json_t *res = NULL;
    tdb_buf cmd = TDB_BUF_INIT;
    char *light = NULL;
    int calls = strchr(expr, '(') && strstr(expr, ")(") == NULL; /* as written, by name */
    if (s->light.on && !(light = tdb_session_light_expr(s, expr, NULL))) {
        /* A name tdebug does not find by itself: gdb's, then. */
        if (tdb_session_light_upgrade(s, err) < 0)
            return -1;
    }
    if (light)
        expr = light; /* the same, by address */
    tdb_buf_adds(&cmd, "-data-evaluate-expression ");
    tdb_mi_quote(&cmd, expr);
    if (calls)
        breakpoints_during_call(s, 0);
    int rc = tdb_gdb_cmd(s->gdb, HOOK_TIMEOUT_MS, &res, err, "%s", tdb_buf_str(&cmd));
    if (calls)
        breakpoints_during_call(s, 1);
    tdb_buf_free(&cmd);
    free(light);
    if (rc == 0) {
        const char *v = tdb_mi_str(res, "value");
        /* "(void *) 0x1234" or "0" */
        const char *num = v ? strrchr(v, ' ') : NULL;
        *out = strtoull(num ? num + 1 : v ? v : "0", NULL, 0);
    }
    json_decref(res);
    return rc;
}

/* Copy LEN bytes at FROM to TO in the process, through gdb's memory
 * commands (no call into it): 0, or -1 with ERR set. */
static int copy_memory(tdb_session *s, uint64_t to, uint64_t from, size_t len, tdb_error *err)
{
    enum { CHUNK = 64 * 1024 };
    unsigned char *buf = tdb_xmalloc(CHUNK);
    int rc = 0;
    for (size_t done = 0; done < len && rc == 0; done += CHUNK) {
        size_t n = len - done < CHUNK ? len - done : CHUNK;
        rc = tdb_hook_read_mem(s, from + done, buf, n, err) < 0 ||
                     tdb_hook_write_mem(s, to + done, buf, n, err) < 0
                 ? -1
                 : 0;
    }
    free(buf);
    return rc;
}

/* A table of at least WANT slots in the process: a larger zeroed region
 * mapped there, the slots in use copied in (lib/tdebug_pyhook.h, .table).
 * mmap and memcpy take no lock: any stop will do. */
static int table_reserve(tdb_session *s, int want, tdb_error *err)
{
    pyhook_state *h = &s->hook;
    if (want <= h->capacity)
        return 0;
    int cap = h->capacity > 0 ? h->capacity : TDB_PYHOOK_FIRST_CAPACITY;
    while (cap < want)
        cap *= 2;
    size_t bytes = (size_t)cap * sizeof(tdb_pyhook_breakpoint);
    uint64_t at = 0, done = 0;
    char *expr = tdb_xasprintf("(void *) mmap((void *) 0, (unsigned long) %zu, 3, 0x22, -1, (long) 0)",
                               bytes);
    int rc = tdb_hook_eval_u64(s, expr, &at, err);
    free(expr);
    if (rc < 0)
        return -1;
    if (!at || at == (uint64_t)-1) {
        tdb_error_set(err, ENOMEM, "cannot map %zu bytes in the process for %d Python breakpoints "
                      "(it is out of memory or address space: delete some to make room)",
                      bytes, want);
        return -1;
    }
    size_t used = (size_t)h->n_slots * sizeof(tdb_pyhook_breakpoint);
    if (used && s->light.on) {
        /* memcpy is an IFUNC, which gdb calls by name only, and a light
         * session's gdb knows no name: tdebug copies the slots itself. */
        if (copy_memory(s, at, h->table, used, err) < 0)
            return -1;
    } else if (used) {
        expr = tdb_xasprintf("(void *) memcpy((void *) 0x%llx, (void *) 0x%llx, (unsigned long) %zu)",
                             (unsigned long long)at, (unsigned long long)h->table, used);
        rc = tdb_hook_eval_u64(s, expr, &done, err);
        free(expr);
        if (rc < 0)
            return -1;
    }
    if (tdb_hook_write_u64(s, CONTROL(s, table), at, err) < 0 || tdb_hook_write_i32(s, CONTROL(s, capacity), cap, err) < 0)
        return -1;
    h->table = at;
    h->capacity = cap;
    return 0;
}

/* Slot B's entry of the table as tdebug writes it. */
static void slot_entry(const bp_info *b, tdb_pyhook_breakpoint *bp)
{
    memset(bp, 0, sizeof(*bp));
    bp->id = b->id;
    bp->enabled = b->enabled;
    bp->kind = b->py_exc ? TDB_PYHOOK_BP_EXCEPTION
               : b->py_line > 0 ? TDB_PYHOOK_BP_LINE : TDB_PYHOOK_BP_FUNCTION;
    bp->exc_when = b->py_exc;
    bp->line = b->py_line;
    snprintf(bp->file, sizeof(bp->file), "%s", b->py_file ? b->py_file : "");
    snprintf(bp->function, sizeof(bp->function), "%s", b->py_function ? b->py_function : "");
    snprintf(bp->condition, sizeof(bp->condition), "%s", b->condition ? b->condition : "");
    snprintf(bp->log_message, sizeof(bp->log_message), "%s", b->log_message ? b->log_message : "");
    bp->hit_op = b->hit_op;
    bp->hit_value = b->hit_value;
    bp->ignore = b->ignore;
}

/* A slot for B (a free one, else the next), the table grown for it;
 * the library told how many slots are in use unless DEFER. */
static int take_slot(tdb_session *s, bp_info *b, int defer, tdb_error *err)
{
    pyhook_state *h = &s->hook;
    int slot = h->n_free ? h->free_slots[--h->n_free] : h->n_slots;
    if (slot >= h->capacity && table_reserve(s, slot + 1, err) < 0) {
        if (slot < h->n_slots)
            h->free_slots[h->n_free++] = slot;
        return -1;
    }
    b->slot = slot;
    if (slot + 1 > h->n_slots) {
        h->n_slots = slot + 1;
        if (!defer && tdb_hook_write_i32(s, CONTROL(s, n_breakpoints), h->n_slots, err) < 0)
            return -1;
    }
    return 0;
}

/* LEN bytes of BUF into the process at ADDR, one gdb command whatever
 * their size: gdb reads its commands a byte at a time, so they go through
 * a file that gdb's 'restore' copies in. */
static int write_through_file(tdb_session *s, uint64_t addr, const void *buf, size_t len,
                              tdb_error *err)
{
    int rc = -1;
    const char *tmp = getenv("TMPDIR");
    char *path = tdb_xasprintf("%s/tdebug-pyhook-XXXXXX",
                               tmp && *tmp && !strpbrk(tmp, " \t\n\"'\\") ? tmp : "/tmp");
    int fd = mkstemp(path);
    if (fd < 0 || write(fd, buf, len) != (ssize_t)len) {
        tdb_error_errno(err, "cannot write '%s'", path);
        if (fd >= 0)
            close(fd);
        goto cleanup;
    }
    close(fd);
    char *cli = tdb_xasprintf("restore %s binary 0x%llx", path, (unsigned long long)addr);
    char *out = tdb_gdb_console(s->gdb, CMD_TIMEOUT_MS, err, cli);
    free(cli);
    if (!out)
        goto cleanup;
    free(out);
    rc = 0;
cleanup:
    if (fd >= 0)
        unlink(path);
    free(path);
    return rc;
}

/* Write breakpoint B into its slot (a new one if it has none), or clear
 * the slot.  The library sees it at the next generation (table_changed). */
int tdb_hook_write_slot(tdb_session *s, bp_info *b, int clear, tdb_error *err)
{
    pyhook_state *h = &s->hook;
    if (b->slot < 0 && clear)
        return 0;
    int fresh = b->slot < 0;
    if (fresh && take_slot(s, b, 0, err) < 0)
        return -1;
    uint64_t at = h->table + (uint64_t)b->slot * sizeof(tdb_pyhook_breakpoint);
    if (clear) {
        TDB_GROW(h->free_slots, h->n_free, h->cap_free);
        h->free_slots[h->n_free++] = b->slot;
        b->slot = -1;
        return tdb_hook_write_i32(s, at + offsetof(tdb_pyhook_breakpoint, id), 0, err);
    }
    tdb_pyhook_breakpoint bp;
    slot_entry(b, &bp);
    if (!fresh) {
        /* An edit keeps what the library counts in the slot (as gdb keeps
         * a breakpoint's hits and what is left of its ignore count): the
         * hits, the hits whose condition held unless the hit condition
         * changed, and the ignore count unless 'ignore' gave a new one. */
        tdb_pyhook_breakpoint now;
        if (tdb_hook_read_mem(s, at, &now, offsetof(tdb_pyhook_breakpoint, condition), err) < 0)
            return -1;
        bp.hits = now.hits;
        bp.bound = now.bound;
        if (now.hit_op == bp.hit_op && now.hit_value == bp.hit_value)
            bp.hit_count = now.hit_count;
        if (!b->ignore_new)
            bp.ignore = now.ignore;
    }
    b->ignore_new = 0;
    /* One write while the process is stopped (the library reads the table
     * only when it runs), up to the log message's NUL: the strings before
     * it whole, so a reused slot keeps nothing of another breakpoint. */
    return write_through_file(s, at, &bp,
                              offsetof(tdb_pyhook_breakpoint, log_message) +
                                  strlen(bp.log_message) + 1,
                              err);
}

/* Every Python breakpoint into the table at once (the hook just loaded):
 * slots taken first, then the whole table written in large pieces, so a
 * thousand breakpoints cost a few gdb commands, not thousands. */
int tdb_hook_write_all_slots(tdb_session *s, tdb_error *err)
{
    pyhook_state *h = &s->hook;
    int want = 0, rc;
    tdb_pyhook_breakpoint *image = NULL;
    for (size_t i = 0; i < s->n_bps; i++)
        want += s->bps[i].kind == BP_PYTHON && s->bps[i].slot < 0;
    if (table_reserve(s, h->n_slots + want, err) < 0)
        return -1;
    for (size_t i = 0; i < s->n_bps; i++)
        if (s->bps[i].kind == BP_PYTHON && s->bps[i].slot < 0 && take_slot(s, &s->bps[i], 1, err) < 0)
            return -1;
    if (h->n_slots == 0)
        return 0;
    if (tdb_hook_write_i32(s, CONTROL(s, n_breakpoints), h->n_slots, err) < 0)
        return -1;
    image = tdb_xcalloc((size_t)h->n_slots, sizeof(*image));
    for (size_t i = 0; i < s->n_bps; i++)
        if (s->bps[i].kind == BP_PYTHON && s->bps[i].slot >= 0) {
            slot_entry(&s->bps[i], &image[s->bps[i].slot]);
            s->bps[i].ignore_new = 0;
        }
    rc = write_through_file(s, h->table, image, (size_t)h->n_slots * sizeof(*image), err);
    free(image);
    return rc;
}

/* After slots were written: a new generation, which the library applies
 * at its next safe point (brought about soon, see sync_soon). */
int tdb_hook_table_changed(tdb_session *s, tdb_error *err)
{
    pyhook_state *h = &s->hook;
    if (tdb_hook_write_u64(s, CONTROL(s, generation), ++h->generation, err) < 0)
        return -1;
    return h->state == PYHOOK_READY ? tdb_hook_sync_soon(s, err) : 0;
}
