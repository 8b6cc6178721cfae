/*
 * session/native.c: the machine under the program at a stop, as data:
 * instructions (gdb's disassembler), memory read and written, for the
 * front-ends' native views (the DAP's disassemble, readMemory,
 * writeMemory, modules, and the listing of a frame that has no source).
 */
#include "session/internal.h"

#include "native/elf.h"
#include "cpython/values.h"

#include <errno.h>
#include <linux/hw_breakpoint.h>
#include <linux/perf_event.h>
#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* gdb's -data-disassemble answer flattened: mode 5 nests the instructions
 * of a source line under it ({line, fullname, line_asm_insn: [...]}), and
 * gives bare instructions where there is no source.  Appends to OUT
 * {"address", "instruction", "bytes", "function", "offset", "file",
 * "line"} for each. */
static void flatten(const json_t *insns, json_t *out)
{
    size_t i, j;
    json_t *e, *in;
    json_array_foreach(insns, i, e)
    {
        json_t *nested = json_object_get(e, "line_asm_insn");
        if (!nested) {
            json_array_append_new(out, json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?}", "address",
                                                 json_object_get(e, "address"), "instruction",
                                                 json_object_get(e, "inst"), "bytes",
                                                 json_object_get(e, "opcodes"), "function",
                                                 json_object_get(e, "func-name"), "offset",
                                                 json_object_get(e, "offset")));
            continue;
        }
        const char *line = tdb_mi_str(e, "line");
        json_array_foreach(nested, j, in)
        {
            json_t *o = json_pack("{s:O?, s:O?, s:O?, s:O?, s:O?, s:O?}", "address",
                                  json_object_get(in, "address"), "instruction",
                                  json_object_get(in, "inst"), "bytes",
                                  json_object_get(in, "opcodes"), "function",
                                  json_object_get(in, "func-name"), "offset",
                                  json_object_get(in, "offset"), "file",
                                  json_object_get(e, "fullname"));
            if (line)
                json_object_set_new(o, "line", json_integer(atoi(line)));
            json_array_append_new(out, o);
        }
    }
}

/* Instructions in [LO, HI) (HI 0: the function holding LO), new array or
 * NULL with ERR. */
static json_t *disassemble_range(tdb_session *s, uint64_t lo, uint64_t hi, tdb_error *err)
{
    json_t *res = NULL;
    int rc = hi ? tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err,
                              "-data-disassemble -s 0x%llx -e 0x%llx -- 5",
                              (unsigned long long)lo, (unsigned long long)hi)
                : tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err, "-data-disassemble -a 0x%llx -- 5",
                              (unsigned long long)lo);
    if (rc < 0)
        return NULL;
    json_t *out = json_array();
    flatten(json_object_get(res, "asm_insns"), out);
    json_decref(res);
    return out;
}

static uint64_t insn_addr(const json_t *insn)
{
    const char *a = tdb_mi_str(insn, "address");
    return a ? strtoull(a, NULL, 0) : 0;
}

/* The index of the instruction at ADDR in LIST, or -1. */
static long index_of(const json_t *list, uint64_t addr)
{
    for (size_t i = 0; i < json_array_size(list); i++)
        if (insn_addr(json_array_get(list, i)) == addr)
            return (long)i;
    return -1;
}

/* x86 instructions are 1 to 15 bytes: the longest run before an address. */
#define MAX_INSN 15

