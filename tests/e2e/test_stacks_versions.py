"""'tdebug stacks' on every CPython it reads (3.8 to 3.13: pyenv's
interpreters, with a shared libpython), whatever Python tdebug was built
for: nested calls, deep recursion, a generator resumed from C, a coroutine,
threads with their threading names, and a subinterpreter, each merged with
the native stack.  A version missing from the machine is skipped, saying
so."""
import json
import re

import pytest

from conftest import run, wait_until
from stacks_util import PY_VERSIONS, kinds_and_names, python_or_skip, stacks_json, start_ready

DEPTH = 300

PROGRAM = r"""
import asyncio, sys, threading, time
def produce():
    yield 1
    print("ready", flush=True)
    time.sleep(1000)                                   # line 6
    yield 2
def gen_consume():
    g = produce()
    next(g)
    return next(g)                                     # line 11
def deep(n):
    if n == 0:
        return gen_consume()                           # line 14
    return deep(n - 1)                                 # line 15
async def coro_leaf():
    time.sleep(1000)                                   # line 17
async def coro_main():
    await coro_leaf()                                  # line 19
def coro_thread():
    asyncio.run(coro_main())
def named_sleeper():
    time.sleep(1000)                                   # line 23
threading.Thread(target=coro_thread, name="coro-runner", daemon=True).start()
threading.Thread(target=named_sleeper, name="sleeper-\u00e9", daemon=True).start()
sys.setrecursionlimit(10000)
deep(%d)                                               # line 27
""" % DEPTH


def python_frames(t):
    return [(f["name"], f["line"]) for f in t["frames"] if f["kind"] == "python"]


def settled(tdebug, pid):
    doc, _ = stacks_json(tdebug, pid)
    proc = doc["processes"][0]
    by_name = {t.get("python_name"): t for t in proc["threads"]}
    main = by_name.get("MainThread")
    coro = by_name.get("coro-runner")
    sleeper = by_name.get("sleeper-\u00e9")
    if not (main and coro and sleeper):
        return None
    # Each in its time.sleep (the main thread prints "ready" just before).
    tops = [python_frames(t)[:1] for t in (main, coro, sleeper)]
    if tops != [[("produce", 6)], [("coro_leaf", 17)], [("named_sleeper", 23)]] or \
            not all(t["frames"][0]["kind"] == "native" for t in (main, coro, sleeper)):
        return None
    return proc, main, coro, sleeper


@pytest.mark.parametrize("version", PY_VERSIONS)
def test_every_version_live(tdebug, procs, version):
    exe = python_or_skip(version)
    p = start_ready(procs, [exe, "-c", PROGRAM])
    proc, main, coro, sleeper = wait_until(lambda: settled(tdebug, p.pid),
                                           what=f"the {version} program to settle")
    assert proc["python"].startswith(version + "."), proc["python"]
    assert proc["notes"] == [], proc["notes"]
    assert main["tid"] == p.pid
    for t in (main, coro, sleeper):
        assert t["merge"] == "ok", (version, t["python_name"], t)
        assert t["tid"] > 0 and t["interpreter"] == 0
    frames = python_frames(main)
    assert frames[:3] == [("produce", 6), ("gen_consume", 11), ("deep", 14)], frames[:4]
    assert frames[3:3 + DEPTH] == [("deep", 15)] * DEPTH
    assert frames[-1] == ("<module>", 27) and len(frames) == DEPTH + 4
    words = kinds_and_names(main["frames"])
    # time.sleep's C frames above produce.
    assert words[0].startswith("c:") and words.index("py:produce") > 0
    cframes = python_frames(coro)
    assert cframes[:2] == [("coro_leaf", 17), ("coro_main", 19)], cframes
    assert cframes[-1][0] == "_bootstrap" and ("coro_thread", 21) in cframes
    assert python_frames(sleeper)[0] == ("named_sleeper", 23)

    # Raw: one evaluator per Python frame up to 3.10; from 3.11 Python
    # calls Python without one.
    raw, _ = stacks_json(tdebug, "--raw", p.pid)
    rmain = next(t for t in raw["processes"][0]["threads"] if t["tid"] == p.pid)
    rwords = kinds_and_names(rmain["frames"])
    evals = rwords.count("c:_PyEval_EvalFrameDefault")
    # The generator resumed by next(), a C builtin: its evaluator call and
    # next()'s C frames between produce and gen_consume.
    between = rwords[rwords.index("py:produce") + 1:rwords.index("py:gen_consume")]
    assert "c:_PyEval_EvalFrameDefault" in between and len(between) >= 2, between
    if version in ("3.8", "3.9", "3.10"):
        assert evals == DEPTH + 4
    else:
        assert evals < 8, evals

    text = run([tdebug, "stacks", str(p.pid)]).stdout
    assert re.search(r'^Process %d \(Python %s\.\d+\): ' % (p.pid, re.escape(version)), text, re.M)
    assert re.search(r'^Thread %d "[^"]*", threading "sleeper-\u00e9"' % sleeper["tid"], text, re.M)
    assert '  File "<string>", line 6, in produce\n' in text


