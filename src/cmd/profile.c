/*
 * cmd/profile.c: 'tdebug profile': the environment for a debuggable build
 * of PyTorch or of any setuptools extension, and '--check', which says
 * whether a build really came out debuggable.
 */
#include "cmd/cmd.h"
#include "base/common.h"
#include "native/elf.h"
#include "checks/inspect.h"
#include "checks/profile.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

const char cmd_profile_usage[] =
    "usage: tdebug profile --torch[=MODE] [--torch-src DIR] [--debinfo FILES]\n"
    "                      [--jobs N] [--cuda] [--full] [--json]\n"
    "       tdebug profile --setuptools [--json]\n"
    "       tdebug profile --torch-extension [--json]\n"
    "       tdebug profile --check [--json] [--no-deps] [--python PYTHON]\n"
    "                      [--debug-dir DIRS] [--pid PID] [TARGET...]\n"
    "\n"
    "Print the environment for a debuggable build, one 'export' a line, each\n"
    "with a comment saying why; load it with eval \"$(tdebug profile ...)\".\n"
    "For PyTorch it also says what the build costs (sources, disk, time: from\n"
    "published measurements, named, scaled to MAX_JOBS) and whether the\n"
    "checkout (--torch-src, or the current directory) has its git submodules.\n"
    "\n"
    "  --torch[=MODE]     building PyTorch from source (variables its setup.py\n"
    "                     reads; PyTorch 2.1 or newer).  MODE is one of\n"
    "                       debug           DEBUG=1: -O0 -g everywhere (default)\n"
    "                       relwithdebinfo  REL_WITH_DEB_INFO=1: optimised, with -g\n"
    "                       selective       USE_CUSTOM_DEBINFO: -g for --debinfo files\n"
    "  --torch-src DIR    the PyTorch checkout the --debinfo files are in (default .)\n"
    "  --debinfo FILES    files for selective mode, ';'-separated or repeated,\n"
    "                     relative to the checkout (implies --torch=selective)\n"
    "  --jobs N           MAX_JOBS (default: from CPUs and memory, ~4 GiB a job)\n"
    "  --cuda             keep CUDA (default: USE_CUDA=0)\n"
    "  --full             keep the optional components (tests, distributed, ...)\n"
    "  --setuptools       any C/C++ extension: CFLAGS, CXXFLAGS, LDFLAGS for\n"
    "                     -O0 -g3 -fno-omit-frame-pointer and a gdb index\n"
    "  --torch-extension  one's own torch op (torch.utils.cpp_extension): the same,\n"
    "                     what to pass CppExtension/BuildExtension in setup.py and\n"
    "                     load()/load_inline() (extra_cflags), and TORCH_EXTENSIONS_DIR\n"
    "  --json             one JSON document instead of shell exports (with\n"
    "                     --check: instead of text)\n"
    "  --format sh|json   the same choice by its older name (sh: the default)\n"
    "\n"
    "  --check            inspect each TARGET (an ELF file, a module name like\n"
    "                     torch._C, a library name, or --pid PID's objects), and\n"
    "                     the libraries it loads, as 'tdebug inspect' does, and\n"
    "                     say whether each is really debuggable: DWARF present,\n"
    "                     unoptimised, indexed\n"
    "  --no-deps          with --check: only the objects named\n"
    "  --python PYTHON    with --check: resolves module names (default:\n"
    "                     $TDEBUG_PYTHON, else " TDB_PYTHON ")\n"
    "  --debug-dir DIRS   with --check: where separate debug files live\n"
    "  -h, --help         show this help\n"
    "\n"
    "Exit status: 0 the profile was printed, or every target is debuggable;\n"
    "1 a target is not debuggable (or cannot be inspected).\n";

enum { OPT_TORCH = 256, OPT_TORCH_SRC, OPT_DEBINFO, OPT_JOBS, OPT_CUDA, OPT_FULL,
       OPT_SETUPTOOLS, OPT_FORMAT, OPT_CHECK, OPT_JSON, OPT_PYTHON, OPT_DEBUG_DIR, OPT_PID,
       OPT_NO_DEPS, OPT_TORCH_EXTENSION };

