"""Write the seed corpora of the fuzz targets (tests/fuzz/corpus/TARGET/) from this repository alone.

    python tests/fuzz/seed.py

Seeds are the repository's own recipes, manifest and test cases, or built here from them (a wheel
holding the recipes' files, a tar of them, a journal a real apply writes): nothing is copied from
another project. Every file is named by its content's sha256, as libFuzzer names what it adds, and
running this again writes the same files.
"""

from __future__ import annotations

import gzip
import hashlib
import io
import json
import sys
import tarfile
import zipfile
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent.parent
CORPUS = HERE / "corpus"
MAIL_FROM = b"From 0123456789abcdef0123456789abcdef01234567 Mon Sep 17 00:00:00 2001\n"


def recipes() -> dict[str, bytes]:
    return {str(p.relative_to(REPO)): p.read_bytes()
            for p in sorted([*(REPO / "recipes").rglob("*.patch"), *(REPO / "tests" / "data").rglob("*.patch")])}


def bad_input_cases() -> tuple[dict[str, str], dict[str, str]]:
    """The manifests and patch files tests/test_bad_input.py refuses: every refusal path, as a seed."""
    sys.path.insert(0, str(REPO / "tests"))
    import test_bad_input

    return test_bad_input.MANIFEST_CASES, test_bad_input.PATCH_CASES


def mail(patch: bytes, subject: str) -> bytes:
    """A patch as ``git format-patch`` writes it (without the mbox ``From`` line, which the targets add)."""
    description, _, diff = patch.partition(b"\n---\n")
    return (b"From: A Maintainer <maintainer@example.org>\nDate: Mon, 30 Nov 2026 12:00:00 +0000\n"
            b"Subject: [PATCH] " + subject.encode() + b"\n\n" + description + b"\n---\n" + diff)


def wheel_seeds(patches: dict[str, bytes]) -> list[bytes]:
    """Small wheels: the recipes' files as vllm members with a RECORD, stored and deflated; one RECORD lies."""
    import base64

    files = {f"vllm/{Path(name).parent.name}.py": data for name, data in patches.items()}
    files["vllm/__init__.py"] = b""
    out = []
    for method in (zipfile.ZIP_STORED, zipfile.ZIP_DEFLATED):
        for lie in (False, True):
            buf = io.BytesIO()
            with zipfile.ZipFile(buf, "w", method) as z:
                rows = []
                for name, data in files.items():
                    info = zipfile.ZipInfo(name, (2026, 11, 30, 0, 0, 0))
                    info.compress_type = method
                    z.writestr(info, data)
                    digest = hashlib.sha256(data + (b"x" if lie else b"")).digest()
                    rows.append(f"{name},sha256={base64.urlsafe_b64encode(digest).rstrip(b'=').decode()},{len(data)}")
                rows.append("vllm-0.29.0.dist-info/RECORD,,")
                info = zipfile.ZipInfo("vllm-0.29.0.dist-info/RECORD", (2026, 11, 30, 0, 0, 0))
                z.writestr(info, "\n".join(rows) + "\n")
            out.append(bytes([1 if lie else 0]) + buf.getvalue())
    return out


def sdist_seeds(patches: dict[str, bytes]) -> list[bytes]:
    """A tar of the recipes under vllm-0.29.0/ (to gzip: the first byte 1) and its .tar.gz as is (byte 0)."""
    out = []
    for extra in ("", "link", "dotdot"):
        buf = io.BytesIO()
        with tarfile.open(fileobj=buf, mode="w", format=tarfile.GNU_FORMAT) as tar:
            for name in ("vllm-0.29.0", "vllm-0.29.0/vllm"):
                info = tarfile.TarInfo(name)
                info.type, info.mode = tarfile.DIRTYPE, 0o755
                tar.addfile(info)
            for name, data in patches.items():
                info = tarfile.TarInfo(f"vllm-0.29.0/vllm/{Path(name).parent.name}.py")
                info.size, info.mode = len(data), 0o644
                tar.addfile(info, io.BytesIO(data))
            if extra:
                info = tarfile.TarInfo("vllm-0.29.0/vllm/x.py" if extra == "link" else "vllm-0.29.0/../x.py")
                if extra == "link":
                    info.type, info.linkname = tarfile.SYMTYPE, "../../etc/passwd"
                tar.addfile(info, io.BytesIO(b""))
        raw = buf.getvalue()
        out += [b"\1" + raw, b"\0" + gzip.compress(raw, mtime=0)]
    return out


