/*
 * cmd/ps.c: 'tdebug ps': the Python processes you can attach to, their part
 * in a debugpy session, whether torch is loaded and who traces them; and
 * 'tdebug ps --check PID': can I debug this one, and if not why.  The
 * reading is in src/targets/proc.c, the verdicts in src/targets/ptrace_check.c.
 */
#include "cmd/cmd.h"
#include "base/common.h"
#include "process/pidns.h"
#include "targets/proc.h"
#include "targets/ptrace_check.h"
#include "targets/ranks.h"

#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <unistd.h>

const char cmd_ps_usage[] =
    "usage: tdebug ps [--all] [--wide] [--json]\n"
    "   or: tdebug ps --check PID [--json]\n"
    "\n"
    "List the Python processes you can attach to: pid, parent, user, their part\n"
    "in a debugpy session, whether torch._C is loaded, whether tdebug can attach\n"
    "and who already traces them, and the command line (debugpy's path shown as\n"
    ".../debugpy, access tokens elided).  On a terminal each line fits its\n"
    "width: the interpreter's directory, its options, debugpy's options, then\n"
    "the program's arguments are shortened to '...', never the script's name;\n"
    "with --wide, or when stdout is not a terminal, lines are whole.\n"
    "\n"
    "Roles (ROLE column):\n"
    "  adapter    debugpy's adapter: speaks DAP to the editor, runs no user code\n"
    "  launcher   debugpy's launcher: starts the program VS Code launches\n"
    "  debuggee   'debugpy --connect ...': the launched program, runs user code\n"
    "  server     'python -m debugpy --listen ...': user code runs in it\n"
    "  embedded   a program that started debugpy itself (debugpy.listen())\n"
    "  injector   'python -m debugpy --pid N': injecting debugpy into N\n"
    "  plain      Python without debugpy\n"
    "An adapter or launcher shows the process running user code behind it, as\n"
    "'launcher->1240': that is where 'tdebug attach' goes.\n"
    "\n"
    "Distributed jobs (JOB and RANK columns, shown when a process is part of one):\n"
    "the job and rank each process's environment gives it (RANK, WORLD_SIZE,\n"
    "LOCAL_RANK, GROUP_RANK; the job named by TORCHELASTIC_RUN_ID, SLURM_JOB_ID,\n"
    "MASTER_ADDR:MASTER_PORT, else 'pid:N' of the launcher).  RANK reads '2/4'\n"
    "(rank 2 of 4), '2/4(worker)' for a process working for rank 2 (a DataLoader\n"
    "worker), 'agent' for torchrun's agent.  'tdebug stacks --job' shows where\n"
    "every rank is.  A process in another PID namespace (a container seen from\n"
    "the host) shows its pid there in the NSPID column.\n"
    "\n"
    "Options:\n"
    "  -a, --all        also other users' Python processes, zombies, and ones\n"
    "                   tdebug cannot attach to (the ATTACH column says why)\n"
    "  -w, --wide       whole command lines, however wide the terminal\n"
    "  -c, --check PID  say whether 'tdebug attach PID' can work: which process it\n"
    "                   would attach to, or why the kernel would refuse and what\n"
    "                   to do (exit 1)\n"
    "  --json           print JSON: {\"processes\": [{\"pid\", \"ppid\", \"user\",\n"
    "                   \"role\", \"debuggee\", \"torch\", \"tracer\", \"attach\": {\"ok\",\n"
    "                   \"reason\", \"message\"}, \"command\", \"job\": null or {\"id\",\n"
    "                   \"id_from\", \"role\": \"rank\"|\"worker\"|\"agent\", \"rank\",\n"
    "                   \"local_rank\", \"world_size\", \"group_rank\", \"launcher\"},\n"
    "                   \"ns_pid\" (in another PID namespace), ...}]}; with --check\n"
    "                   one object: {\"pid\", \"attach_pid\", \"ok\", \"reason\",\n"
    "                   \"message\", ...}\n"
    "  -h, --help       this text\n"
    "\n"
    "Exit status: 0 listed (or PID can be attached); 1 PID cannot be attached,\n"
    "or /proc cannot be read.\n"
    "\n"
    "Examples:\n"
    "  tdebug ps\n"
    "  tdebug ps --check 1234\n";

