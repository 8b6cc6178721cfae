/*
 * cli/cli.c: the terminal front-end of a debugging session (see cli/cli.h): it
 * presents stops and events as text or JSON lines, reads commands (the
 * prompt, or a -x file), and decides what Ctrl-C, quitting and the end of
 * input mean.  Everything about gdb, breakpoints and stacks is the session
 * core's (src/session/session.h); the commands typed at a stop and the
 * text of a stop are the command language's (src/commands/).
 */
#include "cli/cli.h"

#include "base/signals.h"
#include "commands/commands.h"
#include "targets/proc.h"

#include <ctype.h>
#include <errno.h>
#include <poll.h>
#include <readline/history.h>
#include <readline/readline.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

struct tdb_cli {
    tdb_cli_options opts;
    tdb_session *s;
    int sigfd;
    /* terminal */
    int tty;             /* fd of the controlling terminal, or -1 */
    pid_t our_pgrp;
    struct termios tty_modes;
    pid_t program;       /* a program tdebug started: it gets the terminal */
    /* what ends the session */
    int quit;            /* the user quit (or input ended) */
    int read_stdin;      /* commands were read from stdin: its end is a quit */
    int input_ended;     /* stdin ended with the last command read */
    int fatal_signal;    /* SIGINT (batch), SIGTERM, SIGHUP: end the session */
    int gdb_died;
    /* commands */
    FILE *commands;      /* -x FILE while it lasts */
    char *last_repeat;   /* the last step/next/finish, which Enter repeats */
    tdb_resume go_on;    /* how the program goes on from this stop when the
                          * mode continues (--batch, a tour's Enter): the
                          * hook's choice, else TDB_RESUME_CONTINUE */
    tdb_stop_hook hook;
    void *hook_data;
};

/* ---- printing events ---- */

void tdb_event_json(json_t *event)
{
    char *text = json_dumps(event, JSON_COMPACT);
    if (text)
        printf("%s\n", text);
    fflush(stdout);
    free(text);
    json_decref(event);
}

void tdb_event_print(tdb_output output, const json_t *e)
{
    if (output == TDB_OUTPUT_JSON) {
        tdb_event_json(json_incref((json_t *)e));
        return;
    }
    const char *event = json_string_value(json_object_get(e, "event"));
    const char *msg = json_string_value(json_object_get(e, "message"));
    int warning = event && strcmp(event, "warning") == 0;
    if (event && strcmp(event, "log") == 0) /* a log point's line, as gdb's dprintf */
        fprintf(stdout, "%s\n", msg ? msg : "");
    else
        fprintf(warning ? stderr : stdout, "tdebug: %s%s\n", warning ? "warning: " : "",
                msg ? msg : "");
    fflush(stdout);
}

void tdb_event(tdb_output output, const char *event, json_t *fields, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    json_t *e = tdb_event_vnew(event, fields, fmt, ap);
    va_end(ap);
    tdb_event_print(output, e);
    json_decref(e);
}

void tdb_say_killed(tdb_output output, int sig)
{
    if (sig == SIGINT)
        tdb_event(output, "killed", NULL, "interrupted: the program was killed");
    else if (sig)
        tdb_event(output, "killed", NULL, "terminated by SIG%s: the program was killed",
                  sigabbrev_np(sig));
    else
        tdb_event(output, "killed", NULL, "quit: the program was killed");
}

void tdb_say_exited(tdb_output output, int status, int signalled)
{
    if (output == TDB_OUTPUT_JSON)
        tdb_event_json(json_pack("{s:s, s:i, s:b}", "event", "exited", "status", status,
                                 "signalled", signalled));
    else if (!signalled)
        tdb_event(output, "exited", NULL, "program exited with status %d", status);
}

static void on_event(void *data, const json_t *e)
{
    tdb_cli *c = data;
    tdb_event_print(c->opts.output, e);
}

/* gdb's own words (-v), and lines it wrote that are not MI: stderr. */
static void on_gdb_output(void *data, const char *text, size_t len)
{
    (void)data;
    fwrite(text, 1, len, stderr);
}

/* ---- the terminal ---- */

