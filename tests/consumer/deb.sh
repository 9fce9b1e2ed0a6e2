#!/usr/bin/env bash
# The Debian package as a user gets it: `cpack -G DEB` on the build, the .deb unpacked into a scratch
# root (dpkg -x, no install needed), its `nbkit --version` run from there, its Python package
# imported, and its Depends checked against what the binaries load: every shared library they need
# is either in the package itself, or owned by a Debian package the .deb depends on, or (the CUDA
# runtime and cuFFT, NVIDIA's) covered by a cuda-/libcufft- dependency.
#   tests/consumer/deb.sh BUILD_DIR [PYTHON]
set -euo pipefail
build=$(cd "$1" && pwd)
# Which package owns each of these paths: "path<TAB>package" lines, one dpkg-query for all of them
# (dpkg -S reads the whole file database each call, ~0.5 s: one call a library took 40 s of CI).
owners() {
  [ $# -gt 0 ] || return 0
  dpkg-query -S "$@" 2>/dev/null | awk '{i = index($0, ": /"); if (i) print substr($0, i + 2) "\t" substr($0, 1, index($0, ":") - 1)}' || true
}
owner_of() {  # owner_of PATH: from $known (owners' lines)
  awk -F '\t' -v p="$1" '$1 == p {print $2; exit}' <<<"$known"
}
spellings() {  # the names dpkg may know a loaded library by, one a line: as found, resolved, merged-/usr
  printf '%s\n' "$1" "$(readlink -f "$1")" "/usr$1" "${1#/usr}"
}
# A build that links libraries from outside the package system (a vendored Highway or FFTW, as
# the GPU machine's .deps/) cannot name them as dependencies: no .deb to check there (skip, 77).
mapfile -t linked < <(ldd "$build/bin/nbkit" | awk '$2 == "=>" && $3 ~ /^\// {print $3}')
candidates=()
for path in "${linked[@]}"; do candidates+=("$path" "$(readlink -f "$path")"); done
known=$(owners "${candidates[@]}")
for path in "${linked[@]}"; do
  case "$path" in */libcu*) continue ;; esac
  [ -n "$(owner_of "$path")" ] || [ -n "$(owner_of "$(readlink -f "$path")")" ] || {
    echo "skipped: this build links $path, which no Debian package provides (a vendored copy)"
    exit 77
  }
done
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cpack -G DEB --config "$build/CPackConfig.cmake" -B "$work/out" >"$work/cpack.log" 2>&1 || { cat "$work/cpack.log"; exit 1; }
deb=$(find "$work/out" -maxdepth 1 -name 'nbkit_*.deb' | head -n 1)
[ -n "$deb" ] || { echo "cpack made no nbkit_*.deb" >&2; cat "$work/cpack.log"; exit 1; }
echo "$(basename "$deb"): $(du -k "$deb" | cut -f1) KiB"
version=$(dpkg-deb -f "$deb" Version)
depends=$(dpkg-deb -f "$deb" Depends)
echo "Depends: $depends"
dpkg -x "$deb" "$work/root"

said=$("$work/root/usr/bin/nbkit" --version)
[ "$said" = "nbkit $version" ] || { echo "the packaged nbkit says '$said', the package is $version" >&2; exit 1; }
echo "$said"
if [ -n "${2:-}" ]; then
  init=$(find "$work/root" -path '*/nbkit/__init__.py' | head -n 1)
  [ -n "$init" ] || { echo "the package has no Python module" >&2; exit 1; }
  got=$(cd "$work" && PYTHONPATH=$(dirname "$(dirname "$init")") "$2" -c "import nbkit; print(nbkit.__version__)")
  [ "$got" = "$version" ] || { echo "the packaged Python module says $got, the package is $version" >&2; exit 1; }
  echo "python: nbkit $got"
fi

# Each library the packaged binaries name (DT_NEEDED: their own dependencies; the rest is their
# dependencies' packages' business), where the loader finds it, and who provides it.
depends_names=" $(echo "$depends" | tr ',' '\n' | sed -E 's/^ *([^ (|]+).*/\1/' | tr '\n' ' ') "
needed=()  # "binary<TAB>soname<TAB>path"
while IFS= read -r binary; do
  while read -r soname path; do
    case "$path" in "$work/root"/*) continue ;; esac  # shipped in the package
    needed+=("$binary"$'\t'"$soname"$'\t'"$path")
  done < <(ldd "$binary" | awk -v needed=" $(readelf -d "$binary" | sed -nE 's/.*NEEDED.*\[(.*)\]/\1/p' | tr '\n' ' ')" \
             '$2 == "=>" && $3 ~ /^\// && index(needed, " " $1 " ") {print $1, $3}')
done < <(find "$work/root" -type f \( -name nbkit -o -name '*.so*' \))
candidates=()
for entry in "${needed[@]}"; do
  mapfile -t -O "${#candidates[@]}" candidates < <(spellings "${entry##*$'\t'}")
done
known=$(owners "${candidates[@]}")
status=0
for entry in "${needed[@]}"; do
  IFS=$'\t' read -r binary soname path <<<"$entry"
  owner=""
  while IFS= read -r candidate; do
    owner=$(owner_of "$candidate") && [ -n "$owner" ] && break
  done < <(spellings "$path")
  if [ -n "$owner" ]; then
    case "$owner" in libc6 | libgcc-s1 | libstdc++6) ;;  # essential, named anyway by shlibdeps
      *) [[ "$depends_names" == *" $owner "* ]] || { echo "$binary needs $soname ($owner), not in Depends" >&2; status=1; } ;;
    esac
  elif [[ "$soname" == libcu* ]]; then
    [[ "$depends_names" == *" cuda-"* || "$depends_names" == *" libcu"* ]] ||
      { echo "$binary needs $soname (CUDA) and the package names no CUDA dependency" >&2; status=1; }
  else
    echo "$binary needs $soname ($path), which no package provides" >&2; status=1
  fi
done
[ $status -eq 0 ] && echo "every shared library the package loads is in it or in its Depends"
exit $status
