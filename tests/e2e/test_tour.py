"""tdebug tour: the guided tours on the real gdb, Debian's real torch and the
tinytensor sample, in --batch, with a handout, and at the prompt through a
pseudo-terminal."""
import pathlib
import re
import shutil
import tempfile

from conftest import clean_env, run
from pty_util import Terminal
from tinytensor_util import marked_line
from tour_util import has_debug_info, processes_in_session, stops, venv_without_torch

TORCH_C = "/torch/_C.cpython-311-x86_64-linux-gnu.so"

# (title starts with, innermost function, library it is in) for each stop of
# the torch tour, in order; the Python line's has no native frame on top.
TORCH_STOPS = [
    ("torch._C is mapped", None, None),
    ("PyInit__C:", "PyInit__C", TORCH_C),
    ("initModule:", "initModule", "libtorch_python.so"),
    ("x = a + 1:", None, None),
    ("at::_ops::add_Tensor::call:", "at::_ops::add_Tensor::call(", "libtorch_cpu.so"),
    ("structured_ufunc_add_CPU::impl:", "at::native::structured_ufunc_add_CPU::impl(",
     "libtorch_cpu.so"),
]
# The tour's program, written to a directory of its own under $TMPDIR.
PROGRAM_RE = r"The program: '[^']*' '(/[^']*/tdebug-tour-\w+/tour\.py)'"
# Its Python line, in a stack.
LINE_3 = r'File "/[^"]*/tdebug-tour-\w+/tour\.py", line 3, in <module>'


TT_STOPS = [
    ("tinytensor._C is mapped", None, None),
    ("PyInit__C:", "PyInit__C", ("csrc/stub.c", "stub hands over")),
    ("tt_init_module:", "tt_init_module", ("csrc/python/tt_python_module.c", None)),
    ("tt_ops_add_call:", "tt_ops_add_call", ("csrc/core/tt_ops.c", None)),
    ("add_kernel_float64:", "add_kernel_float64", ("csrc/core/tt_native_cpu.c", "add loop")),
]


def frame_function(top):
    """'#0  0x... in NAME () from LIB' -> NAME (C++ names keep their
    parameters)."""
    m = re.match(r"#0\s+0x[0-9a-f]+ in (.*?) \(\)( at | from |$)", top)
    assert m, top
    return m.group(1)


def check_torch_stops(out):
    found = stops(out)
    assert [s["number"] for s in found] == [1, 2, 3, 4, 5, 6], [s["title"] for s in found]
    for s, (title, function, library) in zip(found, TORCH_STOPS):
        assert s["total"] == 6
        assert s["title"].startswith(title), s["title"]
        assert s["top"] or title.startswith("x = "), s["text"][:2000]
        if function:
            name = frame_function(s["top"])
            assert name.startswith(function) and not name.endswith("@plt"), s["top"]
            assert library in s["top"], s["top"]
    return found


