"""Seeded differential cases: patchset's engine against real GNU ``patch -p1 -F0`` and ``git apply``.

Each case takes a real vLLM file (or a window of one), makes edits at 1-4 places, writes the
unified diff of that, and perturbs the file the diff is then applied to: lines shifted, one
context line altered, a region duplicated, the edits already (or partly) applied, empty files,
CRLF files and patches, a missing final newline, form feeds and other characters that
``str.splitlines`` takes for line breaks, zero-context hunks, hunks at the start and the end of
the file, removed or added lines that look like diff headers. The engine and both tools apply
the diff (the tools for real, in scratch directories); every case lands in a class. A class
that starts with ``BAD`` means patchset was looser than a tool, or wrote other bytes.

    python tests/differential.py --n 30000 --seed 1      # class counts, and the bad cases
"""

from __future__ import annotations

import argparse
import difflib
import inspect
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import threading
import types
from collections import Counter
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from patchset.core import engine  # noqa: E402
from patchset.core.patchfile import all_crlf, parse_patch, split_lines  # noqa: E402
from patchset.errors import PatchsetError  # noqa: E402

KINDS = ("clean", "shifted", "altered-context", "duplicated", "already-applied", "partly-applied",
         "empty-file", "emptied-file", "crlf", "crlf-patch-on-lf", "lf-patch-on-crlf", "no-final-newline",
         "final-newline-disagrees", "form-feed", "zero-context", "start-of-file", "end-of-file",
         "header-like-lines")
#: Bytes Python's str.splitlines takes for line breaks; a diff takes only "\n".
ODD_BREAKS = (b"\x0c", b"\x0b", b"\x1c", b"\x1d", b"\x1e", "\x85".encode(), "\u2028".encode(),
              "\u2029".encode(), b"\r")


@dataclass
class Case:
    number: int
    kind: str
    source: str  # the real file the case was made from
    path: str
    tree: bytes
    patch: bytes
    context: int

    def describe(self) -> str:
        head = f"case {self.number} ({self.kind}, -U{self.context}, from {self.source})"
        return f"{head}\n--- file ---\n{_show(self.tree)}\n--- patch ---\n{_show(self.patch)}"


@dataclass
class Verdict:
    rc: int
    log: str
    result: bytes | None  # the file after a run that applied everything
    hunks: dict[int, int | None] = field(default_factory=dict)  # hunk -> offset (None: failed)
    reversed: bool = False


def _text(line: bytes) -> str:
    return repr(line)[2:-1]


def _show(data: bytes, limit: int = 60) -> str:
    lines = split_lines(data)
    shown = [repr(ln)[2:-1] for ln in lines[:limit]]
    if len(lines) > limit:
        shown.append(f"... ({len(lines) - limit} more lines)")
    return "\n".join(shown) if shown else "(empty)"


# --- generation ---------------------------------------------------------------------------------


def real_files(root: Path, limit_lines: int = 4000) -> list[Path]:
    """The sdist's Python files, in a stable order (empty ones included: vLLM has many)."""
    files = sorted(p for top in ("vllm", "tests") for p in (root / top).rglob("*.py") if p.is_file())
    return [p for p in files if p.stat().st_size < limit_lines * 60]


def generate(files: list[Path], root: Path, seed: int, n: int, start: int = 0) -> Iterator[Case]:
    for number in range(start, start + n):
        rng = random.Random(f"{seed}:{number}")
        kind = KINDS[number % len(KINDS)] if number < len(KINDS) else rng.choice(KINDS)
        src = rng.choice(files)
        data = src.read_bytes()
        yield _make(rng, number, kind, src.relative_to(root).as_posix(), data)


def _window(rng: random.Random, lines: list[bytes]) -> list[bytes]:
    if len(lines) <= 40 or rng.random() < 0.2:
        return lines
    size = rng.randint(12, min(300, len(lines)))
    at = rng.randint(0, len(lines) - size)
    return lines[at:at + size]


def _new_line(rng: random.Random, lines: list[bytes], kind: str) -> bytes:
    roll = rng.random()
    if lines and roll < 0.25:
        return rng.choice(lines).rstrip(b"\n") + b"\n"  # a repeat: makes contexts ambiguous
    if kind == "header-like-lines" or roll < 0.3:
        return rng.choice([b"-- ", b"++ ", b"-- a/vllm/x.py", b"++ b/vllm/x.py", b"--", b"@@ -1 +1 @@",
                           b"\\ No newline"]) + b"\n"
    indent = b" " * rng.choice([0, 4, 8])
    return indent + f"patched_{rng.randrange(10**6)} = {rng.randrange(100)}".encode() + b"\n"


