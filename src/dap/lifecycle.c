/*
 * dap/lifecycle.c: the requests that begin and end a debugging session
 * (see dap/dap.h): initialize, launch (with the program's stdio through
 * pipes or a terminal the client runs), attach (now, or when a paused
 * process announces itself), configurationDone, disconnect, terminate;
 * and the options launch and attach share, checked by the core's one
 * validator.
 */
#include "dap/internal.h"

#include "targets/ranks.h"

#include "targets/ptrace_check.h"

#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <sys/epoll.h>
#include <sys/stat.h>
#include <unistd.h>

/* ---- arguments ---- */

/* ARGS[KEY] as a boolean (absent: DEF); -1 when it is something else. */
static int get_bool(const json_t *args, const char *key, int def)
{
    json_t *v = json_object_get(args, key);
    return !v || json_is_null(v) ? def : json_is_boolean(v) ? json_is_true(v) : -1;
}

/* ARGS[KEY] as strings: one string or an array of them, pushed on *LIST
 * (borrowed from ARGS).  -1 when it is something else. */
static int get_strings(const json_t *args, const char *key, char ***list, size_t *n)
{
    json_t *v = json_object_get(args, key);
    if (!v || json_is_null(v))
        return 0;
    if (json_is_string(v)) {
        tdb_ptrs_push(list, n, (char *)json_string_value(v));
        return 0;
    }
    if (!json_is_array(v))
        return -1;
    size_t i;
    json_t *e;
    json_array_foreach(v, i, e)
    {
        if (!json_is_string(e))
            return -1;
        tdb_ptrs_push(list, n, (char *)json_string_value(e));
    }
    return 0;
}

/* A string argument that must be a non-empty line, or NULL when absent;
 * *BAD set when present and not such a string. */
static const char *get_line(const json_t *args, const char *key, int *bad)
{
    json_t *v = json_object_get(args, key);
    if (!v || json_is_null(v))
        return NULL;
    const char *s = json_string_value(v);
    if (!s || !*s || strlen(s) != json_string_length(v)) {
        *bad = 1;
        return NULL;
    }
    return s;
}

/* The options both launch and attach take; -1 after failing the request. */
static int common_options(tdb_dap *d, int seq, const char *cmd, const json_t *args)
{
    tdb_session_options *o = &d->opts;
    char **modules = NULL, **symbols = NULL, **mine = NULL;
    size_t n_modules = 0, n_symbols = 0, n_mine = 0;
    tdb_error err = {0};
    int bad = get_strings(args, "stopAtImport", &modules, &n_modules) < 0 ||
              get_strings(args, "symbols", &symbols, &n_symbols) < 0 ||
              get_strings(args, "myCode", &mine, &n_mine) < 0;
    if (bad)
        tdb_dap_fail(d, seq, cmd, "'stopAtImport', 'symbols' and 'myCode' take a string or an "
                                  "array of strings");
    /* The core's validator, as the command line's: only the names differ. */
    for (size_t i = 0; !bad && i < n_modules; i++)
        if ((bad = tdb_session_options_add(o, TDB_OPTS_STOP_AT_IMPORT, modules[i], &err) < 0))
            tdb_dap_fail(d, seq, cmd, "'stopAtImport': %s", err.msg);
    for (size_t i = 0; !bad && i < n_symbols; i++)
        if ((bad = tdb_session_options_add(o, TDB_OPTS_SYMBOLS, symbols[i], &err) < 0))
            tdb_dap_fail(d, seq, cmd, "'symbols': %s of library paths", err.msg);
    for (size_t i = 0; !bad && i < n_mine; i++)
        if ((bad = tdb_session_options_add(o, TDB_OPTS_MY_CODE, mine[i], &err) < 0))
            tdb_dap_fail(d, seq, cmd, "'myCode': %s", err.msg);
    free(modules);
    free(symbols);
    free(mine);
    if (bad)
        return -1;
    const json_t *into = json_object_get(args, "stepInto");
    if (into && !json_is_null(into)) {
        int mode = tdb_step_into_parse(json_string_value(into), &err);
        if (mode < 0) {
            tdb_dap_fail(d, seq, cmd, "'stepInto': %s", err.msg);
            return -1;
        }
        o->step_into = (tdb_step_into)mode;
    }
    int all = get_bool(args, "allSymbols", 0), cpy = get_bool(args, "cpythonSymbols", 0);
    int raw = get_bool(args, "raw", 0), entry = get_bool(args, "stopOnEntry", 0);
    int sub = get_bool(args, "subProcess", 1);
    if (all < 0 || cpy < 0 || raw < 0 || entry < 0 || sub < 0) {
        tdb_dap_fail(d, seq, cmd, "'allSymbols', 'cpythonSymbols', 'raw', 'stopOnEntry' and "
                                  "'subProcess' are true or false");
        return -1;
    }
    d->sub_process = sub;
    /* A launched program's Python children wait for the session the
     * client opens for each (a client that cannot open one: no wait). */
    o->children_wait = sub && d->start_debugging ? TDB_DAP_CHILDREN_WAIT_S : 0;
    o->all_symbols = all;
    o->cpython_symbols = cpy;
    o->raw = raw;
    d->stop_on_entry = entry;
    return 0;
}

