#!/bin/sh
# Install the Debian/Ubuntu packages tdebug needs to build and test, and only
# those that are missing.  Idempotent: a second run installs nothing and does
# not touch the network.  Used by 'make deps' (and so by 'make test').
#
#   tools/deps.sh            install what is missing
#   tools/deps.sh --check    list what is missing, install nothing (exit 1 if any)
#   tools/deps.sh --vscode-ui [--check]
#                            also what the real VS Code run needs ('make
#                            test-vscode', tests/vscode-ui/setup.sh): a browser
#                            and what code-server's native modules build with
set -eu

check=""
vscode_ui=""
for arg in "$@"; do
    case "$arg" in
    --check) check=--check ;;
    --vscode-ui) vscode_ui=1 ;;
    *) echo "deps: unknown argument '$arg' (usage: tools/deps.sh [--vscode-ui] [--check])" >&2; exit 2 ;;
    esac
done

# One line per package, with why tdebug needs it.
PACKAGES="
gcc               compiler
g++               C++ test extensions (tests/fixtures/vscode/cppext: std::vector, libstdc++ pretty printers)
make              build
pkg-config        finds jansson, Python and cmocka flags
gdb               the debugger tdebug drives over MI
binutils-dev      libbfd, for reading ELF files (tdebug inspect)
libjansson-dev    JSON values for MI records and --json output
libreadline-dev   line editing and history at the (tdebug) prompt
python3-dev       Python C API and CPython's internal headers
python3-dbg       CPython debug info and gdb's py-bt helpers
libc6-dbg         libc's and ld.so's symbols: names of their static functions in stacks, and gdb's lookups of variables in a program stopped inside libc
lld               a linker that writes gdb indexes, for debug builds (tdebug profile)
python3-debugpy   the Python debugger VS Code uses
python3-torch     the PyTorch tdebug is tested against
python3-pytest    end-to-end tests
python3-jsonschema checks generated launch.json against VS Code's schemas
python3-setuptools builds sample extensions the way users build theirs
libtorch-dev      torch's C++ headers: the tests build their own torch op (torch.utils.cpp_extension) to step into
pybind11-dev      pybind11's headers, which such an op's binding includes
libcmocka-dev     C unit tests
libdw-dev         elfutils' unwinder, for native stacks without gdb
iproute2          ss, to see listening ports without connecting
util-linux        setpriv, to test refusals as an unprivileged user
libcap2-bin       setcap, to test gdb given CAP_SYS_PTRACE as a file capability
clang-14          builds the fuzz targets with libFuzzer (make asan)
libclang-rt-14-dev libFuzzer and the sanitizer runtimes clang links
nodejs            runs Microsoft's DAP test client against 'tdebug dap' (tests/dap)
valgrind          callgrind: instruction counts in make bench (bench/pyhook.py), steady on a loaded machine
openssh-client    ssh, through which 'tdebug stacks --job --hosts' reads other hosts
openssh-server    sshd on the two "hosts" the distributed-job tests make in namespaces (tests/e2e/cluster_util.py)
"

# Only for 'make test-vscode' (--vscode-ui): a real VS Code (code-server from
# npm) in a real browser.  code-server's native modules are built here, against
# the installed node's headers, instead of downloading prebuilt binaries.
VSCODE_UI_PACKAGES="
chromium          the browser puppeteer-core drives (headless) to use code-server's VS Code
ripgrep           VS Code's search, instead of @vscode/ripgrep's download of its own rg
libkrb5-dev       headers the 'kerberos' native module of VS Code builds against
python3           node-gyp, which builds code-server's native modules
g++               the same
make              the same
"
if [ -n "$vscode_ui" ]; then
    PACKAGES="$PACKAGES$VSCODE_UI_PACKAGES"
fi

missing=""
for pkg in $(printf '%s\n' "$PACKAGES" | awk 'NF { print $1 }' | sort -u); do
    status=$(dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null || true)
    case "$status" in
    *" installed") ;;
    *) missing="$missing $pkg" ;;
    esac
done

# npm installs the DAP tests' client: Debian's package, unless the nodejs
# installed already brings its own (NodeSource's does; Debian's npm would
# conflict with it).
command -v npm >/dev/null 2>&1 || missing="$missing npm"

# The DAP tests' client, pinned by tests/dap/package-lock.json: 'npm ci'
# when the installed one is not the pinned version.
dap_tests="$(cd "$(dirname "$0")/../tests/dap" && pwd)"
dap_client_ok() {
    node -e 'const l = require(process.argv[1] + "/package-lock.json").packages;
             const k = "node_modules/@vscode/debugadapter-testsupport";
             process.exit(require(process.argv[1] + "/" + k + "/package.json").version
                          === l[k].version ? 0 : 1)' "$dap_tests" 2>/dev/null
}
install_dap_client() {
    dap_client_ok && return 0
    if [ -n "$check" ]; then
        echo "deps: missing: the DAP test client in tests/dap (npm ci)"
        return 1
    fi
    echo "deps: installing the DAP test client in tests/dap (npm ci)"
    (cd "$dap_tests" && npm ci --no-audit --no-fund --loglevel=error)
}

if [ -z "$missing" ]; then
    echo "deps: all packages present"
    install_dap_client
    exit $?
fi
if [ -n "$check" ]; then
    echo "deps: missing:$missing"
    exit 1
fi

echo "deps: installing:$missing"
if [ "$(id -u)" -eq 0 ]; then
    sudo=""
elif command -v sudo >/dev/null 2>&1; then
    sudo="sudo"
else
    echo "deps: not root and no sudo; install as root: apt-get install$missing" >&2
    exit 1
fi
export DEBIAN_FRONTEND=noninteractive
# Update the package lists only when an install is needed, and only once.
$sudo apt-get update -q
# shellcheck disable=SC2086
$sudo apt-get install -y -q --no-install-recommends $missing
install_dap_client
