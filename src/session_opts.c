/* session_opts.c: options shared by 'tdebug run' and 'tdebug attach'. */
#include "session_opts.h"

#include "cmd.h"
#include "common.h"

#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

/* The suffixes GCC gives the clones of a function (foo.cold,
 * foo.part.0, foo.constprop.0.isra.0): symbols gdb can break on. */
static int is_clone_suffix(const char *s, size_t n)
{
    static const char *const suffixes[] = {"cold",  "hot",   "part",     "constprop", "isra",
                                           "clone", "lto_priv", "localalias", "specialized"};
    for (size_t i = 0; i < sizeof(suffixes) / sizeof(suffixes[0]); i++)
        if (strlen(suffixes[i]) == n && !strncmp(s, suffixes[i], n))
            return 1;
    return 0;
}

tdb_break_kind tdb_break_location_kind(const char *loc)
{
    const char *colon = strrchr(loc, ':');
    const char *file_end = colon ? colon : loc + strlen(loc);
    if (file_end - loc >= 4 && !strncmp(file_end - 3, ".py", 3) && (!colon || colon[-1] != ':'))
        return TDB_BREAK_PYTHON_FILE;
    if (colon || loc[0] == '*')
        return TDB_BREAK_NATIVE;
    /* identifier(.identifier)+, none of them a clone suffix, the last not
     * a C/C++ source file's extension. */
    static const char *const sources[] = {"c", "cc", "cpp", "cxx", "cu", "h", "hpp", "S", "s"};
    const char *p = loc;
    size_t parts = 0;
    for (;;) {
        const char *start = p;
        if (!(isalpha((unsigned char)*p) || *p == '_'))
            return TDB_BREAK_NATIVE;
        while (isalnum((unsigned char)*p) || *p == '_')
            p++;
        size_t n = (size_t)(p - start);
        if (parts && is_clone_suffix(start, n))
            return TDB_BREAK_NATIVE;
        parts++;
        if (!*p) {
            for (size_t i = 0; i < sizeof(sources) / sizeof(sources[0]); i++)
                if (strlen(sources[i]) == n && !strncmp(start, sources[i], n))
                    return TDB_BREAK_NATIVE;
            return parts >= 2 ? TDB_BREAK_PYTHON_NAME : TDB_BREAK_NATIVE;
        }
        if (*p++ != '.')
            return TDB_BREAK_NATIVE;
    }
}

/* -b with a Python location: gdb would take it for a native one that
 * never binds, and the advice for those ("add --symbols") is wrong here.
 * Says what to write instead; returns -TDB_EXIT_USAGE. */
static int python_break_refused(const char *cmd, const char *arg, tdb_break_kind kind)
{
    int torch = !strncmp(arg, "torch.", 6);
    if (kind == TDB_BREAK_PYTHON_FILE)
        /* Python breakpoints (FILE.py:LINE, FILE.py:FUNCTION) take this case
         * once they exist. */
        tdb_usage_error(cmd, "--break '%s' is a place in Python code, and this tdebug stops "
                             "only in native code; break in the C/C++ that line runs (for "
                             "torch.add: -b at::_ops::add_Tensor::call)",
                        arg);
    else
        tdb_usage_error(cmd, "--break '%s' is a Python name, and gdb breaks in native code: "
                             "give the C/C++ function it runs (%s), or a place in Python code "
                             "as FILE.py:FUNCTION or FILE.py:LINE",
                        arg, torch ? "torch's operators enter C++ at at::_ops::NAME_OVERLOAD::call: "
                                     "torch.add at at::_ops::add_Tensor::call; 'tdebug tour' "
                                     "walks that path"
                                   : "its symbol, as 'info functions REGEX' at the (tdebug) "
                                     "prompt lists them");
    return -TDB_EXIT_USAGE;
}

int tdb_session_option(const char *cmd, int c, char *arg, tdb_session_options *opts)
{
    switch (c) {
    case TDB_OPT_STOP:
    case TDB_OPT_STOP_LOAD:
        if (!tdb_valid_module_name(arg)) {
            tdb_usage_error(cmd, "--stop-at-%s '%s' is not a module name (like torch._C)",
                            c == TDB_OPT_STOP ? "import" : "load", arg);
            return -TDB_EXIT_USAGE;
        }
        if (c == TDB_OPT_STOP)
            tdb_ptrs_push(&opts->stop_at_import, &opts->n_stop_at_import, arg);
        else
            tdb_ptrs_push(&opts->stop_at_load, &opts->n_stop_at_load, arg);
        return 1;
    case 'b': {
        if (!*arg || strchr(arg, '\n')) {
            tdb_usage_error(cmd, "--break needs a gdb location (FUNCTION, FILE:LINE or *ADDRESS)");
            return -TDB_EXIT_USAGE;
        }
        tdb_break_kind kind = tdb_break_location_kind(arg);
        if (kind != TDB_BREAK_NATIVE)
            return python_break_refused(cmd, arg, kind);
        tdb_ptrs_push(&opts->breaks, &opts->n_breaks, arg);
        return 1;
    }
    case TDB_OPT_SYMBOLS: {
        regex_t re;
        if (!*arg || strchr(arg, '\n') || regcomp(&re, arg, REG_NOSUB) != 0) {
            tdb_usage_error(cmd, "--symbols '%s' is not a basic regex", arg);
            return -TDB_EXIT_USAGE;
        }
        regfree(&re);
        tdb_ptrs_push(&opts->symbols, &opts->n_symbols, arg);
        return 1;
    }
    case TDB_OPT_ALL_SYMBOLS:
        opts->all_symbols = 1;
        return 1;
    case TDB_OPT_BATCH:
        opts->output = TDB_OUTPUT_BATCH;
        return 1;
    case TDB_OPT_JSON:
        opts->output = TDB_OUTPUT_JSON;
        return 1;
    case TDB_OPT_RAW:
        opts->raw = 1;
        return 1;
    case TDB_OPT_CPYTHON_SYMBOLS:
        opts->cpython_symbols = 1;
        return 1;
    case 'v':
        opts->verbose = 1;
        return 1;
    default:
        return 0;
    }
}

int tdb_session_getopt(const char *cmd, int argc, char **argv, const char *optstring,
                       const struct option *longopts, tdb_session_options *opts, int *status)
{
    int c;
    opterr = 0;
    while ((c = getopt_long(argc, argv, optstring, longopts, NULL)) != -1) {
        int used = tdb_session_option(cmd, c, optarg, opts);
        if (used < 0) {
            *status = -used;
            return TDB_GETOPT_DONE;
        }
        if (used)
            continue;
        switch (c) {
        case 'h':
            *status = tdb_print_usage(cmd);
            return TDB_GETOPT_DONE;
        case ':':
            *status = tdb_usage_error(cmd, "option '%s' needs a value", argv[optind - 1]);
            return TDB_GETOPT_DONE;
        case '?':
            *status = tdb_usage_error(cmd, "unknown option '%s'", argv[optind - 1]);
            return TDB_GETOPT_DONE;
        default:
            return c;
        }
    }
    return -1;
}

void tdb_session_options_release(tdb_session_options *opts)
{
    free(opts->stop_at_import);
    free(opts->stop_at_load);
    free(opts->breaks);
    free(opts->symbols);
    opts->stop_at_import = opts->stop_at_load = opts->breaks = opts->symbols = NULL;
    opts->n_stop_at_import = opts->n_stop_at_load = opts->n_breaks = opts->n_symbols = 0;
}
