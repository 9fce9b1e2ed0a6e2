#!/usr/bin/env bash
# An installed nbkit as others use it: `cmake --install` into a scratch prefix, a consumer built
# through the CMake package and through pkg-config, run; the command run from the prefix, with
# nothing of the build tree in its libraries.
#   tests/consumer/check.sh BUILD_DIR [PYTHON]   (PYTHON: the interpreter the module was built for;
#                                                its installed package is imported too)
set -euo pipefail
build=$(cd "$1" && pwd)
here=$(cd "$(dirname "$0")" && pwd)
work=$(mktemp -d)  # outside the build tree
trap 'rm -rf "$work"' EXIT
cmake --install "$build" --prefix "$work/prefix" >"$work/install.log"
echo "installed: $(find "$work/prefix" -type f | wc -l) files"
generator=()
command -v ninja >/dev/null 2>&1 && generator=(-G Ninja)
cmake -S "$here" -B "$work/cmake" "${generator[@]}" -DCMAKE_BUILD_TYPE=Release -DCMAKE_PREFIX_PATH="$work/prefix" \
  >"$work/configure.log" || { cat "$work/configure.log"; exit 1; }
cmake --build "$work/cmake" >"$work/build.log" || { cat "$work/build.log"; exit 1; }
"$work/cmake/consumer"
pc=$(dirname "$(find "$work/prefix" -name nbkit.pc | head -n 1)")
flags=$(PKG_CONFIG_PATH="$pc" pkg-config --cflags --libs --static nbkit)
echo "pkg-config: $flags"
# shellcheck disable=SC2086  # the flags are words
c++ "$here/main.cpp" -o "$work/pkgconfig-consumer" $flags
LD_LIBRARY_PATH="$work/prefix/lib${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}" "$work/pkgconfig-consumer"  # a shared libnbkit
version=$("$work/prefix/bin/nbkit" --version)
echo "$version"
if [ -n "${2:-}" ]; then
  package=$(dirname "$(find "$work/prefix" -path '*/nbkit/__init__.py' | head -n 1)")
  (cd "$work" && PYTHONPATH=$(dirname "$package") "$2" -c "import nbkit; print('python:', nbkit.__version__, nbkit.__file__)")
fi
if ldd "$work/prefix/bin/nbkit" | grep -q "$build"; then
  echo "the installed nbkit loads a library from the build tree" >&2
  exit 1
fi
