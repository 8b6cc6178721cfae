/*
 * tour/data.c: the tours of 'tdebug tour' (see tour/tour.h).  Text only: what
 * each stop is, where it lives in the source tree, what to try there.
 *
 * Facts the torch tour relies on, measured on Debian's torch 1.13 (x86-64):
 *  - torch/_C...so's PyInit__C is one instruction, 'jmp initModule@plt', so
 *    at initModule the stub's frame is gone;
 *  - 'torch.ones(2) + 1' reaches at::_ops::add_Tensor::call (libtorch_cpu,
 *    called from libtorch_python) and then, through autograd's kernel,
 *    add_Tensor::redispatch and RegisterCPU.cpp's wrapper, the exported
 *    at::native::structured_ufunc_add_CPU::impl; neither is called during
 *    'import torch';
 *  - both functions also have PLT stubs (in libtorch_python and inside
 *    libtorch_cpu) that gdb puts breakpoint locations on; the tour passes
 *    them by (cmd/tour.c) and stops in the functions themselves;
 *  - at add_Tensor::call, $rdi is the result's slot and $rsi is self;
 *  - 'step' (step-into 'mine', the default) from the line 'x = a + 1'
 *    stops at add_Tensor::call; from 'x = torch.ones(2) + 1' it would
 *    stop in torch.ones' operator first (at::_ops::ones::call), hence
 *    the program's separate lines.
 * tests/e2e/test_tour.py checks the stops, in order, on the real torch.
 */
#include "tour/tour.h"

#include <string.h>

#define END {NULL, NULL}

/* ---- tdebug tour torch ---- */

