/*
 * nativevals.c: a test driver for the native-value readers (native/cxxexc.h,
 * torch/cxxargs.h, torch/tensor.h, torch/layout.h) against real programs under real
 * gdb, before they are wired into tdebug's sessions.  It stands where the
 * session will: gdb over MI stops the program, the driver hands the
 * libraries the registers and the memory, and prints what they say.
 *
 *   nativevals [--catch-throw] [--break LOC]... [--stops N] [--finish]
 *              [--stepi N] [--args] [--tensor EXPR]... [--values N]
 *              [--output FILE] -- PROGRAM ARGS...
 *
 * At each stop it prints one line "NATIVEVALS {json}" on stdout:
 *   {"stop": N, "function": "...", "pc": "0x...",
 *    "exception": {...}         (a stop on __cxa_throw's first instruction)
 *    "args": {...}              (--args)
 *    "tensors": [{"expr", "kind", "value" | "error"}]   (--tensor EXPR)
 *    "layout": "calibration" | "cache" | "dwarf" | error}
 * then continues, and kills the program after N stops (default 1), or with
 * --finish lets it run to its end.  --stepi N first runs N instructions
 * at each stop (to read a frame past its entry).  Exit status 0 when the
 * program was stopped N times, 1 otherwise.  gdb's own stdout is the MI
 * pipe: the program's output goes to FILE (--output), else /dev/null.
 */
#include "torch/cxxargs.h"
#include "native/cxxexc.h"
#include "gdb/mi_session.h"
#include "process/procfs.h"
#include "torch/tensor.h"
#include "torch/layout.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define CMD_MS 60000

typedef struct driver {
    tdb_gdb *gdb;
    pid_t pid;
    json_t *reg_names;
    tdb_torch *torch;
    int torch_tried;
    int values;
} driver;

static int eval_int(void *ctx, const char *expr, int64_t *out, tdb_error *err)
{
    driver *d = ctx;
    return tdb_gdb_eval_int(d->gdb, CMD_MS, expr, out, err);
}

static const tdb_tensor_layout *torch_layout(driver *d, json_t *out)
{
    tdb_error err = {0};
    if (!d->torch_tried) {
        d->torch_tried = 1;
        if (tdb_torch_open(d->pid, NULL, &d->torch, &err) < 0)
            json_object_set_new(out, "layout", json_string(err.msg));
    }
    if (!d->torch)
        return NULL;
    const tdb_tensor_layout *l = tdb_torch_layout(d->torch, &err);
    double secs;
    int origin = tdb_torch_layout_origin(d->torch, &secs);
    json_object_set_new(out, "layout", json_string(!l ? err.msg : origin == 2 ? "calibration" : "cache"));
    if (origin == 2)
        json_object_set_new(out, "calibration_seconds", json_real(secs));
    return l;
}

static int read_regs(driver *d, tdb_regs *r, tdb_error *err)
{
    json_t *vals = NULL;
    if (!d->reg_names && tdb_gdb_cmd(d->gdb, CMD_MS, &d->reg_names, err, "-data-list-register-names") < 0)
        return -1;
    if (tdb_gdb_cmd(d->gdb, CMD_MS, &vals, err, "-data-list-register-values --skip-unavailable x") < 0)
        return -1;
    int rc = tdb_regs_from_mi(d->reg_names, vals, r, err);
    json_decref(vals);
    return rc;
}