Edit = tuple[int, int, list[bytes]]  # at, how many lines removed, lines inserted


def _edits(rng: random.Random, lines: list[bytes], kind: str) -> list[Edit]:
    count = rng.randint(1, 4)
    size = len(lines)
    spots: list[int] = []
    if kind == "start-of-file":
        spots.append(rng.randint(0, min(2, size)))
    elif kind == "end-of-file":
        spots.append(max(0, size - rng.randint(0, 2)))
    while len(spots) < count:
        spots.append(rng.randint(0, size))
    edits: list[Edit] = []
    end = -1
    for at in sorted(set(spots)):
        if at <= end:
            continue
        remove = rng.choice([0, 1, 1, 2, 3]) if at < size else 0
        remove = min(remove, size - at)
        add = [_new_line(rng, lines, kind) for _ in range(rng.choice([0, 1, 1, 2, 3]))]
        if not remove and not add:
            add = [_new_line(rng, lines, kind)]
        edits.append((at, remove, add))
        end = at + remove
    return edits


def _applied(lines: list[bytes], edits: list[Edit]) -> list[bytes]:
    out = list(lines)
    for at, remove, add in sorted(edits, reverse=True):
        out[at:at + remove] = add
    return out


def _terminate(lines: list[bytes]) -> list[bytes]:
    """Every line but the last must end in a newline (edits may have moved an unterminated one)."""
    return [ln if ln.endswith(b"\n") or i == len(lines) - 1 else ln + b"\n" for i, ln in enumerate(lines)]


def _make(rng: random.Random, number: int, kind: str, source: str, data: bytes) -> Case:
    lines = _window(rng, split_lines(data))
    if kind == "empty-file":
        lines = []
    if kind == "form-feed":
        for _ in range(rng.randint(1, 4)):
            lines.insert(rng.randint(0, len(lines)), b"x = 1" + rng.choice(ODD_BREAKS) + b"  # odd\n")
    if kind in ("no-final-newline", "final-newline-disagrees") and lines:
        lines[-1] = lines[-1].rstrip(b"\n")
    lines = _terminate(lines)
    edits = _edits(rng, lines, kind) if kind != "emptied-file" else [(0, len(lines), [])]
    after = _terminate(_applied(lines, edits))
    if kind == "no-final-newline" and after and rng.random() < 0.5:
        after[-1] = after[-1] + b"\n" if not after[-1].endswith(b"\n") else after[-1].rstrip(b"\n")
    context = 0 if kind == "zero-context" else rng.choice([3, 3, 3, 3, 2, 1])
    crlf = kind in ("crlf", "lf-patch-on-crlf")
    before_p, after_p = (_crlf(lines), _crlf(after)) if kind == "crlf" else (lines, after)
    path = "pkg/" + source.rsplit("/", 1)[-1] if rng.random() < 0.1 else source
    patch = unified_diff(path, before_p, after_p, context)
    if kind == "crlf-patch-on-lf":
        patch = patch.replace(b"\n", b"\r\n")
    tree = _perturb(rng, kind, lines, after, edits)
    if crlf:
        tree = _crlf(tree)
    if kind == "final-newline-disagrees" and tree:
        tree[-1] = tree[-1] + b"\n" if not tree[-1].endswith(b"\n") else tree[-1].rstrip(b"\n")
    return Case(number, kind, source, path, b"".join(tree), patch, context)


def _crlf(lines: list[bytes]) -> list[bytes]:
    return [ln[:-1] + b"\r\n" if ln.endswith(b"\n") else ln for ln in lines]


