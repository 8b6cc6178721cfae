/* torch/tensor.c: tensors, scalars and optional scalars decoded from memory with
 * a tdb_tensor_layout (see torch/tensor.h). */
#include "torch/tensor.h"

#include "native/cxxabi.h"

#include <errno.h>
#include <math.h>
#include <stddef.h>
#include <stdlib.h>
#include <string.h>

/* Sizes and strides beyond this are no real tensor's (2^48 elements). */
#define DIM_LIMIT (1LL << 48)

/* --- the layout as data ------------------------------------------------- */

static const struct {
    const char *name;
    size_t off;
} int_fields[] = {
#define F(x) {#x, offsetof(tdb_tensor_layout, x)}
    F(dim_off), F(dim_size), F(sizes_off), F(strides_off), F(inline_max),
    F(ool_strides_at_dim), F(offset_off), F(numel_off), F(dtype_off), F(dtype_size),
    F(device_off), F(device_size), F(device_index_off), F(storage_off),
    F(storage_data_off), F(storage_nbytes_off), F(autograd_off),
    F(autograd_requires_grad_off), F(autograd_grad_fn_off), F(pyobj_impl_off),
    F(scalar_tag_off), F(scalar_value_off), F(scalar_size), F(opt_scalar_flag_off),
    F(opt_scalar_value_off),
#undef F
};
#define N_INT_FIELDS (sizeof(int_fields) / sizeof(int_fields[0]))

static const char *const scalar_kind_names[TDB_SCALAR_KINDS] = {"double", "int", "complex", "bool"};

static int *field(tdb_tensor_layout *l, size_t i)
{
    return (int *)((char *)l + int_fields[i].off);
}

void tdb_tensor_layout_init(tdb_tensor_layout *l)
{
    memset(l, 0, sizeof(*l));
    for (size_t i = 0; i < N_INT_FIELDS; i++)
        *field(l, i) = -1;
    for (int k = 0; k < TDB_SCALAR_KINDS; k++)
        l->scalar_tags[k] = -1;
}

json_t *tdb_tensor_layout_to_json(const tdb_tensor_layout *l)
{
    json_t *j = json_object(), *d = json_array(), *v = json_array(), *tags = json_object();
    json_object_set_new(j, "source", json_string(l->source));
    json_object_set_new(j, "impl_class", json_string(l->impl_class));
    json_object_set_new(j, "undefined_class", json_string(l->undefined_class));
    for (size_t i = 0; i < N_INT_FIELDS; i++)
        json_object_set_new(j, int_fields[i].name, json_integer(*field((tdb_tensor_layout *)l, i)));
    for (int i = 0; i < l->n_dtypes; i++)
        json_array_append_new(d, json_pack("{s:i,s:s,s:i}", "code", l->dtypes[i].code, "name",
                                           l->dtypes[i].name, "itemsize", l->dtypes[i].itemsize));
    for (int i = 0; i < l->n_devices; i++)
        json_array_append_new(v, json_pack("{s:i,s:s}", "code", l->devices[i].code, "name",
                                           l->devices[i].name));
    for (int k = 0; k < TDB_SCALAR_KINDS; k++)
        json_object_set_new(tags, scalar_kind_names[k], json_integer(l->scalar_tags[k]));
    json_object_set_new(j, "dtypes", d);
    json_object_set_new(j, "devices", v);
    json_object_set_new(j, "scalar_tags", tags);
    return j;
}

static int copy_name(char *dst, size_t size, const json_t *s)
{
    const char *v = json_string_value(s);
    if (!v || strlen(v) >= size)
        return -1;
    strcpy(dst, v);
    return 0;
}