static void on_stop(driver *d, int n, const json_t *frame, int want_args, char **tensors,
                    int n_tensors)
{
    json_t *out = json_object();
    tdb_mem mem;
    tdb_regs r;
    tdb_error err = {0};
    const char *func = tdb_mi_str(frame, "func");
    const char *addr = tdb_mi_str(frame, "addr");
    tdb_mem_init(&mem, d->pid);
    json_object_set_new(out, "stop", json_integer(n));
    json_object_set_new(out, "function", json_string(func ? func : "??"));
    json_object_set_new(out, "pc", json_string(addr ? addr : "?"));
    if (read_regs(d, &r, &err) < 0) {
        json_object_set_new(out, "error", json_string(err.msg));
        goto print;
    }
    uint64_t off;
    int pushed = 0, at_entry = 0;
    const char *why = "the pc's place in its function is unknown";
    if (tdb_gdb_symbol_offset(d->gdb, CMD_MS, r.rip, &off, NULL) == 0)
        at_entry = tdb_regs_at_entry(&mem, &r, r.rip - off, &pushed, &why, &err) == 1;

    if (func && !strncmp(func, "__cxa_throw", 11)) {
        json_t *e = at_entry ? tdb_cxx_exception(&mem, r.gpr[0], r.gpr[1], &err) : NULL;
        json_object_set_new(out, "exception", e ? e : json_string(at_entry ? err.msg : why));
    }
    if (want_args) {
        json_t *gargs = NULL;
        const char *file = tdb_mi_str(frame, "file");
        if (file && tdb_gdb_cmd(d->gdb, CMD_MS, &gargs, NULL,
                                "-stack-list-arguments --simple-values 0 0") == 0) {
            json_t *frames = json_object_get(gargs, "stack-args");
            json_t *f0 = json_array_get(frames, 0);
            json_object_set_new(out, "args",
                                tdb_args_from_gdb(&mem, func, json_object_get(f0, "args"), eval_int, d,
                                                  NULL, d->values));
        } else {
            const tdb_tensor_layout *l = torch_layout(d, out);
            tdb_error e2 = {0};
            json_t *a = func ? tdb_cxx_args(&mem, func, &r, at_entry, pushed, why, l, d->values, &e2) : NULL;
            json_object_set_new(out, "args", a ? a : json_string(e2.msg));
        }
        json_decref(gargs);
    }
    if (n_tensors) {
        json_t *arr = json_array();
        for (int i = 0; i < n_tensors; i++) {
            json_t *t = json_pack("{s:s}", "expr", tensors[i]);
            tdb_buf cmd = TDB_BUF_INIT;
            json_t *res = NULL;
            tdb_error e = {0};
            int64_t a;
            char *whatis;
            tdb_buf_adds(&cmd, "whatis ");
            tdb_buf_adds(&cmd, tensors[i]);
            whatis = tdb_gdb_console(d->gdb, CMD_MS, NULL, tdb_buf_str(&cmd));
            const char *st = NULL;
            if (whatis && !strncmp(whatis, "type = ", 7)) {
                whatis[strcspn(whatis, "\n")] = '\0';
                st = tdb_tensor_dwarf_struct(whatis + 7);
            }
            tdb_buf_reset(&cmd);
            tdb_buf_addf(&cmd, "(long)(%s)", tensors[i]);
            if (eval_int(d, tdb_buf_str(&cmd), &a, &e) < 0) {
                json_object_set_new(t, "error", json_string(e.msg));
            } else if (st) {
                tdb_tensor_layout dw;
                json_t *v = NULL;
                if (tdb_tensor_layout_from_dwarf(eval_int, d, st, &dw, &e) == 0)
                    v = tdb_tensor_decode_impl(&mem, &dw, (uint64_t)a, d->values, &e);
                json_object_set_new(t, "kind", json_string(st));
                json_object_set_new(t, "layout", json_string("dwarf"));
                json_object_set_new(t, v ? "value" : "error", v ? v : json_string(e.msg));
            } else {
                const tdb_tensor_layout *l = torch_layout(d, out);
                const char *kind = NULL;
                json_t *v = l ? tdb_tensor_decode_any(&mem, l, (uint64_t)a, d->values, &kind, &e) : NULL;
                if (kind)
                    json_object_set_new(t, "kind", json_string(kind));
                json_object_set_new(t, v ? "value" : "error", v ? v : json_string(l ? e.msg : "no torch layout"));
            }
            free(whatis);
            json_decref(res);
            tdb_buf_free(&cmd);
            json_array_append_new(arr, t);
        }
        json_object_set_new(out, "tensors", arr);
    }
print:
    {
        char *s = json_dumps(out, JSON_COMPACT);
        printf("NATIVEVALS %s\n", s);
        fflush(stdout);
        free(s);
    }
    json_decref(out);
    tdb_mem_close(&mem);
}

