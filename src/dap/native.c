/*
 * dap/native.c: the requests about the machine under the program (see
 * dap/dap.h): disassemble, readMemory, writeMemory, modules, loadedSources,
 * and 'source' for the
 * listing of a native frame that has no source file (its function's
 * instructions, which VS Code opens and focuses as it does a file: a
 * frame without an available source is never focused, so a stop in
 * stripped torch code would show the Python line below it).
 */
#include "dap/internal.h"

#include <errno.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>

void tdb_dap_native_capabilities(json_t *caps)
{
    /* Machine code and memory: C/C++ frames, and a Python frame's
     * interpreter underneath. */
    json_object_set_new(caps, "supportsDisassembleRequest", json_true());
    json_object_set_new(caps, "supportsReadMemoryRequest", json_true());
    json_object_set_new(caps, "supportsWriteMemoryRequest", json_true());
    /* next and stepIn by one instruction (stepOut has no such thing) */
    json_object_set_new(caps, "supportsSteppingGranularity", json_true());
    json_object_set_new(caps, "supportsModulesRequest", json_true());
    /* Python's (sys.modules) and C/C++'s (the debug info gdb read) */
    json_object_set_new(caps, "supportsLoadedSourcesRequest", json_true());
    json_object_set_new(caps, "supportsInstructionBreakpoints", json_true());
    /* C/C++ lvalues only (gdb's watchpoints); a Python variable is refused
     * in dataBreakpointInfo's answer */
    json_object_set_new(caps, "supportsDataBreakpoints", json_true());
}

/* memoryReference (an address as gdb writes it) plus offset: 0, or -1
 * after failing the request. */
static int address_arg(tdb_dap *d, int seq, const char *cmd, const json_t *args,
                       uint64_t *out)
{
    const char *ref = json_string_value(json_object_get(args, "memoryReference"));
    json_t *off = json_object_get(args, "offset");
    char *end = NULL;
    errno = 0;
    unsigned long long a = ref ? strtoull(ref, &end, 0) : 0;
    if (!ref || end == ref || *end || errno) {
        tdb_dap_fail(d, seq, cmd, "'memoryReference' is an address such as 0x7ffff7a1b2c3 "
                                  "(an instructionPointerReference or a variable's)");
        return -1;
    }
    *out = (uint64_t)a + (uint64_t)(json_is_integer(off) ? json_integer_value(off) : 0);
    return 0;
}

static char *hex_address(uint64_t a)
{
    return tdb_xasprintf("0x%016llx", (unsigned long long)a);
}

/* One DAP DisassembledInstruction of the core's entry E (null: nothing
 * decoded at ADDR). */
static json_t *instruction(tdb_dap *d, const json_t *e, uint64_t addr)
{
    char *a = hex_address(addr);
    json_t *o = json_pack("{s:s}", "address", a);
    free(a);
    if (!json_is_object(e)) {
        json_object_set_new(o, "instruction", json_string("(invalid)"));
        json_object_set_new(o, "presentationHint", json_string("invalid"));
        return o;
    }
    const char *inst = json_string_value(json_object_get(e, "instruction"));
    const char *bytes = json_string_value(json_object_get(e, "bytes"));
    const char *fn = json_string_value(json_object_get(e, "function"));
    const char *off = json_string_value(json_object_get(e, "offset"));
    const char *file = json_string_value(json_object_get(e, "file"));
    json_object_set_new(o, "instruction", tdb_dap_string(inst ? inst : "", inst ? strlen(inst) : 0));
    if (bytes)
        json_object_set_new(o, "instructionBytes", json_string(bytes));
    if (fn) {
        char *sym = off ? tdb_xasprintf("%s+%s", fn, off) : tdb_xasprintf("%s", fn);
        json_object_set_new(o, "symbol", tdb_dap_string(sym, strlen(sym)));
        free(sym);
    }
    if (file && *file == '/' && json_is_integer(json_object_get(e, "line"))) {
        json_object_set_new(o, "location",
                            json_pack("{s:o, s:o}", "name",
                                      tdb_dap_string(tdb_base_name(file), strlen(tdb_base_name(file))),
                                      "path", tdb_dap_string(file, strlen(file))));
        json_object_set_new(o, "line", json_integer(json_integer_value(json_object_get(e, "line")) +
                                                    d->line_base));
    }
    return o;
}

