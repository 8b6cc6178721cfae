/*
 * cmd/wait_port.c: 'tdebug wait-port HOST:PORT', the pre-launch task of the
 * generated debugpy attach: return once something listens on the port,
 * without ever connecting to it (an early connect kills debugpy's adapter).
 */
#include "cmd/cmd.h"
#include "base/common.h"
#include "process/procfs.h"
#include "process/tcp.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define DEFAULT_TIMEOUT 60.0
#define POLL_MS 50

const char cmd_wait_port_usage[] =
    "usage: tdebug wait-port [--timeout S] [--started-within S] [--quiet] HOST:PORT\n"
    "\n"
    "Wait until a TCP socket listens on HOST:PORT, reading the kernel's tables\n"
    "(/proc/net/tcp and tcp6) instead of connecting: a client that connects\n"
    "and leaves as debugpy starts listening kills debugpy's adapter.  HOST may\n"
    "be an address ([::1] for IPv6) or a name; a bare PORT means 127.0.0.1.\n"
    "A socket bound to the wildcard address (0.0.0.0, ::) counts.\n"
    "\n"
    "  --timeout S         give up after S seconds (default 60; 0 checks once)\n"
    "  --started-within S  give up after S seconds when no process has HOST:PORT,\n"
    "                      as written, among its arguments: the program that\n"
    "                      would listen was not started ('tdebug vscode\n"
    "                      --compound' runs it with that argument)\n"
    "  -q, --quiet         print nothing when the port listens\n"
    "\n"
    "Exit status: 0 listening; 1 nothing listened in time.\n";

int cmd_wait_port(int argc, char **argv)
{
    static const struct option opts[] = {
        {"timeout", required_argument, NULL, 't'},
        {"started-within", required_argument, NULL, 's'},
        {"quiet", no_argument, NULL, 'q'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    double timeout = DEFAULT_TIMEOUT, started_within = -1;
    int quiet = 0, c, port, n_addrs, rc = TDB_EXIT_FAIL;
    char *host = NULL;
    tdb_tcp_addr addrs[8];
    tdb_error err = {0};

    optind = 1;
    opterr = 0; /* our own message, in our own words */
    while ((c = getopt_long(argc, argv, "qh", opts, NULL)) != -1) {
        switch (c) {
        case 't':
            if (tdb_parse_seconds(optarg, &timeout) < 0)
                return tdb_usage_error("wait-port", "bad --timeout '%s' (expected seconds, e.g. 30)", optarg);
            break;
        case 's':
            if (tdb_parse_seconds(optarg, &started_within) < 0)
                return tdb_usage_error("wait-port", "bad --started-within '%s' (expected seconds, "
                                                    "e.g. 30)", optarg);
            break;
        case 'q':
            quiet = 1;
            break;
        case 'h':
            return tdb_print_usage("wait-port");
        default:
            return tdb_usage_error("wait-port", "unknown option or missing value '%s'", argv[optind - 1]);
        }
    }
    if (optind != argc - 1)
        return tdb_usage_error("wait-port", "expected one HOST:PORT");
    if (tdb_tcp_parse_endpoint(argv[optind], &host, &port, &err) < 0)
        return tdb_usage_error("wait-port", "%s", err.msg);
    if (tdb_check_usage_only) {
        free(host);
        return TDB_EXIT_OK;
    }
    n_addrs = tdb_tcp_resolve(host, addrs, 8, &err);
    if (n_addrs < 0) {
        free(host);
        return tdb_usage_error("wait-port", "%s", err.msg);
    }

    int64_t start = tdb_now_ms(), deadline = start + (int64_t)(timeout * 1000);
    int64_t starter_deadline = start + (int64_t)(started_within * 1000);
    int starter_seen = 0;
    for (;;) {
        tdb_tcp_socket *v = NULL;
        size_t n = 0;
        if (tdb_tcp_sockets(NULL, 0, &v, &n, &err) < 0) {
            rc = tdb_error_exit(&err);
            break;
        }
        int up = tdb_tcp_listening(v, n, addrs, n_addrs, port);
        free(v);
        if (up) {
            if (!quiet)
                printf("tdebug: %s is listening\n", argv[optind]);
            rc = TDB_EXIT_OK;
            break;
        }
        /* Once the program is seen it may take its time (gdb reading
         * symbols); until then, the Python side may be waiting for a
         * program nobody starts: say so instead of waiting it out. */
        if (started_within >= 0 && !starter_seen) {
            starter_seen = tdb_proc_with_arg(argv[optind]) != 0;
            if (!starter_seen && tdb_now_ms() >= starter_deadline) {
                tdb_fail("cannot wait for '%s': no program that would listen there started within "
                         "%g s (in VS Code, start the compound that runs it under gdb, 'tdebug: ... "
                         "(Python + C++)': the Python entry alone does not start it)",
                         argv[optind], started_within);
                break;
            }
        }
        if (tdb_now_ms() >= deadline) {
            tdb_fail("cannot wait for '%s': nothing listens on it after %g s "
                     "(did the program start? look at its output)", argv[optind], timeout);
            break;
        }
        struct timespec ts = {0, POLL_MS * 1000000L};
        nanosleep(&ts, NULL);
    }
    free(host);
    return rc;
}
