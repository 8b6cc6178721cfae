/*
 * session/stack.c: the stack at a stop (see session/internal.h): gdb's frames,
 * read after loading the symbols of the libraries on them, merged with the
 * thread's Python frames read from the interpreter's memory.
 */
#include "session/internal.h"

#include <errno.h>
#include <stdlib.h>
#include <string.h>

/* The readers of a stop (memory map, symbolizer, Python snapshot) are
 * stale once the program runs again. */
void tdb_session_drop_stop_readers(tdb_session *s)
{
    if (!s->stop_readers && !s->snap)
        return;
    tdb_symbolizer_free(s->sym);
    tdb_py_snapshot_free(s->snap);
    if (s->have_maps)
        tdb_maps_free(&s->maps);
    s->sym = NULL;
    s->snap = NULL;
    s->have_maps = 0;
    s->stop_readers = 0;
}

/* This stop's Python snapshot, from the interpreter found before. */
static void read_snapshot(tdb_session *s)
{
    tdb_error err = {0};
    s->snap = tdb_py_read(s->py, &err);
    if (!s->snap)
        say(s, "warning", "cannot read pid %d's Python threads: %s", (int)s->pid, err.msg);
}

/* The readers for this stop, made once: the memory map, the symbolizer,
 * and (the interpreter found once per session) the Python snapshot.  What
 * fails is said once and left out. */
void tdb_session_make_stop_readers(tdb_session *s)
{
    if (s->stop_readers || s->pid <= 0)
        return;
    s->stop_readers = 1;
    tdb_error err = {0};
    s->have_maps = tdb_maps_read(s->pid, &s->maps, &err) == 0;
    if (!s->symcache)
        s->symcache = tdb_symcache_new();
    s->sym = tdb_symbolizer_new(s->pid, s->symcache, NULL);
    if (s->py_state == 0) {
        tdb_error_clear(&err);
        int rc = tdb_py_open(s->pid, s->have_maps ? &s->maps : NULL, &s->py, &err);
        s->py_state = rc == 0 ? 1 : -1;
        if (rc < 0)
            say(s, "warning", "no Python frames from pid %d's memory: %s", (int)s->pid, err.msg);
    }
    if (s->py_state == 1 && !s->snap)
        read_snapshot(s);
}

const tdb_py_snapshot *tdb_session_stop_snapshot(tdb_session *s)
{
    if (s->snap || s->stop_readers || s->pid <= 0)
        return s->snap;
    if (s->py_state != 1) {
        tdb_session_make_stop_readers(s); /* the interpreter is found once */
        return s->snap;
    }
    read_snapshot(s);
    return s->snap;
}

/* The frames of THREAD (0: the current one) as gdb sees them, reading the
 * symbols of libraries on the stack as needed.  New reference. */
json_t *tdb_session_stack_frames(tdb_session *s, int thread, tdb_error *err)
{
    json_t *frames = NULL;
    int max = s->opts.max_frames > 0 ? s->opts.max_frames : DEFAULT_MAX_FRAMES;

    s->light.synth = 0;
    if (s->light.on) {
        /* A light session unwinds by itself; gdb, which has read no
         * library, only when a frame has debug info to show, or when
         * tdebug's own unwinding fails. */
        int need_gdb = 0;
        tdb_error local = {0};
        frames = tdb_session_light_frames(s, thread, &need_gdb, &local);
        if (frames)
            return frames;
        if (!need_gdb && !tdb_gdb_alive(s->gdb)) {
            tdb_error_set(err, local.code, "%s", local.msg);
            return NULL;
        }
        if (tdb_session_light_upgrade(s, err) < 0)
            return NULL;
    }
    if (tdb_session_ensure_base_symbols(s, err) < 0)
        return NULL;
    for (int round = 0; round < STACK_LOAD_ROUNDS; round++) {
        json_t *res = NULL;
        int rc = thread > 0 ? tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err,
                                          "-stack-list-frames --thread %d 0 %d", thread, max - 1)
                            : tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, &res, err,
                                          "-stack-list-frames 0 %d", max - 1);
        if (rc < 0)
            return NULL;
        json_decref(frames);
        frames = json_incref(json_object_get(res, "stack"));
        json_decref(res);
        if (!frames)
            frames = json_array();
        if (s->opts.all_symbols)
            break;
        /* Libraries on the stack without symbols: without their CFI the
         * unwind may stop or go wrong right there, so read them and redo. */
        int loaded = 0;
        size_t i;
        json_t *f;
        json_array_foreach(frames, i, f)
        {
            const char *from = tdb_mi_str(f, "from");
            if (!from)
                continue;
            lib_info *l = tdb_session_note_lib(s, from);
            if (l->symbols)
                continue;
            if (tdb_session_load_library_symbols(s, from, err) < 0) {
                json_decref(frames);
                return NULL;
            }
            l->symbols = 1;
            loaded++;
        }
        if (!loaded)
            break;
    }
    return frames;
}