def test_torch_tour_batch_stops_in_order_and_writes_handout(tdebug, torch_available, tmp_path):
    handout = tmp_path / "torch-tour.md"
    # $TMPDIR short enough for tdebug to use (tdb_private_dir: 64 characters)
    tmp = pathlib.Path(tempfile.mkdtemp(prefix="tdebug-test-"))
    try:
        r = run([tdebug, "tour", "--batch", "--markdown", str(handout)], env=clean_env(TMPDIR=tmp))
        # The program is a file of its own under $TMPDIR, removed at the end.
        left = list(tmp.iterdir())
    finally:
        shutil.rmtree(tmp)
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    found = check_torch_stops(r.stdout)

    loaded, pyinit, init_module, line, add_call, kernel = found
    program = re.search(PROGRAM_RE, r.stdout).group(1)
    assert program.startswith(f"{tmp}/tdebug-tour-"), program
    assert left == []
    assert loaded["message"].startswith("tdebug: torch._C is loaded: the dynamic loader mapped ")
    assert "libraries are mapped so far" in loaded["message"]
    assert "Libraries mapped so far" in loaded["text"]
    assert "_C.cpython-311-x86_64-linux-gnu.so" in loaded["text"].split("Libraries mapped so far")[1]
    mapped = int(re.search(r"^(\d+) libraries are mapped now\.$", pyinit["text"], re.M).group(1))
    assert mapped > 100  # torch's ~290 dependencies came in between
    assert pyinit["message"].startswith("tdebug: stopped at the import of torch._C")
    # The kernel's stack is the way down through the dispatcher.
    frames = [l for l in kernel["text"].splitlines() if l.startswith("#")]
    assert any("at::_ops::add_Tensor::redispatch(" in l for l in frames), frames
    assert any("at::_ops::add_Tensor::call(" in l for l in frames), frames
    assert re.search(LINE_3, kernel["text"]), kernel["text"]
    # The Python line, at a Python breakpoint; the tour's step from it lands
    # at the operator's entry with its tensors read, the way there shown.
    assert re.fullmatch(r"tdebug: stopped at Python breakpoint \d+ \(" + re.escape(program) + r":3\)",
                        line["message"]), line["message"]
    assert re.search(r"^=>\s+3  x = a \+ 1$", line["text"], re.M), line["text"]
    assert add_call["message"].startswith(
        "tdebug: step: into the native code of Tensor.__add__: 0x"), add_call["message"]
    assert "  arg1 (at::Tensor const&) = float32 [2] strides [1] cpu values [1, 1]\n" in add_call["text"]
    assert "  arg2 (at::Tensor const&) = int64 [] strides [] cpu values [1]\n" in add_call["text"]
    assert "\nStack\n#0  " in add_call["text"]
    assert re.search(LINE_3, add_call["text"].split("\nStack\n")[1]), add_call["text"]
    # Every stop explains itself; where torch has no debug info, the stop
    # says what a debug build would add.
    for s in found:
        for section in ("What this is", "Where it lives", "Try next"):
            assert f"\n{section}\n" in s["text"], (section, s["title"])
    for s in found[1:]:
        lib = s["top"] and re.search(r" from (\S+)$", s["top"])
        if lib:
            assert not has_debug_info(lib.group(1)), lib.group(1)
            assert "\nNo debug info here\n" in s["text"], s["title"]
            assert "tdebug profile --torch=debug" in s["text"] or "debug build" in s["text"]
        else:
            assert "\nSource (" in s["text"], s["title"]
    # Each stop once: PLT stubs and repeated hits are passed by.
    assert r.stdout.count("=== Stop ") == 6
    assert "@plt ()" not in r.stdout
    assert "tensor([2., 2.])" in r.stdout
    assert "tdebug: program exited with status 0" in r.stdout
    assert "=== The end: all 6 stops ===" in r.stdout
    assert f"tdebug: wrote the handout to {handout}" in r.stdout

    md = handout.read_text()
    assert md.startswith("# A guided tour of `import torch`\n")
    assert "tour.py` under gdb, this program:\n\n```python\nimport torch\na = torch.ones(2)\n" \
           "x = a + 1\nprint(x)\n```\n" in md, md[:1000]
    titles = re.findall(r"^## Stop (\d) of 6: (.*)$", md, re.M)
    assert [int(n) for n, _ in titles] == [1, 2, 3, 4, 5, 6]
    assert [t for _, t in titles] == [s["title"] for s in found]
    sections = re.split(r"^## Stop \d of 6: .*$", md, flags=re.M)[1:]
    for section, (_, function, _) in zip(sections, TORCH_STOPS):
        block = re.search(r"```text\n(.*?)```", section, re.S).group(1).splitlines()
        assert block[0].startswith("tdebug: ")
        if function:
            assert block[1].startswith(f"#0   {function}"), block[1]
        assert "**What this is**" in section and "**Try next**" in section
        assert "**Where it lives**" in section
    assert "`aten/src/ATen/core/dispatch/Dispatcher.h`" in md
    assert "\n## The end\n" in md


def test_tinytensor_tour_reaches_source_lines(tdebug):
    r = run([tdebug, "tour", "tinytensor", "--batch"])
    assert r.returncode == 0, r.stdout[-3000:] + r.stderr
    found = stops(r.stdout)
    assert [s["number"] for s in found] == [1, 2, 3, 4, 5], [s["title"] for s in found]
    for s, (title, function, where) in zip(found, TT_STOPS):
        assert s["title"].startswith(title), s["title"]
        if not function:
            continue
        assert frame_function(s["top"]) == function, s["top"]
        path, marker = where
        m = re.search(r" at (\S+):(\d+)$", s["top"])
        assert m and m.group(1).endswith(path), s["top"]
        if marker:
            assert int(m.group(2)) == marked_line(path, marker), s["top"]
        # The source around the line, with the line marked.
        assert f"\nSource ({m.group(1)}:{m.group(2)})\n" in s["text"]
        assert re.search(rf"^=>\s+{m.group(2)}  ", s["text"], re.M), s["text"]
        assert "No debug info here" not in s["text"]
    loop = found[4]["text"]
    assert re.search(r"^=>\s+\d+  .*TOUR: add loop", loop, re.M), loop
    # The way down, every frame with its line.
    assert re.search(r"^#1 .* in tt_native_add \(\) at csrc/core/tt_native_cpu\.c:\d+$", loop, re.M)
    assert re.search(r"^#2 .* in tt_ops_add_call \(\) at csrc/core/tt_ops\.c:\d+$", loop, re.M)
    assert re.search(r"^#3 .* in tt_pytensor_add \(\) at csrc/python/tt_python_tensor\.c:\d+$",
                     loop, re.M)
    assert "tensor([2., 2.])" in r.stdout
    assert "=== The end: all 5 stops ===" in r.stdout


