// A C++ core library with no Python in it, as a user's extension links one
// (tests/e2e/test_step_read.py): built -O0 -g as libfar_core.so.
#include "far_core.h"

namespace far {

long scale(long x, long by)
{
    long r = x * by; // far_core: first line
    return r + 1;
}

} // namespace far