enum { OPT_JSON = 256 };

/* The reasons that mean "not yours to trace": hidden without --all.  A
 * process that is traced, or that Yama or a sandbox keeps from everyone,
 * is shown: the user can do something about those. */
static int hidden_by_default(tdb_refusal r)
{
    switch (r) {
    case TDB_REFUSAL_NONE:
    case TDB_REFUSAL_TRACED:
    case TDB_REFUSAL_YAMA:
    case TDB_REFUSAL_PTRACE_DISABLED:
    case TDB_REFUSAL_PTRACE_BLOCKED:
        return 0;
    default:
        return 1;
    }
}

static json_t *tristate_json(int v)
{
    return v == TDB_UNKNOWN ? json_null() : json_boolean(v == TDB_YES);
}

static const char *tristate_text(int v)
{
    return v == TDB_UNKNOWN ? "?" : v == TDB_YES ? "yes" : "no";
}

typedef struct row {
    tdb_proc *p;
    tdb_refusal refusal;
    char *message;         /* the refusal's message */
    int resolved;          /* rc of tdb_proc_resolve_debuggee for adapters/launchers */
    tdb_resolution res;
    const tdb_job *job;    /* its distributed job and part in it, or NULL */
    const tdb_job_member *member;
    pid_t ns_pid;          /* its pid in its own PID namespace when not ours, else 0 */
} row;

static void row_release(row *r)
{
    free(r->message);
    tdb_resolution_release(&r->res);
}

static void fill_row(row *r, tdb_proc_table *t, const tdb_tracer *tr, const tdb_jobs *jobs,
                     tdb_proc *p)
{
    tdb_error err = {0};
    memset(r, 0, sizeof(*r));
    r->p = p;
    r->member = tdb_jobs_find_pid(jobs, p->pid, &r->job);
    pid_t inner = tdb_pidns_inner_pid(t->root, p->pid);
    r->ns_pid = inner && inner != p->pid ? inner : 0;
    r->refusal = tdb_attach_check(t, tr, p->pid, &err);
    if (r->refusal != TDB_REFUSAL_NONE)
        r->message = tdb_xstrdup(err.msg);
    r->resolved = -1;
    if (p->role == TDB_ROLE_ADAPTER || p->role == TDB_ROLE_LAUNCHER ||
        p->role == TDB_ROLE_INJECTOR) {
        tdb_error_clear(&err);
        r->resolved = tdb_proc_resolve_debuggee(t, p->pid, &r->res, &err);
    }
}

static json_t *pid_array(const pid_t *v, size_t n)
{
    json_t *a = json_array();
    for (size_t i = 0; i < n; i++)
        json_array_append_new(a, json_integer(v[i]));
    return a;
}

/* New reference.  Strings that are not UTF-8 (command lines, names, paths
 * are bytes) are kept escaped, flagged KEY_escaped (tdb_json_set_str). */