/* Python frames from gdb's py-bt (python3-dbg's helpers), innermost first,
 * as [{function, file, line}] or [{text}] for frames without a file.  NULL
 * when py-bt is unavailable.  New reference. */
static json_t *gdb_python_frames(tdb_session *s)
{
    if (s->py_bt == 0)
        return NULL;
    tdb_error err = {0};
    char *text = tdb_gdb_console(s->gdb, CMD_TIMEOUT_MS, &err, "py-bt");
    if (!text || strstr(text, "Unable to locate python frame") ||
        strstr(text, "Undefined command")) {
        if (!text && strstr(err.msg, "Undefined command") && s->py_bt < 0)
            say(s, "warning", "no Python frames: gdb has no 'py-bt' for this interpreter "
                              "(install its debug info, e.g. apt-get install python3-dbg)");
        if (!text)
            s->py_bt = 0;
        free(text);
        return NULL;
    }
    s->py_bt = 1;
    json_t *frames = json_array();
    char *save = NULL;
    for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
        while (*line == ' ')
            line++;
        if (!*line || strncmp(line, "Traceback", 9) == 0)
            continue;
        char file[4096], func[1024], lineno[32];
        if (sscanf(line, "File \"%4095[^\"]\", line %31[^,], in %1023[^\n]", file, lineno, func) == 3) {
            json_t *fr = json_pack("{s:s, s:s}", "function", func, "file", file);
            long n;
            json_object_set_new(fr, "line", tdb_parse_long(lineno, 0, 1L << 30, &n) == 0
                                                ? json_integer(n) : json_null());
            json_array_append_new(frames, fr);
        } else {
            json_array_append_new(frames, json_pack("{s:s}", "text", line));
        }
    }
    free(text);
    return frames;
}

int tdb_session_collect_view(tdb_session *s, int thread, tdb_stackview *v, tdb_error *err)
{
    json_t *raw = tdb_session_stack_frames(s, thread, err);
    if (!raw)
        return -1;
    /* At a Python breakpoint the hook's own frames are on top: the stop
     * is the Python line it reports. */
    if (thread == 0 || thread == s->stop.thread)
        for (size_t n = tdb_session_python_hidden_frames(s, thread, raw); n > 0; n--)
            json_array_remove(raw, 0);
    tdb_session_make_stop_readers(s);
    tdb_stackview_init(v, s->pid, tdb_session_thread_lwp(s, thread), raw,
                       s->have_maps ? &s->maps : NULL, s->sym, s->py, s->snap);
    tdb_session_python_fold(s, v);
    json_decref(raw);
    return 0;
}

/* Python frames for V's thread: from memory, else (an interpreter tdebug
 * cannot read) from gdb's py-bt when CPython's debug info is loaded.  New
 * reference or NULL. */
json_t *tdb_session_view_python(tdb_session *s, const tdb_stackview *v)
{
    json_t *py = tdb_stackview_python_json(v);
    if (!py && s->py_state < 0 && s->opts.cpython_symbols)
        py = gdb_python_frames(s);
    return py;
}

