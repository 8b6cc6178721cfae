#!/bin/sh
# 'tdebug stacks' against 'gdb -p PID -batch -ex py-bt' on 8 processes that
# imported torch; see bench/stacks.py.  Run by 'make bench'.
set -e
exec "${PYTHON:-/usr/bin/python3}" "$(dirname "$0")/stacks.py" "$@"
