"""The configurations 'tdebug vscode' writes, against what the C/C++
extension's MIEngine really does with them (vscode_util.MIEngine follows its
sources): how it quotes program arguments, which libraries it reads symbols
of, how it names the file of a breakpoint.  Each run is the launch compound,
gdb and debugpy both attached, against a C++ extension built in the
workspace (tests/fixtures/vscode/cppext)."""
import json
import re
import subprocess

from conftest import PYTHON, free_port, run
from vscode_util import (RUNNER, Workspace, cpp_workspace, debug_launch, kill_adapters,
                         marker_line, parse_arguments, quote_argument)


HOSTILE = ["it's", 'a"b', "$HOME", "${workspaceFolder}", "${env:HOME}", "*.py", "a\\b", "a\\",
           ";", "a;b", "(x)", "", "a b", "tab\tx", "`id`", "$(id)", "~", "!", "|", "&", ">", "<",
           "#c", "--lr=0.1", "caf\u00e9", '"', "'", "\\", "'$'", '""', "x{,}"]


def vscode(tdebug, ws, *args):
    r = run([tdebug, "vscode", "--compound", "--workspace", str(ws), "--program", "vec_main.py", *args])
    assert r.returncode == 0, r.stderr
    return Workspace(ws)


def test_the_harness_quotes_as_miengine():
    """LaunchOptions.QuoteArgument: double quotes around an argument that is
    empty or holds a space, tab or parenthesis, unless it starts with one;
    nothing escaped."""
    assert quote_argument("a b") == '"a b"'
    assert quote_argument("") == '""'
    assert quote_argument("(x)") == '"(x)"'
    assert quote_argument("it's") == "it's"
    assert quote_argument('a"b') == 'a"b'
    assert quote_argument('"a b"') == '"a b"'
    assert quote_argument("$HOME") == "$HOME"
    assert parse_arguments(["a b", "c"]) == '"a b" c'


def argv_of_run(procs, tmp_path, ws, tweak=None):
    """Run the launch compound for vec_main.py, whose first lines then
    record sys.argv: the arguments the program got."""
    script = ws / "vec_main.py"
    script.write_text("import json, sys\n"
                      f"open({str(ws / 'argv.json')!r}, 'w').write(json.dumps(sys.argv[1:]))\n"
                      + script.read_text())
    _, _, _, status, _ = debug_launch(procs, tmp_path, ws, "vec_main.py", [], [], tweak=tweak)
    assert status == 0
    return json.loads((ws / "argv.json").read_text())


def test_hostile_arguments_reach_the_program_byte_for_byte(tdebug, procs, tmp_path):
    """Quotes, $, globs, backslashes, ;, parentheses, the empty string and
    VS Code's own ${...}: MIEngine passes them on and gdb's /bin/sh reads
    them back exactly as they were given."""
    ws = cpp_workspace(tmp_path)
    vscode(tdebug, ws, "--args", *HOSTILE)
    assert argv_of_run(procs, tmp_path, ws) == HOSTILE


def test_arguments_as_given_would_not(tdebug, procs, tmp_path):
    """The same kind of arguments written into launch.json as they are:
    the shell expands $HOME and eats the backslash (the harness is as
    strict as MIEngine), only the space is saved by MIEngine's quotes."""
    ws = cpp_workspace(tmp_path)
    vscode(tdebug, ws, "--args", "placeholder")

    def raw(conf):
        conf["args"][-1:] = ["$HOME", "a\\b", "x y"]

    got = argv_of_run(procs, tmp_path, ws, tweak=raw)
    assert got[0] != "$HOME" and got[1:] == ["ab", "x y"]


def test_a_line_break_cannot_be_passed(tdebug, tmp_path):
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "vec_main.py").write_text("pass\n")
    r = run([tdebug, "vscode", "--compound", "--workspace", str(ws), "--program", "vec_main.py", "--args", "ok",
             "two\nlines"])
    assert r.returncode == 2
    assert r.stderr.startswith("tdebug vscode: cannot pass argument 2 to the program: it holds a "
                               "line break (VS Code's C/C++ extension sends the program's arguments "
                               "to gdb on one line")
    assert not (ws / ".vscode").exists()


def look_at_v(results):
    """At a stop in a function with 'const std::vector<double> &v': what
    the Variables view gets for v (MIEngine's -var-create and
    -var-list-children), and what a breakpoint by file name alone binds."""
    def at_stop(gdb, record):
        _, line = gdb.command('-var-create - * "v"')
        name = re.search(r'name="([^"]+)"', line).group(1)
        _, children = gdb.command(f"-var-list-children --all-values {name}")
        results["children"] = re.findall(r'exp="([^"]*)",numchild="\d+",value="([^"]*)"', children)
        gdb.command(f"-var-delete {name}")
        here = int(re.search(r'line="(\d+)"', record).group(1))
        _, by_name = gdb.command(f"-break-insert copy.cpp:{here}")
        results["by_name"] = by_name
        number = re.search(r'number="(\d+)"', by_name).group(1)
        gdb.command(f"-break-delete {number}")
    return at_stop


