/* cmd/stacks.c: 'tdebug stacks': merged native and Python stacks of
 * running processes, without gdb. */
#include "cmd/cmd.h"
#include "base/common.h"
#include "native/core.h"
#include "process/procfs.h"
#include "stacks/stacks.h"
#include "native/unwind.h"
#include "base/signals.h"
#include "stacks/jobstacks.h"

#include <errno.h>
#include <getopt.h>
#include <jansson.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cmd_stacks_usage[] =
    "usage: tdebug stacks [--json] [--native | --python] [--raw] [--locals] [--verbose] PID...\n"
    "   or: tdebug stacks [OPTIONS] --children PID\n"
    "   or: tdebug stacks [OPTIONS] --core CORE [--exe PATH]\n"
    "   or: tdebug stacks [OPTIONS] --job [ID] [--full] [--hosts H,... | --hostfile F]\n"
    "                 [--ssh CMD] [--remote-tdebug PATH] [--timeout SECONDS]\n"
    "\n"
    "Print the stack of every thread of each process, native and Python frames\n"
    "merged into one stack, most recent call first: C and C++ frames (demangled,\n"
    "with their library), and at each Python evaluator frame the Python frames it\n"
    "runs, as tracebacks print them.  Needs neither gdb nor debug symbols.\n"
    "\n"
    "Each process is paused (ptrace, not SIGSTOP) only while its registers, stack\n"
    "tops and Python state are copied, then left exactly as it was: running, or\n"
    "stopped if it was stopped.  A process traced by someone else (gdb) cannot be\n"
    "paused: its Python stacks are read as they are, its native stacks are\n"
    "reported unavailable.  A thread id stands for its process.\n"
    "\n"
    "Python frames are read from CPython's memory for CPython 3.8 to 3.13, and\n"
    "3.14 through the offsets it publishes (_Py_DebugOffsets), whichever Python\n"
    "tdebug was built with; with a shared libpython or a static one.  A version\n"
    "it cannot read gets native stacks and a note saying what reads it.  Threads\n"
    "show the name threading gave them, and whether they hold or wait for the\n"
    "GIL, collect garbage or run a signal handler.\n"
    "\n"
    "With --job, every rank of a distributed job (PyTorch's RANK, WORLD_SIZE...\n"
    "in each process's environment, as 'tdebug ps' shows them) is read, then\n"
    "their stacks are merged into one tree from the outermost frame down, each\n"
    "branch labelled with the ranks that took it ('ranks 0-2,5'), so the odd rank\n"
    "out stands alone.  Main threads merge with main threads, other threads with\n"
    "those of the same name.  Other hosts are read through ssh, all at once, by\n"
    "their own 'tdebug stacks --job --json'; a host named localhost or this\n"
    "machine's name is read here.  A host that cannot be read is named with the\n"
    "reason, and the others are shown.\n"
    "\n"
    "Options:\n"
    "  --children PID  PID and all its descendants (DataLoader workers, torchrun\n"
    "                  ranks); may be given more than once\n"
    "  --core CORE     a core file (from gcore or a crash) instead of processes:\n"
    "                  its threads, the executable and libraries it names (each\n"
    "                  checked by build-id: a file that changed since is said,\n"
    "                  not read)\n"
    "  --exe PATH      with --core: the executable, when it moved since\n"
    "  --json          one JSON document: {\"processes\": [...], \"errors\": [...]};\n"
    "                  each frame has \"kind\": \"python\" or \"native\"; strings\n"
    "                  that are not UTF-8 are escaped (\\xNN) with KEY_escaped: true\n"
    "  --locals        each Python frame's local variables under it (a module's\n"
    "                  frame: its globals), read from memory while the process is\n"
    "                  paused: int, float, str, bytes, tuple, list, dict (the\n"
    "                  first 10 items), other objects as <Type object at 0x...>\n"
    "  --native        native frames only, all of them\n"
    "  --python        Python frames only, of the threads that run Python\n"
    "  --raw           keep CPython's own frames (_PyEval_EvalFrameDefault and the\n"
    "                  calls between evaluator frames), folded by default\n"
    "  -v, --verbose   say on stderr how long each process was paused\n"
    "  --job [ID]      every rank of the job ID (its TORCHELASTIC_RUN_ID,\n"
    "                  SLURM_JOB_ID, MASTER_ADDR:MASTER_PORT, 'pid:N', or a\n"
    "                  launcher's or rank's pid); without ID the only job here\n"
    "                  (several: an error that lists them); --json gives\n"
    "                  {\"job\", \"hosts\", \"ranks\": [{\"rank\",\n"
    "                  \"host\", \"pid\", \"ns_pid\", \"stacks\"}], \"missing_ranks\",\n"
    "                  \"tree\": [{\"thread\", \"ranks\", \"rank_set\", \"frames\",\n"
    "                  \"children\"}], \"errors\"}\n"
    "  --full          with --job: each rank's whole stacks after the tree\n"
    "  --hosts LIST    with --job: read the hosts of LIST (comma-separated) through\n"
    "                  ssh, in parallel, in batch mode (never a password prompt)\n"
    "  --hostfile FILE with --job: the hosts of FILE, one a line ('host slots=N'\n"
    "                  lines of MPI and slurm work; # starts a comment)\n"
    "  --ssh CMD       what reaches a host instead of ssh: 'srun --jobid=42 -w',\n"
    "                  'kubectl exec %h --', 'ssh -J jumphost'; %h stands for the\n"
    "                  host, else it follows CMD\n"
    "  --remote-tdebug PATH  tdebug on the hosts (default: 'tdebug' on their PATH)\n"
    "  --timeout SECONDS  how long each host may take to answer (default 30)\n"
    "  -h, --help      show this help\n"
    "\n"
    "Exit status: 0 every process was shown (notes say what is missing: a\n"
    "process that is not Python, native stacks of a process gdb holds); 1 a\n"
    "process could not be read (no such process, exited, permission refused);\n"
    "2 usage error.  A descendant found with --children that exits before it is\n"
    "read only gets a warning.  With --job, 1 also when there is no job, a rank\n"
    "cannot be read, or a host gives no answer (the rest is shown).\n"
    "\n"
    "Examples:\n"
    "  tdebug stacks 1234\n"
    "  tdebug stacks --job\n"
    "  tdebug stacks --job --hosts node1,node2 --full\n"
    "  tdebug stacks --job 42 --hostfile hosts.txt --ssh 'srun --jobid=42 -w'\n";

