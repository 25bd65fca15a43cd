"""A release's verdicts, kept: a warm ``check`` of a series nobody changed reads them instead of working
them out again.

What a release's evaluation says (every patch's status, every hunk's place or refusal, the moved-code
leads) is a pure function of four things, and the entry's key is all four: the manifest (its path and
its bytes), the bytes of each patch file the release's series names, the release by content (an sdist's
or wheel's sha256, a commit's tree: ``lineindex.tree_key``, with the source's identity, which names a git
tag's commit, whose history says which upstream commits it holds; a folder has no such identity and is
never kept), and patchset's own code (every module of the package, by path, size and modification time,
so an upgrade or an edit of an editable install starts afresh). Change a byte of any of them and the key
changes.

Only a result without its touched files is kept (what ``check`` reports in text and JSON); the
Markdown report's dependency graph reads the files and is worked out every time. An evaluation that
met an unreadable or malformed patch file is never kept: such a check refuses, and must refuse every
time. Nor is one where something could not be read or known and a fallback stood in (the listing of a
wheel's sdist, an upstream commit the repository does not know yet): the next run works it out again.
Warnings of the tree and the manifest are added by the caller on every run, not kept.

The moved-code leads of a release are kept beside, one entry a release (``derived/leads/``): each
failed hunk's lead by the hunk's file, its old lines and whether the file is gone, which with the
release is all a lead rests on. After a patch is edited, its release's verdicts are worked out again,
but a hunk followed before is not followed again, and the release's line index is not even read.

An entry is ``derived/check/KEY.marshal``: the sha256 of its payload, then the payload (marshal of
plain values). One cut short or damaged anywhere is not whole: it is worked out again and written
anew. A whole one is read back only into the result's own shapes and status words; anything else is
passed over the same way. ``PATCHSET_NO_PARSE_CACHE=1`` turns it off with the other derived entries.
"""

from __future__ import annotations

import contextlib
import functools
import hashlib
import marshal
import sys
from pathlib import Path

from patchset.cache import derived, keep_derived_bytes, read_derived_bytes
from patchset.core.engine import HunkResult, HunkStatus
from patchset.core.manifest import Manifest
from patchset.core.series import PatchResult, PatchStatus, ReleaseResult
from patchset.sources import Source, lineindex

__all__ = ["Lead", "entry", "keep", "keep_leads", "lead_key", "leads_entry", "load", "load_leads"]

_FORMAT = f"check-1:{sys.implementation.cache_tag}:{marshal.version}"  # marshal's format is this Python's own


def entry(manifest: Manifest, version: str, tree: Source) -> Path | None:
    """Where ``version``'s verdicts for this manifest and tree are kept; None when they cannot be kept
    (a folder tree, a manifest or patch file that cannot be read, the cache turned off)."""
    key = lineindex.tree_key(tree)
    if key is None:
        return None
    digest = hashlib.sha256()
    try:
        path = manifest.path.resolve()
        for part in (_FORMAT, str(path), version, key, tree.identity, manifest.pypi):
            digest.update(part.encode("utf-8", "surrogateescape") + b"\0")
        digest.update(path.read_bytes())
        for p in manifest.patches:
            choice = p.choice_for(version)
            if choice is None:
                continue
            digest.update(f"\0{p.id}\0{choice.path}\0".encode("utf-8", "surrogateescape"))
            digest.update(hashlib.sha256(Path(choice.path).read_bytes()).digest())
    except OSError:
        return None
    return derived("check", digest.digest(), _code(), ".marshal")


def load(at: Path | None) -> ReleaseResult | None:
    """The result kept at ``at``; None when there is none, or it is not whole, or not of the result's shapes."""
    data = read_derived_bytes(at)
    if data is None or hashlib.sha256(data[32:]).digest() != data[:32]:
        return None
    with contextlib.suppress(ValueError, TypeError, EOFError, KeyError, IndexError):
        return _result(marshal.loads(data[32:]))
    return None


def keep(at: Path | None, result: ReleaseResult) -> None:
    """Keep ``result``'s verdicts at ``at`` (whole or not at all, in place of a damaged entry); its touched files
    are not kept, nor a result
    a fallback stood in for something unreadable in (``ReleaseResult.settled``)."""
    if not result.settled:
        return
    payload = marshal.dumps(_plain(result))
    keep_derived_bytes(at, hashlib.sha256(payload).digest() + payload, replace=True)  # over a damaged one


