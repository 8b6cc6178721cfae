/*
 * vscode/jsonc.h: VS Code's JSON with comments and trailing commas, read with the
 * byte span of every value, and edited by splicing text so that everything
 * tdebug does not own stays byte for byte what it was.
 *
 * The reader accepts what VS Code accepts in .vscode/launch.json and
 * tasks.json: // and block comments, a trailing comma after the last element
 * of an array or object, a UTF-8 byte order mark, CRLF or LF line endings,
 * tabs, and a file that holds nothing but whitespace and comments.  Errors
 * name the line and column (both from 1; columns count characters, a tab is
 * one) of the first offending character.
 *
 * The editor works on the root object's array members ("configurations",
 * "compounds", "tasks"): an entry whose identity (its "name", or "label" for
 * tasks) equals a new entry's is replaced in place, a new one is appended
 * after the last element, and entries tdebug no longer wants are removed
 * together with their separating comma.  Missing members are added at the
 * end of the root object; an empty file gets a new root object after any
 * comments it holds.  New text follows the file's indentation unit (tabs or
 * N spaces) and line ending.  Nothing else is touched.
 *
 * Saving is tdb_write_file_keeping()'s (base/common.h): atomic, the previous
 * file kept as NAME.~N~, nothing written when the text did not change.
 */
#ifndef TDB_JSONC_H
#define TDB_JSONC_H

#include "base/common.h"

#include <jansson.h>
#include <stddef.h>

typedef enum tdb_jsonc_type {
    TDB_JSONC_NULL,
    TDB_JSONC_BOOL,
    TDB_JSONC_NUMBER,
    TDB_JSONC_STRING,
    TDB_JSONC_ARRAY,
    TDB_JSONC_OBJECT
} tdb_jsonc_type;

#define TDB_JSONC_NONE ((size_t)-1)

typedef struct tdb_jsonc_node tdb_jsonc_node;
struct tdb_jsonc_node {
    tdb_jsonc_type type;
    size_t start, end;      /* the value is text[start, end) */
    size_t key_start;       /* object members: the key's opening quote; else start */
    size_t comma;           /* the ',' after this element or member, or TDB_JSONC_NONE */
    char *key;              /* object members: the decoded key (NUL-terminated); else NULL */
    size_t key_len;         /* its length, which may include NUL bytes ("a\u0000b") */
    char *string;           /* strings: the decoded value (NUL-terminated) */
    size_t string_len;      /* its length, which may include NUL bytes */
    int boolean;            /* booleans: 0 or 1 */
    tdb_jsonc_node **items; /* arrays: elements; objects: members, in order */
    size_t n_items;
};

typedef struct tdb_jsonc_doc tdb_jsonc_doc;

/* Parse LEN bytes of TEXT (copied; need not be NUL-terminated).  NAME is
 * the file name used in messages.  Returns a new document, or NULL with ERR
 * set to "cannot parse 'NAME': line L, column C: WHAT" (exit status
 * TDB_EXIT_FAIL). */
tdb_jsonc_doc *tdb_jsonc_parse(const char *text, size_t len, const char *name,
                               tdb_error *err);
/* Read and parse the file at PATH; a missing file is an empty document,
 * anything but a regular file (a FIFO, a device, also behind a symbolic
 * link) an error, without waiting on it or opening it
 * (tdb_read_regular_file()).  NAME is used in messages (NULL: PATH). */
tdb_jsonc_doc *tdb_jsonc_load(const char *path, const char *name, tdb_error *err);
void tdb_jsonc_doc_free(tdb_jsonc_doc *doc);

/* The document's root value, or NULL when it holds only whitespace and
 * comments.  Borrowed, valid until the document is freed. */
const tdb_jsonc_node *tdb_jsonc_root(const tdb_jsonc_doc *doc);
/* The text the document was parsed from (borrowed) and its length. */
const char *tdb_jsonc_text(const tdb_jsonc_doc *doc, size_t *out_len);
/* Nonzero when the document was read from an existing file. */
int tdb_jsonc_existed(const tdb_jsonc_doc *doc);

/* The member KEY of OBJ (the last one when a key repeats, as in VS Code),
 * or NULL.  A key holding a NUL byte ("name\u0000x") is never KEY.
 * Borrowed. */
const tdb_jsonc_node *tdb_jsonc_get(const tdb_jsonc_node *obj, const char *key);
/* Line and column (from 1) of byte OFFSET in the document's text. */
void tdb_jsonc_position(const tdb_jsonc_doc *doc, size_t offset, int *out_line,
                        int *out_column);
/* NODE as a jansson value (new reference; comments dropped).  NULL only
 * for a number jansson cannot hold. */
json_t *tdb_jsonc_to_json(const tdb_jsonc_doc *doc, const tdb_jsonc_node *node);

/* Queue edits of the root object's array member ARRAY_KEY.  ENTRIES is a
 * JSON array of objects, each identified by its member ID_KEY ("name" or
 * "label"), a string compared byte for byte (NUL bytes included): each
 * replaces the first element with the same identity (later duplicates are
 * removed, their comments kept) or is appended.  Elements whose identity is one of
 * the NULL-terminated REMOVE (may be NULL) are removed.  The member is added
 * when missing.  Returns 0, or -1 with ERR set ("cannot update 'NAME': line
 * L, column C: ...") when the root or the member has the wrong type; the
 * document then keeps no edit from this call. */
int tdb_jsonc_update_array(tdb_jsonc_doc *doc, const char *array_key, const char *id_key,
                           json_t *entries, const char *const *remove, tdb_error *err);
/* Queue adding member KEY with VALUE (borrowed) to the root object unless it
 * has one already.  Returns 0, or -1 with ERR set when the root is no
 * object. */
int tdb_jsonc_ensure_member(tdb_jsonc_doc *doc, const char *key, json_t *value,
                            tdb_error *err);
/* The text with every queued edit applied (new string). */
char *tdb_jsonc_render(const tdb_jsonc_doc *doc, size_t *out_len);

/* Render VALUE as JSON text the way the editor does: objects and long
 * arrays one item a line, each line after the first starting with INDENT,
 * nesting by UNIT, lines ended by EOL; UTF-8 kept as is.  Appends to B. */
void tdb_jsonc_render_json(tdb_buf *b, json_t *value, const char *indent, const char *unit,
                           const char *eol);

#endif
