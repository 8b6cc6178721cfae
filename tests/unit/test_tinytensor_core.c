/*
 * test_tinytensor_core.c: the tinytensor sample's C core, without Python.
 *
 * The core's sources are compiled into this test (they are a sample's, not
 * part of libtdebug), so they also meet tdebug's own warning flags.  The
 * Python side is tested in tests/e2e/test_tinytensor.py.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdlib.h>
#include <string.h>

#include "../../samples/tinytensor/csrc/core/tt_error.c"
#include "../../samples/tinytensor/csrc/core/tt_tensor.c"
#include "../../samples/tinytensor/csrc/core/tt_iter.c"
#include "../../samples/tinytensor/csrc/core/tt_dispatcher.c"
#include "../../samples/tinytensor/csrc/core/tt_ops.c"
#include "../../samples/tinytensor/csrc/core/tt_native_cpu.c"
#include "../../samples/tinytensor/csrc/core/tt_native_meta.c"
#include "../../samples/tinytensor/csrc/core/tt_register.c"
#include "../../samples/tinytensor/csrc/core/tt_faults.c"

/* A new contiguous tensor of SHAPE holding VALUES (float64 or int64). */
static tt_tensor *make_f64(const int64_t *shape, int ndim, const double *values)
{
    tt_error err = TT_ERROR_INIT;
    tt_tensor *t = tt_empty(shape, ndim, TT_FLOAT64, TT_CPU, &err);

    assert_non_null(t);
    memcpy(tt_data(t), values, sizeof(double) * (size_t)tt_numel(t));
    return t;
}

static tt_tensor *make_i64(const int64_t *shape, int ndim, const int64_t *values)
{
    tt_error err = TT_ERROR_INIT;
    tt_tensor *t = tt_empty(shape, ndim, TT_INT64, TT_CPU, &err);

    assert_non_null(t);
    memcpy(tt_data(t), values, sizeof(int64_t) * (size_t)tt_numel(t));
    return t;
}

/* Element I (row-major) of a float64 tensor of any strides. */
static double at_f64(const tt_tensor *t, int64_t i)
{
    int64_t offset = 0;

    for (int d = t->ndim - 1; d >= 0; d--) {
        offset += (i % t->shape[d]) * t->strides[d];
        i /= t->shape[d];
    }
    return ((const double *)tt_data(t))[offset];
}

static void test_empty_shapes_and_strides(void **state)
{
    tt_error err = TT_ERROR_INIT;
    int64_t shape[3] = {2, 3, 4}, bad[1] = {-1}, many[TT_MAX_DIMS + 1] = {0};
    tt_tensor *t = tt_empty(shape, 3, TT_FLOAT64, TT_CPU, &err);

    assert_non_null(t);
    assert_int_equal(tt_numel(t), 24);
    assert_int_equal(t->strides[0], 12);
    assert_int_equal(t->strides[1], 4);
    assert_int_equal(t->strides[2], 1);
    assert_int_equal(t->storage->nbytes, 24 * sizeof(double));
    tt_tensor_decref(t);

    assert_null(tt_empty(bad, 1, TT_FLOAT64, TT_CPU, &err));
    assert_int_equal(err.code, TT_ERR_RUNTIME);
    assert_string_equal(err.msg, "cannot make a tensor with size -1 in dimension 0: sizes are >= 0");

    err = (tt_error)TT_ERROR_INIT;
    assert_null(tt_empty(many, TT_MAX_DIMS + 1, TT_FLOAT64, TT_CPU, &err));
    assert_non_null(strstr(err.msg, "at most 8 dimensions"));
}

static void test_first_error_wins(void **state)
{
    tt_error err = TT_ERROR_INIT;

    tt_error_set(&err, TT_ERR_RUNTIME, "first %d", 1);
    tt_error_set(&err, TT_ERR_NOMEM, "second");
    assert_int_equal(err.code, TT_ERR_RUNTIME);
    assert_string_equal(err.msg, "first 1");
    tt_error_set(NULL, TT_ERR_RUNTIME, "ignored");
}

