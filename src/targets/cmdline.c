/*
 * targets/cmdline.c: what a process's command line says: which program a
 * Python runs (the user's, or debugpy's adapter, launcher or CLI), the
 * role that gives it in a debugpy session, and the command line shortened
 * to fit a table (contracts in targets/proc.h and targets/proc_internal.h).
 */
#include "targets/proc_internal.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int starts_with(const char *s, const char *prefix)
{
    return strncmp(s, prefix, strlen(prefix)) == 0;
}

/* --- roles */

static const struct {
    const char *name;
    const char *phrase;
} role_info[] = {
    [TDB_ROLE_NONE] = {"", "not a Python process"},
    [TDB_ROLE_PLAIN] = {"plain", "a Python process"},
    [TDB_ROLE_ADAPTER] = {"adapter", "the debugpy adapter"},
    [TDB_ROLE_LAUNCHER] = {"launcher", "the debugpy launcher"},
    [TDB_ROLE_DEBUGGEE] = {"debuggee", "a debugpy debuggee"},
    [TDB_ROLE_SERVER] = {"server", "a debugpy server"},
    [TDB_ROLE_EMBEDDED] = {"embedded", "a program running debugpy"},
    [TDB_ROLE_INJECTOR] = {"injector", "debugpy injecting itself into a process"},
};

const char *tdb_role_name(tdb_role role)
{
    return (unsigned)role < sizeof(role_info) / sizeof(role_info[0]) ? role_info[role].name : "";
}

const char *tdb_role_describe(tdb_role role)
{
    return (unsigned)role < sizeof(role_info) / sizeof(role_info[0]) ? role_info[role].phrase
                                                                     : "a process";
}

int tdb_role_runs_user_code(tdb_role role)
{
    return role == TDB_ROLE_DEBUGGEE || role == TDB_ROLE_SERVER || role == TDB_ROLE_EMBEDDED ||
           role == TDB_ROLE_PLAIN;
}

/* PATH with "." and ".." folded away lexically ("a/launcher/../../debugpy"
 * -> "debugpy"'s parent chain), as a new string. */
static char *normalize_path(const char *path)
{
    size_t len = strlen(path);
    char *copy = tdb_xstrdup(path);
    const char **parts = tdb_xcalloc(len + 1, sizeof(*parts));
    size_t n = 0;
    int absolute = path[0] == '/';
    char *save = NULL;

    for (char *tok = strtok_r(copy, "/", &save); tok; tok = strtok_r(NULL, "/", &save)) {
        if (!strcmp(tok, "."))
            continue;
        if (!strcmp(tok, "..") && n > 0 && strcmp(parts[n - 1], "..") != 0) {
            n--;
            continue;
        }
        if (!strcmp(tok, "..") && absolute)
            continue;
        parts[n++] = tok;
    }
    tdb_buf b = TDB_BUF_INIT;
    if (absolute)
        tdb_buf_addc(&b, '/');
    for (size_t i = 0; i < n; i++) {
        if (i)
            tdb_buf_addc(&b, '/');
        tdb_buf_adds(&b, parts[i]);
    }
    free(parts);
    free(copy);
    return tdb_buf_detach(&b);
}

/* Nonzero when normalized PATH is SUFFIX or ends in "/SUFFIX", optionally
 * followed by "/__main__.py" (python runs a directory's __main__.py). */
static int path_names(const char *path, const char *suffix)
{
    char *norm = normalize_path(path);
    size_t n = strlen(norm), m = strlen(suffix);
    static const char main_py[] = "/__main__.py";
    size_t k = sizeof(main_py) - 1;
    int hit = 0;

    if (n >= k && !strcmp(norm + n - k, main_py))
        norm[n -= k] = '\0';
    if (n >= m && !strcmp(norm + n - m, suffix) && (n == m || norm[n - m - 1] == '/'))
        hit = 1;
    free(norm);
    return hit;
}

/* --- roles from the command line */

/* Where CPython's own options end in ARGV: the -m module, the script, or
 * neither (-c, -, interactive).  *OUT_NEXT gets the index of the first
 * argument for the program. */
typedef struct py_target {
    const char *module;
    const char *script;
    const char *code; /* -c CODE */
    size_t start;     /* index of the program: the script, or the -m/-c word */
    size_t next;
} py_target;

