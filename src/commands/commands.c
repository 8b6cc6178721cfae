/*
 * commands/commands.c: the commands typed at a stop (tdb_command_exec(),
 * see commands/commands.h): the one table, dispatch and help, and the
 * commands that run the program, list source, read symbols or pass to
 * gdb's console.
 *
 * One handler a command, each filling a reply: text for a terminal and an
 * event for --json and other front-ends; the stack's, the breakpoints' and
 * the values' commands have files of their own.  Anything tdebug does not
 * know goes to gdb as a console command.
 */
#include "commands/internal.h"

#include "process/procfs.h"

#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

typedef struct command {
    const char *name;  /* "info breakpoints" */
    const char *alias; /* "i b", or NULL */
    tdb_command_fn fn;
    const char *help;
} command;

void tdb_reply_clear(tdb_reply *r)
{
    json_decref(r->event);
    tdb_buf_free(&r->text);
    memset(r, 0, sizeof(*r));
}

int tdb_command_fail(tdb_reply *r, const char *cmd, const char *fmt, ...)
{
    tdb_buf b = TDB_BUF_INIT;
    va_list ap;
    va_start(ap, fmt);
    tdb_buf_vaddf(&b, fmt, ap);
    va_end(ap);
    r->error = 1;
    tdb_buf_addf(&r->text, "%s\n", tdb_buf_str(&b));
    json_decref(r->event);
    r->event = json_pack("{s:s, s:s, s:s}", "event", "error", "command", cmd, "message",
                         tdb_buf_str(&b));
    tdb_buf_free(&b);
    return 0;
}

int tdb_command_need_stop(tdb_session *s, tdb_reply *r, const char *cmd)
{
    tdb_error why = {0};
    if (tdb_session_need_stop(s, &why) == 0)
        return 1;
    tdb_command_fail(r, cmd, "%s", why.msg);
    return 0;
}

const tdb_stop_info *tdb_command_stop(tdb_session *s)
{
    tdb_error local = {0};
    const tdb_stop_info *st = tdb_session_stop_full(s, &local);
    return st ? st : tdb_session_stop(s);
}

int tdb_command_failed(tdb_session *s, tdb_reply *r, const char *cmd, tdb_error *local,
                       tdb_error *err)
{
    if (!tdb_session_gdb_alive(s)) {
        tdb_error_set(err, local->code, "%s", local->msg);
        return -1;
    }
    return tdb_command_fail(r, cmd, "%s", local->msg);
}

/* ---- everything else is gdb's ---- */

int tdb_command_gdb(tdb_session *s, const char *cmd, tdb_reply *r, tdb_error *err)
{
    char *out = NULL;
    int resumed;
    tdb_error local = {0};
    int rc = tdb_session_gdb_console(s, cmd, &out, &resumed, &local);
    if (rc < 0) {
        tdb_error_set(err, local.code, "%s", local.msg);
        return -1;
    }
    tdb_buf_adds(&r->text, out);
    if (rc > 0) {
        r->error = 1;
        tdb_buf_addf(&r->text, "%s\n", local.msg);
        r->event = json_pack("{s:s, s:s, s:s, s:s}", "event", "error", "command", cmd, "message",
                             local.msg, "output", out);
    } else if (resumed) {
        r->resumed = 1;
        r->event = json_pack("{s:s, s:s}", "event", "running", "command", cmd);
    } else {
        r->event = json_pack("{s:s, s:s, s:s}", "event", "output", "command", cmd, "output", out);
    }
    free(out);
    return 0;
}

/* gdb's commands that take a breakpoint number, given tdebug's: the
 * number is mapped to gdb's (tdebug's internal breakpoints shift gdb's),
 * or the command refused. */
static const char *const bp_number_cmds[] = {"condition", "ignore", "commands", NULL};