static void test_names(void **state)
{
    tt_error err = TT_ERROR_INIT;
    tt_dtype dtype;
    tt_device device;

    assert_int_equal(tt_dtype_from_name("int64", &dtype, &err), 0);
    assert_int_equal(dtype, TT_INT64);
    assert_int_equal(tt_device_from_name("meta", &device, &err), 0);
    assert_int_equal(device, TT_META);
    assert_int_equal(tt_dtype_from_name("float32", &dtype, &err), -1);
    assert_string_equal(err.msg, "unknown dtype 'float32' (tinytensor has float64 and int64)");
}

static void test_add_broadcasts(void **state)
{
    tt_error err = TT_ERROR_INIT;
    int64_t col[2] = {2, 1}, row[1] = {3};
    tt_tensor *a = make_f64(col, 2, (double[]){1, 2});
    tt_tensor *b = make_f64(row, 1, (double[]){10, 20, 30});
    tt_tensor *c = tt_ops_add_call(a, b, tt_scalar_from_int64(2), &err);
    double want[6] = {21, 41, 61, 22, 42, 62};

    assert_non_null(c);
    assert_int_equal(c->ndim, 2);
    assert_int_equal(c->shape[0], 2);
    assert_int_equal(c->shape[1], 3);
    for (int i = 0; i < 6; i++)
        assert_true(at_f64(c, i) == want[i]);
    tt_tensor_decref(a);
    tt_tensor_decref(b);
    tt_tensor_decref(c);
}

static void test_add_shape_mismatch(void **state)
{
    tt_error err = TT_ERROR_INIT;
    int64_t s2[1] = {2}, s3[1] = {3};
    tt_tensor *a = make_f64(s2, 1, (double[]){1, 2});
    tt_tensor *b = make_f64(s3, 1, (double[]){1, 2, 3});

    assert_null(tt_ops_add_call(a, b, tt_scalar_from_int64(1), &err));
    assert_int_equal(err.code, TT_ERR_RUNTIME);
    assert_string_equal(err.msg, "cannot add shapes [2] and [3]: sizes 2 and 3 in dimension 0 do not broadcast "
                                 "(sizes must be equal or one of them 1)");
    tt_tensor_decref(a);
    tt_tensor_decref(b);
}

static void test_int64_add_and_promotion(void **state)
{
    tt_error err = TT_ERROR_INIT;
    int64_t s3[1] = {3};
    tt_tensor *i = make_i64(s3, 1, (int64_t[]){1, 2, 3});
    tt_tensor *f = make_f64(s3, 1, (double[]){0.5, 0.5, 0.5});
    tt_tensor *ii = tt_ops_add_call(i, i, tt_scalar_from_int64(3), &err);
    tt_tensor *fi = tt_ops_add_call(i, f, tt_scalar_from_int64(1), &err);

    assert_non_null(ii);
    assert_int_equal(ii->dtype, TT_INT64);
    assert_int_equal(((int64_t *)tt_data(ii))[2], 12);
    assert_non_null(fi);
    assert_int_equal(fi->dtype, TT_FLOAT64);
    assert_true(((double *)tt_data(fi))[0] == 1.5);
    tt_tensor_decref(i);
    tt_tensor_decref(f);
    tt_tensor_decref(ii);
    tt_tensor_decref(fi);
}

static void test_views_share_storage_and_outlive_base(void **state)
{
    tt_error err = TT_ERROR_INIT;
    int64_t s23[2] = {2, 3}, big[1] = {7};
    tt_tensor *a = make_f64(s23, 2, (double[]){1, 2, 3, 4, 5, 6});
    tt_tensor *t = tt_transpose(a, 0, 1, &err);
    tt_tensor *sum;

    assert_non_null(t);
    assert_ptr_equal(t->storage, a->storage);
    assert_int_equal(t->shape[0], 3);
    assert_int_equal(t->strides[0], 1);
    assert_int_equal(t->strides[1], 3);
    tt_tensor_decref(a);  /* the view keeps the storage alive */
    assert_true(at_f64(t, 1) == 4);  /* t[0][1] == a[1][0] */
    sum = tt_ops_add_call(t, t, tt_scalar_from_int64(1), &err);
    assert_non_null(sum);
    assert_true(at_f64(sum, 5) == 12);
    /* A view past the end of the storage is refused. */
    assert_null(tt_as_strided(t, big, (int64_t[]){1}, 1, 0, &err));
    assert_non_null(strstr(err.msg, "cannot make a view reaching element 6"));
    tt_tensor_decref(t);
    tt_tensor_decref(sum);
}

