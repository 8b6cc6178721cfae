/* process/procfs.c: /proc readers and process memory, for a process that may exit
 * at any moment. */
#include "process/procfs.h"

#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/uio.h>
#include <unistd.h>

/* Bounds on what a (possibly hostile) /proc can make us allocate. */
#define MAX_TASKS 65536
#define MAX_TREE 65536

/* /proc/PID/... gone means the process exited: say so with ESRCH. */
static void proc_error(tdb_error *err, pid_t pid, const char *what)
{
    int e = errno;
    if (e == ENOENT || e == ESRCH)
        tdb_error_set(err, ESRCH, "cannot read %s of pid %d: no such process", what, (int)pid);
    else
        tdb_error_set(err, e, "cannot read %s of pid %d: %s", what, (int)pid, strerror(e));
    errno = e;
}

/* The hex number at *P (at most 16 digits), *P moved past it; -1 when
 * there is none. */
static int hex_field(const char **p, uint64_t *out)
{
    uint64_t v = 0;
    const char *s = *p;
    int n = 0;
    for (;; s++, n++) {
        int d;
        if (*s >= '0' && *s <= '9')
            d = *s - '0';
        else if (*s >= 'a' && *s <= 'f')
            d = *s - 'a' + 10;
        else if (*s >= 'A' && *s <= 'F')
            d = *s - 'A' + 10;
        else
            break;
        if (n == 16)
            return -1;
        v = v << 4 | (uint64_t)d;
    }
    if (!n)
        return -1;
    *p = s;
    *out = v;
    return 0;
}

/* Past the word at P (non-blanks) and the blanks after it. */
static const char *next_word(const char *p)
{
    while (*p && *p != ' ' && *p != '\t' && *p != '\n')
        p++;
    while (*p == ' ' || *p == '\t')
        p++;
    return p;
}

/* "START-END PERMS OFFSET DEV INODE [PATH]", by hand: a process with
 * torch has some 1700 lines, read for every process 'stacks' looks at,
 * and sscanf() took most of the time. */
static int parse_map_line(char *line, tdb_map *m)
{
    const char *p = line;
    uint64_t start, end, off;

    if (hex_field(&p, &start) < 0 || *p++ != '-' || hex_field(&p, &end) < 0 || *p++ != ' ')
        return -1;
    size_t plen = strcspn(p, " \t\n");
    if (!plen || plen > sizeof(m->perms) - 1)
        return -1;
    memcpy(m->perms, p, plen);
    m->perms[plen] = '\0';
    p = next_word(p);
    if (hex_field(&p, &off) < 0 || (*p != ' ' && *p != '\t'))
        return -1;
    p = next_word(p);           /* at DEV */
    if (!*p || *p == '\n')
        return -1;
    p = next_word(p);           /* at INODE */
    if (!*p || *p == '\n')
        return -1;
    p = next_word(p);           /* at PATH, or the end */
    m->start = start;
    m->end = end;
    m->offset = off;
    size_t len = strcspn(p, "\n");
    m->path = len ? tdb_xstrndup(p, len) : NULL;
    return 0;
}

int tdb_maps_read(pid_t pid, tdb_maps *out, tdb_error *err)
{
    char path[64];
    size_t len = 0;
    snprintf(path, sizeof(path), "/proc/%d/maps", (int)pid);
    char *text = tdb_read_file(path, &len, NULL);
    if (!text || len == 0) {
        /* An empty map is a zombie or a kernel thread. */
        if (text)
            errno = ESRCH;
        free(text);
        proc_error(err, pid, "the memory map");
        return -1;
    }
    tdb_maps maps = {NULL, 0, text};
    size_t cap = 0;
    for (char *line = text; *line;) {
        char *nl = strchr(line, '\n');
        if (nl)
            *nl = '\0';
        tdb_map m;
        if (parse_map_line(line, &m) == 0) {
            TDB_GROW(maps.v, maps.n, cap);
            maps.v[maps.n++] = m;
        }
        if (!nl)
            break;
        *nl = '\n';
        line = nl + 1;
    }
    *out = maps;
    return 0;
}