int tdb_tensor_layout_from_json(const json_t *j, tdb_tensor_layout *out, tdb_error *err)
{
    tdb_tensor_layout l;
    const json_t *d = json_object_get(j, "dtypes"), *v = json_object_get(j, "devices");
    const json_t *tags = json_object_get(j, "scalar_tags");
    const char *bad = NULL;

    tdb_tensor_layout_init(&l);
    if (!json_is_object(j))
        bad = "not an object";
    else if (copy_name(l.source, sizeof(l.source), json_object_get(j, "source")) < 0)
        bad = "source";
    else if (copy_name(l.impl_class, sizeof(l.impl_class), json_object_get(j, "impl_class")) < 0)
        bad = "impl_class";
    else if (copy_name(l.undefined_class, sizeof(l.undefined_class),
                       json_object_get(j, "undefined_class")) < 0)
        bad = "undefined_class";
    for (size_t i = 0; !bad && i < N_INT_FIELDS; i++) {
        const json_t *x = json_object_get(j, int_fields[i].name);
        if (!json_is_integer(x) || json_integer_value(x) < -1 || json_integer_value(x) > 1 << 20)
            bad = int_fields[i].name;
        else
            *field(&l, i) = (int)json_integer_value(x);
    }
    if (!bad && (!json_is_array(d) || json_array_size(d) > TDB_TENSOR_MAX_DTYPES))
        bad = "dtypes";
    if (!bad && (!json_is_array(v) || json_array_size(v) > TDB_TENSOR_MAX_DEVICES))
        bad = "devices";
    if (!bad && !json_is_object(tags))
        bad = "scalar_tags";
    for (size_t i = 0; !bad && i < json_array_size(d); i++) {
        const json_t *e = json_array_get(d, i);
        tdb_tensor_dtype *t = &l.dtypes[l.n_dtypes++];
        t->code = (int)json_integer_value(json_object_get(e, "code"));
        t->itemsize = (int)json_integer_value(json_object_get(e, "itemsize"));
        if (copy_name(t->name, sizeof(t->name), json_object_get(e, "name")) < 0 || t->itemsize <= 0 ||
            t->itemsize > 16)
            bad = "dtypes";
    }
    for (size_t i = 0; !bad && i < json_array_size(v); i++) {
        const json_t *e = json_array_get(v, i);
        tdb_tensor_device *t = &l.devices[l.n_devices++];
        t->code = (int)json_integer_value(json_object_get(e, "code"));
        if (copy_name(t->name, sizeof(t->name), json_object_get(e, "name")) < 0)
            bad = "devices";
    }
    for (int k = 0; !bad && k < TDB_SCALAR_KINDS; k++) {
        const json_t *x = json_object_get(tags, scalar_kind_names[k]);
        if (!json_is_integer(x))
            bad = "scalar_tags";
        else
            l.scalar_tags[k] = (int)json_integer_value(x);
    }
    if (bad) {
        tdb_error_set(err, EINVAL, "not a tensor layout: bad or missing '%s'", bad);
        return -1;
    }
    *out = l;
    return 0;
}

const tdb_tensor_dtype *tdb_tensor_dtype_of(const tdb_tensor_layout *l, int code)
{
    for (int i = 0; i < l->n_dtypes; i++)
        if (l->dtypes[i].code == code)
            return &l->dtypes[i];
    return NULL;
}

const tdb_tensor_dtype *tdb_tensor_dtype_named(const tdb_tensor_layout *l, const char *name)
{
    for (int i = 0; i < l->n_dtypes; i++)
        if (strcmp(l->dtypes[i].name, name) == 0)
            return &l->dtypes[i];
    return NULL;
}

const tdb_tensor_device *tdb_tensor_device_of(const tdb_tensor_layout *l, int code)
{
    for (int i = 0; i < l->n_devices; i++)
        if (l->devices[i].code == code)
            return &l->devices[i];
    return NULL;
}

/* --- reading ------------------------------------------------------------ */

static int read_at(tdb_mem *m, uint64_t addr, void *buf, size_t n, const char *what,
                   tdb_error *err)
{
    if (tdb_mem_read_full(m, addr, buf, n) < 0) {
        tdb_error_errno(err, "cannot read %s at 0x%llx", what, (unsigned long long)addr);
        return -1;
    }
    return 0;
}

/* A little-endian integer of SIZE (1, 2, 4, 8) bytes, sign-extended when
 * SIGNED_. */
static int read_int(tdb_mem *m, uint64_t addr, int size, int signed_, int64_t *out,
                    const char *what, tdb_error *err)
{
    unsigned char b[8];
    if (size < 1 || size > 8 || read_at(m, addr, b, (size_t)size, what, err) < 0)
        return -1;
    uint64_t v = 0;
    for (int i = size - 1; i >= 0; i--)
        v = v << 8 | b[i];
    if (signed_ && size < 8 && (v >> (8 * size - 1)) & 1)
        v |= ~0ULL << (8 * size);
    *out = (int64_t)v;
    return 0;
}

static float half_to_float(uint16_t h)
{
    int sign = h >> 15, exp = (h >> 10) & 0x1f, mant = h & 0x3ff;
    float v;
    if (exp == 0)
        v = ldexpf((float)mant, -24);
    else if (exp == 31)
        v = mant ? NAN : INFINITY;
    else
        v = ldexpf((float)(mant | 0x400), exp - 25);
    return sign ? -v : v;
}

static json_t *real_json(double d)
{
    if (isnan(d))
        return json_string("nan");
    if (isinf(d))
        return json_string(d > 0 ? "inf" : "-inf");
    return json_real(d);
}