static int new_session(tdb_dap *d, int seq, const char *cmd)
{
    tdb_frontend fe;
    tdb_error err = {0};
    tdb_dap_frontend(d, &fe);
    d->s = tdb_session_new(&d->opts, &fe, &err);
    if (!d->s) {
        tdb_dap_fail(d, seq, cmd, "%s", err.msg);
        return -1;
    }
    d->vals = tdb_values_new(d->s);
    return 0;
}

/* catchThrow: true (every C++ throw) or a class name (it and its subclasses). */
static int catch_throw_option(tdb_dap *d, int seq, const char *cmd, const json_t *args)
{
    json_t *v = json_object_get(args, "catchThrow");
    if (!v || json_is_null(v) || json_is_false(v))
        return 0;
    if (!json_is_true(v) && !json_is_string(v)) {
        tdb_dap_fail(d, seq, cmd, "'catchThrow' is true or a C++ class name (c10::Error: it and "
                                  "the classes derived from it)");
        return -1;
    }
    tdb_error err = {0};
    json_t *bp = tdb_session_catchpoint_add(d->s, json_string_value(v), &err);
    if (!bp || !json_integer_value(json_object_get(bp, "id"))) {
        const char *msg = bp ? json_string_value(json_object_get(bp, "message")) : err.msg;
        tdb_dap_fail(d, seq, cmd, "'catchThrow': %s", msg ? msg : "gdb refused it");
        json_decref(bp);
        return -1;
    }
    json_object_set(d->exc_bps, "catchThrow", json_object_get(bp, "id"));
    json_decref(bp);
    return 0;
}

/* ---- the life cycle ---- */