void tdb_maps_free(tdb_maps *m)
{
    if (!m)
        return;
    for (size_t i = 0; i < m->n; i++)
        free(m->v[i].path);
    free(m->v);
    free(m->text);
    m->v = NULL;
    m->text = NULL;
    m->n = 0;
}

const tdb_map *tdb_maps_find(const tdb_maps *m, uint64_t addr)
{
    size_t lo = 0, hi = m->n;
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (addr < m->v[mid].start)
            hi = mid;
        else if (addr >= m->v[mid].end)
            lo = mid + 1;
        else
            return &m->v[mid];
    }
    return NULL;
}

static int cmp_pid(const void *a, const void *b)
{
    pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;
    return (x > y) - (x < y);
}

int tdb_proc_tasks(pid_t pid, pid_t **out, size_t *n, tdb_error *err)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/task", (int)pid);
    DIR *d = opendir(path);
    if (!d) {
        proc_error(err, pid, "the threads");
        return -1;
    }
    pid_t *v = NULL;
    size_t count = 0, cap = 0;
    struct dirent *e;
    while ((e = readdir(d)) && count < MAX_TASKS) {
        long tid;
        if (tdb_parse_long(e->d_name, 1, INT32_MAX, &tid) < 0)
            continue;
        TDB_GROW(v, count, cap);
        v[count++] = (pid_t)tid;
    }
    closedir(d);
    if (count == 0) {
        free(v);
        errno = ESRCH;
        proc_error(err, pid, "the threads");
        return -1;
    }
    /* The thread group leader (tid == pid) first, then by creation order,
     * which tids approximate. */
    qsort(v, count, sizeof(*v), cmp_pid);
    for (size_t i = 0; i < count; i++) {
        if (v[i] == pid) {
            memmove(v + 1, v, i * sizeof(*v));
            v[0] = pid;
            break;
        }
    }
    *out = v;
    *n = count;
    return 0;
}

/* Append the children of every thread of PID (from the task/TID/children
 * files) to V. */
static void add_children(pid_t pid, pid_t **v, size_t *n, size_t *cap)
{
    pid_t *tasks = NULL;
    size_t ntasks = 0;
    if (tdb_proc_tasks(pid, &tasks, &ntasks, NULL) < 0)
        return;
    for (size_t t = 0; t < ntasks; t++) {
        char path[96];
        snprintf(path, sizeof(path), "/proc/%d/task/%d/children", (int)pid, (int)tasks[t]);
        char *text = tdb_read_file(path, NULL, NULL);
        if (!text)
            continue;
        char *save = NULL;
        for (char *tok = strtok_r(text, " \n", &save); tok; tok = strtok_r(NULL, " \n", &save)) {
            long child;
            if (tdb_parse_long(tok, 1, INT32_MAX, &child) < 0 || *n >= MAX_TREE)
                continue;
            TDB_GROW(*v, *n, *cap);
            (*v)[(*n)++] = (pid_t)child;
        }
        free(text);
    }
    free(tasks);
}

int tdb_proc_descendants(pid_t pid, pid_t **out, size_t *n, tdb_error *err)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d", (int)pid);
    if (access(path, F_OK) < 0) {
        proc_error(err, pid, "the process tree");
        return -1;
    }
    /* Depth first with an explicit stack; RESULT doubles as the visited
     * set, so a pid reused while we read cannot make us loop. */
    pid_t *result = NULL, *stack = NULL;
    size_t nres = 0, capres = 0, nstack = 0, capstack = 0;
    add_children(pid, &stack, &nstack, &capstack);
    /* Children are pushed in order; pop from the end, so reverse first to
     * visit them in the order the kernel lists them. */
    for (size_t i = 0; i < nstack / 2; i++) {
        pid_t t = stack[i];
        stack[i] = stack[nstack - 1 - i];
        stack[nstack - 1 - i] = t;
    }
    while (nstack > 0 && nres < MAX_TREE) {
        pid_t p = stack[--nstack];
        int seen = p == pid;
        for (size_t i = 0; i < nres && !seen; i++)
            seen = result[i] == p;
        if (seen)
            continue;
        TDB_GROW(result, nres, capres);
        result[nres++] = p;
        size_t before = nstack;
        add_children(p, &stack, &nstack, &capstack);
        for (size_t i = 0; i < (nstack - before) / 2; i++) {
            pid_t t = stack[before + i];
            stack[before + i] = stack[nstack - 1 - i];
            stack[nstack - 1 - i] = t;
        }
    }
    free(stack);
    *out = result;
    *n = nres;
    return 0;
}