typedef struct target {
    pid_t pid;
    int descendant; /* found by --children: vanishing is not an error */
} target;

static void add_target(target **v, size_t *n, pid_t pid, int descendant)
{
    for (size_t i = 0; i < *n; i++)
        if ((*v)[i].pid == pid)
            return;
    *v = tdb_xrealloc(*v, (*n + 1) * sizeof(**v));
    (*v)[*n].pid = pid;
    (*v)[*n].descendant = descendant;
    (*n)++;
}

static int parse_pid(const char *s, pid_t *out)
{
    long v;
    if (tdb_parse_long(s, 1, INT32_MAX, &v) < 0)
        return -1;
    *out = (pid_t)v;
    return 0;
}

/* 'tdebug stacks --core CORE': one core file. */
static int stacks_of_core(const char *path, const char *exe, tdb_stacks_options *o, int json,
                          int verbose)
{
    tdb_error err = {0};
    tdb_core *core = NULL;
    tdb_process_stacks *s = NULL;
    json_t *doc = json ? json_pack("{s:[], s:[]}", "processes", "errors") : NULL;
    int rc = TDB_EXIT_FAIL;
    o->symbols = tdb_symcache_new();
    if (tdb_core_open(path, exe, &core, &err) == 0)
        tdb_stacks_take_core(core, o, &s, &err);
    if (!s) {
        tdb_print_error(&err);
        if (doc) {
            json_t *e = json_object();
            tdb_json_set_str(e, "core", path);
            tdb_json_set_str(e, "error", err.msg);
            json_array_append_new(json_object_get(doc, "errors"), e);
        }
    } else {
        rc = TDB_EXIT_OK;
        if (verbose)
            fprintf(stderr, "tdebug: core '%s': %zu threads, %lu memory reads; unwound and "
                    "merged in %.0f ms\n", path, s->n, s->mem_reads, s->unwind_ms);
        if (doc) {
            json_array_append_new(json_object_get(doc, "processes"),
                                  tdb_process_stacks_json(s, o->flags));
        } else {
            tdb_buf b = TDB_BUF_INIT;
            tdb_process_stacks_render(&b, s, o->flags);
            fputs(tdb_buf_str(&b), stdout);
            tdb_buf_free(&b);
        }
    }
    if (doc)
        tdb_print_json(tdb_json_versioned(doc));
    tdb_process_stacks_free(s);
    tdb_core_free(core);
    tdb_symcache_free(o->symbols);
    return rc;
}

