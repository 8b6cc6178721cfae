"""'make install' of the build the tests run against, to a PREFIX other than
the one it was built for: the installed tdebug must find its companions
(the exec wrapper, the preloaded library, the VS Code runner) where it was
installed."""
import json
import os
import subprocess

from conftest import BUILD, PYTHON, ROOT, clean_env, run


def test_install_elsewhere_than_built_for(tmp_path):
    prefix = tmp_path / "opt prefix"  # a space, too
    r = subprocess.run(["make", "-s", f"B={BUILD}", f"PREFIX={prefix}", f"PYTHON={PYTHON}",
                        "install"], cwd=ROOT, capture_output=True, text=True, timeout=1200)
    assert r.returncode == 0, r.stdout + r.stderr
    tdebug = str(prefix / "bin" / "tdebug")
    r = run([tdebug, "run", "--batch", "--", PYTHON, "-c", "print('installed run')"])
    assert r.returncode == 0, r.stderr
    assert "installed run" in r.stdout
    r = run([tdebug, "env"], env=clean_env())
    assert f"export LD_AUDIT='{prefix / 'lib' / 'tdebug' / 'libtdebug-preload.so'}'" in r.stdout
    # 'tdebug vscode --compound' has gdb start the interpreter on the
    # installed runner
    ws = tmp_path / "ws"
    ws.mkdir()
    (ws / "main.py").write_text("print(1)\n")
    r = run([tdebug, "vscode", "--compound", "--workspace", str(ws), "--program", "main.py"])
    assert r.returncode == 0, r.stderr
    runner = prefix / "lib" / "tdebug" / "tdebug" / "_vscode_run.py"
    assert runner.is_file()
    launch = json.loads((ws / ".vscode" / "launch.json").read_text())
    assert f'"{runner}"' in launch["configurations"][0]["args"]  # quoted: a space in it
    # and the installed extension, which 'tdebug vscode' then finds installed
    home = tmp_path / "home"
    r = run([tdebug, "vscode", "--workspace", str(ws), "--program", "main.py",
             "--install-extension"], env=clean_env(HOME=home))
    assert r.returncode == 0, r.stderr
    ext = next((home / ".vscode" / "extensions").glob("tdebug.tdebug-*"))
    assert os.readlink(ext / "bin" / "tdebug") == tdebug
    # the extension's folder with its adapter script, and the packaged
    # extension when 'make vsix' built it, installed beside each other
    assert os.access(prefix / "lib" / "tdebug" / "vscode-extension" / "bin" / "tdebug", os.X_OK)
    if (BUILD / "tdebug-vscode.vsix").is_file():
        assert (prefix / "lib" / "tdebug" / "tdebug-vscode.vsix").is_file()
    r = run([tdebug, "vscode", "--workspace", str(ws), "--program", "main.py"],
            env=clean_env(HOME=home))
    assert r.returncode == 0 and r.stderr == ""
    launch = json.loads((ws / ".vscode" / "launch.json").read_text())
    assert [c["type"] for c in launch["configurations"]] == ["tdebug"]
    # running it wrote no byte code into the prefix: the one __pycache__
    # is what 'make install' compiled for the children's sitecustomize
    # (each child imports it at its start, where it could not write one)
    children = prefix / "lib" / "tdebug" / "tdebug-children"
    assert list(prefix.rglob("__pycache__")) == [children / "__pycache__"]
    # the Python breakpoint library (lib/tdebug_pyhook.h) for every CPython
    # minor version built, flat, where the session looks for it
    built = sorted(p.name for p in (BUILD / "pyhook").glob("libtdebug-pyhook-cpython-3*.so"))
    hooks = sorted(p.name for p in (prefix / "lib" / "tdebug" / "pyhook").iterdir())
    assert hooks == built and "libtdebug-pyhook-cpython-311.so" in hooks, hooks
    # gdb's printers for torch's values (lib/gdb/), which sessions load.
    assert sorted(p.name for p in (prefix / "lib" / "tdebug" / "gdb").iterdir()) == [
        "libtdebug-printers.so", "tdebug_printers.py"]
