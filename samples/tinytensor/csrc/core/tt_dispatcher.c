/* tt_dispatcher.c: see tt_dispatcher.h.  Mirrors
 * aten/src/ATen/core/dispatch/Dispatcher.cpp and OperatorEntry.cpp. */
#include "tt_dispatcher.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

/* The one table, like c10::Dispatcher::singleton(). */
static tt_operator operators[TT_MAX_OPERATORS];
static int noperators;

static tt_operator *find(const char *name)
{
    for (int i = 0; i < noperators; i++)
        if (strcmp(operators[i].name, name) == 0)
            return &operators[i];
    return NULL;
}

int tt_dispatcher_register(const char *op, tt_device device, tt_dtype dtype,
                           tt_kernel_fn fn, const char *fn_name, tt_error *err)
{
    tt_operator *entry = find(op);
    tt_kernel *slot;

    if (!entry) {
        if (noperators == TT_MAX_OPERATORS) {
            tt_error_set(err, TT_ERR_RUNTIME, "cannot register operator '%s': the table is full (%d operators)",
                         op, TT_MAX_OPERATORS);
            return -1;
        }
        entry = &operators[noperators++];
        entry->name = op;
    }
    slot = &entry->kernels[device][dtype];
    if (slot->fn) {
        tt_error_set(err, TT_ERR_RUNTIME, "cannot register %s for '%s' on %s/%s: %s is already registered there",
                     fn_name, op, tt_device_name(device), tt_dtype_name(dtype), slot->name);
        return -1;
    }
    slot->fn = fn;
    slot->name = fn_name;
    return 0;
}

const tt_operator *tt_dispatcher_find_op(const char *name, tt_error *err)
{
    const tt_operator *op = find(name);
    char known[256] = "";
    size_t len = 0;

    if (op)
        return op;
    for (int i = 0; i < noperators && len < sizeof(known); i++)
        len += (size_t)snprintf(known + len, sizeof(known) - len, "%s%s", i ? ", " : "", operators[i].name);
    tt_error_set(err, TT_ERR_RUNTIME, "unknown operator '%s' (tinytensor has: %s)", name, known);
    return NULL;
}

static int trace_enabled(void)
{
    static int enabled = -1;

    if (enabled < 0) {
        const char *v = getenv("TINYTENSOR_SHOW_DISPATCH_TRACE");
        enabled = v && *v && strcmp(v, "0") != 0;
    }
    return enabled;
}

/* Why there is no kernel: list the keys that have one. */
static void set_missing_kernel_error(const tt_operator *op, tt_dispatch_key key, tt_error *err)
{
    char have[256] = "";
    size_t len = 0;

    for (int dev = 0; dev < TT_DEVICE_COUNT; dev++)
        for (int dt = 0; dt < TT_DTYPE_COUNT; dt++)
            if (op->kernels[dev][dt].fn && len < sizeof(have))
                len += (size_t)snprintf(have + len, sizeof(have) - len, "%s%s/%s", len ? ", " : "",
                                        tt_device_name((tt_device)dev), tt_dtype_name((tt_dtype)dt));
    tt_error_set(err, TT_ERR_NOT_IMPLEMENTED, "cannot run '%s' on %s/%s: no kernel is registered for it (%s has: %s)",
                 op->name, tt_device_name(key.device), tt_dtype_name(key.dtype), op->name, have);
}

const tt_kernel *tt_dispatcher_lookup(const tt_operator *op, tt_dispatch_key key, tt_error *err)
{
    const tt_kernel *kernel = &op->kernels[key.device][key.dtype];

    if (!kernel->fn) {
        set_missing_kernel_error(op, key, err);
        return NULL;
    }
    if (trace_enabled())
        fprintf(stderr, "[call] op=[%s], key=[%s/%s], kernel=[%s]\n", op->name,
                tt_device_name(key.device), tt_dtype_name(key.dtype), kernel->name);
    return kernel;
}

int tt_dispatcher_count(void)
{
    return noperators;
}

const tt_operator *tt_dispatcher_operator(int i)
{
    return i >= 0 && i < noperators ? &operators[i] : NULL;
}
