/* cpython/linetable.c: the line of an instruction from a code object's line
 * table, in each format CPython has used (3.8-3.9 co_lnotab, 3.10's PEP 626
 * co_linetable, 3.11+ location tables); contract in cpython/frames.h. */
#include "cpython/frames.h"

#include <limits.h>
#include <stddef.h>
#include <stdint.h>

/* --- the location table (Objects/locations.md in CPython 3.11) ---------- */

static int read_varint(const uint8_t *t, size_t len, size_t *pos, unsigned *out)
{
    unsigned val = 0;
    for (int shift = 0;; shift += 6) {
        if (*pos >= len || shift > 30)
            return -1;
        uint8_t b = t[(*pos)++];
        val |= (unsigned)(b & 63) << shift;
        if (!(b & 64))
            break;
    }
    *out = val;
    return 0;
}

static int read_svarint(const uint8_t *t, size_t len, size_t *pos, long *out)
{
    unsigned u;
    if (read_varint(t, len, pos, &u) < 0)
        return -1;
    *out = (u & 1) ? -(long)(u >> 1) : (long)(u >> 1);
    return 0;
}

int tdb_py_linetable_line(const uint8_t *table, size_t len, int first_line, int lasti)
{
    if (lasti < 0)
        return first_line;
    long line = first_line;
    long addr = 0;
    size_t pos = 0;
    while (pos < len) {
        uint8_t first = table[pos++];
        if (!(first & 0x80))
            return -1; /* every entry starts with its top bit set */
        int code = (first >> 3) & 15;
        int length = (first & 7) + 1;
        int has_line = 1;
        unsigned skip;
        long delta;
        switch (code) {
        case 15: /* no location */
            has_line = 0;
            break;
        case 14: /* long form: line delta, end line, column, end column */
            if (read_svarint(table, len, &pos, &delta) < 0 ||
                read_varint(table, len, &pos, &skip) < 0 ||
                read_varint(table, len, &pos, &skip) < 0 ||
                read_varint(table, len, &pos, &skip) < 0)
                return -1;
            line += delta;
            break;
        case 13: /* no columns */
            if (read_svarint(table, len, &pos, &delta) < 0)
                return -1;
            line += delta;
            break;
        case 10: case 11: case 12: /* one line form: two column bytes */
            line += code - 10;
            pos += 2;
            break;
        default: /* short form, same line: one column byte */
            pos += 1;
            break;
        }
        if (pos > len || line < INT_MIN || line > INT_MAX)
            return -1;
        if (lasti < addr + length)
            return has_line && line >= 0 ? (int)line : -1;
        addr += length;
    }
    return -1;
}

int tdb_py_linetable310_line(const uint8_t *table, size_t len, int first_line, int addr)
{
    if (addr < 0)
        return first_line;
    /* Pairs (bytecode bytes, line delta); a delta of -128 means "no line".
     * Empty ranges only move the line (Objects/lnotab_notes.txt). */
    long line = first_line, start, end = 0;
    for (size_t pos = 0; pos + 1 < len; pos += 2) {
        int ldelta = (int8_t)table[pos + 1];
        start = end;
        end += table[pos];
        int cur = -1;
        if (ldelta != -128) {
            line += ldelta;
            cur = line >= 0 && line <= INT_MAX ? (int)line : -1;
        }
        if (start < end && addr >= start && addr < end)
            return cur;
    }
    return -1;
}

int tdb_py_lnotab_line(const uint8_t *table, size_t len, int first_line, int addr)
{
    /* Pairs (bytecode bytes, signed line delta): PyCode_Addr2Line. */
    long line = first_line, at = 0;
    for (size_t pos = 0; pos + 1 < len; pos += 2) {
        at += table[pos];
        if (at > addr)
            break;
        line += (int8_t)table[pos + 1];
    }
    return line >= 0 && line <= INT_MAX ? (int)line : -1;
}
