"""Distributed jobs on this machine: ranks and the launcher in 'tdebug ps',
'stacks --job' (the merged tree, --full, --json, which job), 'run --rank'
stopping one rank while the others go on, 'attach --rank'.  Ranks are
started as srun starts them (cluster_util.py); the agent is a launcher of
our own that gives its children torchelastic's variables, as torchrun
does (Debian's torchrun fails on Python 3.11 before it starts any)."""
import json
import os
import socket

import pytest

from cluster_util import start_local_job, straggler_seen, tree_json
from conftest import PYTHON, run, tracer_of, wait_until
from pty_util import Terminal

# A rank that does nothing much: rank 1 starts a worker of its own.
RANK_CODE = """
import os, subprocess, sys, time
if os.environ["RANK"] == "1":
    subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
def idle():
    while True:
        time.sleep(0.2)
idle()
"""

# torchrun's part: give each child its rank and torchelastic's run id.
AGENT_CODE = """
import os, subprocess, sys, time
code, run_id, port = sys.argv[1:4]
base = dict(os.environ, TORCHELASTIC_RUN_ID=run_id, MASTER_ADDR="127.0.0.1", MASTER_PORT=port,
            WORLD_SIZE="2", GROUP_RANK="0")
kids = [subprocess.Popen([sys.executable, "-c", code], env=dict(base, RANK=str(r),
                                                                 LOCAL_RANK=str(r)))
        for r in (0, 1)]
for k in kids:
    k.wait()
"""


def ps_rows(tdebug):
    r = run([tdebug, "ps", "--json"])
    assert r.returncode == 0, r.stderr
    return {p["pid"]: p for p in json.loads(r.stdout)["processes"]}


def job_members(tdebug, job_id):
    """{pid: job fields} of the processes 'ps' puts in JOB_ID."""
    return {pid: p["job"] for pid, p in ps_rows(tdebug).items()
            if p["job"] and p["job"]["id"] == job_id}


@pytest.fixture
def elastic_job(procs):
    """An agent, its two ranks and rank 1's worker; the job's id."""
    run_id = "tdebug-test-" + os.urandom(4).hex()
    agent = procs.start([PYTHON, "-c", AGENT_CODE, RANK_CODE, run_id, "29511"])
    return run_id, agent


def test_ps_shows_the_job_the_ranks_the_agent_and_a_worker(tdebug, elastic_job):
    run_id, agent = elastic_job
    members = wait_until(lambda: (lambda m: m if len(m) == 4 else None)(
        job_members(tdebug, run_id)), what="the agent, two ranks and a worker")
    roles = sorted((j["role"], j["rank"]) for j in members.values())
    assert roles == [("agent", None), ("rank", 0), ("rank", 1), ("worker", 1)]
    assert members[agent.pid]["role"] == "agent"
    for pid, j in members.items():
        assert j["id_from"] == "TORCHELASTIC_RUN_ID" and j["launcher"] == agent.pid
        if j["role"] != "agent":
            assert j["world_size"] == 2 and j["group_rank"] == 0
    (worker,) = [pid for pid, j in members.items() if j["role"] == "worker"]
    rank1 = [pid for pid, j in members.items() if j["role"] == "rank" and j["rank"] == 1][0]
    assert members[worker]["rank_pid"] == rank1
    text = run([tdebug, "ps", "--wide"]).stdout
    head, *lines = text.splitlines()
    assert "JOB" in head.split() and "RANK" in head.split()
    rows = {int(l.split()[0]): l.split() for l in lines}
    at = head.split().index("JOB")
    cells = {pid: rows[pid][at:at + 2] for pid in members}
    assert cells[agent.pid] == [run_id, "agent"]
    assert cells[rank1] == [run_id, "1/2"]
    assert cells[worker] == [run_id, "1/2(worker)"]


def test_attach_by_rank(tdebug, elastic_job):
    run_id, _ = elastic_job
    members = wait_until(lambda: (lambda m: m if len(m) == 4 else None)(
        job_members(tdebug, run_id)), what="the job's processes")
    rank1 = [pid for pid, j in members.items() if j["role"] == "rank" and j["rank"] == 1][0]
    r = run([tdebug, "attach", "--rank", "1", "--job", run_id, "--batch"])
    assert r.returncode == 0, r.stderr
    assert f"tdebug: rank 1 of job '{run_id}' is pid {rank1}" in r.stderr
    assert f"tdebug: attached to pid {rank1}" in r.stdout + r.stderr
    assert "in idle\n" in r.stdout
    assert tracer_of(rank1) == 0  # detached, running
    r = run([tdebug, "attach", "--rank", "5", "--job", run_id])
    assert r.returncode == 1
    assert (f"tdebug: rank 5 of job '{run_id}' does not run here (ranks here: ranks 0,1); the "
            "job's WORLD_SIZE is smaller") in r.stderr
    r = run([tdebug, "attach", "--rank", "1", "--job", "no-such-job"])
    assert r.returncode == 1 and "no job 'no-such-job' runs here" in r.stderr



