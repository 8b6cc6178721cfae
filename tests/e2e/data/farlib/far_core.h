#pragma once
namespace far {
long scale(long x, long by);
}