static void terminal_init(tdb_cli *c)
{
    c->tty = -1;
    c->our_pgrp = getpgrp();
    if (isatty(0) && tcgetpgrp(0) == c->our_pgrp) {
        c->tty = 0;
        tcgetattr(0, &c->tty_modes);
    }
}

/* Give the terminal to the program while it runs, like a shell running a
 * job, so it can read stdin and Ctrl-C reaches it (gdb then reports the
 * SIGINT).  Only for a program tdebug started: it has its own group. */
static void terminal_to_program(tdb_cli *c)
{
    if (c->tty >= 0 && c->program > 0)
        tcsetpgrp(c->tty, c->program);
}

static void terminal_to_us(tdb_cli *c)
{
    if (c->tty < 0)
        return;
    tcsetpgrp(c->tty, c->our_pgrp);
    tcsetattr(c->tty, TCSADRAIN, &c->tty_modes);
}

static void on_program_started(void *data, pid_t pid)
{
    tdb_cli *c = data;
    c->program = pid;
    if (tdb_session_running(c->s))
        terminal_to_program(c);
}

/* The program forked child PID: when it runs Python, say so, with the
 * command that debugs it (another terminal: this one is the program's). */
static void on_child_started(void *data, pid_t pid)
{
    tdb_cli *c = data;
    char *cmd = NULL;
    int wait = c->opts.session.children_wait;
    if (tdb_python_child(tdb_session_pid(c->s), pid, 500, &cmd) != 1)
        return;
    json_t *fields = json_pack("{s:i, s:i}", "pid", (int)pid, "waits", wait);
    tdb_json_set_str(fields, "command", cmd);
    if (strlen(cmd) > 160)
        strcpy(cmd + 157, "...");
    if (wait > 0)
        tdb_event(c->opts.output, "child", fields,
                  "the program started Python child pid %d (%s); it waits up to %d s for a "
                  "debugger: in another terminal, tdebug attach %d (with -b FILE:LINE to stop "
                  "in it)", (int)pid, cmd, wait, (int)pid);
    else
        tdb_event(c->opts.output, "child", fields,
                  "the program started Python child pid %d (%s): in another terminal, tdebug "
                  "attach %d debugs it ('run --wait-children' holds children at their start "
                  "until you do)", (int)pid, cmd, (int)pid);
    free(cmd);
}

/* ---- setting up ---- */

tdb_cli *tdb_cli_new(const tdb_cli_options *opts, tdb_error *err)
{
    tdb_cli *c = tdb_xcalloc(1, sizeof(*c));
    c->opts = *opts;
    terminal_init(c);
    c->sigfd = tdb_signals_install(0, err);
    if (c->sigfd < 0)
        goto fail;
    /* tdebug hands the terminal to the program and takes it back, as a
     * shell does, which a background process may only do with these
     * ignored.  gdb and the program get default dispositions back. */
    struct sigaction ign = {.sa_handler = SIG_IGN};
    sigaction(SIGTTOU, &ign, NULL);
    sigaction(SIGTTIN, &ign, NULL);
    if (opts->commands && !(c->commands = fopen(opts->commands, "re"))) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, errno, "cannot read commands from '%s': %s",
                           opts->commands, strerror(errno));
        goto fail;
    }
    tdb_frontend fe = {.event = on_event, .program_started = on_program_started,
                       .gdb_output = on_gdb_output, .child_started = on_child_started,
                       .data = c};
    tdb_session_options so = opts->session;
    /* A prompt or commands at a stop need gdb's whole view there. */
    so.gdb_view_at_stops = opts->output == TDB_OUTPUT_INTERACTIVE || opts->commands;
    /* --json: stdout carries only JSON; the program writes to stderr. */
    static const int json_stdio[3] = {0, 2, 2};
    if (opts->output == TDB_OUTPUT_JSON && !so.program_stdio)
        so.program_stdio = json_stdio;
    c->s = tdb_session_new(&so, &fe, err);
    if (!c->s)
        goto fail;
    tdb_session_set_cancel_fd(c->s, c->sigfd);
    return c;
fail:
    tdb_cli_free(c);
    return NULL;
}

void tdb_cli_free(tdb_cli *c)
{
    if (!c)
        return;
    tdb_session_free(c->s);
    terminal_to_us(c);
    if (c->commands)
        fclose(c->commands);
    free(c->last_repeat);
    free(c);
}

