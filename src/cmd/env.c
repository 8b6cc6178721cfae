/*
 * cmd/env.c: 'tdebug env', the variables that make programs started
 * anywhere (VS Code, torchrun, a test runner) pause when they load torch._C.
 */
#include "cmd/cmd.h"
#include "base/common.h"
#include "process/preload.h"

#include <getopt.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

const char cmd_env_usage[] =
    "usage: tdebug env [--shell | --json] [options]\n"
    "\n"
    "Print the environment that makes every program started from it pause\n"
    "when it loads torch._C (before its init runs) and wait for a debugger:\n"
    "\n"
    "    tdebug attach --wait       # first, in another terminal: stops the next one\n"
    "    eval \"$(tdebug env)\"       # then start VS Code, torchrun, pytest, ...\n"
    "    tdebug attach PID          # or later, when a process says it waits\n"
    "\n"
    "The preloaded library (LD_AUDIT) changes nothing else in the program.\n"
    "\n"
    "Output:\n"
    "  --shell              export lines for sh, bash and zsh (default), with\n"
    "                       'unset' for stale TDEBUG_* settings\n"
    "  --json               one JSON object: {\"set\": {NAME: VALUE, ...},\n"
    "                       \"unset\": [NAME, ...], \"announce\": PATH}\n"
    "\n"
    "What to pause on (default: any object exporting PyInit__C):\n"
    "  -w, --watch SYMBOLS  objects exporting one of these symbols (comma-separated)\n"
    "  -f, --watch-files PATTERNS\n"
    "                       objects whose file name matches one of these\n"
    "                       shell patterns (comma-separated; a pattern with a\n"
    "                       '/' matches the whole path)\n"
    "      --workers skip|watch\n"
    "                       pause multiprocessing workers (spawn, forkserver)\n"
    "                       too (default: skip)\n"
    "      --rank N         only the process whose RANK is N (one rank of a\n"
    "                       distributed job; the launcher and the other ranks\n"
    "                       run untraced)\n"
    "\n"
    "What to do then:\n"
    "  -a, --action wait|notify|log|trap|off\n"
    "                       wait for a debugger (default), write a JSON line\n"
    "                       to --notify, write one line on stderr, stop with\n"
    "                       SIGTRAP under a debugger that runs the program\n"
    "                       (as 'tdebug run' does; see tdebug(1)), or nothing\n"
    "  -t, --timeout SECONDS|never\n"
    "                       give up waiting after this long and continue\n"
    "                       (default: 60; not counted while a debugger is attached)\n"
    "      --notify fd:N|unix:PATH\n"
    "                       where 'notify' writes (default: fd:2); implies\n"
    "                       --action notify\n"
    "      --ack            with notify: wait for a line back (or the timeout)\n"
    "      --announce PATH|off\n"
    "                       the socket waiting processes announce themselves on\n"
    "                       (default: /tmp/tdebug-UID/announce)\n"
    "  -v, --verbose        the library says what it decides (twice: also every\n"
    "                       object it sees)\n"
    "\n"
    "Release a waiting process by hand in gdb:\n"
    "    gdb -p PID -ex 'set var tdebug_preload_release = 1' -ex continue\n"
    "\n"
    "Exit status: 0 printed; 125 the preloaded library is not built or\n"
    "installed.\n";

static void print_shell(const json_t *env, const json_t *stale, const char *announce)
{
    tdb_buf b = TDB_BUF_INIT;
    const char *name;
    json_t *v;
    size_t i;

    tdb_buf_adds(&b, "# Programs started from this environment pause when they load torch._C\n"
                     "# and wait for a debugger; each says 'tdebug attach PID' on stderr.\n"
                     "# Use: eval \"$(tdebug env)\", then start VS Code, torchrun, pytest...\n");
    if (announce)
        tdb_buf_addf(&b, "# Waiting processes announce themselves on %s.\n", announce);
    if (json_object_get(env, TDEBUG_ENV_RANK))
        tdb_buf_addf(&b, "# Only the process whose RANK is %s does; the others run untraced.\n",
                     json_string_value(json_object_get(env, TDEBUG_ENV_RANK)));
    json_object_foreach((json_t *)env, name, v) {
        tdb_buf_addf(&b, "export %s=", name);
        tdb_shell_quote(&b, json_string_value(v));
        tdb_buf_addc(&b, '\n');
    }
    if (json_array_size(stale)) {
        tdb_buf_adds(&b, "unset");
        json_array_foreach(stale, i, v)
            tdb_buf_addf(&b, " %s", json_string_value(v));
        tdb_buf_addc(&b, '\n');
    }
    tdb_buf_adds(&b, "# Undo: unset");
    json_object_foreach((json_t *)env, name, v)
        tdb_buf_addf(&b, " %s", name);
    tdb_buf_addc(&b, '\n');
    fputs(tdb_buf_str(&b), stdout);
    tdb_buf_free(&b);
}

