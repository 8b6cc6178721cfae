"""The folders of src/ are its layers (doc/HACKING.md), and these tests hold
the tree to what the folders say of themselves.

Each folder (but exec/, the tiny exec wrapper that includes nothing of the
rest) has one header whose opening comment states the folder's contract,
with one line naming the folders it may include besides itself:

     * May include: base, process

(' * May include: nothing' for base/).  Every '#include "X/..."' in the
folder's .c and .h files must name the folder itself or one of those; the
graph the lines give must have no cycle; src/ holds no C file at its top but
main.c; and no file under src/ is over 1,000 lines unless it says
"GENERATED" in its first lines.

These read the source tree only: nothing is built or run.
"""
import re

from conftest import ROOT

SRC = ROOT / "src"
MAX_LINES = 1000
MAY_INCLUDE = re.compile(r"^ \* May include: (.*)$", re.M)
INCLUDE = re.compile(r'^\s*#\s*include\s+"([A-Za-z0-9_]+)/[^"]*"', re.M)


def folders():
    return sorted(p.name for p in SRC.iterdir() if p.is_dir() and p.name != "exec")


def sources(folder):
    return sorted(p for p in (SRC / folder).iterdir() if p.suffix in (".c", ".h"))


def declarations(folder):
    """[(header, [folder, ...])] for each header of FOLDER with a line."""
    found = []
    for h in sources(folder):
        if h.suffix != ".h":
            continue
        for m in MAY_INCLUDE.finditer(h.read_text(errors="replace")):
            words = m.group(1).strip()
            allowed = [] if words == "nothing" else [w.strip() for w in words.split(",")]
            found.append((h.relative_to(ROOT), allowed))
    return found


def declared():
    """{folder: (header, allowed)} for the folders that declare once."""
    return {f: d[0] for f in folders() if len(d := declarations(f)) == 1}


def crossings(folder, allowed):
    """[(file under src/, line number, included folder)] of FOLDER's
    includes of folders not in ALLOWED (nor itself)."""
    out = []
    for path in sources(folder):
        text = path.read_text(errors="replace")
        for m in INCLUDE.finditer(text):
            target = m.group(1)
            if target == folder or target in allowed or not (SRC / target).is_dir():
                continue  # not a folder of src/: lib/'s contracts ("tdebug_preload.h")
            line = text.count("\n", 0, m.start()) + 1
            out.append((str(path.relative_to(SRC)), line, target))
    return out


def test_every_folder_declares_what_it_may_include_once():
    problems = []
    names = set(folders())
    for folder in folders():
        found = declarations(folder)
        if not found:
            problems.append(f"src/{folder}/: no header has a ' * May include: ...' line "
                            f"(give the folder's main header one, in its opening comment)")
        if len(found) > 1:
            problems.append(f"src/{folder}/: several headers declare what it may include ("
                            + ", ".join(str(h) for h, _ in found) + "): keep one")
        for header, allowed in found:
            unknown = [w for w in allowed if w not in names and w != "exec"]
            if unknown:
                problems.append(f"{header}: 'May include:' names {', '.join(unknown)}, "
                                f"which {'is' if len(unknown) == 1 else 'are'} not a folder of src/")
    assert not problems, "\n".join(problems)


def test_includes_follow_the_layers():
    problems = []
    for folder, (header, allowed) in declared().items():
        for path, line, target in crossings(folder, allowed):
            problems.append(f"src/{path}:{line}: includes \"{target}/...\", but {folder}/ may "
                            f"include only {', '.join(allowed) or 'nothing'} "
                            f"(the 'May include:' line of {header})")
    assert not problems, "\n".join(problems)


def test_the_layers_have_no_cycle():
    graph = {f: [a for a in allowed if a != f] for f, (_, allowed) in declared().items()}
    state = {}  # folder -> "open" while on the path, "done" after

    def visit(folder, path):
        if state.get(folder) == "done":
            return None
        if state.get(folder) == "open":
            return path[path.index(folder):] + [folder]
        state[folder] = "open"
        for nxt in graph.get(folder, []):
            cycle = visit(nxt, path + [folder])
            if cycle:
                return cycle
        state[folder] = "done"
        return None

    for folder in sorted(graph):
        cycle = visit(folder, [])
        assert not cycle, ("the 'May include:' lines make a cycle: " + " -> ".join(cycle)
                           + " (a lower layer may not include a higher one)")


def test_no_c_file_at_the_top_of_src_but_main():
    top = sorted(p.name for p in SRC.glob("*.c"))
    assert top == ["main.c"], (f"src/ holds {', '.join(top)} at its top: every C file but "
                               f"main.c lives in the folder of its layer")


def test_no_file_over_a_thousand_lines():
    big = []
    for path in sorted(SRC.rglob("*")):
        if not path.is_file() or path.suffix not in (".c", ".h"):
            continue
        rel = path.relative_to(SRC)
        text = path.read_text(errors="replace")
        n = text.count("\n")
        if n > MAX_LINES and "GENERATED" not in "\n".join(text.splitlines()[:5]):
            big.append(f"src/{rel}: {n} lines (more than {MAX_LINES}: split it along a "
                       f"seam of concern, or say GENERATED in its first lines if a tool "
                       f"writes it)")
    assert not big, "\n".join(big)