static json_t *row_json(const row *r)
{
    const tdb_proc *p = r->p;
    json_t *o = json_object();
    char state[2] = {p->state, '\0'};
    json_object_set_new(o, "pid", json_integer(p->pid));
    if (r->ns_pid)
        json_object_set_new(o, "ns_pid", json_integer(r->ns_pid));
    json_object_set_new(o, "ppid", json_integer(p->ppid));
    json_object_set_new(o, "uid", json_integer(p->uid));
    tdb_json_set_str(o, "user", p->user);
    tdb_json_set_str(o, "state", state);
    tdb_json_set_str(o, "comm", p->comm);
    tdb_json_set_str(o, "exe", p->exe);
    tdb_json_set_strv(o, "command", p->argv, p->argc);
    json_object_set_new(o, "role", json_string(tdb_role_name(p->role)));
    tdb_json_set_str(o, "endpoint", p->endpoint);
    json_object_set_new(o, "debuggee",
                        r->resolved == 0 ? json_integer(r->res.pid) : json_null());
    if (r->resolved == 1)
        json_object_set_new(o, "candidates", pid_array(r->res.candidates, r->res.ncandidates));
    json_object_set_new(o, "torch", tristate_json(p->torch));
    json_object_set_new(o, "debugpy_loaded", tristate_json(p->pydevd));
    json_t *tracer = json_null();
    if (p->tracer_pid) {
        tracer = json_pack("{s:i}", "pid", (int)p->tracer_pid);
        tdb_json_set_str(tracer, "comm", p->tracer_comm);
    }
    json_object_set_new(o, "tracer", tracer);
    json_t *attach = json_pack("{s:b}", "ok", r->refusal == TDB_REFUSAL_NONE);
    if (r->refusal != TDB_REFUSAL_NONE) {
        json_object_set_new(attach, "reason", json_string(tdb_refusal_name(r->refusal)));
        tdb_json_set_str(attach, "message", r->message);
    }
    json_object_set_new(o, "attach", attach);
    json_object_set_new(o, "job", r->member ? tdb_job_member_json(r->job, r->member)
                                            : json_null());
    return o;
}

/* A process ps cannot tell is Python or not (its executable and maps are
 * hidden, its names say nothing): an entry of "errors", so none is left
 * out in silence.  New reference. */
static json_t *unknown_json(const tdb_proc *p)
{
    json_t *o = json_pack("{s:i}", "pid", (int)p->pid);
    tdb_json_set_str(o, "comm", p->comm);
    char *msg = tdb_xasprintf("cannot tell whether pid %d is a Python process: its executable "
                              "and memory maps cannot be read (%s)",
                              (int)p->pid, p->exe_errno ? strerror(p->exe_errno) : "gone");
    tdb_json_set_str(o, "error", msg);
    free(msg);
    return o;
}

static char *role_text(const row *r)
{
    const char *name = tdb_role_name(r->p->role);
    if (r->resolved == 0 && r->res.pid != r->p->pid)
        return tdb_xasprintf("%s->%d", name, (int)r->res.pid);
    if (r->resolved == 1)
        return tdb_xasprintf("%s->?", name);
    return tdb_xstrdup(name);
}

/* The width lines must fit: the terminal's when stdout is one (its window
 * size, else $COLUMNS, else 80); 0 (whole lines) for a pipe or a file. */
static size_t terminal_width(void)
{
    struct winsize ws;
    if (!isatty(STDOUT_FILENO))
        return 0;
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) == 0 && ws.ws_col > 0)
        return ws.ws_col;
    const char *cols = getenv("COLUMNS");
    long n;
    return cols && tdb_parse_long(cols, 20, 10000, &n) == 0 ? (size_t)n : 80;
}

enum { COL_PID, COL_NSPID, COL_PPID, COL_USER, COL_ROLE, COL_JOB, COL_RANK, COL_TORCH,
       COL_ATTACH, COL_TRACER, N_COLS };

/* A rank's cell: "2/4" (rank/world size), "2/4(worker)" for a process
 * working for rank 2, "agent" for torchrun's. */
static char *rank_text(const row *r)
{
    const tdb_job_member *m = r->member;
    if (!m)
        return tdb_xstrdup("-");
    if (m->role == TDB_JOB_AGENT)
        return tdb_xstrdup("agent");
    tdb_buf b = TDB_BUF_INIT;
    tdb_buf_addf(&b, "%ld", m->rank);
    if (m->world_size > 0)
        tdb_buf_addf(&b, "/%ld", m->world_size);
    if (m->role == TDB_JOB_WORKER)
        tdb_buf_adds(&b, "(worker)");
    return tdb_buf_detach(&b);
}

