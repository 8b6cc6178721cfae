/* torch/tensor_dwarf.c: tensors of a library built with debug info, their
 * layout asked of gdb, and the arguments gdb lists with such tensors
 * decoded (contracts in torch/tensor.h and torch/cxxargs.h). */
#include "torch/cxxargs.h"
#include "torch/tensor.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* --- with debug info ---------------------------------------------------- */

/* A tensor library described by its names.  Offsets and enumerator values
 * are asked of the debug info; only the names are written here. */
typedef struct dwarf_lib {
    const char *tensor, *storage, *pyobj;  /* struct names */
    const char *dim, *sizes, *strides, *offset, *dtype, *device, *storage_ptr, *data, *nbytes,
        *pyobj_field;
    const char *const *dtype_enums;   /* enumerator, dtype name, ... NULL */
    const char *const *device_enums;  /* enumerator, device name, ... NULL */
} dwarf_lib;

static const char *const tt_dtypes[] = {"TT_FLOAT64", "float64", "TT_INT64", "int64", NULL};
static const char *const tt_devices[] = {"TT_CPU", "cpu", "TT_META", "meta", NULL};
static const dwarf_lib dwarf_libs[] = {
    {"tt_tensor", "tt_storage", "tt_pytensor", "ndim", "shape", "strides", "offset", "dtype",
     "device", "storage", "data", "nbytes", "cdata", tt_dtypes, tt_devices},
};

/* Bytes of one element of a dtype, from its name ("float64": 8). */
static int itemsize_of(const char *name)
{
    if (!strcmp(name, "bool") || !strcmp(name, "int8") || !strcmp(name, "uint8"))
        return 1;
    const char *digits = name + strcspn(name, "0123456789");
    int bits = atoi(digits);
    return bits >= 8 ? bits / 8 : -1;
}

const char *tdb_tensor_dwarf_struct(const char *type)
{
    for (size_t i = 0; i < sizeof(dwarf_libs) / sizeof(dwarf_libs[0]); i++) {
        const char *name = dwarf_libs[i].tensor, *p = type;
        if (!strncmp(p, "const ", 6))
            p += 6;
        if (!strncmp(p, "struct ", 7))
            p += 7;
        size_t n = strlen(name);
        if (!strncmp(p, name, n)) {
            p += n;
            while (*p == ' ')
                p++;
            if (!strncmp(p, "const", 5))
                p += 5;
            while (*p == ' ')
                p++;
            if (!strcmp(p, "*"))
                return name;
        }
    }
    return NULL;
}

static int ask(tdb_eval_int_fn eval, void *ctx, int *out, tdb_error *err, const char *fmt, ...)
    __attribute__((format(printf, 5, 6)));
static int ask(tdb_eval_int_fn eval, void *ctx, int *out, tdb_error *err, const char *fmt, ...)
{
    char expr[256];
    va_list ap;
    int64_t v;
    va_start(ap, fmt);
    vsnprintf(expr, sizeof(expr), fmt, ap);
    va_end(ap);
    if (eval(ctx, expr, &v, err) < 0)
        return -1;
    if (v < -(1LL << 20) || v > (1LL << 20)) {
        tdb_error_set(err, EINVAL, "'%s' is %lld: no offset or size", expr, (long long)v);
        return -1;
    }
    *out = (int)v;
    return 0;
}

int tdb_tensor_layout_from_dwarf(tdb_eval_int_fn eval, void *ctx, const char *struct_name,
                                 tdb_tensor_layout *out, tdb_error *err)
{
    const dwarf_lib *d = NULL;
    tdb_tensor_layout l;
    int elem, total;
    for (size_t i = 0; i < sizeof(dwarf_libs) / sizeof(dwarf_libs[0]); i++)
        if (!strcmp(dwarf_libs[i].tensor, struct_name))
            d = &dwarf_libs[i];
    if (!d) {
        tdb_error_set(err, ENOENT, "tdebug knows no tensor struct named '%s'", struct_name);
        return -1;
    }
    tdb_tensor_layout_init(&l);
    snprintf(l.source, sizeof(l.source), "dwarf");
#define OFF(field, type, member) ask(eval, ctx, &l.field, err, "(long)&((%s *)0)->%s", type, member)
#define SIZE(field, type, member) ask(eval, ctx, &l.field, err, "(long)sizeof(((%s *)0)->%s)", type, member)
    if (OFF(dim_off, d->tensor, d->dim) < 0 || SIZE(dim_size, d->tensor, d->dim) < 0 ||
        OFF(sizes_off, d->tensor, d->sizes) < 0 || OFF(strides_off, d->tensor, d->strides) < 0 ||
        SIZE(inline_max, d->tensor, d->sizes) < 0 ||
        ask(eval, ctx, &elem, err, "(long)sizeof(((%s *)0)->%s[0])", d->tensor, d->sizes) < 0 ||
        OFF(offset_off, d->tensor, d->offset) < 0 || OFF(dtype_off, d->tensor, d->dtype) < 0 ||
        SIZE(dtype_size, d->tensor, d->dtype) < 0 || OFF(device_off, d->tensor, d->device) < 0 ||
        SIZE(device_size, d->tensor, d->device) < 0 ||
        OFF(storage_off, d->tensor, d->storage_ptr) < 0 ||
        OFF(storage_data_off, d->storage, d->data) < 0 ||
        OFF(storage_nbytes_off, d->storage, d->nbytes) < 0 ||
        ask(eval, ctx, &total, err, "(long)sizeof(((%s *)0)->%s)", d->tensor, d->offset) < 0)
        return -1;
    /* The Python object is optional: its library may not be loaded. */
    if (OFF(pyobj_impl_off, d->pyobj, d->pyobj_field) < 0)
        l.pyobj_impl_off = -1;
#undef OFF
#undef SIZE
    if (elem != 8 || total != 8 || l.inline_max % 8) {
        tdb_error_set(err, EINVAL, "'%s' does not keep 64-bit sizes and offsets as tdebug expects", struct_name);
        return -1;
    }
    l.inline_max /= 8;
    for (const char *const *e = d->dtype_enums; *e; e += 2) {
        int code;
        if (ask(eval, ctx, &code, err, "(long)%s", e[0]) < 0)
            return -1;
        tdb_tensor_dtype *t = &l.dtypes[l.n_dtypes++];
        t->code = code;
        snprintf(t->name, sizeof(t->name), "%s", e[1]);
        t->itemsize = itemsize_of(e[1]);
    }
    for (const char *const *e = d->device_enums; *e; e += 2) {
        int code;
        if (ask(eval, ctx, &code, err, "(long)%s", e[0]) < 0)
            return -1;
        tdb_tensor_device *t = &l.devices[l.n_devices++];
        t->code = code;
        snprintf(t->name, sizeof(t->name), "%s", e[1]);
    }
    *out = l;
    return 0;
}