void tdb_dap_initialize(tdb_dap *d, int seq, const json_t *args)
{
    json_t *lines = json_object_get(args, "linesStartAt1");
    d->line_base = json_is_false(lines) ? -1 : 0;
    d->column_base = json_is_false(json_object_get(args, "columnsStartAt1")) ? 0 : 1;
    d->run_in_terminal = json_is_true(json_object_get(args, "supportsRunInTerminalRequest"));
    d->start_debugging = json_is_true(json_object_get(args, "supportsStartDebuggingRequest"));
    d->initialized = 1;
    json_t *filters = json_pack(
        "[{s:s, s:s, s:s, s:b}, {s:s, s:s, s:s, s:b}, {s:s, s:s, s:s, s:b}, {s:s, s:s, s:s, "
        "s:b}, {s:s, s:s, s:s, s:b}]",
        "filter", "cpp_throw", "label", "C++: every throw", "description",
        "Stop where any C++ exception is thrown (gdb's 'catch throw')", "default", 0, "filter",
        "c10_error", "label", "C++: c10 errors (torch's checks)", "description",
        "Stop where torch throws a c10 exception (a failed TORCH_CHECK: a shape mismatch, a "
        "bad argument) before Python sees it",
        "default", 0, "filter", "raised", "label", "Python: raised exceptions", "description",
        "Stop where Python raises an exception, at the raising line (in your code or a "
        "library's)", "default", 0, "filter", "uncaught", "label",
        "Python: uncaught exceptions", "description",
        "Stop where an exception no handler catches leaves the thread's outermost Python "
        "frame, before the program dies (CPython before 3.12 then runs every frame traced)",
        "default", 0, "filter", "userUnhandled", "label", "Python: user uncaught exceptions",
        "description",
        "Stop where an exception your code does not handle is about to return into a "
        "library's code that does not handle it either (your code: the program's folder, the "
        "working directory, --my-code)",
        "default", 0);
    json_t *caps = json_pack("{s:b, s:b, s:b, s:b, s:b, s:o}", "supportsConfigurationDoneRequest",
                             1, "supportsFunctionBreakpoints", 1, "supportsEvaluateForHovers", 1,
                             "supportsTerminateRequest", 1, "supportsDelayedStackTraceLoading", 1,
                             "exceptionBreakpointFilters", filters);
    static const char *const both[] = {
        /* both languages: Python's in the process, C/C++'s by gdb */
        "supportsConditionalBreakpoints", "supportsHitConditionalBreakpoints", "supportsLogPoints",
        /* Python's by the hook at a Python stop, C/C++'s by gdb */
        "supportsSetVariable", "supportsSetExpression",
        /* Python names of the frame; gdb's in a native one */
        "supportsCompletionsRequest",
        /* C++ throws (the filters above); Python's not yet */
        "supportsExceptionInfoRequest",
    };
    for (size_t i = 0; i < sizeof(both) / sizeof(both[0]); i++)
        json_object_set_new(caps, both[i], json_true());
    /* Python only: the calls of a Python line (doc/vscode.md) */
    json_object_set_new(caps, "supportsStepInTargetsRequest", json_true());
    tdb_dap_native_capabilities(caps);
    tdb_dap_ok(d, seq, "initialize", caps);
}

/* The rest of a launch once the program's stdin, stdout and stderr are
 * known: the session, the program's environment, catchThrow, stopOnEntry,
 * then 'initialized'.  -1 after failing the launch. */
static int launch_with_stdio(tdb_dap *d, int stdio[3])
{
    const json_t *args = d->start_args;
    int seq = d->start_seq;
    d->opts.program_stdio = stdio;
    /* Light when the breakpoints set before configurationDone are all
     * Python's (session/light.c), as 'tdebug run''s. */
    d->opts.light = 1;
    int rc = new_session(d, seq, "launch");
    d->opts.program_stdio = NULL;
    if (rc < 0)
        return -1;
    const char *key;
    json_t *value;
    json_object_foreach(json_object_get(args, "env"), key, value)
    {
        tdb_error err = {0};
        if (!json_is_string(value) && !json_is_null(value)) {
            tdb_dap_fail(d, seq, "launch", "'env': '%s' is not a string (or null to unset it)", key);
            return -1;
        }
        if (tdb_session_program_setenv(d->s, key, json_string_value(value), &err) < 0) {
            tdb_dap_fail(d, seq, "launch", "'env': %s", err.msg);
            return -1;
        }
    }
    if (catch_throw_option(d, seq, "launch", args) < 0)
        return -1;
    if (d->stop_on_entry) {
        /* The program's first line (a script: its module code), else before
         * any Python runs: the interpreter's main. */
        tdb_error err = {0};
        const char *program = json_string_value(json_object_get(args, "program"));
        size_t n = program ? strlen(program) : 0;
        char *where = n > 3 && !strcmp(program + n - 3, ".py")
                          ? tdb_xasprintf("%s:<module>", program) : tdb_xstrdup("Py_BytesMain");
        json_t *bp = tdb_session_breakpoint_add(d->s, where, 1, &err);
        free(where);
        d->entry_bp = bp ? (int)json_integer_value(json_object_get(bp, "id")) : 0;
        json_decref(bp);
    }
    d->start_cmd = "launch";
    tdb_dap_send(d, tdb_dap_event("initialized", NULL));
    return 0;
}