void tdb_cli_set_stop_hook(tdb_cli *c, tdb_stop_hook hook, void *data)
{
    c->hook = hook;
    c->hook_data = data;
}

int tdb_cli_program_ended(const tdb_cli *c)
{
    return tdb_session_program_ended(c->s);
}

/* ---- presenting a stop ---- */

static void print_stop(tdb_cli *c, const tdb_stop_info *st)
{
    if (c->opts.output != TDB_OUTPUT_JSON) {
        tdb_buf b = TDB_BUF_INIT;
        tdb_render_stop(c->s, st, &b);
        fputs(tdb_buf_str(&b), stdout);
        fflush(stdout);
        tdb_buf_free(&b);
        return;
    }
    tdb_stop_text t;
    tdb_stop_text_make(c->s, st, &t);
    json_t *e = json_pack("{s:s, s:s, s:s, s:i}", "event", "stopped", "reason", tdb_stop_word(st),
                          "message", t.message, "pid", (int)tdb_session_pid(c->s));
    if (st->module)
        json_object_set_new(e, "module", json_string(st->module));
    if (st->library)
        json_object_set_new(e, "library", json_string(st->library));
    if (st->signal_name)
        json_object_set_new(e, "signal", json_string(st->signal_name));
    if (st->fault_address)
        json_object_set_new(e, "fault_address", json_string(st->fault_address));
    if (st->bp_number)
        json_object_set_new(e, "breakpoint", json_pack("{s:i, s:s}", "number", st->bp_number,
                                                       "location", st->bp_location ? st->bp_location : ""));
    if (st->thread)
        json_object_set_new(e, "thread", json_integer(st->thread));
    if (t.where)
        json_object_set_new(e, "where", json_string(t.where));
    if (t.source_line)
        json_object_set_new(e, "source_line", json_string(t.source_line));
    if (st->return_value)
        json_object_set_new(e, "return_value", json_string(st->return_value));
    if (st->exception)
        json_object_set(e, "exception", st->exception);
    if (st->args)
        json_object_set(e, "args", st->args);
    if (st->reason == TDB_STOP_LOADED)
        json_object_set_new(e, "libraries_mapped",
                            json_integer((json_int_t)json_array_size(st->libraries)));
    /* a partial stop (a step between Python lines) read no native frame */
    json_object_set_new(e, "frames", st->frames ? json_incref(st->frames) : json_null());
    if (st->partial)
        json_object_set_new(e, "partial", json_true());
    json_object_set_new(e, "python_frames", st->python_frames ? json_incref(st->python_frames)
                                                              : json_null());
    json_object_set(e, "stack", st->stack);
    json_object_set_new(e, "merge", json_string(tdb_stackview_merge_name(st->view)));
    json_object_set_new(e, "gc", json_boolean(tdb_stackview_in_gc(st->view)));
    tdb_event_json(e);
    tdb_stop_text_clear(&t);
}

/* ---- reading commands ---- */

static char *prompt_line;
static int prompt_done;
static tdb_cli *completing;

static void on_line(char *line)
{
    prompt_line = line;
    prompt_done = 1;
    rl_callback_handler_remove();
}

static char *complete_one(const char *text, int state)
{
    static char **list;
    static size_t next;
    if (!state) {
        tdb_strv_free(list);
        list = completing ? tdb_command_complete(completing->s, text) : NULL;
        next = 0;
    }
    if (!list || !list[next])
        return NULL;
    return strdup(list[next++]);
}

static char **complete(const char *text, int start, int end)
{
    (void)start;
    (void)end;
    rl_attempted_completion_over = 1;
    return rl_completion_matches(text, complete_one);
}

/* What interrupted a wait for input: a signal taken into c->fatal_signal
 * (returns 1), a Ctrl-C to drop the line (2), gdb (3), nothing (0). */
static int check_signal(tdb_cli *c)
{
    int sig = tdb_signals_take();
    if (sig == SIGTERM || sig == SIGHUP) {
        c->fatal_signal = sig;
        return 1;
    }
    return sig == SIGINT ? 2 : 0;
}

/* gdb said something while we wait at the prompt: the target's end, or
 * gdb's own.  Returns 1 when the prompt must end. */