json_t *tdb_session_disassemble(tdb_session *s, uint64_t addr, long offset, long count,
                                tdb_error *err)
{
    if (tdb_session_need_stop(s, err) < 0)
        return NULL;
    if (count <= 0 || count > 100000) {
        tdb_error_set(err, EINVAL, "cannot disassemble %ld instructions: from 1 to 100000", count);
        return NULL;
    }
    /* Decoding backwards is guesswork on x86: start far enough before
     * ADDR, at the first start whose decoding lands on ADDR itself. */
    json_t *list = NULL;
    long at = -1;
    uint64_t before = offset < 0 ? (uint64_t)(-offset) * MAX_INSN : 0;
    if (before > addr)
        before = addr;
    uint64_t after = (uint64_t)(offset + count > 0 ? offset + count : 1) * MAX_INSN;
    for (uint64_t shift = 0; shift < MAX_INSN && before >= shift; shift++) {
        json_decref(list);
        tdb_error local = {0};
        list = disassemble_range(s, addr - before + shift, addr + after, &local);
        if (!list) {
            if (shift == 0 && before == 0) {
                tdb_error_set(err, local.code, "cannot disassemble at 0x%llx: %s",
                              (unsigned long long)addr, local.msg);
                return NULL;
            }
            continue;
        }
        if ((at = index_of(list, addr)) >= 0 || before == 0)
            break;
    }
    if (!list) {
        tdb_error_set(err, EIO, "cannot disassemble at 0x%llx", (unsigned long long)addr);
        return NULL;
    }
    if (at < 0)
        at = 0;
    /* COUNT entries from AT + OFFSET; what lies outside what was read is
     * null (the caller says "invalid"). */
    json_t *out = json_array();
    for (long i = at + offset; i < at + offset + count; i++) {
        json_t *e = i >= 0 && (size_t)i < json_array_size(list) ? json_array_get(list, (size_t)i)
                                                                : NULL;
        json_array_append(out, e ? e : json_null());
    }
    json_decref(list);
    return out;
}

json_t *tdb_session_disassemble_function(tdb_session *s, uint64_t addr, tdb_error *err)
{
    if (tdb_session_need_stop(s, err) < 0)
        return NULL;
    tdb_error local = {0};
    json_t *list = disassemble_range(s, addr, 0, &local);
    if (!list || index_of(list, addr) < 0 || json_array_size(list) > 20000) {
        /* No function gdb knows the bounds of (a stripped library's
         * static code): the instructions around ADDR. */
        json_decref(list);
        json_t *w = tdb_session_disassemble(s, addr, -40, 100, err);
        if (!w)
            return NULL;
        list = json_array();
        size_t i;
        json_t *e;
        json_array_foreach(w, i, e)
            if (json_is_object(e))
                json_array_append(list, e);
        json_decref(w);
    }
    return list;
}

int tdb_session_read_memory(tdb_session *s, uint64_t addr, size_t len, tdb_buf *out,
                            tdb_error *err)
{
    if (tdb_session_need_stop(s, err) < 0)
        return -1;
    json_t *res = NULL;
    if (len == 0)
        return 0;
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err, "-data-read-memory-bytes 0x%llx %zu",
                    (unsigned long long)addr, len) < 0)
        return -1;
    /* memory=[{begin, offset, end, contents}]: the readable blocks; the
     * bytes up to the first hole are the answer. */
    json_t *blocks = json_object_get(res, "memory");
    uint64_t next = addr;
    size_t i;
    json_t *b;
    json_array_foreach(blocks, i, b)
    {
        uint64_t begin = strtoull(tdb_mi_str(b, "begin") ?: "0", NULL, 0);
        const char *hex = tdb_mi_str(b, "contents") ?: "";
        if (begin != next)
            break;
        for (const char *p = hex; p[0] && p[1]; p += 2) {
            char byte[3] = {p[0], p[1], 0};
            char c = (char)strtoul(byte, NULL, 16);
            tdb_buf_add(out, &c, 1);
        }
        next = begin + strlen(hex) / 2;
    }
    json_decref(res);
    return 0;
}

int tdb_session_write_memory(tdb_session *s, uint64_t addr, const void *data, size_t len,
                             tdb_error *err)
{
    if (tdb_session_need_stop(s, err) < 0)
        return -1;
    if (len == 0)
        return 0;
    tdb_buf hex = TDB_BUF_INIT;
    for (size_t i = 0; i < len; i++)
        tdb_buf_addf(&hex, "%02x", ((const unsigned char *)data)[i]);
    int rc = tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, err, "-data-write-memory-bytes 0x%llx %s",
                         (unsigned long long)addr, tdb_buf_str(&hex));
    tdb_buf_free(&hex);
    if (rc == 0)
        tdb_session_drop_stop_readers(s); /* what was read of memory is stale */
    return rc;
}

