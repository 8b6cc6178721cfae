/*
 * cmd/run.c: 'tdebug run': run a Python program under gdb and stop in its
 * native code.  Parses and checks the command line; src/cli/cli.c does
 * the rest.  'tdebug run --preload' starts the program itself, with the
 * preloaded library, and attaches when it pauses (src/process/paused.c).
 */
#include "cmd/cmd.h"
#include "base/common.h"
#include "cli/cli.h"
#include "checks/inspect.h"
#include "targets/proc.h"
#include "process/paused.h"
#include "process/preload.h"
#include "cmd/options.h"

#include <errno.h>
#include <getopt.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

const char cmd_run_usage[] =
    "usage: tdebug run [options] [--] [PYTHON] (SCRIPT | -c CODE | -m MODULE) [ARGS...]\n"
    "   or: tdebug run [options] --rank N -- LAUNCHER [ARGS...]\n"
    "\n"
    "Run a Python program under gdb, loading only the symbols that matter, and\n"
    "stop in its native code.  PYTHON defaults to the interpreter tdebug was\n"
    "built for; Python options (-u, -X opt, ...) may come before SCRIPT.  A\n"
    "PYTHON that is a script (a pyenv shim) runs the interpreter it execs.\n"
    "\n"
    "Stops:\n"
    "  --stop-at-import MODULE  stop in MODULE's PyInit_<name> before its init\n"
    "                           runs, e.g. torch._C (repeatable)\n"
    "  --stop-at-load MODULE    stop when MODULE's file is mapped, before its\n"
    "                           dependencies load and before any of its code runs\n"
    "  -b, --break LOCATION     a breakpoint (repeatable): gdb's FUNCTION, FILE:LINE,\n"
    "                           *ADDRESS, bound when its library loads; or Python's\n"
    "                           FILE.py:LINE, FILE.py:FUNCTION (then step, next and\n"
    "                           finish cross between Python and C/C++); 'LOCATION\n"
    "                           if COND' stops only when COND holds (Python's or C's)\n"
    "  --catch-throw[=TYPE]     stop where C++ throws (a TYPE, such as c10::Error,\n"
    "                           or a class derived from it); the stop shows the\n"
    "                           exception's type and message (repeatable)\n"
    "  --catch-raise[=TYPE]     stop where Python raises an exception, at the\n"
    "                           raising line: in your code, or with a TYPE (such as\n"
    "                           ValueError, or a class derived from it) anywhere;\n"
    "                           the stop shows its type and message (repeatable)\n"
    "  --step-into WHERE        where 'step' from a Python line stops: mine (the\n"
    "                           default: your own C/C++, else torch's operator\n"
    "                           entry at::_ops::NAME::call), operator, or binding\n"
    "                           (the first native frame: pybind11's or torch's glue)\n"
    "  --my-code DIR            your own code is also under DIR, besides the\n"
    "                           script's and the working directory (repeatable;\n"
    "                           TDEBUG_MY_CODE: DIR:DIR...)\n"
    "Symbols (by default gdb reads no library's symbols by itself; tdebug reads\n"
    "the module being imported, libc and ld.so, the libraries on the stack at a\n"
    "stop, and with --break, torch/c10 and libraries under the current or the\n"
    "script's directory):\n"
    "  --symbols REGEX          also read libraries matching REGEX, a gdb basic\n"
    "                           regex such as 'torch\\|mylib' (repeatable)\n"
    "  --all-symbols            let gdb read every library (its slow default)\n"
    "Output:\n"
    "  --batch                  print each stop and its backtrace, continue, and\n"
    "                           exit with the program's status\n"
    "  --json                   the same as JSON lines on stdout: {\"event\":\n"
    "                           \"stopped\"|\"exited\"|\"warning\",...}; the program's\n"
    "                           own stdout goes to stderr\n"
    "  --raw                    keep CPython's plumbing frames (the evaluator loop,\n"
    "                           vectorcall) in stacks; folded by default\n"
    "  --cpython-symbols        let gdb read CPython's debug info too (source lines\n"
    "                           inside the interpreter, gdb's py-bt; ~1 s slower)\n"
    "  (default)                a (tdebug) prompt at each stop: continue, step,\n"
    "                           next, finish, bt, frame, up, down, break, catch\n"
    "                           throw, info breakpoints, list, args, tensor,\n"
    "                           py-locals, py-print, quit, help (see 'AT A STOP'\n"
    "                           in tdebug(1)); other gdb commands pass through;\n"
    "                           Enter repeats step/next/finish\n"
    "Child processes (each Python child the program starts is said, with its pid,\n"
    "command line and the 'tdebug attach PID' that debugs it in another terminal):\n"
    "  --wait-children[=SECONDS]  Python children (subprocess, multiprocessing,\n"
    "                           DataLoader workers, and theirs) wait at their start\n"
    "                           until a debugger attached and let them run, up to\n"
    "                           SECONDS (default 60), so 'tdebug attach -b\n"
    "                           FILE:LINE PID' stops even on their first line\n"
    "Programs gdb cannot start:\n"
    "  --preload                start the program outside gdb, with the preloaded\n"
    "                           library of 'tdebug env' in its environment: it\n"
    "                           pauses when it loads torch._C (or the module of\n"
    "                           --stop-at-import/--stop-at-load), before its init\n"
    "                           runs; tdebug attaches, places the stops, lets it go\n"
    "                           and goes on as above (default stop: that module's\n"
    "                           PyInit).  It stays tdebug's child: same stdio,\n"
    "                           killed with tdebug, its exit status passed through\n"
    "  -x, --commands FILE      at each stop run the next line of FILE as if typed\n"
    "                           at the prompt; when FILE is done, go on as --batch\n"
    "                           (with --json each command's result is one event)\n"
    "One rank of a distributed job:\n"
    "  --rank N -- LAUNCHER...  start the job through its own launcher (a script,\n"
    "                           srun, torchrun, python -m ...) with the preloaded\n"
    "                           library, which stops only the process whose RANK\n"
    "                           is N, as --preload does; the launcher and the\n"
    "                           other ranks run untraced, at full speed.  The stops\n"
    "                           are placed in rank N; the job is killed with tdebug\n"
    "  --python PATH            the interpreter (same as giving PYTHON; default\n"
    "                           $TDEBUG_PYTHON, else the one tdebug was built for)\n"
    "  -v, --verbose            show gdb's own messages\n"
    "  -h, --help               this text\n"
    "\n"
    "At each stop the stack reads as one: C/C++ frames, then the Python lines\n"
    "that called them (read from the interpreter's memory), then their callers.\n"
    "A breakpoint's stop lists its function's arguments, typed and with tensors\n"
    "decoded, from the C++ signature in its symbol when there is no debug info\n"
    "(torch's tensor layout is learned once per torch build and cached).\n"
    "\n"
    "When the stops are only --stop-at-import and --break on plain function\n"
    "names or Python lines, tdebug starts the program itself and gdb attaches\n"
    "reading no library; stops are placed by address (about 1.1x the plain\n"
    "program's time).  A native stop at a prompt or with commands, a gdb\n"
    "command at a Python stop, or a crash give gdb its full view first.\n"
    "TDEBUG_LIGHT=0 turns this off.\n"
    "\n"
    "Exit status: the program's own (128+N when a signal N killed it); 1 when a\n"
    "requested stop never happened (a module never imported, a breakpoint never\n"
    "bound); 0 after 'quit' at the (tdebug) prompt or the end of piped commands,\n"
    "which kill the program.\n"
    "\n"
    "Examples:\n"
    "  tdebug run --batch --stop-at-import torch._C -- /usr/bin/python3 -c 'import torch'\n"
    "  tdebug run --preload --batch -- /usr/bin/python3 train.py\n"
    "  tdebug run --rank 1 -b train.py:42 -- ./launch.sh\n";

