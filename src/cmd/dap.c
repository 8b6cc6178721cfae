/*
 * cmd/dap.c: 'tdebug dap': the Debug Adapter Protocol on stdin/stdout (the
 * way VS Code runs an adapter) or on a TCP port for clients that connect.
 * Parses the command line and owns the channel; src/dap/dap.c is the adapter.
 */
#include "cmd/cmd.h"
#include "base/common.h"
#include "dap/dap.h"
#include "base/signals.h"

#include <arpa/inet.h>
#include <errno.h>
#include <fcntl.h>
#include <getopt.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <unistd.h>

const char cmd_dap_usage[] =
    "usage: tdebug dap [--log FILE]\n"
    "       tdebug dap --port N [--host ADDRESS] [--log FILE]\n"
    "\n"
    "Serve the Debug Adapter Protocol, so that VS Code (or any DAP client) gets\n"
    "one debugger for Python and the C/C++ it calls: one stack with Python and\n"
    "native frames merged, breakpoints in C/C++ files and functions (pending\n"
    "until their library loads), C++ throws and torch's c10 errors as exception\n"
    "breakpoints, stepping, values, attach without killing.  The session is the\n"
    "one of 'tdebug run' and 'tdebug attach'.  By default the protocol is on\n"
    "stdin and stdout (the adapter VS Code starts: 'tdebug vscode\n"
    "--install-extension' installs the extension that does).  The program runs\n"
    "in a terminal of the client when it can run one (runInTerminal; VS Code's\n"
    "integrated terminal, or \"console\": \"externalTerminal\"), else, and with\n"
    "\"console\": \"internalConsole\", its output comes as 'output' events.\n"
    "\n"
    "  --port N          listen on TCP port N instead (0: any free port, said on\n"
    "                    stderr) and serve the clients that connect, one after\n"
    "                    the other, until interrupted\n"
    "  --host ADDRESS    the address to listen on (default 127.0.0.1)\n"
    "  --log FILE        append every message, each way, to FILE (default:\n"
    "                    $TDEBUG_DAP_LOG, for the adapter an editor starts)\n"
    "  --terminal FIFO   (what the adapter asks a client's terminal to run, for\n"
    "                    the program's input and output: say the terminal's name\n"
    "                    into FIFO and stay until the session ends)\n"
    "  -h, --help        this text\n"
    "\n"
    "launch: program | module, args, python, cwd, env, console, stopOnEntry,\n"
    "stopAtImport, symbols, allSymbols, cpythonSymbols, raw, catchThrow.  attach: processId (a\n"
    "debugpy adapter or launcher stands for its program, as in 'tdebug attach'),\n"
    "rank (of the distributed job running here; job: which one, as 'attach --rank\n"
    "N --job ID') or wait: true (a process paused by 'tdebug env', as 'attach\n"
    "--wait'), with the same stop, symbol and stack options.  In the debug console,\n"
    "'-exec COMMAND' runs a command of the (tdebug) prompt ('-exec bt').\n"
    "Disconnecting, or the client going away, ends the session as 'quit' does: a\n"
    "launched program is killed, an attached process is detached, never killed.\n"
    "\n"
    "Exit status: 0 after the client disconnected or went away; 2 usage; 125\n"
    "the channel failed; 128+N ended by signal N (the session ended first).\n"
    "\n"
    "Examples:\n"
    "  tdebug dap\n"
    "  tdebug dap --port 4711\n";

/* Listen on HOST:PORT; the socket, or -1 with ERR set. */
static int listen_on(const char *host, int port, tdb_error *err)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, EINVAL, "--host '%s' is not an IPv4 address", host);
        return -1;
    }
    int fd = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0), one = 1;
    if (fd < 0) {
        tdb_error_errno(err, "cannot listen on %s:%d: socket", host, port);
        return -1;
    }
    setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, sizeof(one));
    if (bind(fd, (struct sockaddr *)&a, sizeof(a)) < 0 || listen(fd, 4) < 0) {
        tdb_error_errno(err, "cannot listen on %s:%d (another program has the port? try --port 0)",
                        host, port);
        close(fd);
        return -1;
    }
    return fd;
}