SUBINTERP = r"""
import threading, time, sys
try:
    import _interpreters as interpreters
except ImportError:
    import _xxsubinterpreters as interpreters
CODE = '''
import time
def in_sub():
    time.sleep(1000)
in_sub()
'''
def host():
    iid = interpreters.create()
    print("ready", flush=True)
    if hasattr(interpreters, "run_string"):
        interpreters.run_string(iid, CODE)
    else:
        interpreters.exec(iid, CODE)
t = threading.Thread(target=host, name="host", daemon=True)
t.start()
time.sleep(1000)
"""


@pytest.mark.parametrize("version", PY_VERSIONS)
def test_subinterpreter_merged_into_its_thread(tdebug, procs, version):
    exe = python_or_skip(version)
    p = start_ready(procs, [exe, "-c", SUBINTERP])

    def running():
        doc, _ = stacks_json(tdebug, p.pid)
        proc = doc["processes"][0]
        for t in proc["threads"]:
            names = [f["name"] for f in t["frames"] if f["kind"] == "python"]
            if "in_sub" in names and "host" in names:
                return proc, t
        return None
    proc, t = wait_until(running, what=f"the {version} subinterpreter to run")
    # One OS thread, two thread states: the subinterpreter's frames on top
    # of the main interpreter's that called into it; no orphan entries.
    assert t["python_states"] == 2 and t["interpreter"] > 0 and t["tid"] > 0
    names = [f["name"] for f in t["frames"] if f["kind"] == "python"]
    assert names.index("in_sub") < names.index("host")
    assert all(th["tid"] > 0 for th in proc["threads"]), proc["threads"]
    assert t["merge"] == "ok", t
    text = run([tdebug, "stacks", str(p.pid)]).stdout
    assert "Python thread 0x" not in text
    assert re.search(r'^Thread %d "[^"]*", threading "host", interpreter \d+' % t["tid"], text,
                     re.M), text


LOCALS = r"""
import sys, time
COUNT = 3
class Thing:
    pass
def outer(a, b="x\n'q'", *args, **kw):
    big = 2 ** 70
    f = 0.1
    s = "h\u00e9llo"
    by = b"\x00\xffab"
    d = {"k": [1, (2,)], 3: None}
    obj = Thing()
    cell = COUNT
    def inner():
        free = cell
        print("ready", flush=True)
        time.sleep(1000)
    inner()
outer(1, args=None)
"""

WANT_OUTER = {"a": "1", "b": "'x\\n\\'q\\''", "args": "()", "kw": "{'args': None}",
              "big": "1180591620717411303424", "f": "0.1", "s": "'h\u00e9llo'",
              "by": "b'\\x00\\xffab'", "d": "{'k': [1, (2,)], 3: None}", "cell": "3"}


def sleeping_at(tdebug, pid, version, name, line):
    """The main thread of PID, with its locals, once its innermost Python
    frame is NAME at LINE, called into native code (a time.sleep)."""
    def at():
        doc, _ = stacks_json(tdebug, "--locals", pid)
        t = doc["processes"][0]["threads"][0]
        py = t.get("python_frames") or [f for f in t.get("frames", []) if f["kind"] == "python"]
        return t if py and (py[0]["name"], py[0]["line"]) == (name, line) and \
            ("frames" not in t or t["frames"][0]["kind"] == "native") else None
    return wait_until(at, what=f"the {version} program to sleep")