static const tdb_tour_stop torch_stops[] = {
    {
        .trigger = TDB_TOUR_LOADED,
        .target = "torch._C",
        .title = "torch._C is mapped: the dynamic loader at work",
        .what =
            "`import torch` runs torch/__init__.py, which reaches `from torch._C import *`. "
            "CPython's import system finds the extension module "
            "torch/_C.cpython-311-x86_64-linux-gnu.so and calls dlopen() on it. We are inside "
            "the dynamic loader (ld.so): _C's file has just been mapped into memory, and none of "
            "torch's code has run yet.\n\n"
            "_C is a tiny stub. The libraries it needs (libtorch_python, libtorch_cpu, libc10 and "
            "a few hundred more) are not mapped yet: ld.so maps them next, relocates them and runs "
            "their static initializers, which register thousands of operator kernels with the "
            "dispatcher.",
        .where = (const tdb_tour_place[]){
            {"torch/__init__.py", "`from torch._C import *`: the Python frames above"},
            {"torch/csrc/stub.c", "the whole source of _C...so: PyInit__C"},
            {"build/aten/src/ATen/RegisterCPU.cpp",
             "generated: TORCH_LIBRARY_IMPL(aten, CPU, m), whose static initializer registers "
             "the CPU kernels while libtorch_cpu loads"},
            {"Python/importdl.c, Python/dynload_shlib.c",
             "(CPython) importing an extension: dlopen(), then dlsym() of PyInit__C"},
            {"elf/dl-load.c, elf/dl-open.c", "(glibc) the dynamic loader: the innermost frames"},
            END},
        .try_next = (const tdb_tour_try[]){
            {"info sharedlibrary", "the libraries mapped so far ('Yes': tdebug had gdb read "
                                   "their symbols)"},
            {"frame 1", "select _dl_map_object_from_fd, the loader mapping _C, then:"},
            {"p l->l_name", "the file of the link map it is building"},
            {"bt", "the whole stack, Python frames (importlib, torch/__init__.py) in place"},
            END},
    },
    {
        .trigger = TDB_TOUR_IMPORT,
        .target = "torch._C",
        .function = "PyInit__C",
        .title = "PyInit__C: CPython calls the module's init function",
        .what =
            "Every C extension module exports PyInit_<name>. After dlopen(), CPython looked it "
            "up with dlsym() and is calling it (_PyImport_LoadDynamicModuleWithSpec, the frame "
            "below). Since the last stop the loader mapped all of torch's libraries and ran "
            "their static initializers.\n\n"
            "torch's PyInit__C is a single instruction: a jump to initModule() in "
            "libtorch_python.so (a tail call). All of the code lives in the big library; _C "
            "stays a stub of a few kilobytes.",
        .where = (const tdb_tour_place[]){
            {"torch/csrc/stub.c", "PyInit__C: `return initModule();`"},
            {"Python/importdl.c", "(CPython) _PyImport_LoadDynamicModuleWithSpec, the caller"},
            END},
        .no_debug =
            "This torch has no debug info: gdb knows PyInit__C only from the dynamic symbol "
            "table, so there is no source line and no `step` line by line. A debug build of "
            "torch (`tdebug profile --torch=debug`) would show torch/csrc/stub.c:LINE here. "
            "`tdebug tour tinytensor` shows this moment at source level (its stop 2).",
        .try_next = (const tdb_tour_try[]){
            {"x/1i $pc", "the whole function: jmp to initModule@plt"},
            {"info symbol $pc", "the symbol and library the program counter is in"},
            {"bt raw", "the same stack with CPython's own frames (the evaluator loop) kept"},
            END},
    },
    {
        .trigger = TDB_TOUR_BREAK,
        .target = "initModule",
        .function = "initModule",
        .title = "initModule: libtorch_python builds the torch._C module",
        .what =
            "initModule() creates the torch._C module object and fills it: the Python types "
            "written in C++ (torch._C._TensorBase, the base class of torch.Tensor; autograd's "
            "engine and functions), the functions generated from native_functions.yaml "
            "(torch.ones, torch.add, ...) and submodules such as torch._C._nn and "
            "torch._C._linalg. libtorch_python is the bridge: it knows Python, and the "
            "libraries below it (libtorch_cpu, libc10) do not.\n\n"
            "PyInit__C is not on the stack: it jumped here instead of calling, so initModule "
            "will return straight to CPython.",
        .where = (const tdb_tour_place[]){
            {"torch/csrc/Module.cpp", "initModule"},
            {"torch/csrc/autograd/python_variable.cpp",
             "THPVariable_initModule: the C++ type behind torch.Tensor"},
            {"torch/csrc/autograd/generated/python_torch_functions_*.cpp",
             "generated bindings of torch.* (templates in tools/autograd/templates/)"},
            END},
        .no_debug =
            "Without debug info the source lines and local variables of initModule are out of "
            "reach. A debug build would show torch/csrc/Module.cpp:LINE, and `next` would walk "
            "through the module's construction; tinytensor's stop 3 (tt_init_module) does it "
            "at source level.",
        .try_next = (const tdb_tour_try[]){
            {"bt 3", "the caller is CPython's import code: the stub's frame is gone"},
            {"break THPVariable_initModule", "then Enter: stop where torch.Tensor's C++ type is "
                                             "created (an exported function)"},
            {"finish", "run all of initModule and stop when it returns to CPython"},
            END},
    },
    {
        .trigger = TDB_TOUR_PY_LINE,
        .target = "x = a + 1",
        .function = "<module>",
        .then = TDB_TOUR_THEN_STEP,
        .title = "x = a + 1: a Python line, about to step into C++",
        .what =
            "The import is done, and `a = torch.ones(2)` ran. The program stopped on its line "
            "`x = a + 1`, at a Python breakpoint: tdebug's hook in the interpreter checks the "
            "lines of this file only, and gdb has no breakpoint in CPython's evaluator. The "
            "stack is the Python line on top of the interpreter's own C frames.\n\n"
            "`a + 1` calls Tensor.__add__, which is C++ in libtorch_python. The tour now types "
            "`step` (Enter does it): tdebug lets the binding's glue run (torch's Python argument "
            "parser, THPVariable_add, the dispatcher's wrappers) and stops at the first frame "
            "that means something. With no code of yours under this line, that is torch's "
            "operator, where the tensors can be read.",
        .where = (const tdb_tour_place[]){
            {"torch/_tensor.py", "class Tensor(torch._C._TensorBase): __add__ comes from the C++ "
                                 "base class"},
            {"torch/csrc/autograd/generated/python_variable_methods.cpp",
             "THPVariable_add, the method's C++ (template in tools/autograd/templates/)"},
            END},
        .try_next = (const tdb_tour_try[]){
            {"py-locals", "a, the tensor made on the line before"},
            {"bt", "the Python line above CPython's C frames"},
            {"set step-into binding", "then Enter: the step stops in the binding's first frame "
                                      "instead (a ?? in libtorch_python)"},
            END},
    },
    {
        .trigger = TDB_TOUR_STEPPED,
        .target = "at::_ops::add_Tensor::call",
        .function = "at::_ops::add_Tensor::call",
        .title = "at::_ops::add_Tensor::call: the step lands where add enters the dispatcher",
        .what =
            "`step` went from the Python line through Tensor.__add__'s binding in "
            "libtorch_python (THPVariable_add and its argument parser: the ?? frames of the "
            "stack, which the step passed by; functions a library does not export have no name "
            "without debug info). The binding wrapped the Python 1 as a scalar tensor and "
            "called at::add, which is this function: the entry point of the aten::add.Tensor "
            "operator, generated from its schema. Its arguments, self, other and alpha, are "
            "read from the registers at the entry and the tensors from memory.\n\n"
            "call() finds the operator once, computes the dispatch key set of its arguments "
            "(CPU, AutogradCPU, ...) and calls through the c10::Dispatcher, which runs the "
            "kernel of the highest key first: autograd's, which would record the graph if a "
            "tensor required grad, then redispatches below autograd, to the CPU kernel.",
        .where = (const tdb_tour_place[]){
            {"aten/src/ATen/native/native_functions.yaml",
             "the schema: add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"},
            {"build/aten/src/ATen/Operators_*.cpp",
             "generated: at::_ops::add_Tensor::call and ::redispatch"},
            {"aten/src/ATen/core/dispatch/Dispatcher.h",
             "c10::Dispatcher::call: the dispatch key set, then the kernel"},
            {"aten/src/ATen/core/dispatch/OperatorEntry.h", "an operator's dispatch table"},
            {"torch/csrc/autograd/generated/python_variable_methods.cpp",
             "THPVariable_add (template in tools/autograd/templates/)"},
            {"torch/csrc/autograd/generated/VariableType_*.cpp", "autograd's add kernel"},
            END},
        .no_debug =
            "A debug build would name the ?? frames (THPVariable_add and its argument parser), "
            "show Operators_*.cpp:LINE, and `step` would walk through Dispatcher::call. "
            "tinytensor's stop 4 (tt_ops_add_call) shows a dispatcher at source level.",
        .try_next = (const tdb_tour_try[]){
            {"args", "self, other and alpha, as the stop listed them: read from the registers "
                     "at the entry and the tensors in memory, without debug info"},
            {"bt", "the Python line that called it, between the C++ frames"},
            {"info symbol **(void ***)$rsi",
             "self's TensorImpl, by its vtable ($rsi is self; $rdi is where the result goes)"},
            {"finish", "back through the glue to the Python line (Enter goes on to the kernel "
                       "instead)"},
            END},
    },
    {
        .trigger = TDB_TOUR_BREAK,
        .target = "at::native::structured_ufunc_add_CPU::impl",
        .function = "at::native::structured_ufunc_add_CPU::impl",
        .title = "structured_ufunc_add_CPU::impl: the CPU kernel of add",
        .what =
            "The dispatcher reached the CPU kernel. Read the stack from add_Tensor::call "
            "upwards: the autograd kernel (?? frames), at::_ops::add_Tensor::redispatch, the "
            "CPU wrapper generated into RegisterCPU.cpp (?? frames), and this function.\n\n"
            "add is a structured operator: the wrapper first ran its meta function "
            "(at::meta::structured_add_Tensor::meta), which checks the arguments, computes the "
            "result's shape and dtype (broadcasting; type promotion) and builds a "
            "TensorIterator over the result, self and other. impl() then calls add_stub, "
            "which picks the kernel compiled for this CPU (DEFAULT, AVX2 or AVX512); its loop "
            "computes self + alpha * other, a vector of elements at a time.",
        .where = (const tdb_tour_place[]){
            {"aten/src/ATen/native/BinaryOps.cpp",
             "TORCH_META_FUNC2(add, Tensor): the meta function"},
            {"build/aten/src/ATen/UfuncCPU_add.cpp",
             "generated: structured_ufunc_add_CPU::impl, calling add_stub"},
            {"build/aten/src/ATen/UfuncCPUKernel_add.cpp",
             "generated: the kernel behind add_stub, built once per CPU capability"},
            {"aten/src/ATen/native/ufunc/add.h",
             "the formula: self + alpha * other (vectorized: fmadd)"},
            {"aten/src/ATen/native/cpu/BinaryOpsKernel.cpp",
             "the hand-written kernels of add's siblings (mul, div, ...)"},
            {"build/aten/src/ATen/RegisterCPU.cpp",
             "the wrapper (meta, then impl) and the kernel's registration"},
            {"aten/src/ATen/TensorIterator.cpp", "TensorIteratorBase::for_each, the loop driver"},
            END},
        .no_debug =
            "A debug build would show UfuncCPU_add.cpp:LINE and the TensorIterator's fields "
            "(`p *this`), and `step` would reach the loop of add.h. tinytensor's stop 5 stops "
            "inside its add loop, on the line that adds two elements.",
        .try_next = (const tdb_tour_try[]){
            {"break at::TensorIteratorBase::for_each",
             "then Enter: the loop driver, one level down (exported)"},
            {"finish", "return to the wrapper from RegisterCPU.cpp"},
            END},
    },
};

