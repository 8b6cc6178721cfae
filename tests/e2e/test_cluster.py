"""A 4-rank gloo job across two "hosts" (cluster_util.TwoHosts: network,
PID, mount and UTS namespaces joined by a veth pair, an sshd in each),
rank 2 a straggler: 'stacks --job --hosts' groups the ranks right from
either side; a host that is down, unknown, or asks for a password, and one
without tdebug, are each named with the reason while the rest is shown;
seen from this machine (the host of both "containers"), every rank keeps
its Python frames and both its pids are named."""
import json

import pytest

from cluster_util import (TwoHosts, branches, host_pids, need_root_and_tools, straggler_seen,
                          tree_json, write_job)
from conftest import Procs, SLOW, run, wait_until, tdebug_path


@pytest.fixture(scope="module")
def cluster(tmp_path_factory, torch_available):
    need_root_and_tools()
    tmp = tmp_path_factory.mktemp("cluster")
    procs = Procs()
    hosts = TwoHosts(tmp)
    try:
        with hosts:
            script = write_job(tmp)
            hosts.ranks = hosts.start_job(procs, script, straggler=2)
            yield hosts
    finally:
        procs.cleanup()


def job(cluster, side, hosts, *extra, timeout=SLOW):
    """'stacks --job --json' run on SIDE over HOSTS (a list), through the
    test's ssh config; (document, result)."""
    t = tdebug_path()
    r = side.run([t, "stacks", "--job", "--json", "--hosts", ",".join(hosts), "--ssh",
                  cluster.ssh_cmd, "--remote-tdebug", t, *extra], timeout=timeout)
    try:
        return json.loads(r.stdout), r
    except ValueError:
        raise AssertionError(f"not JSON (exit {r.returncode}): {r.stdout!r}\n{r.stderr}")


def grouped(cluster, side, hosts, *extra):
    """The document once the straggler test's grouping shows (the ranks
    may still be on their way into all_reduce at first)."""
    def attempt():
        doc, r = job(cluster, side, hosts, *extra)
        return (doc, r) if straggler_seen(doc, "0,1,3", "2") else None
    return wait_until(attempt, what="ranks 0,1,3 in all_reduce and rank 2 in load_batch")


def check_grouping(cluster, doc, order):
    assert doc["job"] == {"id": cluster.job_id, "id_from": "MASTER_ADDR:MASTER_PORT",
                          "world_size": 4}
    assert [h["host"] for h in doc["hosts"]] == order
    by_host = {h["host"]: h for h in doc["hosts"]}
    assert all(h["status"] == "ok" for h in doc["hosts"])
    assert [x["rank"] for x in doc["ranks"]] == [0, 1, 2, 3]
    assert doc["missing_ranks"] == [] and doc["errors"] == []
    main = tree_json(doc)["main"]
    assert main["rank_set"] == "0-3"
    assert branches(main) == {"0,1,3": "all_reduce", "2": "load_batch"}
    return by_host


def test_grouped_from_side_a(cluster):
    a, b = cluster.a, cluster.b
    doc, r = grouped(cluster, a, [a.name, b.name])
    assert r.returncode == 0, r.stderr
    hosts = check_grouping(cluster, doc, [a.name, b.name])
    assert hosts[a.name]["local"] and not hosts[b.name]["local"]  # read directly, by its name
    assert hosts[a.name]["ranks"] == [0, 1] and hosts[b.name]["ranks"] == [2, 3]
    for x in doc["ranks"]:
        assert x["host"] == (a.name if x["rank"] < 2 else b.name)
        assert x["stacks"]["pid"] == x["pid"]

    t = tdebug_path()
    hostfile = cluster.tmp / "hosts"
    hostfile.write_text(f"# the job's nodes\n{a.name} slots=2\n{b.name} slots=2\n")
    r = a.run([t, "stacks", "--job", "--hostfile", hostfile, "--ssh", cluster.ssh_cmd,
               "--remote-tdebug", t, "--python"])
    assert r.returncode == 0, r.stderr
    head = r.stdout.split("\n\n")[0].splitlines()
    assert head[0] == f"Job '{cluster.job_id}' (MASTER_ADDR:MASTER_PORT): ranks 0-3 of 4, 2 hosts"
    assert head[1].startswith(f"  {a.name}: ranks 0,1 (pids ")
    assert head[2].startswith(f"  {b.name}: ranks 2,3 (pids ")
    assert "\n  [ranks 0,1,3]\n" in r.stdout and "\n  [rank 2]\n" in r.stdout


