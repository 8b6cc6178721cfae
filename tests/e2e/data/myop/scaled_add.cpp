// A user's own torch op, built with -O0 -g by the tests (tests/e2e/test_step_into.py):
// a step from the Python line that calls it lands here, past pybind11's glue.
// torch/extension.h would do too; these two (ATen and pybind11's casters for
// tensors) compile in half the time, which a loaded test machine feels.
#include <ATen/ATen.h>
#include <torch/csrc/utils/pybind.h>

at::Tensor scaled_add(const at::Tensor& a, const at::Tensor& b, double alpha)
{
    at::Tensor scaled = b * alpha;   // scaled_add: first line
    at::Tensor out = a + scaled;     // scaled_add: second line
    return out;
}

PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)
{
    m.def("scaled_add", &scaled_add, "a + alpha * b");
}
