/*
 * fuzz_core.c: the core-file reader (src/native/core.c) and unwinding a
 * core's threads (src/native/unwind.c, libdw) against arbitrary bytes
 * taken as a core file: what 'tdebug stacks --core' does with one.
 *
 * FUZZ_SOURCES: src/native/core.c src/native/unwind.c src/native/frames.c src/native/elf.c src/process/procfs.c src/process/pause.c src/base/common.c
 * FUZZ_LIBS: -ldw -lelf -lbfd
 * FUZZ_SEEDS: tests/fixtures/core *.core
 *
 * The input is written to a memory file and opened by its /proc/self/fd
 * path, as a core on disk is.  What must hold for any input:
 *  - opening fails with a message naming the file, or gives a core with
 *    at least one thread, whose memory map is sorted, without empty or
 *    overlapping ranges (tdb_maps_find() searches it by halves);
 *  - memory reads of the core answer the same through tdb_mem_read() and
 *    tdb_mem_read_full(), and never more than was asked;
 *  - each thread unwinds to at most the frames asked, the first one at
 *    the thread's instruction pointer, or fails with a reason;
 *  - nothing is read outside the file or leaked, per input (ASan, UBSan,
 *    LeakSanitizer): the leak libdw's own core threads had is gone.
 */
#include "fuzz.h"

#include "native/core.h"
#include "native/unwind.h"

#include <string.h>
#include <unistd.h>

#define MAX_FRAMES 16

static void check_memory(tdb_core *c, uint64_t addr)
{
    tdb_mem m;
    uint8_t a[64], b[64];
    tdb_core_mem(c, &m);
    ssize_t n = tdb_mem_read(&m, addr, a, sizeof(a));
    int full = tdb_mem_read_full(&m, addr, b, sizeof(b));
    TDB_FUZZ_CHECK(n <= (ssize_t)sizeof(a), "a read gave more than was asked");
    TDB_FUZZ_CHECK((full == 0) == (n == (ssize_t)sizeof(a)),
                   "a full read and a read disagree on what is there");
    TDB_FUZZ_CHECK(full != 0 || !memcmp(a, b, sizeof(a)), "two reads of one address differ");
    tdb_mem_close(&m);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const char *path = tdb_fuzz_file(data, size);

    tdb_core *c = NULL;
    tdb_error err = {0};
    if (tdb_core_open(path, NULL, &c, &err) < 0) {
        TDB_FUZZ_CHECK(strstr(err.msg, path) != NULL, "a core refused without naming it");
        return 0;
    }
    TDB_FUZZ_CHECK(tdb_core_n_threads(c) >= 1, "a core without threads was opened");
    const tdb_maps *maps = tdb_core_maps(c);
    for (size_t i = 0; i < maps->n; i++) {
        TDB_FUZZ_CHECK(maps->v[i].start < maps->v[i].end, "an empty or inverted mapping");
        TDB_FUZZ_CHECK(maps->v[i].path != NULL, "a mapping without its file");
        TDB_FUZZ_CHECK(i == 0 || maps->v[i - 1].end <= maps->v[i].start,
                       "the memory map is not sorted, or its ranges overlap");
        if (i < 4)
            check_memory(c, maps->v[i].start);
    }
    for (char *const *p = tdb_core_problems(c); p && *p; p++)
        TDB_FUZZ_CHECK((*p)[0] != '\0', "an empty problem");

    tdb_capture *cap = tdb_capture_from_core(c, &err);
    for (size_t i = 0; i < tdb_core_n_threads(c) && i < 8; i++) {
        const tdb_core_thread *t = tdb_core_thread_at(c, i);
        check_memory(c, t->regs[19]); /* rsp */
        if (!cap)
            continue;
        tdb_native_frame *f = NULL;
        size_t n = 0;
        char *note = NULL;
        tdb_error_clear(&err);
        if (tdb_capture_unwind(cap, t->tid, MAX_FRAMES, NULL, &f, &n, &note, &err) < 0) {
            TDB_FUZZ_CHECK(err.set && err.msg[0], "an unwind failed without a reason");
            continue;
        }
        TDB_FUZZ_CHECK(n >= 1 && n <= MAX_FRAMES, "more frames than asked, or none");
        const tdb_core_thread *first = t; /* the one a repeated tid names */
        for (size_t j = 0; j < i; j++)
            if (tdb_core_thread_at(c, j)->tid == t->tid && first == t)
                first = tdb_core_thread_at(c, j);
        TDB_FUZZ_CHECK(f[0].pc == first->regs[16], "the first frame is not at the thread's pc");
        tdb_native_frames_free(f, n);
        free(note);
    }
    tdb_capture_free(cap);
    tdb_core_free(c);
    return 0;
}