static int check_gdb(tdb_cli *c, tdb_error *err)
{
    int rc = tdb_session_poll_gdb(c->s, err);
    if (rc == TDB_WAIT_GDB_DIED) {
        c->gdb_died = 1;
        return 1;
    }
    return rc == TDB_WAIT_EXITED;
}

/* Read one command.  Returns a new string, or NULL at end of input, when a
 * terminating signal arrived (c->fatal_signal) or gdb went away. */
static char *read_command(tdb_cli *c, tdb_error *err)
{
    const char *prompt = c->opts.prompt ? c->opts.prompt : "(tdebug) ";
    if (c->commands) {
        /* -x FILE: its next line, echoed as if typed. */
        char *line = NULL;
        size_t cap = 0;
        ssize_t n = getline(&line, &cap, c->commands);
        if (n < 0) {
            /* The file is done: the session goes on as --batch would. */
            free(line);
            fclose(c->commands);
            c->commands = NULL;
            if (c->opts.output == TDB_OUTPUT_INTERACTIVE)
                c->opts.output = TDB_OUTPUT_BATCH;
            return NULL;
        }
        while (n > 0 && (line[n - 1] == '\n' || line[n - 1] == '\r'))
            line[--n] = '\0';
        if (c->opts.output != TDB_OUTPUT_JSON) {
            printf("%s%s\n", prompt, line);
            fflush(stdout);
        }
        return line;
    }
    int gdbfd = tdb_session_gdb_fd(c->s);
    c->read_stdin = 1;
    if (!isatty(0)) {
        /* Not a terminal: plain lines, still interruptible. */
        fputs(prompt, stdout);
        fflush(stdout);
        tdb_buf line = TDB_BUF_INIT;
        for (;;) {
            struct pollfd fds[3] = {{0, POLLIN, 0}, {c->sigfd, POLLIN, 0}, {gdbfd, POLLIN, 0}};
            if (poll(fds, 3, -1) < 0 && errno != EINTR)
                break;
            if (fds[1].revents & POLLIN) {
                if (check_signal(c) == 1)
                    break;
                continue;
            }
            if ((fds[2].revents & (POLLIN | POLLHUP)) && check_gdb(c, err))
                break;
            if (!(fds[0].revents & (POLLIN | POLLHUP)))
                continue;
            char ch;
            ssize_t n = read(0, &ch, 1);
            if (n <= 0) {
                c->input_ended = 1;
                if (line.len)
                    return tdb_buf_detach(&line);
                break;
            }
            if (ch == '\n')
                return tdb_buf_detach(&line);
            tdb_buf_addc(&line, ch);
        }
        tdb_buf_free(&line);
        return NULL;
    }
    rl_catch_signals = 0;
    rl_catch_sigwinch = 1;
    rl_attempted_completion_function = complete;
    completing = c;
    prompt_line = NULL;
    prompt_done = 0;
    rl_callback_handler_install(prompt, on_line);
    int ended = 0;
    while (!prompt_done && !ended) {
        struct pollfd fds[3] = {{0, POLLIN, 0}, {c->sigfd, POLLIN, 0}, {gdbfd, POLLIN, 0}};
        if (poll(fds, 3, -1) < 0) {
            if (errno == EINTR)
                continue;
            break;
        }
        if (fds[1].revents & POLLIN) {
            int what = check_signal(c);
            if (what == 2) {
                /* Ctrl-C at the prompt drops the line, as in gdb. */
                rl_free_line_state();
                rl_callback_sigcleanup();
                rl_replace_line("", 0);
                fputs("^C\n", stdout);
                rl_on_new_line();
                rl_redisplay();
            } else if (what == 1) {
                ended = 1;
            }
            continue;
        }
        if ((fds[2].revents & (POLLIN | POLLHUP)) && check_gdb(c, err)) {
            ended = 1;
            continue;
        }
        if (fds[0].revents & (POLLIN | POLLHUP))
            rl_callback_read_char();
    }
    completing = NULL;
    if (!prompt_done) {
        rl_callback_handler_remove();
        fputc('\n', stdout);
        free(prompt_line);
        return NULL;
    }
    if (prompt_line && *prompt_line)
        add_history(prompt_line);
    return prompt_line;
}

