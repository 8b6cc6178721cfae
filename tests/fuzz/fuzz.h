/*
 * fuzz.h: what every tests/fuzz/fuzz_NAME.c target shares.
 *
 * A target defines LLVMFuzzerTestOneInput() and names, in its header
 * comment, the sources it links (a line "FUZZ_SOURCES: a.c b.c"), the
 * system libraries they need besides jansson ("FUZZ_LIBS: -lbfd",
 * optional) and the seed files it starts from ("FUZZ_SEEDS: DIR PATTERN":
 * a directory and a shell pattern, "tests/fixtures/mi *.mi").  'make fuzz' (run by 'make asan') builds each target and runs it for
 * FUZZ_SECONDS: with clang's libFuzzer when it is installed (clang-14,
 * libclang-rt-14-dev), else with tests/fuzz/driver.c, a deterministic loop
 * of mutations of the seeds under the same sanitizers.  Either way each
 * input sits in a heap block of exactly its size.
 */
#ifndef TDB_FUZZ_H
#define TDB_FUZZ_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

/* A property that must hold for every input: abort (a crash the fuzzer
 * records, with its input) when it does not. */
#define TDB_FUZZ_CHECK(cond, what)                                           \
    do {                                                                     \
        if (!(cond)) {                                                       \
            fprintf(stderr, "fuzz: %s (%s:%d)\n", what, __FILE__, __LINE__); \
            abort();                                                         \
        }                                                                    \
    } while (0)

/* DATA as a file: a memory file, rewritten for each input, opened by its
 * /proc/self/fd path as a file on disk is.  The path is static. */
__attribute__((unused)) static const char *tdb_fuzz_file(const uint8_t *data, size_t size)
{
    static int fd = -1;
    static char path[64];
    if (fd < 0) {
        fd = memfd_create("tdebug-fuzz", MFD_CLOEXEC);
        TDB_FUZZ_CHECK(fd >= 0, "memfd_create failed");
        snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
    }
    TDB_FUZZ_CHECK(ftruncate(fd, 0) == 0 && pwrite(fd, data, size, 0) == (ssize_t)size,
                   "cannot write the input to the memory file");
    return path;
}

#endif
