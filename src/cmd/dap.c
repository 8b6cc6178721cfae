/*
 * cmd/dap.c: 'tdebug dap': the Debug Adapter Protocol on stdin/stdout (the
 * way VS Code runs an adapter) or on a TCP port for clients that connect.
 * Parses the command line and owns the channel; src/dap/dap.c is the adapter.
 */
#include "cmd/cmd.h"
#include "base/common.h"
#include "dap/dap.h"
#include "base/signals.h"
#include "process/tcp.h"

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
#include <sys/random.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <unistd.h>

const char cmd_dap_usage[] =
    "usage: tdebug dap [--log FILE]\n"
    "       tdebug dap --socket PATH [--log FILE]\n"
    "       tdebug dap --port N [--host ADDRESS [--allow-remote]] [--log FILE]\n"
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
    "  --socket PATH     listen on a Unix socket at PATH instead (made 0600; only\n"
    "                    your user's clients are served, the kernel tells who\n"
    "                    connects) and serve the clients that connect, one after\n"
    "                    the other, until interrupted\n"
    "  --port N          the same on TCP port N (0: any free port, said on\n"
    "                    stderr).  A client must give the token said on stderr\n"
    "                    as \"tdebugToken\" in its launch or attach arguments\n"
    "                    ($TDEBUG_DAP_TOKEN sets it); a local client of another\n"
    "                    user is refused\n"
    "  --host ADDRESS    the address to listen on (default 127.0.0.1); one that\n"
    "                    is not a loopback address needs --allow-remote\n"
    "  --allow-remote    listen on a --host other machines reach: whoever has the\n"
    "                    token runs programs as you\n"
    "  --log FILE        append every message, each way, to FILE (default:\n"
    "                    $TDEBUG_DAP_LOG, for the adapter an editor starts)\n"
    "  --terminal FIFO   (what the adapter asks a client's terminal to run, for\n"
    "                    the program's input and output: say the terminal's name\n"
    "                    into FIFO and stay until the session ends)\n"
    "  -h, --help        this text\n"
    "\n"
    "launch: program | module, args, python, cwd, env, console, stopOnEntry,\n"
    "stopAtImport, symbols, allSymbols, cpythonSymbols, raw, catchThrow, stepInto\n"
    "(mine, operator or binding: as 'run --step-into'), myCode, subProcess (default\n"
    "true: each Python child process is offered to the client as a child session,\n"
    "the 'startDebugging' request; a launched program's children wait up to 30 s\n"
    "for theirs).  attach: processId (a\n"
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
    "  tdebug dap --socket \"$XDG_RUNTIME_DIR/tdebug-dap.sock\"\n"
    "  tdebug dap --port 4711\n";

/* Listen on HOST:PORT; the socket, or -1 with ERR set.  A host that is
 * not a loopback address needs ALLOW_REMOTE. */
static int listen_tcp(const char *host, int port, int allow_remote, tdb_error *err)
{
    struct sockaddr_in a = {.sin_family = AF_INET, .sin_port = htons((unsigned short)port)};
    if (inet_pton(AF_INET, host, &a.sin_addr) != 1) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, EINVAL, "--host '%s' is not an IPv4 address", host);
        return -1;
    }
    if ((ntohl(a.sin_addr.s_addr) >> 24) != 127 && !allow_remote) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, EPERM,
                           "--host '%s' is not a loopback address: other machines could run "
                           "programs as you through the adapter (add --allow-remote if that is "
                           "what you want, or use 127.0.0.1 and an ssh tunnel)", host);
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

/* Listen on a Unix socket at PATH, made 0600.  A socket of ours already
 * there (left by an adapter that died) is replaced; anything else there is
 * not touched. */
static int listen_unix(const char *path, tdb_error *err)
{
    struct sockaddr_un a = {.sun_family = AF_UNIX};
    struct stat st;
    if (strlen(path) >= sizeof(a.sun_path)) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, ENAMETOOLONG,
                           "--socket '%s' is too long for a Unix socket (%zu bytes at most)", path,
                           sizeof(a.sun_path) - 1);
        return -1;
    }
    strcpy(a.sun_path, path);
    if (lstat(path, &st) == 0) {
        if (!S_ISSOCK(st.st_mode) || st.st_uid != geteuid()) {
            tdb_error_set_exit(err, TDB_EXIT_FAIL, EEXIST, "cannot listen on '%s': it exists and is not a socket of "
                                       "yours (remove it or pick another path)", path);
            return -1;
        }
        unlink(path);
    }
    int fd = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    if (fd < 0) {
        tdb_error_errno(err, "cannot listen on '%s': socket", path);
        return -1;
    }
    /* No moment where the socket is open to others. */
    mode_t old = umask(0177);
    int rc = bind(fd, (struct sockaddr *)&a, sizeof(a));
    umask(old);
    if (rc < 0 || listen(fd, 4) < 0) {
        tdb_error_errno(err, "cannot listen on '%s'", path);
        close(fd);
        return -1;
    }
    return fd;
}

/* May the client on CONN be served?  Only our own user's, when the kernel
 * can tell: SO_PEERCRED on a Unix socket, the owner of the other end of a
 * loopback connection in /proc/net/tcp.  Says why on stderr when not. */