void tdb_dap_disassemble(tdb_dap *d, int seq, const json_t *args)
{
    uint64_t addr;
    json_t *n = json_object_get(args, "instructionCount");
    json_t *io = json_object_get(args, "instructionOffset");
    if (address_arg(d, seq, "disassemble", args, &addr) < 0)
        return;
    if (!json_is_integer(n) || json_integer_value(n) < 1 || json_integer_value(n) > 100000) {
        tdb_dap_fail(d, seq, "disassemble", "'instructionCount' is a number from 1 to 100000");
        return;
    }
    long offset = json_is_integer(io) ? (long)json_integer_value(io) : 0;
    if (offset < -100000 || offset > 100000) {
        tdb_dap_fail(d, seq, "disassemble", "'instructionOffset' is within 100000 instructions");
        return;
    }
    tdb_error err = {0};
    json_t *list = tdb_session_disassemble(d->s, addr, offset, (long)json_integer_value(n), &err);
    if (!list) {
        tdb_dap_fail(d, seq, "disassemble", "%s", err.msg);
        return;
    }
    /* Entries nothing was decoded for still get increasing addresses
     * (the client lays the view out by address). */
    size_t count = json_array_size(list), first = count;
    for (size_t i = 0; i < count && first == count; i++)
        if (json_is_object(json_array_get(list, i)))
            first = i;
    uint64_t at = first < count
                      ? strtoull(json_string_value(json_object_get(json_array_get(list, first),
                                                                   "address")) ?: "0", NULL, 0) -
                            first
                      : addr;
    json_t *out = json_array();
    for (size_t i = 0; i < count; i++) {
        const json_t *e = json_array_get(list, i);
        if (json_is_object(e))
            at = strtoull(json_string_value(json_object_get(e, "address")) ?: "0", NULL, 0);
        json_array_append_new(out, instruction(d, e, at));
        at++;
    }
    json_decref(list);
    tdb_dap_ok(d, seq, "disassemble", json_pack("{s:o}", "instructions", out));
}

void tdb_dap_read_memory(tdb_dap *d, int seq, const json_t *args)
{
    uint64_t addr;
    json_t *n = json_object_get(args, "count");
    if (address_arg(d, seq, "readMemory", args, &addr) < 0)
        return;
    if (!json_is_integer(n) || json_integer_value(n) < 0 || json_integer_value(n) > (1 << 24)) {
        tdb_dap_fail(d, seq, "readMemory", "'count' is a number of bytes up to 16 MiB");
        return;
    }
    tdb_buf b = TDB_BUF_INIT;
    tdb_error err = {0};
    size_t want = (size_t)json_integer_value(n);
    if (tdb_session_read_memory(d->s, addr, want, &b, &err) < 0) {
        tdb_buf_free(&b);
        tdb_dap_fail(d, seq, "readMemory", "%s", err.msg);
        return;
    }
    char *a = hex_address(addr);
    json_t *body = json_pack("{s:s, s:o}", "address", a, "data", tdb_dap_base64(b.s, b.len));
    if (b.len < want)
        json_object_set_new(body, "unreadableBytes", json_integer((json_int_t)(want - b.len)));
    free(a);
    tdb_buf_free(&b);
    tdb_dap_ok(d, seq, "readMemory", body);
}

void tdb_dap_write_memory(tdb_dap *d, int seq, const json_t *args)
{
    uint64_t addr;
    const char *data = json_string_value(json_object_get(args, "data"));
    if (address_arg(d, seq, "writeMemory", args, &addr) < 0)
        return;
    tdb_buf b = TDB_BUF_INIT;
    tdb_error err = {0};
    if (!data || tdb_dap_base64_decode(data, &b) < 0) {
        tdb_dap_fail(d, seq, "writeMemory", "'data' is the bytes to write, in base64");
    } else if (tdb_session_write_memory(d->s, addr, b.s, b.len, &err) < 0) {
        tdb_dap_fail(d, seq, "writeMemory", "%s", err.msg);
    } else {
        tdb_values_reset(d->vals); /* values shown before may have changed */
        tdb_dap_ok(d, seq, "writeMemory", json_pack("{s:i}", "bytesWritten", (int)b.len));
        tdb_dap_send(d, tdb_dap_event("invalidated", json_pack("{s:[s]}", "areas", "variables")));
    }
    tdb_buf_free(&b);
}

/* ---- listings of frames without a source file ---- */

/* The listing of the function around ADDR, made once a session (code does
 * not move): {"ref": N, "text": ..., "lines": {address: line}} borrowed
 * from d->listings, or NULL. */
