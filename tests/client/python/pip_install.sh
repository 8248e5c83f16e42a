#!/bin/sh
# `pip install client/python` works offline: a venv with the system's
# packages (Debian's setuptools and wheel), --no-index so that nothing is
# fetched; the installed package imports from outside the source tree,
# without torch or numpy, and reports a refused connection as bfeed.ConnectError.
# usage: pip_install.sh PYTHON PACKAGE_DIR
set -eu
py=$1
pkg=$2
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
"$py" -m venv --system-site-packages "$tmp/venv"
# Build in a copy of what setup.py reads (client/python, client/lib, proto):
# the source tree stays clean and parallel runs do not meet.
top=$(cd "$pkg/../.." && pwd)
mkdir -p "$tmp/src/client"
cp -r "$top/client/python" "$top/client/lib" "$tmp/src/client/"
cp -r "$top/proto" "$tmp/src/"
rm -rf "$tmp/src/client/python/build" "$tmp/src/client/python"/*.egg-info
"$tmp/venv/bin/pip" install --no-index --no-cache-dir -q "$tmp/src/client/python"
cd "$tmp"
"$tmp/venv/bin/python" - "$tmp" <<'PY'
import sys
import bfeed
assert bfeed.__file__.startswith(sys.argv[1] + "/venv/"), bfeed.__file__
assert "torch" not in sys.modules and "numpy" not in sys.modules
try:
    bfeed.connect("unix:" + sys.argv[1] + "/none.sock")
except bfeed.ConnectError as e:
    assert e.code == -4 and "none.sock" in e.message, (e.code, e.message)
else:
    raise AssertionError("connect to a missing socket succeeded")
print("pip install: ok,", bfeed.__file__)
PY