def _perturb(rng: random.Random, kind: str, lines: list[bytes], after: list[bytes], edits: list[Edit]) -> list[bytes]:
    tree = list(lines)
    filler = [f"# inserted {rng.randrange(1000)}\n".encode() for _ in range(rng.randint(1, 12))]
    if kind == "already-applied":
        return list(after)
    if kind == "partly-applied" and len(edits) > 1:
        return _terminate(_applied(lines, rng.sample(edits, rng.randint(1, len(edits) - 1))))
    if kind == "shifted" or (kind == "start-of-file" and rng.random() < 0.5):
        at = 0 if kind == "start-of-file" else rng.randint(0, len(tree))
        tree[at:at] = filler
    elif kind == "end-of-file" and rng.random() < 0.6:
        tree = tree + filler if rng.random() < 0.5 else tree[:0] + tree[-4:] + tree
    elif kind == "altered-context" and tree:
        at, remove, _ = rng.choice(edits)
        near = [i for i in range(max(0, at - 3), min(len(tree), at + remove + 3)) if not at <= i < at + remove]
        if near:
            i = rng.choice(near)
            tree[i] = b"# altered " + tree[i]
    elif kind == "duplicated" and tree:
        at, remove, _ = rng.choice(edits)
        lo, hi = max(0, at - 4), min(len(tree), at + remove + 4)
        where = rng.randint(0, len(tree))
        tree[where:where] = tree[lo:hi]
        if rng.random() < 0.5:
            tree[0:0] = filler
    return _terminate(tree)


def unified_diff(path: str, a: list[bytes], b: list[bytes], context: int) -> bytes:
    """A git-style unified diff of two line lists, split on "\\n" only."""
    out = [f"diff --git a/{path} b/{path}\n--- a/{path}\n+++ b/{path}\n".encode()]
    matcher = difflib.SequenceMatcher(None, a, b, autojunk=False)
    for group in matcher.get_grouped_opcodes(context):
        i1, i2, j1, j2 = group[0][1], group[-1][2], group[0][3], group[-1][4]
        out.append(f"@@ -{_range(i1, i2)} +{_range(j1, j2)} @@\n".encode())
        for tag, a1, a2, b1, b2 in group:
            if tag == "equal":
                out += [_line(b" ", ln) for ln in a[a1:a2]]
                continue
            out += [_line(b"-", ln) for ln in a[a1:a2]]
            out += [_line(b"+", ln) for ln in b[b1:b2]]
    return b"".join(out)


def _range(start: int, stop: int) -> str:
    length = stop - start
    return f"{start + 1}" if length == 1 else f"{start if not length else start + 1},{length}"


def _line(prefix: bytes, line: bytes) -> bytes:
    return prefix + line if line.endswith(b"\n") else prefix + line + b"\n\\ No newline at end of file\n"


# --- hand-written cases the generator never makes ------------------------------------------------


def _hunk(first: int, changed: int, context: int = 3, word: str = "line") -> str:
    """A -U``context`` hunk of ``lines()``-style text changing line ``changed``, its old side from ``first``."""
    body = [f" {word} {i}\n" for i in range(changed - context, changed)] + [f"-{word} {changed}\n",
                                                                            f"+{word} {changed}!\n"]
    body += [f" {word} {i}\n" for i in range(changed + 1, changed + context + 1)]
    n = 2 * context + 1
    return f"@@ -{first},{n} +{first},{n} @@\n" + "".join(body)


def misordered_cases() -> list[Case]:
    """Two hunks of one file where the second's place lies before, or overlaps, the first's: difflib
    never writes these, and GNU patch and git apply each take some of them.

    * ``out-of-order``: the second hunk's old lines stand only before the first hunk. GNU patch
      refuses ("misordered hunks"); git apply applies both.
    * ``overlapping``: the second hunk's leading context is the first hunk's trailing context. GNU
      patch applies both; git apply refuses.
    * ``before-and-after``: the second hunk's old lines stand once before the first hunk and once
      after it; GNU patch takes the later copy, git apply the earlier one.
    """
    head = "diff --git a/m.py b/m.py\n--- a/m.py\n+++ b/m.py\n"
    plain = "".join(f"line {i}\n" for i in range(1, 31)).encode()
    block = [f"dup {c}\n" for c in "abcdefg"]
    twice = [f"line {i}\n" for i in range(1, 71)]
    twice[1:8] = block
    twice[59:66] = block
    dup = "@@ -25,7 +25,7 @@\n" + "".join(f" {b}" for b in block[:3]) + "-dup d\n+dup d!\n" + \
        "".join(f" {b}" for b in block[4:])
    shapes = [("out-of-order", plain, _hunk(17, 20) + _hunk(2, 5)),
              ("overlapping", plain, _hunk(17, 20) + _hunk(21, 24)),
              ("before-and-after", "".join(twice).encode(), _hunk(17, 20) + dup)]
    return [Case(-1 - i, kind, "hand-written", "m.py", tree, (head + hunks).encode(), 3)
            for i, (kind, tree, hunks) in enumerate(shapes)]