/* Words other hosts may be given as they are (a job id, a path). */
static int safe_word(const char *s)
{
    if (!*s || *s == '-')
        return 0;
    for (; *s; s++)
        if (!strchr("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._:@/+=-~", *s))
            return 0;
    return 1;
}

/* 'tdebug stacks --job': every rank, here or on the hosts of O. */
static int stacks_of_job(tdb_jobstacks_opts *o, int json, int full)
{
    tdb_error err = {0};
    int failed = 0;
    if (o->n_hosts && (o->cancel_fd = tdb_signals_install(0, &err)) < 0)
        return tdb_error_exit(&err);
    o->stacks.symbols = tdb_symcache_new();
    json_t *doc = tdb_jobstacks_read(o, &failed);
    size_t i;
    json_t *e;
    json_array_foreach(json_object_get(doc, "errors"), i, e) {
        const char *host = json_string_value(json_object_get(e, "host"));
        const char *msg = json_string_value(json_object_get(e, "error"));
        if (host && o->n_hosts)
            tdb_fail("host '%s': %s", host, msg);
        else
            tdb_fail("%s", msg);
    }
    if (json) {
        tdb_print_json(tdb_json_versioned(json_incref(doc)));
    } else {
        tdb_buf b = TDB_BUF_INIT;
        tdb_jobstacks_render(&b, doc, full);
        fputs(tdb_buf_str(&b), stdout);
        tdb_buf_free(&b);
    }
    json_decref(doc);
    tdb_symcache_free(o->stacks.symbols);
    /* Ctrl-C while the hosts answered: what came is shown, then 128+N. */
    int sig = o->n_hosts ? tdb_signals_take() : 0;
    if (sig)
        return 128 + sig;
    return failed ? TDB_EXIT_FAIL : TDB_EXIT_OK;
}