def leads_entry(tree: Source, package: str) -> Path | None:
    """Where the moved-code leads found in ``tree`` are kept (one entry a release); None as for :func:`entry`."""
    key = lineindex.tree_key(tree)
    if key is None:
        return None
    return derived("leads", f"{_FORMAT}\0{key}\0{tree.identity}\0{package}".encode(), _code(), ".marshal")


#: A lead: where a hunk's old lines stand now (``FILE:LINE``, the file, why we think so), or None (nowhere).
Lead = tuple[str, str, str] | None


def lead_key(path: str, block: list[bytes], gone: bool) -> bytes:
    """What a lead rests on besides the release: the hunk's file, its old lines, and whether the file is gone."""
    digest = hashlib.sha256(f"{path}\0{int(gone)}\0{len(block)}\0".encode("utf-8", "surrogateescape"))
    for line in block:
        digest.update(b"%d\0" % len(line) + line)
    return digest.digest()


def load_leads(at: Path | None) -> dict[bytes, Lead]:
    """The leads kept at ``at``; none when there are none, or they are not whole, or not of a lead's shape."""
    data = read_derived_bytes(at)
    if data is None or hashlib.sha256(data[32:]).digest() != data[:32]:
        return {}
    with contextlib.suppress(ValueError, TypeError, EOFError):
        leads = marshal.loads(data[32:])
        if type(leads) is dict and all(type(k) is bytes and len(k) == 32 and _lead(v) for k, v in leads.items()):
            return leads
    return {}


def keep_leads(at: Path | None, leads: dict[bytes, Lead]) -> None:
    """Keep ``leads`` at ``at`` (whole or not at all), in place of what was there."""
    payload = marshal.dumps(leads)
    keep_derived_bytes(at, hashlib.sha256(payload).digest() + payload, replace=True)


def _lead(v: object) -> bool:
    return v is None or (type(v) is tuple and len(v) == 3 and all(type(x) is str for x in v))


@functools.cache  # once per process: the package's files do not change under it
def _code() -> tuple[str, ...]:
    """Every module of patchset: the verdicts rest on the engine, the parser, the series, the leads and
    the sources, and what they import."""
    root = Path(__file__).resolve().parents[1]
    return tuple(sorted(str(p) for p in root.rglob("*.py")))


def _plain(r: ReleaseResult) -> tuple:
    return (r.vllm, r.source, tuple(r.warnings), tuple(sorted(r.modes.items())),
            tuple((p.id, p.status.value, p.evidence, p.message, p.patch_file, p.sha256,
                   tuple((h.file, h.number, h.status.value, h.applied, h.line, h.offset, h.fuzz, h.message,
                          h.candidates, h.differ, h.patch_line, h.moved, h.moved_evidence) for h in p.hunks),
                   p.skipped, p.tree, p.files) for p in r.patches))


def _result(t: tuple) -> ReleaseResult:
    vllm, source, warnings, modes, patches = t
    return ReleaseResult(
        _str(vllm), _str(source),
        [PatchResult(_str(pid), _PATCH_WORDS[status], _str(evidence), _str(message), _opt(patch_file), _opt(sha),
                     tuple(_hunk(h) for h in hunks), _strs(skipped), _str(tree), _strs(files))
         for pid, status, evidence, message, patch_file, sha, hunks, skipped, tree, files in patches],
        warnings=list(_strs(warnings)), modes={_str(k): _int(v) for k, v in modes})


_PATCH_WORDS = {w.value: w for w in PatchStatus}
_HUNK_WORDS = {w.value: w for w in HunkStatus}
#: A hunk's plain values, by type: its line is a number or None (a file-level change, a file not found).
_HUNK_SHAPES = {(str, int, str, bool, line, int, int, str, tuple, tuple, int, str, str) for line in (int, type(None))}


def _hunk(t: tuple) -> HunkResult:
    """A hunk's result from its plain values (a few thousand a check: its checks are kept to one pass)."""
    if tuple(map(type, t)) not in _HUNK_SHAPES or not all(type(c) is int for c in t[8]) \
            or not all(type(d) is str for d in t[9]):
        raise TypeError("not a hunk's result")
    return HunkResult(t[0], t[1], _HUNK_WORDS[t[2]], *t[3:])


def _str(v: object) -> str:
    if type(v) is not str:
        raise TypeError("not a text")
    return v


def _opt(v: object) -> str | None:
    return None if v is None else _str(v)


def _int(v: object) -> int:
    if type(v) is not int:
        raise TypeError("not a number")
    return v


def _strs(v: object) -> tuple[str, ...]:
    if type(v) is not tuple:
        raise TypeError("not a list of texts")
    return tuple(_str(x) for x in v)
