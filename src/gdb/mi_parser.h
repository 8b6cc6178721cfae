/*
 * gdb/mi_parser.h: a pure, push-driven parser of gdb's MI3 output.
 *
 * Bytes in, records out, no I/O: feed whatever read() returned with
 * tdb_mi_parser_push() (lines may be split anywhere, even inside an escape)
 * and pop complete records with tdb_mi_parser_pop().  A line that is not
 * valid MI becomes a TDB_MI_ERROR record carrying the raw line and what was
 * wrong; the parser never aborts and never stops.
 *
 * Values become jansson values:
 *   c-string            -> JSON string (decoded; invalid UTF-8 bytes become
 *                          U+FFFD so the value always serialises)
 *   tuple {a=..,b=..}   -> JSON object (a name repeated inside one tuple
 *                          collects its values into an array)
 *   list [v,v]          -> JSON array
 *   list [k=v,k=v]      -> JSON array of the values; the names are dropped
 *                          (gdb repeats one name: frame=, library=, thread=)
 * gdb's MI2-era quirk of unnamed tuples after a result at top level
 * (bkpt={..},{..},{..}) folds the extra tuples into an array under the
 * preceding name.
 */
#ifndef TDB_MI_PARSER_H
#define TDB_MI_PARSER_H

#include <jansson.h>
#include <stddef.h>

typedef enum tdb_mi_kind {
    TDB_MI_RESULT,  /* [token]^class,results   done running connected error exit */
    TDB_MI_EXEC,    /* [token]*class,results   stopped, running */
    TDB_MI_STATUS,  /* [token]+class,results   download progress */
    TDB_MI_NOTIFY,  /* [token]=class,results   library-loaded, breakpoint-modified, ... */
    TDB_MI_CONSOLE, /* ~"text"  CLI output */
    TDB_MI_TARGET,  /* @"text"  target output */
    TDB_MI_LOG,     /* &"text"  gdb's log: echoed commands, warnings */
    TDB_MI_PROMPT,  /* (gdb) */
    TDB_MI_ERROR    /* a line that is not valid MI */
} tdb_mi_kind;

typedef struct tdb_mi_record {
    tdb_mi_kind kind;
    long token;      /* the command token, or -1 when the record has none */
    char *klass;     /* "done", "stopped", "library-loaded"...; NULL for
                      * streams, prompts and errors */
    json_t *results; /* an object (possibly empty) for result/async records,
                      * owned by the record; NULL otherwise */
    char *text;      /* streams: the decoded text; errors: what was wrong */
    size_t text_len; /* length of TEXT (stream text may contain NUL) */
    char *line;      /* the raw line as gdb printed it, without the newline */
    struct tdb_mi_record *next; /* internal: the parser's queue */
} tdb_mi_record;

typedef struct tdb_mi_parser tdb_mi_parser;

/* Longest line accepted; a longer one is dropped and reported as an error
 * record (gdb's longest real lines, 300-library bursts, are a few MB at most
 * when printed as one -file-list-shared-libraries answer). */
#define TDB_MI_MAX_LINE (64u * 1024 * 1024)

/* A new parser, or NULL when out of memory. */
tdb_mi_parser *tdb_mi_parser_new(void);
/* Free the parser and any records not yet popped.  Accepts NULL. */
void tdb_mi_parser_free(tdb_mi_parser *p);
/* Feed LEN bytes.  Each complete line ("\n" or "\r\n") becomes a record. */
void tdb_mi_parser_push(tdb_mi_parser *p, const char *data, size_t len);
/* End of input: an unterminated last line is parsed as if it were complete. */
void tdb_mi_parser_finish(tdb_mi_parser *p);
/* The next complete record in arrival order, or NULL.  The caller owns it. */
tdb_mi_record *tdb_mi_parser_pop(tdb_mi_parser *p);

/* Parse one line (without its newline).  Never returns NULL: invalid input
 * gives a TDB_MI_ERROR record.  The caller owns the record. */
tdb_mi_record *tdb_mi_parse_line(const char *line, size_t len);
/* Free a record.  Accepts NULL. */
void tdb_mi_record_free(tdb_mi_record *r);

/* "result", "exec", "status", "notify", "console", "target", "log",
 * "prompt", "error". */
const char *tdb_mi_kind_name(tdb_mi_kind k);
/* The record as one JSON object: {"type":..., "token":N, "class":...,
 * "results":{...}} or {"type":"console","text":...} or {"type":"error",
 * "line":..., "message":...}.  New reference. */
json_t *tdb_mi_record_to_json(const tdb_mi_record *r);

/* A JSON string (new reference) of N arbitrary bytes: each byte that is
 * not part of valid UTF-8 becomes U+FFFD, so the value always serialises
 * (gdb's c-strings here; strings read from a process's memory elsewhere). */
json_t *tdb_mi_json_bytes(const char *s, size_t n);

/* The string under KEY of object OBJ (NULL when absent or not a string).
 * Borrowed: valid while OBJ lives. */
const char *tdb_mi_str(const json_t *obj, const char *key);
/* Append S to B as an MI c-string argument ("..." with escapes), so any
 * path, expression or console command can be passed safely. */
struct tdb_buf;
void tdb_mi_quote(struct tdb_buf *b, const char *s);

#endif