def planted(module: types.ModuleType, *swaps: tuple[str, str]) -> types.ModuleType:
    """A copy of ``module`` with each ``old`` text of its source replaced by ``new`` (each found exactly
    once): a planted bug, to show that a check catches it. The module itself is left as it is."""
    source = inspect.getsource(module)
    for old, new in swaps:
        assert source.count(old) == 1, f"not exactly once in {module.__name__}: {old!r}"
        source = source.replace(old, new)
    name = f"{module.__name__}_planted"
    copy = types.ModuleType(name)
    copy.__file__ = module.__file__
    sys.modules[name] = copy  # dataclasses look their module up while the classes are made
    try:
        exec(compile(source, f"<{name}>", "exec"), copy.__dict__)  # noqa: S102 -- this repository's own source
    finally:
        del sys.modules[name]
    return copy


# --- running ------------------------------------------------------------------------------------

GNU_HUNK = re.compile(r"^Hunk #(\d+) (succeeded|FAILED|ignored) at (\d+)(?: \(offset (-?\d+) lines?\))?", re.M)


def _scratch(work: Path, case: Case) -> Path:
    shutil.rmtree(work, ignore_errors=True)
    target = work / case.path
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_bytes(case.tree)
    return target


def run_gnu(case: Case, work: Path, patch_file: Path) -> Verdict:
    target = _scratch(work, case)
    r = subprocess.run(["patch", "-p1", "-F0", "-N", "--batch", "--no-backup-if-mismatch", "-r", "-", "--verbose",
                        "-i", str(patch_file)], cwd=work, capture_output=True)
    log = (r.stdout + r.stderr).decode("utf-8", "replace")
    hunks = {int(m.group(1)): (int(m.group(4) or 0) if m.group(2) == "succeeded" else None)
             for m in GNU_HUNK.finditer(log)}
    result = target.read_bytes() if r.returncode == 0 and target.exists() else None
    return Verdict(r.returncode, log, result, hunks, "Reversed (or previously applied)" in log)


def run_git(case: Case, work: Path, patch_file: Path) -> Verdict:
    target = _scratch(work, case)
    cmd = ["git", "apply", "--verbose"] + (["--unidiff-zero"] if case.context == 0 else []) + [str(patch_file)]
    env = {**os.environ, "GIT_CEILING_DIRECTORIES": str(work.parent)}
    r = subprocess.run(cmd, cwd=work, capture_output=True, env=env)
    log = (r.stdout + r.stderr).decode("utf-8", "replace")
    result = target.read_bytes() if r.returncode == 0 and target.exists() else None
    return Verdict(r.returncode, log, result)


def classify(case: Case, work: Path,
             apply_patch: Callable[..., engine.PatchOutcome] = engine.apply_patch) -> tuple[str, str]:
    """The case's class, and for a bad one what went wrong. ``apply_patch``: the engine's, or a
    :func:`planted` copy's (to show that the harness catches that bug)."""
    try:
        pf = parse_patch(case.patch, name="case.patch")
    except PatchsetError as e:
        ours = None
        why = str(e)
    else:
        ours = apply_patch({case.path: case.tree}, pf)
        why = ours.message
    patch_file = work / "case.patch"
    work.mkdir(parents=True, exist_ok=True)
    patch_file.write_bytes(case.patch)
    gnu = run_gnu(case, work / "gnu", patch_file)
    git = run_git(case, work / "git", patch_file)
    gnu_ok, git_ok = gnu.rc == 0 and gnu.result is not None, git.rc == 0 and git.result is not None
    if ours is None:
        if not gnu_ok and not git_ok:
            return "agree: refused (malformed patch)", ""
        if "CRLF" in why:
            return f"line endings refused ({'GNU patch' if gnu_ok else 'git apply'} applies)", ""
        return "BAD: patch refused where a tool applies it", why
    hunk_level = _hunk_disagreement(ours, gnu, _endings_may_differ(case))
    if hunk_level:
        return hunk_level
    if ours.ok:
        return _applies(case, ours, gnu, git, gnu_ok, git_ok)
    if ours.status == "already-applied":
        return ("agree: already-applied (GNU says reversed)", "") if gnu.reversed else \
            ("already-applied told apart", "")
    return _refused(ours, gnu, git, gnu_ok, git_ok, _endings_may_differ(case))