static json_t *listing(tdb_dap *d, uint64_t addr)
{
    char key[32];
    snprintf(key, sizeof(key), "0x%llx", (unsigned long long)addr);
    json_t *known = json_object_get(d->listing_of, key);
    if (known)
        return json_array_get(d->listings, (size_t)json_integer_value(known) - 1);
    tdb_error err = {0};
    json_t *insns = tdb_session_disassemble_function(d->s, addr, &err);
    if (!insns || !json_array_size(insns)) {
        json_decref(insns);
        return NULL;
    }
    tdb_buf text = TDB_BUF_INIT;
    json_t *lines = json_object();
    const char *fn = json_string_value(json_object_get(json_array_get(insns, 0), "function"));
    tdb_buf_addf(&text, "; %s: machine code (no source file)\n", fn ? fn : "??");
    size_t i;
    json_t *e;
    int line = 1;
    json_array_foreach(insns, i, e)
    {
        const char *a = json_string_value(json_object_get(e, "address"));
        const char *off = json_string_value(json_object_get(e, "offset"));
        const char *inst = json_string_value(json_object_get(e, "instruction"));
        const char *bytes = json_string_value(json_object_get(e, "bytes"));
        if (!a)
            continue;
        line++;
        tdb_buf_addf(&text, "%-18s <+%s>  %-24s %s\n", a, off ? off : "?", bytes ? bytes : "",
                     inst ? inst : "");
        char k[32];
        snprintf(k, sizeof(k), "0x%llx", strtoull(a, NULL, 0));
        json_object_set_new(lines, k, json_integer(line));
        json_object_set_new(d->listing_of, k, json_integer((json_int_t)json_array_size(d->listings) + 1));
    }
    json_decref(insns);
    json_t *l = json_pack("{s:I, s:o, s:o}", "ref", (json_int_t)json_array_size(d->listings) + 1,
                          "text", tdb_dap_string(text.s ? text.s : "", text.len), "lines", lines);
    tdb_buf_free(&text);
    json_array_append_new(d->listings, l);
    if (!json_object_get(d->listing_of, key))
        return NULL; /* ADDR is not an instruction of what was decoded */
    return l;
}

json_t *tdb_dap_listing_source(tdb_dap *d, const char *address, const char *name, int *out_line)
{
    uint64_t addr = address ? strtoull(address, NULL, 0) : 0;
    if (!addr)
        return NULL;
    json_t *l = listing(d, addr);
    if (!l)
        return NULL;
    char key[32];
    snprintf(key, sizeof(key), "0x%llx", (unsigned long long)addr);
    *out_line = (int)json_integer_value(json_object_get(json_object_get(l, "lines"), key));
    char *label = tdb_xasprintf("%s [machine code]", name ? name : address);
    json_t *src = json_pack("{s:o, s:O, s:s}", "name", tdb_dap_string(label, strlen(label)),
                            "sourceReference", json_object_get(l, "ref"), "origin",
                            "disassembled by gdb: no source file");
    free(label);
    return src;
}

void tdb_dap_source(tdb_dap *d, int seq, const json_t *args)
{
    json_t *ref = json_object_get(args, "sourceReference");
    json_t *src = json_object_get(json_object_get(args, "source"), "sourceReference");
    json_int_t n = json_is_integer(src) && json_integer_value(src) > 0 ? json_integer_value(src)
                                                                     : json_integer_value(ref);
    json_t *l = n > 0 ? json_array_get(d->listings, (size_t)n - 1) : NULL;
    if (!l) {
        tdb_dap_fail(d, seq, "source", "no source %lld: tdebug serves only the machine code "
                                       "listings of frames it sent", (long long)n);
        return;
    }
    tdb_dap_ok(d, seq, "source", json_pack("{s:O, s:s}", "content", json_object_get(l, "text"),
                                           "mimeType", "text/x-asm"));
}

/* ---- modules ---- */

/* A library of the core's list as a DAP Module. */
static json_t *module(const json_t *l)
{
    const char *path = json_string_value(json_object_get(l, "path"));
    const char *dwarf = json_string_value(json_object_get(l, "dwarf_in"));
    const char *dfile = json_string_value(json_object_get(l, "debug_file"));
    const char *lo = json_string_value(json_object_get(l, "text_start"));
    const char *hi = json_string_value(json_object_get(l, "text_end"));
    int read = json_is_true(json_object_get(l, "symbols"));
    json_t *o = json_pack("{s:o, s:o, s:o}", "id", tdb_dap_string(path, strlen(path)), "name",
                          tdb_dap_string(tdb_base_name(path), strlen(tdb_base_name(path))), "path",
                          tdb_dap_string(path, strlen(path)));
    /* Whether gdb read its symbols (tdebug reads only what a stop or a
     * breakpoint needs), and what there is to read. */
    char *status = tdb_xasprintf("%s; %s", read ? "symbols read" : "symbols not read",
                                 !dwarf ? (json_is_true(json_object_get(l, "stripped"))
                                               ? "no debug info (stripped: exported names only)"
                                               : "no debug info (symbol table only)")
                                 : !strcmp(dwarf, "object") ? "debug info in the library"
                                                            : "debug info in a separate file");
    json_object_set_new(o, "symbolStatus", json_string(status));
    free(status);
    if (dfile || (dwarf && !strcmp(dwarf, "object")))
        json_object_set_new(o, "symbolFilePath", tdb_dap_string(dfile ? dfile : path,
                                                                strlen(dfile ? dfile : path)));
    if (lo && hi) {
        char *range = tdb_xasprintf("%s-%s", lo, hi);
        json_object_set_new(o, "addressRange", json_string(range));
        free(range);
    }
    return o;
}