def test_grouped_from_side_b(cluster):
    a, b = cluster.a, cluster.b
    doc, r = grouped(cluster, b, [a.name, b.name], "--python")
    assert r.returncode == 0, r.stderr
    hosts = check_grouping(cluster, doc, [a.name, b.name])
    assert not hosts[a.name]["local"] and hosts[b.name]["local"]
    # --full: every rank's whole stack after the tree, named by host.
    t = tdebug_path()
    r = b.run([t, "stacks", "--job", "--full", "--python", "--hosts", f"{a.name},{b.name}",
               "--ssh", cluster.ssh_cmd, "--remote-tdebug", t])
    assert r.returncode == 0, r.stderr
    full = r.stdout.split("\nRank 0 on ", 1)[1]
    for rank, host in ((1, a.name), (2, b.name), (3, b.name)):
        assert f"\nRank {rank} on {host}, pid " in full
    assert "in load_batch" in full.split("\nRank 2 on ")[1].split("\nRank 3 on ")[0]


def test_hosts_that_cannot_be_read_are_named(cluster):
    a, b = cluster.a, cluster.b
    hosts = [a.name, b.name, cluster.down, cluster.password, cluster.unknown]
    doc, r = job(cluster, a, hosts, "--python", "--timeout", "60")
    assert r.returncode == 1
    status = {h["host"]: h["status"] for h in doc["hosts"]}
    assert status == {a.name: "ok", b.name: "ok", cluster.down: "unreachable",
                      cluster.password: "refused", cluster.unknown: "unknown-host"}
    assert [x["rank"] for x in doc["ranks"]] == [0, 1, 2, 3]  # the rest is shown
    lines = r.stderr.splitlines()

    def line(host):
        (l,) = [l for l in lines if l.startswith(f"tdebug: host '{host}': ")]
        return l
    assert "the host does not answer" in line(cluster.down)
    assert "No route to host" in line(cluster.down) or "timed out" in line(cluster.down)
    assert "asks for a password or a key" in line(cluster.password)
    assert "Permission denied" in line(cluster.password) and "batch mode" in line(cluster.password)
    assert "unknown host" in line(cluster.unknown)
    assert "Could not resolve hostname" in line(cluster.unknown)

    # The text output still has the tree, and says which hosts were not read.
    t = tdebug_path()
    r = a.run([t, "stacks", "--job", "--python", "--hosts", ",".join(hosts), "--ssh",
               cluster.ssh_cmd, "--remote-tdebug", t, "--timeout", "60"])
    assert r.returncode == 1
    assert f"  {cluster.down}: not read (unreachable)\n" in r.stdout
    assert f"  {cluster.password}: not read (refused)\n" in r.stdout
    assert "\n  [rank 2]\n" in r.stdout


def test_host_without_tdebug(cluster):
    a, b = cluster.a, cluster.b
    r = a.run([tdebug_path(), "stacks", "--job", "--hosts", f"{a.name},{b.name}", "--ssh",
               cluster.ssh_cmd, "--remote-tdebug", "/nonexistent/tdebug", "--python"])
    assert r.returncode == 1
    assert (f"tdebug: host '{b.name}': tdebug does not run there: bash: line 1: "
            "/nonexistent/tdebug: No such file or directory") in r.stderr
    assert "--remote-tdebug" in r.stderr
    assert "ranks 0,1 of 4" in r.stdout.splitlines()[0]
    assert "note: ranks 2,3 of the job were not found on the hosts read" in r.stdout


def test_seen_from_the_host_every_rank_keeps_its_python(cluster, tdebug):
    """This machine sees both sides' processes, each in a PID namespace of
    its own: the job is whole here, with the Python frames of every rank."""
    inner = {**{(0, ns): pid for ns, pid in host_pids(cluster.a).items()},
             **{(1, ns): pid for ns, pid in host_pids(cluster.b).items()}}
    r = run([tdebug, "stacks", "--job", cluster.job_id, "--json", "--python"])
    assert r.returncode == 0, r.stderr
    doc = json.loads(r.stdout)
    assert [x["rank"] for x in doc["ranks"]] == [0, 1, 2, 3]
    for x in doc["ranks"]:
        side = 0 if x["rank"] < 2 else 1
        assert inner[(side, x["ns_pid"])] == x["pid"]
        assert x["stacks"]["ns_pid"] == x["ns_pid"]
        assert all(t["python"] for t in x["stacks"]["threads"])  # --python: those with Python
        assert x["stacks"]["threads"], x
    assert branches(tree_json(doc)["main"]) == {"0,1,3": "all_reduce", "2": "load_batch"}

    straggler = doc["ranks"][2]
    text = run([tdebug, "stacks", str(straggler["pid"])]).stdout
    assert text.startswith(f"Process {straggler['pid']} (pid {straggler['ns_pid']} in its PID "
                           "namespace) (Python ")
    assert "in load_batch\n" in text
    main = text.split("\n\n")[1]
    assert "threading \"MainThread\"" in main and "(no Python)" not in main

    rows = {p["pid"]: p for p in json.loads(run([tdebug, "ps", "--json"]).stdout)["processes"]}
    for x in doc["ranks"]:
        row = rows[x["pid"]]
        assert row["ns_pid"] == x["ns_pid"]
        assert row["job"]["id"] == cluster.job_id and row["job"]["rank"] == x["rank"]