static void test_matmul_ranks(void **state)
{
    tt_error err = TT_ERROR_INIT;
    int64_t s22[2] = {2, 2}, s2[1] = {2};
    tt_tensor *m = make_f64(s22, 2, (double[]){1, 2, 3, 4});
    tt_tensor *v = make_f64(s2, 1, (double[]){1, 1});
    tt_tensor *mm = tt_ops_matmul_call(m, m, &err);
    tt_tensor *mv = tt_ops_matmul_call(m, v, &err);
    tt_tensor *vm = tt_ops_matmul_call(v, m, &err);
    tt_tensor *dot = tt_ops_matmul_call(v, v, &err);
    tt_tensor *mt = tt_transpose(m, 0, 1, &err);
    tt_tensor *mtm = tt_ops_matmul_call(mt, m, &err);
    tt_tensor *v3;

    assert_int_equal(err.code, TT_OK);
    assert_true(at_f64(mm, 0) == 7 && at_f64(mm, 1) == 10 && at_f64(mm, 2) == 15 && at_f64(mm, 3) == 22);
    assert_int_equal(mv->ndim, 1);
    assert_true(at_f64(mv, 0) == 3 && at_f64(mv, 1) == 7);
    assert_int_equal(vm->ndim, 1);
    assert_true(at_f64(vm, 0) == 4 && at_f64(vm, 1) == 6);
    assert_int_equal(dot->ndim, 0);
    assert_true(*(double *)tt_data(dot) == 2);
    /* [[1,3],[2,4]] @ [[1,2],[3,4]] through the strided view */
    assert_true(at_f64(mtm, 0) == 10 && at_f64(mtm, 1) == 14 && at_f64(mtm, 2) == 14 && at_f64(mtm, 3) == 20);
    tt_tensor_decref(mm);
    tt_tensor_decref(mv);
    tt_tensor_decref(vm);
    tt_tensor_decref(dot);
    tt_tensor_decref(mt);
    tt_tensor_decref(mtm);

    v3 = make_f64((int64_t[]){3}, 1, (double[]){1, 2, 3});
    assert_null(tt_ops_matmul_call(v, v3, &err));
    assert_string_equal(err.msg, "cannot matmul shapes [2] and [3]: inner sizes 2 and 3 differ");
    tt_tensor_decref(m);
    tt_tensor_decref(v);
    tt_tensor_decref(v3);
}

static void test_dispatcher_routes_by_device_and_dtype(void **state)
{
    tt_error err = TT_ERROR_INIT;
    const tt_operator *add = tt_dispatcher_find_op("add", &err);
    const tt_kernel *k;

    assert_non_null(add);
    k = tt_dispatcher_lookup(add, (tt_dispatch_key){TT_CPU, TT_FLOAT64}, &err);
    assert_non_null(k);
    assert_ptr_equal(k->fn, (tt_kernel_fn)tt_native_add);
    assert_string_equal(k->name, "tt_native_add");
    k = tt_dispatcher_lookup(add, (tt_dispatch_key){TT_META, TT_INT64}, &err);
    assert_non_null(k);
    assert_string_equal(k->name, "tt_meta_add");
    assert_int_equal(tt_dispatcher_count(), 5);
}

static void test_dispatcher_missing_kernel(void **state)
{
    tt_error err = TT_ERROR_INIT;
    int64_t s2[1] = {2};
    tt_tensor *i = make_i64(s2, 1, (int64_t[]){1, 2});

    assert_null(tt_ops_matmul_call(i, i, &err));
    assert_int_equal(err.code, TT_ERR_NOT_IMPLEMENTED);
    assert_string_equal(err.msg, "cannot run 'matmul' on cpu/int64: no kernel is registered for it "
                                 "(matmul has: cpu/float64, meta/float64, meta/int64)");
    tt_tensor_decref(i);
}