/* 1 when CMD is one of those (R filled: run or refused), 0 when not. */
static int gdb_bp_number_cmd(tdb_session *s, const char *cmd, tdb_reply *r, tdb_error *err,
                             int *rc)
{
    size_t n = strcspn(cmd, " \t");
    const char *const *c;
    for (c = bp_number_cmds; *c; c++)
        if (strlen(*c) == n && strncmp(cmd, *c, n) == 0)
            break;
    if (!*c)
        return 0;
    const char *p = cmd + n;
    while (isspace((unsigned char)*p))
        p++;
    char *end = NULL;
    long id = strtol(p, &end, 10);
    if (!*p || end == p || (*end && !isspace((unsigned char)*end))) {
        *rc = tdb_command_fail(r, *c, "%s takes a breakpoint number as 'info breakpoints' "
                                      "numbers them (tdebug's)", *c);
        return 1;
    }
    int number = id > 0 && id < 1000000 ? tdb_session_breakpoint_gdb_number(s, (int)id) : -1;
    if (number < 0) {
        *rc = tdb_command_fail(r, *c, "no breakpoint %ld ('info breakpoints' lists them)", id);
        return 1;
    }
    if (number == 0) {
        *rc = tdb_command_fail(r, *c, "%s: breakpoint %ld is %s: gdb has no such breakpoint",
                               *c, id, "a Python breakpoint or not bound yet");
        return 1;
    }
    if (strcmp(*c, "commands") == 0) {
        *rc = tdb_command_fail(r, *c, "commands: the prompt cannot give gdb a list of commands; "
                                      "put them in a file for -x, run at each stop");
        return 1;
    }
    tdb_buf line = TDB_BUF_INIT;
    tdb_buf_addf(&line, "%s %d%s", *c, number, end);
    *rc = tdb_command_gdb(s, tdb_buf_str(&line), r, err);
    tdb_buf_free(&line);
    return 1;
}

/* ---- running ---- */

static int resume_cmd(tdb_session *s, tdb_resume how, const char *name, const char *args,
                      tdb_reply *r, tdb_error *err)
{
    tdb_error local = {0};
    int count = 1;
    if (*args && (how == TDB_RESUME_STEP || how == TDB_RESUME_NEXT || how == TDB_RESUME_STEPI ||
                  how == TDB_RESUME_NEXTI)) {
        char *end = NULL;
        long n = strtol(args, &end, 10);
        if (n < 1 || n > 1000000 || *end)
            return tdb_command_fail(r, name, "%s takes a count of lines, 1 or more, not '%s'",
                                    name, args);
        count = (int)n;
    }
    if (tdb_session_resume_n(s, how, count, &local) < 0) {
        if (!tdb_session_gdb_alive(s)) {
            tdb_error_set(err, local.code, "%s", local.msg);
            return -1;
        }
        if (strstr(local.msg, "Cannot find bounds of current function"))
            return tdb_command_fail(r, name, "%s: no line information here (no debug info for "
                                             "this function): 'finish' returns to its caller "
                                             "(the Python line when that is Python), 'stepi' "
                                             "steps one instruction",
                                    name);
        return tdb_command_fail(r, name, "%s", local.msg);
    }
    r->resumed = 1;
    r->event = json_pack("{s:s, s:s}", "event", "running", "command", name);
    return 0;
}

#define RESUME_CMD(fn, how, name)                                                   \
    static int fn(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)  \
    {                                                                               \
        return resume_cmd(s, how, name, args, r, err);                              \
    }
RESUME_CMD(cmd_continue, TDB_RESUME_CONTINUE, "continue")
RESUME_CMD(cmd_step, TDB_RESUME_STEP, "step")
RESUME_CMD(cmd_next, TDB_RESUME_NEXT, "next")
RESUME_CMD(cmd_finish, TDB_RESUME_FINISH, "finish")
RESUME_CMD(cmd_stepi, TDB_RESUME_STEPI, "stepi")
RESUME_CMD(cmd_nexti, TDB_RESUME_NEXTI, "nexti")

static int cmd_run(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    tdb_error local = {0};
    if (*args)
        return tdb_command_fail(r, "run", "run takes no arguments here: it starts the program "
                                          "again as tdebug started it");
    if (tdb_session_rerun(s, &local) < 0) {
        if (!tdb_session_gdb_alive(s)) {
            tdb_error_set(err, local.code, "%s", local.msg);
            return -1;
        }
        return tdb_command_fail(r, "run", "%s", local.msg);
    }
    r->resumed = 1;
    r->event = json_pack("{s:s, s:s}", "event", "running", "command", "run");
    return 0;
}

