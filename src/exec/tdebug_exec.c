/*
 * exec/tdebug_exec.c: the exec wrapper gdb starts a program through
 * ('set exec-wrapper'), so that the program gets what a user expects of
 * running it by hand, which gdb alone cannot give when its own stdin and
 * stdout are tdebug's MI pipes:
 *
 *   --fds IN,OUT,ERR  the program's stdin/stdout/stderr become these
 *                     inherited fds (tdebug's own), not gdb's MI pipes;
 *   --pgrp            the program gets its own process group, so tdebug can
 *                     hand it the terminal while it runs and take it back at
 *                     a stop, as a shell does for a job;
 *   --pdeathsig       the program is killed if gdb dies: a program tdebug
 *                     started never outlives it, even when gdb crashes.
 *
 * usage: tdebug-exec [--fds I,O,E] [--pgrp] [--pdeathsig] -- PROGRAM [ARGS...]
 * It must exec exactly once: gdb counts the wrapper's exec.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <unistd.h>

static int parse_fds(const char *s, int fds[3])
{
    char *end;
    for (int i = 0; i < 3; i++) {
        long v = strtol(s, &end, 10);
        if (end == s || v < 0 || v > 65535 || (i < 2 && *end != ',') || (i == 2 && *end))
            return -1;
        fds[i] = (int)v;
        s = end + 1;
    }
    return 0;
}

int main(int argc, char **argv)
{
    int fds[3] = {-1, -1, -1};
    int pgrp = 0, pdeathsig = 0, i;
    pid_t parent = getppid();

    for (i = 1; i < argc; i++) {
        if (!strcmp(argv[i], "--")) {
            i++;
            break;
        } else if (!strcmp(argv[i], "--fds") && i + 1 < argc) {
            if (parse_fds(argv[++i], fds) < 0) {
                fprintf(stderr, "tdebug-exec: bad --fds '%s'\n", argv[i]);
                return 127;
            }
        } else if (!strcmp(argv[i], "--pgrp")) {
            pgrp = 1;
        } else if (!strcmp(argv[i], "--pdeathsig")) {
            pdeathsig = 1;
        } else {
            break;
        }
    }
    if (i >= argc) {
        fprintf(stderr, "usage: tdebug-exec [--fds I,O,E] [--pgrp] [--pdeathsig] -- PROGRAM [ARGS...]\n");
        return 127;
    }
    if (fds[0] >= 0) {
        for (int k = 0; k < 3; k++)
            if (dup2(fds[k], k) < 0) {
                fprintf(stderr, "tdebug-exec: fd %d: %s\n", fds[k], strerror(errno));
                return 127;
            }
        for (int k = 0; k < 3; k++)
            if (fds[k] > 2)
                close(fds[k]);
    }
    if (pgrp)
        setpgid(0, 0);
    if (pdeathsig) {
        prctl(PR_SET_PDEATHSIG, SIGKILL);
        if (getppid() != parent) /* gdb already gone */
            return 127;
    }
    execvp(argv[i], argv + i);
    fprintf(stderr, "tdebug-exec: cannot run '%s': %s\n", argv[i], strerror(errno));
    return errno == ENOENT ? 127 : 126;
}