char *tdb_proc_comm(pid_t pid, pid_t tid)
{
    char path[96];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/comm", (int)pid, (int)(tid ? tid : pid));
    char *s = tdb_read_file(path, NULL, NULL);
    if (s)
        s[strcspn(s, "\n")] = '\0';
    return s;
}

pid_t tdb_proc_with_arg(const char *arg)
{
    DIR *d = opendir("/proc");
    struct dirent *de;
    size_t al = strlen(arg);
    pid_t found = 0, self = getpid();

    while (d && !found && (de = readdir(d))) {
        char *end, path[300];
        long pid = strtol(de->d_name, &end, 10);
        size_t len = 0;
        if (*end || pid <= 0 || pid == self)
            continue;
        snprintf(path, sizeof(path), "/proc/%s/cmdline", de->d_name);
        char *raw = tdb_read_file(path, &len, NULL);
        /* Every argument after the first, each ended by a NUL. */
        for (size_t i = raw ? strnlen(raw, len) + 1 : len; i < len && !found;) {
            size_t n = strnlen(raw + i, len - i);
            if (n == al && !memcmp(raw + i, arg, al))
                found = (pid_t)pid;
            i += n + 1;
        }
        free(raw);
    }
    if (d)
        closedir(d);
    return found;
}

char *tdb_proc_cmdline(pid_t pid, size_t max)
{
    char path[64];
    size_t len = 0;
    snprintf(path, sizeof(path), "/proc/%d/cmdline", (int)pid);
    char *raw = tdb_read_file(path, &len, NULL);
    if (!raw)
        return NULL;
    if (len == 0) {
        free(raw);
        return NULL;
    }
    tdb_buf b = TDB_BUF_INIT;
    for (size_t i = 0; i < len; i++) {
        if (b.len >= max) {
            tdb_buf_adds(&b, "...");
            break;
        }
        unsigned char c = (unsigned char)raw[i];
        if (c == '\0') {
            if (i + 1 < len)
                tdb_buf_addc(&b, ' ');
        } else {
            tdb_buf_addc(&b, isprint(c) || c >= 0x80 ? (char)c : '?');
        }
    }
    free(raw);
    return tdb_buf_detach(&b);
}

const char *tdb_status_value(const char *text, const char *name)
{
    size_t n = strlen(name);
    for (const char *line = text; line && *line;) {
        if (strncmp(line, name, n) == 0 && line[n] == ':') {
            const char *v = line + n + 1;
            while (*v == ' ' || *v == '\t')
                v++;
            return v;
        }
        line = strchr(line, '\n');
        if (line)
            line++;
    }
    return NULL;
}

const char *tdb_stat_fields(const char *text, const char **comm, size_t *comm_len)
{
    const char *open = strchr(text, '(');
    const char *close = strrchr(text, ')'); /* the name may hold ") " itself */
    if (!open || !close || close < open || close[1] != ' ')
        return NULL;
    if (comm)
        *comm = open + 1;
    if (comm_len)
        *comm_len = (size_t)(close - open - 1);
    return close + 2;
}

/* The first number after FIELD in /proc/PID/status, or -1. */
static long status_field(pid_t pid, const char *field)
{
    char path[64];
    snprintf(path, sizeof(path), "/proc/%d/status", (int)pid);
    char *s = tdb_read_file(path, NULL, NULL);
    if (!s)
        return -1;
    const char *v = tdb_status_value(s, field);
    long n = v ? strtol(v, NULL, 10) : -1;
    free(s);
    return n;
}

pid_t tdb_proc_tracer(pid_t pid)
{
    return (pid_t)status_field(pid, "TracerPid");
}