static int client_is_ours(int conn, int unix_socket)
{
    unsigned int uid = 0;
    int known = 0;
    tdb_error err = {0};
    if (unix_socket) {
        struct ucred cred;
        socklen_t len = sizeof(cred);
        if (getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &cred, &len) == 0) {
            uid = cred.uid;
            known = 1;
        }
    } else {
        known = tdb_tcp_peer_uid(conn, &uid, &err);
        if (known < 0) {
            tdb_warn("a client connected and tdebug cannot tell whose it is (%s): refused", err.msg);
            return 0;
        }
    }
    if (unix_socket && !known) {
        tdb_warn("a client connected and the kernel does not say whose it is: refused");
        return 0;
    }
    if (known && uid != geteuid()) {
        tdb_warn("refused a client of uid %u: this adapter serves only uid %u", uid,
                 (unsigned)geteuid());
        return 0;
    }
    return 1;
}

/* A token a TCP client must give: $TDEBUG_DAP_TOKEN, else 128 random bits. */
static int make_token(char out[65], tdb_error *err)
{
    const char *env = getenv("TDEBUG_DAP_TOKEN");
    unsigned char r[16];
    if (env && *env) {
        if (strlen(env) > 64) {
            tdb_error_set_exit(err, TDB_EXIT_USAGE, EINVAL, "$TDEBUG_DAP_TOKEN is longer than 64 bytes");
            return -1;
        }
        strcpy(out, env);
        return 0;
    }
    if (getrandom(r, sizeof(r), 0) != (ssize_t)sizeof(r)) {
        tdb_error_errno(err, "cannot make a token for DAP clients: getrandom");
        return -1;
    }
    for (size_t i = 0; i < sizeof(r); i++)
        sprintf(out + 2 * i, "%02x", r[i]);
    return 0;
}

/* Serve the clients of the listening socket FD one after the other until a
 * signal read from SIGFD ends it.  The signals are taken before the socket is
 * announced, so a client or a user who stops the adapter as soon as it says
 * where it listens always gets 128+N. */
static int serve_listener(int fd, int sigfd, int unix_socket, const tdb_dap_options *o)
{
    tdb_error err = {0};
    int status = 0;
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
        if (!client_is_ours(conn, unix_socket)) {
            close(conn);
            continue;
        }
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
    return status;
}

static int serve_tcp(const char *host, int port, int allow_remote, tdb_dap_options *o)
{
    tdb_error err = {0};
    char token[65];
    if (make_token(token, &err) < 0)
        return tdb_error_exit(&err);
    int fd = listen_tcp(host, port, allow_remote, &err);
    if (fd < 0)
        return tdb_error_exit(&err);
    int sigfd = tdb_signals_install(0, &err);
    if (sigfd < 0)
        return tdb_error_exit(&err);
    struct sockaddr_in a;
    socklen_t len = sizeof(a);
    getsockname(fd, (struct sockaddr *)&a, &len);
    o->token = token;
    if (allow_remote && (ntohl(a.sin_addr.s_addr) >> 24) != 127)
        tdb_warn("listening on %s, which other machines reach: whoever connects with the token runs "
                 "programs as uid %u on this machine", host, (unsigned)geteuid());
    fprintf(stderr, "tdebug: listening for DAP clients on %s:%d (Ctrl-C to stop)\n", host,
            ntohs(a.sin_port));
    fprintf(stderr, "tdebug: a client gives \"tdebugToken\": \"%s\" in its launch or attach "
                    "arguments\n", token);
    fflush(stderr);
    int status = serve_listener(fd, sigfd, 0, o);
    close(fd);
    return status;
}

static int serve_unix(const char *path, const tdb_dap_options *o)
{
    tdb_error err = {0};
    int fd = listen_unix(path, &err);
    if (fd < 0)
        return tdb_error_exit(&err);
    int sigfd = tdb_signals_install(0, &err);
    if (sigfd < 0) {
        unlink(path);
        return tdb_error_exit(&err);
    }
    fprintf(stderr, "tdebug: listening for DAP clients of uid %u on %s (Ctrl-C to stop)\n",
            (unsigned)geteuid(), path);
    fflush(stderr);
    int status = serve_listener(fd, sigfd, 1, o);
    close(fd);
    unlink(path);
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
        {"allow-remote", no_argument, NULL, 'R'},
        {"socket", required_argument, NULL, 'S'},
        {"log", required_argument, NULL, 'l'},
        {"terminal", required_argument, NULL, 'T'},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tdb_dap_options o = {0};
    const char *host = NULL, *socket_path = NULL;
    long port = -1;
    int c, allow_remote = 0;

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
        case 'R': allow_remote = 1; break;
        case 'S': socket_path = optarg; break;
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
    if (allow_remote && !host)
        return tdb_usage_error("dap", "--allow-remote goes with --host");
    if (socket_path && port >= 0)
        return tdb_usage_error("dap", "--socket and --port: pick one");
    if (socket_path && !*socket_path)
        return tdb_usage_error("dap", "--socket needs a path");
    if (socket_path)
        return serve_unix(socket_path, &o);
    if (port >= 0)
        return serve_tcp(host ? host : "127.0.0.1", (int)port, allow_remote, &o);

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
