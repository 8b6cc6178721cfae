"""Helpers for the tests of 'tdebug tour': the stops in its output, the
processes a tour left behind, an interpreter without torch."""
import os
import re
import subprocess

from conftest import PYTHON, proc_stat

STOP_RE = re.compile(r"^=== Stop (\d+) of (\d+): (.*) ===$", re.M)


def stops(stdout):
    """The tour stops in STDOUT, in order: number, total, title, the 'tdebug:'
    line the session printed, the innermost frame ('#0 ...') and the whole
    text up to the next stop."""
    found = []
    marks = list(STOP_RE.finditer(stdout))
    for i, m in enumerate(marks):
        end = marks[i + 1].start() if i + 1 < len(marks) else len(stdout)
        text = stdout[m.end():end]
        lines = text.splitlines()
        found.append({
            "number": int(m.group(1)),
            "total": int(m.group(2)),
            "title": m.group(3),
            "message": next((l for l in lines if l.startswith("tdebug: ")), None),
            "top": next((l for l in lines if l.startswith("#0 ")), None),
            "text": text,
        })
    return found


def processes_in_session(sid):
    """PIDs of the live processes whose session is SID (everything a
    program started with start_new_session=True started, unless it called
    setsid itself)."""
    found = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        fields = proc_stat(entry)
        if fields and int(fields[3]) == sid and fields[0] != "Z":
            found.append(int(entry))
    return found


def venv_without_torch(tmp_path):
    """A virtual environment of PYTHON that does not see the system's
    packages, so it cannot import torch.  Returns its python."""
    venv = tmp_path / "venv"
    subprocess.run([PYTHON, "-m", "venv", "--without-pip", str(venv)], check=True,
                   capture_output=True, timeout=120)
    python = venv / "bin" / "python"
    r = subprocess.run([str(python), "-c", "import torch"], capture_output=True, timeout=120)
    assert r.returncode != 0, "the venv imports torch"
    return str(python)


def has_debug_info(path):
    """Does the ELF file PATH carry DWARF (.debug_info)?"""
    out = subprocess.run(["readelf", "-S", "--wide", path], capture_output=True, text=True,
                         check=True).stdout
    return ".debug_info" in out
