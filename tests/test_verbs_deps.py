"""`patchset deps` on a series built from real vLLM 0.29.0 files, with dependencies known by construction."""

from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
from helpers import udiff

from patchset.cache import Cache
from patchset.cli import main
from patchset.core.manifest_load import load_manifest
from patchset.report import deps as render
from patchset.sources.sdist import SdistSource
from patchset.verbs.deps import closure, deps, reverse
from patchset.verbs.importer import q

pytestmark = pytest.mark.network

VERSION = "0.29.0"
FILES = {  # real 0.29.0 modules, one per role
    "f1": "vllm/sampling_params.py", "f2": "vllm/logger.py", "f3": "vllm/envs.py", "f4": "vllm/utils/argparse_utils.py",
    "f5": "vllm/config/cache.py", "f6": "vllm/outputs.py", "f7": "vllm/pooling_params.py",
}


@pytest.fixture(scope="module")
def pristine() -> Path:
    return Path(SdistSource("vllm", VERSION, Cache()).root)


def spot(lines: list[str], near: int) -> int:
    """The first line from ``near`` on that is code, unique in the file, and followed by unique lines."""
    i = near
    while not all(ln.strip() and lines.count(ln) == 1 for ln in lines[i - 3:i + 4]):
        i += 1
    return i


class Series:
    def __init__(self, root: Path, where: Path) -> None:
        self.root, self.where = root, where
        self.text: dict[str, list[str]] = {}
        self.entries: list[str] = []

    def lines(self, key: str) -> list[str]:
        if key not in self.text:
            self.text[key] = (self.root / FILES[key]).read_text().splitlines(keepends=True)
        return self.text[key]

    def add(self, pid: str, key: str, after: list[str], *, declared: tuple[str, ...] = ()) -> None:
        before = "".join(self.lines(key))
        rel = f"recipes/{pid}/{pid}.patch"
        (self.where / rel).parent.mkdir(parents=True)
        (self.where / rel).write_text("Description: " + pid + "\n---\n" + udiff(FILES[key], before, "".join(after)))
        self.text[key] = after
        entry = f"  - id: {pid}\n    patch: {q(rel)}\n"
        if declared:
            entry += f"    after: [{', '.join(declared)}]\n"
        self.entries.append(entry)

    def insert(self, key: str, at: int, new: str) -> list[str]:
        ln = self.lines(key)
        return ln[:at + 1] + [new + "\n"] + ln[at + 1:]

    def manifest(self) -> Path:
        head = textwrap.dedent(f"""\
            schema: 1
            upstream: {{pypi: vllm}}
            targets:
              "{VERSION}": {{}}
            patches:
            """)
        path = self.where / "patches.yaml"
        path.write_text(head + "".join(self.entries))
        return path