/* ---- tdebug tour tinytensor ---- */

static const tdb_tour_stop tinytensor_stops[] = {
    {
        .trigger = TDB_TOUR_LOADED,
        .target = "tinytensor._C",
        .title = "tinytensor._C is mapped: the dynamic loader at work",
        .what =
            "`import tinytensor` runs tinytensor/__init__.py, which imports tinytensor._C: "
            "CPython dlopen()s _C.cpython-311-x86_64-linux-gnu.so, and we are in the loader, "
            "right after it mapped that file.\n\n"
            "Its dependencies come next: lib/libtt_python.so and lib/libtt_core.so, found "
            "through _C's RUNPATH $ORIGIN/lib as torch's _C finds libtorch_python. Then "
            "libtt_core's constructor registers the kernels with the dispatcher, as torch's "
            "static initializers do.",
        .where = (const tdb_tour_place[]){
            {"samples/tinytensor/tinytensor/__init__.py", "`from tinytensor import _C`"},
            {"samples/tinytensor/csrc/core/tt_register.c",
             "the constructor that registers the kernels (torch: RegisterCPU.cpp)"},
            {"samples/tinytensor/setup.py", "how _C gets its RUNPATH"},
            END},
        .try_next = (const tdb_tour_try[]){
            {"info sharedlibrary", "the libraries mapped so far"},
            {"break tt_register_kernels", "then Enter: the kernels being registered, inside "
                                          "this dlopen()"},
            {"bt", "the whole stack, Python frames (importlib, tinytensor/__init__.py) in place"},
            END},
    },
    {
        .trigger = TDB_TOUR_IMPORT,
        .target = "tinytensor._C",
        .function = "PyInit__C",
        .title = "PyInit__C: CPython calls the module's init function",
        .what =
            "As in torch, _C's PyInit__C does one thing: call tt_init_module() in "
            "lib/libtt_python.so. Built with -O0 it is a real call, not a jump, so PyInit__C "
            "stays on the stack at the next stop (torch's optimized build jumps).",
        .where = (const tdb_tour_place[]){
            {"samples/tinytensor/csrc/stub.c", "PyInit__C (torch/csrc/stub.c)"},
            END},
        .try_next = (const tdb_tour_try[]){
            {"list", "the source around this line"},
            {"bt", "the Python frames of the import, under the C ones"},
            {"info frame", "this frame: its caller, its saved registers"},
            END},
    },
    {
        .trigger = TDB_TOUR_BREAK,
        .target = "tt_init_module",
        .function = "tt_init_module",
        .title = "tt_init_module: the bindings library builds tinytensor._C",
        .what =
            "tt_init_module (initModule in torch) creates the module object with its functions "
            "(ones, zeros, full, tensor, the dispatcher's introspection) and adds the TensorBase "
            "type, tinytensor's THPVariable. Everything that knows Python is in libtt_python; "
            "libtt_core below it knows nothing of Python.",
        .where = (const tdb_tour_place[]){
            {"samples/tinytensor/csrc/python/tt_python_module.c",
             "tt_init_module (torch/csrc/Module.cpp: initModule)"},
            {"samples/tinytensor/csrc/python/tt_python_tensor.c",
             "the TensorBase type (torch/csrc/autograd/python_variable.cpp)"},
            END},
        .try_next = (const tdb_tour_try[]){
            {"next", "run one line, over calls"},
            {"info locals", "the module being built"},
            {"finish", "return to PyInit__C; gdb prints the module object"},
            END},
    },
    {
        .trigger = TDB_TOUR_BREAK,
        .target = "tt_ops_add_call",
        .function = "tt_ops_add_call",
        .title = "tt_ops_add_call: the add operator enters the dispatcher",
        .what =
            "`tinytensor.ones(2) + 1` called the TensorBase type's + slot, tt_pytensor_add in "
            "libtt_python (THPVariable_add in torch), which made a tensor of the 1 and called "
            "tt_ops_add_call in libtt_core: the operator's entry point, like "
            "at::_ops::add_Tensor::call. It finds the operator, computes the dispatch key of "
            "its arguments (device and dtype), looks the kernel up in the dispatcher's table "
            "and calls it, on the line marked `TOUR: add dispatch`.",
        .where = (const tdb_tour_place[]){
            {"samples/tinytensor/csrc/core/tt_ops.c",
             "tt_ops_add_call (build/aten/src/ATen/Operators_*.cpp)"},
            {"samples/tinytensor/csrc/core/tt_dispatcher.c",
             "the table and its lookup (aten/src/ATen/core/dispatch/Dispatcher.h)"},
            {"samples/tinytensor/csrc/python/tt_python_tensor.c",
             "tt_pytensor_add (THPVariable_add)"},
            END},
        .try_next = (const tdb_tour_try[]){
            {"info args", "self, other and alpha"},
            {"p *self", "a tensor: storage, shape, strides, dtype, device"},
            {"tensor self", "the same tensor decoded: dtype, sizes, strides and its values"},
            {"up", "tt_pytensor_add, the bindings ('down' comes back)"},
            END},
    },
    {
        .trigger = TDB_TOUR_MARKED_LINE,
        .target = "add loop",
        .file = "tt_native_cpu.c",
        .library = "tinytensor/lib/libtt_core.so",
        .function = "add_kernel_float64",
        .title = "add_kernel_float64: the add loop of the CPU kernel",
        .what =
            "The dispatcher chose tt_native_add, the CPU kernel (torch's structured add): it "
            "broadcast the operands and allocated the result (tt_iter_binary_op; a "
            "TensorIterator in torch), then called this loop, which computes "
            "out = self + alpha * other one element at a time. We stopped on that line, "
            "before the first element is added. In torch this is the loop of add_stub's "
            "kernel, vectorized, generated from ufunc/add.h.",
        .where = (const tdb_tour_place[]){
            {"samples/tinytensor/csrc/core/tt_native_cpu.c",
             "tt_native_add, add_kernel_float64 (aten/src/ATen/native/BinaryOps.cpp, "
             "build/aten/src/ATen/UfuncCPUKernel_add.cpp)"},
            {"samples/tinytensor/csrc/core/tt_iter.c",
             "the element iterator (aten/src/ATen/TensorIterator.cpp)"},
            END},
        .try_next = (const tdb_tour_try[]){
            {"p x[it.offset[1]]", "the element of self about to be added"},
            {"next", "add it; then `p o[it.offset[0]]` shows 2"},
            {"info locals", "the loop's state"},
            END},
    },
};