void tdb_dap_modules(tdb_dap *d, int seq, const json_t *args)
{
    json_int_t start = json_integer_value(json_object_get(args, "startModule"));
    json_int_t count = json_integer_value(json_object_get(args, "moduleCount"));
    /* Reading where each library's debug info is costs milliseconds a
     * library: once for each library of the session. */
    json_t *now = tdb_session_libraries(d->s, 0);
    size_t i;
    json_t *l, *all = json_array();
    json_array_foreach(now, i, l)
    {
        const char *path = json_string_value(json_object_get(l, "path"));
        json_t *m = json_object_get(d->modules, path);
        if (!m || json_is_true(json_object_get(l, "symbols")) !=
                      json_is_true(json_object_get(m, "symbols"))) {
            json_t *fresh = tdb_session_libraries(d->s, 1); /* the new ones, all at once */
            size_t j;
            json_t *f;
            json_array_foreach(fresh, j, f)
                json_object_set(d->modules, json_string_value(json_object_get(f, "path")), f);
            json_decref(fresh);
            m = json_object_get(d->modules, path);
        }
        json_array_append_new(all, module(m ? m : l));
    }
    json_decref(now);
    json_t *page = json_array();
    size_t n = json_array_size(all);
    for (size_t k = start > 0 ? (size_t)start : 0; k < n && (count <= 0 || json_array_size(page) <
                                                                              (size_t)count); k++)
        json_array_append(page, json_array_get(all, k));
    json_decref(all);
    tdb_dap_ok(d, seq, "modules", json_pack("{s:o, s:i}", "modules", page, "totalModules", (int)n));
}

/* The program's source files as DAP Source objects (a new array), or NULL
 * with ERR.  The program is stopped. */
static json_t *sources(tdb_dap *d, tdb_error *err)
{
    json_t *all = tdb_session_loaded_sources(d->s, err);
    if (!all)
        return NULL;
    json_t *out = json_array();
    size_t i;
    json_t *f;
    json_array_foreach(json_object_get(all, "python"), i, f)
    {
        const char *file = json_string_value(json_object_get(f, "file"));
        const char *name = json_string_value(json_object_get(f, "name"));
        char *origin = tdb_xasprintf("Python module %s", name);
        json_array_append_new(out, json_pack("{s:o, s:o, s:o}", "name",
                                             tdb_dap_string(tdb_base_name(file),
                                                            strlen(tdb_base_name(file))),
                                             "path", tdb_dap_string(file, strlen(file)), "origin",
                                             tdb_dap_string(origin, strlen(origin))));
        free(origin);
    }
    json_array_foreach(json_object_get(all, "native"), i, f)
    {
        const char *file = json_string_value(json_object_get(f, "file"));
        json_array_append_new(out, json_pack("{s:o, s:o, s:s}", "name",
                                             tdb_dap_string(tdb_base_name(file),
                                                            strlen(tdb_base_name(file))),
                                             "path", tdb_dap_string(file, strlen(file)), "origin",
                                             "C/C++ debug info"));
    }
    json_decref(all);
    return out;
}

/* Note each of SOURCES as told; with EVENTS, send 'loadedSource' for
 * those that were not. */
static void tell_sources(tdb_dap *d, const json_t *list, int events)
{
    size_t i;
    json_t *src;
    json_array_foreach(list, i, src)
    {
        const char *path = json_string_value(json_object_get(src, "path"));
        if (!path || json_object_get(d->sources_told, path))
            continue;
        json_object_set_new(d->sources_told, path, json_true());
        if (events)
            tdb_dap_send(d, tdb_dap_event("loadedSource", json_pack("{s:s, s:O}", "reason", "new",
                                                                    "source", src)));
    }
}

void tdb_dap_tell_new_sources(tdb_dap *d)
{
    if (!d->sources_told)
        return;
    json_t *now = sources(d, NULL); /* a stop that cannot read them tells nothing */
    if (now)
        tell_sources(d, now, 1);
    json_decref(now);
}

void tdb_dap_loaded_sources(tdb_dap *d, int seq, const json_t *args)
{
    (void)args;
    int held = 0;
    if (tdb_dap_hold(d, &held) < 0) {
        tdb_dap_fail(d, seq, "loadedSources", "the program ended");
        return;
    }
    tdb_error err = {0};
    json_t *out = sources(d, &err);
    tdb_dap_release(d, held);
    if (!out) {
        tdb_dap_fail(d, seq, "loadedSources", "%s", err.msg);
        return;
    }
    if (!d->sources_told)
        d->sources_told = json_object();
    tell_sources(d, out, 0);
    tdb_dap_ok(d, seq, "loadedSources", json_pack("{s:o}", "sources", out));
}
