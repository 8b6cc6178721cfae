"""Helpers of the stepping tests (test_step_into.py, test_step_finish.py):
a 'tdebug run --json -x COMMANDS' session and the stops it printed."""
import json

from conftest import run


def line_of(path, text):
    """The 1-based number of the one line of PATH that holds TEXT."""
    lines = open(path).read().splitlines()
    hits = [i + 1 for i, line in enumerate(lines) if text in line]
    assert len(hits) == 1, (path, text, hits)
    return hits[0]


def events(stdout):
    return [json.loads(line) for line in stdout.splitlines() if line.strip()]


def stops(evs):
    return [e for e in evs if e["event"] == "stopped"]


def top(stop):
    return stop["stack"][0]


def session(tdebug, tmp_path, commands, *args, env=None, cwd=None):
    """tdebug run --json -x COMMANDS ARGS: (the result, its events)."""
    cmds = tmp_path / "cmds"
    cmds.write_text("".join(c + "\n" for c in commands))
    r = run([tdebug, "run", "--json", "-x", str(cmds)] + list(args), env=env, cwd=cwd)
    return r, events(r.stdout)
