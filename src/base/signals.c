/* base/signals.c: the signal self-pipe (see base/signals.h). */
#include "base/signals.h"

#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

static int sig_pipe[2] = {-1, -1};

static void on_signal(int sig)
{
    int saved = errno;
    unsigned char c = (unsigned char)sig;
    ssize_t w = write(sig_pipe[1], &c, 1);

    (void)w;
    errno = saved;
}

int tdb_signals_install(int with_sigchld, tdb_error *err)
{
    static const int sigs[] = {SIGINT, SIGTERM, SIGHUP};
    struct sigaction sa = {.sa_handler = on_signal, .sa_flags = SA_RESTART};

    if (sig_pipe[0] < 0 && pipe2(sig_pipe, O_CLOEXEC | O_NONBLOCK) < 0) {
        tdb_error_errno(err, "cannot create a pipe for signals");
        return -1;
    }
    sigemptyset(&sa.sa_mask);
    for (size_t i = 0; i < sizeof(sigs) / sizeof(sigs[0]); i++)
        sigaction(sigs[i], &sa, NULL);
    if (with_sigchld) {
        sa.sa_flags |= SA_NOCLDSTOP;
        sigaction(SIGCHLD, &sa, NULL);
    }
    return sig_pipe[0];
}

int tdb_signals_take(void)
{
    unsigned char c;

    if (sig_pipe[0] >= 0 && read(sig_pipe[0], &c, 1) == 1)
        return c;
    return 0;
}

void tdb_signals_sigchld_off(void)
{
    signal(SIGCHLD, SIG_DFL);
}