static int cmd_quit(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)s;
    (void)args;
    (void)err;
    r->quit = 1;
    return 0;
}

/* Refuse CMD (the command's name) on a process tdebug attached to. */
static int refuse_killing(tdb_session *s, const char *cmd, tdb_reply *r)
{
    return tdb_command_fail(r, cmd, "tdebug never kills a process it attached to: "
                                    "'detach' or 'quit' leaves pid %d running",
                            (int)tdb_session_pid(s));
}

static int cmd_kill(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    if (tdb_session_attached(s))
        return refuse_killing(s, "kill", r);
    return cmd_quit(s, args, r, err);
}

/* Is WORD SIGKILL as gdb takes it: "SIGKILL", "KILL" (any case) or 9? */
static int is_sigkill(const char *word, size_t n)
{
    if (n > 3 && strncasecmp(word, "SIG", 3) == 0)
        word += 3, n -= 3;
    return (n == 4 && strncasecmp(word, "KILL", 4) == 0) || (n == 1 && word[0] == '9');
}

/* Would gdb command LINE kill the program outright: `signal SIGKILL`,
 * `queue-signal 9`, `call kill(pid, 9)`?  (For a process tdebug attached
 * to, which it never kills: `kill` itself is refused the same way.) */
static int kills_program(const char *line)
{
    size_t n = strcspn(line, " \t");
    const char *args = line + n + strspn(line + n, " \t");
    if ((n == 6 && strncmp(line, "signal", 6) == 0) ||
        (n == 12 && strncmp(line, "queue-signal", 12) == 0))
        return is_sigkill(args, strcspn(args, " \t"));
    if ((n == 4 && strncmp(line, "call", 4) == 0) || (n == 5 && strncmp(line, "print", 5) == 0) ||
        (n == 1 && line[0] == 'p')) {
        /* kill(...), tgkill(...) with SIGKILL or 9 among the arguments */
        const char *k = strstr(args, "kill");
        const char *open = k ? k + 4 + strspn(k + 4, " \t") : NULL;
        if (!open || *open != '(')
            return 0;
        for (const char *p = open + 1; *p;) {
            size_t w = strcspn(p, " \t,()");
            if (w && is_sigkill(p, w))
                return 1;
            p += w ? w : 1;
        }
    }
    return 0;
}

/* ---- settings ---- */

static int cmd_set_step_into(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)err;
    if (!*args) {
        tdb_buf_addf(&r->text, "step-into is %s\n", tdb_step_into_words[tdb_session_step_into(s)]);
    } else {
        tdb_error local = {0};
        int mode = tdb_step_into_parse(args, &local);
        if (mode < 0)
            return tdb_command_fail(r, "set step-into", "%s", local.msg);
        tdb_session_set_step_into(s, (tdb_step_into)mode);
    }
    r->event = json_pack("{s:s, s:s}", "event", "step-into", "mode",
                         tdb_step_into_words[tdb_session_step_into(s)]);
    return 0;
}

static int cmd_show_step_into(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)args;
    return cmd_set_step_into(s, "", r, err);
}

/* ---- symbols, source ---- */

static int cmd_symbols(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)err;
    if (!*args)
        return tdb_command_fail(r, "symbols", "symbols needs a basic regex of library paths, "
                                              "e.g. 'mylib\\|c10'");
    tdb_error local = {0};
    if (tdb_session_read_symbols(s, args, &local) < 0)
        return tdb_command_fail(r, "symbols", "tdebug: cannot read symbols for '%s': %s", args,
                                local.msg);
    r->event = json_pack("{s:s, s:s}", "event", "symbols", "regex", args);
    return 0;
}

