/*
 * driver.c: runs a fuzz target where libFuzzer is not installed: every
 * seed, then a deterministic stream of mutations of them (bit flips, bytes
 * that matter to parsers, cuts, repeats, splices), each input in a heap
 * block of exactly its size, until -max_total_time=SECONDS or 2 million
 * inputs.  The same command line as libFuzzer's for what 'make fuzz'
 * passes: options starting with '-' (only -max_total_time is read), then
 * corpus directories.  The input that fails a check (abort) or trips a
 * sanitizer is written to ./crash-driver, as libFuzzer writes crash-HASH.
 */
#include "fuzz.h"

#include <dirent.h>
#include <fcntl.h>
#include <signal.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>

/* The sanitizers' hook for "about to report and exit" (weak: absent in a
 * build without them). */
extern void __sanitizer_set_death_callback(void (*callback)(void)) __attribute__((weak));

typedef struct input {
    uint8_t *data;
    size_t size;
} input;

static uint64_t rng = 0x9e3779b97f4a7c15ull;

static uint64_t next(void)
{
    rng ^= rng << 13;
    rng ^= rng >> 7;
    rng ^= rng << 17;
    return rng;
}

static int load(const char *path, input *out)
{
    FILE *f = fopen(path, "rb");
    if (!f)
        return -1;
    fseek(f, 0, SEEK_END);
    long n = ftell(f);
    fseek(f, 0, SEEK_SET);
    out->size = n > 0 ? (size_t)n : 0;
    out->data = malloc(out->size ? out->size : 1);
    if (!out->data || fread(out->data, 1, out->size, f) != out->size) {
        fclose(f);
        free(out->data);
        return -1;
    }
    fclose(f);
    return 0;
}

/* The input being run, for save_current(). */
static const uint8_t *current;
static size_t current_size;

/* Keep the failing input; called from a signal handler or the sanitizer's
 * death callback, so only async-signal-safe calls. */
static void save_current(void)
{
    int fd = open("crash-driver", O_WRONLY | O_CREAT | O_TRUNC, 0644);
    if (fd < 0)
        return;
    size_t off = 0;
    while (current && off < current_size) {
        ssize_t w = write(fd, current + off, current_size - off);
        if (w <= 0)
            break;
        off += (size_t)w;
    }
    close(fd);
    static const char msg[] = "fuzz driver: the failing input is in ./crash-driver\n";
    if (write(2, msg, sizeof(msg) - 1) < 0)
        return;
}

static void on_abort(int sig)
{
    save_current();
    signal(sig, SIG_DFL);
    raise(sig);
}

/* Run one input from an exact-size copy (the target may keep nothing). */
static void run_one(const uint8_t *data, size_t size)
{
    uint8_t *copy = malloc(size ? size : 1);
    memcpy(copy, data, size);
    current = copy;
    current_size = size;
    LLVMFuzzerTestOneInput(copy, size);
    current = NULL;
    free(copy);
}

static size_t mutate(const input *a, const input *b, uint8_t *out, size_t cap)
{
    static const uint8_t interesting[] = {0, 0xff, 0x80, 0xc3, '\n', '\r', '"', '\\', '{',
                                          '}', '[', ']', ',', '=', '^', '*', '~', '0', '9'};
    size_t n = a->size < cap ? a->size : cap;
    memcpy(out, a->data, n);
    int rounds = 1 + (int)(next() % 4);
    for (int r = 0; r < rounds; r++) {
        size_t at = n ? (size_t)(next() % n) : 0;
        switch (next() % 6) {
        case 0: /* flip a bit */
            if (n)
                out[at] ^= (uint8_t)(1u << (next() % 8));
            break;
        case 1: /* a byte that matters to parsers */
            if (n)
                out[at] = interesting[next() % sizeof(interesting)];
            break;
        case 2: /* cut the tail */
            n = at;
            break;
        case 3: { /* drop a range */
            size_t len = n - at ? (size_t)(next() % (n - at)) : 0;
            memmove(out + at, out + at + len, n - at - len);
            n -= len;
            break;
        }
        case 4: { /* repeat a range */
            size_t len = n - at ? 1 + (size_t)(next() % (n - at)) : 0;
            if (len > 256)
                len = 256;
            if (n + len <= cap) {
                memmove(out + at + len, out + at, n - at);
                n += len;
            }
            break;
        }
        default: { /* splice in a piece of another seed */
            if (!b->size)
                break;
            size_t from = (size_t)(next() % b->size);
            size_t len = 1 + (size_t)(next() % (b->size - from));
            if (at + len > cap)
                len = cap - at;
            memcpy(out + at, b->data + from, len);
            if (at + len > n)
                n = at + len;
            break;
        }
        }
    }
    return n;
}

int main(int argc, char **argv)
{
    double seconds = 20;
    input *seeds = NULL;
    size_t n_seeds = 0;

    for (int i = 1; i < argc; i++) {
        if (argv[i][0] == '-') {
            if (!strncmp(argv[i], "-max_total_time=", 16))
                seconds = atof(argv[i] + 16);
            continue;
        }
        DIR *d = opendir(argv[i]);
        struct dirent *e;
        while (d && (e = readdir(d))) {
            char path[4096];
            struct stat st;
            snprintf(path, sizeof(path), "%s/%s", argv[i], e->d_name);
            if (stat(path, &st) < 0 || !S_ISREG(st.st_mode))
                continue;
            seeds = realloc(seeds, (n_seeds + 1) * sizeof(*seeds));
            if (load(path, &seeds[n_seeds]) == 0)
                n_seeds++;
        }
        if (d)
            closedir(d);
    }
    if (!n_seeds) { /* nothing to start from: the empty input */
        seeds = calloc(1, sizeof(*seeds));
        seeds[0].data = malloc(1);
        n_seeds = 1;
    }

    size_t cap = 0;
    for (size_t i = 0; i < n_seeds; i++)
        cap = seeds[i].size > cap ? seeds[i].size : cap;
    cap = cap * 2 + 64;
    uint8_t *buf = malloc(cap);
    unsigned long runs = 0;
    struct timespec t0, t;
    clock_gettime(CLOCK_MONOTONIC, &t0);

    signal(SIGABRT, on_abort);
    signal(SIGSEGV, on_abort);
    if (__sanitizer_set_death_callback)
        __sanitizer_set_death_callback(save_current);
    for (size_t i = 0; i < n_seeds; i++, runs++)
        run_one(seeds[i].data, seeds[i].size);
    for (; runs < 2000000; runs++) {
        if (!(runs % 256)) {
            clock_gettime(CLOCK_MONOTONIC, &t);
            if ((t.tv_sec - t0.tv_sec) + (t.tv_nsec - t0.tv_nsec) / 1e9 >= seconds)
                break;
        }
        const input *a = &seeds[next() % n_seeds], *b = &seeds[next() % n_seeds];
        size_t n = mutate(a, b, buf, cap);
        run_one(buf, n);
    }
    printf("fuzz driver: %lu inputs from %zu seeds, no failure\n", runs, n_seeds);
    for (size_t i = 0; i < n_seeds; i++)
        free(seeds[i].data);
    free(seeds);
    free(buf);
    return 0;
}
