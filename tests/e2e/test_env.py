"""'tdebug env': the variables that make programs started anywhere pause
at torch._C, checked by really exporting them in a shell."""
import json

from conftest import PYTHON, clean_env, run
from preload_util import LIB, RELEASE, finish, gdb_batch, start, wait_announced


def test_shell_output_is_exported_by_sh_and_pauses_torch(tdebug, tmp_path, procs,
                                                         torch_available):
    r = run([tdebug, "env", "--timeout", "never", "--announce", str(tmp_path / "a")])
    assert r.returncode == 0 and r.stderr == ""
    assert f"export LD_AUDIT='{LIB}'\n" in r.stdout
    assert "export TDEBUG_TIMEOUT='never'\n" in r.stdout
    assert "# Undo: unset LD_AUDIT TDEBUG_ACTION TDEBUG_TIMEOUT TDEBUG_ANNOUNCE\n" in r.stdout
    # A program started by another tool (here: sh) from that environment.
    script = tmp_path / "launch.sh"
    script.write_text(f'eval "$({tdebug} env --timeout never --announce {tmp_path}/a)"\n'
                      f"exec {PYTHON} -c 'import torch; print(\"done\")'\n")
    p, err = start(procs, ["sh", str(script)], clean_env())
    pid, module, _ = wait_announced(err)
    assert module == "torch._C"
    gdb_batch(pid, RELEASE)
    rc, out = finish(p)
    assert rc == 0 and out == "done\n"


def test_json_output(tdebug):
    r = run([tdebug, "env", "--json", "-w", "PyInit__C,PyInit_mine", "-f", "libcuda*",
             "-a", "log", "-t", "5", "-v", "-v", "--workers", "watch"])
    assert r.returncode == 0
    out = json.loads(r.stdout)
    assert list(out["set"]) == ["LD_AUDIT", "TDEBUG_ACTION", "TDEBUG_TIMEOUT", "TDEBUG_WATCH",
                                "TDEBUG_WATCH_FILES", "TDEBUG_WORKERS", "TDEBUG_VERBOSE"]
    assert out["set"]["TDEBUG_VERBOSE"] == "2"
    assert out["set"]["TDEBUG_ACTION"] == "log"
    assert out["unset"] == []
    assert out["announce"].endswith("/announce")


def test_stale_settings_are_unset_and_other_auditors_kept(tdebug):
    env = clean_env(TDEBUG_WATCH="old", TDEBUG_NOTIFY="fd:9", LD_AUDIT="/opt/other.so")
    r = run([tdebug, "env"], env=env)
    assert r.returncode == 0
    assert f"export LD_AUDIT='{LIB}:/opt/other.so'\n" in r.stdout
    assert "unset TDEBUG_WATCH TDEBUG_NOTIFY\n" in r.stdout


def test_notify_implies_the_notify_action(tdebug):
    out = json.loads(run([tdebug, "env", "--json", "--notify", "unix:/tmp/x", "--ack"]).stdout)
    assert out["set"]["TDEBUG_ACTION"] == "notify"
    assert out["set"]["TDEBUG_NOTIFY_ACK"] == "1"


def test_bad_options(tdebug):
    cases = [
        (["-t", "soon"], "tdebug env: invalid --timeout 'soon': not a number of seconds or 'never'"),
        (["-a", "jump"], "tdebug env: invalid --action 'jump': not wait, notify, log, trap or off"),
        (["-w", "a b"], "tdebug env: invalid --watch 'a b': not a comma-separated list of symbol names"),
        (["--notify", "tcp:1"], "tdebug env: invalid --notify 'tcp:1': not fd:N or unix:PATH"),
        (["--workers", "all"], "tdebug env: invalid --workers 'all': not skip or watch"),
        (["--ack", "-a", "log"], "tdebug env: --ack goes with --action notify, not 'log'"),
        (["--frobnicate"], "tdebug env: unknown option '--frobnicate'"),
        (["-t"], "tdebug env: option '-t' needs a value"),
        (["extra"], "tdebug env: unexpected argument 'extra'"),
    ]
    for args, message in cases:
        r = run([tdebug, "env", *args])
        assert r.returncode == 2, args
        assert r.stdout == ""
        assert r.stderr == message + "\nsee 'tdebug env --help'\n", args