static int cmd_list(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    const tdb_stop_info *st = tdb_command_stop(s);
    if (*args || !st) {
        tdb_buf cmd = TDB_BUF_INIT;
        tdb_buf_addf(&cmd, "list%s%s", *args ? " " : "", args);
        int rc = tdb_command_gdb(s, tdb_buf_str(&cmd), r, err);
        tdb_buf_free(&cmd);
        return rc;
    }
    tdb_view_frame f;
    if (tdb_stackview_frame_at(st->view, tdb_session_stack_flags(s),
                               (size_t)tdb_session_selected(s), &f) < 0)
        return tdb_command_fail(r, "list", "no frame selected");
    if (f.kind == TDB_FRAME_PYTHON) {
        if (f.py->line < 0 || tdb_list_source(f.py->filename, f.py->line - 5, f.py->line + 5,
                                              f.py->line, &r->text) < 0)
            return tdb_command_fail(r, "list", "cannot list '%s': %s", f.py->filename,
                                    f.py->line < 0 ? "its line is unknown" : strerror(errno));
        r->event = json_pack("{s:s, s:s, s:i}", "event", "list", "file", f.py->filename, "line",
                             f.py->line);
        return 0;
    }
    const char *full = json_string_value(json_object_get(f.mi, "fullname"));
    const char *line = json_string_value(json_object_get(f.mi, "line"));
    if (!full || !line)
        return tdb_command_fail(r, "list", "no source for frame %d: %s has no line information "
                                           "(no debug info)",
                                f.level, f.native->function ? f.native->function : "it");
    tdb_buf cmd = TDB_BUF_INIT;
    tdb_buf_addf(&cmd, "list %s:%s", full, line);
    int rc = tdb_command_gdb(s, tdb_buf_str(&cmd), r, err);
    tdb_buf_free(&cmd);
    return rc;
}

/* The processes the program started (gdb tells of each fork), as gdb's
 * 'info inferiors' lists its own: pid, whether it still runs, its command
 * line, and the command that debugs it. */
static int cmd_info_children(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)args;
    (void)err;
    const pid_t *pids;
    size_t n = tdb_session_children(s, &pids);
    json_t *list = json_array();
    if (!n)
        tdb_buf_adds(&r->text, "the program started no process so far\n");
    for (size_t i = 0; i < n; i++) {
        char st = tdb_proc_state(pids[i], 0);
        const char *state = !st || st == 'Z' || st == 'X' ? "ended"
                            : st == 'T' || st == 't'      ? "stopped"
                                                          : "running";
        char *cmd = strcmp(state, "ended") ? tdb_proc_cmdline(pids[i], 160) : NULL;
        tdb_buf_addf(&r->text, "  pid %-7d %-8s %s", (int)pids[i], state, cmd ? cmd : "");
        if (cmd)
            tdb_buf_addf(&r->text, "  (tdebug attach %d)", (int)pids[i]);
        tdb_buf_addc(&r->text, '\n');
        json_t *c = json_pack("{s:i, s:s}", "pid", (int)pids[i], "state", state);
        if (cmd)
            tdb_json_set_str(c, "command", cmd);
        json_array_append_new(list, c);
        free(cmd);
    }
    r->event = json_pack("{s:s, s:o}", "event", "children", "children", list);
    return 0;
}

/* ---- the table ---- */

static int cmd_help(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err);

