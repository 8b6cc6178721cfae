"""The documentation is true to the code.

- tdebug(1) and '--help' agree, command by command: every option a
  command's --help lists is in that command's section of the man page, every
  option the section lists (its .TP entries) is in --help, the synopsis
  (.SS titles) names the options of the usage lines, and each exit status
  --help gives the command is in the section.  (The table of exit statuses
  every command shares is checked in test_cli.py.)
"""
import functools
import re

import pytest

from conftest import ROOT, run
from test_cli import commands_from_help


# ---------------------------------------------------------------------------
# tdebug(1) as text

def roff_line(line):
    """A line of tdebug(1) as text: font escapes and '\\-' taken away."""
    line = re.sub(r"\\f[BIRP]", "", line)
    line = line.replace("\\-", "-").replace("\\(dq", '"').replace("\\e", "\\")
    return re.sub(r"\\\(\w\w", "", line)


def roff_args(line):
    """A macro line's words as text: '.BI \\-b " LOCATION"' is '-b LOCATION'."""
    m = re.match(r"^\.(B|I|BI|IB|BR|RB|IR|RI)\s+(.*)$", line)
    if not m:
        return roff_line(line)
    words = re.findall(r'"((?:[^"\\]|\\.)*)"|(\S+)', m.group(2))
    words = [a or b for a, b in words]
    sep = " " if m.group(1) in ("B", "I") else ""
    return roff_line(sep.join(words))


# ---------------------------------------------------------------------------
# tdebug(1) against --help

OPTION = r"(?<![\w-])(--?[a-zA-Z][\w-]*)"


@functools.lru_cache(maxsize=None)
def help_of(tdebug, name):
    """(usage lines, option rows, the rest) of 'tdebug NAME --help', the
    shared exit status table left out.  The usage lines are those before the
    first blank line; an option row is a line that starts with an option at
    most 8 columns in ('  -b, --break LOCATION  ...')."""
    text = run([tdebug, name, "--help"]).stdout.split("Exit status (every command):")[0]
    usage = text.split("\n\n", 1)[0].splitlines()
    rows = [line for line in text.splitlines() if re.match(r"^ {2,8}-", line)]
    return usage, rows, text


def row_options(rows):
    """{option: its long form} of option rows ('-b, --break' gives both)."""
    names = {}
    for row in rows:
        m = re.match(r"^\s*(-[a-zA-Z])?(?:, )?(--[a-z][\w-]*)?", row)
        short, long_ = m.group(1), m.group(2)
        for o in (short, long_):
            if o:
                names[o] = long_ or short
    return names


@functools.lru_cache(maxsize=None)
def man_sections():
    """{command: (.SS titles, the section's lines)} of tdebug(1); a command
    with several .SS ('tdebug ps', 'tdebug ps --check') gets them all."""
    text = (ROOT / "doc" / "tdebug.1").read_text()
    commands_part = text.split("\n.SH COMMANDS\n", 1)[1].split("\n.SH ", 1)[0]
    sections = {}
    current = None
    for line in commands_part.splitlines():
        m = re.match(r'^\.SS "tdebug ([\w-]+)(.*)"$', line)
        if m:
            current = m.group(1)
            sections.setdefault(current, ([], []))[0].append(roff_line(m.group(2)))
            continue
        if current:
            sections[current][1].append(line)
    return sections


def man_tags(lines):
    """The text of each .TP entry's tag line."""
    return [roff_args(lines[i + 1]) for i, line in enumerate(lines[:-1]) if line == ".TP"]


def options_in(text):
    return set(re.findall(OPTION, text))


def man_options(lines):
    return options_in(" ".join(roff_line(l) for l in lines))


@pytest.fixture(scope="module")
def names(tdebug):
    names = commands_from_help(run([tdebug, "--help"]).stdout)
    assert len(names) >= 10, names
    return names


def test_the_man_page_has_a_section_for_each_command_and_no_other(tdebug, names):
    assert sorted(man_sections()) == sorted(names)


