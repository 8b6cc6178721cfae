/* process/tcp.c: TCP sockets from /proc/net/tcp{,6}; see process/tcp.h. */
#include "process/tcp.h"

#include <arpa/inet.h>
#include <dirent.h>
#include <errno.h>
#include <netdb.h>
#include <netinet/in.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

int tdb_tcp_parse_endpoint(const char *s, char **out_host, int *out_port, tdb_error *err)
{
    const char *port_s;
    char *host;
    long port;

    if (!s || !*s) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, 0, "empty address (expected HOST:PORT)");
        return -1;
    }
    if (s[0] == '[') {
        const char *close = strchr(s, ']');
        if (!close || close[1] != ':') {
            tdb_error_set_exit(err, TDB_EXIT_USAGE, 0, "bad address '%s' (expected [IPV6]:PORT)", s);
            return -1;
        }
        host = tdb_xstrndup(s + 1, (size_t)(close - s - 1));
        port_s = close + 2;
    } else {
        const char *colon = strrchr(s, ':');
        if (colon && strchr(s, ':') != colon) {
            tdb_error_set_exit(err, TDB_EXIT_USAGE, 0,
                               "bad address '%s' (write an IPv6 address as [ADDRESS]:PORT)", s);
            return -1;
        }
        host = colon ? tdb_xstrndup(s, (size_t)(colon - s)) : tdb_xstrdup("127.0.0.1");
        port_s = colon ? colon + 1 : s;
    }
    if (!*host || tdb_parse_long(port_s, 1, 65535, &port) < 0) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, 0,
                           "bad address '%s' (expected HOST:PORT with a port from 1 to 65535)", s);
        free(host);
        return -1;
    }
    *out_host = host;
    *out_port = (int)port;
    return 0;
}

int tdb_tcp_resolve(const char *host, tdb_tcp_addr *out, int max, tdb_error *err)
{
    struct addrinfo hints = {0}, *res = NULL;
    int n = 0, rc;

    if (inet_pton(AF_INET, host, out[0].addr) == 1 && max > 0) {
        out[0].family = AF_INET;
        return 1;
    }
    if (inet_pton(AF_INET6, host, out[0].addr) == 1 && max > 0) {
        out[0].family = AF_INET6;
        return 1;
    }
    hints.ai_socktype = SOCK_STREAM;
    rc = getaddrinfo(host, NULL, &hints, &res);
    if (rc != 0) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, 0, "cannot resolve '%s': %s", host, gai_strerror(rc));
        return -1;
    }
    for (struct addrinfo *ai = res; ai && n < max; ai = ai->ai_next) {
        if (ai->ai_family == AF_INET) {
            out[n].family = AF_INET;
            memcpy(out[n].addr, &((struct sockaddr_in *)ai->ai_addr)->sin_addr, 4);
            n++;
        } else if (ai->ai_family == AF_INET6) {
            out[n].family = AF_INET6;
            memcpy(out[n].addr, &((struct sockaddr_in6 *)ai->ai_addr)->sin6_addr, 16);
            n++;
        }
    }
    freeaddrinfo(res);
    if (n == 0) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, 0, "cannot resolve '%s': no IPv4 or IPv6 address", host);
        return -1;
    }
    return n;
}

/* "0100007F:1F90": the kernel prints each 32-bit word of the address as a
 * host-order integer, so reading it back into a u32 gives the bytes in
 * network order again. */
static int parse_addr(const char *s, int words, unsigned char *addr, unsigned short *port)
{
    for (int w = 0; w < words; w++) {
        char chunk[9];
        unsigned int v;
        memcpy(chunk, s + 8 * w, 8);
        chunk[8] = '\0';
        if (sscanf(chunk, "%8x", &v) != 1)
            return -1;
        memcpy(addr + 4 * w, &v, 4);
    }
    unsigned int p;
    if (s[8 * words] != ':' || sscanf(s + 8 * words + 1, "%4x", &p) != 1)
        return -1;
    *port = (unsigned short)p;
    return 0;
}

