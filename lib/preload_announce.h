/*
 * preload_announce.h: writing announcements (the JSON line of
 * tdebug_preload.h) and the few process facts they need, without stdio and
 * without ever raising SIGPIPE in the host.  Shared by the preloaded
 * library and the _tdebug Python extension; internal (hidden).
 */
#ifndef TDP_ANNOUNCE_H
#define TDP_ANNOUNCE_H

#include "tdebug_preload.h"

#include <stddef.h>
#include <sys/types.h>

struct tdp_line {
    char s[TDEBUG_ANNOUNCE_MAX];
    size_t len;
    int overflow; /* the line did not fit: it is not sent */
};

/* Start a line: {"tdebug":ABI,"event":EVENT,"pid":..,"ppid":..,"uid":.. */
void tdp_line_start(struct tdp_line *l, const char *event);
/* Append ,"KEY":S as a JSON string (null when S is NULL); bytes that are
 * not UTF-8 become U+FFFD. */
void tdp_line_str(struct tdp_line *l, const char *key, const char *s);
/* Append raw text, printf-style. */
void tdp_line_add(struct tdp_line *l, const char *fmt, ...) __attribute__((format(printf, 2, 3)));
/* Append "exe" and "time", close the object and add the newline. */
void tdp_line_end(struct tdp_line *l);

/* Send L as one datagram to the socket at PATH, only when PATH's
 * directory is a directory owned by our uid.  Silent: nobody listening is
 * normal. */
void tdp_announce_send(const char *path, const struct tdp_line *l);

/* Write all of BUF to FD; a closed pipe gives -1 (EPIPE), never SIGPIPE. */
int tdp_write_all(int fd, const char *buf, size_t len);
/* Read up to SIZE-1 bytes of a small (/proc) file, NUL-terminated; the
 * length or -1. */
ssize_t tdp_read_small(const char *path, char *buf, size_t size);
/* The pid of our tracer (a debugger), 0 when none. */
long tdp_tracer_pid(void);

#endif