def journal_seeds() -> list[bytes]:
    """The journal.json a real plan of the journal target's tree writes, behind each first byte that matters."""
    sys.path.insert(0, str(HERE))
    import targets

    from patchset import journal as j

    root = targets.fresh("seed-journal") / "site"
    (root / "vllm").mkdir(parents=True)
    (root / "vllm" / "a.py").write_bytes(targets.PRISTINE)
    (root / "vllm" / "b.py").write_bytes(b"gone = 1\n")
    plan, _, _ = j.plan(root, root / "vllm", "vllm/.patchset-provenance.json",
                        [("vllm/a.py", "vllm/a.py", b"x = 1\ny = 3\nz = 4\n", None),
                         ("vllm/b.py", "vllm/b.py", None, None),
                         ("vllm/new/c.py", "vllm/new/c.py", b"c = 1\n", None)])
    plan.record_sha256 = str(j.sha256(b'{"schema": 1}\n'))
    plan.compile = False
    body = plan.dumps()
    # steps 0-3 with the journal as written; the same with it cut at a length the next two bytes give
    return [bytes([step]) + body for step in range(4)] + [bytes([0x80 | step, 0, n]) for step in range(4)
                                                          for n in (0, 1, 100, 200)]


def provenance_seeds() -> list[bytes]:
    record = {"schema": 1, "tool": "patchset 0.1.0", "vllm": "0.29.0",
              "manifest": {"path": "patches.yaml", "sha256": "0" * 64}, "source": "sdist:vllm-0.29.0.tar.gz",
              "layout": "repo", "applied_at": "2026-11-30T12:00:00+00:00",
              "patches": [{"id": "offload-finished-watermark", "status": "applies", "sha256": "1" * 64,
                           "patch": "recipes/offload-finished-watermark/fix.patch", "files": ["vllm/a.py"]},
                          {"id": "other", "status": "upstream", "evidence": "probe"}],
              "files": {"vllm/a.py": {"sha256": "2" * 64, "pristine_sha256": "3" * 64, "mode": "100644"},
                        "vllm/new.py": {"sha256": "4" * 64, "pristine_sha256": None}},
              "bytecode": {}}
    from patchset.core.provenance import dumps

    return [dumps(record), dumps({"schema": 1}), b"[]", b'{"schema": 2}']


def index_seeds() -> list[bytes]:
    files = [{"filename": f"vllm-{v}.tar.gz", "url": f"../../packages/vllm-{v}.tar.gz",
              "hashes": {"sha256": hashlib.sha256(v.encode()).hexdigest()}, "size": 41_000_000}
             for v in ("0.28.0", "0.29.0", "0.30.0")]
    files.append({"filename": "vllm-0.29.0-cp38-abi3-manylinux_2_28_x86_64.whl",
                  "url": "https://user:token@files.invalid/vllm.whl", "hashes": {}, "yanked": False})
    page = {"meta": {"api-version": "1.1"}, "name": "vllm", "files": files}
    remembered = {"filename": "vllm-0.29.0.tar.gz", "url": "https://files.invalid/vllm-0.29.0.tar.gz",
                  "sha256": "5" * 64, "size": 41_000_000}
    return [json.dumps(page).encode(), json.dumps(remembered).encode(), b"{}"]


def junit_seeds() -> list[bytes]:
    case = ('<testcase classname="tests.v1.test_sched" name="test_{n}" time="0.{n}">'
            '<properties><property name="patchset_nodeid" value="tests/v1/test_sched.py::test_{n}"/></properties>'
            "{body}</testcase>")
    bodies = ["", '<failure message="assert 1 == 2">E   assert 1 == 2</failure>',
              '<skipped type="pytest.skip" message="needs a GPU">tests/v1/test_sched.py:3: needs a GPU</skipped>',
              '<error message="collection failure">E   ImportError: x</error>']
    suite = "".join(case.format(n=n, body=b) for n, b in enumerate(bodies))
    doc = (f'<?xml version="1.0" encoding="utf-8"?><testsuites><testsuite name="pytest" errors="1" failures="1" '
           f'skipped="1" tests="4">{suite}<testcase classname="" name="tests.v1.test_broken" time="0">'
           f'<error message="collection failure">E &#27;[31m</error></testcase></testsuite></testsuites>')
    return [doc.encode(), doc.encode()[:200]]