/* --- the arguments gdb lists ------------------------------------------- */

/* The address gdb prints first in VALUE ("0x55d0 <sym>", "@0x7ffe: {...}"). */
static int gdb_address(const char *value, uint64_t *out)
{
    const char *p = value;
    if (*p == '@')
        p++;
    if (p[0] != '0' || p[1] != 'x')
        return -1;
    char *end;
    unsigned long long v = strtoull(p, &end, 16);
    if (end == p + 2)
        return -1;
    *out = v;
    return 0;
}

json_t *tdb_args_from_gdb(tdb_mem *m, const char *function, const json_t *frame_args,
                          tdb_eval_int_fn eval, void *ctx, const tdb_tensor_layout *torch_layout,
                          int max_values)
{
    json_t *out = json_object(), *args = json_array();
    tdb_tensor_layout dw;
    const char *dw_struct = NULL; /* the struct DW describes */
    tdb_buf notes = TDB_BUF_INIT;
    size_t i;
    json_t *a;

    json_object_set_new(out, "function", function ? tdb_json_bytes(function, strlen(function), 0, NULL) : json_null());
    json_object_set_new(out, "debug_info", json_true());
    json_array_foreach(frame_args, i, a) {
        const char *name = json_string_value(json_object_get(a, "name"));
        const char *type = json_string_value(json_object_get(a, "type"));
        const char *value = json_string_value(json_object_get(a, "value"));
        const char *st = type ? tdb_tensor_dwarf_struct(type) : NULL;
        json_t *v = NULL;
        uint64_t addr;
        tdb_error e = {0};
        if (st && value && gdb_address(value, &addr) == 0) {
            if (!dw_struct || strcmp(dw_struct, st) != 0) {
                dw_struct = tdb_tensor_layout_from_dwarf(eval, ctx, st, &dw, &e) == 0 ? st : NULL;
                if (!dw_struct)
                    tdb_buf_addf(&notes, "%s%s", notes.len ? "; " : "", e.msg);
            }
            if (dw_struct && !addr)
                v = json_null();
            else if (dw_struct)
                v = tdb_tensor_decode_impl(m, &dw, addr, max_values, &e);
            if (!v && dw_struct)
                tdb_buf_addf(&notes, "%s%s: %s", notes.len ? "; " : "", name ? name : "?", e.msg);
        } else if (type && value && torch_layout && value[0] == '@' && gdb_address(value, &addr) == 0) {
            char *u = tdb_cxx_unqualified(type);
            size_t n = strlen(u);
            while (n && (u[n - 1] == '&' || u[n - 1] == ' '))
                u[--n] = '\0';
            char *uu = tdb_cxx_unqualified(u);
            if (!strcmp(uu, "at::Tensor") || !strcmp(uu, "at::TensorBase"))
                v = tdb_tensor_decode_tensor(m, torch_layout, addr, max_values, &e);
            free(uu);
            free(u);
        }
        if (!v)
            v = value ? tdb_json_bytes(value, strlen(value), 0, NULL) : json_null();
        tdb_cxx_args_add(args, name ? name : "?", type ? type : "?", v);
    }
    if (notes.len)
        json_object_set_new(out, "note", tdb_json_bytes(notes.s, notes.len, 0, NULL));
    tdb_buf_free(&notes);
    json_object_set_new(out, "args", args);
    return out;
}
