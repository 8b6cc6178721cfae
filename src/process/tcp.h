/*
 * process/tcp.h: TCP sockets as the kernel lists them in /proc/net/tcp and
 * /proc/net/tcp6, and the sockets a process holds (/proc/PID/fd), read
 * without opening a single connection.  The one reader of those tables in
 * tdebug: 'tdebug wait-port' and the links between debugpy's processes
 * (src/targets/proc.c) both use it.
 *
 * Why not connect() to see whether a port is open: a client that connects
 * and disconnects as debugpy's adapter starts listening kills the adapter
 * and leaves the program hanging (FIELD-NOTES, "debugpy").  Reading the
 * kernel's table touches nobody.
 *
 * Functions reading /proc take its root (NULL: "/proc") so that unit tests
 * can read a recorded tree (tests/fixtures/proc/).
 */
#ifndef TDB_TCP_H
#define TDB_TCP_H

#include "base/common.h"

#include <stddef.h>
#include <sys/types.h>

enum { TDB_TCP_ESTABLISHED = 1, TDB_TCP_LISTEN = 10 }; /* the kernel's st column */

typedef struct tdb_tcp_socket {
    int family;                 /* AF_INET or AF_INET6 */
    unsigned char local[16];    /* the address in network order (4 bytes for AF_INET) */
    unsigned short local_port;
    unsigned char remote[16];
    unsigned short remote_port;
    int state;                  /* TDB_TCP_* */
    unsigned int uid;           /* the owner of the socket */
    unsigned long inode;
} tdb_tcp_socket;

/* An address to match sockets against. */
typedef struct tdb_tcp_addr {
    int family;
    unsigned char addr[16];
} tdb_tcp_addr;

/* Parse "HOST:PORT", "[V6]:PORT" or a bare "PORT" (host 127.0.0.1).
 * Returns 0 with *OUT_HOST (new string, brackets removed) and *OUT_PORT, or
 * -1 with ERR set. */
int tdb_tcp_parse_endpoint(const char *s, char **out_host, int *out_port, tdb_error *err);

/* The addresses HOST stands for (a literal, or a name from /etc/hosts or
 * the resolver).  Returns the count (at most MAX) or -1 with ERR set. */
int tdb_tcp_resolve(const char *host, tdb_tcp_addr *out, int max, tdb_error *err);

/* Every TCP socket of the network namespace of PID (0: ours), v4 and v6,
 * from ROOT/PID/net/tcp{,6} (ROOT/net/tcp{,6} for 0).  A table that does
 * not exist (no IPv6; not recorded in a fake tree) holds no sockets.
 * Returns 0 with *OUT (free() it; NULL when none) and *OUT_N, or -1 with
 * ERR set. */
int tdb_tcp_sockets(const char *root, pid_t pid, tdb_tcp_socket **out, size_t *out_n,
                    tdb_error *err);

/* Nonzero when one of the N sockets listens on PORT so that a connection
 * to one of the N_ADDRS addresses reaches it (the address itself, or the
 * wildcard of its family; :: also takes IPv4). */
int tdb_tcp_listening(const tdb_tcp_socket *v, size_t n, const tdb_tcp_addr *addrs, int n_addrs,
                      int port);

/* The socket inodes among PID's open files (ROOT/PID/fd).  Returns 0 with
 * *OUT (free() it; NULL when none) and *OUT_N, or -1 with ERR set and errno
 * kept (no such process, or another user's: EACCES). */
int tdb_tcp_inodes_of(const char *root, pid_t pid, unsigned long **out, size_t *out_n,
                      tdb_error *err);

/* Nonzero when INODE is one of the N in V. */
int tdb_tcp_has_inode(const unsigned long *v, size_t n, unsigned long inode);

/* The owner of the other end of the connected TCP socket FD when that end
 * is a socket of this machine's network namespace (a loopback client):
 * 1 with *OUT_UID, 0 when the peer is not local, or -1 with ERR set. */
int tdb_tcp_peer_uid(int fd, unsigned int *out_uid, tdb_error *err);

#endif