static void parse_python_argv(char **argv, size_t argc, py_target *t)
{
    memset(t, 0, sizeof(*t));
    for (size_t i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (!strcmp(a, "--")) {
            if (i + 1 < argc)
                t->script = argv[i + 1];
            t->start = i + 1;
            t->next = i + 2;
            return;
        }
        if (a[0] != '-' || !strcmp(a, "-")) {
            if (strcmp(a, "-") != 0)
                t->script = a;
            t->start = i;
            t->next = i + 1;
            return;
        }
        if (a[1] == '-') { /* --check-hash-based-pycs MODE and friends */
            if (!strcmp(a, "--check-hash-based-pycs"))
                i++;
            continue;
        }
        /* A cluster of one-letter options: "-BX" "frozen_modules=off",
         * "-um" "mod", "-cprint(1)". */
        for (const char *c = a + 1; *c; c++) {
            if (*c == 'm' || *c == 'c') {
                t->start = i;
                const char *val = c[1] ? c + 1 : (i + 1 < argc ? argv[++i] : NULL);
                if (*c == 'm')
                    t->module = val;
                else
                    t->code = val;
                t->next = i + 1;
                return;
            }
            if (*c == 'X' || *c == 'W') {
                if (!c[1])
                    i++;
                break;
            }
        }
    }
    t->start = t->next = argc;
}

/* debugpy's own command line (debugpy/server/cli.py): switches from index
 * I up to the target (a file, -m, -c or --pid), whose index it returns
 * (argc when there is none).  With P, sets P's role and endpoint. */
static size_t debugpy_cli_target(char **argv, size_t argc, size_t i, tdb_proc *p)
{
    if (p)
        p->role = TDB_ROLE_PLAIN;
    for (; i < argc; i++) {
        const char *a = argv[i];
        const char *val = i + 1 < argc ? argv[i + 1] : NULL;
        if (!strcmp(a, "--listen") || !strcmp(a, "--connect")) {
            if (p) {
                p->role = a[2] == 'l' ? TDB_ROLE_SERVER : TDB_ROLE_DEBUGGEE;
                free(p->endpoint);
                p->endpoint = val ? tdb_xstrdup(val) : NULL;
            }
            i++;
        } else if (!strcmp(a, "--pid")) {
            long pid;
            if (p && val && tdb_parse_long(val, 1, 0x7fffffff, &pid) == 0) {
                p->role = TDB_ROLE_INJECTOR;
                p->role_pid = (pid_t)pid;
            }
            return i;
        } else if (!strcmp(a, "--log-to") || !strcmp(a, "--adapter-access-token") ||
                   starts_with(a, "--configure-")) {
            i++;
        } else if (a[0] != '-' || !strcmp(a, "-m") || !strcmp(a, "-c")) {
            return i; /* the target: what follows is the program's */
        }
    }
    return argc;
}

/* What the Python program is: debugpy's adapter, its launcher, its CLI
 * (--listen/--connect/--pid), or the user's own. */
typedef enum py_program { PROGRAM_USER, PROGRAM_ADAPTER, PROGRAM_LAUNCHER, PROGRAM_DEBUGPY_CLI } py_program;

static py_program python_program(const py_target *t)
{
    const char *m = t->module, *s = t->script;
    if ((m && !strcmp(m, "debugpy.adapter")) || (s && path_names(s, "debugpy/adapter")))
        return PROGRAM_ADAPTER;
    if ((m && !strcmp(m, "debugpy.launcher")) || (s && path_names(s, "debugpy/launcher")))
        return PROGRAM_LAUNCHER;
    if ((m && (!strcmp(m, "debugpy") || !strcmp(m, "debugpy.__main__"))) ||
        (s && path_names(s, "debugpy")))
        return PROGRAM_DEBUGPY_CLI;
    return PROGRAM_USER;
}

/* The value of option NAME ("--port") in ARGV from index I on, written as
 * "--port N" or "--port=N" (argparse takes both); the last one wins. */
static const char *option_value(char **argv, size_t argc, size_t i, const char *name)
{
    const char *val = NULL;
    size_t n = strlen(name);
    for (; i < argc; i++) {
        if (!strcmp(argv[i], name) && i + 1 < argc)
            val = argv[++i];
        else if (!strncmp(argv[i], name, n) && argv[i][n] == '=')
            val = argv[i] + n + 1;
    }
    return val;
}

/* (An adapter started without --port speaks DAP on stdio: VS Code's own.) */
int tdb_proc_adapter_address(const tdb_proc *p, const char **out_host, long *out_port)
{
    const char *port = option_value(p->argv, p->argc, 1, "--port");
    const char *host = option_value(p->argv, p->argc, 1, "--host");
    long n;
    if (!port || tdb_parse_long(port, 0, 65535, &n) < 0)
        return -1;
    *out_host = host && *host ? host : "127.0.0.1";
    *out_port = n;
    return 0;
}