void tdb_dap_launch_with_pipes(tdb_dap *d)
{
    /* The program writes to pipes: its output becomes 'output' events, and
     * the client's channel carries nothing but the protocol. */
    int outp[2] = {-1, -1}, errp[2] = {-1, -1};
    int null = open("/dev/null", O_RDONLY | O_CLOEXEC);
    if (pipe2(outp, O_CLOEXEC) < 0 || pipe2(errp, O_CLOEXEC) < 0 || null < 0) {
        tdb_dap_fail(d, d->start_seq, "launch", "cannot make pipes for the program's output: %s",
                     strerror(errno));
    } else {
        int stdio[3] = {null, outp[1], errp[1]};
        if (launch_with_stdio(d, stdio) == 0) {
            d->out_fd = outp[0];
            d->err_fd = errp[0];
            outp[0] = errp[0] = -1;
            fcntl(d->out_fd, F_SETFL, O_NONBLOCK);
            fcntl(d->err_fd, F_SETFL, O_NONBLOCK);
            tdb_dap_watch(d, d->out_fd);
            tdb_dap_watch(d, d->err_fd);
        }
    }
    for (int k = 0; k < 2; k++) {
        if (outp[k] >= 0)
            close(outp[k]);
        if (errp[k] >= 0)
            close(errp[k]);
    }
    if (null >= 0)
        close(null);
}

/* The program's terminal: the client runs 'tdebug dap --terminal FIFO' in
 * one (runInTerminal), which writes its tty's name into the FIFO and stays
 * until the session ends; the program then reads and writes that tty. */
static void launch_in_terminal(tdb_dap *d, const char *kind)
{
    char self[PATH_MAX], dir[] = "/tmp/tdebug-dap-XXXXXX";
    ssize_t n = readlink("/proc/self/exe", self, sizeof(self) - 1);
    if (n <= 0 || !mkdtemp(dir)) {
        tdb_dap_output(d, "console", "tdebug: no terminal for the program (%s): its output comes "
                                     "here\n", strerror(errno));
        tdb_dap_launch_with_pipes(d);
        return;
    }
    self[n] = '\0';
    d->tty_dir = tdb_xstrdup(dir);
    char *fifo = tdb_xasprintf("%s/tty", dir);
    if (mkfifo(fifo, 0600) < 0 ||
        (d->tty_fifo = open(fifo, O_RDONLY | O_NONBLOCK | O_CLOEXEC)) < 0) {
        tdb_dap_output(d, "console", "tdebug: no terminal for the program (%s): its output comes "
                                     "here\n", strerror(errno));
        free(fifo);
        tdb_dap_launch_with_pipes(d);
        return;
    }
    tdb_dap_watch(d, d->tty_fifo);
    char *title = tdb_xasprintf("tdebug: %s", d->program ? tdb_base_name(d->program) : "python");
    char cwd[PATH_MAX];
    json_t *req = json_pack("{s:s, s:s, s:{s:s, s:o, s:s, s:[s, s, s, o]}}", "type", "request",
                            "command", "runInTerminal", "arguments", "kind", kind, "title",
                            tdb_dap_string(title, strlen(title)), "cwd",
                            getcwd(cwd, sizeof(cwd)) ? cwd : "/", "args", self, "dap",
                            "--terminal", tdb_dap_string(fifo, strlen(fifo)));
    tdb_dap_send(d, req);
    d->rit_seq = d->seq;
    free(title);
    free(fifo);
}

void tdb_dap_terminal_ready(tdb_dap *d)
{
    char line[PATH_MAX];
    ssize_t n = read(d->tty_fifo, line, sizeof(line) - 1);
    if (n < 0 && (errno == EAGAIN || errno == EINTR))
        return;
    epoll_ctl(d->epfd, EPOLL_CTL_DEL, d->tty_fifo, NULL);
    /* The FIFO stays open: its other end waits for it to close (the end of
     * the session) to let the terminal go. */
    line[n > 0 ? n : 0] = '\0';
    line[strcspn(line, "\n")] = '\0';
    int tty = line[0] == '/' ? open(line, O_RDWR | O_NOCTTY | O_CLOEXEC) : -1;
    tdb_dap_forget_terminal_dir(d);
    if (tty < 0) {
        tdb_dap_output(d, "console", "tdebug: cannot use the terminal '%s' (%s): the program's "
                                     "output comes here\n", line, n > 0 ? strerror(errno) : "none given");
        tdb_dap_launch_with_pipes(d);
        return;
    }
    int stdio[3] = {tty, tty, tty};
    launch_with_stdio(d, stdio);
    close(tty);
}

