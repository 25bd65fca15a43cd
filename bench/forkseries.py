"""Seeded series of fork-shaped patches made from real vLLM files, for the benchmarks.

The shape follows what real forks carry (see ../shared/facts.md): patches in package-relative layout
(``a/v1/...``, applied with ``patch -p1 -d site-packages/vllm``), mostly small hunks, a few patches of
about 30 hunks, one patch of about 200 KB, later patches editing files that earlier ones touched (so the
order matters), each with a free-form preamble. Every patch applies, cumulatively and exactly, to the
release the series is generated from; on later releases many hunks fail, which exercises the
failure path (nearest candidate, differing lines).
"""

from __future__ import annotations

import difflib
import random
from dataclasses import dataclass, field
from pathlib import Path


@dataclass
class Series:
    root: Path  # folder holding patches.yaml and recipes/
    patches: list[Path] = field(default_factory=list)
    touched: set[str] = field(default_factory=set)  # repository-layout paths

    @property
    def manifest(self) -> Path:
        return self.root / "patches.yaml"

    def write_lists(self) -> tuple[Path, Path]:
        """The series and touched-files lists the GNU loop reads."""
        series, touched = self.root / "series.txt", self.root / "touched.txt"
        series.write_text("".join(f"{p}\n" for p in self.patches))
        touched.write_text("".join(f"{t}\n" for t in sorted(self.touched)))
        return series, touched


def candidate_files(tree: Path, min_lines: int = 150) -> list[str]:
    out = []
    for f in sorted((tree / "vllm").rglob("*.py")):
        text = f.read_text(encoding="utf-8", errors="replace")
        if text.count("\n") >= min_lines and "\r" not in text and "\x0c" not in text:
            out.append(str(f.relative_to(tree)))
    return out


def _edit(lines: list[str], n_hunks: int, rng: random.Random, tag: str) -> list[str]:
    """``lines`` with ``n_hunks`` separate edits: a line changed, or lines inserted after one."""
    spots = sorted(rng.sample(range(5, len(lines) - 5, 9), min(n_hunks, (len(lines) - 10) // 9)))
    out = list(lines)
    for at in reversed(spots):
        line = out[at].rstrip("\n")
        indent = line[: len(line) - len(line.lstrip())]
        if rng.random() < 0.5 and line.strip() and not line.rstrip().endswith("\\"):
            out[at] = f"{line}  # {tag}\n"
        else:
            out[at + 1:at + 1] = [f"{indent}# {tag}: fork note {k}\n" for k in range(rng.randint(1, 3))]
    return out


def _diff(path: str, before: list[str], after: list[str]) -> str:
    rel = path.split("/", 1)[1]  # package layout: relative to vllm/
    body = difflib.unified_diff(before, after, f"a/{rel}", f"b/{rel}", n=3)
    return f"diff --git a/{rel} b/{rel}\n" + "".join(body)


def generate(tree: Path, dest: Path, *, count: int, targets: list[str], seed: int = 1) -> Series:
    """Write ``count`` patches and a manifest for ``targets`` under ``dest``."""
    rng = random.Random(seed)
    files = candidate_files(tree)
    current: dict[str, list[str]] = {}
    series = Series(dest)
    big = {count // 3, count // 2, (2 * count) // 3}
    for i in range(count):
        pid = f"fork-{i:03d}"
        tag = f"{pid} keeps the fork's behaviour"
        if i == count - 1:
            picks, hunks = rng.sample(files, 12), 60  # the ~200 KB patch
        elif i in big:
            picks, hunks = [rng.choice(files)], 30
        else:
            pool = sorted(current) if current and rng.random() < 0.3 else files
            picks, hunks = rng.sample(pool, min(len(pool), rng.randint(1, 3))), rng.randint(1, 4)
        text = f"{pid}: carry a fork change (see the fork's tracker)\nNot upstream yet.\n\n"
        for path in picks:
            before = current.get(path) or (tree / path).read_text(encoding="utf-8").splitlines(keepends=True)
            after = _edit(before, hunks, rng, tag)
            text += _diff(path, before, after)
            current[path] = after
            series.touched.add(path)
        out = dest / "recipes" / pid / f"{pid}.patch"
        out.parent.mkdir(parents=True, exist_ok=True)
        out.write_text(text)
        series.patches.append(out)
    _manifest(series, targets)
    return series


def _manifest(series: Series, targets: list[str]) -> None:
    lines = ["schema: 1", "layout: {root: vllm}", "targets:"]
    lines += [f'  "{v}": {{}}' for v in targets]
    lines.append("patches:")
    for p in series.patches:
        pid = p.stem
        lines += [f"  - id: {pid}", "    origin: fork", '    releases: ">=0.20"',
                  f"    patch: recipes/{pid}/{p.name}"]
    series.manifest.write_text("\n".join(lines) + "\n")
