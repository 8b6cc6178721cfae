/*
 * test_tensor.c: tensors decoded from memory with a tdb_tensor_layout.
 * The tensors are laid out in this process's memory with a made-up layout
 * (other offsets than any torch's: the decoder must only follow the
 * layout), with C++ type information (fake_cxx.h) where torch has it.
 * Covers every dtype's values, strided and out-of-line shapes, every
 * refusal (wrong class, numel, dimensions, dtype, strides past the
 * storage), unreadable data, meta tensors, requires_grad, scalars, the
 * layout's JSON form, the DWARF path with a scripted evaluator, the text.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "base/common.h"
#include "fake_cxx.h"
#include "fake_tensor.h"
#include "process/procfs.h"
#include "torch/tensor.h"

#include <jansson.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static json_t *decode(fake_impl *t, tdb_error *err)
{
    return tdb_tensor_decode_impl(&mem, &L, addr_of(t), -1, err);
}

static void assert_ints(const json_t *a, const int64_t *v, size_t n)
{
    assert_int_equal(json_array_size(a), n);
    for (size_t i = 0; i < n; i++)
        assert_int_equal(json_integer_value(json_array_get(a, i)), v[i]);
}

static void test_contiguous_float32(void **state)
{
    float *data = fake_alloc(6 * sizeof(float));
    for (int i = 0; i < 6; i++)
        data[i] = (float)i + 0.5f;
    int64_t sizes[] = {2, 3}, strides[] = {3, 1};
    json_t *j = decode(make(2, sizes, strides, 0, "float32", data, 24), NULL);
    assert_non_null(j);
    assert_ints(json_object_get(j, "sizes"), sizes, 2);
    assert_ints(json_object_get(j, "strides"), strides, 2);
    assert_string_equal(json_string_value(json_object_get(j, "dtype")), "float32");
    assert_string_equal(json_string_value(json_object_get(j, "device")), "cpu");
    assert_int_equal(json_integer_value(json_object_get(j, "storage_offset")), 0);
    assert_true(json_is_false(json_object_get(j, "requires_grad")));
    assert_string_equal(json_string_value(json_object_get(j, "impl_type")), "c10::TensorImpl");
    json_t *v = json_object_get(j, "values");
    assert_int_equal(json_array_size(v), 6);
    assert_true(json_real_value(json_array_get(v, 5)) == 5.5);
    char *text = tdb_tensor_text(j);
    assert_string_equal(text, "float32 [2, 3] strides [3, 1] cpu values [0.5, 1.5, 2.5, 3.5, 4.5, 5.5]");
    free(text);
    json_decref(j);
}

static void test_strided_offset_values_in_index_order(void **state)
{
    /* A transposed view with a storage offset: values follow the indexes,
     * not the storage. */
    int64_t *data = fake_alloc(20 * 8);
    for (int i = 0; i < 20; i++)
        data[i] = i;
    int64_t sizes[] = {3, 2}, strides[] = {1, 3};
    json_t *j = decode(make(2, sizes, strides, 4, "int64", data, 160), NULL);
    int64_t want[] = {4, 7, 5, 8, 6, 9};
    assert_ints(json_object_get(j, "values"), want, 6);
    char *text = tdb_tensor_text(j);
    assert_non_null(strstr(text, "storage_offset 4"));
    free(text);
    json_decref(j);

    /* At most MAX values, the text marking the rest. */
    j = tdb_tensor_decode_impl(&mem, &L, addr_of(make(2, sizes, strides, 4, "int64", data, 160)), 2, NULL);
    assert_int_equal(json_array_size(json_object_get(j, "values")), 2);
    text = tdb_tensor_text(j);
    assert_non_null(strstr(text, "values [4, 7, ...]"));
    free(text);
    json_decref(j);
}