/* The cells of a row but its command (new strings). */
static void row_cells(const row *r, char *cell[N_COLS])
{
    const tdb_proc *p = r->p;
    cell[COL_PID] = tdb_xasprintf("%d", (int)p->pid);
    cell[COL_NSPID] = r->ns_pid ? tdb_xasprintf("%d", (int)r->ns_pid) : tdb_xstrdup("-");
    cell[COL_PPID] = tdb_xasprintf("%d", (int)p->ppid);
    cell[COL_USER] = tdb_xstrdup(p->user ? p->user : "?");
    cell[COL_ROLE] = role_text(r);
    cell[COL_JOB] = tdb_xstrdup(r->job ? r->job->id : "-");
    cell[COL_RANK] = rank_text(r);
    cell[COL_TORCH] = tdb_xstrdup(tristate_text(p->torch));
    cell[COL_ATTACH] =
        tdb_xstrdup(r->refusal == TDB_REFUSAL_NONE ? "yes" : tdb_refusal_name(r->refusal));
    cell[COL_TRACER] = p->tracer_pid ? tdb_xasprintf("%d(%s)", (int)p->tracer_pid,
                                                     p->tracer_comm ? p->tracer_comm : "?")
                                     : tdb_xstrdup("-");
}

/* The table, each column as wide as its widest cell, the command in what
 * is left of WIDTH (0: whole): shortened by tdb_proc_short_command(), which
 * never cuts the script's name.  NSPID shows only when a process is in
 * another PID namespace (a container), JOB and RANK only when one is part
 * of a distributed job. */
static void print_table(row *rows, size_t n, size_t width)
{
    static const char *const heads[N_COLS] = {"PID", "NSPID", "PPID", "USER", "ROLE", "JOB",
                                              "RANK", "TORCH", "ATTACH", "TRACER"};
    static const int right[N_COLS] = {[COL_PID] = 1, [COL_NSPID] = 1, [COL_PPID] = 1};
    char *(*cells)[N_COLS] = tdb_xcalloc(n ? n : 1, sizeof(*cells));
    int w[N_COLS], shown[N_COLS];
    size_t used = 0;

    for (int c = 0; c < N_COLS; c++) {
        w[c] = (int)strlen(heads[c]);
        shown[c] = c != COL_NSPID && c != COL_JOB && c != COL_RANK;
    }
    for (size_t i = 0; i < n; i++) {
        row_cells(&rows[i], cells[i]);
        shown[COL_NSPID] |= rows[i].ns_pid != 0;
        shown[COL_JOB] |= rows[i].member != NULL;
        shown[COL_RANK] |= rows[i].member != NULL;
        for (int c = 0; c < N_COLS; c++)
            if ((int)strlen(cells[i][c]) > w[c])
                w[c] = (int)strlen(cells[i][c]);
    }
    for (int c = 0; c < N_COLS; c++)
        used += shown[c] ? (size_t)w[c] + 2 : 0;
    for (int c = 0; c < N_COLS; c++)
        if (shown[c])
            printf(right[c] ? "%*s  " : "%-*s  ", w[c], heads[c]);
    printf("COMMAND\n");
    for (size_t i = 0; i < n; i++) {
        char **cell = cells[i];
        /* At least 20 columns for the command, even if the line wraps. */
        char *cmd = tdb_proc_short_command(rows[i].p, !width ? 0 : width > used + 20 ? width - used
                                                                                   : 20);
        for (int c = 0; c < N_COLS; c++)
            if (shown[c])
                printf(right[c] ? "%*s  " : "%-*s  ", w[c], cell[c]);
        printf("%s\n", cmd);
        free(cmd);
        for (int c = 0; c < N_COLS; c++)
            free(cell[c]);
    }
    free(cells);
}

/* Say once, on stderr, when the system keeps tdebug from attaching to
 * anything: every row would show the same reason. */