NAMED = ("ambiguous", "line endings are ignored", "mixed line endings", "must land at the",
         "cannot tell a re-application", "neither applied nor applicable", "out of order or overlap",
         "GNU patch would place it there")


#: GNU patch 2.7.6 sometimes dies writing a file whose last line has no newline; not a verdict.
GNU_CRASH = "write error : Success"


def _endings_may_differ(case: Case) -> bool:
    """Can line endings be why a hunk is refused? Only where the file or the patch has a CR, or a
    last line without its newline: otherwise "line endings" is a wrong reason, hiding a looser search."""
    return b"\r" in case.tree or b"\r" in case.patch or b"\n\\ No newline at end of file" in case.patch or \
        bool(case.tree) and not case.tree.endswith(b"\n")


ENDINGS = ("line endings are ignored", "mixed line endings")


def _hunk_disagreement(ours: engine.PatchOutcome, gnu: Verdict, endings: bool = True) -> tuple[str, str] | None:
    """Hunk by hunk against GNU patch, up to the first hunk the two treat differently. ``endings``: whether
    line endings can be a reason here (:func:`_endings_may_differ`)."""
    if gnu.reversed:
        return None
    for h in ours.hunks:
        if not h.number or h.number not in gnu.hunks:
            continue
        theirs = gnu.hunks[h.number]
        what = f"hunk {h.number}: patchset {h.status} offset {h.offset} ({h.message}); GNU patch {theirs}"
        if h.applied and theirs is None:
            return "BAD: hunk placed where GNU patch fails it", what
        if h.applied and theirs != h.offset:
            return "BAD: hunk placed elsewhere than GNU patch", what
        if not h.applied and theirs is not None:
            named = h.status in (engine.HunkStatus.ALREADY, engine.HunkStatus.FUZZ) or \
                any(n in h.message for n in NAMED if endings or n not in ENDINGS)
            return None if named else ("BAD: hunk refused, no named reason, where GNU patch places it", what)
    return None


def _applies(case: Case, ours: engine.PatchOutcome, gnu: Verdict, git: Verdict, gnu_ok: bool,
             git_ok: bool) -> tuple[str, str]:
    mine = ours.files.get(case.path, case.tree)
    if all_crlf(case.patch) and gnu_ok and mine == gnu.result and (not git_ok or mine != git.result):
        # patchset reads a patch wholly in CRLF as GNU patch does; git apply refuses it, or, where no context
        # line has to match, keeps the CRs.
        return "agree with GNU patch: a CRLF patch read with its CRs stripped (git apply " + (
            "refuses it)" if not git_ok else "keeps them)"), ""
    if not gnu_ok and GNU_CRASH in gnu.log and git_ok and mine == git.result:
        return "agree with git apply (GNU patch 2.7.6 crashed: 'write error : Success')", ""
    if not gnu_ok or not git_ok:
        who = " and ".join(t for t, ok in (("GNU patch", gnu_ok), ("git apply", git_ok)) if not ok)
        verb = "refuse" if " and " in who else "refuses"
        return f"BAD: applies where {who} {verb}", (gnu.log if not gnu_ok else git.log)[-2000:]
    if mine is None:
        return "BAD: deletes a file the patch only edits", ""
    if mine != gnu.result or mine != git.result:
        who, other = ("GNU patch", gnu.result) if mine != gnu.result else ("git apply", git.result)
        delta = difflib.unified_diff([_text(x) for x in split_lines(mine)],
                                     [_text(x) for x in split_lines(other or b"")], "patchset", who, lineterm="")
        return "BAD: other bytes than a tool", "\n".join(delta)
    offsets = {h.number: h.offset for h in ours.hunks if h.number}
    if gnu.hunks and any(gnu.hunks.get(k) not in (None, v) for k, v in offsets.items()):
        return "BAD: offsets differ from GNU patch", f"ours {offsets}, GNU {gnu.hunks}"
    moved = any(h.status == engine.HunkStatus.OFFSET for h in ours.hunks)
    return ("agree: applies with offset" if moved else "agree: applies exactly"), ""