static void test_every_dtype(void **state)
{
    unsigned char *b = fake_alloc(64);
    int64_t one[] = {2}, unit[] = {1};
    json_t *j, *v;
    /* float16 1.5 and -2, bfloat16 1.5 and -inf */
    uint16_t h[2] = {0x3e00, 0xc000};
    memcpy(b, h, 4);
    j = decode(make(1, one, unit, 0, "float16", b, 4), NULL);
    v = json_object_get(j, "values");
    assert_true(json_real_value(json_array_get(v, 0)) == 1.5);
    assert_true(json_real_value(json_array_get(v, 1)) == -2.0);
    json_decref(j);
    uint16_t bf[2] = {0x3fc0, 0xff80};
    memcpy(b, bf, 4);
    j = decode(make(1, one, unit, 0, "bfloat16", b, 4), NULL);
    v = json_object_get(j, "values");
    assert_true(json_real_value(json_array_get(v, 0)) == 1.5);
    assert_string_equal(json_string_value(json_array_get(v, 1)), "-inf");
    json_decref(j);
    /* NaN and inf as strings (JSON has no such numbers) */
    double d[2] = {NAN, INFINITY};
    memcpy(b, d, 16);
    j = decode(make(1, one, unit, 0, "float64", b, 16), NULL);
    v = json_object_get(j, "values");
    assert_string_equal(json_string_value(json_array_get(v, 0)), "nan");
    assert_string_equal(json_string_value(json_array_get(v, 1)), "inf");
    char *dump = json_dumps(j, 0);
    assert_non_null(dump);
    free(dump);
    json_decref(j);
    /* signed and unsigned bytes, int16, int32 */
    b[0] = 0xff, b[1] = 0x7f;
    j = decode(make(1, one, unit, 0, "int8", b, 2), NULL);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(j, "values"), 0)), -1);
    json_decref(j);
    j = decode(make(1, one, unit, 0, "uint8", b, 2), NULL);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(j, "values"), 0)), 255);
    json_decref(j);
    int16_t s16[2] = {-300, 7};
    memcpy(b, s16, 4);
    j = decode(make(1, one, unit, 0, "int16", b, 4), NULL);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(j, "values"), 0)), -300);
    json_decref(j);
    int32_t s32[2] = {-70000, 7};
    memcpy(b, s32, 8);
    j = decode(make(1, one, unit, 0, "int32", b, 8), NULL);
    assert_int_equal(json_integer_value(json_array_get(json_object_get(j, "values"), 0)), -70000);
    json_decref(j);
    /* bool */
    b[0] = 1, b[1] = 0;
    j = decode(make(1, one, unit, 0, "bool", b, 2), NULL);
    v = json_object_get(j, "values");
    assert_true(json_is_true(json_array_get(v, 0)) && json_is_false(json_array_get(v, 1)));
    char *text = tdb_tensor_text(j);
    assert_non_null(strstr(text, "[True, False]"));
    free(text);
    json_decref(j);
    /* complex64 and complex128 as [real, imag] */
    float c64[4] = {1, 2, 3, -4};
    memcpy(b, c64, 16);
    j = decode(make(1, one, unit, 0, "complex64", b, 16), NULL);
    v = json_array_get(json_object_get(j, "values"), 1);
    assert_true(json_real_value(json_array_get(v, 0)) == 3 && json_real_value(json_array_get(v, 1)) == -4);
    text = tdb_tensor_text(j);
    assert_non_null(strstr(text, "[1+2j, 3-4j]"));
    free(text);
    json_decref(j);
    double c128[2] = {0.25, 0.5};
    memcpy(b, c128, 16);
    j = decode(make(1, unit, unit, 0, "complex128", b, 16), NULL);
    v = json_array_get(json_object_get(j, "values"), 0);
    assert_true(json_real_value(json_array_get(v, 1)) == 0.5);
    json_decref(j);
}

static void test_shapes(void **state)
{
    /* zero-dimensional: one value */
    double *d = fake_alloc(8);
    *d = 2.5;
    json_t *j = decode(make(0, NULL, NULL, 0, "float64", d, 8), NULL);
    assert_int_equal(json_array_size(json_object_get(j, "sizes")), 0);
    assert_int_equal(json_integer_value(json_object_get(j, "numel")), 1);
    assert_true(json_real_value(json_array_get(json_object_get(j, "values"), 0)) == 2.5);
    json_decref(j);
    /* zero-size: no values, no data needed */
    int64_t zs[] = {0, 3}, zst[] = {3, 1};
    j = decode(make(2, zs, zst, 0, "float32", NULL, 0), NULL);
    assert_int_equal(json_integer_value(json_object_get(j, "numel")), 0);
    assert_int_equal(json_array_size(json_object_get(j, "values")), 0);
    json_decref(j);
    /* more dimensions than fit inline: out of line */
    int32_t *x = fake_alloc(96 * 4);
    for (int i = 0; i < 96; i++)
        x[i] = i;
    int64_t s7[] = {3, 2, 1, 2, 1, 2, 4}, st7[] = {16, 48, 16, 8, 8, 4, 1};
    j = decode(make(7, s7, st7, 0, "int32", x, 96 * 4), NULL);
    assert_non_null(j);
    assert_ints(json_object_get(j, "sizes"), s7, 7);
    assert_ints(json_object_get(j, "strides"), st7, 7);
    int64_t first[] = {0, 1, 2, 3, 4, 5, 6, 7};
    assert_ints(json_object_get(j, "values"), first, 8);
    json_decref(j);
    /* ... unless the layout does not know where those are */
    L.ool_strides_at_dim = -1;
    tdb_error e = {0};
    assert_null(decode(make(7, s7, st7, 0, "int32", x, 96 * 4), &e));
    assert_non_null(strstr(e.msg, "7 dimensions"));
    L.ool_strides_at_dim = 1;
}

