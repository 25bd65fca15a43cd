#!/bin/sh
# A second, real CPython for the tests of core/bytecode.py that judge another interpreter's pycs
# (tests/test_core_bytecode.py): Debian 11's python3.9 (cache tag cpython-39, no exception tables),
# three packages (about 5 MB) fetched with apt into a private folder and unpacked with dpkg -x,
# nothing installed system-wide. Prints the interpreter's path. Debian 12 has only 3.11, and 3.9 is
# the oldest Python bytecode.py's shipped text must run on.
#   sh .ci/other-python.sh [DEST]     (default: $PATCHSET_CACHE/other-python)
set -eu
DEST="${1:-${PATCHSET_CACHE:-$HOME/.cache/patchset}/other-python}"
EXE="$DEST/usr/bin/python3.9"
if [ -x "$EXE" ] && "$EXE" -B -c 'import json, dis, subprocess, tempfile, hashlib' 2>/dev/null; then
  echo "$EXE"; exit 0
fi
WORK="$(mktemp -d "${TMPDIR:-/tmp}/other-python.XXXXXX")"
trap 'rm -rf "$WORK"' EXIT
mkdir -p "$WORK/lists/partial" "$WORK/archives/partial" "$WORK/debs"
# The signing keys of Debian 11 are in Debian 12's debian-archive-keyring.
# From the Debian mirror this machine's apt already uses (its deb822 sources, else sources.list).
MIRROR="$(sed -n 's|^URIs:[[:space:]]*\([^[:space:]]*/debian\)/*[[:space:]]*$|\1|p' \
  /etc/apt/sources.list.d/*.sources 2>/dev/null | head -n 1)"
[ -n "$MIRROR" ] || MIRROR="$(sed -n 's|^deb[[:space:]]\{1,\}\(\[[^]]*\][[:space:]]\{1,\}\)\{0,1\}\([^[:space:]]*/debian\)/*[[:space:]].*|\2|p' \
  /etc/apt/sources.list 2>/dev/null | head -n 1)"
[ -n "$MIRROR" ] || { echo "other-python.sh: no Debian mirror in this machine's apt sources" >&2; exit 1; }
echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] $MIRROR bullseye main" > "$WORK/sources.list"
APT="-o Dir::Etc::SourceList=$WORK/sources.list -o Dir::Etc::SourceParts=/nonexistent
     -o Dir::State::Lists=$WORK/lists -o Dir::Cache=$WORK -o Dir::State::status=/dev/null
     -o APT::Sandbox::User=$(id -un) -o Debug::NoLocking=1 -o APT::Architecture=amd64"
# shellcheck disable=SC2086
apt-get $APT -qq update >&2
# shellcheck disable=SC2086
(cd "$WORK/debs" && apt-get $APT -qq download python3.9-minimal libpython3.9-minimal libpython3.9-stdlib >&2)
rm -rf "$DEST.part" && mkdir -p "$DEST.part"
for deb in "$WORK"/debs/*.deb; do dpkg -x "$deb" "$DEST.part"; done
# Its standard library compiled once, as Debian's own install does: otherwise every run recompiles it.
"$DEST.part/usr/bin/python3.9" -m compileall -q "$DEST.part/usr/lib/python3.9" >/dev/null 2>&1 || true
rm -rf "$DEST" && mv "$DEST.part" "$DEST"
"$EXE" -c 'import sys; assert sys.implementation.cache_tag == "cpython-39"' >&2
echo "$EXE"
