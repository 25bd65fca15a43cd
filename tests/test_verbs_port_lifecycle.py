"""The life-cycle rules of the verbs that rewrite patches.yaml (docs/lifecycle.md), over generated series.

Each example builds a small series on a generated release sequence: every release a folder read as a
``dir:`` source, every patch a module of its own whose lines each release may leave alone, shift
(offset), fix upstream (the probe holds), edit beside the patch (a clean merge) or edit under it (a
conflict). The ranges and patch-file maps are drawn from the shapes maintainers write. Then, on a real
engine run:

* after ``port --to V``, and after ``refresh`` of what it carried and of each conflict resolved in its
  workspace, every other target's ``check --format json`` is the same document;
* every range admits exactly what it admitted plus V (a carried or ported patch) and never drops
  a target other than V (a retired one);
* no patch that the nearest targets around V leave out comes back in V (unless its range named V);
* a second identical port changes no byte of the manifest or the recipes;
* ``import`` names exactly the releases it imported for, its own check is what ``check`` says of the
  written manifest, and importing again writes the same bytes.
"""

from __future__ import annotations

import contextlib
import io
import json
import re
import tempfile
from collections import Counter
from pathlib import Path

import portfixture
from helpers import udiff
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from patchset.cli import main
from patchset.core.manifest_load import load_manifest
from patchset.errors import PatchsetError
from patchset.verbs.port import port
from patchset.verbs.refresh import refresh
from patchset.versions import Release, Releases

POOL = ["0.8.0", "0.8.5", "0.9.0", "0.9.1", "0.10.0"]
# Releases no target names, around the pool's: what a range must not take in by being widened.
PROBES = POOL + ["0.7.0", "0.8.1", "0.8.5rc1", "0.8.5.post1", "0.9.0+cpu", "0.9.0rc1", "0.9.5", "0.10.0rc1",
                 "0.11.0"]
# Weighted towards what carries, so that most examples widen a range.
KINDS = ["same", "same", "shifted", "shifted", "fixed", "beside", "under"]
SETTINGS = settings(max_examples=25, deadline=None, derandomize=True,
                    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])


def line(i: int, how: str = "") -> str:
    return {"": f"line_{i} = {i}\n", "fixed": f"line_{i} = -{i}\n", "up": f"line_{i} = {i}  # upstream\n"}[how]


BASE = "".join(line(i) for i in range(1, 31))


def module(kind: str, pid: str) -> str:
    """One release's copy of a patch's module; the patch turns line 15 into its fix."""
    if kind == "shifted":
        return "new = 0\n" * 4 + BASE
    if kind == "fixed":
        return BASE.replace(line(15), line(15, "fixed") + f"fixed_{pid} = True\n")
    if kind == "beside":
        return BASE.replace(line(12), line(12, "up"))
    if kind == "under":
        return BASE.replace(line(15), line(15, "up"))
    return BASE


def patched(kind: str) -> tuple[str, str]:
    """A patch file's (before, after) made on a release of this kind (one that still needs the fix)."""
    before = module("shifted" if kind == "shifted" else "same", "")
    return before, before.replace(line(15), line(15, "fixed"))


@st.composite
def ranges(draw) -> str:
    a, b = sorted(draw(st.lists(st.sampled_from(POOL), min_size=2, max_size=2, unique=True)), key=Release)
    return draw(st.sampled_from([f"=={a}", f">={a},<{b}", f"=={a} || =={b}", f"<{b}", f">={b}", f">={a},!={b}",
                                 f">{a},<={b}", ""]))