/* T is refused, the message saying WHY. */
static void assert_refused(fake_impl *t, const char *why)
{
    tdb_error e = {0};
    assert_null(decode(t, &e));
    if (!strstr(e.msg, why))
        fprintf(stderr, "refused with: %s\n", e.msg);
    assert_non_null(strstr(e.msg, why));
}

static void test_refusals(void **state)
{
    float *data = fake_alloc(16);
    int64_t sizes[] = {2, 2}, strides[] = {2, 1};
    tdb_error e = {0};
    fake_impl *t;

    /* another class */
    t = make(2, sizes, strides, 0, "float32", data, 16);
    t->vptr = vptr_other;
    assert_refused(t, "is not a tensor: it is a 'torch::autograd::Node'");
    /* no C++ object at all */
    t->vptr = 77;
    assert_refused(t, "is not a tensor");
    /* numel disagreeing with the sizes */
    t = make(2, sizes, strides, 0, "float32", data, 16);
    t->numel = 5;
    assert_refused(t, "numel 5 is not the product of its sizes [2, 2]");
    /* a silly number of dimensions */
    t = make(2, sizes, strides, 0, "float32", data, 16);
    t->dim = 1000;
    assert_refused(t, "1000 dimensions");
    /* negative sizes */
    int64_t neg[] = {2, -2};
    t = make(2, neg, strides, 0, "float32", data, 16);
    t->numel = -4;
    assert_refused(t, "implausible sizes [2, -2]");
    /* a dtype this build does not use */
    t = make(2, sizes, strides, 0, "float32", data, 16);
    t->dtype = 99;
    assert_refused(t, "dtype code 99");
    /* strides reaching past the storage */
    int64_t far[] = {2, 8};
    t = make(2, sizes, far, 0, "float32", data, 16);
    assert_refused(t, "reach past its storage of 16 bytes");
    /* unreadable: the impl itself */
    tdb_error_clear(&e);
    assert_null(tdb_tensor_decode_impl(&mem, &L, fake_unreadable(), -1, &e));
    assert_true(e.set);
}

static void test_unreadable_data_and_devices(void **state)
{
    int64_t sizes[] = {4}, strides[] = {1};
    fake_impl *t = make(1, sizes, strides, 0, "float32", NULL, -1);
    ((fake_storage *)(uintptr_t)t->storage)->data = fake_unreadable();
    ((fake_storage *)(uintptr_t)t->storage)->nbytes = 16;
    json_t *j = decode(t, NULL);
    assert_non_null(j);
    assert_true(json_is_null(json_object_get(j, "values")));
    assert_non_null(strstr(json_string_value(json_object_get(j, "values_note")), "is unreadable"));
    char *text = tdb_tensor_text(j);
    assert_non_null(strstr(text, "(values not shown: its data at 0x"));
    free(text);
    json_decref(j);

    t = make(1, sizes, strides, 0, "float32", NULL, 0);
    t->device_type = 14;
    j = decode(t, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "device")), "meta");
    assert_string_equal(json_string_value(json_object_get(j, "values_note")), "a meta tensor has no data");
    json_decref(j);

    t->device_type = 1;
    t->device_index = 2;
    j = decode(t, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "device")), "cuda:2");
    assert_non_null(strstr(json_string_value(json_object_get(j, "values_note")), "on device cuda:2"));
    json_decref(j);

    t->device_type = 42;
    j = decode(t, NULL);
    assert_string_equal(json_string_value(json_object_get(j, "device")), "unknown device type 42");
    json_decref(j);
}

