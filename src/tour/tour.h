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
    TDB_TOUR_MARKED_LINE /* a breakpoint on the line of FILE holding
                          * "TOUR: " TARGET, FILE being found through the
                          * debug info of LIBRARY */
} tdb_tour_trigger;

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
                           * (name without parameters); NULL: any */
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
    const char *code;     /* the program: python -c CODE */
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