int main(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"catch-throw", no_argument, NULL, 'c'}, {"break", required_argument, NULL, 'b'},
        {"stops", required_argument, NULL, 'n'}, {"args", no_argument, NULL, 'a'},
        {"tensor", required_argument, NULL, 't'}, {"values", required_argument, NULL, 'v'},
        {"finish", no_argument, NULL, 'f'}, {"stepi", required_argument, NULL, 's'},
        {"output", required_argument, NULL, 'o'},
        {NULL, 0, NULL, 0}};
    char *breaks[32], *tensors[32];
    int n_breaks = 0, n_tensors = 0, want_args = 0, finish = 0, c;
    long stepi = 0;
    const char *output = "/dev/null";
    long stops = 1;
    driver d = {0};
    tdb_error err = {0};
    d.values = -1;

    while ((c = getopt_long(argc, argv, "+cb:n:at:v:fs:o:", longopts, NULL)) != -1) {
        switch (c) {
        case 'c': breaks[n_breaks++] = "__cxa_throw"; break;
        case 'b': breaks[n_breaks++] = optarg; break;
        case 'n': stops = strtol(optarg, NULL, 10); break;
        case 'a': want_args = 1; break;
        case 't': tensors[n_tensors++] = optarg; break;
        case 'v': d.values = (int)strtol(optarg, NULL, 10); break;
        case 'f': finish = 1; break;
        case 's': stepi = strtol(optarg, NULL, 10); break;
        case 'o': output = optarg; break;
        default: return 2;
        }
        if (n_breaks == 32 || n_tensors == 32)
            return 2;
    }
    if (optind >= argc) {
        fprintf(stderr, "usage: nativevals [options] -- PROGRAM ARGS...\n");
        return 2;
    }
    tdb_gdb_options opts = {NULL, -1, NULL, 0, 1, NULL};
    d.gdb = tdb_gdb_start(&opts, &err);
    if (!d.gdb) {
        fprintf(stderr, "nativevals: %s\n", err.msg);
        return 1;
    }
    tdb_buf cmd = TDB_BUF_INIT;
    tdb_buf_adds(&cmd, "-file-exec-and-symbols ");
    tdb_mi_quote(&cmd, argv[optind]);
    free(tdb_gdb_console(d.gdb, CMD_MS, NULL, "set debuginfod enabled off"));
    if (tdb_gdb_cmd(d.gdb, CMD_MS, NULL, &err, "-gdb-set breakpoint pending on") < 0 ||
        tdb_gdb_cmd(d.gdb, CMD_MS, NULL, &err, "%s", tdb_buf_str(&cmd)) < 0)
        goto fail;
    tdb_buf_reset(&cmd);
    tdb_buf_adds(&cmd, "-exec-arguments");
    for (int i = optind + 1; i < argc; i++) {
        /* gdb starts the program through the shell: quote for it */
        tdb_buf_addc(&cmd, ' ');
        tdb_shell_quote(&cmd, argv[i]);
    }
    tdb_buf_adds(&cmd, " >");
    tdb_shell_quote(&cmd, output);
    tdb_buf_adds(&cmd, " 2>&1");
    if (tdb_gdb_cmd(d.gdb, CMD_MS, NULL, &err, "%s", tdb_buf_str(&cmd)) < 0)
        goto fail;
    for (int i = 0; i < n_breaks; i++) {
        tdb_buf_reset(&cmd);
        tdb_buf_adds(&cmd, "-break-insert -f ");
        tdb_mi_quote(&cmd, breaks[i]);
        if (tdb_gdb_cmd(d.gdb, CMD_MS, NULL, &err, "%s", tdb_buf_str(&cmd)) < 0)
            goto fail;
    }
    tdb_buf_free(&cmd);
    if (tdb_gdb_cmd(d.gdb, CMD_MS, NULL, &err, "-exec-run") < 0)
        goto fail;
    int seen = 0, exited = 0;
    while (seen < stops || (finish && !exited)) {
        tdb_mi_record *r = tdb_gdb_next_event(d.gdb, 300000, &err);
        if (!r) {
            if (!err.set)
                tdb_error_set(&err, 0, "no stop within 300 s");
            goto fail;
        }
        if (r->kind == TDB_MI_NOTIFY && r->klass && !strcmp(r->klass, "thread-group-started"))
            d.pid = (pid_t)strtol(tdb_mi_str(r->results, "pid") ? tdb_mi_str(r->results, "pid") : "0", NULL, 10);
        if (r->kind == TDB_MI_EXEC && !strcmp(r->klass, "stopped")) {
            const char *reason = tdb_mi_str(r->results, "reason");
            if (reason && !strncmp(reason, "exited", 6)) {
                exited = 1;
                tdb_mi_record_free(r);
                break;
            }
            if (reason && (!strcmp(reason, "breakpoint-hit") || !strcmp(reason, "end-stepping-range"))) {
                if (stepi > 0 && !strcmp(reason, "breakpoint-hit")) {
                    /* run N instructions first: the next stop is reported */
                    if (tdb_gdb_cmd(d.gdb, CMD_MS, NULL, &err, "-exec-step-instruction %ld", stepi) < 0) {
                        tdb_mi_record_free(r);
                        goto fail;
                    }
                    tdb_mi_record_free(r);
                    continue;
                }
                on_stop(&d, ++seen, json_object_get(r->results, "frame"), want_args, tensors, n_tensors);
                if (seen == stops && finish) /* to its end, with no more stops */
                    free(tdb_gdb_console(d.gdb, CMD_MS, NULL, "delete"));
                if ((seen < stops || finish) && tdb_gdb_cmd(d.gdb, CMD_MS, NULL, &err, "-exec-continue") < 0) {
                    tdb_mi_record_free(r);
                    goto fail;
                }
            } else if (tdb_gdb_cmd(d.gdb, CMD_MS, NULL, &err, "-exec-continue") < 0) {
                tdb_mi_record_free(r);
                goto fail;
            }
        }
        tdb_mi_record_free(r);
    }
    free(tdb_gdb_console(d.gdb, CMD_MS, NULL, "kill"));
    tdb_gdb_close(d.gdb, 5000);
    json_decref(d.reg_names);
    tdb_torch_free(d.torch);
    return seen == stops ? 0 : 1;
fail:
    fprintf(stderr, "nativevals: %s\n", err.msg);
    free(tdb_gdb_console(d.gdb, CMD_MS, NULL, "kill"));
    tdb_gdb_close(d.gdb, 5000);
    json_decref(d.reg_names);
    tdb_torch_free(d.torch);
    tdb_buf_free(&cmd);
    return 1;
}