/* Is ARG the interpreter rather than the script?  An executable that is
 * not a .py file, or a bare name starting with "python" found on PATH. */
static int looks_like_python(const char *arg)
{
    size_t n = strlen(arg);
    if (n > 3 && strcmp(arg + n - 3, ".py") == 0)
        return 0;
    if (strchr(arg, '/')) {
        struct stat st;
        return stat(arg, &st) == 0 && S_ISREG(st.st_mode) && access(arg, X_OK) == 0;
    }
    return tdb_is_python_name(arg);
}

static int check_python(const char *python)
{
    struct stat st;
    if (stat(python, &st) < 0) {
        tdb_fail("cannot run '%s': %s (give the interpreter's path, e.g. /usr/bin/python3)", python,
                 strerror(errno));
        return errno == ENOENT ? TDB_EXIT_NOTFOUND : TDB_EXIT_NOEXEC;
    }
    if (!S_ISREG(st.st_mode) || access(python, X_OK) < 0) {
        tdb_fail("cannot run '%s': %s", python,
                 S_ISDIR(st.st_mode) ? "it is a directory" : "it is not executable");
        return TDB_EXIT_NOEXEC;
    }
    return 0;
}

/* PYTHON is a script rather than the interpreter (a pyenv shim, a
 * wrapper that execs python): gdb can only run an executable, so ask it
 * for the interpreter it runs (sys.executable), as 'tdebug tour' does.
 * Returns 0 with *PYTHON replaced (when it was a script), or an exit
 * status after saying why it cannot be used. */
