"""The documentation is true to the code.

- Every repository path the docs name exists: README.md, doc/*.md
  (HACKING.md included), doc/tdebug.1, samples/README.md and the opening
  comment of each header under src/ and lib/.  A path counts when it starts
  with a top-level folder of the checkout (src/, lib/, tests/, ...); a
  user's own file (train.py) never does.  Files are renamed in parallel
  branches: this is what catches a stale mention after the merge.
- tdebug(1) and '--help' agree, command by command: every option a
  command's --help lists is in that command's section of the man page, every
  option the section lists (its .TP entries) is in --help, the synopsis
  (.SS titles) names the options of the usage lines, and each exit status
  --help gives the command is in the section.  (The table of exit statuses
  every command shares is checked in test_cli.py.)
- Every page of doc/ is linked from the README, every link between the
  pages leads to a file and a heading that exist, and the README stays
  short.  (That every command has a section in doc/ is test_cli.py's.)
"""
import fnmatch
import functools
import re
import subprocess

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
# Which files the checkout has

@functools.lru_cache(maxsize=None)
def tracked_files():
    """The files of the checkout: git's list (tracked, or new and not
    ignored) when this is a git checkout, so that a build product lying in
    the tree does not count; else every file outside build directories."""
    try:
        out = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others",
                              "--exclude-standard"], check=True,
                             capture_output=True).stdout.decode()
        files = [f for f in out.split("\0") if f]
        if files:
            return frozenset(f for f in files if (ROOT / f).exists())
    except (OSError, subprocess.CalledProcessError):
        pass
    return frozenset(str(p.relative_to(ROOT)) for p in ROOT.rglob("*")
                     if p.is_file() and not p.relative_to(ROOT).parts[0].startswith("build")
                     and ".git" not in p.parts)


@functools.lru_cache(maxsize=None)
def top_folders():
    return sorted({f.split("/", 1)[0] for f in tracked_files() if "/" in f})


@functools.lru_cache(maxsize=None)
def tracked_dirs():
    dirs = set()
    for f in tracked_files():
        parts = f.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            dirs.add("/".join(parts[:i]))
    return frozenset(dirs)


# A path in prose or code: a top-level folder, then path characters.  Not
# preceded by what would make it the tail of another path (/usr/lib/...,
# ~/.vscode/..., $(B)/tests/..., build/samples/..., aten/src/...).
PATH_CHARS = r"[\w.*?\[\]{}+/-]"


def path_regex():
    tops = "|".join(re.escape(t) for t in top_folders())
    return re.compile(rf"(?<![\w./~$@-])((?:{tops})/{PATH_CHARS}*)")


# An upper-case word in a path is a placeholder (src/cmd/NAME.c,
# tests/e2e/test_X.py, libtdebug-pyhook-cpython-3X.so): it stands for any name.
PLACEHOLDER = re.compile(r"(?<![A-Za-z])[A-Z][A-Z0-9]*(?![A-Za-z])")


def path_exists(path):
    path = path.rstrip("/")
    if path in tracked_files() or path in tracked_dirs():
        return True
    pattern = path
    if not re.search(r"[*?\[]", pattern):
        pattern = PLACEHOLDER.sub("*", pattern)
        if pattern == path:
            return False
    regex = re.compile(fnmatch.translate(pattern).replace(".*", "[^/]*"))
    return any(regex.match(f) for f in tracked_files() | tracked_dirs())


def clean_path(raw):
    """A path as written, less the punctuation that ends a sentence or a
    construct around it ('src/main.c.', '(src/cli/)', 'src/x.h's)."""
    path = raw
    while path and path[-1] in ".,:;)]}*?-":
        if path.endswith("[ch]") or path.endswith("*/") or path.endswith("/*"):
            break
        if path[-1] in ")]}":
            opener = {")": "(", "]": "[", "}": "{"}[path[-1]]
            if path.count(opener) >= path.count(path[-1]):
                break
        path = path[:-1]
    return path


def header_comment(path):
    """[(line number, line)] of the comment a header opens with."""
    lines = path.read_text().splitlines()
    if not lines or not lines[0].startswith("/*"):
        return []
    out = []
    for i, line in enumerate(lines, 1):
        out.append((i, line))
        if "*/" in line:
            break
    return out


def documents():
    """(name, [(line number, text)]) of every text that names repository paths."""
    docs = [ROOT / "README.md", *sorted((ROOT / "doc").glob("*.md")),
            ROOT / "samples" / "README.md"]
    for path in docs:
        yield (str(path.relative_to(ROOT)),
               list(enumerate(path.read_text().splitlines(), 1)))
    man = ROOT / "doc" / "tdebug.1"
    yield "doc/tdebug.1", [(i, roff_line(l)) for i, l in
                           enumerate(man.read_text().splitlines(), 1)]
    for folder in ("src", "lib"):
        for path in sorted((ROOT / folder).rglob("*.h")):
            yield str(path.relative_to(ROOT)), header_comment(path)


# Paths in other projects' trees that happen to start like ours, and where
# each is named.
FOREIGN = {
    "tools/setup_helpers/cmake.py": "PyTorch's (src/checks/profile.h)",
}