static const struct option options[] = {
    {"torch", optional_argument, NULL, OPT_TORCH},
    {"torch-src", required_argument, NULL, OPT_TORCH_SRC},
    {"debinfo", required_argument, NULL, OPT_DEBINFO},
    {"jobs", required_argument, NULL, OPT_JOBS},
    {"cuda", no_argument, NULL, OPT_CUDA},
    {"full", no_argument, NULL, OPT_FULL},
    {"setuptools", no_argument, NULL, OPT_SETUPTOOLS},
    {"torch-extension", no_argument, NULL, OPT_TORCH_EXTENSION},
    {"format", required_argument, NULL, OPT_FORMAT},
    {"check", no_argument, NULL, OPT_CHECK},
    {"json", no_argument, NULL, OPT_JSON},
    {"python", required_argument, NULL, OPT_PYTHON},
    {"debug-dir", required_argument, NULL, OPT_DEBUG_DIR},
    {"pid", required_argument, NULL, OPT_PID},
    {"no-deps", no_argument, NULL, OPT_NO_DEPS},
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static int parse_mode(const char *s, tdb_torch_mode *out)
{
    static const struct { const char *name; tdb_torch_mode mode; } modes[] = {
        {"debug", TDB_TORCH_DEBUG},
        {"relwithdebinfo", TDB_TORCH_RELWITHDEBINFO},
        {"selective", TDB_TORCH_SELECTIVE},
    };
    for (size_t i = 0; i < sizeof(modes) / sizeof(modes[0]); i++) {
        if (!strcmp(s, modes[i].name)) {
            *out = modes[i].mode;
            return 0;
        }
    }
    return -1;
}

/* --- --check ------------------------------------------------------------- */

typedef struct check_line {
    const char *status; /* "ok", "warning", "failure" */
    const char *what;
    char *detail;
    char *remedy;
} check_line;

/* The three criteria for one object; returns nonzero when it passes. */
static int judge(const tdb_elf_report *r, check_line out[3])
{
    tdb_elf_verdict v;
    tdb_elf_get_verdict(r, &v);
    const char *rebuild = tdb_is_torch_object(r->realpath)
                              ? "rebuild torch with: eval \"$(tdebug profile --torch)\""
                              : "rebuild with: eval \"$(tdebug profile --setuptools)\"";

    out[0] = (check_line){"ok", "DWARF", NULL, NULL};
    if (v.dwarf)
        out[0].detail = tdb_xasprintf("in the %s%s%s", r->dwarf_in,
                                      r->debug_file && !strcmp(r->dwarf_in, "debug file") ? " " : "",
                                      r->debug_file && !strcmp(r->dwarf_in, "debug file")
                                          ? r->debug_file : "");
    else {
        out[0].status = "failure";
        out[0].detail = tdb_xstrdup(!r->dwarf_in ? "none: no source lines, no locals, no types"
                                                 : "no line table (.debug_line)");
        out[0].remedy = tdb_xstrdup(r->debuglink && !r->debug_file
                                        ? "install its debug file, or rebuild with debug info"
                                        : rebuild);
    }

    out[1] = (check_line){"ok", "unoptimised", NULL, NULL};
    size_t code_units = r->n_opt[TDB_OPT_NONE] + r->n_opt[TDB_OPT_DEBUG] + r->n_opt[TDB_OPT_ON] +
                        r->n_opt[TDB_OPT_UNKNOWN];
    switch (v.dwarf ? v.opt : TDB_OPT_UNKNOWN) {
    case TDB_OPT_NONE:
        out[1].detail = tdb_xasprintf("all %zu compile unit%s -O0", code_units,
                                      code_units == 1 ? "" : "s");
        break;
    case TDB_OPT_DEBUG:
        out[1].status = "warning";
        out[1].detail = tdb_xasprintf("%zu of %zu units -Og: mostly debuggable, some values "
                                      "<optimized out>", r->n_opt[TDB_OPT_DEBUG], code_units);
        out[1].remedy = tdb_xstrdup(rebuild);
        break;
    case TDB_OPT_ON: {
        tdb_buf b = TDB_BUF_INIT;
        tdb_buf_addf(&b, "%zu of %zu units optimised", r->n_opt[TDB_OPT_ON], code_units);
        for (size_t i = 0; i < r->n_optimised_examples && i < 3; i++)
            tdb_buf_addf(&b, "%s%s", i ? ", " : ": ", r->optimised_examples[i]);
        if (!r->n_optimised_examples && r->n_producers)
            for (size_t i = 0; i < r->n_producers; i++)
                if (r->producers[i].opt == TDB_OPT_ON) {
                    tdb_buf_addf(&b, " (%s)", r->producers[i].flag);
                    break;
                }
        tdb_buf_adds(&b, "; expect <optimized out> and jumps while stepping");
        out[1].status = "failure";
        out[1].detail = tdb_buf_detach(&b);
        out[1].remedy = tdb_xstrdup(rebuild);
        break;
    }
    default:
        out[1].status = v.dwarf ? "warning" : "failure";
        out[1].detail = tdb_xstrdup(v.dwarf ? "cannot tell: no compile flags recorded "
                                              "(clang: add -grecord-command-line)"
                                            : "cannot tell without DWARF");
        if (v.dwarf)
            out[1].remedy = tdb_xstrdup("build with GCC, or clang -grecord-command-line, to "
                                        "have it checked");
        break;
    }

    out[2] = (check_line){"ok", "indexed", NULL, NULL};
    if (v.indexed) {
        out[2].detail = tdb_xasprintf("%s version %u, %u symbols", r->index_section,
                                      r->index.version, r->index.symbols);
    } else {
        out[2].status = "failure";
        if (!r->index_section)
            out[2].detail = tdb_xstrdup("no .gdb_index or .debug_names: gdb reads all the DWARF "
                                        "when it starts (minutes for a libtorch_cpu)");
        else if (r->index_error)
            out[2].detail = tdb_xasprintf("%s is unusable: %s", r->index_section, r->index_error);
        else if (!r->index.symbols)
            out[2].detail = tdb_xasprintf("%s has no symbols, so gdb ignores it (compiled "
                                          "without -ggnu-pubnames)", r->index_section);
        else
            out[2].detail = tdb_xasprintf("%s is in the %s but the DWARF in the %s",
                                          r->index_section, r->index_in,
                                          r->dwarf_in ? r->dwarf_in : "nowhere");
        out[2].remedy = v.dwarf ? tdb_xasprintf("run 'gdb-add-index %s', or %s", r->realpath,
                                                rebuild)
                                : tdb_xstrdup("an index needs DWARF first");
    }
    return v.dwarf && (v.opt == TDB_OPT_NONE || v.opt == TDB_OPT_DEBUG ||
                       v.opt == TDB_OPT_UNKNOWN) && v.indexed;
}

static int run_check(int argc, char **argv, int first, const char *python, const char *dirs,
                     long pid, int json, int no_deps)
{
    int status = TDB_EXIT_OK;
    json_t *objects = json_array(), *errors = json_array();
    tdb_elf_options opt = {.debug_dirs = dirs};
    size_t n = 0;
    tdb_target *t = tdb_resolve_targets(argv + first, (size_t)(argc - first), python,
                                        (pid_t)(pid > 0 ? pid : 0), TDB_PID_MATTERS,
                                        no_deps ? 0 : TDB_TARGETS_NEEDED, &n);

    for (size_t i = 0; i < n; i++) {
        tdb_elf_report *r = tdb_target_inspect(&t[i], &opt, errors);
        if (!r) {
            status = TDB_EXIT_FAIL;
            continue;
        }
        const char *label = strncmp(t[i].label, "pid ", 4) ? t[i].label : t[i].path;
        check_line lines[3];
        int pass = judge(r, lines);
        if (!pass)
            status = TDB_EXIT_FAIL;
        if (json) {
            json_t *checks = json_array();
            for (int k = 0; k < 3; k++) {
                json_t *c = json_pack("{s:s, s:s}", "check", lines[k].what, "status",
                                      lines[k].status);
                tdb_json_set_str(c, "detail", lines[k].detail);
                tdb_json_set_str(c, "remedy", lines[k].remedy);
                json_array_append_new(checks, c);
            }
            json_t *o = json_object();
            tdb_target_json(&t[i], o);
            if (!strncmp(t[i].label, "pid ", 4))
                tdb_json_set_str(o, "target", label);
            tdb_json_set_str(o, "path", r->realpath);
            json_object_set_new(o, "debuggable", json_boolean(pass));
            json_object_set_new(o, "checks", checks);
            json_array_append_new(objects, o);
        } else {
            if (strcmp(label, r->realpath))
                printf("%s (%s)\n", label, r->realpath);
            else
                printf("%s\n", label);
            for (int k = 0; k < 3; k++) {
                printf("  %-8s %-12s %s\n", lines[k].status, lines[k].what, lines[k].detail);
                if (lines[k].remedy)
                    printf("  %-8s %-12s fix: %s\n", "", "", lines[k].remedy);
            }
            printf("  %s\n", pass ? "=> debuggable" : "=> not debuggable");
        }
        for (int k = 0; k < 3; k++) {
            free(lines[k].detail);
            free(lines[k].remedy);
        }
        tdb_elf_report_free(r);
    }
    if (json) {
        tdb_print_json(tdb_json_versioned(json_pack("{s:o, s:o, s:b}", "objects", objects,
                                                    "errors", errors, "debuggable",
                                                    status == TDB_EXIT_OK)));
    } else {
        tdb_print_errors(errors);
        json_decref(objects);
        json_decref(errors);
    }
    tdb_targets_free(t, n);
    return status;
}

/* --- main ---------------------------------------------------------------- */

static void split_debinfo(const char *arg, char ***list, size_t *n)
{
    const char *p = arg;
    while (*p) {
        const char *semi = strchr(p, ';');
        size_t len = semi ? (size_t)(semi - p) : strlen(p);
        if (len) {
            *list = tdb_xrealloc(*list, (*n + 2) * sizeof(char *));
            (*list)[(*n)++] = tdb_xstrndup(p, len);
            (*list)[*n] = NULL;
        }
        if (!semi)
            break;
        p = semi + 1;
    }
}

int cmd_profile(int argc, char **argv)
{
    tdb_profile_options o = {0};
    int torch = 0, mode_given = 0, check = 0, json_out = 0, format_json = 0, no_deps = 0, c;
    const char *python = NULL, *dirs = NULL, *format = NULL;
    char **debinfo = NULL;
    size_t n_debinfo = 0;
    long pid = 0;
    int status = TDB_EXIT_USAGE;

    optind = 1;
    while ((c = getopt_long(argc, argv, "h", options, NULL)) != -1) {
        switch (c) {
        case OPT_TORCH:
            torch = 1;
            if (optarg) {
                if (parse_mode(optarg, &o.torch) < 0) {
                    tdb_usage_error("profile", "unknown --torch mode '%s' (debug, "
                                               "relwithdebinfo or selective)", optarg);
                    goto cleanup;
                }
                mode_given = 1;
            }
            break;
        case OPT_TORCH_SRC: o.torch_src = optarg; break;
        case OPT_DEBINFO: split_debinfo(optarg, &debinfo, &n_debinfo); break;
        case OPT_JOBS:
            if (tdb_parse_long(optarg, 1, 4096, &o.jobs) < 0) {
                tdb_usage_error("profile", "--jobs wants a number from 1 to 4096, not '%s'",
                                optarg);
                goto cleanup;
            }
            break;
        case OPT_CUDA: o.cuda = 1; break;
        case OPT_FULL: o.full = 1; break;
        case OPT_SETUPTOOLS: o.setuptools = 1; break;
        case OPT_TORCH_EXTENSION: o.torch_extension = 1; break;
        case OPT_FORMAT: format = optarg; break;
        case OPT_CHECK: check = 1; break;
        case OPT_JSON: json_out = 1; break;
        case OPT_PYTHON: python = optarg; break;
        case OPT_DEBUG_DIR: dirs = optarg; break;
        case OPT_NO_DEPS: no_deps = 1; break;
        case OPT_PID:
            if (tdb_parse_long(optarg, 1, 0x7fffffff, &pid) < 0) {
                tdb_usage_error("profile", "--pid wants a process id, not '%s'", optarg);
                goto cleanup;
            }
            break;
        case 'h': status = tdb_print_usage("profile"); goto cleanup;
        default: tdb_usage_error("profile", "unknown option"); goto cleanup;
        }
    }

    if (check) {
        if (torch || o.setuptools || o.torch_extension || format || debinfo || o.jobs) {
            tdb_usage_error("profile", "--check inspects a build: it takes TARGETs, not "
                                       "profile options");
            goto cleanup;
        }
        if (optind >= argc && pid <= 0) {
            tdb_usage_error("profile", "--check what? give a file, a module name (torch._C) "
                                       "or --pid PID");
            goto cleanup;
        }
        status = tdb_check_usage_only ? TDB_EXIT_OK
                                      : run_check(argc, argv, optind, tdb_target_python(python),
                                                  dirs, pid, json_out, no_deps);
        goto cleanup;
    }
    if (optind < argc) {
        tdb_torch_mode m;
        if (parse_mode(argv[optind], &m) == 0)
            tdb_usage_error("profile", "write the mode as --torch=%s", argv[optind]);
        else
            tdb_usage_error("profile", "unexpected argument '%s' (targets go with --check)",
                            argv[optind]);
        goto cleanup;
    }
    if (pid || dirs || no_deps) {
        tdb_usage_error("profile", "--pid, --debug-dir and --no-deps go with --check");
        goto cleanup;
    }
    if (format && strcmp(format, "sh") && strcmp(format, "json")) {
        tdb_usage_error("profile", "--format is sh or json, not '%s'", format);
        goto cleanup;
    }
    if (json_out && format && !strcmp(format, "sh")) {
        tdb_usage_error("profile", "choose one: --json or --format sh");
        goto cleanup;
    }
    /* --json as every command has it; --format json is the older name. */
    format_json = json_out || (format && !strcmp(format, "json"));
    if (debinfo && !torch)
        torch = 1;
    if (torch + o.setuptools + o.torch_extension > 1) {
        tdb_usage_error("profile", "choose one: --torch, --setuptools or --torch-extension");
        goto cleanup;
    }
    if (!torch && !o.setuptools && !o.torch_extension) {
        tdb_usage_error("profile", "what are you building? --torch[=MODE] (PyTorch from source), "
                                   "--setuptools (any C/C++ extension) or --torch-extension "
                                   "(one's own torch op); or --check TARGET");
        goto cleanup;
    }
    if (torch) {
        if (!mode_given)
            o.torch = debinfo ? TDB_TORCH_SELECTIVE : TDB_TORCH_DEBUG;
        if (o.torch == TDB_TORCH_SELECTIVE && !debinfo) {
            tdb_usage_error("profile", "--torch=selective needs the files: --debinfo "
                                       "'aten/src/ATen/native/Linear.cpp;...'");
            goto cleanup;
        }
        if (o.torch != TDB_TORCH_SELECTIVE && debinfo) {
            tdb_usage_error("profile", "--debinfo goes with --torch=selective");
            goto cleanup;
        }
    } else if (o.torch_src || debinfo || o.jobs || o.cuda || o.full) {
        tdb_usage_error("profile", "--torch-src, --debinfo, --jobs, --cuda and --full go with "
                                   "--torch");
        goto cleanup;
    }
    o.debinfo = debinfo;
    if (tdb_check_usage_only) {
        status = TDB_EXIT_OK;
        goto cleanup;
    }

    tdb_machine m;
    tdb_machine_probe("", &m);
    tdb_profile p;
    tdb_error err = {0};
    if (tdb_profile_build(&o, &m, &p, &err) < 0) {
        tdb_machine_free(&m);
        status = tdb_error_exit(&err);
        goto cleanup;
    }
    if (format_json) {
        json_t *doc = tdb_profile_json(&p);
        tdb_print_json(doc);
    } else {
        tdb_buf b = TDB_BUF_INIT;
        tdb_profile_format_sh(&p, &b);
        fputs(tdb_buf_str(&b), stdout);
        tdb_buf_free(&b);
    }
    tdb_profile_free(&p);
    tdb_machine_free(&m);
    status = TDB_EXIT_OK;
cleanup:
    for (size_t i = 0; i < n_debinfo; i++)
        free(debinfo[i]);
    free(debinfo);
    return status;
}