const tdb_stackview *tdb_session_view_of(tdb_session *s, int thread, tdb_stackview *tmp, int *own,
                                         tdb_error *err)
{
    *own = 0;
    if (tdb_session_need_stop(s, err) < 0)
        return NULL;
    if (thread <= 0 || thread == tdb_session_stop_thread(s))
        return tdb_session_stop_complete(s, err) < 0 ? NULL : &s->stop_view;
    if (tdb_session_collect_view(s, thread, tmp, err) < 0)
        return NULL;
    *own = 1;
    return tmp;
}

const tdb_stackview *tdb_session_frame_view(tdb_session *s, int thread, int index,
                                            tdb_stackview *tmp, int *own, tdb_error *err)
{
    *own = 0;
    /* A partial stop's frame 0 is its Python line, whatever lies under it */
    if (index == 0 && s->state == STOPPED && s->have_stop && s->stop.partial &&
        (thread <= 0 || thread == tdb_session_stop_thread(s)))
        return &s->stop_view;
    return tdb_session_view_of(s, thread, tmp, own, err);
}

json_t *tdb_session_thread_stack(tdb_session *s, int thread, tdb_error *err)
{
    tdb_stackview tmp;
    int own;
    const tdb_stackview *v = tdb_session_view_of(s, thread, &tmp, &own, err);
    if (!v)
        return NULL;
    json_t *stack = tdb_stackview_json(v, tdb_session_stack_flags(s));
    size_t i;
    json_t *f;
    json_array_foreach(stack, i, f)
        json_object_set_new(f, "index", json_integer((json_int_t)i));
    if (own)
        tdb_stackview_clear(&tmp);
    return stack;
}

json_t *tdb_session_thread_stack_top(tdb_session *s, int thread, int *whole, tdb_error *err)
{
    *whole = 1;
    if (tdb_session_need_stop(s, err) < 0)
        return NULL;
    if (!s->stop.partial || (thread > 0 && thread != tdb_session_stop_thread(s)))
        return tdb_session_thread_stack(s, thread, err);
    /* Frame 0 is the Python line whatever gdb's frames are; the frames
     * under it may be native ones the Python frames alone do not show. */
    json_t *stack = tdb_stackview_json(&s->stop_view, tdb_session_stack_flags(s));
    while (json_array_size(stack) > 1)
        json_array_remove(stack, json_array_size(stack) - 1);
    json_object_set_new(json_array_get(stack, 0), "index", json_integer(0));
    *whole = 0;
    return stack;
}

int tdb_session_select(tdb_session *s, int thread, int index, tdb_error *err)
{
    if (tdb_session_need_stop(s, err) < 0)
        return -1;
    if (index == 0 && s->stop.partial && (thread <= 0 || thread == tdb_session_stop_thread(s))) {
        s->selected = 0; /* the Python line, as a DAP step selects before it goes */
        return 0;
    }
    if (tdb_session_stop_complete(s, err) < 0)
        return -1;
    if (thread > 0 && thread != tdb_session_stop_thread(s) &&
        tdb_session_select_thread(s, thread, err) < 0)
        return -1;
    tdb_view_frame f;
    if (index < 0 ||
        tdb_stackview_frame_at(&s->stop_view, tdb_session_stack_flags(s), (size_t)index, &f) < 0) {
        tdb_error_set(err, ERANGE, "thread %d has no frame %d", tdb_session_stop_thread(s), index);
        return -1;
    }
    /* A native frame is gdb's selected frame too, so its commands (print,
     * info locals) see that frame; gdb refusing costs only that. */
    tdb_error local = {0};
    if (f.kind == TDB_FRAME_NATIVE &&
        tdb_gdb_cmd(s->gdb, CMD_TIMEOUT_MS, NULL, &local, "-stack-select-frame %d", f.level) < 0 &&
        !tdb_gdb_alive(s->gdb)) {
        tdb_error_set(err, local.code, "%s", local.msg);
        return -1;
    }
    s->selected = index;
    return 0;
}