static int resolve_script_python(char **python)
{
    char magic[4] = "";
    FILE *f = fopen(*python, "rb");
    size_t n = f ? fread(magic, 1, sizeof(magic), f) : 0;
    if (f)
        fclose(f);
    if (n == sizeof(magic) && !memcmp(magic, "\177ELF", 4))
        return 0;
    tdb_error err = {0};
    char *exe = NULL;
    if (tdb_py_executable(*python, NULL, 60000, &exe, NULL, &err) < 0) {
        tdb_fail("%s (give the interpreter's path, e.g. /usr/bin/python3)", err.msg);
        return err.exit_code ? err.exit_code : TDB_EXIT_NOEXEC;
    }
    free(*python);
    *python = exe;
    return 0;
}

/* ---- --preload: start the program outside gdb, attach when it pauses ---- */

/* The program ended: say so as 'tdebug run' does, and return its status
 * (128+N when killed by signal N). */
static int say_exited(tdb_output output, int ws)
{
    int signalled = WIFSIGNALED(ws);
    int status = signalled ? 128 + WTERMSIG(ws) : WEXITSTATUS(ws);

    if (signalled)
        tdb_event(output, "signalled", NULL, "program was killed by SIG%s (%s)",
                  sigabbrev_np(WTERMSIG(ws)), strsignal(WTERMSIG(ws)));
    tdb_say_exited(output, status, signalled);
    return status;
}

/* TDEBUG_WATCH_FILES for the modules OPTS stops at ("torch._C":
 * "* /torch/_C.so,* /torch/_C.*.so" without the spaces), so the program
 * pauses at the very module; NULL when it names none (the library's
 * default, PyInit__C, applies).  New string. */
static char *watch_files(const tdb_session_options *o)
{
    tdb_buf b = TDB_BUF_INIT;

    for (size_t i = 0; i < o->n_stop_at_import + o->n_stop_at_load; i++)
        tdb_preload_add_module_files(&b, i < o->n_stop_at_import
                                             ? o->stop_at_import[i]
                                             : o->stop_at_load[i - o->n_stop_at_import]);
    return b.len ? tdb_buf_detach(&b) : NULL;
}

/* Wait for CHILD to end, interruptibly (CANCEL: the signal pipe).
 * Returns 0 with *WS, or the signal that interrupted. */
static int wait_child(pid_t child, int cancel, int *ws)
{
    for (;;) {
        pid_t r = waitpid(child, ws, WNOHANG);
        if (r == child || (r < 0 && errno == ECHILD))
            return 0;
        struct pollfd pfd = {.fd = cancel, .events = POLLIN};
        if (poll(&pfd, 1, 1000) > 0) {
            int sig = tdb_signals_take();
            if (sig && sig != SIGCHLD)
                return sig;
        }
    }
}

/* With --rank the launcher leads a process group of its own, which its
 * ranks share: what is left of the job goes with it. */
static int job_group;
static const char *job_rank; /* --rank's value */

/* Kill what is left of the program (CHILD, and TARGET when it is another
 * process of the program) and reap CHILD. */
static void kill_program(pid_t child, pid_t target)
{
    if (target > 0 && target != child)
        kill(target, SIGKILL);
    kill(job_group ? -child : child, SIGKILL);
    while (waitpid(child, NULL, 0) < 0 && errno == EINTR)
        ;
}

/* The program never paused: say which stops never happened.  Returns 1
 * when one was asked for (with --rank: the rank's). */
