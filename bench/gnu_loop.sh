#!/usr/bin/env bash
# The best hand loop on warm trees, as a fork maintainer would write it: for each release, copy only
# the files the series touches into a scratch tree, then run GNU `patch -F0` for each patch in series
# order (cumulative). Prints the number of patches that did not apply.
#
#   gnu_loop.sh TOUCHED SUBDIR TREE=SERIES...
#     TOUCHED  the repository-layout paths the series touches (vllm/..., tests/...)
#     SUBDIR   where `patch -p1` runs inside a tree: "." for repository layout, "vllm" for package layout
#     TREE     a pristine release tree (warm, unpacked)
#     SERIES   that release's patch files, one a line, in series order
set -u
touched=$1 sub=$2
shift 2
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
fails=0
for pair in "$@"; do
  tree=${pair%%=*} series=${pair#*=}
  rm -rf "$scratch/t" && mkdir -p "$scratch/t/$sub"
  (cd "$tree" && xargs -a "$touched" cp --parents -t "$scratch/t" 2>/dev/null)
  while read -r p; do
    patch -s -p1 -F0 --batch --no-backup-if-mismatch -r - -d "$scratch/t/$sub" -i "$p" >/dev/null 2>&1 \
      || fails=$((fails + 1))
  done < "$series"
done
echo "$fails"