def build(root: Path, where: Path) -> Path:
    """12 patches: three real dependencies of three kinds, a stale after, a pair that only shares a file."""
    s = Series(root, where)
    a1 = spot(s.lines("f1"), len(s.lines("f1")) // 2)
    s.add("p01-adds", "f1", s.insert("f1", a1, "# p01 adds this line"))
    b2 = spot(s.lines("f2"), 20)
    s.add("p02-independent", "f2", s.insert("f2", b2, "# p02"))
    # p03 stands on the line p01 added (it is in p03's context)
    s.add("p03-context-on-p01", "f1", s.insert("f1", a1 + 1, "# p03 next to p01's line"))
    c3 = spot(s.lines("f3"), len(s.lines("f3")) // 2)
    s.add("p04-removes", "f3", s.lines("f3")[:c3] + s.lines("f3")[c3 + 2:])
    s.add("p05-independent", "f4", s.insert("f4", spot(s.lines("f4"), 30), "# p05"))
    # p06's context spans the place where p04 removed two lines: without p04 they would sit inside it
    s.add("p06-spans-p04-removal", "f3", s.insert("f3", c3, "# p06 right after the cut"), declared=("p04-removes",))
    d5 = spot(s.lines("f5"), 40)
    s.add("p07-adds", "f5", s.insert("f5", d5, "# p07 adds this line"))
    s.add("p08-edits-p07", "f5", [ln.replace("# p07 adds this line", "# p07's line, as p08 wants it")
                                  for ln in s.lines("f5")])
    # Same file as p02, far from its hunk: no dependency
    far = spot(s.lines("f2"), len(s.lines("f2")) - 30)
    s.add("p09-same-file-as-p02", "f2", s.insert("f2", far, "# p09"))
    # A declared after that nothing needs: stale
    s.add("p10-stale-after", "f6", s.insert("f6", spot(s.lines("f6"), 25), "# p10"), declared=("p05-independent",))
    s.add("p11-independent", "f4", s.insert("f4", spot(s.lines("f4"), len(s.lines("f4")) - 20), "# p11"))
    s.add("p12-independent", "f6", s.insert("f6", spot(s.lines("f6"), len(s.lines("f6")) - 15), "# p12"))
    # p14 deletes a second copy of p15's context that p13 put above it: without p14, p15 is ambiguous
    e7 = spot(s.lines("f7"), len(s.lines("f7")) // 2)
    block = s.lines("f7")[e7 - 3:e7 + 4]
    s.add("p13-duplicates", "f7", s.lines("f7")[:e7 - 12] + block + s.lines("f7")[e7 - 12:])
    s.add("p14-removes-copy", "f7", s.lines("f7")[:e7 - 12] + s.lines("f7")[e7 - 5:])
    s.add("p15-needs-p14", "f7", s.insert("f7", e7, "# p15"), declared=("p14-removes-copy",))
    return s.manifest()


@pytest.fixture(scope="module")
def manifest(pristine, tmp_path_factory):
    return load_manifest(build(pristine, tmp_path_factory.mktemp("deps")))


@pytest.fixture(scope="module")
def report(manifest):
    return deps(manifest)


def test_every_real_edge_and_no_false_one(report):
    assert [p for p, s in report.statuses.items() if s != "applies"] == []
    assert {(e.patch, e.needs) for e in report.edges} == {
        ("p03-context-on-p01", "p01-adds"), ("p06-spans-p04-removal", "p04-removes"), ("p08-edits-p07", "p07-adds"),
        ("p14-removes-copy", "p13-duplicates"), ("p15-needs-p14", "p14-removes-copy")}


def test_why_names_the_hunk_and_the_line(report):
    why = {e.patch: e.why for e in report.edges}
    assert why["p03-context-on-p01"].startswith("hunk 1 of p03-context-on-p01 (vllm/sampling_params.py) has "
                                                "context line ")
    assert why["p03-context-on-p01"].endswith(" that p01-adds adds")
    assert "removes line" in why["p08-edits-p07"]
    assert "where p04-removes removed lines" in why["p06-spans-p04-removal"]
    assert why["p15-needs-p14"].startswith("without p14-removes-copy, hunk 1 of p15-needs-p14 "
                                           "(vllm/pooling_params.py) is failed: ambiguous")


def test_undeclared_stale_and_free(report):
    assert {(e.patch, e.needs) for e in report.undeclared} == {
        ("p03-context-on-p01", "p01-adds"), ("p08-edits-p07", "p07-adds"), ("p14-removes-copy", "p13-duplicates")}
    assert [(s.patch, s.after) for s in report.stale] == [("p10-stale-after", "p05-independent")]
    assert report.free == ["p02-independent", "p05-independent", "p09-same-file-as-p02", "p10-stale-after",
                           "p11-independent", "p12-independent"]
    assert not report.ok


def test_an_edge_declared_through_another_patch_is_not_undeclared(manifest, report, tmp_path):
    copy = shutil.copytree(manifest.base, tmp_path / "copy")
    text = manifest.path.read_text().replace("  - id: p08-edits-p07\n",
                                             "  - id: p08-edits-p07\n    after: [p07-adds]\n")
    (copy / "patches.yaml").write_text(text)
    fixed = deps(load_manifest(copy / "patches.yaml"))
    assert {(e.patch, e.needs) for e in fixed.undeclared} == {("p03-context-on-p01", "p01-adds"),
                                                            ("p14-removes-copy", "p13-duplicates")}
    assert closure({"c": ["b"], "b": ["a"]})["c"] == {"a", "b"}


def test_cli_formats(manifest, capsys):
    assert main(["deps", "--manifest", str(manifest.path), "--format", "json"]) == 1  # undeclared edges
    doc = json.loads(capsys.readouterr().out)
    assert doc["vllm"] == VERSION and len(doc["edges"]) == 5 and len(doc["stale"]) == 1
    assert set(doc["edges"][0]) == {"patch", "needs", "why"}
    assert main(["deps", "--manifest", str(manifest.path), "--format", "mermaid"]) == 1
    mermaid = capsys.readouterr().out
    assert mermaid.startswith("```mermaid\nflowchart TD\n")
    assert "  p0 -. undeclared .-> p2\n" in mermaid and "  p3 --> p5\n" in mermaid
    assert "  p4 -. stale .-> p9\n" in mermaid and ":::s_applies" in mermaid
    assert main(["deps", "--manifest", str(manifest.path), "--format", "dot"]) == 1
    dot = capsys.readouterr().out
    assert dot.startswith('digraph "patchset deps 0.29.0" {') and '"p04-removes" -> "p06-spans-p04-removal"' in dot
    assert main(["deps", "--manifest", str(manifest.path)]) == 1
    table = capsys.readouterr().out
    assert "undeclared: p03-context-on-p01 needs p01-adds" in table and "stale: p10-stale-after" in table


def test_reverse_takes_a_patch_back_out(manifest, pristine):
    from patchset.core.engine import apply_patch

    pf = manifest.patch("p04-removes").load(VERSION, manifest.base)
    tree = {p: (pristine / p).read_bytes() for p in pf.touched}
    done = apply_patch(tree, pf)
    back = apply_patch(done.files, reverse(pf))
    assert back.ok and back.files == tree


def test_renderers_escape_ids_and_reasons():
    from patchset.verbs.deps import DepsReport, Edge

    r = DepsReport("0.29.0", ["a", "b"], {"a": "applies", "b": "failed"}, [Edge("b", "a", 'say "hi"')], [])
    assert '"b" [fillcolor="#f8d7da"' in render.render_dot(r) and 'tooltip="say \\"hi\\""' in render.render_dot(r)
    assert ":::s_failed" in render.render_mermaid(r)


def test_the_check_summary_draws_this_repositorys_series_over_all_targets():
    from patchset.report.check import render_markdown
    from patchset.verbs.check import check
    from patchset.verbs.deps import merge

    manifest = load_manifest(Path(__file__).resolve().parent.parent / "patches.yaml")
    report = check(manifest, graph=True)
    graph = merge(manifest, report.targets)
    assert report.graph == graph and graph.vllm == "0.28.0, 0.29.0, 0.30.0" and graph.edges == []
    # mtp-eagle's after: is there for its tests; no hunk needs it on 0.28.0 or 0.29.0 (0.30.0 has all three)
    assert [(s.patch, s.after) for s in graph.stale] == [("offload-mtp-eagle-serve", "offload-finished-watermark")]
    assert set(graph.statuses.values()) == {"applies"}  # each patch at its worst status
    md = render_markdown(report)
    assert "```mermaid\nflowchart TD\n" in md and "  p0 -. stale .-> p2\n" in md