def layer_regex():
    """In a header under src/, 'session/session.h' is src/session/session.h,
    as includes write it: a folder of src/, then a file name ending .c or .h."""
    layers = sorted({f.split("/")[1] for f in tracked_files()
                     if f.startswith("src/") and f.count("/") >= 2})
    alternatives = "|".join(re.escape(layer) for layer in layers)
    return re.compile(rf"(?<![\w./~$@-])((?:{alternatives})/[\w./*\[\]-]*\.(?:[ch]|\[ch\]))(?![\w/])")


def named_paths():
    """(document, line number, path as written, the paths it may stand for)."""
    regex, layers = path_regex(), layer_regex()
    for name, lines in documents():
        in_src_header = name.startswith("src/") and name.endswith(".h")
        for number, text in lines:
            for m in regex.finditer(text):
                path = clean_path(m.group(1))
                if "/" not in path.rstrip("/") and not path.endswith("/"):
                    continue
                if re.search(r"\.so(\.[\d.]+)?$", path) or path in FOREIGN:
                    continue  # the checkout holds no shared object; not ours
                # A src/ header names its neighbours as includes do, and
                # src/vscode/launch.h calls itself vscode/launch.h.
                candidates = [path, "src/" + path] if in_src_header else [path]
                yield name, number, path, candidates
            if in_src_header:
                for m in layers.finditer(text):
                    if m.start() >= 4 and text[m.start() - 4:m.start()] == "src/":
                        continue
                    path = m.group(1)
                    yield name, number, path, ["src/" + path]


def test_path_matching_itself():
    """The rules above, on the cases they are for."""
    regex = path_regex()
    found = [clean_path(m.group(1)) for m in regex.finditer(
        "read src/main.c. (src/cli/cli.h), `src/gdb/mi_parser.[ch]`, src/session/session.h's; "
        "/usr/lib/python3/x.so ~/.vscode/x $(B)/tests/tools/x build/samples/x aten/src/ATen/y.h "
        "tests/e2e/*_util.py tests/fuzz/fuzz_NAME.c train.py pkg/mod.py")]
    assert found == ["src/main.c", "src/cli/cli.h", "src/gdb/mi_parser.[ch]",
                     "src/session/session.h", "tests/e2e/*_util.py", "tests/fuzz/fuzz_NAME.c"]
    assert path_exists("src/main.c") and path_exists("src/cli/") and path_exists("src/cli")
    assert path_exists("src/gdb/mi_parser.[ch]") and path_exists("tests/e2e/*_util.py")
    assert path_exists("tests/e2e/test_NAME.py") and path_exists("src/cmd/NAME.c")
    assert not path_exists("src/cmd_NAME.c") and not path_exists("src/session.c")
    assert not path_exists("src/nothing/")


def test_every_path_the_docs_name_exists():
    checked, missing = 0, []
    for name, number, path, candidates in named_paths():
        checked += 1
        if not any(path_exists(p) for p in candidates):
            missing.append(f"{name}:{number}: {path}")
    assert checked >= 100, checked  # the scan itself works
    assert not missing, ("paths named in the docs that do not exist in the checkout "
                         "(renamed? update the mention):\n  " + "\n  ".join(missing))


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


# ---------------------------------------------------------------------------
# The reference pages

def doc_pages():
    return sorted(p for p in (ROOT / "doc").glob("*.md") if p.name != "HACKING.md")


def test_the_readme_links_every_page_of_doc():
    readme = (ROOT / "README.md").read_text()
    pages = doc_pages()
    assert len(pages) >= 6
    for page in [*pages, ROOT / "doc" / "HACKING.md"]:
        assert f"(doc/{page.name})" in readme, f"README.md does not link doc/{page.name}"


def test_the_readme_reads_in_five_minutes():
    lines = (ROOT / "README.md").read_text().splitlines()
    assert len(lines) < 250, len(lines)


def slug(heading):
    """The anchor GitHub gives a Markdown heading."""
    text = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return text.replace(" ", "-")


def anchors(page):
    out, seen = set(), {}
    in_code = False
    for line in page.read_text().splitlines():
        if line.startswith("```"):
            in_code = not in_code
        elif not in_code and line.startswith("#"):
            base = slug(line.lstrip("#"))
            n = seen.get(base, 0)
            seen[base] = n + 1
            out.add(base if n == 0 else f"{base}-{n}")
    return out


def test_slug_is_github_s():
    assert slug(" Attach as it pauses: `tdebug attach --wait`") == \
        "attach-as-it-pauses-tdebug-attach---wait"
    assert slug("What a stop shows: exceptions, arguments, tensors, Python values") == \
        "what-a-stop-shows-exceptions-arguments-tensors-python-values"


def test_every_link_between_the_docs_leads_somewhere():
    broken, checked = [], 0
    for page in [ROOT / "README.md", *sorted((ROOT / "doc").glob("*.md"))]:
        for number, line in enumerate(page.read_text().splitlines(), 1):
            for target in re.findall(r"\]\(([^)\s]+)\)", line):
                if re.match(r"^[a-z]+:", target):
                    continue  # https:, mailto:
                file, _, anchor = target.partition("#")
                dest = (page.parent / file).resolve() if file else page
                where = f"{page.relative_to(ROOT)}:{number}: {target}"
                checked += 1
                if not dest.exists():
                    broken.append(f"{where} (no such file)")
                elif anchor and dest.suffix == ".md" and anchor not in anchors(dest):
                    broken.append(f"{where} (no such heading in {dest.name})")
    assert checked >= 30, checked  # the scan itself works
    assert not broken, "links that lead nowhere:\n  " + "\n  ".join(broken)