static void test_requires_grad(void **state)
{
    float *data = fake_alloc(4);
    int64_t one[] = {1}, unit[] = {1};
    fake_impl *t = make(1, one, unit, 0, "float32", data, 4);
    fake_meta *m = fake_alloc(sizeof(*m));
    t->autograd = addr_of(m);
    json_t *j = decode(t, NULL);
    assert_true(json_is_false(json_object_get(j, "requires_grad")));
    json_decref(j);
    m->requires_grad = 1; /* a leaf */
    j = decode(t, NULL);
    assert_true(json_is_true(json_object_get(j, "requires_grad")));
    char *text = tdb_tensor_text(j);
    assert_non_null(strstr(text, " requires_grad"));
    free(text);
    json_decref(j);
    m->requires_grad = 0;
    m->grad_fn = addr_of(fake_alloc(8)); /* a result */
    j = decode(t, NULL);
    assert_true(json_is_true(json_object_get(j, "requires_grad")));
    json_decref(j);
    m->requires_grad = 7; /* garbage */
    tdb_error e = {0};
    assert_null(decode(t, &e));
    assert_non_null(strstr(e.msg, "requires_grad 7"));
}

static void test_wrappers_and_undefined(void **state)
{
    float *data = fake_alloc(4);
    int64_t one[] = {1}, unit[] = {1};
    fake_impl *t = make(1, one, unit, 0, "float32", data, 4);
    uint64_t *tensor = fake_alloc(8); /* an at::Tensor: the impl pointer */
    uint64_t *py = fake_alloc(32);    /* a Python object: head, then the impl */
    tensor[0] = addr_of(t);
    py[0] = 1, py[1] = 0x1234, py[2] = addr_of(t);
    const char *kind = NULL;
    json_t *j = tdb_tensor_decode_tensor(&mem, &L, addr_of(tensor), -1, NULL);
    assert_non_null(j);
    json_decref(j);
    j = tdb_tensor_decode_pyobject(&mem, &L, addr_of(py), -1, NULL);
    assert_non_null(j);
    json_decref(j);
    j = tdb_tensor_decode_any(&mem, &L, addr_of(t), -1, &kind, NULL);
    assert_string_equal(kind, "TensorImpl");
    json_decref(j);
    j = tdb_tensor_decode_any(&mem, &L, addr_of(tensor), -1, &kind, NULL);
    assert_string_equal(kind, "at::Tensor");
    json_decref(j);
    j = tdb_tensor_decode_any(&mem, &L, addr_of(py), -1, &kind, NULL);
    assert_string_equal(kind, "Python tensor");
    json_decref(j);
    tdb_error e = {0};
    uint64_t *junk = fake_alloc(64);
    assert_null(tdb_tensor_decode_any(&mem, &L, addr_of(junk), -1, &kind, &e));
    assert_non_null(strstr(e.msg, "holds no tensor: as a TensorImpl"));
    tdb_error_clear(&e);
    assert_null(tdb_tensor_decode_any(&mem, &L, fake_unreadable(), -1, &kind, &e));
    assert_non_null(strstr(e.msg, "holds no tensor"));

    t->vptr = vptr_undefined;
    j = decode(t, NULL);
    assert_true(json_is_false(json_object_get(j, "defined")));
    char *text = tdb_tensor_text(j);
    assert_string_equal(text, "undefined tensor");
    free(text);
    json_decref(j);
}

static void test_scalars(void **state)
{
    unsigned char *s = fake_alloc(48);
    double dv = 2.75;
    int64_t iv = -123457;
    json_t *v;
    memcpy(s + 16, &dv, 8);
    v = tdb_scalar_decode(&mem, &L, addr_of(s), NULL);
    assert_true(json_real_value(v) == 2.75);
    json_decref(v);
    s[0] = 1;
    memcpy(s + 16, &iv, 8);
    v = tdb_scalar_decode(&mem, &L, addr_of(s), NULL);
    assert_int_equal(json_integer_value(v), -123457);
    json_decref(v);
    s[0] = 3;
    iv = 1;
    memcpy(s + 16, &iv, 8);
    v = tdb_scalar_decode(&mem, &L, addr_of(s), NULL);
    assert_true(json_is_true(v));
    json_decref(v);
    s[0] = 2;
    double z[2] = {2, 3};
    memcpy(s + 16, z, 16);
    v = tdb_scalar_decode(&mem, &L, addr_of(s), NULL);
    assert_true(json_real_value(json_array_get(v, 1)) == 3);
    json_decref(v);
    tdb_error e = {0};
    s[0] = 9;
    assert_null(tdb_scalar_decode(&mem, &L, addr_of(s), &e));
    assert_non_null(strstr(e.msg, "its tag is 9"));

    unsigned char *opt = fake_alloc(48);
    v = tdb_opt_scalar_decode(&mem, &L, addr_of(opt), NULL);
    assert_true(json_is_null(v));
    json_decref(v);
    opt[0] = 1;
    memcpy(opt + 16 + 16, &dv, 8);
    v = tdb_opt_scalar_decode(&mem, &L, addr_of(opt), NULL);
    assert_true(json_real_value(v) == 2.75);
    json_decref(v);
    opt[0] = 5;
    assert_null(tdb_opt_scalar_decode(&mem, &L, addr_of(opt), NULL));
}