int cmd_env(int argc, char **argv)
{
    static const struct option options[] = {
        {"help", no_argument, NULL, 'h'},
        {"shell", no_argument, NULL, 'S'},
        {"json", no_argument, NULL, 'J'},
        {"watch", required_argument, NULL, 'w'},
        {"watch-files", required_argument, NULL, 'f'},
        {"workers", required_argument, NULL, 'W'},
        {"rank", required_argument, NULL, 'R'},
        {"action", required_argument, NULL, 'a'},
        {"timeout", required_argument, NULL, 't'},
        {"notify", required_argument, NULL, 'N'},
        {"ack", no_argument, NULL, 'A'},
        {"announce", required_argument, NULL, 'n'},
        {"verbose", no_argument, NULL, 'v'},
        {NULL, 0, NULL, 0},
    };
    tdb_preload_settings s = {0};
    tdb_error err = {0};
    int json = 0, verbose = 0, opt, rc = TDB_EXIT_OK;
    char *library = NULL;
    json_t *env = NULL, *stale = NULL;
    char announce[108];
    const struct {
        const char *option, *variable;
        const char **value;
    } checks[] = {
        {"--watch", TDEBUG_ENV_WATCH, &s.watch},
        {"--watch-files", TDEBUG_ENV_WATCH_FILES, &s.watch_files},
        {"--workers", TDEBUG_ENV_WORKERS, &s.workers},
        {"--rank", TDEBUG_ENV_RANK, &s.rank},
        {"--action", TDEBUG_ENV_ACTION, &s.action},
        {"--timeout", TDEBUG_ENV_TIMEOUT, &s.timeout},
        {"--notify", TDEBUG_ENV_NOTIFY, &s.notify},
        {"--announce", TDEBUG_ENV_ANNOUNCE, &s.announce},
    };

    opterr = 0;
    optind = 1;
    while ((opt = getopt_long(argc, argv, ":hw:f:a:t:v", options, NULL)) != -1) {
        switch (opt) {
        case 'h': return tdb_print_usage("env");
        case 'S': json = 0; break;
        case 'J': json = 1; break;
        case 'w': s.watch = optarg; break;
        case 'f': s.watch_files = optarg; break;
        case 'W': s.workers = optarg; break;
        case 'R': s.rank = optarg; break;
        case 'a': s.action = optarg; break;
        case 't': s.timeout = optarg; break;
        case 'N': s.notify = optarg; break;
        case 'A': s.notify_ack = "1"; break;
        case 'n': s.announce = optarg; break;
        case 'v': verbose++; break;
        case ':': return tdb_usage_error("env", "option '%s' needs a value", argv[optind - 1]);
        default: return tdb_usage_error("env", "unknown option '%s'", argv[optind - 1]);
        }
    }
    if (optind < argc)
        return tdb_usage_error("env", "unexpected argument '%s'", argv[optind]);
    if (verbose)
        s.verbose = verbose > 1 ? "2" : "1";
    if ((s.notify || s.notify_ack) && !s.action)
        s.action = "notify";
    if ((s.notify || s.notify_ack) && strcmp(s.action, "notify"))
        return tdb_usage_error("env", "%s goes with --action notify, not '%s'",
                               s.notify ? "--notify" : "--ack", s.action);
    for (size_t i = 0; i < sizeof(checks) / sizeof(checks[0]); i++)
        if (*checks[i].value && tdb_preload_check_one(checks[i].variable, *checks[i].value,
                                                      &err) < 0)
            return tdb_usage_error("env", "invalid %s '%s': %s", checks[i].option,
                                   *checks[i].value, err.msg);
    if (tdb_check_usage_only)
        return TDB_EXIT_OK;

    library = tdb_preload_library(&err);
    if (!library) {
        rc = tdb_error_exit(&err);
        goto cleanup;
    }
    env = tdb_preload_env(library, &s, getenv("LD_AUDIT"));
    stale = tdb_preload_stale(env, NULL);
    if (!tdebug_announce_path(announce, sizeof(announce),
                              s.announce, /* the stale one is unset */
                              (unsigned long)getuid()))
        announce[0] = '\0';
    if (json) {
        /* The values are bytes: escaped by the one convention when they
         * are not UTF-8 (NAME_escaped beside NAME). */
        json_t *set = json_object(), *out = json_object();
        const char *name;
        json_t *v;
        json_object_foreach(env, name, v)
            tdb_json_set_str(set, name, json_string_value(v));
        json_object_set_new(out, "set", set);
        json_object_set(out, "unset", stale);
        tdb_json_set_str(out, "announce", announce[0] ? announce : NULL);
        tdb_print_json(tdb_json_versioned(out));
    } else {
        print_shell(env, stale, announce[0] ? announce : NULL);
    }

cleanup:
    json_decref(env);
    json_decref(stale);
    free(library);
    return rc;
}
