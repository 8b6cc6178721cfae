/*
 * tour/tour.h: the guided tours of 'tdebug tour', as data.  A tour is a Python
 * one-liner and a table of stops; each stop says what triggers it (a
 * module's file being mapped, its PyInit, a function, a marked source
 * line), which function the program must be in for the stop to count,
 * and the explanation shown there: what the code is, where it lives in
 * the source tree, what a debug build would add, what to try next.
 * src/tour/data.c holds the tours; src/cmd/tour.c runs them.
 *
 * Contract: data only, no code that runs a session.
 * May include: nothing
 */
#ifndef TDB_TOUR_H
#define TDB_TOUR_H

#include <stddef.h>

typedef enum tdb_tour_trigger {
    TDB_TOUR_LOADED,     /* TARGET's file was mapped (--stop-at-load) */
    TDB_TOUR_IMPORT,     /* in TARGET's PyInit, before it runs (--stop-at-import) */
    TDB_TOUR_BREAK,      /* a breakpoint on the function TARGET */
    TDB_TOUR_MARKED_LINE, /* a breakpoint on the line of FILE holding
                           * "TOUR: " TARGET, FILE being found through the
                           * debug info of LIBRARY */
    TDB_TOUR_PY_LINE,    /* a Python breakpoint on the line of the tour's
                          * program that reads TARGET */
    TDB_TOUR_STEPPED     /* the end of the step (next, finish) the stop
                          * before this one made ('then'), in FUNCTION;
                          * TARGET names where it lands */
} tdb_tour_trigger;

/* What the tour does after a stop: Enter at the prompt, or at once in
 * --batch (and after -x's commands). */
typedef enum tdb_tour_then {
    TDB_TOUR_THEN_CONTINUE = 0, /* run to the next stop */
    TDB_TOUR_THEN_STEP,         /* 'step' (from Python: past the binding's glue) */
    TDB_TOUR_THEN_NEXT,         /* 'next' */
    TDB_TOUR_THEN_FINISH        /* 'finish' (out of a native call: to the Python line) */
} tdb_tour_then;

/* A place in the source tree and what is there. */
typedef struct tdb_tour_place {
    const char *path;
    const char *what;
} tdb_tour_place;

/* Something to type at the stop and what it shows. */
typedef struct tdb_tour_try {
    const char *command;
    const char *shows;
} tdb_tour_try;

typedef struct tdb_tour_stop {
    tdb_tour_trigger trigger;
    const char *target;   /* the module, the function or the marker */
    const char *file;     /* MARKED_LINE: the source file's name */
    const char *library;  /* MARKED_LINE: a library of the tour's package
                           * (relative to its directory) built from FILE;
                           * NULL: the tour's module, the file the
                           * interpreter imports it from (its name carries
                           * that interpreter's EXT_SUFFIX) */
    const char *function; /* the function the innermost frame must be in
                           * (name without parameters; "<module>": the
                           * program's Python line); NULL: any */
    tdb_tour_then then;   /* what the tour does from this stop */
    const char *show;     /* a command the tour runs at the stop, its answer
                           * shown as if typed ("info locals"), or NULL */
    const char *title;
    const char *what;     /* paragraphs, separated by blank lines */
    const tdb_tour_place *where;  /* ends with {NULL, NULL} */
    const char *no_debug; /* shown when the stop has no source line */
    const tdb_tour_try *try_next; /* ends with {NULL, NULL} */
} tdb_tour_stop;

typedef struct tdb_tour {
    const char *name;     /* "torch" */
    const char *title;    /* the handout's title */
    const char *summary;  /* one line for --help */
    const char *module;   /* what the interpreter must be able to import */
    const char *code;     /* the program, lines of Python: the tour writes it
                           * to a file of its own (a private directory,
                           * removed after) and runs python FILE */
    const char *package;  /* a directory beside tdebug (a built sample) to
                           * put on PYTHONPATH, or NULL */
    const char *build;    /* the command that builds PACKAGE, or NULL: make */
    const char *symbols;  /* a basic regex of more libraries whose symbols
                           * gdb must read, or NULL */
    const char *intro;    /* paragraphs */
    const tdb_tour_stop *stops;
    size_t n_stops;
    const char *outro;    /* paragraphs, after the last stop */
    const char *instead;  /* the tour to offer when MODULE is missing, or NULL */
} tdb_tour;

/* The tours, in the order --help lists them; the first is the default. */
extern const tdb_tour tdb_tours[];
extern const size_t tdb_n_tours;

/* The tour called NAME, or NULL. */
const tdb_tour *tdb_find_tour(const char *name);

#endif