void tdb_proc_assign_role(tdb_proc *p)
{
    py_target t;

    p->role = TDB_ROLE_NONE;
    if (p->python != TDB_YES)
        return;
    p->role = TDB_ROLE_PLAIN;
    if (p->argc >= 1) {
        parse_python_argv(p->argv, p->argc, &t);
        py_program prog = python_program(&t);
        if (prog == PROGRAM_ADAPTER) {
            const char *host;
            long port;
            p->role = TDB_ROLE_ADAPTER;
            if (tdb_proc_adapter_address(p, &host, &port) == 0)
                p->endpoint = tdb_xasprintf(strchr(host, ':') ? "[%s]:%ld" : "%s:%ld", host, port);
        } else if (prog == PROGRAM_LAUNCHER)
            p->role = TDB_ROLE_LAUNCHER;
        else if (prog == PROGRAM_DEBUGPY_CLI)
            debugpy_cli_target(p->argv, p->argc, t.next, p);
        else if (t.code && strstr(t.code, "import pydevd") && strstr(t.code, "pydevd.settrace("))
            /* A subprocess of a debuggee: debugpy rewrites its command line
             * to "-c 'import sys; sys.path.insert(0, .../pydevd); import
             * pydevd; ...; pydevd.settrace(host=..., port=...)'" so it
             * connects to the same adapter. */
            p->role = TDB_ROLE_DEBUGGEE;
    }
    if (p->role == TDB_ROLE_PLAIN && p->pydevd == TDB_YES)
        p->role = TDB_ROLE_EMBEDDED;
}

/* --- display */

static int is_token_option(const char *a)
{
    return !strcmp(a, "--adapter-access-token") || !strcmp(a, "--server-access-token") ||
           !strcmp(a, "--access-token") || !strcmp(a, "--client-access-token");
}

/* A line of a table must stay one line ('python -c' code has newlines) of
 * UTF-8 (an argument may hold any bytes): control characters and bytes
 * that are not UTF-8 are shown as \xNN, as JSON output escapes them. */
static void add_printable(tdb_buf *b, const char *s)
{
    for (size_t left = strlen(s); *s;) {
        unsigned char c = (unsigned char)*s;
        size_t n = tdb_utf8_seq_len(s, left);
        if (c == '\n')
            tdb_buf_adds(b, "\\n");
        else if (c == '\t')
            tdb_buf_adds(b, "\\t");
        else if (c < 0x20 || c == 0x7f || n == 0)
            tdb_buf_addf(b, "\\x%02x", c);
        else
            tdb_buf_add(b, s, n);
        n = n ? n : 1;
        s += n;
        left -= n;
    }
}

/* How a word of a command line may be shortened to fit a table. */
typedef enum word_part {
    WORD_INTERPRETER,  /* argv[0]: its directory may go (".../python3.11") */
    WORD_PY_OPTION,    /* the interpreter's options: may become "..." */
    WORD_PROGRAM,      /* the script, -m MODULE, -c: kept (a path keeps its name) */
    WORD_CODE,         /* -c's CODE: may be cut */
    WORD_TOOL_OPTION,  /* debugpy's options before the user's program: may become "..." */
    WORD_USER_PROGRAM, /* the program debugpy runs: kept, as WORD_PROGRAM */
    WORD_ARGUMENT      /* the program's arguments: dropped from the end */
} word_part;

/* One display word of P's argv[I]: debugpy's installation path as
 * '.../debugpy', an access token as '...', control characters escaped. */
static char *display_word(const tdb_proc *p, size_t i)
{
    const char *a = p->argv[i];
    tdb_buf b = TDB_BUF_INIT;
    if (i > 0 && is_token_option(p->argv[i - 1]))
        return tdb_xstrdup("...");
    /* /usr/lib/python3/dist-packages/debugpy/launcher/../../debugpy
     * -> .../debugpy */
    const char *at = a[0] == '/' ? strstr(a, "/debugpy") : NULL;
    if (at && (at[8] == '\0' || at[8] == '/')) {
        char *norm = normalize_path(a);
        const char *n = strstr(norm, "/debugpy");
        if (n && (n[8] == '\0' || n[8] == '/')) {
            tdb_buf_addf(&b, "...%s", n);
            free(norm);
            return tdb_buf_detach(&b);
        }
        free(norm);
    }
    add_printable(&b, a);
    return tdb_buf_detach(&b);
}

/* Which part of the command line each word of P is. */
static void classify_words(const tdb_proc *p, word_part *part)
{
    py_target t;
    parse_python_argv(p->argv, p->argc, &t);
    size_t user = t.next, user_end = t.next;
    py_program prog = python_program(&t);
    if (prog == PROGRAM_DEBUGPY_CLI) {
        user = debugpy_cli_target(p->argv, p->argc, t.next, NULL);
        user_end = user < p->argc && (!strcmp(p->argv[user], "-m") ||
                                      !strcmp(p->argv[user], "-c"))
                       ? user + 2 : user + 1;
    } else if (prog == PROGRAM_LAUNCHER) {
        for (user = t.next; user < p->argc && strcmp(p->argv[user], "--"); user++)
            ;
        user_end = ++user + 1;
    }
    for (size_t i = 0; i < p->argc; i++) {
        if (i == 0)
            part[i] = WORD_INTERPRETER;
        else if (i < t.start)
            part[i] = WORD_PY_OPTION;
        else if (i < t.next)
            part[i] = t.code && i == t.next - 1 && strcmp(p->argv[i], "-c") ? WORD_CODE
                                                                            : WORD_PROGRAM;
        else if (i < user)
            part[i] = WORD_TOOL_OPTION;
        else if (i < user_end)
            part[i] = WORD_USER_PROGRAM;
        else
            part[i] = WORD_ARGUMENT;
    }
}

