/* targets/remote.c: tdebug on other hosts through ssh (see
 * targets/remote.h). */
#include "targets/remote.h"

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <unistd.h>

const char *tdb_host_status_name(tdb_host_status s)
{
    switch (s) {
    case TDB_HOST_OK: return "ok";
    case TDB_HOST_TIMEOUT: return "timeout";
    case TDB_HOST_UNREACHABLE: return "unreachable";
    case TDB_HOST_UNKNOWN: return "unknown-host";
    case TDB_HOST_REFUSED: return "refused";
    case TDB_HOST_NO_TDEBUG: return "no-tdebug";
    case TDB_HOST_FAILED: return "failed";
    case TDB_HOST_BAD_ANSWER: return "bad-answer";
    }
    return "?";
}

/* NAME and HOST are the same machine's name: equal, or equal up to the
 * first dot of either (a short name and its fully qualified one). */
static int same_name(const char *name, const char *host)
{
    size_t a = strcspn(name, "."), b = strcspn(host, ".");
    if (!strcasecmp(name, host))
        return 1;
    return (!name[a] || !host[b]) && a == b && !strncasecmp(name, host, a);
}

int tdb_host_is_local(const char *host)
{
    static const char *const loopback[] = {"localhost", "localhost.localdomain", "127.0.0.1",
                                           "::1", "ip6-localhost", NULL};
    char name[256];
    for (size_t i = 0; loopback[i]; i++)
        if (!strcasecmp(host, loopback[i]))
            return 1;
    if (gethostname(name, sizeof(name)) < 0)
        return 0;
    name[sizeof(name) - 1] = '\0';
    return name[0] && same_name(name, host);
}

int tdb_shell_words(const char *cmd, char ***out, tdb_error *err)
{
    char **words = NULL;
    size_t n = 0;
    const char *p = cmd;

    for (;;) {
        while (*p == ' ' || *p == '\t' || *p == '\n')
            p++;
        if (!*p)
            break;
        tdb_buf w = TDB_BUF_INIT;
        char quote = 0;
        for (; *p && (quote || (*p != ' ' && *p != '\t' && *p != '\n')); p++) {
            if (quote == '\'') {
                if (*p == '\'')
                    quote = 0;
                else
                    tdb_buf_addc(&w, *p);
            } else if (*p == '\\' && p[1] && (!quote || strchr("\"\\$`", p[1]))) {
                tdb_buf_addc(&w, *++p);
            } else if (*p == quote) {
                quote = 0;
            } else if (!quote && (*p == '\'' || *p == '"')) {
                quote = *p;
            } else {
                tdb_buf_addc(&w, *p);
            }
        }
        if (quote) {
            tdb_buf_free(&w);
            tdb_strv_free(words);
            tdb_error_set_exit(err, TDB_EXIT_USAGE, EINVAL,
                               "'%s' is not a command: its %s quote is not closed", cmd,
                               quote == '\'' ? "single" : "double");
            return -1;
        }
        tdb_ptrs_push(&words, &n, tdb_buf_detach(&w));
    }
    if (!n) {
        tdb_error_set_exit(err, TDB_EXIT_USAGE, EINVAL, "'%s' is not a command: it is empty",
                           cmd);
        return -1;
    }
    *out = words;
    return 0;
}

/* WORD with each "%h" replaced by HOST and "%%" by "%"; *USED set when
 * HOST went in. */
static char *expand(const char *word, const char *host, int *used)
{
    tdb_buf b = TDB_BUF_INIT;
    for (const char *p = word; *p; p++) {
        if (p[0] == '%' && p[1] == 'h') {
            tdb_buf_adds(&b, host);
            *used = 1;
            p++;
        } else if (p[0] == '%' && p[1] == '%') {
            tdb_buf_addc(&b, '%');
            p++;
        } else {
            tdb_buf_addc(&b, *p);
        }
    }
    return tdb_buf_detach(&b);
}

