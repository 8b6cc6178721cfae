/*
 * cmd_run.c: 'tdebug run': run a Python program under gdb and stop in its
 * native code.  Parses and checks the command line; src/debugger.c does
 * the rest.
 */
#include "cmd.h"
#include "common.h"
#include "debugger.h"
#include "session_opts.h"

#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

const char cmd_run_usage[] =
    "usage: tdebug run [options] [--] [PYTHON] (SCRIPT | -c CODE | -m MODULE) [ARGS...]\n"
    "\n"
    "Run a Python program under gdb, loading only the symbols that matter, and\n"
    "stop in its native code.  PYTHON defaults to the interpreter tdebug was\n"
    "built for; Python options (-u, -X opt, ...) may come before SCRIPT.\n"
    "\n"
    "Stops:\n"
    "  --stop-at-import MODULE  stop in MODULE's PyInit_<name> before its init\n"
    "                           runs, e.g. torch._C (repeatable)\n"
    "  --stop-at-load MODULE    stop when MODULE's file is mapped, before its\n"
    "                           dependencies load and before any of its code runs\n"
    "  -b, --break LOCATION     a gdb breakpoint: FUNCTION, FILE:LINE, *ADDRESS;\n"
    "                           it binds when its library loads (repeatable)\n"
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
    "  (default)                a (tdebug) prompt at each stop: continue, step,\n"
    "                           next, finish, bt, quit, help; other gdb commands\n"
    "                           pass through\n"
    "  --python PATH            the interpreter (same as giving PYTHON)\n"
    "  -v, --verbose            show gdb's own messages\n"
    "  -h, --help               this text\n"
    "\n"
    "Exit status: the program's own (128+N if killed by signal N); 1 when a\n"
    "requested stop never happened; 2 usage; 125 gdb failed; 126/127 the\n"
    "program cannot be run / does not exist; 130 interrupted.\n"
    "\n"
    "Example:\n"
    "  tdebug run --batch --stop-at-import torch._C -- /usr/bin/python3 -c 'import torch'\n";

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
    return strncmp(arg, "python", 6) == 0;
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

int cmd_run(int argc, char **argv)
{
    enum { OPT_PYTHON = TDB_OPT_FIRST_FREE };
    static const struct option longopts[] = {
        TDB_SESSION_LONGOPTS,
        {"python", required_argument, NULL, OPT_PYTHON},
        {"help", no_argument, NULL, 'h'},
        {NULL, 0, NULL, 0},
    };
    tdb_session_options opts = {.output = TDB_OUTPUT_INTERACTIVE};
    const char *python_opt = NULL;
    char **args = NULL;
    size_t n_args = 0;
    char *python = NULL;
    tdb_session *s = NULL;
    tdb_error err = {0};
    int status = TDB_EXIT_USAGE, c;

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
        } else if (strchr("bvh", a[1]) && a[1]) {
            ours += (a[1] == 'b' && !a[2]) ? 2 : 1;
        } else {
            break;
        }
    }
    if (ours > argc)
        ours = argc;
    opterr = 0;
    optind = 1;
    while ((c = getopt_long(ours, argv, "+:b:vh", longopts, NULL)) != -1) {
        int used = tdb_session_option("run", c, optarg, &opts);
        if (used < 0) {
            status = -used;
            goto cleanup;
        }
        if (used)
            continue;
        switch (c) {
        case OPT_PYTHON: python_opt = optarg; break;
        case 'h':
            status = tdb_print_usage("run");
            goto cleanup;
        case ':':
            status = tdb_usage_error("run", "option '%s' needs a value", argv[optind - 1]);
            goto cleanup;
        default:
            status = tdb_usage_error("run", "unknown option '%s'", argv[optind - 1]);
            goto cleanup;
        }
    }

    /* [PYTHON] [python options] (SCRIPT | -c CODE | -m MODULE) [ARGS...] */
    int i = optind;
    if (i < argc && !strcmp(argv[i], "--"))
        i++;
    if (i < argc && !python_opt && argv[i][0] != '-' && looks_like_python(argv[i]))
        python_opt = argv[i++];
    python = tdb_which(python_opt ? python_opt : tdb_default_python());
    if (!python) {
        tdb_fail("cannot find '%s' on PATH (give the interpreter's path)", python_opt);
        status = TDB_EXIT_NOTFOUND;
        goto cleanup;
    }
    tdb_ptrs_push(&args, &n_args, python);
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

    if ((status = check_python(python)) != 0)
        goto cleanup;

    s = tdb_session_new(&opts, &err);
    if (!s) {
        status = tdb_error_exit(&err);
        goto cleanup;
    }
    status = tdb_session_run(s, args, &err);
    if (err.set)
        tdb_print_error(&err);
cleanup:
    tdb_session_free(s);
    free(python);
    free(args);
    tdb_session_options_release(&opts);
    return status;
}
