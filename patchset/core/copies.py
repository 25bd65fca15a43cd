"""A file a patch creates that is a copy of an upstream file: did upstream change what it copied?

Forks keep adapted copies of upstream modules (an XPU model runner made from
the GPU one, a FlagCX engine made from upstream's NCCL engine). A port carries
such a file as it is: it is the fork's own, no hunk meets upstream's lines,
nothing conflicts. When upstream changed the lines the copy was made from,
the maintainer usually brings the copy along (measured on the hand ports in
docs/records/port.md: FlagScale's 0.9.1 → 0.10.0 port rewrote 52 lines of its FlagCX
engine that upstream had changed in the engine it copies; llm-scaler did the
same for its XPU runners), and sometimes keeps it as it is. Whether it must
follow is a person's call, so this is a note to review, not a refusal.

The rule, for a Python file the patch creates and V does not ship:

* its source is the file of U (U's package, with the files the series creates there) that
  holds the most of its lines, at least ``RENAME_SIMILARITY`` of a sample of
  them (:meth:`PyIndex.renamed_to`, the share ``git diff -M`` takes for a
  rename, as ``git diff -C`` finds a copy);
* the source in V: the same path, or, where V no longer ships it, the file of
  V that holds at least ``RENAME_SIMILARITY`` of its sampled lines (upstream
  moved it, as ``git diff -M`` finds a rename);
* upstream changed lines of it that the copy holds: lines (stripped,
  meaningful) that U's source has, V's source no longer has anywhere, and
  the copy still has;
* where V ships the source nowhere, not even renamed, the code the copy was
  made from is gone upstream (vLLM removing its V0 workers, say): the note
  says so, with no lines to count (llm-scaler's maintainers reworked both such
  copies on their hand ports, docs/records/port.md).

U's source is U's pristine file where U ships one, else the series' own file
(a backport the series adds to U that V now ships itself). Pure: contents
in, findings out.
"""

from __future__ import annotations

import difflib
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from patchset.core.moved import RENAME_SIMILARITY, PyIndex, meaningful
from patchset.core.patchfile import split_lines


@dataclass(frozen=True)
class Drift:
    """A copy whose source upstream changed where the copy follows it, or removed."""

    file: str  # the copy, as the patch creates it
    source: str  # the upstream file it was made from (U's path)
    share: float  # share of the copy's sampled lines that stand in the source (U)
    lines: int  # the source's lines upstream changed or removed that the copy still holds (0: removed)
    line: int  # 1-based, in the copy: the first of them (0: removed)
    first: str  # that line, stripped, for the message
    moved_to: str | None = None  # V's path of the source, where V moved it
    removed: bool = False  # V ships the source nowhere, not even renamed
    diff: str = ""  # upstream's change to the source (U -> V), only the hunks that change lines the copy holds

    def message(self, u: str, v: str) -> str:
        copy = f"{self.file} is a copy of {self.source} ({self.share:.0%} of its lines stand there in vllm {u}); "
        if self.removed:
            return (copy + f"vllm {v} no longer ships {self.source}, and none of its files holds half of its lines: "
                    f"the code the copy was made from is gone upstream: check the copy still fits vllm {v}, or keep "
                    "it as it is")
        where = f"{self.source} (moved to {self.moved_to})" if self.moved_to else self.source
        return (copy + f"vllm {v} changed {self.lines} line(s) of {where} that the copy still holds (first at "
                f"{self.file}:{self.line}: '{self.first[:60]}'): bring the copy up to date, or keep it as it is")


