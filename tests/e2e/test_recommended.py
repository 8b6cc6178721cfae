"""Every command tdebug recommends is one it accepts.

The tours (src/tour/data.c), the examples of the README and of the pages of
doc/, each command's --help examples and the samples' (their headers and
samples/README.md) are run through the real option parsers with 'tdebug
--check-usage COMMAND ARGS...', which checks arguments exactly as the
command does and then runs nothing.  A recommended command that is a
usage error (the tour once said 'tdebug profile --torch debug') fails
here."""
import os
import re
import shlex

from conftest import ROOT, run

# Placeholders the docs write, and a value that stands for each.
PLACEHOLDERS = {"PID": "1234", "PID...": "1234", "N": "1", "P": "/usr/bin/python3"}


def c_string_literals(source):
    """The text of each run of adjacent C string literals, decoded."""
    out = []
    for run_ in re.finditer(r'(?:"(?:[^"\\\n]|\\.)*"\s*)+', source):
        parts = re.findall(r'"((?:[^"\\\n]|\\.)*)"', run_.group(0))
        text = "".join(parts)
        text = re.sub(r'\\(.)', lambda m: {"n": "\n", "t": "\t"}.get(m.group(1), m.group(1)),
                      text)
        out.append(text)
    return out


def tour_commands():
    """Commands the tours recommend: `tdebug ...` in backquotes, and
    '- tdebug ...: what it does' lines."""
    cmds = []
    for text in c_string_literals((ROOT / "src" / "tour/data.c").read_text()):
        cmds += re.findall(r"`(tdebug [^`]+)`", text)
        cmds += re.findall(r"^- (tdebug .+?): ", text, re.M)
    return cmds


def doc_commands():
    """Commands in the code blocks of the README and of doc/*.md (a '$ '
    prompt, 'build/', an 'eval "$(...)"' and comments taken away; two-column
    layouts split), each with the page it is on."""
    cmds = []
    for page in [ROOT / "README.md", *sorted((ROOT / "doc").glob("*.md"))]:
        cmds += [(page.relative_to(ROOT), cmd) for cmd in block_commands(page.read_text())]
    return cmds


def block_commands(text):
    cmds = []
    for block in re.findall(r"```\w*\n(.*?)```", text, re.S):
        for line in block.splitlines():
            for part in re.split(r"\s{3,}", line):
                part = re.sub(r"\s+#.*$", "", part.strip())
                inner = re.search(r'\$\((tdebug [^)]*)\)', part)
                if inner:
                    part = inner.group(1)
                part = re.sub(r"^(\$ )?(build/)?", "", part)
                if part.startswith("tdebug ") and not part.startswith("tdebug:"):
                    cmds.append(part)
    return cmds


def help_examples(tdebug):
    """The 'Examples:' lines of every command's --help."""
    cmds = []
    names = re.findall(r"^  ([a-z-]+) ", run([tdebug, "--help"]).stdout.split("Commands:")[1]
                       .split("\n\n")[0], re.M)
    for name in names:
        text = run([tdebug, name, "--help"]).stdout
        if "Examples:" in text:
            for line in text.split("Examples:", 1)[1].splitlines():
                if line.startswith("  tdebug "):
                    cmds.append(line.strip())
    return cmds


def sample_commands():
    """The tdebug commands the samples suggest: 'tdebug ...' lines of each
    script's header (up to two spaces before a comment), and `tdebug ...`
    in samples/README.md."""
    cmds = []
    for path in sorted((ROOT / "samples").glob("*.py")):
        header = path.read_text().split('"""')[1]
        for line in header.splitlines():
            line = line.strip()
            if line.startswith("tdebug "):
                cmds.append(re.split(r"\s{2,}", line)[0])
    cmds += re.findall(r"`(tdebug [^`]+)`", (ROOT / "samples" / "README.md").read_text())
    return cmds


def check(tdebug, cmd):
    """'tdebug --check-usage' on CMD (a shell-quoted 'tdebug ...' line)."""
    words = [PLACEHOLDERS.get(w, w) for w in shlex.split(cmd)]
    assert words[0] == "tdebug", cmd
    return run([tdebug, "--check-usage", *words[1:]])


def test_every_command_the_tours_recommend_is_accepted(tdebug):
    cmds = tour_commands()
    assert len(cmds) >= 4, cmds  # the extraction itself works
    assert any(c.startswith("tdebug profile") for c in cmds), cmds
    for cmd in cmds:
        r = check(tdebug, cmd)
        assert r.returncode == 0, f"the tour recommends '{cmd}':\n{r.stderr}"


def test_every_command_the_docs_show_is_accepted(tdebug):
    cmds = doc_commands()
    assert len(cmds) >= 20, cmds
    assert any(str(page) == "README.md" for page, _ in cmds)
    checked = 0
    for page, cmd in cmds:
        r = check(tdebug, cmd)
        if r.returncode == 1 and "cannot check the arguments of" in r.stderr:
            continue  # vscode, stacks: not checkable yet (said by the last test)
        assert r.returncode == 0, f"{page} shows '{cmd}':\n{r.stderr}"
        checked += 1
    assert checked >= 15


def test_every_command_the_samples_suggest_is_accepted(tdebug):
    cmds = sample_commands()
    assert len(cmds) >= 10, cmds
    assert any(c.startswith("tdebug stacks") for c in cmds)
    for cmd in cmds:
        r = check(tdebug, cmd)
        if r.returncode == 1 and "cannot check the arguments of" in r.stderr:
            continue
        assert r.returncode == 0, f"a sample suggests '{cmd}':\n{r.stderr}"


def test_every_help_example_is_accepted(tdebug):
    cmds = help_examples(tdebug)
    assert len(cmds) >= 6, cmds
    for cmd in cmds:
        r = check(tdebug, cmd)
        if r.returncode == 1 and "cannot check the arguments of" in r.stderr:
            continue
        assert r.returncode == 0, f"--help shows '{cmd}':\n{r.stderr}"


def test_check_usage_says_usage_errors_and_runs_nothing(tdebug, tmp_path):
    r = run([tdebug, "--check-usage", "profile", "--torch", "debug"])
    assert r.returncode == 2
    assert r.stderr == ("tdebug profile: write the mode as --torch=debug\n"
                        "see 'tdebug profile --help'\n")
    r = run([tdebug, "--check-usage", "run", "-b", "torch.add", "-c", "pass"])
    assert r.returncode == 2 and "is a Python name" in r.stderr
    # Nothing runs: not the program, not gdb.
    marker = tmp_path / "ran"
    r = run([tdebug, "--check-usage", "run", "--batch", "--", "/usr/bin/python3", "-c",
             f"open({str(marker)!r}, 'w')"], env={"PATH": os.environ["PATH"],
                                                  "TDEBUG_GDB": str(tmp_path / "no-gdb")})
    assert r.returncode == 0 and r.stdout == "" and r.stderr == ""
    assert not marker.exists()
    # A script that is not there is the run's business, not usage's.
    assert run([tdebug, "--check-usage", "run", str(tmp_path / "nope.py")]).returncode == 0
    assert run([tdebug, "run", "--batch", str(tmp_path / "nope.py")]).returncode == 127
    # Commands that cannot check their arguments yet say so.
    r = run([tdebug, "--check-usage", "vscode", "--program", "x.py"])
    assert r.returncode == 1
    assert r.stderr == "tdebug: --check-usage cannot check the arguments of 'tdebug vscode' yet\n"
    r = run([tdebug, "--check-usage"])
    assert r.returncode == 2