static int is_repeatable(const char *cmd)
{
    static const char *const words[] = {"step", "s", "next", "n", "finish", "fin",
                                        "stepi", "si", "nexti", "ni"};
    for (size_t i = 0; i < sizeof(words) / sizeof(words[0]); i++)
        if (strcmp(cmd, words[i]) == 0)
            return 1;
    return 0;
}

static void print_reply(tdb_cli *c, tdb_reply *r)
{
    if (c->opts.output == TDB_OUTPUT_JSON) {
        if (r->event && !r->resumed)
            tdb_event_json(json_incref(r->event));
        return;
    }
    fputs(tdb_buf_str(&r->text), stdout);
    fflush(stdout);
}

/* Commands at a stop until one resumes the program (returns 1), the user
 * quits or input ends (0, c->quit), a signal or gdb's end stops it (0), or
 * gdb fails (-1). */
static int command_loop(tdb_cli *c, tdb_error *err)
{
    for (;;) {
        int from_file = c->commands != NULL;
        if (c->opts.output != TDB_OUTPUT_INTERACTIVE && !from_file)
            return tdb_session_resume(c->s, c->go_on, err) < 0 ? -1 : 1;
        char *line = read_command(c, err);
        if (!line) {
            if (c->gdb_died)
                return -1; /* err says how */
            if (c->fatal_signal || !tdb_session_stop(c->s))
                return 0;
            if (from_file)
                continue; /* the file ended: go on as --batch */
            c->quit = 1;
            return 0;
        }
        char *cmd = line;
        while (isspace((unsigned char)*cmd))
            cmd++;
        if (!*cmd) {
            if (c->opts.empty_continues) {
                free(line);
                return tdb_session_resume(c->s, c->go_on, err) < 0 ? -1 : 1;
            }
            if (!c->last_repeat) {
                free(line);
                continue;
            }
            cmd = c->last_repeat;
        } else {
            char *end = cmd + strlen(cmd);
            while (end > cmd && isspace((unsigned char)end[-1]))
                *--end = '\0';
            free(c->last_repeat);
            c->last_repeat = is_repeatable(cmd) ? tdb_xstrdup(cmd) : NULL;
        }
        tdb_reply r;
        int rc = tdb_command_exec(c->s, cmd, &r, err);
        free(line);
        if (rc < 0) {
            tdb_reply_clear(&r);
            return -1;
        }
        print_reply(c, &r);
        int resumed = r.resumed, quit = r.quit;
        tdb_reply_clear(&r);
        if (quit) {
            c->quit = 1;
            return 0;
        }
        if (resumed)
            return 1;
    }
}

/* A stop: show it (around the hook), then what the mode does.  Returns 1
 * when the program runs again, 0 when the session ends, -1 on error. */
static int handle_stop(tdb_cli *c, tdb_error *err)
{
    /* A step between Python lines shows its line alone, and its JSON event
     * the Python frames (partial); a tour's hook gets the whole stack. */
    const tdb_stop_info *st = c->hook ? tdb_session_stop_full(c->s, err) : tdb_session_stop(c->s);
    if (!st)
        return -1;
    tdb_hook_action action = TDB_HOOK_DEFAULT;
    c->go_on = TDB_RESUME_CONTINUE;
    terminal_to_us(c);
    if (c->hook) {
        /* The hook may pass the stop by (a tour skips PLT stubs and
         * repeated hits): nothing is shown. */
        action = c->hook(c->s, TDB_HOOK_BEFORE, st, c->hook_data);
        if (action == TDB_HOOK_CONTINUE)
            return tdb_session_resume(c->s, TDB_RESUME_CONTINUE, err) < 0 ? -1 : 1;
        if (action == TDB_HOOK_QUIT) {
            c->quit = 1;
            return 0;
        }
    }
    print_stop(c, st);
    if (c->hook)
        action = c->hook(c->s, TDB_HOOK_AFTER, st, c->hook_data);
    if (action == TDB_HOOK_STEP || action == TDB_HOOK_NEXT || action == TDB_HOOK_FINISH)
        c->go_on = action == TDB_HOOK_STEP   ? TDB_RESUME_STEP
                   : action == TDB_HOOK_NEXT ? TDB_RESUME_NEXT
                                             : TDB_RESUME_FINISH;
    if (action == TDB_HOOK_QUIT) {
        c->quit = 1;
        return 0;
    }
    if (action == TDB_HOOK_CONTINUE)
        return tdb_session_resume(c->s, TDB_RESUME_CONTINUE, err) < 0 ? -1 : 1;
    if (c->opts.output != TDB_OUTPUT_INTERACTIVE && !c->commands &&
        st->reason == TDB_STOP_INTERRUPT) {
        /* In batch modes an interrupt ends the session. */
        c->fatal_signal = SIGINT;
        return 0;
    }
    return command_loop(c, err);
}

