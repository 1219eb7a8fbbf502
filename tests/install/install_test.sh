#!/usr/bin/env bash
# Installs a build to a fresh prefix and builds a small downstream program against it twice, through CMake's
# find_package(Trireme) and through pkg-config with a plain cc command line, then runs both.
# usage: install_test.sh BUILD_DIR DOWNSTREAM_SOURCE_DIR [extra compiler/linker flags, e.g. sanitizers]
set -euo pipefail
build=$(cd "$1" && pwd)
src=$(cd "$2" && pwd)
extra=${3:-}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
prefix="$tmp/prefix"   # a prefix nothing was configured for

cmake --install "$build" --prefix "$prefix" >/dev/null
test -f "$prefix/include/trireme.h"

echo "== find_package(Trireme)"
cmake -S "$src" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" -DCMAKE_C_FLAGS="$extra" \
      -DCMAKE_EXE_LINKER_FLAGS="$extra" >/dev/null
cmake --build "$tmp/cmake-build" >/dev/null
"$tmp/cmake-build/downstream"

echo "== pkg-config"
export PKG_CONFIG_PATH="$prefix/lib/pkgconfig"
got=$(pkg-config --variable=prefix trireme)
if [ "$got" != "$prefix" ]; then
  echo "install_test: trireme.pc says prefix=$got, installed to $prefix" >&2
  exit 1
fi
libdir=$(pkg-config --variable=libdir trireme)
# shellcheck disable=SC2046,SC2086  # pkg-config's output is a list of flags
cc $extra -o "$tmp/downstream-pc" "$src/main.c" $(pkg-config --cflags --libs trireme) -Wl,-rpath,"$libdir"
"$tmp/downstream-pc"

# The Python package, away from any build tree, finds the installed library through the system loader
# (LD_LIBRARY_PATH standing in for an ld.so.conf entry).
py=/usr/bin/python3
[ -x "$py" ] || py=$(command -v python3 || true)
if [ -n "$extra" ]; then
  echo "== Python package: skipped (a sanitizer build cannot be loaded into an uninstrumented python3)"
elif [ -n "$py" ] && "$py" -c "import numpy" 2>/dev/null; then
  echo "== Python package over the installed library"
  cp -r "$src/../../../python/trireme" "$tmp/trireme"
  (cd "$tmp" && env -u TRIREME_LIBRARY LD_LIBRARY_PATH="$prefix/lib" PYTHONPATH="$tmp" "$py" -c '
import numpy as np, trireme
x = np.arange(10, dtype=np.float32)
assert (trireme.Context("cpu").add(x, x) == 2 * x).all()
print("python: loaded", trireme.library_path(), "- add correct")')
else
  echo "== Python package: skipped (no python3 with numpy)"
fi