static int say_never_paused(const tdb_cli_options *co)
{
    const tdb_session_options *o = &co->session;
    for (size_t i = 0; i < o->n_stop_at_import; i++)
        tdb_event(co->output, "warning", NULL, "the program never imported '%s' (--stop-at-import): it "
                                   "never loaded its file, so tdebug never attached",
                  o->stop_at_import[i]);
    for (size_t i = 0; i < o->n_stop_at_load; i++)
        tdb_event(co->output, "warning", NULL, "the program never loaded '%s' (--stop-at-load), so tdebug "
                                   "never attached", o->stop_at_load[i]);
    if (!o->n_stop_at_import && !o->n_stop_at_load && job_group)
        tdb_event(co->output, "warning", NULL, "no process of the job with RANK=%s in its "
                  "environment loaded torch._C, so tdebug never attached (does the launcher give "
                  "each rank RANK?)", job_rank);
    else if (!o->n_stop_at_import && !o->n_stop_at_load)
        tdb_event(co->output, "warning", NULL, "the program never loaded torch._C (no object exporting "
                                   "PyInit__C), so tdebug never attached%s",
                  o->n_breaks ? " and no --break was set" : "");
    return o->n_stop_at_import || o->n_stop_at_load || o->n_breaks || job_group;
}

static int run_preloaded(tdb_cli_options *opts, char **args)
{
    int json = opts->output == TDB_OUTPUT_JSON;
    int scope = tdb_yama_ptrace_scope();
    tdb_ptracer_plan plan = tdb_ptracer_plan_for(scope, tdb_have_cap_sys_ptrace());
    tdb_preload_settings set = {0};
    tdb_announce_listener *l = NULL;
    tdb_error err = {0};
    char *dir = NULL, sock[160];
    char *library = NULL, *watch = NULL;
    json_t *env = NULL, *ann = NULL;
    pid_t child = -1, target = -1;
    int status = TDB_EXIT_TOOL, cancel, ws = 0, sig, failed;

    if (plan == TDB_PTRACER_REFUSED) {
        tdb_fail("cannot run '%s' with --preload: Yama's ptrace_scope is %d, so gdb may not "
                 "attach to it (%s)", args[0], scope,
                 scope == 3 ? "ptrace stays off until reboot"
                            : "run tdebug as root, or give it CAP_SYS_PTRACE");
        return TDB_EXIT_FAIL;
    }
    if (!(library = tdb_preload_library(&err)) || (cancel = tdb_signals_install(1, &err)) < 0 ||
        /* private to this run, so no 'tdebug attach --wait' sees the
         * program, and short enough for a socket path */
        !(dir = tdb_private_dir("tdebug-run", &err)))
        goto fail;
    snprintf(sock, sizeof(sock), "%s/announce", dir);
    if (!(l = tdb_announce_listen(sock, &err)))
        goto fail;
    set.announce = sock;
    set.rank = job_rank;
    set.watch_files = watch = watch_files(&opts->session);
    if (watch && tdb_preload_check(&set, NULL) < 0)
        set.watch_files = NULL; /* too many modules for the library: PyInit__C */
    env = tdb_preload_env(library, &set, getenv("LD_AUDIT"));
    tdb_spawn_how how = {.stdout_to_stderr = json, .own_pgrp = job_group, .plan = plan};
    child = tdb_paused_spawn_with(args, env, &how, &err);
    if (child < 0) {
        status = err.exit_code ? err.exit_code : TDB_EXIT_TOOL;
        goto fail;
    }

    /* Until the program (or a process it starts) pauses, or it ends. */
    for (;;) {
        int rc = tdb_announce_next(l, -1, cancel, &ann, &err);
        if (rc == 1 && tdb_announce_is_waiting(ann, child, 1))
            break;
        json_decref(ann);
        ann = NULL;
        if (rc < 0 && err.code != ECANCELED)
            goto fail;
        tdb_error_clear(&err);
        sig = rc < 0 ? tdb_signals_take() : 0;
        if (sig == SIGCHLD && waitpid(child, &ws, WNOHANG) == child) {
            child = -1;
            int missed = say_never_paused(opts);
            status = say_exited(opts->output, ws);
            if (status == 0 && missed)
                status = TDB_EXIT_FAIL;
            goto cleanup;
        }
        if (sig && sig != SIGCHLD) {
            kill_program(child, -1);
            child = -1;
            tdb_say_killed(opts->output, sig);
            status = 128 + sig;
            goto cleanup;
        }
    }
    /* Later announcements (a process the program starts) find nobody. */
    tdb_announce_listener_free(l);
    l = NULL;
    target = (pid_t)json_integer_value(json_object_get(ann, "pid"));
    tdb_signals_sigchld_off();
    opts->session.started_by_tdebug = 1;
    status = tdb_cli_attach_paused(opts, ann, &err);
    failed = err.set;
    if (failed)
        tdb_print_error(&err);
    tdb_error_clear(&err);
    tdb_signals_install(1, NULL); /* the session's handlers are gone with it */

    if (target == child ? waitpid(child, &ws, WNOHANG) == child : !tdb_pid_running(target)) {
        /* The process tdebug debugged ended: the program ends its own way. */
        if (target != child && (sig = wait_child(child, cancel, &ws)) != 0) {
            kill_program(child, -1);
            child = -1;
            tdb_say_killed(opts->output, sig);
            status = 128 + sig;
            goto cleanup;
        }
        child = -1;
        int session = status;
        status = say_exited(opts->output, ws);
        if (status == 0 && session == TDB_EXIT_FAIL)
            status = TDB_EXIT_FAIL; /* a requested stop never happened */
    } else {
        /* Quit, interrupted, refused or failed: the program does not
         * outlive tdebug ('tdebug run' kills it too). */
        kill_program(child, target);
        child = -1;
        if (failed)
            tdb_event(opts->output, "killed", NULL, "the program was killed: tdebug could not debug it");
        else
            tdb_say_killed(opts->output, status > 128 && status < 160 ? status - 128 : 0);
    }
    goto cleanup;

fail:
    tdb_print_error(&err);
    if (status == TDB_EXIT_TOOL && err.exit_code)
        status = err.exit_code;
cleanup:
    if (child > 0)
        kill_program(child, -1);
    tdb_announce_listener_free(l);
    if (dir)
        rmdir(dir);
    free(dir);
    json_decref(ann);
    json_decref(env);
    free(watch);
    free(library);
    return status;
}