/* Was the SIGINT the program got sent by the terminal (Ctrl-C), rather
 * than by a process (kill, os.kill)?  The kernel marks the first one
 * SI_KERNEL in its siginfo. */
static int sigint_from_terminal(tdb_cli *c, const tdb_stop_info *st)
{
    int code;
    tdb_error err = {0};
    if (!st->signal_name || strcmp(st->signal_name, "SIGINT") != 0)
        return 0;
    return tdb_session_siginfo_code(c->s, &code, &err) == 0 && code == 0x80;
}

/* While the program runs, is the end of the input the commands came from
 * to be watched?  Not when the program has the terminal (a Ctrl-D there is
 * the program's), nor when no command came from stdin yet. */
static int watches_input(const tdb_cli *c)
{
    return c->opts.output == TDB_OUTPUT_INTERACTIVE && !c->commands && c->read_stdin &&
           !(c->tty >= 0 && c->program > 0);
}

/* Has stdin ended?  Readable with nothing to read: a closed pipe, a file
 * read to its end, a Ctrl-D on an empty line of a terminal.  Nothing is
 * read: a line typed meanwhile waits for the next prompt. */
static int input_ended(tdb_cli *c)
{
    struct pollfd p = {0, POLLIN, 0};
    int avail = 0;
    if (c->input_ended)
        return 1;
    if (poll(&p, 1, 0) != 1 || !(p.revents & (POLLIN | POLLHUP)))
        return 0;
    if (p.revents & (POLLERR | POLLNVAL))
        return 1;
    return ioctl(0, FIONREAD, &avail) == 0 && avail == 0;
}

/* How often a running program's session looks at its input's end. */
#define INPUT_WATCH_MS 250

/* The event loop while the program runs.  Returns 0 when the program
 * ended or the session should end, -1 on error. */
static int event_loop(tdb_cli *c, tdb_error *err)
{
    int interrupts = 0;
    for (;;) {
        if (tdb_session_running(c->s))
            terminal_to_program(c);
        int watch = watches_input(c);
        if (watch && tdb_session_running(c->s) && input_ended(c)) {
            /* The end of input ends the session as `quit` does, also while
             * the program runs: a program tdebug started is killed, one it
             * attached to is detached, now rather than at the next stop. */
            c->quit = 1;
            return 0;
        }
        int rc = tdb_session_wait(c->s, watch ? INPUT_WATCH_MS : -1, c->sigfd, err);
        if (rc < 0)
            return -1;
        if (rc == TDB_WAIT_TIMEOUT)
            continue;
        if (rc == TDB_WAIT_GDB_DIED) {
            c->gdb_died = 1;
            terminal_to_us(c);
            return -1;
        }
        if (rc == TDB_WAIT_EXITED)
            return 0;
        if (rc == TDB_WAIT_FD) {
            int sig = tdb_signals_take();
            if (sig == SIGTERM || sig == SIGHUP) {
                c->fatal_signal = sig;
                return 0;
            }
            if (sig != SIGINT)
                continue;
            if (c->opts.output != TDB_OUTPUT_INTERACTIVE && !c->commands) {
                c->fatal_signal = SIGINT; /* Ctrl-C ends a batch session */
                return 0;
            }
            if (interrupts++ > 0) {
                /* A second Ctrl-C before the program stopped. */
                c->fatal_signal = SIGINT;
                return 0;
            }
            if (tdb_session_interrupt(c->s, err) < 0)
                return -1;
            continue;
        }
        interrupts = 0;
        const tdb_stop_info *st = tdb_session_stop(c->s);
        if (c->opts.output != TDB_OUTPUT_INTERACTIVE && !c->commands && st &&
            sigint_from_terminal(c, st)) {
            /* Ctrl-C at the terminal, which the program owns while it
             * runs: the session ends. */
            c->fatal_signal = SIGINT;
            terminal_to_us(c);
            return 0;
        }
        rc = handle_stop(c, err);
        if (rc <= 0) {
            terminal_to_us(c);
            return rc;
        }
    }
}