/* ".../NAME" for a path with a directory; WORD itself otherwise. */
static void add_without_dir(tdb_buf *b, const char *word)
{
    const char *slash = strrchr(word, '/');
    if (slash && slash[1] && strncmp(word, ".../", 4))
        tdb_buf_addf(b, ".../%s", slash + 1);
    else
        tdb_buf_adds(b, word);
}

/* The words shown shortened to LEVEL (see tdb_proc_short_command), with
 * the first KEEP_ARGS arguments.  CODE_MAX > 0 cuts -c's CODE. */
static char *render_words(char **word, const word_part *part, size_t n, int level,
                          size_t keep_args, size_t code_max)
{
    tdb_buf b = TDB_BUF_INIT;
    size_t args = 0;
    for (size_t i = 0; i < n; i++) {
        word_part w = part[i];
        int collapse = (w == WORD_PY_OPTION && level >= 2) || (w == WORD_TOOL_OPTION && level >= 3);
        if (collapse && i > 0 && part[i - 1] == w)
            continue; /* one "..." for the run */
        if (w == WORD_ARGUMENT && args++ >= keep_args) {
            tdb_buf_adds(&b, " ...");
            break;
        }
        if (b.len)
            tdb_buf_addc(&b, ' ');
        if (collapse)
            tdb_buf_adds(&b, "...");
        else if ((w == WORD_INTERPRETER && level >= 1) ||
                 ((w == WORD_PROGRAM || w == WORD_USER_PROGRAM) && level >= 5))
            add_without_dir(&b, word[i]);
        else if (w == WORD_CODE && code_max && strlen(word[i]) > code_max + 3)
            tdb_buf_addf(&b, "%.*s...", (int)code_max, word[i]);
        else
            tdb_buf_adds(&b, word[i]);
    }
    return tdb_buf_detach(&b);
}

char *tdb_proc_short_command(const tdb_proc *p, size_t max_len)
{
    if (p->argc == 0) { /* a kernel thread, a zombie: its name */
        tdb_buf b = TDB_BUF_INIT;
        tdb_buf_addc(&b, '[');
        add_printable(&b, p->comm ? p->comm : "?");
        tdb_buf_addc(&b, ']');
        return tdb_buf_detach(&b);
    }
    char **word = tdb_xcalloc(p->argc, sizeof(*word));
    word_part *part = tdb_xcalloc(p->argc, sizeof(*part));
    size_t n_args = 0;
    for (size_t i = 0; i < p->argc; i++)
        word[i] = display_word(p, i);
    classify_words(p, part);
    for (size_t i = 0; i < p->argc; i++)
        n_args += part[i] == WORD_ARGUMENT;

    /* Shorten step by step until it fits: the interpreter's directory, its
     * options, debugpy's options, the program's arguments from the end,
     * the program's directory, -c's code.  The program's name stays: past
     * that the line is longer than MAX_LEN. */
    char *s = render_words(word, part, p->argc, 0, n_args, 0);
    for (int level = 1; max_len && strlen(s) > max_len && level <= 6; level++) {
        size_t keep = n_args;
        while (level >= 4 && keep > 0) { /* as many arguments as fit */
            char *t = render_words(word, part, p->argc, level, keep, 0);
            int fits = strlen(t) <= max_len;
            free(t);
            if (fits)
                break;
            keep--;
        }
        free(s);
        s = render_words(word, part, p->argc, level, keep, 0);
        size_t over = strlen(s) > max_len ? strlen(s) - max_len : 0;
        for (size_t i = 0; level == 6 && over && i < p->argc; i++) {
            size_t len = strlen(word[i]);
            size_t cut = len > over + 3 + 8 ? len - over - 3 : 8; /* 8 chars at least */
            if (part[i] != WORD_CODE || len <= cut + 3)
                continue;
            while (cut > 0 && ((unsigned char)word[i][cut] & 0xc0) == 0x80)
                cut--; /* not inside a UTF-8 sequence */
            free(s);
            s = render_words(word, part, p->argc, level, keep, cut);
        }
    }
    for (size_t i = 0; i < p->argc; i++)
        free(word[i]);
    free(word);
    free(part);
    return s;
}