int cmd_stacks(int argc, char **argv)
{
    static const struct option opts[] = {
        {"json", no_argument, NULL, 'j'},     {"native", no_argument, NULL, 'n'},
        {"python", no_argument, NULL, 'p'},   {"raw", no_argument, NULL, 'r'},
        {"children", required_argument, NULL, 'c'},
        {"core", required_argument, NULL, 'C'},  {"locals", no_argument, NULL, 'l'},  {"exe", required_argument, NULL, 'E'},
        {"verbose", no_argument, NULL, 'v'},  {"help", no_argument, NULL, 'h'},
        {"job", optional_argument, NULL, 'J'},  {"full", no_argument, NULL, 'F'},
        {"hosts", required_argument, NULL, 'H'}, {"hostfile", required_argument, NULL, 'f'},
        {"ssh", required_argument, NULL, 'S'},  {"remote-tdebug", required_argument, NULL, 'R'},
        {"timeout", required_argument, NULL, 'T'},
        {NULL, 0, NULL, 0},
    };
    /* --job and its company: options parsed here, checked below. */
    int job = 0, full = 0;
    const char *job_id = NULL, *hosts_arg = NULL, *hostfile = NULL, *timeout_arg = NULL;
    tdb_jobstacks_opts jo = {.cancel_fd = -1, .remote = {.timeout_ms = 30000}};
    int json = 0, verbose = 0;
    const char *core_path = NULL, *exe_path = NULL;
    tdb_stacks_options o = {0, 0, 0, NULL};
    pid_t *roots = NULL;
    size_t nroots = 0;
    int *root_children = NULL;
    int c;

    opterr = 0;
    optind = 1;
    while ((c = getopt_long(argc, argv, "vh", opts, NULL)) != -1) {
        pid_t pid;
        switch (c) {
        case 'j': json = 1; break;
        case 'n': o.flags |= TDB_STACK_NATIVE_ONLY; break;
        case 'p': o.flags |= TDB_STACK_PYTHON_ONLY; break;
        case 'r': o.flags |= TDB_STACK_RAW; break;
        case 'v': verbose = 1; break;
        case 'C': core_path = optarg; break;
        case 'l': o.flags |= TDB_STACK_LOCALS; break;
        case 'E': exe_path = optarg; break;
        case 'J': job = 1; job_id = optarg; break;
        case 'F': full = 1; break;
        case 'H': hosts_arg = optarg; break;
        case 'f': hostfile = optarg; break;
        case 'S': jo.remote.ssh = optarg; break;
        case 'R': jo.remote.tdebug = optarg; break;
        case 'T': timeout_arg = optarg; break;
        case 'h':
            free(roots);
            free(root_children);
            return tdb_print_usage("stacks");
        case 'c':
            if (parse_pid(optarg, &pid) < 0) {
                free(roots);
                free(root_children);
                return tdb_usage_error("stacks", "'%s' is not a process id", optarg);
            }
            roots = tdb_xrealloc(roots, (nroots + 1) * sizeof(*roots));
            root_children = tdb_xrealloc(root_children, (nroots + 1) * sizeof(*root_children));
            roots[nroots] = pid;
            root_children[nroots++] = 1;
            break;
        default:
            free(roots);
            free(root_children);
            if (optopt)
                return tdb_usage_error("stacks", "option '-%c' is unknown or lacks its value",
                                       optopt);
            return tdb_usage_error("stacks", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if ((o.flags & TDB_STACK_NATIVE_ONLY) && (o.flags & TDB_STACK_PYTHON_ONLY)) {
        free(roots);
        free(root_children);
        return tdb_usage_error("stacks", "--native and --python exclude each other");
    }
    if (job || full || hosts_arg || hostfile || jo.remote.ssh || jo.remote.tdebug || timeout_arg) {
        free(roots);
        free(root_children);
        if (!job)
            return tdb_usage_error("stacks", "--full, --hosts, --hostfile, --ssh, --remote-tdebug "
                                   "and --timeout go with --job");
        if (nroots || core_path || exe_path)
            return tdb_usage_error("stacks", "--job reads the ranks of a job: leave out %s",
                                   core_path ? "--core" : exe_path ? "--exe" : "--children");
        /* 'stacks --job ID' as well as 'stacks --job=ID'. */
        if (optind < argc && !job_id)
            job_id = argv[optind++];
        if (optind < argc)
            return tdb_usage_error("stacks", "unexpected argument '%s' (--job takes one job id)",
                                   argv[optind]);
        if (hosts_arg && hostfile)
            return tdb_usage_error("stacks", "--hosts and --hostfile exclude each other");
        if ((hosts_arg || hostfile) && job_id && !safe_word(job_id))
            return tdb_usage_error("stacks", "job id '%s' cannot be passed to other hosts as it "
                                   "is: name it by letters, digits and ._:@/+=-~", job_id);
        if (jo.remote.tdebug && !safe_word(jo.remote.tdebug))
            return tdb_usage_error("stacks", "--remote-tdebug '%s' must be a path without blanks "
                                   "or quotes", jo.remote.tdebug);
        double secs = 0;
        if (timeout_arg && (tdb_parse_seconds(timeout_arg, &secs) < 0 || secs <= 0 ||
                            secs > 86400))
            return tdb_usage_error("stacks", "--timeout '%s' is not a number of seconds",
                                   timeout_arg);
        if (timeout_arg)
            jo.remote.timeout_ms = (int)(secs * 1000);
        tdb_error err = {0};
        char **hosts = NULL;
        char **words = NULL;
        if (jo.remote.ssh && tdb_shell_words(jo.remote.ssh, &words, &err) < 0)
            return tdb_usage_error("stacks", "--ssh: %s", err.msg);
        tdb_strv_free(words);
        if ((hosts_arg && tdb_hosts_parse(hosts_arg, &hosts, &jo.n_hosts, &err) < 0) ||
            (hostfile && !tdb_check_usage_only &&
             tdb_hostfile_read(hostfile, &hosts, &jo.n_hosts, &err) < 0)) {
            if (err.exit_code == TDB_EXIT_USAGE)
                return tdb_usage_error("stacks", "%s", err.msg);
            return tdb_error_exit(&err);
        }
        if (tdb_check_usage_only) {
            tdb_strv_free(hosts);
            return TDB_EXIT_OK;
        }
        jo.job = job_id;
        jo.hosts = hosts;
        jo.stacks = o;
        int rc = stacks_of_job(&jo, json, full);
        tdb_strv_free(hosts);
        return rc;
    }
    for (int i = optind; i < argc; i++) {
        pid_t pid;
        if (parse_pid(argv[i], &pid) < 0) {
            free(roots);
            free(root_children);
            return tdb_usage_error("stacks", "'%s' is not a process id", argv[i]);
        }
        roots = tdb_xrealloc(roots, (nroots + 1) * sizeof(*roots));
        root_children = tdb_xrealloc(root_children, (nroots + 1) * sizeof(*root_children));
        roots[nroots] = pid;
        root_children[nroots++] = 0;
    }
    if (exe_path && !core_path) {
        free(roots);
        free(root_children);
        return tdb_usage_error("stacks", "--exe goes with --core");
    }
    if (core_path && nroots) {
        free(roots);
        free(root_children);
        return tdb_usage_error("stacks", "--core reads a core file, not processes: leave out "
                               "the process ids");
    }
    if (core_path && tdb_check_usage_only)
        return TDB_EXIT_OK;
    if (core_path)
        return stacks_of_core(core_path, exe_path, &o, json, verbose);
    if (nroots == 0) {
        free(roots);
        free(root_children);
        return tdb_usage_error("stacks", "no process given (PID..., --children PID or --core "
                               "CORE)");
    }
    if (tdb_check_usage_only) {
        free(roots);
        free(root_children);
        return TDB_EXIT_OK;
    }

    /* The processes, named ones first in the order given, each followed by
     * its descendants when asked; tdebug itself is never one of them. */
    target *targets = NULL;
    size_t ntargets = 0;
    pid_t self = getpid();
    for (size_t i = 0; i < nroots; i++) {
        /* A thread id (from top -H, a log line) means its process. */
        pid_t tgid = tdb_proc_tgid(roots[i]);
        if (tgid > 0 && tgid != roots[i]) {
            tdb_warn("%d is a thread of process %d: showing that process", (int)roots[i],
                     (int)tgid);
            roots[i] = tgid;
        }
        add_target(&targets, &ntargets, roots[i], 0);
        if (!root_children[i])
            continue;
        pid_t *desc = NULL;
        size_t ndesc = 0;
        if (tdb_proc_descendants(roots[i], &desc, &ndesc, NULL) == 0)
            for (size_t j = 0; j < ndesc; j++)
                if (desc[j] != self)
                    add_target(&targets, &ntargets, desc[j], 1);
        free(desc);
    }
    free(roots);
    free(root_children);

    int failed = 0;
    o.symbols = tdb_symcache_new();
    json_t *doc = json ? json_pack("{s:[], s:[]}", "processes", "errors") : NULL;
    for (size_t i = 0; i < ntargets; i++) {
        const target *t = &targets[i];
        tdb_error err = {0};
        tdb_process_stacks *s = NULL;
        if (t->pid == self)
            tdb_error_set(&err, EINVAL, "cannot read the stacks of pid %d: it is this tdebug",
                          (int)t->pid);
        else
            tdb_stacks_take(t->pid, &o, &s, &err);
        if (!s) {
            int vanished = t->descendant && err.code == ESRCH;
            if (vanished)
                tdb_warn("pid %d exited before its stacks were read", (int)t->pid);
            else
                tdb_print_error(&err);
            failed |= !vanished;
            if (doc) {
                /* Nothing is left out silently: a descendant that exited
                 * is an error entry too (it does not fail the command). */
                json_t *e = json_object();
                json_object_set_new(e, "pid", json_integer(t->pid));
                tdb_json_set_str(e, "error", vanished ? "exited before its stacks were read"
                                                        : err.msg);
                if (vanished)
                    json_object_set_new(e, "exited", json_true());
                json_array_append_new(json_object_get(doc, "errors"), e);
            }
            continue;
        }
        if (verbose) {
            if (s->python_layout)
                fprintf(stderr, "tdebug: pid %d: Python %s, layout: %s\n", (int)s->pid,
                        s->python_version, s->python_layout);
            if (s->paused)
                fprintf(stderr,
                        "tdebug: pid %d: paused %.2f ms (%zu threads, %lu memory reads, %zu KiB "
                        "of stack copied); unwound and merged in %.0f ms\n",
                        (int)s->pid, s->pause_ms, s->n, s->mem_reads, s->stack_bytes / 1024,
                        s->unwind_ms);
            else
                fprintf(stderr, "tdebug: pid %d: not paused (%s)\n", (int)s->pid,
                        s->native_note ? s->native_note : "?");
        }
        if (doc) {
            json_array_append_new(json_object_get(doc, "processes"),
                                  tdb_process_stacks_json(s, o.flags));
        } else {
            tdb_buf b = TDB_BUF_INIT;
            if (i > 0)
                tdb_buf_addc(&b, '\n');
            tdb_process_stacks_render(&b, s, o.flags);
            fputs(tdb_buf_str(&b), stdout);
            fflush(stdout);
            tdb_buf_free(&b);
        }
        tdb_process_stacks_free(s);
    }
    if (doc)
        tdb_print_json(tdb_json_versioned(doc));
    free(targets);
    tdb_symcache_free(o.symbols);
    return failed ? TDB_EXIT_FAIL : TDB_EXIT_OK;
}
