/*
 * tt_register.c: fill the dispatcher's table when libtt_core.so is loaded.
 *
 * torch generates this (build/aten/src/ATen/RegisterCPU.cpp,
 * RegisterMeta.cpp): TORCH_LIBRARY_IMPL(aten, CPU, m) { m.impl("add.Tensor",
 * ...); ... } blocks whose static initializers run while the dynamic loader
 * maps libtorch_cpu.so during 'import torch'.  A constructor does the same
 * here: break on tt_register_kernels to watch it happen inside dlopen.
 */
#include "tt_dispatcher.h"
#include "tt_native.h"

#include <stdio.h>

int tt_register_kernels(tt_error *err)
{
    for (int dt = 0; dt < TT_DTYPE_COUNT; dt++) {
        tt_dtype dtype = (tt_dtype)dt;

        /* RegisterCPU.cpp */
        if (TT_REGISTER("add", TT_CPU, dtype, tt_native_add, err) < 0 ||
            TT_REGISTER("mul", TT_CPU, dtype, tt_native_mul, err) < 0 ||
            TT_REGISTER("sum", TT_CPU, dtype, tt_native_sum, err) < 0 ||
            TT_REGISTER("fill_", TT_CPU, dtype, tt_native_fill_, err) < 0)
            return -1;
        /* RegisterMeta.cpp: shapes only, any dtype; no meta sum, on purpose,
         * so that the table has a gap to show. */
        if (TT_REGISTER("add", TT_META, dtype, tt_meta_add, err) < 0 ||
            TT_REGISTER("mul", TT_META, dtype, tt_meta_mul, err) < 0 ||
            TT_REGISTER("matmul", TT_META, dtype, tt_meta_matmul, err) < 0 ||
            TT_REGISTER("fill_", TT_META, dtype, tt_meta_fill_, err) < 0)
            return -1;
    }
    /* matmul computes in float64 only: int64 matmul has no CPU kernel. */
    return TT_REGISTER("matmul", TT_CPU, TT_FLOAT64, tt_native_matmul, err);
}

__attribute__((constructor)) static void register_at_load(void)
{
    tt_error err = TT_ERROR_INIT;

    if (tt_register_kernels(&err) < 0)
        fprintf(stderr, "tinytensor: %s\n", err.msg);
}
