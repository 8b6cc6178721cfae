/*
 * nativevals_bench.c: the timings bench/nativevals.py prints, each one
 * JSON line on stdout.
 *
 *   nativevals_bench calibrate PYTHON TORCH_DIR
 *       one calibration in a helper process: {"seconds": S}
 *   nativevals_bench open PID
 *       tdb_torch_open() then tdb_torch_layout() on process PID (the
 *       cache already written): {"ms": T, "origin": "cache"|...}
 *   nativevals_bench decode PID OBJ N
 *       decode the Python tensor object at OBJ in PID N times (layout from
 *       the cache): {"ms_per_decode": T, "reads_per_decode": R}
 */
#include "process/procfs.h"
#include "torch/tensor.h"
#include "torch/layout.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static double now(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (double)ts.tv_sec + (double)ts.tv_nsec / 1e9;
}

static int fail(const tdb_error *e)
{
    fprintf(stderr, "nativevals_bench: %s\n", e->msg);
    return 1;
}

int main(int argc, char **argv)
{
    tdb_error e = {0};
    if (argc == 4 && !strcmp(argv[1], "calibrate")) {
        tdb_tensor_layout l;
        double t0 = now();
        if (tdb_torch_calibrate(argv[2], argv[3], &l, NULL, &e) < 0)
            return fail(&e);
        printf("{\"seconds\": %.3f}\n", now() - t0);
        return 0;
    }
    if ((argc == 3 && !strcmp(argv[1], "open")) || (argc == 5 && !strcmp(argv[1], "decode"))) {
        pid_t pid = (pid_t)strtol(argv[2], NULL, 10);
        tdb_torch *t = NULL;
        double t0 = now();
        if (tdb_torch_open(pid, NULL, &t, &e) != 0)
            return fail(&e);
        const tdb_tensor_layout *l = tdb_torch_layout(t, &e);
        double dt = now() - t0;
        if (!l)
            return fail(&e);
        if (argc == 3) {
            int origin = tdb_torch_layout_origin(t, NULL);
            printf("{\"ms\": %.3f, \"origin\": \"%s\"}\n", dt * 1000,
                   origin == 1 ? "cache" : origin == 2 ? "calibration" : "none");
        } else {
            uint64_t obj = strtoull(argv[3], NULL, 0);
            long n = strtol(argv[4], NULL, 10);
            tdb_mem m;
            tdb_mem_init(&m, pid);
            t0 = now();
            for (long i = 0; i < n; i++) {
                json_t *j = tdb_tensor_decode_pyobject(&m, l, obj, -1, &e);
                if (!j)
                    return fail(&e);
                json_decref(j);
            }
            dt = now() - t0;
            printf("{\"ms_per_decode\": %.4f, \"reads_per_decode\": %.1f}\n", dt * 1000 / (double)n,
                   (double)m.reads / (double)n);
            tdb_mem_close(&m);
        }
        tdb_torch_free(t);
        return 0;
    }
    fprintf(stderr, "usage: nativevals_bench calibrate PYTHON TORCH_DIR | open PID | decode PID OBJ N\n");
    return 2;
}
