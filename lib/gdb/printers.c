/*
 * lib/gdb/printers.c: libtdebug-printers.so, tdebug's tensor decoder for
 * gdb's own pretty-printers (lib/gdb/tdebug_printers.py loads it with
 * ctypes).  gdb's 'print', 'info locals', 'finish' and its MI variables
 * then show torch's values as tdebug's commands do, by the same code
 * (src/torch/tensor.c), reading memory through gdb (a callback), never
 * calling into the process.
 *
 * Built from tdebug's reader sources compiled -fPIC; it exports only the
 * two functions below (-fvisibility=hidden).
 */
#include "base/common.h"
#include "torch/tensor.h"

#include <jansson.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#define EXPORT __attribute__((visibility("default")))

EXPORT char *tdebug_printer_decode(const char *layout_json, const char *what, uint64_t addr,
                                   int max_values, tdb_mem_reader read, void *ctx);
EXPORT void tdebug_printer_free(char *text);

/* Decode the value WHAT ("tensor": an at::Tensor or at::TensorBase object,
 * or the intrusive_ptr it holds; "impl": a c10::TensorImpl; "scalar": a
 * c10::Scalar) at ADDR with LAYOUT_JSON (the "layout" of tdebug's cache
 * file, torch/layout.h), reading memory through READ(CTX, ...).  A JSON
 * text, to free with tdebug_printer_free():
 *   {"value": VALUE, "text": "float32 [2, 3] strides [3, 1] cpu values [...]",
 *    "repr": "tensor([[0., 1., 2.], [3., 4., 5.]])"}  (a tensor)
 *   {"value": 2.0, "text": "2"}                       (a scalar)
 *   {"error": "why"}                                  (refused) */
EXPORT char *tdebug_printer_decode(const char *layout_json, const char *what, uint64_t addr,
                                   int max_values, tdb_mem_reader read, void *ctx)
{
    tdb_tensor_layout l;
    tdb_error err = {0};
    tdb_mem mem;
    json_t *out = NULL, *v = NULL;
    json_error_t je;
    json_t *lj = json_loads(layout_json ? layout_json : "", 0, &je);

    tdb_mem_init_image(&mem, read, ctx);
    if (!lj || tdb_tensor_layout_from_json(lj, &l, &err) < 0) {
        out = json_pack("{s:s}", "error", lj ? err.msg : "no tensor layout (tdebug gives it to gdb "
                                                         "at a stop in a process with torch)");
        goto done;
    }
    if (!strcmp(what, "scalar")) {
        v = tdb_scalar_decode(&mem, &l, addr, &err);
        if (v) {
            char *text = json_dumps(v, JSON_ENCODE_ANY | JSON_REAL_PRECISION(10));
            out = json_pack("{s:O, s:s}", "value", v, "text", text);
            free(text);
        }
    } else {
        v = !strcmp(what, "impl") ? tdb_tensor_decode_impl(&mem, &l, addr, max_values, &err)
                                  : tdb_tensor_decode_tensor(&mem, &l, addr, max_values, &err);
        if (v && !json_is_false(json_object_get(v, "defined"))) {
            char *text = tdb_tensor_text(v), *repr = tdb_tensor_repr(v);
            out = json_pack("{s:O, s:s, s:s}", "value", v, "text", text, "repr", repr);
            free(text);
            free(repr);
        } else if (v) {
            out = json_pack("{s:O, s:s, s:s}", "value", v, "text", "undefined tensor", "repr",
                            "undefined tensor");
        }
    }
    if (!out)
        out = json_pack("{s:s}", "error", err.msg);
done:
    json_decref(v);
    json_decref(lj);
    tdb_mem_close(&mem);
    char *text = json_dumps(out, JSON_COMPACT);
    json_decref(out);
    return text;
}

EXPORT void tdebug_printer_free(char *text)
{
    free(text);
}