/* One element of dtype NAME from its bytes B. */
static json_t *element_json(const char *name, const unsigned char *b)
{
    union {
        float f;
        double d;
        uint16_t u16;
        uint32_t u32;
        int8_t i8;
        int16_t i16;
        int32_t i32;
        int64_t i64;
        uint8_t u8;
    } u;
    if (!strcmp(name, "float32")) {
        memcpy(&u.f, b, 4);
        return real_json(u.f);
    }
    if (!strcmp(name, "float64")) {
        memcpy(&u.d, b, 8);
        return real_json(u.d);
    }
    if (!strcmp(name, "float16")) {
        memcpy(&u.u16, b, 2);
        return real_json(half_to_float(u.u16));
    }
    if (!strcmp(name, "bfloat16")) {
        uint16_t h;
        memcpy(&h, b, 2);
        u.u32 = (uint32_t)h << 16;
        float f;
        memcpy(&f, &u.u32, 4);
        return real_json(f);
    }
    if (!strcmp(name, "int8")) {
        memcpy(&u.i8, b, 1);
        return json_integer(u.i8);
    }
    if (!strcmp(name, "uint8")) {
        memcpy(&u.u8, b, 1);
        return json_integer(u.u8);
    }
    if (!strcmp(name, "int16")) {
        memcpy(&u.i16, b, 2);
        return json_integer(u.i16);
    }
    if (!strcmp(name, "int32")) {
        memcpy(&u.i32, b, 4);
        return json_integer(u.i32);
    }
    if (!strcmp(name, "int64")) {
        memcpy(&u.i64, b, 8);
        return json_integer(u.i64);
    }
    if (!strcmp(name, "bool")) {
        /* torch stores bools as bytes 0/1; anything else is shown as is */
        return b[0] <= 1 ? json_boolean(b[0]) : json_integer(b[0]);
    }
    if (!strcmp(name, "complex64")) {
        float re, im;
        memcpy(&re, b, 4);
        memcpy(&im, b + 4, 4);
        return json_pack("[oo]", real_json(re), real_json(im));
    }
    if (!strcmp(name, "complex128")) {
        double re, im;
        memcpy(&re, b, 8);
        memcpy(&im, b + 8, 8);
        return json_pack("[oo]", real_json(re), real_json(im));
    }
    if (!strcmp(name, "complex32")) {
        uint16_t re, im;
        memcpy(&re, b, 2);
        memcpy(&im, b + 2, 2);
        return json_pack("[oo]", real_json(half_to_float(re)), real_json(half_to_float(im)));
    }
    return NULL;
}