int tdb_remote_argv(const tdb_remote_opts *o, const char *host, char *const *args, char ***out,
                    tdb_error *err)
{
    char **words = NULL, **argv = NULL;
    size_t n = 0;
    int used = 0;

    if (tdb_shell_words(o->ssh ? o->ssh : "ssh", &words, err) < 0)
        return -1;
    int ssh = !strcmp(tdb_base_name(words[0]), "ssh");
    for (size_t i = 0; words[i]; i++) {
        tdb_ptrs_push(&argv, &n, expand(words[i], host, &used));
        if (i == 0 && ssh) {
            /* Never a prompt: fail instead (ssh(1) BatchMode), and give up
             * on a host that does not answer in time. */
            int secs = o->timeout_ms > 0 ? (o->timeout_ms + 999) / 1000 : 30;
            tdb_ptrs_push(&argv, &n, tdb_xstrdup("-o"));
            tdb_ptrs_push(&argv, &n, tdb_xstrdup("BatchMode=yes"));
            tdb_ptrs_push(&argv, &n, tdb_xstrdup("-o"));
            tdb_ptrs_push(&argv, &n, tdb_xasprintf("ConnectTimeout=%d", secs));
        }
    }
    if (!used)
        tdb_ptrs_push(&argv, &n, tdb_xstrdup(host));
    /* ssh hands the remote shell one string: each word is quoted for it.
     * Other transports (srun, kubectl exec) run the words as they are. */
    const char *tdebug = o->tdebug ? o->tdebug : "tdebug";
    for (size_t i = 0; i == 0 || args[i - 1]; i++) {
        const char *w = i == 0 ? tdebug : args[i - 1];
        tdb_buf q = TDB_BUF_INIT;
        if (ssh)
            tdb_shell_quote(&q, w);
        else
            tdb_buf_adds(&q, w);
        tdb_ptrs_push(&argv, &n, tdb_buf_detach(&q));
    }
    tdb_strv_free(words);
    *out = argv;
    return 0;
}

static int has(const char *text, const char *needle)
{
    return text && strstr(text, needle) != NULL;
}

/* The last line of TEXT that says something, as a new string ("" when
 * none). */
static char *last_line(const char *text)
{
    const char *end = text ? text + strlen(text) : NULL;
    while (end && end > text && (end[-1] == '\n' || end[-1] == '\r' || end[-1] == ' '))
        end--;
    if (!end || end == text)
        return tdb_xstrdup("");
    const char *start = end;
    while (start > text && start[-1] != '\n')
        start--;
    return tdb_xstrndup(start, (size_t)(end - start));
}

/* The first line of TEXT holding NEEDLE, as a new string. */
static char *line_with(const char *text, const char *needle)
{
    const char *at = strstr(text, needle);
    const char *start = at, *end = at;
    while (start > text && start[-1] != '\n')
        start--;
    end += strcspn(end, "\r\n");
    return tdb_xstrndup(start, (size_t)(end - start));
}

static const char *const unknown_host[] = {"Could not resolve hostname", "Name or service not known",
                                           "Temporary failure in name resolution",
                                           "nodename nor servname", NULL};
static const char *const unreachable[] = {"No route to host", "Network is unreachable",
                                          "Connection timed out", "Operation timed out",
                                          "Connection refused", "Connection closed by",
                                          "Connection reset", NULL};

static const char *first_of(const char *text, const char *const *needles)
{
    for (size_t i = 0; needles[i]; i++)
        if (has(text, needles[i]))
            return needles[i];
    return NULL;
}

/* "SUMMARY: SAID (ADVICE)", the parts that are empty left out. */
static char *reason(const char *summary, const char *said, const char *advice)
{
    tdb_buf b = TDB_BUF_INIT;
    tdb_buf_adds(&b, summary);
    if (said && *said)
        tdb_buf_addf(&b, ": %s", said);
    if (advice && *advice)
        tdb_buf_addf(&b, " (%s)", advice);
    return tdb_buf_detach(&b);
}