pid_t tdb_proc_tgid(pid_t tid)
{
    return (pid_t)status_field(tid, "Tgid");
}

char tdb_proc_state(pid_t pid, pid_t tid)
{
    char path[96];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/stat", (int)pid, (int)(tid ? tid : pid));
    char *s = tdb_read_file(path, NULL, NULL);
    if (!s)
        return 0;
    const char *fields = tdb_stat_fields(s, NULL, NULL);
    char state = fields ? fields[0] : 0;
    free(s);
    return state;
}

int tdb_proc_syscall(pid_t pid, pid_t tid, long *nr, uint64_t *arg0)
{
    char path[96];
    snprintf(path, sizeof(path), "/proc/%d/task/%d/syscall", (int)pid, (int)tid);
    char *s = tdb_read_file(path, NULL, NULL);
    if (!s)
        return -1;
    char *end;
    errno = 0;
    long n = strtol(s, &end, 10);
    int rc = -1;
    /* "running", or "-1 SP PC" for a thread stopped outside a call. */
    if (!errno && end != s && n >= 0 && *end == ' ') {
        unsigned long long a = strtoull(end + 1, NULL, 16);
        *nr = n;
        *arg0 = a;
        rc = 0;
    }
    free(s);
    return rc;
}

void tdb_mem_init(tdb_mem *m, pid_t pid)
{
    m->pid = pid;
    m->fd = -1;
    m->use_fd = 0;
    m->reads = 0;
    m->image = NULL;
    m->image_ctx = NULL;
}

void tdb_mem_init_image(tdb_mem *m, tdb_mem_reader reader, void *ctx)
{
    tdb_mem_init(m, 0);
    m->image = reader;
    m->image_ctx = ctx;
}

void tdb_mem_close(tdb_mem *m)
{
    if (m && m->fd >= 0) {
        close(m->fd);
        m->fd = -1;
    }
}

static ssize_t read_via_fd(tdb_mem *m, uint64_t addr, void *buf, size_t len)
{
    if (m->fd < 0) {
        char path[64];
        snprintf(path, sizeof(path), "/proc/%d/mem", (int)m->pid);
        m->fd = open(path, O_RDONLY | O_CLOEXEC);
        if (m->fd < 0)
            return -1;
    }
    size_t done = 0;
    while (done < len) {
        ssize_t r = pread(m->fd, (char *)buf + done, len - done, (off_t)(addr + done));
        if (r < 0 && errno == EINTR)
            continue;
        if (r <= 0)
            break;
        done += (size_t)r;
    }
    if (done == 0) {
        errno = EFAULT;
        return -1;
    }
    return (ssize_t)done;
}

ssize_t tdb_mem_read(tdb_mem *m, uint64_t addr, void *buf, size_t len)
{
    if (len == 0)
        return 0;
    /* Addresses above the x86-64/arm64 user half are never readable; a
     * corrupt pointer must not become a huge pread offset. */
    if (addr == 0 || addr + len < addr || addr + len > (1ULL << 56)) {
        errno = EFAULT;
        return -1;
    }
    m->reads++;
    if (m->image)
        return m->image(m->image_ctx, addr, buf, len);
    if (!m->use_fd) {
        struct iovec local = {buf, len};
        struct iovec remote = {(void *)(uintptr_t)addr, len};
        ssize_t r = process_vm_readv(m->pid, &local, 1, &remote, 1, 0);
        if (r > 0)
            return r;
        if (r == 0) {
            errno = EFAULT;
            return -1;
        }
        if (errno != ENOSYS && errno != EPERM)
            return -1;
        /* EPERM from process_vm_readv where /proc/PID/mem may still work
         * (seccomp filters); a real permission refusal fails both. */
        m->use_fd = 1;
    }
    return read_via_fd(m, addr, buf, len);
}

int tdb_mem_read_full(tdb_mem *m, uint64_t addr, void *buf, size_t len)
{
    ssize_t r = tdb_mem_read(m, addr, buf, len);
    if (r < 0)
        return -1;
    if ((size_t)r != len) {
        errno = EFAULT;
        return -1;
    }
    return 0;
}