def locals_of(frames, name):
    f = next(f for f in frames if f["kind"] == "python" and f["name"] == name)
    return {v["name"]: v for v in f["locals"]}


@pytest.mark.parametrize("version", PY_VERSIONS)
def test_locals_on_every_version(tdebug, procs, version):
    exe = python_or_skip(version)
    p = start_ready(procs, [exe, "-c", LOCALS])
    t = sleeping_at(tdebug, p.pid, version, "inner", 17)
    outer = locals_of(t["frames"], "outer")
    for name, value in WANT_OUTER.items():
        assert outer[name]["value"] == value, (name, outer[name])
    assert outer["cell"]["kind"] == "cell" and outer["a"]["kind"] == "local"
    assert outer["obj"]["type"] == "Thing"
    assert outer["obj"]["value"] == "Thing()"  # an instance with no attribute yet
    assert outer["s"]["length"] == 5 and outer["d"]["length"] == 2
    inner = locals_of(t["frames"], "inner")
    assert inner["free"]["value"] == "3" and inner["free"]["kind"] == "local"
    assert inner["cell"]["kind"] == "free" and inner["cell"]["value"] == "3"
    module = locals_of(t["frames"], "<module>")
    assert module["COUNT"] == {"name": "COUNT", "kind": "global", "type": "int", "value": "3",
                               "address": module["COUNT"]["address"]}
    assert module["Thing"]["value"] == "<class 'Thing'>" and "__name__" not in module
    text = run([tdebug, "stacks", "--locals", "--python", str(p.pid)]).stdout
    assert "  File \"<string>\", line 18, in outer\n" in text
    assert "\n      big = 1180591620717411303424\n" in text
    assert "\n      COUNT = 3\n" in text


VALUES = r"""
import sys, time
class Foo:
    def __init__(self):
        self.a = 1
        self.b = 'x'
    def bar(self):
        pass
class Slotted:
    __slots__ = ("z",)
def f():
    st = {1, 2}
    fs = frozenset({1})
    empty = set()
    efs = frozenset()
    exc = ValueError('x', 3)
    exc1 = KeyError('k')
    foo = Foo()
    bound = foo.bar
    app = [].append
    ln = len
    fr = sys._getframe()
    lst = [3, 4, 5]
    lst.append(lst)
    dct = {'a': 1}
    dct['self'] = dct
    sl = Slotted()
    print("ready", flush=True)
    time.sleep(1000)                                   # line 29
f()
"""

WANT_VALUES = {"st": "{1, 2}", "fs": "frozenset({1})", "empty": "set()", "efs": "frozenset()",
               "exc": "ValueError('x', 3)", "exc1": "KeyError('k')", "foo": "Foo(a=1, b='x')",
               "bound": "<bound method Foo.bar of Foo(a=1, b='x')>",
               "ln": "<built-in function len>", "lst": "[3, 4, 5, [...]]",
               "dct": "{'a': 1, 'self': {...}}"}
WANT_VALUES_AT = {"app": r"<built-in method append of list object at 0x[0-9a-f]+>",
                  "fr": r"<frame at 0x[0-9a-f]+, file '<string>', line 29, code f>",
                  "sl": r"<Slotted object at 0x[0-9a-f]+>"}


@pytest.mark.parametrize("version", PY_VERSIONS + ["debian"])
def test_values_as_python_shows_them(tdebug, procs, version):
    # issue 26: sets, exceptions, instances, methods and frames were all
    # "<set object at 0x...>", and a list holding itself was cut by depth
    exe = "/usr/bin/python3" if version == "debian" else python_or_skip(version)
    p = start_ready(procs, [exe, "-c", VALUES])
    t = sleeping_at(tdebug, p.pid, version, "f", 29)
    got = locals_of(t["frames"], "f")
    assert {k: got[k]["value"] for k in WANT_VALUES} == WANT_VALUES, version
    for name, want in WANT_VALUES_AT.items():
        assert re.fullmatch(want, got[name]["value"]), (version, name, got[name]["value"])
    assert got["lst"]["length"] == 4 and got["st"]["type"] == "set"


DEEP = r"""
import sys, time
sys.setrecursionlimit(10000)
def deep(n):
    marker = n
    if n == 0:
        print("ready", flush=True)
        time.sleep(1000)                               # line 8
    return deep(n - 1)
deep(3000)
"""