def test_handout_keeps_existing_file(tdebug, tmp_path):
    handout = tmp_path / "notes.md"
    handout.write_text("my own notes\n")
    r = run([tdebug, "tour", "tinytensor", "--batch", "--markdown", str(handout)])
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "notes.md.~1~").read_text() == "my own notes\n"
    assert f"(the file that was there is now {handout}.~1~)" in r.stdout
    first = handout.read_text()
    for s, (title, _, _) in zip(stops(r.stdout), TT_STOPS):
        assert f"## Stop {s['number']} of 5: {s['title']}\n" in first
    assert "```c\n" in first and "TOUR: add loop" in first

    # Numbered backups, as 'tdebug vscode' keeps them: the highest is the latest.
    handout.write_text(first + "my own remark\n")
    r = run([tdebug, "tour", "tinytensor", "--batch", "--markdown", str(handout)])
    assert r.returncode == 0, r.stderr
    assert (tmp_path / "notes.md.~1~").read_text() == "my own notes\n"
    assert (tmp_path / "notes.md.~2~").read_text() == first + "my own remark\n"
    assert handout.read_text().startswith("# A guided tour of `import tinytensor`")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["notes.md", "notes.md.~1~",
                                                          "notes.md.~2~"]


def test_handout_that_cannot_be_written_is_refused_first(tdebug, tmp_path):
    r = run([tdebug, "tour", "--batch", "--markdown", str(tmp_path / "no" / "such" / "t.md")])
    assert r.returncode == 1
    assert r.stderr.startswith(f"tdebug: cannot write the handout to '{tmp_path}/no/such/t.md': ")
    assert len(r.stderr.splitlines()) == 1
    assert "=== Stop" not in r.stdout
    r = run([tdebug, "tour", "--batch", "--markdown", str(tmp_path)])
    assert r.returncode == 1
    assert "it is a directory" in r.stderr


def test_missing_torch_says_so_and_offers_tinytensor(tdebug, tmp_path):
    python = venv_without_torch(tmp_path)
    r = run([tdebug, "tour", "--batch", "--python", python])
    assert r.returncode == 1
    assert r.stderr == (
        f"tdebug: cannot take the torch tour with '{python}': it cannot import torch (give "
        "--python an interpreter that can, e.g. /usr/bin/python3, or take the same tour at "
        "source level: tdebug tour tinytensor)\n")
    assert r.stdout == ""

    # On a terminal, tdebug asks; Enter takes the tinytensor tour.
    t = Terminal([tdebug, "tour", "--python", python])
    try:
        t.expect("it cannot import torch")
        t.expect("Take the tinytensor tour now? [Y/n] ")
        t.send("")
        t.expect("=== Stop 1 of 5: tinytensor._C is mapped")
        t.expect("(tour) ")
        t.send("q")
        assert t.wait() == 0
        assert "tdebug: the tour ended after stop 1 of 5" in t.seen.decode()
        assert processes_in_session(t.proc.pid) == []
    finally:
        t.close()