/* Forget what an earlier launch or attach that failed left. */
static void forget_start(tdb_dap *d)
{
    tdb_session_options_release(&d->opts);
    memset(&d->opts, 0, sizeof(d->opts));
    free(d->argv);
    free(d->python);
    free(d->program);
    json_decref(d->start_args);
    d->argv = NULL;
    d->argc = 0;
    d->python = d->program = NULL;
    d->start_args = NULL;
    d->stop_on_entry = d->attach = 0;
}

/* The start of a launch or an attach (CMD): refused when the connection
 * has a program already; else what an earlier one left is forgotten and
 * ARGS kept (d->start_args, returned). */
static const json_t *begin(tdb_dap *d, int seq, const char *cmd, const json_t *args)
{
    if (d->s || d->announce || d->tty_fifo >= 0) {
        tdb_dap_fail(d, seq, cmd, "this connection already has a program: one launch or attach "
                                  "per session");
        return NULL;
    }
    forget_start(d);
    d->start_args = args ? json_deep_copy(args) : json_object();
    return d->start_args;
}

void tdb_dap_launch(tdb_dap *d, int seq, const json_t *args)
{
    int bad = 0;
    if (!(args = begin(d, seq, "launch", args)))
        return;
    const char *program = get_line(args, "program", &bad), *module = get_line(args, "module", &bad);
    const char *python = get_line(args, "python", &bad), *cwd = get_line(args, "cwd", &bad);
    if (bad || !program == !module) {
        tdb_dap_fail(d, seq, "launch", bad ? "'program', 'module', 'python' and 'cwd' are non-empty "
                                             "strings"
                                           : "give 'program' (a script) or 'module' (run as "
                                             "python -m), not both");
        return;
    }
    if (module && !tdb_valid_module_name(module)) {
        tdb_dap_fail(d, seq, "launch", "'module': '%s' is not a module name", module);
        return;
    }
    json_t *env = json_object_get(args, "env"), *pargs = json_object_get(args, "args");
    if ((env && !json_is_object(env) && !json_is_null(env)) ||
        (pargs && !json_is_array(pargs) && !json_is_null(pargs))) {
        tdb_dap_fail(d, seq, "launch", "'env' is an object of strings and 'args' an array of "
                                       "strings");
        return;
    }
    if (common_options(d, seq, "launch", args) < 0)
        return;
    if (cwd) {
        struct stat st;
        if (stat(cwd, &st) < 0 || !S_ISDIR(st.st_mode)) {
            tdb_dap_fail(d, seq, "launch", "cannot use 'cwd' '%s': %s", cwd,
                         errno == 0 || S_ISDIR(st.st_mode) ? "Not a directory" : strerror(errno));
            return;
        }
        if (d->cwd_fd < 0)
            d->cwd_fd = open(".", O_RDONLY | O_DIRECTORY | O_CLOEXEC);
        if (chdir(cwd) < 0) {
            tdb_dap_fail(d, seq, "launch", "cannot use 'cwd' '%s': %s", cwd, strerror(errno));
            return;
        }
    }
    char *interp = tdb_which(tdb_target_python(python));
    if (!interp || access(interp, X_OK) < 0) {
        tdb_dap_fail(d, seq, "launch", "cannot run the interpreter '%s': %s (give 'python', e.g. "
                                       "/usr/bin/python3)",
                     tdb_target_python(python), interp ? strerror(errno) : "not found on PATH");
        free(interp);
        return;
    }
    d->python = interp;
    tdb_ptrs_push(&d->argv, &d->argc, interp);
    if (program) {
        if (access(program, R_OK) < 0) {
            tdb_dap_fail(d, seq, "launch", "cannot run script '%s': %s", program, strerror(errno));
            return;
        }
        d->program = realpath(program, NULL);
        tdb_ptrs_push(&d->argv, &d->argc, d->program);
    } else {
        tdb_ptrs_push(&d->argv, &d->argc, "-m");
        tdb_ptrs_push(&d->argv, &d->argc, (char *)module);
        d->program = tdb_xasprintf("python -m %s", module);
    }
    size_t i;
    json_t *a;
    json_array_foreach(pargs, i, a)
    {
        if (!json_is_string(a) || strlen(json_string_value(a)) != json_string_length(a)) {
            tdb_dap_fail(d, seq, "launch", "'args' is an array of strings (without NUL bytes)");
            return;
        }
        tdb_ptrs_push(&d->argv, &d->argc, (char *)json_string_value(a));
    }
    d->start_seq = seq;
    const char *console = json_string_value(json_object_get(args, "console"));
    if (console && strcmp(console, "internalConsole") != 0 &&
        strcmp(console, "integratedTerminal") != 0 && strcmp(console, "externalTerminal") != 0) {
        tdb_dap_fail(d, seq, "launch", "'console' is internalConsole, integratedTerminal or "
                                       "externalTerminal");
        return;
    }
    if (d->run_in_terminal && (!console || strcmp(console, "internalConsole") != 0)) {
        launch_in_terminal(d, console && !strcmp(console, "externalTerminal") ? "external"
                                                                              : "integrated");
        return;
    }
    if (console && strcmp(console, "internalConsole") != 0)
        tdb_dap_output(d, "console", "tdebug: this client runs no terminal for the program: its "
                                     "output comes here, its input is empty\n");
    tdb_dap_launch_with_pipes(d);
}