@pytest.mark.parametrize("version", PY_VERSIONS)
def test_json_locals_kept_when_the_stacks_do_not_line_up(tdebug, procs, version):
    # issue 26: with a native stack cut short by deep recursion (3.8-3.10:
    # a C frame each Python call) the stacks are shown apart, and the JSON
    # dropped every local the text showed
    exe = python_or_skip(version)
    p = start_ready(procs, [exe, "-c", DEEP])
    t = sleeping_at(tdebug, p.pid, version, "deep", 8)
    py = t.get("python_frames") or [f for f in t["frames"] if f["kind"] == "python"]
    deep = [f for f in py if f["name"] == "deep"]
    assert len(deep) == 3001, (version, t["merge"])
    markers = [{v["name"]: v["value"] for v in f["locals"]}["marker"] for f in deep]
    assert markers == [str(i) for i in range(3001)], (version, t["merge"])
    text = run([tdebug, "stacks", "--locals", str(p.pid)]).stdout
    assert text.count("      marker = ") == 3001


MARKS = r"""
import gc, os, signal, threading, time
def in_handler(signum, frame):
    time.sleep(1000)
def collecting(phase, info):
    if phase == "start" and threading.current_thread().name == "collector":
        time.sleep(1000)
def collector():
    gc.callbacks.append(collecting)
    gc.collect()
threading.Thread(target=collector, name="collector", daemon=True).start()
signal.signal(signal.SIGUSR1, in_handler)
print("ready", flush=True)
os.kill(os.getpid(), signal.SIGUSR1)
"""


@pytest.mark.parametrize("version", PY_VERSIONS + ["debian"])
def test_signal_handler_and_collector_marks(tdebug, procs, version):
    exe = "/usr/bin/python3" if version == "debian" else python_or_skip(version)
    p = start_ready(procs, [exe, "-c", MARKS])

    def marked():
        doc, _ = stacks_json(tdebug, p.pid)
        ts = {t["python_name"]: t for t in doc["processes"][0]["threads"]}
        main, coll = ts.get("MainThread"), ts.get("collector")
        if main and coll and python_frames(main)[:1] == [("in_handler", 4)] and \
                python_frames(coll)[:1] == [("collecting", 7)] and \
                main["frames"][0]["kind"] == coll["frames"][0]["kind"] == "native":
            return main, coll
        return None
    main, coll = wait_until(marked, what=f"the {version} handler and collector to sleep")
    assert main["in_signal"] is True and main["gc"] is False
    assert coll["gc"] is True and coll["in_signal"] is False
    text = run([tdebug, "stacks", str(p.pid)]).stdout
    assert re.search(r'^Thread \d+ "[^"]*", threading "MainThread" \(in a signal handler\):$',
                     text, re.M), text
    assert re.search(r'^Thread \d+ "[^"]*", threading "collector" \(collecting garbage\):$',
                     text, re.M), text


def test_313_reads_the_runtime_offsets_and_agrees_with_the_table(tdebug, procs):
    """3.13 publishes its offsets (_Py_DebugOffsets): they are what tdebug
    uses (so 3.14 is read the same way, with no table of its own), and the
    table generated from the headers gives the same stacks."""
    exe = python_or_skip("3.13")
    p = start_ready(procs, [exe, "-c", PROGRAM])
    wait_until(lambda: settled(tdebug, p.pid), what="the 3.13 program to settle")
    r = run([tdebug, "stacks", "--verbose", "--json", str(p.pid)])
    assert "layout: _Py_DebugOffsets of the process (headers of CPython 3.13.0), headers of " \
           "CPython 3.13.0 for the rest" in r.stderr, r.stderr
    from conftest import clean_env
    table = run([tdebug, "stacks", "--verbose", "--json", str(p.pid)],
                env=clean_env(TDEBUG_PY_OFFSETS="table"))
    assert "layout: headers of CPython 3.13.0\n" in table.stderr, table.stderr

    def frames(doc):
        return {t["tid"]: (t["python_name"], python_frames(t)) for t in
                json.loads(doc)["processes"][0]["threads"]}
    assert frames(r.stdout) == frames(table.stdout)