@st.composite
def series(draw) -> dict:
    targets = sorted(draw(st.lists(st.sampled_from(POOL), min_size=1, max_size=3, unique=True)), key=Release)
    n = draw(st.integers(1, 3))
    patches = []
    for k in range(n):
        pid = f"p{k}"
        kinds = {v: draw(st.sampled_from(KINDS)) for v in POOL}
        for older, newer in zip(POOL, POOL[1:], strict=False):  # upstream keeps a fix it took
            kinds[newer] = "fixed" if kinds[older] == "fixed" else kinds[newer]
        files: list[tuple[str, str]] = []  # (range, kind the file is made for)
        if draw(st.booleans()):
            files.append(("", draw(st.sampled_from(["same", "shifted"]))))
        else:
            split = draw(st.sampled_from(POOL[1:]))
            files += [(f"<{split}", "same"), (f">={split}", draw(st.sampled_from(["same", "shifted"])))]
        patches.append({"id": pid, "releases": draw(ranges()), "kinds": kinds, "files": files,
                        "probe": draw(st.booleans())})
    # The newest first: a port to a newer release is the common case (and the simplest example hypothesis tries).
    return {"targets": targets, "patches": patches, "to": draw(st.sampled_from(POOL[::-1]))}


def build(root: Path, s: dict) -> tuple[Path, str]:
    for v in POOL:
        tree = root / "trees" / v / "vllm"
        tree.mkdir(parents=True)
        (tree / "__init__.py").write_text(f'__version__ = "{v}"\n')
        for p in s["patches"]:
            (tree / f"{p['id']}.py").write_text(module(p["kinds"][v], p["id"]))
    project = root / "project"
    entries = []
    for p in s["patches"]:
        spec = []
        for n, (rng, kind) in enumerate(p["files"]):
            rel = f"recipes/{p['id']}/vllm-{n}.patch"
            f = project / rel
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(f"Description: {p['id']}\nLast-Update: 2026-01-01\n---\n"
                         + udiff(f"vllm/{p['id']}.py", *patched(kind)))
            spec.append((rng, rel))
        patch = f"patch: {spec[0][1]}" if len(spec) == 1 and not spec[0][0] else \
            "patch:\n" + "".join(f'      "{r}": {rel}\n' for r, rel in spec).rstrip("\n")
        probe = f'\n    present: {{file: vllm/{p["id"]}.py, contains: "fixed_{p["id"]} = True"}}' if p["probe"] else ""
        releases = f'\n    releases: "{p["releases"]}"' if p["releases"] else ""
        entries.append(f"  - id: {p['id']}{releases}\n    {patch}{probe}\n")
    targets = "".join(f'  "{t}": {{image: "img:v{t}"}}\n' for t in s["targets"])
    project.mkdir(parents=True, exist_ok=True)
    (project / "patches.yaml").write_text(f"# generated\nschema: 1\ntargets:\n{targets}patches:\n" + "".join(entries))
    return project / "patches.yaml", f"dir:{root / 'trees'}/{{version}}"