static int read_table(const char *path, int family, tdb_tcp_socket **v, size_t *n, size_t *cap,
                      tdb_error *err)
{
    FILE *f = fopen(path, "re");
    char line[512];
    int words = family == AF_INET ? 1 : 4;

    if (!f) {
        if (errno == ENOENT) /* no IPv6 in this kernel */
            return 0;
        tdb_error_errno(err, "cannot read '%s'", path);
        return -1;
    }
    if (!fgets(line, sizeof(line), f)) { /* the header */
        fclose(f);
        return 0;
    }
    while (fgets(line, sizeof(line), f)) {
        char local[64], remote[64];
        unsigned int st, uid;
        unsigned long inode;
        /* sl local rem st tx:rx tr:when retrnsmt uid timeout inode */
        if (sscanf(line, " %*s %63s %63s %x %*s %*s %*s %u %*s %lu", local, remote, &st, &uid,
                   &inode) != 5)
            continue;
        tdb_tcp_socket s = {0};
        s.family = family;
        s.state = (int)st;
        s.uid = uid;
        s.inode = inode;
        if (parse_addr(local, words, s.local, &s.local_port) < 0 ||
            parse_addr(remote, words, s.remote, &s.remote_port) < 0)
            continue;
        if (*n == *cap) {
            *cap = *cap ? *cap * 2 : 64;
            *v = tdb_xrealloc(*v, *cap * sizeof(**v));
        }
        (*v)[(*n)++] = s;
    }
    fclose(f);
    return 0;
}

/* ROOT/PID/NAME, or ROOT/NAME for pid 0: a new string. */
static char *proc_file(const char *root, pid_t pid, const char *name)
{
    if (!root)
        root = "/proc";
    return pid > 0 ? tdb_xasprintf("%s/%d/%s", root, (int)pid, name)
                   : tdb_xasprintf("%s/%s", root, name);
}

int tdb_tcp_sockets(const char *root, pid_t pid, tdb_tcp_socket **out, size_t *out_n,
                    tdb_error *err)
{
    tdb_tcp_socket *v = NULL;
    size_t n = 0, cap = 0;
    char *p4 = proc_file(root, pid, "net/tcp"), *p6 = proc_file(root, pid, "net/tcp6");
    int rc = -1;

    if (read_table(p4, AF_INET, &v, &n, &cap, err) < 0 ||
        read_table(p6, AF_INET6, &v, &n, &cap, err) < 0) {
        free(v);
        goto cleanup;
    }
    *out = v;
    *out_n = n;
    rc = 0;
cleanup:
    free(p4);
    free(p6);
    return rc;
}

static int is_zero(const unsigned char *a, size_t n)
{
    for (size_t i = 0; i < n; i++)
        if (a[i])
            return 0;
    return 1;
}

static const unsigned char v4_mapped_prefix[12] = {0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0xff, 0xff};

/* Does socket S, listening, take connections to A? */
static int accepts(const tdb_tcp_socket *s, const tdb_tcp_addr *a)
{
    if (s->family == AF_INET) {
        if (a->family == AF_INET)
            return is_zero(s->local, 4) || !memcmp(s->local, a->addr, 4);
        /* an IPv4 socket takes ::ffff:a.b.c.d */
        return !memcmp(a->addr, v4_mapped_prefix, 12) &&
               (is_zero(s->local, 4) || !memcmp(s->local, a->addr + 12, 4));
    }
    if (is_zero(s->local, 16))
        return 1; /* [::] takes IPv4 too unless IPV6_V6ONLY, which /proc does not show */
    if (a->family == AF_INET6)
        return !memcmp(s->local, a->addr, 16);
    return !memcmp(s->local, v4_mapped_prefix, 12) && !memcmp(s->local + 12, a->addr, 4);
}

int tdb_tcp_listening(const tdb_tcp_socket *v, size_t n, const tdb_tcp_addr *addrs, int n_addrs,
                      int port)
{
    for (size_t i = 0; i < n; i++) {
        if (v[i].state != TDB_TCP_LISTEN || v[i].local_port != port)
            continue;
        for (int k = 0; k < n_addrs; k++)
            if (accepts(&v[i], &addrs[k]))
                return 1;
    }
    return 0;
}