# Every command takes -h/--help; tdebug(1) says so once, in DESCRIPTION.
HELP_OPTIONS = {"-h", "--help"}


def test_the_man_page_says_each_command_has_help():
    man = (ROOT / "doc" / "tdebug.1").read_text()
    description = man.split(".SH DESCRIPTION\n", 1)[1].split("\n.SH ", 1)[0]
    assert "\\fIcommand\\fP \\-\\-help" in description


def test_every_option_of_help_is_in_the_man_page(tdebug, names):
    """What --help shows (its option rows and usage lines) is in the
    command's section of tdebug(1)."""
    drift = []
    for name in names:
        usage, rows, _ = help_of(tdebug, name)
        options = set(row_options(rows)) | options_in(" ".join(usage))
        assert options - HELP_OPTIONS, name
        in_man = man_options(man_sections()[name][1]) | options_in(" ".join(man_sections()[name][0]))
        for option in sorted(options - HELP_OPTIONS):
            if option not in in_man:
                drift.append(f"tdebug {name} {option}")
    assert not drift, ("options --help shows that tdebug(1) does not document in the "
                       "command's section:\n  " + "\n  ".join(drift))


def test_every_option_of_the_man_page_is_in_help(tdebug, names):
    """An option tdebug(1) documents for a command (a .TP entry of its
    section, or its synopsis) is one that command's --help shows."""
    drift = []
    for name in names:
        usage, rows, text = help_of(tdebug, name)
        in_help = options_in(text)
        titles, lines = man_sections()[name]
        documented = [(tag, o) for tag in man_tags(lines) if tag.startswith("-")
                      for o in options_in(tag)]
        documented += [(title, o) for title in titles for o in options_in(title)]
        for where, option in documented:
            if option not in in_help:
                drift.append(f"tdebug {name} {option} ({where.strip()!r})")
    assert not drift, ("options tdebug(1) documents that the command's --help does not "
                       "show:\n  " + "\n  ".join(drift))


def test_the_synopsis_names_the_options_of_the_usage_lines(tdebug, names):
    drift = []
    for name in names:
        usage, rows, _ = help_of(tdebug, name)
        assert usage, name
        longs = row_options(rows)
        in_help = {longs.get(o, o) for o in options_in(" ".join(usage))}
        in_man = {longs.get(o, o) for o in options_in(" ".join(man_sections()[name][0]))}
        if in_help != in_man:
            drift.append(f"tdebug {name}: usage {sorted(in_help - in_man)} not in tdebug(1)'s "
                         f"synopsis; synopsis {sorted(in_man - in_help)} not in the usage")
    assert not drift, "\n".join(drift)


def exit_codes(text):
    """The exit statuses the 'Exit status' paragraph of TEXT names."""
    m = re.search(r"Exit status:?(.*?)(?:\n\s*\n|\Z)", text, re.S)
    if not m:
        return set()
    return set(re.findall(r"(?<![\w+-])(\d{1,3}|128\+N)(?![\w+])", m.group(1)))


def man_text(lines):
    """A man page section as plain text, a blank line for each paragraph
    break (.PP, .TP, .RS, ...)."""
    out = []
    for line in lines:
        if re.match(r"^\.(B|I|BI|IB|BR|RB|IR|RI)\s", line):
            out.append(roff_args(line))
        elif line.startswith("."):
            out.append("")
        else:
            out.append(roff_line(line))
    return "\n".join(out)


def test_each_command_s_exit_statuses_are_in_the_man_page(tdebug, names):
    drift = []
    for name in names:
        codes = exit_codes(help_of(tdebug, name)[2])
        assert codes, name
        man = exit_codes(man_text(man_sections()[name][1]))
        if not codes <= man:
            drift.append(f"tdebug {name}: --help gives exit statuses {sorted(codes - man)} "
                         f"that tdebug(1) does not ({sorted(man)})")
    assert not drift, "\n".join(drift)