static void test_dispatcher_unknown_operator(void **state)
{
    tt_error err = TT_ERROR_INIT;

    assert_null(tt_dispatcher_find_op("frobnicate", &err));
    assert_int_equal(err.code, TT_ERR_RUNTIME);
    assert_string_equal(err.msg, "unknown operator 'frobnicate' (tinytensor has: add, mul, sum, fill_, matmul)");
}

static tt_tensor *fake_kernel(const tt_tensor *self, tt_error *err)
{
    return NULL;
}

static void test_dispatcher_registration_errors(void **state)
{
    tt_error err = TT_ERROR_INIT;
    static const char *names[TT_MAX_OPERATORS] = {"op0", "op1", "op2", "op3", "op4", "op5", "op6", "op7",
                                                   "op8", "op9", "op10", "op11", "op12", "op13", "op14", "op15"};
    int i;

    assert_int_equal(TT_REGISTER("add", TT_CPU, TT_FLOAT64, fake_kernel, &err), -1);
    assert_string_equal(err.msg, "cannot register fake_kernel for 'add' on cpu/float64: "
                                 "tt_native_add is already registered there");
    err = (tt_error)TT_ERROR_INIT;
    for (i = 0; tt_dispatcher_count() < TT_MAX_OPERATORS; i++)
        assert_int_equal(TT_REGISTER(names[i], TT_CPU, TT_FLOAT64, fake_kernel, &err), 0);
    assert_int_equal(TT_REGISTER("one_too_many", TT_CPU, TT_FLOAT64, fake_kernel, &err), -1);
    assert_string_equal(err.msg, "cannot register operator 'one_too_many': the table is full (16 operators)");
    /* What was there still routes. */
    assert_non_null(tt_dispatcher_find_op("add", NULL));
}

static void test_meta_computes_shapes_only(void **state)
{
    tt_error err = TT_ERROR_INIT;
    int64_t s23[2] = {2, 3}, s3[1] = {3}, s34[2] = {3, 4};
    tt_tensor *a = tt_empty(s23, 2, TT_FLOAT64, TT_META, &err);
    tt_tensor *b = tt_empty(s3, 1, TT_FLOAT64, TT_META, &err);
    tt_tensor *m = tt_empty(s34, 2, TT_FLOAT64, TT_META, &err);
    tt_tensor *sum = tt_ops_add_call(a, b, tt_scalar_from_int64(1), &err);
    tt_tensor *prod = tt_ops_matmul_call(a, m, &err);
    tt_tensor *cpu;

    assert_non_null(sum);
    assert_int_equal(sum->device, TT_META);
    assert_null(tt_data(sum));
    assert_int_equal(sum->shape[1], 3);
    assert_non_null(prod);
    assert_int_equal(prod->shape[0], 2);
    assert_int_equal(prod->shape[1], 4);
    assert_int_equal(tt_ops_fill__call(a, tt_scalar_from_int64(1), &err), 0);
    assert_null(tt_ops_sum_call(a, &err));
    assert_int_equal(err.code, TT_ERR_NOT_IMPLEMENTED);
    assert_non_null(strstr(err.msg, "cannot run 'sum' on meta/float64"));

    err = (tt_error)TT_ERROR_INIT;
    cpu = make_f64(s3, 1, (double[]){1, 2, 3});
    assert_null(tt_ops_add_call(a, cpu, tt_scalar_from_int64(1), &err));
    assert_string_equal(err.msg, "cannot add a meta tensor and a cpu tensor: both must be on the same device");
    tt_tensor_decref(cpu);
    tt_tensor_decref(a);
    tt_tensor_decref(b);
    tt_tensor_decref(m);
    tt_tensor_decref(sum);
    tt_tensor_decref(prod);
}