def cache_seeds() -> dict[str, list[bytes]]:
    """The parse-cache entries patchset writes for the targets' manifest and patch, and a kept baseline."""
    sys.path.insert(0, str(HERE))
    import marshal

    import targets

    from patchset.core import patchfile, yamlcache, yamlparse
    from patchset.runners import NodeResult, Outcome
    from patchset.verbs.baseline import Baseline
    from patchset.verbs.suites import BASELINE_FORMAT, dump_baseline

    doc = json.dumps(yamlcache._to_json(yamlparse.parse(targets.MANIFEST.decode())), separators=(",", ":")).encode()
    parsed = patchfile._kept(patchfile.parse_patch(targets.PATCH, name="fix.patch"))
    kept = marshal.dumps(parsed)

    def as_json(x: object) -> object:  # what targets._marshalled turns back into ``parsed``
        if isinstance(x, tuple):
            return [as_json(v) for v in x]
        return "b:" + x.decode("utf-8", "surrogateescape") if isinstance(x, bytes) else x

    runs = [{f"tests/v1/test_a.py::test_{o.value}": NodeResult(f"tests/v1/test_a.py::test_{o.value}", o,
                                                               "why" if o != Outcome.PASSED else "", "E  x")
             for o in Outcome}]
    base = dump_baseline(Baseline(targets.BASELINE_KEY, False, runs, "", 12.5)).encode()
    # as runners/venv and sources/sdist write them
    marker = {"format": 3, "project": "vllm", "version": "0.29.0", "wheel": "vllm-0.29.0-cp38-abi3.whl",
              "wheel_sha256": "0" * 64, "torch": "2.9.0+cpu", "python": "python3.11",
              "site_packages": "lib/python3.11/site-packages", "requirements": ["numpy"], "left_out": [],
              "test_requirements": ["pytest"], "seconds": {"total": 90.5}}
    probed = ["vllm", "vllm.config", "tests.conftest"]
    about = {"filename": "vllm-0.29.0.tar.gz", "tops": ["vllm-0.29.0"], "listed": 4}
    # byte 0: the entry as it stands on disk (here whole: mutations damage it); byte 1: the content, made whole
    return {"yaml-cache": [b"\0" + targets.whole(doc), b"\1" + doc],
            "patch-cache": [b"\0" + targets.whole(kept), b"\1" + json.dumps(as_json(parsed)).encode()],
            "baseline": [base, base.replace(b'"format": %d' % BASELINE_FORMAT, b'"format": %d' % (BASELINE_FORMAT - 1)),
                         b"[]"],
            "cache-entries": [b"\0" + json.dumps(marker, indent=2).encode(), b"\1" + json.dumps(probed).encode(),
                              b"\2" + json.dumps(about).encode()]}


def seeds() -> dict[str, list[bytes]]:
    patches = recipes()
    manifest_cases, patch_cases = bad_input_cases()
    texts = list(patches.values()) + [c.encode() for c in patch_cases.values()]
    repo_manifest = (REPO / "patches.yaml").read_text()
    for name in patches:
        repo_manifest = repo_manifest.replace(name, "recipes/fix/fix.patch")
    series = [b"# the fork's series\na.patch\nb.diff -p1\n#c.patch\n", b"a.patch -p0\nc.patch  # last\n",
              b"missing.patch\n"]
    return {
        "patch": [bytes([1]) + t for t in texts],
        "header": [t.split(b"\ndiff ", 1)[0] for t in texts] + [mail(t, "A fix (#54288)") for t in patches.values()],
        "manifest": [repo_manifest.encode()] + [c.encode() for c in manifest_cases.values()],
        "import-series": series,
        "import-mbox": [mail(t, n) for n, t in patches.items()] + [
            mail(a, "one") + b"\n" + MAIL_FROM + mail(b, "two") for a, b in zip(texts, texts[1:], strict=False)][:4],
        "import-gz": [b"\1" + t for t in patches.values()] + [b"\0" + gzip.compress(t, mtime=0)
                                                             for t in patches.values()],
        "import-dir": [b"\0".join(x for n, t in patches.items() for x in (Path(n).name.encode(), t))]
                      + [b"series\0" + s + b"\0a.patch\0" + next(iter(patches.values())) for s in series],
        "wheel": wheel_seeds(patches),
        "sdist": sdist_seeds(patches),
        "index": index_seeds(),
        "provenance": provenance_seeds(),
        "journal": journal_seeds(),
        "junit": junit_seeds(),
        **cache_seeds(),
    }


def main() -> None:
    for target, items in seeds().items():
        folder = CORPUS / target
        folder.mkdir(parents=True, exist_ok=True)
        for data in items:
            (folder / hashlib.sha256(data).hexdigest()[:16]).write_bytes(data)
        print(f"{target}: {len(items)} seeds")


if __name__ == "__main__":
    main()