/* ---- tdebug tour extension ---- */

static const tdb_tour_stop extension_stops[] = {
    {
        .trigger = TDB_TOUR_IMPORT,
        .target = "myop",
        .function = "PyInit_myop",
        .title = "PyInit_myop: pybind11 makes the module",
        .what =
            "`import myop` found myop's extension module (myop.cpython-3XX-...so, named for "
            "the interpreter that built it: setup.py build_ext --inplace put it beside run.py) "
            "and CPython called its init function, which "
            "PYBIND11_MODULE wrote: it makes the module and registers scaled_add as a "
            "pybind11 cpp_function. torch.utils.cpp_extension linked it against the installed "
            "torch (libtorch, libc10, libtorch_python), which has no debug info; myop has.",
        .where = (const tdb_tour_place[]){
            {"samples/myop/myop.cpp", "PYBIND11_MODULE(TORCH_EXTENSION_NAME, m)"},
            END},
        .try_next = (const tdb_tour_try[]){
            {"bt", "the import, Python frames in place"},
            {"info sharedlibrary myop", "the op's library, with its symbols read"},
            END},
    },
    {
        .trigger = TDB_TOUR_PY_LINE,
        .target = "c = myop.scaled_add(a, b, 2.0)",
        .function = "<module>",
        .then = TDB_TOUR_THEN_STEP,
        .title = "c = myop.scaled_add(a, b, 2.0): the Python line that calls your op",
        .what =
            "The program stopped on the line that calls your op, at a Python breakpoint "
            "(tdebug's hook in the interpreter; gdb has none in CPython's evaluator). a and b "
            "are torch tensors, made on the lines before.\n\n"
            "myop.scaled_add is a pybind11 cpp_function: calling it runs pybind11's "
            "dispatcher and argument loader, which turn the Python objects into at::Tensor "
            "and double, then your C++ function. The tour now types `step` (Enter does it): "
            "tdebug lets that glue run and stops in the first frame of your own code, "
            "scaled_add (samples/myop is yours here, as a program's directory, the working "
            "directory and `--my-code DIR` are).",
        .where = (const tdb_tour_place[]){
            {"samples/myop/run.py", "the same calls, as a program of your own"},
            {"/usr/include/pybind11/pybind11.h", "cpp_function::dispatcher, the glue the step "
                                                 "passes by"},
            END},
        .try_next = (const tdb_tour_try[]){
            {"py-locals", "a and b as Python sees them"},
            {"set step-into binding", "then Enter: the step stops in pybind11's dispatcher "
                                      "instead, seven frames above scaled_add"},
            END},
    },
    {
        .trigger = TDB_TOUR_STEPPED,
        .target = "scaled_add",
        .function = "scaled_add",
        .title = "scaled_add: the step lands in your own op",
        .what =
            "`step` went from the Python line through pybind11's glue (the dispatcher, the "
            "argument loader: the frames under this one, their template arguments folded; "
            "`bt full` shows them whole) into scaled_add, a C++ function of your own built "
            "with torch.utils.cpp_extension and the debug flags `tdebug profile "
            "--torch-extension` prints. It stopped on its first line, after the prologue, so "
            "the arguments are valid: a and b are at::Tensor references, shown as torch shows "
            "tensors (dtype, sizes, strides, device, first values), read from memory, nothing "
            "called in the process.",
        .where = (const tdb_tour_place[]){
            {"samples/myop/myop.cpp", "scaled_add and its PYBIND11_MODULE"},
            {"samples/myop/setup.py", "CppExtension and BuildExtension, with the debug flags"},
            {"/usr/include/pybind11/pybind11.h", "cpp_function::dispatcher, the glue above"},
            END},
        .try_next = (const tdb_tour_try[]){
            {"args", "a, b and alpha, tensors decoded"},
            {"print a", "gdb's own print shows the tensor too (tdebug's printers)"},
            {"print a.sizes()", "a c10::IntArrayRef: [2, 3]"},
            {"bt full", "the pybind11 frames with their whole names"},
            END},
    },
    {
        .trigger = TDB_TOUR_MARKED_LINE,
        .target = "out",
        .file = "myop.cpp",
        .library = NULL, /* myop's own file, whatever the interpreter names it */
        .function = "scaled_add",
        .then = TDB_TOUR_THEN_NEXT,
        .show = "info locals",
        .title = "scaled_add, two lines on: a local tensor",
        .what =
            "`scaled = b * alpha` ran: it called torch's operator (at::_ops::mul_Tensor, in "
            "libtorch_cpu, which has no debug info), and scaled now holds its result. `info "
            "locals` (below) shows it as a tensor; `out` is not made yet, and tdebug says why "
            "it cannot read it instead of printing garbage.\n\n"
            "The tour now types `next` (Enter does it): one line, over the call to torch's add.",
        .where = (const tdb_tour_place[]){
            {"samples/myop/myop.cpp", "the line marked TOUR: out"},
            END},
        .try_next = (const tdb_tour_try[]){
            {"print scaled", "scaled through gdb's own print: float32 [2, 3] ... values "
                             "[2, 2, ...]"},
            {"print scaled.sizes()", "its sizes, a c10::IntArrayRef: [2, 3]"},
            END},
    },
    {
        .trigger = TDB_TOUR_STEPPED,
        .target = "return",
        .function = "scaled_add",
        .then = TDB_TOUR_THEN_FINISH,
        .show = "info locals",
        .title = "scaled_add, after next: out is made",
        .what =
            "`next` ran `out = a + scaled` (torch's add operator) and stopped on the next line, "
            "`return out`. `info locals` (below) shows out as a tensor now: a + 2 * b.\n\n"
            "The tour now types `finish` (Enter does it): scaled_add returns, and tdebug goes on "
            "through pybind11's glue, which hands the tensor to Python as a torch.Tensor, back "
            "to the Python line that called it.",
        .where = (const tdb_tour_place[]){
            {"samples/myop/myop.cpp", "the line marked TOUR: return"},
            END},
        .try_next = (const tdb_tour_try[]){
            {"print out", "the result: float32 [2, 3] ... values [2, 3, 4, 5, 6, 7]"},
            {"bt", "the glue the finish will go back through"},
            END},
    },
    {
        .trigger = TDB_TOUR_STEPPED,
        .target = "c = myop.scaled_add(a, b, 2.0)",
        .function = "<module>",
        .title = "back on the Python line: finish returns what scaled_add returned",
        .what =
            "`finish` ran scaled_add to its end and on through pybind11's glue, and stopped "
            "back on the Python line that called it, the way `finish` from a Python function "
            "would. 'Value returned' is the tensor scaled_add returned, read from memory as a "
            "tensor; the line has yet to assign it to c.",
        .where = (const tdb_tour_place[]){
            {"samples/myop/run.py", "the same program, to run under tdebug run"},
            END},
        .try_next = (const tdb_tour_try[]){
            {"next", "the line ends: c is the tensor"},
            {"py-locals", "a, b (and c after the next)"},
            END},
    },
};