static void warn_environment(const tdb_tracer *tr)
{
    if (tr->yama_scope == 3)
        tdb_warn("kernel.yama.ptrace_scope is 3: no process can be attached to until a reboot "
                 "with a lower setting");
    else if ((tr->yama_scope == 1 || tr->yama_scope == 2) && !tr->cap_sys_ptrace)
        tdb_warn("kernel.yama.ptrace_scope is %d: tdebug cannot attach to these processes "
                 "(see 'tdebug ps --check PID' for what to do)",
                 tr->yama_scope);
    else if (tr->probe_errno > 0)
        tdb_warn("ptrace is blocked for tdebug (%s): tdebug cannot attach to anything here "
                 "(see 'tdebug ps --check PID' for what to do)",
                 strerror(tr->probe_errno));
}

static int list(tdb_proc_table *t, const tdb_tracer *tr, int all, int json, int wide)
{
    row *rows = tdb_xcalloc(t->n ? t->n : 1, sizeof(*rows));
    size_t n = 0;
    json_t *errors = json_array();
    tdb_jobs jobs = {NULL, 0};

    /* Jobs are a matter of environments: what cannot be read is no job. */
    tdb_jobs_read(t->root, &jobs, NULL);

    /* Snapshot the pointers first: resolving an adapter may add a process
     * to the table. */
    size_t count = t->n;
    tdb_proc **procs = tdb_xmalloc((count ? count : 1) * sizeof(*procs));
    memcpy(procs, t->procs, count * sizeof(*procs));
    for (size_t i = 0; i < count; i++) {
        tdb_proc *p = procs[i];
        if (p->python == TDB_UNKNOWN && !p->kernel_thread && p->tgid == p->pid &&
            (all || p->uid == tr->uid))
            json_array_append_new(errors, unknown_json(p));
        if (p->python != TDB_YES || p->kernel_thread || p->pid == tr->pid)
            continue;
        if (p->tgid != p->pid)
            continue;
        fill_row(&rows[n], t, tr, &jobs, p);
        if (!all && hidden_by_default(rows[n].refusal)) {
            row_release(&rows[n]);
            continue;
        }
        n++;
    }
    if (json) {
        json_t *arr = json_array();
        for (size_t i = 0; i < n; i++)
            json_array_append_new(arr, row_json(&rows[i]));
        tdb_print_json(tdb_json_versioned(json_pack("{s:o, s:O}", "processes", arr, "errors",
                                                    errors)));
    } else if (n) {
        print_table(rows, n, wide ? 0 : terminal_width());
    } else {
        fprintf(stderr, "tdebug: no Python process you can attach to%s\n",
                all ? "" : " ('tdebug ps --all' lists other users' too)");
    }
    if (!json && json_array_size(errors))
        tdb_warn("cannot tell whether %zu process%s %s Python: %s executable and memory maps "
                 "cannot be read ('tdebug ps --json' lists them under \"errors\")",
                 json_array_size(errors), json_array_size(errors) == 1 ? "" : "es",
                 json_array_size(errors) == 1 ? "is" : "are",
                 json_array_size(errors) == 1 ? "its" : "their");
    if (!json)
        warn_environment(tr);
    json_decref(errors);
    for (size_t i = 0; i < n; i++)
        row_release(&rows[i]);
    tdb_jobs_release(&jobs);
    free(rows);
    free(procs);
    return TDB_EXIT_OK;
}