/* 'tdebug run --rank N -- LAUNCHER ...': the job starts through its own
 * launcher with the preloaded library, which stops only the process whose
 * RANK is N; the others run untraced (lib/tdebug_preload.h). */
static int run_rank(tdb_cli_options *opts, int argc, char **argv, const char *python_opt)
{
    long rank;
    int i = optind;
    if (tdb_parse_long(job_rank, 0, 1L << 30, &rank) < 0)
        return tdb_usage_error("run", "--rank '%s' is not a rank (0, 1, 2, ...)", job_rank);
    if (python_opt)
        return tdb_usage_error("run", "--python does not go with --rank: the launcher starts "
                               "the interpreter");
    if (i < argc && !strcmp(argv[i], "--"))
        i++;
    if (i >= argc)
        return tdb_usage_error("run", "--rank needs the command that starts the job after "
                               "'--' (its launcher: a script, srun, torchrun, python -m ...)");
    char *launcher = tdb_which(argv[i]);
    if (!launcher && !tdb_check_usage_only) {
        tdb_fail("cannot run '%s': no such program (give the launcher's path, or a program on "
                 "PATH)", argv[i]);
        return TDB_EXIT_NOTFOUND;
    }
    free(launcher);
    if (tdb_check_usage_only)
        return TDB_EXIT_OK;
    job_group = 1;
    return run_preloaded(opts, argv + i);
}