static int serve_tcp(const char *host, int port, const tdb_dap_options *o)
{
    tdb_error err = {0};
    int fd = listen_on(host, port, &err), sigfd = tdb_signals_install(0, &err), status = 0;
    if (fd < 0 || sigfd < 0) {
        if (fd >= 0)
            close(fd);
        return tdb_error_exit(&err);
    }
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    fprintf(stderr, "tdebug: listening for DAP clients on %s:%d (Ctrl-C to stop)\n", host,
            ntohs(a.sin_port));
    fflush(stderr);
    for (;;) {
        struct pollfd p[2] = {{fd, POLLIN, 0}, {sigfd, POLLIN, 0}};
        if (poll(p, 2, -1) < 0 && errno != EINTR)
            break;
        if (p[1].revents & POLLIN) {
            int sig = tdb_signals_take();
            if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP) {
                status = 128 + sig;
                break;
            }
        }
        if (!(p[0].revents & POLLIN))
            continue;
        int conn = accept4(fd, NULL, NULL, SOCK_CLOEXEC);
        if (conn < 0)
            continue;
        tdb_error_clear(&err);
        int rc = tdb_dap_serve(conn, conn, o, &err);
        close(conn);
        if (rc < 0)
            tdb_print_error(&err);
        if (rc > 0) {
            status = 128 + rc;
            break;
        }
    }
    close(fd);
    return status;
}

/* --terminal FIFO: run by a client in the terminal it gives the program. */
static int terminal_helper(const char *fifo)
{
    const char *tty = ttyname(0);
    if (!tty) {
        tdb_fail("--terminal: standard input is not a terminal");
        return TDB_EXIT_FAIL;
    }
    int fd = open(fifo, O_WRONLY | O_CLOEXEC);
    if (fd < 0 || dprintf(fd, "%s\n", tty) < 0) {
        tdb_fail("--terminal: cannot write to '%s': %s", fifo, strerror(errno));
        return TDB_EXIT_FAIL;
    }
    printf("tdebug: this terminal is the program's, for its input and output, until the "
           "debugging session ends\n");
    fflush(stdout);
    /* Ctrl-C here must not take the terminal away from the program. */
    signal(SIGINT, SIG_IGN);
    signal(SIGQUIT, SIG_IGN);
    /* The adapter closes its end when the session ends: an error here. */
    struct pollfd p = {fd, 0, 0};
    while ((poll(&p, 1, -1) >= 0 || errno == EINTR) && !(p.revents & (POLLERR | POLLHUP)))
        ;
    close(fd);
    return TDB_EXIT_OK;
}

int cmd_dap(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"port", required_argument, NULL, 'p'},
        {"host", required_argument, NULL, 'H'},
        {"log", required_argument, NULL, 'l'},
        {"terminal", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tdb_dap_options o = {0};
    const char *host = NULL;
    long port = -1;
    int c;

    optind = 1;
    opterr = 0;
    while ((c = getopt_long(argc, argv, ":h", longopts, NULL)) != -1) {
        switch (c) {
        case 'p':
            if (tdb_parse_long(optarg, 0, 65535, &port) < 0)
                return tdb_usage_error("dap", "--port '%s' is not a port number (0 to 65535)",
                                       optarg);
            break;
        case 'H': host = optarg; break;
        case 'l': o.log = optarg; break;
        case 'T': return terminal_helper(optarg);
        case 'h': return tdb_print_usage("dap");
        case ':': return tdb_usage_error("dap", "option '%s' needs a value", argv[optind - 1]);
        default: return tdb_usage_error("dap", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return tdb_usage_error("dap", "unexpected argument '%s'", argv[optind]);
    if (!o.log && getenv("TDEBUG_DAP_LOG") && *getenv("TDEBUG_DAP_LOG"))
        o.log = getenv("TDEBUG_DAP_LOG");
    if (host && port < 0)
        return tdb_usage_error("dap", "--host goes with --port");
    if (port >= 0)
        return serve_tcp(host ? host : "127.0.0.1", (int)port, &o);

    /* stdout is the protocol's: whatever else would write there (a stray
     * printf, a library) goes to stderr instead. */
    int out = fcntl(1, F_DUPFD_CLOEXEC, 3);
    if (out < 0 || dup2(2, 1) < 0) {
        tdb_fail("cannot set up the DAP channel on stdout: %s", strerror(errno));
        return TDB_EXIT_TOOL;
    }
    tdb_error err = {0};
    int rc = tdb_dap_serve(0, out, &o, &err);
    close(out);
    if (rc < 0)
        return tdb_error_exit(&err);
    return rc ? 128 + rc : TDB_EXIT_OK;
}