def test_interactive_torch_tour(tdebug, torch_available):
    t = Terminal([tdebug, "tour"])
    try:
        t.expect("=== Stop 1 of 6: torch._C is mapped")
        t.expect("[Enter: next stop (2 of 6) | q: quit")
        t.expect("(tour) ")
        t.send("")  # Enter: the next stop
        t.expect("=== Stop 2 of 6: PyInit__C")
        t.expect("(tour) ")
        t.send("x/1i $pc")  # a gdb command in between
        out = t.expect("(tour) ")
        assert re.search(r"<PyInit__C>:\s+jmp\s+0x[0-9a-f]+ <initModule@plt>", out), out
        t.send("")
        t.expect("=== Stop 3 of 6: initModule")
        t.expect("(tour) ")
        t.send("")
        t.expect("=== Stop 4 of 6: x = a + 1")
        t.expect("[Enter: step, to stop 5 of 6 | q: quit")
        t.expect("(tour) ")
        t.send("py-locals")  # what the stop suggests, then Enter steps
        out = t.expect("(tour) ")
        assert re.search(r"a = tensor\(\[1\., 1\.\]\)", out), out
        t.send("")
        out = t.expect("(tour) ")
        assert "=== Stop 5 of 6: at::_ops::add_Tensor::call" in out, out
        assert "tdebug: step: into the native code of Tensor.__add__: " in out, out
        assert "arg1 (at::Tensor const&) = float32 [2] strides [1] cpu values [1, 1]" in out, out
        t.send("q")
        assert t.wait() == 0
        rest = t.seen.decode(errors="replace")
        assert "tdebug: quit: the program was killed" in rest
        assert "tdebug: the tour ended after stop 5 of 6" in rest
        assert processes_in_session(t.proc.pid) == []
    finally:
        t.close()


def test_interactive_tinytensor_tour_try_next_commands_work(tdebug):
    """The things each stop suggests, typed at the prompt, show what the
    tour says they show."""
    t = Terminal([tdebug, "tour", "tinytensor"])
    try:
        t.expect("=== Stop 1 of 5")
        t.expect("(tour) ")
        t.send("info sharedlibrary")
        assert "_C.cpython-311-x86_64-linux-gnu.so" in t.expect("(tour) ")
        t.send("")
        t.expect("=== Stop 2 of 5")
        t.expect("(tour) ")
        t.send("list")
        assert "return tt_init_module();" in t.expect("(tour) ")
        t.send("bt")
        out = t.expect("(tour) ")
        assert " in PyInit__C () at csrc/stub.c:" in out
        assert re.search(r'    File ".*tinytensor/__init__.py", line \d+, in <module>', out)
        t.send("")
        t.expect("=== Stop 3 of 5")
        t.expect("(tour) ")
        t.send("")
        t.expect("=== Stop 4 of 5")
        t.expect("(tour) ")
        t.send("p *self")
        out = t.expect("(tour) ")
        assert "ndim = 1" in out and "dtype = TT_FLOAT64" in out and "device = TT_CPU" in out
        t.send("tensor self")
        assert "self (tt_tensor at 0x" in t.expect("(tour) ")
        t.send("")
        t.expect("=== Stop 5 of 5")
        t.expect("(tour) ")
        t.send("p x[it.offset[1]]")
        assert re.search(r"\$\d+ = 1\r?\n", t.expect("(tour) "))
        t.send("next")
        t.expect("(tour) ")
        t.send("p o[it.offset[0]]")
        assert re.search(r"\$\d+ = 2\r?\n", t.expect("(tour) "))
        t.send("")  # the program runs to its end
        t.expect("tensor([2., 2.])")
        t.expect("=== The end: all 5 stops ===")
        assert t.wait() == 0
        assert processes_in_session(t.proc.pid) == []
    finally:
        t.close()


def test_usage_errors(tdebug):
    r = run([tdebug, "tour", "nosuch"])
    assert r.returncode == 2
    assert r.stderr.startswith("tdebug tour: there is no tour 'nosuch' (tours: torch, tinytensor, extension)\n")
    r = run([tdebug, "tour", "torch", "tinytensor"])
    assert r.returncode == 2
    r = run([tdebug, "tour", "--python"])
    assert r.returncode == 2
    r = run([tdebug, "tour", "--batch", "--python", "/nonexistent/python3"])
    assert r.returncode == 127
    assert r.stderr.startswith("tdebug: cannot run '/nonexistent/python3': No such file")


def test_python_from_the_environment_unless_given(tdebug, tmp_path):
    """One rule in every command: --python, else $TDEBUG_PYTHON, else the
    build's PYTHON."""
    missing = tmp_path / "python3"
    r = run([tdebug, "tour", "--batch"], env=clean_env(TDEBUG_PYTHON=missing))
    assert r.returncode == 127
    assert r.stderr.startswith(f"tdebug: cannot run '{missing}': No such file")
    r = run([tdebug, "tour", "--batch", "--python", "/nonexistent/python3"],
            env=clean_env(TDEBUG_PYTHON=missing))
    assert r.stderr.startswith("tdebug: cannot run '/nonexistent/python3': No such file")