int tdb_dap_attach_now(tdb_dap *d, pid_t pid, const json_t *announcement)
{
    tdb_resolution target = {0};
    tdb_error err = {0};
    int rc = tdb_attach_prepare(pid, NULL, &target, NULL, &err);
    if (rc != 0) {
        tdb_dap_fail(d, d->start_seq, "attach", "%s", err.msg);
        d->start_cmd = NULL;
        tdb_resolution_release(&target);
        return -1;
    }
    if (target.note)
        tdb_dap_output(d, "console", "tdebug: %s\n", target.note);
    pid = target.pid;
    tdb_resolution_release(&target);
    if (new_session(d, d->start_seq, "attach") < 0) {
        d->start_cmd = NULL;
        return -1;
    }
    tdb_session_set_cancel_fd(d->s, d->sigfd); /* Ctrl-C while attaching */
    int attached = tdb_session_attach(d->s, pid, announcement, &d->astart, &err);
    tdb_session_set_cancel_fd(d->s, -1);
    if (attached < 0) {
        if (err.code == EPERM || err.code == ESRCH) {
            tdb_error why = {0};
            tdb_ptrace_explain(pid, NULL, err.code, &why);
            if (why.set)
                err = why;
        }
        tdb_dap_fail(d, d->start_seq, "attach", "%s", err.msg);
        d->start_cmd = NULL;
        d->ended = 1;
        return -1;
    }
    char name[64];
    snprintf(name, sizeof(name), "pid %d", (int)pid);
    tdb_dap_send(d, tdb_dap_event("process", json_pack("{s:s, s:i, s:b, s:s}", "name", name,
                                                       "systemProcessId", (int)pid,
                                                       "isLocalProcess", 1, "startMethod",
                                                       "attach")));
    if (catch_throw_option(d, d->start_seq, "attach", d->start_args) < 0) {
        d->start_cmd = NULL;
        return -1;
    }
    tdb_dap_send(d, tdb_dap_event("initialized", NULL));
    return 0;
}