static int check(tdb_proc_table *t, const tdb_tracer *tr, pid_t pid, int json)
{
    tdb_error err = {0};
    tdb_resolution res;
    tdb_refusal refusal;
    int rc = tdb_attach_resolve(t, tr, pid, &res, &refusal, &err);
    tdb_proc *target = res.pid ? tdb_proc_table_lookup(t, res.pid, NULL) : NULL;

    if (json) {
        json_t *o = json_pack("{s:i, s:b}", "pid", (int)pid, "ok", rc == 0);
        json_object_set_new(o, "attach_pid", res.pid ? json_integer(res.pid) : json_null());
        tdb_json_set_str(o, "note", res.note);
        if (rc == 1)
            json_object_set_new(o, "candidates", pid_array(res.candidates, res.ncandidates));
        json_object_set_new(o, "reason",
                            rc == 0 ? json_null() : json_string(tdb_refusal_name(refusal)));
        tdb_json_set_str(o, "message", rc == 0 ? NULL : err.msg);
        if (target) {
            json_object_set_new(o, "role", json_string(tdb_role_name(target->role)));
            json_object_set_new(o, "torch", tristate_json(target->torch));
            json_object_set_new(o, "stopped", json_boolean(target->state == 'T'));
        }
        tdb_print_json(tdb_json_versioned(o));
    } else {
        if (res.note)
            printf("%s\n", res.note);
        if (rc == 0 && target) {
            char *cmd = tdb_proc_short_command(target, 0);
            printf("pid %d can be attached: %s (%s%s)\n", (int)target->pid, cmd,
                   tdb_role_describe(target->role),
                   target->torch == TDB_YES ? ", torch loaded" : "");
            if (target->state == 'T')
                printf("note: pid %d is stopped (job control); attaching leaves it stopped\n",
                       (int)target->pid);
            free(cmd);
        } else {
            tdb_print_error(&err);
        }
    }
    tdb_resolution_release(&res);
    return rc == 0 ? TDB_EXIT_OK : TDB_EXIT_FAIL;
}

int cmd_ps(int argc, char **argv)
{
    static const struct option longopts[] = {
        {"all", no_argument, NULL, 'a'},
        {"wide", no_argument, NULL, 'w'},
        {"check", required_argument, NULL, 'c'},
        {"json", no_argument, NULL, OPT_JSON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    int all = 0, json = 0, wide = 0, opt;
    long check_pid = 0;
    tdb_proc_table *t = NULL;
    tdb_tracer tr;
    tdb_error err = {0};
    int rc;

    optind = 1;
    opterr = 0;
    while ((opt = getopt_long(argc, argv, "awc:h", longopts, NULL)) != -1) {
        switch (opt) {
        case 'a':
            all = 1;
            break;
        case 'w':
            wide = 1;
            break;
        case 'c':
            if (tdb_parse_long(optarg, 1, 0x7fffffff, &check_pid) < 0)
                return tdb_usage_error("ps", "--check needs a process id, not '%s'", optarg);
            break;
        case OPT_JSON:
            json = 1;
            break;
        case 'h':
            return tdb_print_usage("ps");
        case ':':
            return tdb_usage_error("ps", "option '%s' needs a value", argv[optind - 1]);
        default:
            if (optopt == 'c')
                return tdb_usage_error("ps", "option '%s' needs a process id",
                                       argv[optind - 1]);
            return tdb_usage_error("ps", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return tdb_usage_error("ps", "unexpected argument '%s' (to check one process: "
                                     "'tdebug ps --check %s')",
                               argv[optind], argv[optind]);
    if (check_pid && all)
        return tdb_usage_error("ps", "--check and --all do not go together");
    if (tdb_check_usage_only)
        return TDB_EXIT_OK;

    t = tdb_proc_table_read("/proc", &err);
    if (!t) {
        tdb_print_error(&err);
        return TDB_EXIT_FAIL;
    }
    if (tdb_tracer_read(&tr, "/proc", NULL, &err) < 0) {
        tdb_proc_table_free(t);
        tdb_print_error(&err);
        return TDB_EXIT_FAIL;
    }
    tdb_tracer_probe(&tr);
    rc = check_pid ? check(t, &tr, (pid_t)check_pid, json) : list(t, &tr, all, json, wide);
    tdb_tracer_release(&tr);
    tdb_proc_table_free(t);
    return rc;
}