static void test_layout_json(void **state)
{
    json_t *j = tdb_tensor_layout_to_json(&L);
    tdb_tensor_layout back;
    assert_int_equal(tdb_tensor_layout_from_json(j, &back, NULL), 0);
    assert_memory_equal(&back, &L, sizeof(L));
    assert_non_null(tdb_tensor_dtype_named(&back, "bfloat16"));
    assert_null(tdb_tensor_dtype_named(&back, "float8"));
    /* a missing or mistyped field is refused and named */
    tdb_error e = {0};
    json_object_set_new(j, "dtype_off", json_string("176"));
    assert_int_equal(tdb_tensor_layout_from_json(j, &back, &e), -1);
    assert_string_equal(e.msg, "not a tensor layout: bad or missing 'dtype_off'");
    json_object_del(j, "dtype_off");
    tdb_error_clear(&e);
    assert_int_equal(tdb_tensor_layout_from_json(j, &back, &e), -1);
    json_decref(j);
    tdb_error_clear(&e);
    json_t *arr = json_array();
    assert_int_equal(tdb_tensor_layout_from_json(arr, &back, &e), -1);
    json_decref(arr);
}

static void test_dwarf(void **state)
{
    tdb_tensor_layout dl;
    int asked = 0;
    assert_string_equal(tdb_tensor_dwarf_struct("const tt_tensor *"), "tt_tensor");
    assert_string_equal(tdb_tensor_dwarf_struct("tt_tensor *"), "tt_tensor");
    assert_null(tdb_tensor_dwarf_struct("tt_tensor"));
    assert_null(tdb_tensor_dwarf_struct("tt_tensor **"));
    assert_null(tdb_tensor_dwarf_struct("int *"));
    assert_int_equal(tdb_tensor_layout_from_dwarf(scripted, &asked, "tt_tensor", &dl, NULL), 0);
    assert_true(asked > 10);
    assert_string_equal(dl.source, "dwarf");
    assert_int_equal(dl.dim_off, 24);
    assert_int_equal(dl.dim_size, 4);
    assert_int_equal(dl.inline_max, 8);
    assert_int_equal(dl.numel_off, -1);
    assert_int_equal(dl.autograd_off, -1);
    assert_string_equal(dl.impl_class, "");
    assert_string_equal(tdb_tensor_dtype_of(&dl, 1)->name, "int64");
    assert_int_equal(tdb_tensor_dtype_of(&dl, 0)->itemsize, 8);
    assert_string_equal(tdb_tensor_device_of(&dl, 1)->name, "meta");

    /* a tinytensor tensor laid out as those answers say */
    int64_t v0 = 7, v1 = -8;
    uint64_t t = fake_tt_tensor(1 /* TT_INT64 */, &v0, &v1);
    json_t *j = tdb_tensor_decode_impl(&mem, &dl, t, -1, NULL);
    assert_non_null(j);
    assert_string_equal(json_string_value(json_object_get(j, "dtype")), "int64");
    assert_int_equal(json_integer_value(json_array_get(json_object_get(j, "values"), 1)), -8);
    assert_null(json_object_get(j, "impl_type"));
    json_decref(j);

    tdb_error e = {0};
    assert_int_equal(tdb_tensor_layout_from_dwarf(scripted, &asked, "no_such_tensor", &dl, &e), -1);
    assert_non_null(strstr(e.msg, "knows no tensor struct"));
}