def test_std_vector_prints_and_a_breakpoint_binds_its_own_copy_cpp(tdebug, procs, tmp_path):
    """libstdc++ is in the list, so its pretty-printers load: v shows its
    elements.  The workspace maps to itself, so the breakpoint in
    src/io/copy.cpp goes by full path and binds there only, not in
    src/ops/copy.cpp too (by file name alone it binds both)."""
    ws = cpp_workspace(tmp_path)
    w = vscode(tdebug, ws)
    assert "libstdc++.so*" in w.config("tdebug: vec_main.py (C++, gdb)")["symbolLoadInfo"]["exceptionList"]
    io = ws / "src" / "io" / "copy.cpp"
    line = marker_line(io, "MARK: io copy")
    assert line == marker_line(ws / "src" / "ops" / "copy.cpp", "MARK: ops copy")
    results = {}
    log, _, _, status, _ = debug_launch(procs, tmp_path, ws, "vec_main.py", [(io, line)], [],
                                        on_breakpoint=look_at_v(results))
    assert status == 0
    assert [(e[1], e[2]["func"], e[2]["file"], e[2]["line"]) for e in log.events] == [
        ("c", "io_copy", str(io), line)]
    assert results["children"] == [("[0]", "1"), ("[1]", "2"), ("[2]", "3")]
    assert 'addr="<MULTIPLE>"' in results["by_name"]
    assert results["by_name"].count("copy.cpp") >= 2 and "ops/copy.cpp" in results["by_name"]


def test_without_libstdcxx_symbols_the_vector_is_raw(tdebug, procs, tmp_path):
    """The same stop with libstdc++ left out of the list, as before: no
    pretty-printer, v shows std::vector's insides."""
    ws = cpp_workspace(tmp_path)
    vscode(tdebug, ws)
    io = ws / "src" / "io" / "copy.cpp"
    results = {}

    def drop_libstdcxx(conf):
        info = conf["symbolLoadInfo"]
        info["exceptionList"] = ";".join(p for p in info["exceptionList"].split(";")
                                         if not p.startswith("libstdc++"))

    _, _, _, status, _ = debug_launch(procs, tmp_path, ws, "vec_main.py",
                                      [(io, marker_line(io, "MARK: io copy"))], [],
                                      tweak=drop_libstdcxx, on_breakpoint=look_at_v(results))
    assert status == 0
    assert results["children"] and results["children"][0][0].startswith("std::_Vector_base")


def test_a_library_built_after_tdebug_vscode_gets_its_symbols(tdebug, procs, tmp_path):
    """The list was written before liblate.so existed: its name is in no
    pattern, yet gdb reads its symbols (it is under the workspace) and the
    breakpoint in it is hit."""
    ws = cpp_workspace(tmp_path)
    w = vscode(tdebug, ws)
    listed = w.config("tdebug: vec_main.py (C++, gdb)")["symbolLoadInfo"]["exceptionList"]
    (ws / "late").mkdir()
    subprocess.run(["gcc", "-shared", "-fPIC", "-O0", "-g", "-o", "late/liblate.so", "late.c"],
                   cwd=ws, check=True)
    assert not any(re.fullmatch(p.replace(".", r"\.").replace("*", ".*").replace("?", "."),
                                "liblate.so") for p in listed.split(";"))
    late = ws / "late.c"
    line = marker_line(late, "MARK: late")
    log, _, _, status, loaded = debug_launch(procs, tmp_path, ws, "vec_main.py", [(late, line)], [])
    assert status == 0
    assert [(e[2]["func"], e[2]["file"], e[2]["line"]) for e in log.events] == [
        ("late_twice", str(late), line)]
    assert "liblate.so" not in loaded  # not MIEngine's doing: the workspace hook's


# ---------------------------------------------------------------------------
# The runner gdb starts the interpreter on (python/tdebug/_vscode_run.py)

PROBE = ("import json, os, sys\n"
         "print(json.dumps({'argv': sys.argv, 'path0': sys.path[0], 'name': __name__}))\n"
         "sys.exit(3)\n")


def test_the_runner_runs_a_script_as_python_would_after_its_wait(tmp_path):
    """Nobody attaches within the wait (the C++ side restarted alone): it
    says so and runs the script anyway, with the script's argv, its
    directory first on the path, its exit status."""
    script = tmp_path / "sub" / "prog.py"
    script.parent.mkdir()
    script.write_text(PROBE)
    port = free_port()
    try:
        r = run([PYTHON, str(RUNNER), f"127.0.0.1:{port}", "0.5", str(script), "a b", ""])
    finally:
        kill_adapters(port)
    assert r.returncode == 3
    assert json.loads(r.stdout) == {"argv": [str(script), "a b", ""], "path0": str(script.parent),
                                    "name": "__main__"}
    assert r.stderr.endswith(f"tdebug: no Python debugger attached to 127.0.0.1:{port} within "
                             "0.5 s: running without one (start the entry \"tdebug: ... (Python, "
                             "debugpy)\" to attach it now)\n")


def test_the_runner_runs_a_module_as_python_m_would(tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "__init__.py").write_text("")
    (tmp_path / "pkg" / "mod.py").write_text(PROBE)
    port = free_port()
    try:
        r = run([PYTHON, str(RUNNER), f"127.0.0.1:{port}", "0", "-m", "pkg.mod", "x"], cwd=tmp_path)
    finally:
        kill_adapters(port)
    assert r.returncode == 3
    assert json.loads(r.stdout) == {"argv": [str(tmp_path / "pkg" / "mod.py"), "x"],
                                    "path0": str(tmp_path), "name": "__main__"}