json_t *tdb_session_libraries(tdb_session *s, int debug_files)
{
    json_t *out = json_array();
    tdb_elf_options eo = {.skip_units = 1};
    for (size_t i = 0; i < s->n_libs; i++) {
        const lib_info *l = &s->libs[i];
        json_t *o = json_pack("{s:s, s:b}", "path", l->path, "symbols", l->symbols);
        if (l->hi > l->lo) {
            char lo[32], hi[32];
            snprintf(lo, sizeof(lo), "0x%lx", l->lo);
            snprintf(hi, sizeof(hi), "0x%lx", l->hi);
            json_object_set_new(o, "text_start", json_string(lo));
            json_object_set_new(o, "text_end", json_string(hi));
        }
        tdb_elf_report *r = debug_files ? tdb_elf_inspect(l->path, &eo, NULL) : NULL;
        if (r) {
            /* Where its DWARF is: in the object, in a separate debug file,
             * or nowhere (symbols from its tables only). */
            json_object_set_new(o, "dwarf_in", r->dwarf_in ? json_string(r->dwarf_in) : json_null());
            if (r->debug_file)
                json_object_set_new(o, "debug_file", json_string(r->debug_file));
            json_object_set_new(o, "stripped", json_boolean(!r->has_symtab));
            tdb_elf_report_free(r);
        }
        json_array_append_new(out, o);
    }
    return out;
}

/* ---- sources ---- */

/* At most this many of each kind: a torch process has about 1,500 Python
 * modules; CPython's debug info alone names about 1,000 files. */
#define MAX_SOURCES 20000

json_t *tdb_session_loaded_sources(tdb_session *s, tdb_error *err)
{
    json_t *py = NULL, *native = json_array(), *r = NULL, *seen = json_object();
    if (tdb_session_need_stop(s, err) < 0)
        goto fail;
    tdb_session_make_stop_readers(s);
    if (s->py_state == 1 && tdb_py_module_files(s->py, MAX_SOURCES, &py, err) < 0)
        goto fail;
    if (!py)
        py = json_array();
    /* One entry a file: a module under two names (posixpath, os.path)
     * once, by its first. */
    size_t i;
    json_t *f;
    for (i = 0; i < json_array_size(py);) {
        const char *file = json_string_value(json_object_get(json_array_get(py, i), "file"));
        if (json_object_get(seen, file)) {
            json_array_remove(py, i);
            continue;
        }
        json_object_set_new(seen, file, json_true());
        i++;
    }
    /* What gdb read of the libraries' debug info: their source files that
     * are on this machine. */
    if (tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &r, err, "-file-list-exec-source-files") < 0)
        goto fail;
    json_array_foreach(json_object_get(r, "files"), i, f)
    {
        const char *full = tdb_mi_str(f, "fullname");
        if (!full || *full != '/' || json_object_get(seen, full) || access(full, R_OK) < 0)
            continue;
        json_object_set_new(seen, full, json_true());
        json_array_append_new(native, json_pack("{s:s}", "file", full));
        if (json_array_size(native) >= MAX_SOURCES)
            break;
    }
    json_decref(r);
    json_decref(seen);
    return json_pack("{s:o, s:o}", "python", py, "native", native);
fail:
    json_decref(py);
    json_decref(native);
    json_decref(seen);
    return NULL;
}

/* ---- watchpoints ---- */

static volatile long hw_probe_target;

int tdb_hw_watchpoints_fire(void)
{
    /* Some virtual machines (Firecracker's among them) accept debug
     * registers and never trap on them: gdb's hardware watchpoints are
     * then set and never trigger.  The kernel's own hardware breakpoint
     * on a variable of ours, written three times, tells: 3 hits, or 0.
     * When the probe cannot be made (perf events off), assume they work. */
    static int known = -1;
    if (known >= 0)
        return known;
    struct perf_event_attr a;
    memset(&a, 0, sizeof(a));
    a.type = PERF_TYPE_BREAKPOINT;
    a.size = sizeof(a);
    a.bp_type = HW_BREAKPOINT_W;
    a.bp_addr = (uint64_t)(uintptr_t)&hw_probe_target;
    a.bp_len = HW_BREAKPOINT_LEN_8;
    a.exclude_kernel = 1;
    a.exclude_hv = 1;
    int fd = (int)syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
    if (fd < 0)
        return known = 1;
    for (int i = 0; i < 3; i++)
        hw_probe_target = i;
    long long hits = 0;
    if (read(fd, &hits, sizeof(hits)) != (ssize_t)sizeof(hits))
        hits = 1;
    close(fd);
    return known = hits > 0;
}