/* What Python would print, from the JSON of a decoded tensor. */
static void test_repr(void **state)
{
    static const struct {
        const char *json, *repr;
    } cases[] = {
        {"{\"sizes\": [2], \"dtype\": \"float32\", \"device\": \"cpu\", \"numel\": 2, "
         "\"values\": [1.0, 1.0], \"requires_grad\": false}", "tensor([1., 1.])"},
        {"{\"sizes\": [2, 3], \"dtype\": \"float32\", \"device\": \"cpu\", \"numel\": 6, "
         "\"values\": [0.0, 1.0, 2.0, 3.0, 4.0, 5.0]}", "tensor([[0., 1., 2.], [3., 4., 5.]])"},
        {"{\"sizes\": [2], \"dtype\": \"float64\", \"device\": \"cpu\", \"numel\": 2, "
         "\"values\": [0.5, 1.25], \"requires_grad\": true}",
         "tensor([0.5000, 1.2500], dtype=torch.float64, requires_grad=True)"},
        {"{\"sizes\": [3], \"dtype\": \"int32\", \"device\": \"cpu\", \"numel\": 3, "
         "\"values\": [7, -8, 9]}", "tensor([7, -8, 9], dtype=torch.int32)"},
        {"{\"sizes\": [2], \"dtype\": \"bool\", \"device\": \"cpu\", \"numel\": 2, "
         "\"values\": [true, false]}", "tensor([True, False])"},
        {"{\"sizes\": [], \"dtype\": \"float32\", \"device\": \"cpu\", \"numel\": 1, "
         "\"values\": [2.5]}", "tensor(2.5000)"},
        {"{\"sizes\": [100], \"dtype\": \"int64\", \"device\": \"cpu\", \"numel\": 100, "
         "\"values\": [0, 1, 2]}", "tensor([0, 1, 2, ...], size=(100,))"},
        {"{\"sizes\": [0, 3], \"dtype\": \"float32\", \"device\": \"cpu\", \"numel\": 0, "
         "\"values\": []}", "tensor([], size=(0, 3))"},
        {"{\"sizes\": [0], \"dtype\": \"float32\", \"device\": \"cpu\", \"numel\": 0, "
         "\"values\": []}", "tensor([])"},
        {"{\"sizes\": [2, 3], \"dtype\": \"float32\", \"device\": \"meta\", \"numel\": 6, "
         "\"values\": null}", "tensor(..., device='meta', size=(2, 3))"},
        {"{\"sizes\": [2], \"dtype\": \"complex64\", \"device\": \"cpu\", \"numel\": 2, "
         "\"values\": [[1.0, 2.0], [0.0, -3.0]]}", "tensor([1.+2.j, 0.-3.j])"},
        {"{\"sizes\": [3], \"dtype\": \"float32\", \"device\": \"cpu\", \"numel\": 3, "
         "\"values\": [\"nan\", 1.0, \"-inf\"]}", "tensor([nan, 1., -inf])"},
        {"{\"sizes\": [2], \"dtype\": \"float32\", \"device\": \"cpu\", \"numel\": 2, "
         "\"values\": [1e-05, 1.0]}", "tensor([1.0000e-05, 1.0000e+00])"},
        {"{\"defined\": false}", "undefined tensor"},
    };
    for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
        json_t *j = json_loads(cases[i].json, 0, NULL);
        assert_non_null(j);
        char *r = tdb_tensor_repr(j);
        if (strcmp(r, cases[i].repr) != 0)
            fail_msg("case %zu: '%s', expected '%s'", i, r, cases[i].repr);
        free(r);
        json_decref(j);
    }
    json_t *j = json_loads("{\"sizes\": [2, 3], \"strides\": [1, 2], \"dtype\": \"float32\", "
                           "\"device\": \"cpu\", \"storage_offset\": 4, \"numel\": 6, "
                           "\"values\": [1.0]}", 0, NULL);
    char *d = tdb_tensor_describe(j, 0);
    assert_string_equal(d, "float32 [2, 3] strides [1, 2] storage_offset 4 cpu");
    free(d);
    json_decref(j);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_contiguous_float32),
        cmocka_unit_test(test_strided_offset_values_in_index_order),
        cmocka_unit_test(test_every_dtype),
        cmocka_unit_test(test_shapes),
        cmocka_unit_test(test_refusals),
        cmocka_unit_test(test_unreadable_data_and_devices),
        cmocka_unit_test(test_requires_grad),
        cmocka_unit_test(test_wrappers_and_undefined),
        cmocka_unit_test(test_scalars),
        cmocka_unit_test(test_layout_json),
        cmocka_unit_test(test_dwarf),
        cmocka_unit_test(test_repr),
    };
    return cmocka_run_group_tests(tests, fake_tensor_group_setup, fake_tensor_group_teardown);
}