int cmd_run(int argc, char **argv)
{
    enum { OPT_PYTHON = TDB_OPT_FIRST_FREE, OPT_PRELOAD, OPT_RANK, OPT_WAIT_CHILDREN };
    static const struct option longopts[] = {
        TDB_SESSION_LONGOPTS,
        {"python", required_argument, NULL, OPT_PYTHON},
        {"wait-children", optional_argument, NULL, OPT_WAIT_CHILDREN},
        {"preload", no_argument, NULL, OPT_PRELOAD},
        {"rank", required_argument, NULL, OPT_RANK},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tdb_cli_options opts = {.output = TDB_OUTPUT_INTERACTIVE};
    const char *python_opt = NULL;
    char **args = NULL;
    size_t n_args = 0;
    char *python = NULL;
    tdb_cli *s = NULL;
    tdb_error err = {0};
    int status = TDB_EXIT_USAGE, c, preload = 0;

    /* tdebug's options end where the program starts: at "--", at the first
     * word that is not an option, or at a Python option such as -c, -m,
     * -u or -X, which getopt must not see. */
    int ours = 1;
    while (ours < argc && argv[ours][0] == '-' && strcmp(argv[ours], "--") != 0) {
        const char *a = argv[ours];
        if (a[1] == '-') {
            const struct option *o = longopts;
            size_t len = strcspn(a + 2, "=");
            while (o->name && !(strlen(o->name) == len && !strncmp(o->name, a + 2, len)))
                o++;
            ours += (o->name && o->has_arg == required_argument && !strchr(a, '=')) ? 2 : 1;
        } else if (strchr("bvhx", a[1]) && a[1]) {
            ours += (strchr("bx", a[1]) && !a[2]) ? 2 : 1;
        } else {
            break;
        }
    }
    if (ours > argc)
        ours = argc;
    optind = 1;
    while ((c = tdb_session_getopt("run", ours, argv, "+:b:x:vh", longopts, &opts, &status)) != -1) {
        if (c == TDB_GETOPT_DONE)
            goto cleanup;
        if (c == OPT_PYTHON)
            python_opt = optarg;
        else if (c == OPT_PRELOAD)
            preload = 1;
        else if (c == OPT_RANK)
            job_rank = optarg;
        else if (c == OPT_WAIT_CHILDREN) {
            long secs = 60;
            if (optarg && tdb_parse_long(optarg, 1, 86400, &secs) < 0) {
                status = tdb_usage_error("run", "--wait-children takes seconds (1-86400), not "
                                                "'%s'", optarg);
                goto cleanup;
            }
            opts.session.children_wait = (int)secs;
        }
    }
    if (job_rank) {
        status = run_rank(&opts, argc, argv, python_opt);
        goto cleanup;
    }

    /* [PYTHON] [python options] (SCRIPT | -c CODE | -m MODULE) [ARGS...] */
    int i = optind;
    if (i < argc && !strcmp(argv[i], "--"))
        i++;
    if (i < argc && !python_opt && argv[i][0] != '-' && looks_like_python(argv[i]))
        python_opt = argv[i++];
    python = tdb_which(tdb_target_python(python_opt));
    if (!python && !tdb_check_usage_only) {
        tdb_fail("cannot find '%s' on PATH (give the interpreter's path)", python_opt);
        status = TDB_EXIT_NOTFOUND;
        goto cleanup;
    }
    tdb_ptrs_push(&args, &n_args, NULL); /* the interpreter, once checked */
    int have_program = 0;
    for (; i < argc && !have_program; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "-c") || !strcmp(a, "-m")) {
            if (i + 1 >= argc || !*argv[i + 1]) {
                status = tdb_usage_error("run", "%s needs %s", a, a[1] == 'c' ? "CODE" : "a MODULE");
                goto cleanup;
            }
            tdb_ptrs_push(&args, &n_args, argv[i++]);
            tdb_ptrs_push(&args, &n_args, argv[i]);
            have_program = 1;
        } else if (a[0] == '-' && a[1]) {
            tdb_ptrs_push(&args, &n_args, argv[i]); /* a Python option */
            if ((!strcmp(a, "-X") || !strcmp(a, "-W")) && i + 1 < argc)
                tdb_ptrs_push(&args, &n_args, argv[++i]);
        } else if (tdb_check_usage_only) {
            tdb_ptrs_push(&args, &n_args, argv[i]); /* a SCRIPT: looked at only when run */
            have_program = 1;
        } else {
            struct stat st;
            if (stat(a, &st) < 0) {
                tdb_fail("cannot run script '%s': %s", a, strerror(errno));
                status = TDB_EXIT_NOTFOUND;
                goto cleanup;
            }
            if (access(a, R_OK) < 0) {
                tdb_fail("cannot read script '%s': %s", a, strerror(errno));
                status = TDB_EXIT_NOEXEC;
                goto cleanup;
            }
            tdb_ptrs_push(&args, &n_args, argv[i]);
            have_program = 1;
        }
    }
    if (!have_program) {
        status = tdb_usage_error("run", "no program: give SCRIPT, -c CODE or -m MODULE");
        goto cleanup;
    }
    for (; i < argc; i++)
        tdb_ptrs_push(&args, &n_args, argv[i]);
    tdb_ptrs_push(&args, &n_args, NULL);
    if (tdb_check_usage_only) {
        status = TDB_EXIT_OK;
        goto cleanup;
    }

    if ((status = check_python(python)) != 0 || (status = resolve_script_python(&python)) != 0)
        goto cleanup;
    args[0] = python;
    if (preload) {
        status = run_preloaded(&opts, args);
        goto cleanup;
    }

    opts.session.light = 1; /* a light session when the stops allow it (session/light.c) */
    s = tdb_cli_new(&opts, &err);
    if (!s) {
        status = tdb_error_exit(&err);
        goto cleanup;
    }
    status = tdb_cli_run(s, args, &err);
    if (err.set)
        tdb_print_error(&err);
cleanup:
    tdb_cli_free(s);
    free(python);
    free(args);
    tdb_session_options_release(&opts.session);
    return status;
}
