"""tdebug dap driven by a client nobody here wrote: Microsoft's
@vscode/debugadapter-testsupport (DebugClient), the scenarios of
tests/dap/scenarios.js, each run with node; every message the adapter sent
is then checked against the DAP JSON Schema.

The scenarios that need what the session core does not do yet are marked
xfail(strict) with the reason: when the core gains it they pass, and
strict makes the run fail until the mark is taken off."""
import json
import os
import shutil
import subprocess

import pytest

from conftest import PYTHON, ROOT, SLOW, tracer_of, wait_until
from tdap_util import counter, program_pids_gone, schema_errors, start_target

DAP_TESTS = ROOT / "tests" / "dap"


@pytest.fixture
def node_client():
    node = shutil.which("node")
    if not node:
        pytest.skip("node is not installed (make deps installs nodejs)")
    if not (DAP_TESTS / "node_modules" / "@vscode" / "debugadapter-testsupport").is_dir():
        pytest.skip("@vscode/debugadapter-testsupport is not installed in tests/dap "
                    "(make deps runs 'npm ci' there)")
    return node


def run_scenario(node, tdebug, tmp_path, name, **env):
    transcript = tmp_path / "transcript.jsonl"
    e = dict(os.environ, TDEBUG=tdebug, TDAP_PYTHON=PYTHON, TDAP_DIR=str(tmp_path),
             TDAP_TRANSCRIPT=str(transcript), TDAP_OUT=str(tmp_path / "facts.json"), **env)
    r = subprocess.run([node, str(DAP_TESTS / "scenarios.js"), name], env=e, cwd=str(tmp_path),
                       capture_output=True, text=True, timeout=SLOW * 3)
    assert r.returncode == 0, r.stdout + r.stderr
    msgs = [json.loads(line) for line in transcript.read_text().splitlines()]
    assert msgs
    bad = [err for m in msgs for err in schema_errors(m)]
    assert not bad, "\n".join(bad[:20])
    return msgs


@pytest.mark.parametrize("name", [
    "function_breakpoint",
    "exception_breakpoint",
    "python_breakpoint",
    "step_in_to_cpp",
    "step_out_back",
    "step_in_targets",
    "variables_with_tensors",
])
def test_scenario(node_client, tdebug, tmp_path, torch_available, name):
    msgs = run_scenario(node_client, tdebug, tmp_path, name)
    assert any(m.get("event") == "stopped" for m in msgs)


@pytest.mark.parametrize("name", [
    "python_condition",
    "python_hit_condition",
    "python_logpoint",
    "python_condition_error",
    "python_evaluate",
])
def test_breakpoint_options(node_client, tdebug, tmp_path, name):
    msgs = run_scenario(node_client, tdebug, tmp_path, name)
    init = next(m for m in msgs if m.get("command") == "initialize")
    for cap in ("supportsConditionalBreakpoints", "supportsHitConditionalBreakpoints",
                "supportsLogPoints"):
        assert init["body"][cap] is True


def test_native_hit_condition(node_client, tdebug, tmp_path, torch_available):
    run_scenario(node_client, tdebug, tmp_path, "native_hit_condition")


def test_attach_and_disconnect_leaves_the_process_running(node_client, tdebug, procs, tmp_path,
                                                          torch_available):
    p, count = start_target(procs, tmp_path)
    run_scenario(node_client, tdebug, tmp_path, "attach_disconnect", TDAP_TARGET_PID=str(p.pid))
    assert p.poll() is None and tracer_of(p.pid) == 0
    now = counter(count)
    wait_until(lambda: counter(count) > now, what="the process to go on, untraced")


def test_client_dying_mid_session_ends_it(node_client, tdebug, tmp_path, torch_available):
    run_scenario(node_client, tdebug, tmp_path, "client_dies")
    facts = json.loads((tmp_path / "facts.json").read_text())
    # The adapter saw its input end: the program it launched is killed, and
    # the adapter is gone too.
    wait_until(lambda: program_pids_gone(facts["program"]), what="the launched program to end")
    wait_until(lambda: program_pids_gone(facts["adapter"]), what="the adapter to end")