void tdb_remote_judge(const char *host, const char *transport, const tdb_spawn_result *r,
                      const tdb_error *err, int timeout_ms, tdb_host_answer *out)
{
    const char *e = r->err ? r->err : "";
    const char *hit;
    char *said = NULL, *text = NULL;

    memset(out, 0, sizeof(*out));
    out->host = tdb_xstrdup(host);
    out->ms = r->ms;
    if (err && err->set) {
        out->status = TDB_HOST_FAILED;
        out->reason = reason(err->msg, NULL, "give a command that reaches it with --ssh");
        return;
    }
    if (r->timed_out) {
        out->status = TDB_HOST_TIMEOUT;
        text = tdb_xasprintf("no answer within %g s", timeout_ms / 1000.0);
        out->reason = reason(text, NULL, "the host is down or slow: --timeout gives it longer");
        free(text);
        return;
    }
    /* A JSON document is an answer, whatever the exit status (1 when a
     * rank could not be read: the document says which). */
    json_error_t jerr;
    json_t *doc = r->out && *r->out ? json_loads(r->out, 0, &jerr) : NULL;
    if (json_is_object(doc) && json_is_integer(json_object_get(doc, "version"))) {
        out->status = TDB_HOST_OK;
        out->doc = doc;
        return;
    }
    json_decref(doc);
    /* ssh's own failures (exit 255), and the like from other transports. */
    if ((hit = first_of(e, unknown_host))) {
        out->status = TDB_HOST_UNKNOWN;
        said = line_with(e, hit);
        out->reason = reason("unknown host", said,
                             "check the name, or give it in ~/.ssh/config or /etc/hosts");
    } else if (has(e, "Permission denied") || has(e, "Authentication failed") ||
               has(e, "password")) {
        out->status = TDB_HOST_REFUSED;
        said = last_line(e);
        text = tdb_xasprintf("tdebug runs %s in batch mode, which never asks: set up a key or "
                             "an agent for this host", transport);
        out->reason = reason("refused: the host asks for a password or a key that was not "
                             "given", said, text);
    } else if (has(e, "Host key verification failed") || has(e, "REMOTE HOST IDENTIFICATION")) {
        out->status = TDB_HOST_REFUSED;
        said = line_with(e, has(e, "Host key") ? "Host key" : "REMOTE HOST");
        text = tdb_xasprintf("check and accept it once with 'ssh %s'", host);
        out->reason = reason("its host key is unknown or changed", said, text);
    } else if ((hit = first_of(e, unreachable))) {
        out->status = TDB_HOST_UNREACHABLE;
        said = line_with(e, hit);
        if (strstr(hit, "refused"))
            out->reason = reason("nothing accepts the connection", said,
                                 "is its ssh server running, on that port?");
        else
            out->reason = reason("the host does not answer", said,
                                 "is it up, and on this network?");
    } else if (r->status == 127 || r->status == 126 || has(e, "command not found") ||
               (has(e, "tdebug") && (has(e, "not found") || has(e, "No such file")))) {
        out->status = TDB_HOST_NO_TDEBUG;
        said = last_line(e);
        out->reason = reason("tdebug does not run there", said,
                             "install it on that host, or give its path there with "
                             "--remote-tdebug");
    } else if (r->status == TDB_EXIT_USAGE && has(e, "tdebug")) {
        out->status = TDB_HOST_FAILED;
        said = tdb_first_line(e);
        out->reason = reason("its tdebug does not know 'stacks --job'", said,
                             "an older version? update it there");
    } else {
        said = last_line(e);
        out->status = r->status ? TDB_HOST_FAILED : TDB_HOST_BAD_ANSWER;
        text = r->status ? tdb_xasprintf("%s failed (exit status %d)", transport, r->status)
                         : tdb_xstrdup("it did not answer with tdebug's JSON");
        out->reason = reason(text, said, NULL);
    }
    free(text);
    free(said);
}

int tdb_remote_run(const tdb_remote_opts *o, char *const *hosts, size_t n, char *const *args,
                   char *const *local_argv, int cancel_fd, tdb_host_answer *answers,
                   tdb_error *err)
{
    size_t total = n + (local_argv ? 1 : 0);
    char ***argvs = tdb_xcalloc(total ? total : 1, sizeof(*argvs));
    tdb_spawn_result *res = tdb_xcalloc(total ? total : 1, sizeof(*res));
    tdb_error *errs = tdb_xcalloc(total ? total : 1, sizeof(*errs));
    char **words = NULL;
    int rc = -1;

    memset(answers, 0, total * sizeof(*answers));
    if (tdb_shell_words(o->ssh ? o->ssh : "ssh", &words, err) < 0)
        goto cleanup;
    for (size_t i = 0; i < n; i++)
        if (tdb_remote_argv(o, hosts[i], args, &argvs[i], err) < 0)
            goto cleanup;
    if (local_argv)
        argvs[n] = (char **)local_argv;
    int cancelled = tdb_spawn_capture_many((char *const *const *)argvs, total, o->timeout_ms,
                                           cancel_fd, res, errs) < 0;
    for (size_t i = 0; i < total; i++) {
        tdb_remote_judge(i < n ? hosts[i] : "localhost",
                         i < n ? tdb_base_name(words[0]) : "tdebug", &res[i], &errs[i],
                         o->timeout_ms, &answers[i]);
        tdb_spawn_result_free(&res[i]);
    }
    if (cancelled) {
        tdb_error_set(err, ECANCELED, "interrupted while waiting for the hosts");
        goto cleanup;
    }
    rc = 0;
cleanup:
    for (size_t i = 0; i < n; i++)
        tdb_strv_free(argvs[i]);
    free(argvs);
    free(res);
    free(errs);
    tdb_strv_free(words);
    return rc;
}

void tdb_host_answer_release(tdb_host_answer *a)
{
    if (!a)
        return;
    free(a->host);
    free(a->reason);
    json_decref(a->doc);
    memset(a, 0, sizeof(*a));
}