/* A wait a signal cut short (ECANCELED: the signal self-pipe woke it):
 * not a failure but the user's word, whatever phase it came in (attaching,
 * arming the Python hook).  Returns the signal, with ERR cleared and
 * c->fatal_signal set, or 0. */
static int cancelled_by_signal(tdb_cli *c, tdb_error *err)
{
    if (!err->set || err->code != ECANCELED)
        return 0;
    int sig = tdb_signals_take();
    if (sig != SIGINT && sig != SIGTERM && sig != SIGHUP)
        return 0;
    tdb_error_clear(err);
    c->fatal_signal = sig;
    return sig;
}

/* ---- run ---- */

int tdb_cli_run(tdb_cli *c, char *const argv[], tdb_error *err)
{
    int status = TDB_EXIT_TOOL;
    if (tdb_session_launch(c->s, argv, err) < 0) {
        status = err->exit_code ? err->exit_code : TDB_EXIT_TOOL;
        goto done;
    }
    if (event_loop(c, err) < 0)
        goto done;
    if (!tdb_session_program_ended(c->s)) {
        int sig = c->fatal_signal;
        tdb_session_end(c->s, TDB_END_AUTO);
        status = sig ? 128 + sig : TDB_EXIT_OK;
        tdb_say_killed(c->opts.output, sig);
        goto done;
    }
    int signalled;
    status = tdb_session_exit_status(c->s, &signalled);
    tdb_say_exited(c->opts.output, status, signalled);
    if (tdb_session_end(c->s, TDB_END_AUTO) && status == 0)
        status = TDB_EXIT_FAIL;
done:
    if (!c->gdb_died && cancelled_by_signal(c, err)) {
        status = 128 + c->fatal_signal;
        if (!tdb_session_program_ended(c->s)) {
            tdb_session_end(c->s, TDB_END_AUTO);
            tdb_say_killed(c->opts.output, c->fatal_signal);
        }
    }
    if (c->gdb_died && !err->set)
        tdb_error_set(err, EPIPE, "gdb died: the session ended");
    if (err->set && status == TDB_EXIT_TOOL && err->exit_code)
        status = err->exit_code;
    if (err->set)
        tdb_session_end(c->s, TDB_END_AUTO);
    terminal_to_us(c);
    return status;
}

/* ---- attach ---- */