def check_doc(manifest: Path, src: str, version: str) -> dict:
    """``patchset check --vllm V --format json``, as a script sees it (a quoted range in a warning masked:
    the range may grow while the verdict stays)."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        code = main(["check", "--vllm", version, "--manifest", str(manifest), "--source", src, "--format", "json"])
    doc = json.loads(out.getvalue())
    text = re.sub(r"releases '[^']*'", "releases '…'", json.dumps(doc, sort_keys=True))
    return {"exit": code, "doc": json.loads(text)}


def loads(manifest: Path) -> bool:
    try:
        load_manifest(manifest)
    except PatchsetError:
        return False
    return True


def admitted(text: str) -> set[str]:
    r = Releases(text)
    return {v for v in PROBES if v in r}


def releases_of(manifest: Path) -> dict[str, str]:
    return {p.id: p.releases.text for p in load_manifest(manifest).patches}


# Left out of the target 0.9.0 by hand (its range names 0.8.0 only), then a port to 0.10.0.
LEFT_OUT_BEFORE = {"targets": ["0.8.0", "0.9.0"], "to": "0.10.0", "patches": [
    {"id": "p0", "releases": "==0.8.0", "kinds": {v: "same" for v in POOL}, "files": [("", "same")], "probe": False},
    {"id": "p1", "releases": "", "kinds": {v: "same" for v in POOL}, "files": [("", "same")], "probe": False}]}


#: How the refreshes after each port went, over one run of the property: the property says nothing of
#: refresh if every refresh refused.
REFRESHES: Counter[str] = Counter()
REFUSALS: list[str] = []


def test_a_port_changes_no_other_target_widens_by_exactly_v_and_is_idempotent():
    REFRESHES.clear()
    REFUSALS.clear()
    port_property()
    # Not vacuous: refreshes of carried patches and of resolved conflicts both really ran, and changed no
    # other target (a refusal is allowed, and checked the same way, but cannot be all there is).
    assert REFRESHES["carried: refreshed"] > 0 and REFRESHES["conflict: refreshed"] > 0, (REFRESHES, REFUSALS[:3])
    # and each refusal is the one a shared patch file meets: the refreshed patch no longer fits another target
    assert all(re.search(r"does not apply to vLLM [\d.]+ \(hunk 1 ", e) for e in REFUSALS), REFUSALS


@SETTINGS
@given(series())
@example(LEFT_OUT_BEFORE)
def port_property(s):
    with tempfile.TemporaryDirectory() as tmp:
        manifest, src = build(Path(tmp), s)
        if not loads(manifest):
            return  # a generated shape the loader refuses (a target in range with no file): not a series
        v = s["to"]
        others = [t for t in s["targets"] if Release(t) != Release(v)]
        before = {t: check_doc(manifest, src, t) for t in others}
        ranges_before = releases_of(manifest)
        report = port(load_manifest(manifest), v, source=src)
        after = {t: check_doc(manifest, src, t) for t in others}
        assert after == before, f"port --to {v} changed what another target checks"
        ranges_after = releases_of(manifest)
        for r in report.patches:
            old, new = admitted(ranges_before[r.id]), admitted(ranges_after[r.id])
            if r.result in ("carried", "ported"):
                assert new == old | {x for x in PROBES if Release(x) == Release(v) or x == f"{v}+cpu"}, \
                    f"{r.id}: {ranges_before[r.id]!r} -> {ranges_after[r.id]!r} is not exactly one release more"
            elif r.result == "retired":
                assert v not in Releases(ranges_after[r.id])
                assert {t for t in others if t in old} == {t for t in others if t in new}
            else:
                assert ranges_after[r.id] == ranges_before[r.id]
        # V's series continues its neighbours': a patch that the nearest target on either side leaves out
        # (retired there, or left out by hand) does not come back in V unless its range named V already.
        below = [t for t in others if Release(t) < Release(v)]
        above = [t for t in others if Release(v) < Release(t)]
        near = ([max(below, key=Release)] if below else []) + ([min(above, key=Release)] if above else [])
        carried_on = {pid for pid, text in ranges_before.items()
                      if v in Releases(text) or any(t in Releases(text) for t in near)}
        now_in_v = {pid for pid, text in ranges_after.items() if v in Releases(text)}
        assert now_in_v <= carried_on, f"port --to {v} brought back {sorted(now_in_v - carried_on)}"
        decided = {r.id for r in report.patches}
        for pid, text in ranges_before.items():
            if pid not in decided:
                assert ranges_after[pid] == text, f"{pid} was not decided and its range changed"
        first = portfixture.snapshot(manifest.parent)
        port(load_manifest(manifest), v, source=src)
        assert portfixture.snapshot(manifest.parent) == first, f"a second port --to {v} changed the project"
        for r in report.patches:
            if r.result not in ("carried", "conflict"):
                continue
            if r.result == "conflict" and r.workspace:
                resolve(Path(r.workspace))  # as a maintainer would: keep the patch's side of each conflict
            try:
                refresh(load_manifest(manifest), r.id, v, source=src)
            except PatchsetError as e:  # a refresh that cannot be done is bad input, not a change
                REFRESHES[f"{r.result}: refused"] += 1
                REFUSALS.append(str(e))
            else:
                REFRESHES[f"{r.result}: refreshed"] += 1
            assert {t: check_doc(manifest, src, t) for t in others} == before, f"refresh {r.id} changed a target"


def resolve(workspace: Path) -> None:
    """Every diff3 conflict in a port's workspace resolved to the patch's side."""
    for f in workspace.rglob("*.py"):
        text = f.read_text()
        f.write_text(re.sub(r"<<<<<<< [^\n]*\n.*?\|\|\|\|\|\|\| [^\n]*\n.*?=======\n(.*?)>>>>>>> [^\n]*\n",
                            r"\1", text, flags=re.S))


def entry_text(manifest: Path, pid: str) -> str:
    return manifest.read_text().split(f"  - id: {pid}\n")[1].split("  - id:")[0]


def _kinds(**at: str) -> dict[str, str]:
    return {v: at.get("v" + v.replace(".", "_"), "same") for v in POOL}


# Retired for 0.9.0 while another patch conflicts there (so 0.9.0 does not become a target), then 0.10.0.
RETIRED_THEN_LATER = {"targets": ["0.8.0"], "to": "0.9.0", "patches": [
    {"id": "p0", "releases": ">=0.8.0", "kinds": _kinds(v0_9_0="fixed", v0_9_1="fixed", v0_10_0="fixed"),
     "files": [("", "same")], "probe": True},
    {"id": "p1", "releases": ">=0.8.0", "kinds": _kinds(v0_9_0="under"), "files": [("", "same")], "probe": False}]}


@SETTINGS
@given(series(), st.lists(st.sampled_from(POOL[::-1]), min_size=2, max_size=2, unique=True))
@example(RETIRED_THEN_LATER, ["0.9.0", "0.10.0"])
def test_a_patch_retired_for_one_release_is_left_alone_by_a_port_to_a_later_one(s, pair):
    earlier, later = sorted(pair, key=Release)
    with tempfile.TemporaryDirectory() as tmp:
        manifest, src = build(Path(tmp), s)
        if not loads(manifest):
            return
        first = port(load_manifest(manifest), earlier, source=src)
        retired = [r.id for r in first.patches if r.result == "retired"]
        kept = {pid: entry_text(manifest, pid) for pid in retired}
        second = port(load_manifest(manifest), later, source=src)
        assert not {r.id for r in second.patches} & set(retired), f"port --to {later} decided a retired patch again"
        assert {pid: entry_text(manifest, pid) for pid in retired} == kept


@st.composite
def imported(draw) -> dict:
    s = draw(series())
    for p in s["patches"]:
        p["files"] = p["files"][:1]
        p["releases"] = ""
    return s


@settings(max_examples=10, deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
@given(imported())
def test_an_import_names_exactly_its_targets_checks_as_check_does_and_is_repeatable(s):
    from patchset.verbs.importer import import_series

    with tempfile.TemporaryDirectory() as tmp:
        manifest, src = build(Path(tmp), s)
        folder = Path(tmp) / "project/recipes"
        into = Path(tmp) / "imported"
        files = sorted(folder.rglob("*.patch"))
        result = import_series([str(f) for f in files], into, s["targets"], source=src)
        written = into / "patches.yaml"
        for text in releases_of(written).values():
            assert admitted(text) == {x for x in PROBES if any(Release(x) == Release(t) or x == f"{t}+cpu"
                                                               for t in s["targets"])}
        for t in s["targets"]:
            doc = check_doc(written, src, t)["doc"]["targets"][0]
            mine = next(r for r in result.check.targets if r.vllm == t)
            assert [(p["id"], p["status"]) for p in doc["patches"]] == [(p.id, p.status) for p in mine.patches]
        first = portfixture.snapshot(into)
        import_series([str(f) for f in files], into, s["targets"], source=src, force=True)
        assert portfixture.snapshot(into) == first
