/*
 * vscode/jsonc_internal.h: what the JSONC reader (vscode/jsonc.c) and its
 * editor (vscode/jsonc_edit.c) share.  Not a public interface:
 * vscode/jsonc.h is.
 *
 * The editor never re-serialises what it read: every change is an edit
 * (offset, bytes to delete, text to insert) against the original text,
 * queued by the update calls and applied in one pass by the renderer.
 */
#ifndef TDB_JSONC_INTERNAL_H
#define TDB_JSONC_INTERNAL_H

#include "vscode/jsonc.h"

typedef struct tdb_jsonc_edit {
    size_t at, del;
    char *ins;
    size_t seq; /* queue order, which breaks ties between inserts at one offset */
} tdb_jsonc_edit;

typedef struct tdb_jsonc_edit_list {
    tdb_jsonc_edit *v;
    size_t n, cap;
} tdb_jsonc_edit_list;

struct tdb_jsonc_doc {
    char *text;
    size_t len;
    char *name;
    int existed;
    size_t bom;                /* 3 after a UTF-8 byte order mark, else 0 */
    tdb_jsonc_node *root;
    char eol[3];               /* the file's line ending */
    char unit[17];             /* its indentation unit */
    tdb_jsonc_edit_list edits; /* queued by the update calls */
    json_t *new_members;       /* members to add to the root object (or a new root) */
};

/* Set DOC's line ending and indentation unit from its text (a new file
 * gets "\n" and four spaces, as VS Code writes). */
void tdb_jsonc_detect_layout(tdb_jsonc_doc *doc);
void tdb_jsonc_edits_free(tdb_jsonc_edit_list *l);

#endif
