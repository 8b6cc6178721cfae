/* native/frames.c: native frames: freeing, clean names, from gdb's MI and
 * the memory map (contract in native/frames.h). */
#include "native/frames.h"

#include <stdlib.h>
#include <string.h>

void tdb_native_frames_free(tdb_native_frame *frames, size_t n)
{
    if (!frames)
        return;
    for (size_t i = 0; i < n; i++) {
        free(frames[i].function);
        free(frames[i].library);
    }
    free(frames);
}

void tdb_native_name_clean(char *name)
{
    static const char *const clones[] = {"lto_priv", "constprop", "isra", "part", "cold",
                                         "localalias", "clone"};
    if (!name)
        return;
    /* Symbol versions: "clock_nanosleep@GLIBC_2.2.5", "dlopen@@GLIBC_2.34". */
    char *at = strchr(name, '@');
    if (at && at != name)
        *at = '\0';
    if (name[0] == '_' && name[1] == 'Z')
        return; /* mangled: the demangler shows clones as "[clone .cold]" */
    /* GCC's copies of a function: "time_sleep.lto_priv.0", "f.cold". */
    for (char *dot = strchr(name, '.'); dot; dot = strchr(dot + 1, '.')) {
        for (size_t i = 0; i < sizeof(clones) / sizeof(clones[0]); i++) {
            if (strncmp(dot + 1, clones[i], strlen(clones[i])) == 0 && dot != name) {
                *dot = '\0';
                return;
            }
        }
    }
}

static const json_t *mi_frame(const json_t *v)
{
    const json_t *inner = json_object_get(v, "frame");
    return json_is_object(inner) ? inner : v;
}

int tdb_native_frames_from_mi(const json_t *stack, tdb_native_frame **out, size_t *n)
{
    if (!json_is_array(stack))
        return -1;
    size_t count = json_array_size(stack);
    tdb_native_frame *frames = tdb_xcalloc(count ? count : 1, sizeof(*frames));
    for (size_t i = 0; i < count; i++) {
        const json_t *f = mi_frame(json_array_get(stack, i));
        const char *addr = json_string_value(json_object_get(f, "addr"));
        const char *func = json_string_value(json_object_get(f, "func"));
        const char *from = json_string_value(json_object_get(f, "from"));
        if (!json_is_object(f) || !addr) {
            tdb_native_frames_free(frames, i);
            return -1;
        }
        frames[i].pc = strtoull(addr, NULL, 16);
        /* gdb prints "??" for a frame it cannot name. */
        frames[i].function = func && strcmp(func, "??") != 0 ? tdb_xstrdup(func) : NULL;
        tdb_native_name_clean(frames[i].function);
        frames[i].library = from ? tdb_xstrdup(from) : NULL;
    }
    *out = frames;
    *n = count;
    return 0;
}

void tdb_native_frames_fill_libraries(tdb_native_frame *frames, size_t n, const tdb_maps *maps)
{
    for (size_t i = 0; i < n; i++) {
        if (frames[i].library)
            continue;
        const tdb_map *m = tdb_maps_find(maps, frames[i].pc);
        if (m && m->path)
            frames[i].library = tdb_xstrdup(m->path);
    }
}