def test_dap_attach_by_rank(tdebug, procs, tmp_path, elastic_job):
    """The DAP's attach takes 'rank' (and 'job') as 'attach --rank' does."""
    from tdap_util import Adapter
    run_id, _ = elastic_job
    members = wait_until(lambda: (lambda m: m if len(m) == 4 else None)(
        job_members(tdebug, run_id)), what="the job's processes")
    rank1 = [pid for pid, j in members.items() if j["role"] == "rank" and j["rank"] == 1][0]
    dap = Adapter.start(tdebug, procs, tmp_path)
    dap.initialize()
    dap.start_program("attach", {"rank": 1, "job": run_id, "stopOnEntry": True})
    assert dap.process_pid() == rank1
    i, stop = dap.stopped()
    assert f"rank 1 of job '{run_id}' is pid {rank1}" in dap.outputs("console")
    dap.finish()
    wait_until(lambda: tracer_of(rank1) == 0, what="rank 1 detached")
    # A rank that does not run here: refused with the ranks that do.
    again = tmp_path / "again"
    again.mkdir()
    dap = Adapter.start(tdebug, procs, again)
    dap.initialize()
    r = dap.request("attach", {"rank": 5, "job": run_id}, check=False)
    assert not r["success"] and "ranks here: ranks 0,1" in r["message"], r
    dap.finish()


@pytest.fixture
def gloo_job(procs, tmp_path, torch_available):
    """Four gloo ranks here, rank 2 the straggler."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ranks = start_local_job(procs, tmp_path, 4, port, straggler=2)
    return f"127.0.0.1:{port}", [p.pid for p in ranks]


def job_doc(tdebug, *args):
    r = run([tdebug, "stacks", "--job", *args, "--json"])
    return (json.loads(r.stdout) if r.stdout.strip() else None), r


def parted(tdebug, job_id):
    """'stacks --job JOB_ID --json' once ranks 0,1,3 wait in all_reduce and
    rank 2 is in load_batch, else None."""
    doc, r = job_doc(tdebug, job_id)
    return (doc, r) if straggler_seen(doc, "0,1,3", "2") else None


def test_stacks_job_groups_the_ranks(tdebug, gloo_job):
    job_id, pids = gloo_job
    doc, r = wait_until(lambda: parted(tdebug, job_id),
                        what="ranks 0,1,3 in all_reduce and rank 2 in load_batch")
    assert r.returncode == 0, r.stderr
    assert doc["version"] == 1
    assert doc["job"] == {"id": job_id, "id_from": "MASTER_ADDR:MASTER_PORT", "world_size": 4}
    assert [(x["rank"], x["pid"]) for x in doc["ranks"]] == list(enumerate(pids))
    assert doc["missing_ranks"] == [] and doc["errors"] == []
    (host,) = doc["hosts"]
    assert host["local"] and host["status"] == "ok" and host["ranks"] == [0, 1, 2, 3]
    main = tree_json(doc)["main"]
    assert main["rank_set"] == "0-3" and main["ranks"] == [0, 1, 2, 3]
    assert [f["function"] for f in main["frames"] if f["kind"] == "python"][-2:] == \
        ["<module>", "main"]
    # Each rank's whole stacks are there too.
    straggler = doc["ranks"][2]["stacks"]
    assert straggler["pid"] == pids[2]

    text = run([tdebug, "stacks", "--job", job_id]).stdout
    assert text.startswith(f"Job '{job_id}' (MASTER_ADDR:MASTER_PORT): ranks 0-3 of 4, 1 host\n")
    main_text = text.split("\n\nMain thread, ranks 0-3:\n", 1)[1].split("\n\n")[0]
    assert "\n  [ranks 0,1,3]\n" in main_text and "\n  [rank 2]\n" in main_text
    assert main_text.index("in all_reduce") < main_text.index("[rank 2]") < \
        main_text.index("in load_batch")

    full = run([tdebug, "stacks", "--job", job_id, "--full", "--python"]).stdout
    host_name = socket.gethostname()
    for rank, pid in enumerate(pids):
        assert f"\nRank {rank} on {host_name}, pid {pid} (Python " in full
    assert full.index("\nRank 2 on") < full.index("in load_batch\n", full.index("\nRank 2 on"))


def test_which_job(tdebug, gloo_job, elastic_job):
    job_id, _ = gloo_job
    run_id, _ = elastic_job
    wait_until(lambda: len(job_members(tdebug, run_id)) == 4, what="the second job")
    r = run([tdebug, "stacks", "--job"])
    assert r.returncode == 1
    assert "distributed jobs run here:" in r.stderr and "(say which with --job ID)" in r.stderr
    assert f"'{job_id}' (ranks 0-3 of 4, launcher {os.getpid()})" in r.stderr
    assert f"'{run_id}' (ranks 0,1 of 2, launcher " in r.stderr
    doc, r = job_doc(tdebug, run_id)
    assert r.returncode == 0, r.stderr
    assert [x["rank"] for x in doc["ranks"]] == [0, 1]  # not the worker, not the agent
    r = run([tdebug, "stacks", "--job", "nope", "--json"])
    assert r.returncode == 1
    doc = json.loads(r.stdout)
    assert doc["job"] is None and "no job 'nope' runs here" in doc["errors"][0]["error"]


# --- run --rank

# Ranks other than 1 finish only once the file "go" exists: the test
# makes it while rank 1 is held.
RANK_SCRIPT = """\
import os, sys, time
rank = int(os.environ["RANK"])
import torch
def work(n):
    return (torch.ones(3) * n).sum().item()