def drift(path: str, copy: bytes, index_u: PyIndex, source_u: Callable[[str], bytes | None],
          source_v: Callable[[str], bytes | None], index_v: Callable[[], PyIndex] | None = None,
          exclude_v: frozenset[str] = frozenset(), shipped_u: Callable[[str], bool] = lambda _path: True,
          ) -> Drift | None:
    """``copy`` (created at ``path``) against the U file it was made from and that file in V; None when it is no
    copy, or upstream changed none of the lines it copied. Where V lacks the source's path and U ships it
    (``shipped_u``: not a file only the series creates, which upstream never had), ``index_v`` (V's files, searched
    only then; ``exclude_v``: files of it that are no upstream code, such as the series' own) says whether V moved
    it; without ``index_v`` such a copy gets no finding."""
    homes = index_u.renamed_to(copy, exclude=frozenset({path}))
    if not homes or homes[0][1] < RENAME_SIMILARITY:
        return None
    source, share = homes[0]
    old, new = source_u(source), source_v(source)
    moved_to = None
    if old is not None and new is None and index_v is not None and shipped_u(source):
        there = index_v().renamed_to(old, exclude=exclude_v | {path})
        if not there or there[0][1] < RENAME_SIMILARITY:
            return Drift(path, source, share, 0, 0, "", removed=True)
        moved_to = there[0][0]
        new = source_v(moved_to)
    if old is None or new is None or old == new:
        return None
    a, b = split_lines(old), split_lines(new)
    still = {x.strip() for x in b}
    changed: set[bytes] = set()
    ops = difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes()
    for tag, i1, i2, _j1, _j2 in ops:
        if tag in ("replace", "delete"):
            changed.update(s for x in a[i1:i2] if meaningful(x) and (s := x.strip()) not in still)
    held = [(n, s) for n, x in enumerate(split_lines(copy), 1) if (s := x.strip()) in changed]
    if not held:
        return None
    line, first = held[0]
    return Drift(path, source, share, len({s for _n, s in held}), line, first.decode(errors="replace"), moved_to,
                 diff=upstream_diff(source, moved_to or source, a, b, {s for _n, s in held}, ops=ops))


def upstream_diff(old_path: str, new_path: str, a: list[bytes], b: list[bytes], held: set[bytes],
                  context: int = 1, ops: Sequence[tuple[str, int, int, int, int]] | None = None) -> str:
    """What upstream changed of the lines ``held`` (stripped) that the copy holds: a unified diff of ``a`` -> ``b``
    (the source in U and in V) made of only the changes that replace or remove such a line, each with ``context``
    lines around it (changes closer than that share a hunk). A source folded into a larger file (a move) gives
    its changed lines, not the whole new file. ``ops``: ``a`` -> ``b``'s opcodes, where the caller has them."""
    if ops is None:
        ops = list(difflib.SequenceMatcher(None, a, b, autojunk=False).get_opcodes())
    picked = [k for k, (tag, i1, i2, _j1, _j2) in enumerate(ops)
              if tag in ("replace", "delete") and any(x.strip() in held for x in a[i1:i2])]
    if not picked:
        return ""
    groups = [[picked[0], picked[0]]]
    for k in picked[1:]:
        if ops[k][1] - ops[groups[-1][1]][2] <= 2 * context:
            groups[-1][1] = k
        else:
            groups.append([k, k])
    out = [f"--- a/{old_path}\n", f"+++ b/{new_path}\n"]
    for first, last in groups:
        i1, j1 = ops[first][1], ops[first][3]
        before = min(context, i1 - ops[first - 1][1]) if first > 0 and ops[first - 1][0] == "equal" else 0
        i2, j2 = ops[last][2], ops[last][4]
        after = (min(context, ops[last + 1][2] - ops[last + 1][1])
                 if last + 1 < len(ops) and ops[last + 1][0] == "equal" else 0)
        body = [" " + _text(x) for x in a[i1 - before:i1]]
        for tag, p1, p2, q1, q2 in ops[first:last + 1]:
            if tag == "equal":
                body += [" " + _text(x) for x in a[p1:p2]]
            else:
                body += ["-" + _text(x) for x in a[p1:p2]] + ["+" + _text(x) for x in b[q1:q2]]
        body += [" " + _text(x) for x in a[i2:i2 + after]]
        na, nb = i2 + after - (i1 - before), j2 + after - (j1 - before)
        out.append(f"@@ -{i1 - before + (1 if na else 0)},{na} +{j1 - before + (1 if nb else 0)},{nb} @@\n")
        out += body
    return "".join(out)


def _text(line: bytes) -> str:
    text = line.decode(errors="replace")
    return text if text.endswith("\n") else text + "\n\\ No newline at end of file\n"