def _refused(ours: engine.PatchOutcome, gnu: Verdict, git: Verdict, gnu_ok: bool,
             git_ok: bool, endings: bool = True) -> tuple[str, str]:
    statuses = {h.status for h in ours.hunks}
    text = " ".join(h.message for h in ours.hunks) + " " + ours.message
    if "ambiguous" in text:
        reason = "ambiguity refused"
    elif engine.HunkStatus.ALREADY in statuses:
        reason = "partial refused (some hunks already applied)"
    elif "line endings are ignored" in text or "mixed line endings" in text:
        reason = "line endings refused"
    elif engine.HunkStatus.FUZZ in statuses:
        reason = "fuzz refused"
    elif "must land at the" in text:
        reason = "anchoring refused"
    elif "cannot tell a re-application" in text or "neither applied nor applicable" in text:
        reason = "re-application refused"
    elif "out of order or overlap" in text:
        reason = "overlap refused"
    elif any(h.applied for h in ours.hunks):
        reason = "partial refused"
    else:
        reason = "context not found"
    if reason == "line endings refused" and not endings and (gnu_ok or git_ok):
        return "BAD: refused for line endings this case does not have, where a tool applies", text
    if not gnu_ok and not git_ok:
        return f"agree: refused ({reason})", ""
    if reason != "context not found":
        who = "both tools apply" if gnu_ok and git_ok else "GNU patch applies" if gnu_ok else "git apply applies"
        return f"{reason} ({who})", ""
    return "BAD: refused where both tools apply" if gnu_ok and git_ok else \
        "BAD: refused, no named reason, where one tool applies", text


def shrink(case: Case, work: Path, cls: str, budget: int = 300) -> Case:
    """The case with as few file lines as still give class ``cls`` (the patch kept as it is)."""
    lines = split_lines(case.tree)
    chunk = max(len(lines) // 2, 1)
    while chunk and budget > 0:
        i = 0
        while i < len(lines) and budget > 0:
            trial = lines[:i] + lines[i + chunk:]
            budget -= 1
            if classify(replace(case, tree=b"".join(trial)), work)[0] == cls:
                lines = trial
            else:
                i += chunk
        chunk //= 2
    return replace(case, tree=b"".join(lines), kind=case.kind + ", shrunk")


SHOW = os.environ.get("PATCHSET_DIFF_SHOW", "BAD")


@dataclass
class Run:
    counts: Counter = field(default_factory=Counter)
    bad: list[str] = field(default_factory=list)

    def summary(self) -> str:
        width = max((len(k) for k in self.counts), default=0)
        return "\n".join(f"{k:<{width}}  {v:>6}" for k, v in sorted(self.counts.items()))


def run(cases: Iterator[Case], keep_bad: int = 5, workers: int = 2) -> Run:
    """Classify every case; the tools run in parallel scratch directories (they wait on disk, not CPU)."""
    out = Run()
    with tempfile.TemporaryDirectory(prefix="patchset-diff-") as tmp, ThreadPoolExecutor(workers) as pool:
        slots = [Path(tmp) / f"w{i}" for i in range(workers)]
        free = list(slots)
        lock = threading.Lock()

        def one(case: Case) -> tuple[Case, str, str]:
            with lock:
                slot = free.pop()
            try:
                cls, detail = classify(case, slot)
                if cls.startswith("BAD"):
                    case = shrink(case, slot, cls)
                    detail = classify(case, slot)[1]
                return case, cls, detail
            finally:
                with lock:
                    free.append(slot)

        for case, cls, detail in pool.map(one, cases):
            out.counts[cls] += 1
            if (cls.startswith("BAD") or cls.startswith(SHOW)) and len(out.bad) < keep_bad:
                out.bad.append(f"{cls}\n{detail}\n{case.describe()}")
    return out


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--n", type=int, default=1000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--start", type=int, default=0, help="first case number (to rerun one case)")
    ap.add_argument("--root", help="an unpacked vLLM sdist (default: 0.29.0 from the index, cached)")
    args = ap.parse_args(argv)
    if args.root:
        root = Path(args.root)
    else:
        from patchset.sources import open_source

        root = open_source("pypi", "0.29.0").root  # type: ignore[attr-defined]
    result = run(generate(real_files(root), root, args.seed, args.n, args.start), keep_bad=20)
    print(result.summary())
    for b in result.bad:
        print("\n" + b)
    return 1 if result.bad else 0


if __name__ == "__main__":
    sys.exit(main())
