"""The command line itself: help, dispatch, exit statuses, and that the
help, the man page and the reference pages (doc/*.md) describe the same
commands (tests/e2e/test_docs.py checks their options and paths)."""
import re

from conftest import ROOT, run


def commands_from_help(text):
    names = []
    for line in text.split("Commands:\n", 1)[1].splitlines():
        if not line.startswith("  "):
            break
        names.append(line.split()[0])
    return names


def test_help_lists_commands_and_exit_codes(tdebug):
    r = run([tdebug, "--help"])
    assert r.returncode == 0
    assert r.stdout.startswith("usage: tdebug")
    for code in ("0", "1", "2", "125", "126", "127"):
        assert re.search(rf"^  {code} ", r.stdout, re.M), code


def test_no_arguments_is_a_usage_error(tdebug):
    r = run([tdebug])
    assert r.returncode == 2
    assert "usage: tdebug" in r.stderr


def test_unknown_command(tdebug):
    r = run([tdebug, "frobnicate"])
    assert r.returncode == 2
    assert r.stderr == "tdebug: 'frobnicate' is not a tdebug command; see 'tdebug --help'\n"


def doc_headings():
    """The Markdown headings of the reference pages under doc/."""
    return [line for page in sorted((ROOT / "doc").glob("*.md")) if page.name != "HACKING.md"
            for line in page.read_text().splitlines() if line.startswith("#")]


def test_every_command_has_help_man_section_and_doc_section(tdebug):
    names = commands_from_help(run([tdebug, "--help"]).stdout)
    man = (ROOT / "doc" / "tdebug.1").read_text()
    headings = doc_headings()
    readme = (ROOT / "README.md").read_text()
    for name in names:
        r = run([tdebug, name, "--help"])
        assert r.returncode == 0, name
        assert r.stdout.startswith(f"usage: tdebug {name}"), name
        assert run([tdebug, "help", name]).stdout == r.stdout
        assert re.search(rf'^\.SS "?tdebug {re.escape(name)}\b', man, re.M), f"man page lacks {name}"
        assert any(re.search(rf"`tdebug {re.escape(name)}\b", h) for h in headings), \
            f"no page of doc/ has a section (a heading) for 'tdebug {name}'"
        assert f"`tdebug {name}`" in readme, f"README's table of commands lacks {name}"


def test_version(tdebug):
    r = run([tdebug, "--version"])
    assert r.returncode == 0
    assert re.fullmatch(r"tdebug \d+\.\d+\.\d+\n", r.stdout)


def test_no_help_lists_an_option_twice(tdebug):
    names = commands_from_help(run([tdebug, "--help"]).stdout)
    for name in names:
        text = run([tdebug, name, "--help"]).stdout
        options = re.findall(r"^  (?:-\w, )?(--[a-z][\w-]*)", text, re.M)
        assert options, name
        twice = sorted({o for o in options if options.count(o) > 1})
        assert not twice, f"'tdebug {name} --help' lists {twice} twice"


# --- one table of exit statuses

def exit_table(text):
    """{code: meaning} of the 'Exit status (every command):' table in a help
    text, continuation lines joined, and the paragraph after the rows."""
    block = text.split("Exit status (every command):\n", 1)[1]
    rows, note, code = {}, [], None
    for line in block.splitlines():
        m = re.match(r"^  (\d+)\s+(.*)$", line)
        if m:
            code = m.group(1)
            rows[code] = m.group(2)
        elif line.startswith("       ") and code:
            rows[code] += " " + line.strip()
        elif line.strip() and rows:
            note.append(line.strip())
            code = None
        elif not line.strip() and note:
            break
    return rows, " ".join(" ".join(note).split())


def man_exit_table():
    """The same from tdebug(1)'s EXIT STATUS section (its .TP entries and the
    paragraph after them), roff markup taken away."""
    man = (ROOT / "doc" / "tdebug.1").read_text()
    section = man.split(".SH EXIT STATUS\n", 1)[1].split("\n.SH ", 1)[0]
    rows = dict(re.findall(r"^\.TP\n\.B (\d+)\n(.*?)(?=\n\.TP|\n\.PP)", section, re.M | re.S))
    rows = {k: " ".join(v.split()) for k, v in rows.items()}
    note = section.split("\n.PP\n")[1]
    return rows, " ".join(note.split())


def test_every_help_and_the_man_page_carry_one_exit_status_table(tdebug):
    rows, note = exit_table(run([tdebug, "--help"]).stdout)
    assert list(rows) == ["0", "1", "2", "125", "126", "127", "129", "130", "143"]
    assert "128+N" in rows["0"] and "SIGHUP" in rows["129"] and "Ctrl-C" in rows["130"]
    assert "SIGTERM" in rows["143"]
    assert "'quit'" in note and "exits 0" in note and "detached and left running" in note
    man_rows, man_note = man_exit_table()
    assert man_rows == rows
    assert man_note == note
    for name in commands_from_help(run([tdebug, "--help"]).stdout):
        assert exit_table(run([tdebug, name, "--help"]).stdout) == (rows, note), name


def test_run_and_attach_help_say_quit_exits_0(tdebug):
    for name in ("run", "attach"):
        head = run([tdebug, name, "--help"]).stdout.split("Exit status (every command):")[0]
        assert "'quit'" in head and "piped commands" in head, name