static const command commands[] = {
    {"continue", "c", cmd_continue, "let the program run to the next stop"},
    {"step", "s", cmd_step, "one line, into calls: from Python into the C/C++ it runs"},
    {"next", "n", cmd_next, "one line, over calls (a Python line at a Python stop)"},
    {"finish", "fin", cmd_finish, "until the selected frame returns (to the Python line)"},
    {"stepi", "si", cmd_stepi, "one machine instruction, into calls"},
    {"nexti", "ni", cmd_nexti, "one machine instruction, over calls"},
    {"backtrace", "bt", tdb_command_bt, "[N|all|raw|full]: this thread's stack, native and Python merged (full: C++ names whole)"},
    {"where", NULL, tdb_command_bt, "the same as bt"},
    {"frame", "f", tdb_command_frame, "[N]: select frame N as bt numbers it"},
    {"up", NULL, tdb_command_up, "[N]: select the caller's frame (Python frames included)"},
    {"down", NULL, tdb_command_down, "[N]: select the callee's frame"},
    {"info threads", "i threads", tdb_command_info_threads, "the threads, named as tdebug names frames"},
    {"thread", NULL, tdb_command_thread, "N: switch to thread N and show its frame"},
    {"info children", "i children", cmd_info_children, "the processes the program started: pid, running or ended, command line, the 'tdebug attach PID' that debugs one"},
    {"break", "b", tdb_command_break, "LOC [if COND]: a breakpoint (FUNCTION, FILE:LINE, *ADDR, FILE.py:LINE|FUNC)"},
    {"condition", NULL, tdb_command_condition, "N [COND]: stop at N only if COND (Python's or C's) holds"},
    {"ignore", NULL, tdb_command_ignore, "N COUNT: let the next COUNT hits of N go"},
    {"log", NULL, tdb_command_log, "LOC MESSAGE: a log point: print MESSAGE, {expr} parts evaluated, no stop"},
    {"dprintf", NULL, tdb_command_dprintf, "LOC,\"FMT\",ARGS: gdb's dprintf (a log point at FILE.py:LINE)"},
    {"tbreak", NULL, tdb_command_tbreak, "LOCATION: a breakpoint that stops once"},
    {"catch", NULL, tdb_command_catch, "throw [TYPE]: stop where C++ throws (a TYPE or a subclass); python-raise [TYPE]: where Python raises; python-uncaught, python-user-unhandled [TYPE]"},
    {"info breakpoints", "i b", tdb_command_info_breakpoints, "the breakpoints, with hit counts"},
    {"delete", "d", tdb_command_delete, "[N...]: delete breakpoints (all without N)"},
    {"disable", NULL, tdb_command_disable, "[N...]: disable breakpoints"},
    {"enable", NULL, tdb_command_enable, "[N...]: enable breakpoints"},
    {"list", "l", cmd_list, "the source around the selected frame (then gdb's list)"},
    {"py-bt", NULL, tdb_command_py_bt, "this thread's Python stack, read from memory (no python3-dbg)"},
    {"py-up", NULL, tdb_command_py_up, "select the next older Python frame"},
    {"py-down", NULL, tdb_command_py_down, "select the next newer Python frame"},
    {"py-list", NULL, tdb_command_py_list, "[LINE|START,END]: the source around the selected Python frame"},
    {"py-locals", NULL, tdb_command_py_locals, "the selected Python frame's variables"},
    {"py-print", NULL, tdb_command_py_print, "NAME: one Python variable (local, global or builtin)"},
    {"py-eval", NULL, tdb_command_py_eval, "EXPR: run a Python expression in the selected frame (at a Python stop)"},
    {"py-exec", NULL, tdb_command_py_exec, "STMTS: run Python statements there (x = 3 sets a local)"},
    {"args", NULL, tdb_command_args, "the selected native frame's typed arguments"},
    {"tensor", NULL, tdb_command_tensor, "EXPR: an at::Tensor, TensorImpl* or Python tensor"},
    {"set step-into", NULL, cmd_set_step_into, "mine|operator|binding: where a step from Python stops (your code, torch's operator, the binding)"},
    {"show step-into", NULL, cmd_show_step_into, "where a step from Python stops"},
    {"symbols", NULL, cmd_symbols, "REGEX: read the symbols of matching libraries (basic regex)"},
    {"run", "r", cmd_run, "start the program again from the beginning (Python breakpoints too)"},
    {"kill", NULL, cmd_kill, "end a program tdebug started (refused after an attach)"},
    {"detach", NULL, cmd_quit, "leave an attached process running and end"},
    {"quit", "q", cmd_quit, "end: kill a program tdebug started, detach from one it attached to"},
    {"help", "h", cmd_help, "this list"},
};

static int cmd_help(tdb_session *s, const char *args, tdb_reply *r, tdb_error *err)
{
    (void)s;
    (void)args;
    (void)err;
    tdb_buf_adds(&r->text, "tdebug commands (anything else goes to gdb as a console command;\n"
                           "Enter repeats step, next and finish):\n");
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        tdb_buf name = TDB_BUF_INIT;
        tdb_buf_adds(&name, commands[i].name);
        if (commands[i].alias)
            tdb_buf_addf(&name, ", %s", commands[i].alias);
        tdb_buf_addf(&r->text, "  %-22s %s\n", tdb_buf_str(&name), commands[i].help);
        tdb_buf_free(&name);
    }
    r->event = json_pack("{s:s}", "event", "help");
    return 0;
}

/* Does LINE start with command word(s) NAME, followed by the end or a
 * space?  *ARGS then points after it, spaces skipped. */
