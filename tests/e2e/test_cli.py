"""The command line itself: help, dispatch, exit statuses, and that the
help, the man page and the README describe the same commands."""
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


def test_every_command_has_help_man_section_and_readme_mention(tdebug):
    names = commands_from_help(run([tdebug, "--help"]).stdout)
    man = (ROOT / "doc" / "tdebug.1").read_text()
    readme = (ROOT / "README.md").read_text()
    for name in names:
        r = run([tdebug, name, "--help"])
        assert r.returncode == 0, name
        assert r.stdout.startswith(f"usage: tdebug {name}"), name
        assert run([tdebug, "help", name]).stdout == r.stdout
        assert re.search(rf'^\.SS "?tdebug {re.escape(name)}\b', man, re.M), f"man page lacks {name}"
        assert f"tdebug {name}" in readme, f"README lacks {name}"


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