static void test_sum_fill_and_scalars(void **state)
{
    tt_error err = TT_ERROR_INIT;
    int64_t s4[1] = {4};
    tt_tensor *t = tt_empty(s4, 1, TT_INT64, TT_CPU, &err);
    tt_tensor *s, *z;

    assert_int_equal(tt_ops_fill__call(t, tt_scalar_from_double(2.9), &err), 0);
    s = tt_ops_sum_call(t, &err);
    assert_non_null(s);
    assert_int_equal(s->ndim, 0);
    assert_int_equal(*(int64_t *)tt_data(s), 8);
    z = tt_scalar_tensor(tt_scalar_from_int64(7), TT_FLOAT64, TT_CPU, &err);
    assert_true(*(double *)tt_data(z) == 7.0);
    tt_tensor_decref(t);
    tt_tensor_decref(s);
    tt_tensor_decref(z);
}

static int double_it(tt_dtype dtype, void *element, void *ctx)
{
    int *calls = ctx;

    if (++*calls == 3)
        return -1;
    *(double *)element *= 2;
    return 0;
}

static void test_apply_calls_back_and_stops_on_failure(void **state)
{
    tt_error err = TT_ERROR_INIT;
    int64_t s4[1] = {4};
    tt_tensor *t = make_f64(s4, 1, (double[]){1, 2, 3, 4});
    int calls = 0;

    assert_int_equal(tt_apply_(t, double_it, &calls, &err), -1);
    assert_int_equal(err.code, TT_ERR_CALLBACK);
    assert_int_equal(calls, 3);
    assert_true(at_f64(t, 0) == 2 && at_f64(t, 1) == 4 && at_f64(t, 2) == 3);
    tt_tensor_decref(t);
}

static void test_from_blob_aliases_and_refuses_null(void **state)
{
    tt_error err = TT_ERROR_INIT;
    double mine[3] = {1, 2, 3};
    int64_t s3[1] = {3};
    tt_tensor *t = tt_from_blob(mine, s3, 1, TT_FLOAT64, &err);
    tt_tensor *copy;

    assert_non_null(t);
    mine[1] = 20;
    assert_true(at_f64(t, 1) == 20);
    copy = tt_copy(t, TT_INT64, &err);
    assert_int_equal(((int64_t *)tt_data(copy))[1], 20);
    tt_tensor_decref(t);  /* must not free MINE */
    tt_tensor_decref(copy);
    assert_null(tt_from_blob(NULL, s3, 1, TT_FLOAT64, &err));
    assert_string_equal(err.msg, "cannot wrap address 0: it is a null pointer");
}

static void test_empty_tensors(void **state)
{
    tt_error err = TT_ERROR_INIT;
    int64_t s0[1] = {0};
    tt_tensor *e = tt_empty(s0, 1, TT_FLOAT64, TT_CPU, &err);
    tt_tensor *sum = tt_ops_add_call(e, e, tt_scalar_from_int64(1), &err);
    tt_tensor *total = tt_ops_sum_call(e, &err);

    assert_non_null(sum);
    assert_int_equal(tt_numel(sum), 0);
    assert_true(*(double *)tt_data(total) == 0);
    tt_tensor_decref(e);
    tt_tensor_decref(sum);
    tt_tensor_decref(total);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_empty_shapes_and_strides),
        cmocka_unit_test(test_first_error_wins),
        cmocka_unit_test(test_names),
        cmocka_unit_test(test_add_broadcasts),
        cmocka_unit_test(test_add_shape_mismatch),
        cmocka_unit_test(test_int64_add_and_promotion),
        cmocka_unit_test(test_views_share_storage_and_outlive_base),
        cmocka_unit_test(test_matmul_ranks),
        cmocka_unit_test(test_dispatcher_routes_by_device_and_dtype),
        cmocka_unit_test(test_dispatcher_missing_kernel),
        cmocka_unit_test(test_dispatcher_unknown_operator),
        cmocka_unit_test(test_meta_computes_shapes_only),
        cmocka_unit_test(test_sum_fill_and_scalars),
        cmocka_unit_test(test_apply_calls_back_and_stops_on_failure),
        cmocka_unit_test(test_from_blob_aliases_and_refuses_null),
        cmocka_unit_test(test_empty_tensors),
        /* Last: it fills the operator table. */
        cmocka_unit_test(test_dispatcher_registration_errors),
    };
    return cmocka_run_group_tests_name("tinytensor core", tests, NULL, NULL);
}