void tdb_dap_attach(tdb_dap *d, int seq, const json_t *args)
{
    if (!(args = begin(d, seq, "attach", args)))
        return;
    json_t *p = json_object_get(args, "processId");
    long pid = 0;
    int wait = get_bool(args, "wait", 0);
    if (json_is_integer(p) && json_integer_value(p) > 0 && json_integer_value(p) <= 4194304)
        pid = (long)json_integer_value(p);
    else if (json_is_string(p) && tdb_parse_long(json_string_value(p), 1, 4194304, &pid) < 0)
        pid = -1;
    else if (p && !json_is_null(p) && !json_is_string(p))
        pid = -1;
    json_t *rank = json_object_get(args, "rank");
    const char *job = json_string_value(json_object_get(args, "job"));
    if (rank && !json_is_null(rank)) {
        /* The process of rank N of the distributed job running here (as
         * 'tdebug attach --rank N [--job ID]'). */
        pid_t rp;
        char *job_id = NULL;
        tdb_error err = {0};
        if (!json_is_integer(rank) || json_integer_value(rank) < 0 || pid || wait > 0) {
            tdb_dap_fail(d, seq, "attach", "'rank' is a rank (0, 1, 2, ...) of a job running "
                                           "here, given without 'processId' and 'wait'");
            return;
        }
        if (tdb_rank_pid((long)json_integer_value(rank), job, &rp, &job_id, &err) < 0) {
            tdb_dap_fail(d, seq, "attach", "%s", err.msg);
            return;
        }
        tdb_dap_output(d, "console", "tdebug: rank %lld of job '%s' is pid %d\n",
                       (long long)json_integer_value(rank), job_id, (int)rp);
        free(job_id);
        pid = rp;
    }
    if (pid < 0 || wait < 0 || (!pid && !wait)) {
        tdb_dap_fail(d, seq, "attach", "give 'processId' (a process id: 'tdebug ps' lists Python "
                                       "processes), 'rank' (of a distributed job) or 'wait': true");
        return;
    }
    if (common_options(d, seq, "attach", args) < 0)
        return;
    d->attach = 1;
    d->start_seq = seq;
    d->start_cmd = "attach";
    if (!wait) {
        tdb_dap_attach_now(d, (pid_t)pid, NULL);
        return;
    }
    tdb_error err = {0};
    d->wait_pid = (pid_t)pid;
    if (tdb_dap_listen_announce(d, &err) < 0) {
        tdb_dap_fail(d, seq, "attach", "%s", err.msg);
        d->start_cmd = NULL;
        return;
    }
    tdb_dap_output(d, "console",
                   "tdebug: waiting for %s to pause at torch._C and announce itself on %s; "
                   "programs pause there when started from a shell where 'eval \"$(tdebug env)\"' "
                   "was run\n",
                   pid ? "the process" : "a process", tdb_announce_listener_path(d->announce));
}

void tdb_dap_configuration_done(tdb_dap *d, int seq, const json_t *args)
{
    (void)args;
    tdb_error err = {0};
    const char *start = d->start_cmd;
    int start_seq = d->start_seq;
    d->configured = 1;
    tdb_dap_ok(d, seq, "configurationDone", NULL);
    if (!start)
        return;
    d->start_cmd = NULL;
    if (!d->attach) {
        if (tdb_session_launch(d->s, d->argv, &err) < 0) {
            tdb_dap_fail(d, start_seq, "launch", "%s", err.msg);
            tdb_dap_end_session(d);
            return;
        }
        tdb_dap_ok(d, start_seq, "launch", NULL);
        return;
    }
    tdb_dap_ok(d, start_seq, "attach", NULL);
    if (d->astart == TDB_ATTACH_AT_LOAD) {
        tdb_dap_present_stop(d);
    } else if (d->astart == TDB_ATTACH_STOPPED && d->stop_on_entry) {
        if (tdb_session_attached_stop(d->s, &err) < 0)
            tdb_dap_output(d, "important", "tdebug: %s\n", err.msg);
        tdb_dap_present_stop(d);
    } else if (tdb_dap_resume(d, TDB_RESUME_CONTINUE, &err) < 0) {
        tdb_dap_output(d, "important", "tdebug: cannot let pid %d go on: %s\n",
                       (int)tdb_session_pid(d->s), err.msg);
    }
}

void tdb_dap_disconnect(tdb_dap *d, int seq, const json_t *args)
{
    (void)args;
    if (d->announce) {
        tdb_announce_listener_free(d->announce);
        d->announce = NULL;
    }
    tdb_dap_end_session(d);
    tdb_dap_ok(d, seq, "disconnect", NULL);
    d->done = 1;
}

void tdb_dap_terminate(tdb_dap *d, int seq, const json_t *args)
{
    (void)args;
    /* A launched program ends; an attached one is detached (tdebug never
     * kills a process it attached to). */
    tdb_dap_ok(d, seq, "terminate", NULL);
    tdb_dap_end_session(d);
}