static int matches(const char *line, const char *name, const char **args)
{
    size_t n = strlen(name);
    if (strncmp(line, name, n) != 0 || (line[n] && !isspace((unsigned char)line[n])))
        return 0;
    const char *a = line + n;
    while (isspace((unsigned char)*a))
        a++;
    *args = a;
    return 1;
}

/* The commands a light session answers as it is (session/light.c): over
 * the core's data alone (the Python hook, memory, tdebug's breakpoint
 * table, its own unwinding, which upgrades by itself where gdb must name a
 * frame).  break, tbreak and log too, for a Python location.  Anything
 * else sees gdb's whole view: the session becomes an ordinary one first. */
static const char *const light_commands[] = {
    "continue", "step", "next", "finish", "backtrace", "where", "info breakpoints",
    "condition", "ignore", "delete", "disable", "enable", "py-bt", "py-up", "py-down",
    "py-list", "py-locals", "py-print", "py-eval", "py-exec", "set step-into",
    "show step-into", "info children", "kill", "quit", "detach", "help", "run", NULL};

static int needs_gdb_view(tdb_session *s, const command *c, const char *args)
{
    (void)s;
    if (!c)
        return 1;
    for (const char *const *n = light_commands; *n; n++)
        if (strcmp(c->name, *n) == 0)
            return 0;
    if (c->fn == tdb_command_break || c->fn == tdb_command_tbreak || c->fn == tdb_command_log) {
        char *loc = tdb_xstrndup(args, strcspn(args, " \t"));
        int python = *loc && tdb_session_location_is_python(loc);
        free(loc);
        return !python;
    }
    return 1;
}

int tdb_command_exec(tdb_session *s, const char *line, tdb_reply *r, tdb_error *err)
{
    memset(r, 0, sizeof(*r));
    while (isspace((unsigned char)*line))
        line++;
    char *cmd = tdb_xstrdup(line);
    size_t len = strlen(cmd);
    while (len && isspace((unsigned char)cmd[len - 1]))
        cmd[--len] = '\0';
    int rc = 0;
    const command *found = NULL;
    const char *args = "";
    /* Longest name first: "info breakpoints" before a gdb "info". */
    size_t best = 0;
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++) {
        const char *a;
        const char *names[2] = {commands[i].name, commands[i].alias};
        for (int k = 0; k < 2; k++)
            if (names[k] && strlen(names[k]) > best && matches(cmd, names[k], &a)) {
                found = &commands[i];
                args = a;
                best = strlen(names[k]);
            }
    }
    /* gdb's own spellings of a few. */
    const char *a;
    if (!found && (matches(cmd, "info break", &a) || matches(cmd, "info b", &a) ||
                   matches(cmd, "i break", &a))) {
        for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
            if (commands[i].fn == tdb_command_info_breakpoints)
                found = &commands[i];
        args = a;
    } else if (!found && (matches(cmd, "thread apply all bt", &a) ||
                          matches(cmd, "thread apply all backtrace", &a))) {
        rc = tdb_command_need_stop(s, r, "bt") ? tdb_command_all_threads(s, r, err) : 0;
        free(cmd);
        return rc;
    }
    if (*cmd && needs_gdb_view(s, found, args) && tdb_session_upgrade(s, err) < 0) {
        free(cmd);
        return -1;
    }
    if (!*cmd)
        rc = 0;
    else if (found)
        rc = found->fn(s, args, r, err);
    else if (tdb_session_attached(s) && kills_program(cmd))
        rc = refuse_killing(s, cmd, r);
    else if (!gdb_bp_number_cmd(s, cmd, r, err, &rc))
        rc = tdb_command_gdb(s, cmd, r, err);
    free(cmd);
    return rc;
}

char **tdb_command_complete(tdb_session *s, const char *prefix)
{
    char **out = NULL, **symbols = NULL;
    size_t n = 0, len = strlen(prefix);
    for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
        if (strncmp(commands[i].name, prefix, len) == 0 && !strchr(commands[i].name, ' '))
            tdb_ptrs_push(&out, &n, tdb_xstrdup(commands[i].name));
    if (len >= 2)
        symbols = tdb_session_complete_symbols(s, prefix);
    for (char **p = symbols; p && *p; p++)
        tdb_ptrs_push(&out, &n, *p);
    free(symbols);
    tdb_ptrs_push(&out, &n, NULL);
    return out;
}
