/* session/options.c: options shared by 'tdebug run' and 'tdebug attach'. */
#include "session/options.h"

#include "cmd/cmd.h"
#include "base/common.h"

#include <ctype.h>
#include <regex.h>
#include <stdlib.h>
#include <string.h>

/* -b with a Python name, or a Python file without a line or function:
 * says what to write instead; returns -TDB_EXIT_USAGE. */
static int python_break_refused(const char *cmd, const char *arg)
{
    tdb_buf why = TDB_BUF_INIT;
    tdb_break_refusal(arg, &why);
    tdb_usage_error(cmd, "%s", tdb_buf_str(&why));
    tdb_buf_free(&why);
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
        if (tdb_break_refusal(arg, NULL))
            return python_break_refused(cmd, arg);
        tdb_ptrs_push(&opts->breaks, &opts->n_breaks, arg);
        return 1;
    }
    case TDB_OPT_CATCH_THROW: {
        tdb_buf why = TDB_BUF_INIT;
        if (arg && tdb_catch_type_refusal(arg, &why)) {
            tdb_usage_error(cmd, "--catch-throw=%s: %s", arg, tdb_buf_str(&why));
            tdb_buf_free(&why);
            return -TDB_EXIT_USAGE;
        }
        tdb_ptrs_push(&opts->catch_throw, &opts->n_catch_throw, arg ? arg : "");
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
    case 'x':
        if (!*arg) {
            tdb_usage_error(cmd, "--commands needs a file of commands, one a line");
            return -TDB_EXIT_USAGE;
        }
        opts->commands = arg;
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
    free(opts->catch_throw);
    opts->catch_throw = NULL;
    opts->n_catch_throw = 0;
    opts->stop_at_import = opts->stop_at_load = opts->breaks = opts->symbols = NULL;
    opts->n_stop_at_import = opts->n_stop_at_load = opts->n_breaks = opts->n_symbols = 0;
}