int tdb_cli_attach(tdb_cli *c, pid_t pid, const json_t *announcement, tdb_error *err)
{
    int status = TDB_EXIT_TOOL;
    tdb_attach_start start;
    int batch = c->opts.output != TDB_OUTPUT_INTERACTIVE;

    if (tdb_session_attach(c->s, pid, announcement, &start, err) < 0) {
        status = err->exit_code ? err->exit_code : TDB_EXIT_TOOL;
        if (err->code == ECANCELED) {
            /* A signal cut the attach short, in whichever wait it came. */
            int sig = tdb_signals_take();
            status = sig == SIGTERM || sig == SIGHUP ? 128 + sig : 130;
            tdb_error_clear(err);
            tdb_error_set_exit(err, status, ECANCELED, "%s%s while attaching to pid %d: it was "
                               "left running", status == 130 ? "interrupted" : "terminated by SIG",
                               status == 130 ? "" : sigabbrev_np(status - 128), (int)pid);
        }
        goto done;
    }
    int sig = 0;
    while ((sig = tdb_signals_take()) != 0)
        if (sig == SIGINT || sig == SIGTERM || sig == SIGHUP)
            break; /* Ctrl-C while attaching: finish attaching, then detach */
    if (sig) {
        status = 128 + sig;
        goto done;
    }
    if (start == TDB_ATTACH_NOTHING) {
        status = TDB_EXIT_FAIL; /* nothing left that could stop */
        goto done;
    }
    if (!tdb_session_has_stops(c->s) && batch && !c->commands) {
        /* A snapshot: every thread's stack, then detach. */
        tdb_reply r = {0};
        if (c->opts.output == TDB_OUTPUT_BATCH)
            printf("tdebug: attached to pid %d\n", (int)pid);
        if (tdb_command_all_threads(c->s, &r, err) < 0) {
            tdb_reply_clear(&r);
            goto done;
        }
        print_reply(c, &r);
        tdb_reply_clear(&r);
        status = TDB_EXIT_OK;
        goto done;
    }
    if (start == TDB_ATTACH_AT_LOAD ||
        (start == TDB_ATTACH_STOPPED && (!batch || c->commands))) {
        if (start == TDB_ATTACH_STOPPED && tdb_session_attached_stop(c->s, err) < 0)
            goto done;
        int rc = handle_stop(c, err);
        if (rc < 0)
            goto done;
        if (rc == 1 && event_loop(c, err) < 0)
            goto done;
    } else {
        if (tdb_session_resume(c->s, TDB_RESUME_CONTINUE, err) < 0 || event_loop(c, err) < 0)
            goto done;
    }
    if (tdb_session_program_ended(c->s)) {
        int exit_status = tdb_session_exit_status(c->s, NULL);
        if (!c->opts.session.started_by_tdebug)
            tdb_event(c->opts.output, "exited", NULL, "pid %d exited with status %d", (int)pid,
                      exit_status);
        status = tdb_session_end(c->s, TDB_END_DETACH) ? TDB_EXIT_FAIL : TDB_EXIT_OK;
        goto done;
    }
    status = c->fatal_signal ? 128 + c->fatal_signal : TDB_EXIT_OK;
done:
    if (!c->gdb_died && cancelled_by_signal(c, err))
        status = 128 + c->fatal_signal;
    if (c->gdb_died && !err->set)
        tdb_error_set(err, EPIPE, "gdb died: the session ended");
    tdb_session_end(c->s, TDB_END_DETACH);
    if (err->set && status == TDB_EXIT_TOOL && err->exit_code)
        status = err->exit_code;
    return status;
}

/* ---- a process the preloaded library paused ---- */

/* Say which process tdebug attaches to: a line, or a JSON event. */
static void say_announced(const tdb_cli_options *opts, const json_t *a)
{
    const char *module = json_string_value(json_object_get(a, "module"));
    const char *path = json_string_value(json_object_get(a, "path"));
    int pid = (int)json_integer_value(json_object_get(a, "pid"));
    tdb_buf msg = TDB_BUF_INIT;

    if (module)
        tdb_buf_addf(&msg, "pid %d loaded %s (%s) and waits: attaching", pid, module,
                     path ? path : "?");
    else
        tdb_buf_addf(&msg, "pid %d waits for a debugger (tdebug.wait_for_debugger()): attaching",
                     pid);
    tdb_event(opts->output, "announced",
              json_pack("{s:i, s:s?, s:s?}", "pid", pid, "module", module, "path", path), "%s",
              tdb_buf_str(&msg));
    tdb_buf_free(&msg);
}

int tdb_cli_attach_paused(tdb_cli_options *opts, const json_t *announcement, tdb_error *err)
{
    const char *module = json_string_value(json_object_get(announcement, "module"));
    pid_t pid = (pid_t)json_integer_value(json_object_get(announcement, "pid"));
    tdb_session_options *so = &opts->session;
    size_t n_import = so->n_stop_at_import;
    tdb_cli *c = NULL;
    int status;

    say_announced(opts, announcement);
    /* No stop asked for: where it waits is the stop (a string of the
     * announcement, borrowed until the session ends). */
    if (!so->n_stop_at_import && !so->n_stop_at_load && !so->n_breaks && !so->n_catch_throw &&
        !so->n_catch_raise &&
        module && tdb_valid_module_name(module))
        tdb_ptrs_push(&so->stop_at_import, &so->n_stop_at_import, (char *)module);
    c = tdb_cli_new(opts, err);
    if (c)
        status = tdb_cli_attach(c, pid, announcement, err);
    else
        status = err->exit_code ? err->exit_code : TDB_EXIT_TOOL;
    tdb_cli_free(c);
    so->n_stop_at_import = n_import; /* the borrowed default goes with the announcement */
    return status;
}
