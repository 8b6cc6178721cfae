#!/bin/sh
# 'tdebug vscode': F5 to the breakpoints with tdebug's symbolLoadInfo against
# VS Code's default (load every library's symbols).  See bench/vscode_launch.py.
set -eu
cd "$(dirname "$0")/.."
exec "${PYTHON:-/usr/bin/python3}" bench/vscode_launch.py