int tdb_tcp_inodes_of(const char *root, pid_t pid, unsigned long **out, size_t *out_n,
                      tdb_error *err)
{
    char *dir = proc_file(root, pid, "fd");
    DIR *d;
    struct dirent *de;
    unsigned long *v = NULL;
    size_t n = 0, cap = 0;

    d = opendir(dir);
    if (!d) {
        tdb_error_errno(err, "cannot list the open files of pid %d ('%s')", (int)pid, dir);
        free(dir);
        return -1;
    }
    while ((de = readdir(d))) {
        char *path, target[128];
        unsigned long inode;
        if (de->d_name[0] == '.')
            continue;
        path = tdb_xasprintf("%s/%s", dir, de->d_name);
        ssize_t len = readlink(path, target, sizeof(target) - 1);
        free(path);
        if (len <= 0)
            continue;
        target[len] = '\0';
        if (sscanf(target, "socket:[%lu]", &inode) != 1)
            continue;
        if (n == cap) {
            cap = cap ? cap * 2 : 16;
            v = tdb_xrealloc(v, cap * sizeof(*v));
        }
        v[n++] = inode;
    }
    closedir(d);
    free(dir);
    *out = v;
    *out_n = n;
    return 0;
}

int tdb_tcp_has_inode(const unsigned long *v, size_t n, unsigned long inode)
{
    for (size_t i = 0; i < n; i++)
        if (v[i] == inode)
            return 1;
    return 0;
}

/* A socket address as the table keeps it: family, 16 address bytes (an
 * IPv4 one in the first 4) and port. */
static int table_addr(const struct sockaddr_storage *ss, int *family, unsigned char addr[16],
                      unsigned short *port)
{
    memset(addr, 0, 16);
    if (ss->ss_family == AF_INET) {
        const struct sockaddr_in *a = (const struct sockaddr_in *)ss;
        *family = AF_INET;
        memcpy(addr, &a->sin_addr, 4);
        *port = ntohs(a->sin_port);
        return 0;
    }
    if (ss->ss_family == AF_INET6) {
        const struct sockaddr_in6 *a = (const struct sockaddr_in6 *)ss;
        *family = AF_INET6;
        memcpy(addr, &a->sin6_addr, 16);
        *port = ntohs(a->sin6_port);
        return 0;
    }
    return -1;
}

int tdb_tcp_peer_uid(int fd, unsigned int *out_uid, tdb_error *err)
{
    struct sockaddr_storage me, peer;
    socklen_t lm = sizeof(me), lp = sizeof(peer);
    unsigned char my_addr[16], peer_addr[16];
    unsigned short my_port, peer_port;
    int family, peer_family, found = 0;
    tdb_tcp_socket *v = NULL;
    size_t n = 0;

    if (getsockname(fd, (struct sockaddr *)&me, &lm) < 0 ||
        getpeername(fd, (struct sockaddr *)&peer, &lp) < 0) {
        tdb_error_errno(err, "cannot tell who connected: getpeername");
        return -1;
    }
    if (table_addr(&me, &family, my_addr, &my_port) < 0 ||
        table_addr(&peer, &peer_family, peer_addr, &peer_port) < 0)
        return 0;
    if (tdb_tcp_sockets(NULL, 0, &v, &n, err) < 0)
        return -1;
    /* The peer's socket: its local end is our remote one and the reverse. */
    for (size_t i = 0; i < n && !found; i++) {
        size_t len = v[i].family == AF_INET ? 4 : 16;
        if (v[i].family == peer_family && v[i].local_port == peer_port &&
            v[i].remote_port == my_port && !memcmp(v[i].local, peer_addr, len) &&
            !memcmp(v[i].remote, my_addr, len)) {
            *out_uid = v[i].uid;
            found = 1;
        }
    }
    free(v);
    return found;
}