const tdb_tour tdb_tours[] = {
    {
        .name = "torch",
        .title = "A guided tour of `import torch`",
        .summary = "import torch; x = torch.ones(2) + 1 on the installed torch, stepping from "
                   "Python into C++ (the default)",
        .module = "torch",
        .code = "import torch\n"
                "a = torch.ones(2)\n"
                "x = a + 1\n"
                "print(x)\n",
        .intro =
            "This tour runs a four-line program, `import torch`, `a = torch.ones(2)`, `x = a + "
            "1`, `print(x)`, under gdb and stops six times on the way from those Python lines "
            "down into PyTorch's C++ core: when the dynamic loader maps torch._C, in PyInit__C, "
            "in initModule, at the Python line `x = a + 1`, from which it steps into C++ with "
            "`step` and lands where the add operator enters the dispatcher, and in its CPU "
            "kernel. Each stop shows the native stack (innermost frame first, with the library "
            "of each frame), the Python stack, what the code is, where it lives in PyTorch's "
            "source tree, and what to try.\n\n"
            "A stock torch (Debian's python3-torch, a wheel from PyPI) has no debug info: "
            "frames show exported function names but no source lines, and internal functions "
            "show as ??. `tdebug tour tinytensor` takes the same path at source level.",
        .stops = torch_stops,
        .n_stops = sizeof(torch_stops) / sizeof(torch_stops[0]),
        .outro =
            "That was the whole way down: a Python line, a `step` through CPython's slot for "
            "+ and the bindings in libtorch_python to the operator, the dispatcher, and a CPU "
            "kernel in libtorch_cpu. Going further:\n"
            "- tdebug run -b train.py:42 -- /usr/bin/python3 train.py: a line of your own; "
            "`step` from it goes into the operator it calls\n"
            "- tdebug tour tinytensor: the same path at source level, with locals and `step`\n"
            "- tdebug run -b 'at::_ops::mul_Tensor::call' -- /usr/bin/python3 SCRIPT: the "
            "entry of any operator (at::_ops::NAME_OVERLOAD::call) in your own program\n"
            "- tdebug run --stop-at-import torch._C -- /usr/bin/python3 SCRIPT: stop in "
            "PyInit__C of your own program's import",
        .instead = "tinytensor",
    },
    {
        .name = "tinytensor",
        .title = "A guided tour of `import tinytensor`, at source level",
        .summary = "the same path on samples/tinytensor, built with debug info",
        .module = "tinytensor",
        .code = "import tinytensor\n"
                "x = tinytensor.ones(2) + 1\n"
                "print(x)\n",
        .package = "samples/tinytensor",
        .symbols = "/tinytensor/",
        .intro =
            "tinytensor (samples/tinytensor) is a tiny tensor library laid out like torch: an "
            "extension module _C that is a stub, a bindings library (libtt_python, like "
            "libtorch_python) and a core with a dispatcher and CPU kernels (libtt_core, like "
            "libtorch_cpu and libc10). It is built with -O0 -g3, the debug-build profile, so "
            "every stop has a source line, `list`, `info locals` and `step` work, and no frame "
            "is ??.\n\n"
            "This tour runs `import tinytensor`, `x = tinytensor.ones(2) + 1`, `print(x)` and "
            "stops where the torch tour does.",
        .stops = tinytensor_stops,
        .n_stops = sizeof(tinytensor_stops) / sizeof(tinytensor_stops[0]),
        .outro =
            "Every step of the torch tour, at source level. Going further:\n"
            "- samples/README.md: tinytensor's layers next to torch's, and sample programs for "
            "a native crash, a hang and a callback from C into Python\n"
            "- tdebug tour: the same path on the installed torch",
    },
    {
        .name = "extension",
        .title = "A guided tour of your own torch op, at source level",
        .summary = "samples/myop, a torch.utils.cpp_extension op: step in, next, finish "
                   "back, its tensors read",
        .module = "myop",
        .code = "import torch\n"
                "import myop\n"
                "\n"
                "a = torch.arange(6.0).reshape(2, 3)\n"
                "b = torch.ones(2, 3)\n"
                "c = myop.scaled_add(a, b, 2.0)\n"
                "print(c)\n",
        .package = "samples/myop",
        .build = "make myop",
        .symbols = "/myop",
        .intro =
            "myop (samples/myop) is what a PyTorch user writes to add an operator: a C++ "
            "function over at::Tensor, bound with pybind11 and built by "
            "torch.utils.cpp_extension against the installed torch, with the flags `tdebug "
            "profile --torch-extension` prints. torch itself has no debug info; myop has.\n\n"
            "This tour runs `c = myop.scaled_add(a, b, 2.0)` and stops where myop is imported "
            "and on that Python line; from there it walks your op as you would: `step` into "
            "scaled_add, on to one of its lines, `next`, and `finish` back to the Python line, "
            "with the tensors it gets and makes shown as torch shows them.",
        .stops = extension_stops,
        .n_stops = sizeof(extension_stops) / sizeof(extension_stops[0]),
        .outro =
            "Your op, at source level, its tensors read. Going further:\n"
            "- tdebug profile --torch-extension: the flags for your own op (setup.py or the "
            "JIT); tdebug profile --check --no-deps YOUR_OP.so says whether it took\n"
            "- tdebug run -b train.py:42 -- /usr/bin/python3 train.py: a line of your program; "
            "`step` from it goes into your op (-b YOUR_FUNCTION stops in it directly)",
    },
};

const size_t tdb_n_tours = sizeof(tdb_tours) / sizeof(tdb_tours[0]);

const tdb_tour *tdb_find_tour(const char *name)
{
    for (size_t i = 0; i < tdb_n_tours; i++)
        if (strcmp(tdb_tours[i].name, name) == 0)
            return &tdb_tours[i];
    return NULL;
}