static json_t *int_array(const int64_t *v, int n)
{
    json_t *a = json_array();
    for (int i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

static void hex_field(json_t *o, const char *key, uint64_t v)
{
    char buf[32];
    snprintf(buf, sizeof(buf), "0x%llx", (unsigned long long)v);
    json_object_set_new(o, key, json_string(buf));
}

/* "[3, 5, 7]" into B, for messages. */
static void add_dims(tdb_buf *b, const int64_t *v, int n)
{
    tdb_buf_addc(b, '[');
    for (int i = 0; i < n; i++)
        tdb_buf_addf(b, "%s%lld", i ? ", " : "", (long long)v[i]);
    tdb_buf_addc(b, ']');
}

/* The requires_grad of the impl: its autograd metadata's flag, or a
 * grad_fn (a result of an operation on tensors that require grad). */
static int read_requires_grad(tdb_mem *m, const tdb_tensor_layout *l, uint64_t impl, int *out,
                              tdb_error *err)
{
    uint64_t meta, grad_fn = 0;
    unsigned char flag = 0;
    if (l->autograd_off < 0) {
        *out = 0; /* a library without autograd */
        return 0;
    }
    if (read_at(m, impl + (uint64_t)l->autograd_off, &meta, 8, "the autograd metadata pointer", err) < 0)
        return -1;
    if (meta == 0) {
        *out = 0;
        return 0;
    }
    if ((l->autograd_requires_grad_off >= 0 &&
         read_at(m, meta + (uint64_t)l->autograd_requires_grad_off, &flag, 1, "the autograd metadata",
                 err) < 0) ||
        (l->autograd_grad_fn_off >= 0 &&
         read_at(m, meta + (uint64_t)l->autograd_grad_fn_off, &grad_fn, 8, "the autograd metadata",
                 err) < 0))
        return -1;
    if (flag > 1) {
        tdb_error_set(err, EINVAL, "its autograd metadata at 0x%llx holds requires_grad %u",
                      (unsigned long long)meta, flag);
        return -1;
    }
    *out = flag || grad_fn;
    return 0;
}

/* The first MAX values, in index order, into VALUES. */
static int read_values(tdb_mem *m, uint64_t data, const tdb_tensor_dtype *dt, const int64_t *sizes,
                       const int64_t *strides, int dim, int64_t offset, int64_t numel, int max,
                       json_t *values, tdb_buf *note)
{
    int64_t idx[TDB_TENSOR_MAX_DIMS] = {0};
    int64_t n = numel < max ? numel : max;
    for (int64_t k = 0; k < n; k++) {
        int64_t lin = offset;
        for (int d = 0; d < dim; d++)
            lin += idx[d] * strides[d];
        uint64_t addr = data + (uint64_t)lin * (uint64_t)dt->itemsize;
        unsigned char b[16];
        if (tdb_mem_read_full(m, addr, b, (size_t)dt->itemsize) < 0) {
            tdb_buf_addf(note, "its data at 0x%llx is unreadable", (unsigned long long)addr);
            return -1;
        }
        json_t *e = element_json(dt->name, b);
        if (!e) {
            tdb_buf_addf(note, "tdebug cannot show values of dtype %s", dt->name);
            return -1;
        }
        json_array_append_new(values, e);
        for (int d = dim - 1; d >= 0; d--) { /* the next index, row-major */
            if (++idx[d] < sizes[d])
                break;
            idx[d] = 0;
        }
    }
    return 0;
}

static void refuse(tdb_error *err, uint64_t impl, const char *fmt, ...)
    __attribute__((format(printf, 3, 4)));
static void refuse(tdb_error *err, uint64_t impl, const char *fmt, ...)
{
    char why[768];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(why, sizeof(why), fmt, ap);
    va_end(ap);
    tdb_error_set(err, EINVAL, "0x%llx is not a tensor: %s", (unsigned long long)impl, why);
}

json_t *tdb_tensor_decode_impl(tdb_mem *m, const tdb_tensor_layout *l, uint64_t impl,
                               int max_values, tdb_error *err)
{
    json_t *out = NULL, *values = NULL;
    char *type_name = NULL;
    int64_t dim, sizes[TDB_TENSOR_MAX_DIMS], strides[TDB_TENSOR_MAX_DIMS], offset, code, dev = 0;
    int64_t dev_index = -1, numel = 1, nbytes = -1;
    uint64_t arr, storage = 0, data = 0;
    int requires_grad;
    tdb_buf note = TDB_BUF_INIT;
    tdb_error local = {0};

    if (max_values < 0)
        max_values = TDB_TENSOR_VALUES_DEFAULT;
    if (l->dim_off < 0 || l->sizes_off < 0 || l->dtype_off < 0) {
        tdb_error_set(err, EINVAL, "the tensor layout is incomplete (no dimensions or dtype)");
        return NULL;
    }
    if (l->impl_class[0]) {
        /* C++: the object must be a TensorImpl by its own type information. */
        uint64_t type;
        tdb_rtti t;
        if (tdb_cxx_dynamic_type(m, impl, &type, &t, &local) < 0) {
            refuse(err, impl, "%s", local.msg);
            return NULL;
        }
        type_name = tdb_rtti_name(&t);
        if (l->undefined_class[0] && tdb_rtti_find_base(m, type, l->undefined_class, 0, NULL, NULL) == 1) {
            out = json_pack("{s:b}", "defined", 0);
            hex_field(out, "impl", impl);
            json_object_set_new(out, "impl_type", json_string(type_name));
            free(type_name);
            return out;
        }
        if (tdb_rtti_find_base(m, type, l->impl_class, impl, NULL, NULL) != 1) {
            refuse(err, impl, "it is a '%s'", type_name);
            free(type_name);
            return NULL;
        }
    }

    if (read_int(m, impl + (uint64_t)l->dim_off, l->dim_size, 1, &dim, "the number of dimensions", err) < 0)
        goto cleanup;
    if (dim < 0 || dim > TDB_TENSOR_MAX_DIMS) {
        refuse(err, impl, "it would have %lld dimensions", (long long)dim);
        goto cleanup;
    }
    arr = impl + (uint64_t)l->sizes_off;
    uint64_t sarr = impl + (uint64_t)l->strides_off;
    if (dim > l->inline_max) {
        if (l->ool_strides_at_dim < 0) {
            refuse(err, impl, "it has %lld dimensions, more than this layout knows how to find",
                   (long long)dim);
            goto cleanup;
        }
        if (read_at(m, arr, &arr, 8, "the out-of-line sizes pointer", err) < 0)
            goto cleanup;
        sarr = arr + 8 * (uint64_t)(l->ool_strides_at_dim ? dim : l->inline_max);
    }
    if ((dim && read_at(m, arr, sizes, 8 * (size_t)dim, "the sizes", err) < 0) ||
        (dim && read_at(m, sarr, strides, 8 * (size_t)dim, "the strides", err) < 0))
        goto cleanup;
    for (int d = 0; d < dim; d++) {
        if (sizes[d] < 0 || sizes[d] >= DIM_LIMIT || strides[d] <= -DIM_LIMIT || strides[d] >= DIM_LIMIT) {
            tdb_buf b = TDB_BUF_INIT;
            tdb_buf_adds(&b, "implausible sizes ");
            add_dims(&b, sizes, (int)dim);
            tdb_buf_adds(&b, " or strides ");
            add_dims(&b, strides, (int)dim);
            refuse(err, impl, "%s", tdb_buf_str(&b));
            tdb_buf_free(&b);
            goto cleanup;
        }
        if (numel >= 0 && sizes[d] && numel > DIM_LIMIT / sizes[d])
            numel = -1;
        else if (numel >= 0)
            numel *= sizes[d];
    }
    if (numel < 0) {
        refuse(err, impl, "the product of its sizes overflows");
        goto cleanup;
    }
    if (l->numel_off >= 0) {
        int64_t kept;
        if (read_int(m, impl + (uint64_t)l->numel_off, 8, 1, &kept, "numel", err) < 0)
            goto cleanup;
        if (kept != numel) {
            tdb_buf b = TDB_BUF_INIT;
            add_dims(&b, sizes, (int)dim);
            refuse(err, impl, "numel %lld is not the product of its sizes %s", (long long)kept,
                   tdb_buf_str(&b));
            tdb_buf_free(&b);
            goto cleanup;
        }
    }
    if (read_int(m, impl + (uint64_t)l->offset_off, 8, 1, &offset, "the storage offset", err) < 0)
        goto cleanup;
    if (offset < 0 || offset >= DIM_LIMIT) {
        refuse(err, impl, "storage offset %lld", (long long)offset);
        goto cleanup;
    }
    if (read_int(m, impl + (uint64_t)l->dtype_off, l->dtype_size, 0, &code, "the dtype", err) < 0)
        goto cleanup;
    const tdb_tensor_dtype *dt = tdb_tensor_dtype_of(l, (int)code);
    if (!dt) {
        refuse(err, impl, "dtype code %lld is none this torch build uses", (long long)code);
        goto cleanup;
    }
    const tdb_tensor_device *dv = NULL;
    if (l->device_off >= 0) {
        if (read_int(m, impl + (uint64_t)l->device_off, l->device_size, 1, &dev, "the device", err) < 0 ||
            (l->device_index_off >= 0 &&
             read_int(m, impl + (uint64_t)l->device_index_off, 1, 1, &dev_index, "the device", err) < 0))
            goto cleanup;
        dv = tdb_tensor_device_of(l, (int)dev);
    }
    if (read_requires_grad(m, l, impl, &requires_grad, &local) < 0) {
        refuse(err, impl, "%s", local.msg);
        goto cleanup;
    }

    out = json_object();
    json_object_set_new(out, "sizes", int_array(sizes, (int)dim));
    json_object_set_new(out, "strides", int_array(strides, (int)dim));
    json_object_set_new(out, "dtype", json_string(dt->name));
    if (dv && dev_index >= 0) {
        char name[40];
        snprintf(name, sizeof(name), "%s:%lld", dv->name, (long long)dev_index);
        json_object_set_new(out, "device", json_string(name));
    } else if (dv) {
        json_object_set_new(out, "device", json_string(dv->name));
    } else if (l->device_off >= 0) {
        char name[40];
        snprintf(name, sizeof(name), "unknown device type %lld", (long long)dev);
        json_object_set_new(out, "device", json_string(name));
    } else {
        json_object_set_new(out, "device", json_string("cpu"));
    }
    json_object_set_new(out, "storage_offset", json_integer(offset));
    json_object_set_new(out, "requires_grad", json_boolean(requires_grad));
    json_object_set_new(out, "numel", json_integer(numel));
    hex_field(out, "impl", impl);
    if (type_name)
        json_object_set_new(out, "impl_type", json_string(type_name));

    /* The values: only where the data is host memory this layout knows. */
    values = json_array();
    if (max_values == 0 || numel == 0) {
        /* nothing to show */
    } else if (l->device_off >= 0 && (!dv || strcmp(dv->name, "cpu") != 0)) {
        if (dv && !strcmp(dv->name, "meta"))
            tdb_buf_adds(&note, "a meta tensor has no data");
        else
            tdb_buf_addf(&note, "its data is on device %s, not in the process's memory",
                         json_string_value(json_object_get(out, "device")));
    } else if (l->storage_off < 0 || l->storage_data_off < 0) {
        tdb_buf_adds(&note, "the layout does not say where the data is");
    } else if (read_at(m, impl + (uint64_t)l->storage_off, &storage, 8, "the storage pointer", &local) < 0 ||
               read_at(m, storage + (uint64_t)l->storage_data_off, &data, 8, "the storage", &local) < 0 ||
               (l->storage_nbytes_off >= 0 &&
                read_at(m, storage + (uint64_t)l->storage_nbytes_off, &nbytes, 8, "the storage", &local) < 0)) {
        tdb_buf_adds(&note, local.msg);
    } else {
        /* The farthest element must lie inside the storage. */
        int64_t last = offset;
        for (int d = 0; d < dim; d++)
            last += (sizes[d] - 1) * (strides[d] > 0 ? strides[d] : 0);
        if (nbytes >= 0 && (last + 1) * dt->itemsize > nbytes) {
            tdb_buf b = TDB_BUF_INIT;
            add_dims(&b, sizes, (int)dim);
            tdb_buf_adds(&b, " strides ");
            add_dims(&b, strides, (int)dim);
            refuse(err, impl, "sizes %s and storage offset %lld reach past its storage of %lld bytes",
                   tdb_buf_str(&b), (long long)offset, (long long)nbytes);
            tdb_buf_free(&b);
            json_decref(out);
            out = NULL;
            goto cleanup;
        }
        if (!data)
            tdb_buf_adds(&note, "its storage has no data");
        else
            read_values(m, data, dt, sizes, strides, (int)dim, offset, numel, max_values, values, &note);
    }
    if (note.len) {
        json_object_set_new(out, "values", json_null());
        json_object_set_new(out, "values_note", json_string(tdb_buf_str(&note)));
    } else {
        json_object_set_new(out, "values", values);
        values = NULL;
    }
cleanup:
    json_decref(values);
    tdb_buf_free(&note);
    free(type_name);
    return out;
}

json_t *tdb_tensor_decode_tensor(tdb_mem *m, const tdb_tensor_layout *l, uint64_t addr,
                                 int max_values, tdb_error *err)
{
    uint64_t impl;
    if (read_at(m, addr, &impl, 8, "the at::Tensor", err) < 0)
        return NULL;
    return tdb_tensor_decode_impl(m, l, impl, max_values, err);
}

json_t *tdb_tensor_decode_pyobject(tdb_mem *m, const tdb_tensor_layout *l, uint64_t obj,
                                   int max_values, tdb_error *err)
{
    uint64_t impl;
    if (l->pyobj_impl_off < 0) {
        tdb_error_set(err, EINVAL, "the tensor layout does not say where a Python tensor keeps its tensor");
        return NULL;
    }
    if (read_at(m, obj + (uint64_t)l->pyobj_impl_off, &impl, 8, "the Python tensor object", err) < 0)
        return NULL;
    return tdb_tensor_decode_impl(m, l, impl, max_values, err);
}

json_t *tdb_tensor_decode_any(tdb_mem *m, const tdb_tensor_layout *l, uint64_t addr,
                              int max_values, const char **out_kind, tdb_error *err)
{
    tdb_error e1 = {0}, e2 = {0}, e3 = {0};
    json_t *t;
    if ((t = tdb_tensor_decode_impl(m, l, addr, max_values, &e1))) {
        if (out_kind)
            *out_kind = "TensorImpl";
        return t;
    }
    if ((t = tdb_tensor_decode_tensor(m, l, addr, max_values, &e2))) {
        if (out_kind)
            *out_kind = "at::Tensor";
        return t;
    }
    if ((t = tdb_tensor_decode_pyobject(m, l, addr, max_values, &e3))) {
        if (out_kind)
            *out_kind = "Python tensor";
        return t;
    }
    tdb_error_set(err, EINVAL,
                  "0x%llx holds no tensor: as a TensorImpl, %s; as an at::Tensor, %s; as a "
                  "Python tensor, %s",
                  (unsigned long long)addr, e1.msg, e2.msg, e3.msg);
    return NULL;
}

/* --- scalars ------------------------------------------------------------ */

json_t *tdb_scalar_decode(tdb_mem *m, const tdb_tensor_layout *l, uint64_t addr, tdb_error *err)
{
    int64_t tag;
    unsigned char v[16];
    if (l->scalar_tag_off < 0 || l->scalar_value_off < 0) {
        tdb_error_set(err, EINVAL, "the layout of c10::Scalar is unknown");
        return NULL;
    }
    if (read_int(m, addr + (uint64_t)l->scalar_tag_off, 4, 1, &tag, "the c10::Scalar", err) < 0)
        return NULL;
    int kind = -1;
    for (int k = 0; k < TDB_SCALAR_KINDS; k++)
        if (l->scalar_tags[k] == tag)
            kind = k;
    if (kind < 0) {
        tdb_error_set(err, EINVAL, "0x%llx is not a c10::Scalar tdebug can read: its tag is %lld",
                      (unsigned long long)addr, (long long)tag);
        return NULL;
    }
    if (read_at(m, addr + (uint64_t)l->scalar_value_off, v, kind == TDB_SCALAR_COMPLEX ? 16 : 8,
                "the c10::Scalar", err) < 0)
        return NULL;
    switch (kind) {
    case TDB_SCALAR_DOUBLE:
        return element_json("float64", v);
    case TDB_SCALAR_INT:
        return element_json("int64", v);
    case TDB_SCALAR_COMPLEX:
        return element_json("complex128", v);
    default: {
        int64_t i;
        memcpy(&i, v, 8);
        if (i != 0 && i != 1) {
            tdb_error_set(err, EINVAL, "0x%llx is not a c10::Scalar: a bool holding %lld",
                          (unsigned long long)addr, (long long)i);
            return NULL;
        }
        return json_boolean(i);
    }
    }
}

json_t *tdb_opt_scalar_decode(tdb_mem *m, const tdb_tensor_layout *l, uint64_t addr,
                              tdb_error *err)
{
    unsigned char flag;
    if (l->opt_scalar_flag_off < 0 || l->opt_scalar_value_off < 0) {
        tdb_error_set(err, EINVAL, "the layout of c10::optional<c10::Scalar> is unknown");
        return NULL;
    }
    if (read_at(m, addr + (uint64_t)l->opt_scalar_flag_off, &flag, 1, "the optional", err) < 0)
        return NULL;
    if (flag > 1) {
        tdb_error_set(err, EINVAL, "0x%llx is not a c10::optional: its flag is %u",
                      (unsigned long long)addr, flag);
        return NULL;
    }
    return flag ? tdb_scalar_decode(m, l, addr + (uint64_t)l->opt_scalar_value_off, err) : json_null();
}

/* --- text --------------------------------------------------------------- */

static void add_json_value(tdb_buf *b, const json_t *v)
{
    if (json_is_real(v))
        tdb_buf_addf(b, "%.6g", json_real_value(v));
    else if (json_is_integer(v))
        tdb_buf_addf(b, "%lld", (long long)json_integer_value(v));
    else if (json_is_true(v))
        tdb_buf_adds(b, "True");
    else if (json_is_false(v))
        tdb_buf_adds(b, "False");
    else if (json_is_string(v))
        tdb_buf_adds(b, json_string_value(v));
    else if (json_is_array(v) && json_array_size(v) == 2) { /* complex */
        const json_t *im = json_array_get(v, 1);
        add_json_value(b, json_array_get(v, 0));
        if (!(json_is_number(im) && json_number_value(im) < 0))
            tdb_buf_adds(b, "+");
        add_json_value(b, im);
        tdb_buf_adds(b, "j");
    } else
        tdb_buf_adds(b, "?");
}

static void add_json_ints(tdb_buf *b, const json_t *a)
{
    size_t i;
    json_t *v;
    tdb_buf_addc(b, '[');
    json_array_foreach(a, i, v) {
        if (i)
            tdb_buf_adds(b, ", ");
        add_json_value(b, v);
    }
    tdb_buf_addc(b, ']');
}

char *tdb_tensor_text(const json_t *t)
{
    return tdb_tensor_describe(t, 1);
}

char *tdb_tensor_describe(const json_t *t, int with_values)
{
    tdb_buf b = TDB_BUF_INIT;
    if (json_is_false(json_object_get(t, "defined")))
        return tdb_xstrdup("undefined tensor");
    const json_t *values = with_values ? json_object_get(t, "values") : NULL;
    tdb_buf_addf(&b, "%s ", json_string_value(json_object_get(t, "dtype")));
    add_json_ints(&b, json_object_get(t, "sizes"));
    tdb_buf_adds(&b, " strides ");
    add_json_ints(&b, json_object_get(t, "strides"));
    json_int_t off = json_integer_value(json_object_get(t, "storage_offset"));
    if (off)
        tdb_buf_addf(&b, " storage_offset %lld", (long long)off);
    tdb_buf_addf(&b, " %s", json_string_value(json_object_get(t, "device")));
    if (json_is_true(json_object_get(t, "requires_grad")))
        tdb_buf_adds(&b, " requires_grad");
    if (json_is_array(values)) {
        tdb_buf_adds(&b, " values ");
        size_t i;
        json_t *v;
        tdb_buf_addc(&b, '[');
        json_array_foreach(values, i, v) {
            if (i)
                tdb_buf_adds(&b, ", ");
            add_json_value(&b, v);
        }
        if ((json_int_t)json_array_size(values) < json_integer_value(json_object_get(t, "numel")))
            tdb_buf_adds(&b, json_array_size(values) ? ", ..." : "...");
        tdb_buf_addc(&b, ']');
    } else if (with_values) {
        tdb_buf_addf(&b, " (values not shown: %s)",
                     json_string_value(json_object_get(t, "values_note")));
    }
    return tdb_buf_detach(&b);
}

/* How torch prints the floating point values of one tensor (its
 * _Formatter, without the padding to one width): all integral as "1.",
 * a wide range in scientific notation, else four decimals. */
typedef enum { FLOAT_INTEGRAL, FLOAT_FIXED, FLOAT_SCI } float_style;

static double part_value(const json_t *v, int part)
{
    const json_t *x = json_is_array(v) ? json_array_get(v, (size_t)part) : part ? NULL : v;
    return json_is_number(x) ? json_number_value(x) : 0;
}

static float_style float_style_of(const json_t *values)
{
    double lo = INFINITY, hi = 0;
    int integral = 1;
    size_t i;
    json_t *v;
    json_array_foreach(values, i, v) {
        for (int part = 0; part < (json_is_array(v) ? 2 : 1); part++) {
            double x = part_value(v, part);
            if (!json_is_array(v) && !json_is_number(v))
                continue; /* "nan", "inf" */
            double a = x < 0 ? -x : x;
            if (a < 9e15 && x != (double)(long long)x)
                integral = 0;
            if (a != 0) {
                lo = a < lo ? a : lo;
                hi = a > hi ? a : hi;
            }
        }
    }
    if (hi >= 1e8 || (!integral && lo < 1e-4))
        return FLOAT_SCI;
    return integral ? FLOAT_INTEGRAL : FLOAT_FIXED;
}

static void add_float(tdb_buf *b, double x, float_style st)
{
    if (isnan(x))
        tdb_buf_adds(b, "nan");
    else if (isinf(x))
        tdb_buf_adds(b, x < 0 ? "-inf" : "inf");
    else if (st == FLOAT_SCI)
        tdb_buf_addf(b, "%.4e", x);
    else if (st == FLOAT_FIXED)
        tdb_buf_addf(b, "%.4f", x);
    else
        tdb_buf_addf(b, "%.0f.", x);
}

static void add_repr_value(tdb_buf *b, const json_t *v, int is_float, float_style st)
{
    if (json_is_array(v)) { /* complex: [real, imag] */
        add_float(b, part_value(v, 0), st);
        double im = part_value(v, 1);
        tdb_buf_adds(b, signbit(im) ? "" : "+");
        add_float(b, im, st);
        tdb_buf_addc(b, 'j');
    } else if (is_float && json_is_number(v)) {
        add_float(b, json_number_value(v), st);
    } else {
        add_json_value(b, v);
    }
}

/* VALUES[*I...] nested by SIZES[DIM...] as torch nests them. */
static void add_nested(tdb_buf *b, const json_t *values, const json_t *sizes, size_t dim,
                       size_t *i, int is_float, float_style st)
{
    if (dim == json_array_size(sizes)) {
        add_repr_value(b, json_array_get(values, (*i)++), is_float, st);
        return;
    }
    json_int_t n = json_integer_value(json_array_get(sizes, dim));
    tdb_buf_addc(b, '[');
    for (json_int_t k = 0; k < n; k++) {
        if (k)
            tdb_buf_adds(b, ", ");
        add_nested(b, values, sizes, dim + 1, i, is_float, st);
    }
    tdb_buf_addc(b, ']');
}

char *tdb_tensor_repr(const json_t *t)
{
    if (json_is_false(json_object_get(t, "defined")))
        return tdb_xstrdup("undefined tensor");
    tdb_buf b = TDB_BUF_INIT;
    const json_t *values = json_object_get(t, "values"), *sizes = json_object_get(t, "sizes");
    const char *dtype = json_string_value(json_object_get(t, "dtype"));
    const char *device = json_string_value(json_object_get(t, "device"));
    json_int_t numel = json_integer_value(json_object_get(t, "numel"));
    size_t ndim = json_array_size(sizes), n = json_array_size(values);
    int is_float = dtype && (strncmp(dtype, "float", 5) == 0 || strcmp(dtype, "bfloat16") == 0 ||
                             strncmp(dtype, "complex", 7) == 0);
    float_style st = json_is_array(values) ? float_style_of(values) : FLOAT_FIXED;
    int size_said = 0;

    tdb_buf_adds(&b, "tensor(");
    if (!json_is_array(values)) {
        tdb_buf_adds(&b, "...");
    } else if ((json_int_t)n >= numel && (numel > 0 || ndim == 1)) {
        /* every value: nested as torch prints them (on one line) */
        size_t i = 0;
        add_nested(&b, values, sizes, 0, &i, is_float, st);
    } else if (numel == 0) {
        tdb_buf_adds(&b, "[]");
    } else {
        /* the first values in index order, then how big it is */
        tdb_buf_addc(&b, '[');
        for (size_t i = 0; i < n; i++) {
            if (i)
                tdb_buf_adds(&b, ", ");
            add_repr_value(&b, json_array_get(values, i), is_float, st);
        }
        tdb_buf_adds(&b, n ? ", ...]" : "...]");
    }
    if (device && strcmp(device, "cpu") != 0)
        tdb_buf_addf(&b, ", device='%s'", device);
    if (!json_is_array(values) || (json_int_t)n < numel || (numel == 0 && ndim != 1)) {
        tdb_buf_adds(&b, ", size=(");
        for (size_t i = 0; i < ndim; i++)
            tdb_buf_addf(&b, "%s%lld", i ? ", " : "",
                         (long long)json_integer_value(json_array_get(sizes, i)));
        tdb_buf_adds(&b, ndim == 1 ? ",)" : ")");
        size_said = 1;
    }
    (void)size_said;
    /* torch names the dtype unless it is a default one */
    if (dtype && strcmp(dtype, "float32") && strcmp(dtype, "int64") && strcmp(dtype, "bool") &&
        strcmp(dtype, "complex64"))
        tdb_buf_addf(&b, ", dtype=torch.%s", dtype);
    if (json_is_true(json_object_get(t, "requires_grad")))
        tdb_buf_adds(&b, ", requires_grad=True");
    tdb_buf_addc(&b, ')');
    return tdb_buf_detach(&b);
}