while rank != 1 and not os.path.exists("go"):
    time.sleep(0.05)
print(f"rank {rank} done {work(rank)}", flush=True)
"""


def test_run_rank_stops_one_rank_while_the_others_go_on(tdebug, tmp_path, torch_available):
    (tmp_path / "rank.py").write_text(RANK_SCRIPT)
    launch = tmp_path / "launch.sh"
    launch.write_text("#!/bin/sh\ncd \"$(dirname \"$0\")\"\nfor r in 0 1 2; do\n"
                      f"  RANK=$r LOCAL_RANK=$r WORLD_SIZE=3 {PYTHON} rank.py &\n"
                      "done\nwait\n")
    launch.chmod(0o755)
    where = f"{tmp_path / 'rank.py'}:5"
    term = Terminal([tdebug, "run", "--rank", "1", "-b", where, "--", str(launch)])
    try:
        term.expect(f"tdebug: stopped at Python breakpoint 1 ({where})")
        term.expect("(tdebug) ")
        # Rank 1 is held by tdebug's gdb; ranks 0 and 2 ran untraced, and
        # finish while it is held.
        ranks = {}
        for pid in os.listdir("/proc"):
            try:
                with open(f"/proc/{pid}/environ", "rb") as f:
                    env = dict(kv.split(b"=", 1) for kv in f.read().split(b"\0") if b"=" in kv)
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    if b"rank.py" in f.read() and env.get(b"WORLD_SIZE") == b"3":
                        ranks[int(env[b"RANK"])] = int(pid)
            except (OSError, KeyError, ValueError):
                continue
        assert 1 in ranks and tracer_of(ranks[1]) != 0
        for r in (0, 2):
            if r in ranks:
                assert tracer_of(ranks[r]) == 0
        (tmp_path / "go").write_text("")
        seen = ""
        while "rank 0 done 0.0\n" not in seen or "rank 2 done 6.0\n" not in seen:
            seen += term.expect("\n").replace("\r", "")  # whole lines, in either order
        assert "rank 1 done" not in seen
        assert tracer_of(ranks[1]) != 0
        term.send("continue")
        term.expect("rank 1 done 3.0")
        term.expect("tdebug: program exited with status 0")
        assert term.wait() == 0
    finally:
        term.close()


def test_run_rank_that_never_comes(tdebug, tmp_path, torch_available):
    (tmp_path / "rank.py").write_text(RANK_SCRIPT)
    (tmp_path / "go").write_text("")
    r = run([tdebug, "run", "--rank", "4", "--batch", "--", "sh", "-c",
             f"RANK=0 WORLD_SIZE=1 {PYTHON} rank.py"], cwd=str(tmp_path))
    assert r.returncode == 1, r.stderr
    assert "rank 0 done 0.0" in r.stdout + r.stderr
    assert ("no process of the job with RANK=4 in its environment loaded torch._C, so tdebug "
            "never attached") in r.stdout + r.stderr


def test_run_rank_usage(tdebug):
    r = run([tdebug, "run", "--rank", "x", "--", "true"])
    assert r.returncode == 2 and "--rank 'x' is not a rank" in r.stderr
    r = run([tdebug, "run", "--rank", "1"])
    assert r.returncode == 2 and "--rank needs the command that starts the job" in r.stderr
    r = run([tdebug, "run", "--rank", "1", "--", "/nonexistent/launch"])
    assert r.returncode == 127 and "cannot run '/nonexistent/launch'" in r.stderr
