"""Where one warm ``check`` spends its time, phase by phase, in a fresh process (serial: PATCHSET_JOBS=1).

    .venv/bin/python bench/phases.py [MANIFEST]     # default: this repository's patches.yaml

Imports (the CLI, the manifest loader, the engine and reports), the manifest load, parsing the patch files,
each release's evaluation, the JSON document and its text. One run: repeat it, the machine is noisy.
"""

from __future__ import annotations

import sys
import time

T0 = time.perf_counter()
marks: list[tuple[str, float]] = []


def mark(name: str) -> None:
    marks.append((name, time.perf_counter()))


def main() -> int:
    import patchset.cli  # noqa: F401 -- timed: the CLI's own imports

    mark("import the CLI")
    from patchset.core.manifest_load import load_manifest

    mark("import the manifest loader")
    from patchset.core.series import evaluate_release
    from patchset.report import check as report
    from patchset.report.common import dump_json
    from patchset.sources import open_source
    from patchset.verbs.check import CheckReport

    mark("import the engine and reports")
    manifest = load_manifest(sys.argv[1] if len(sys.argv) > 1 else "patches.yaml")
    mark("load the manifest")
    for target in manifest.targets:
        for p in manifest.patches:
            if p.targets(target.version):
                p.load(target.version, manifest.base)
    mark("parse the patch files")
    results = []
    for target in manifest.targets:
        results.append(evaluate_release(manifest, target.version, open_source("pypi", target.version)))
        mark(f"evaluate {target.version}")
    doc = report.check_doc(CheckReport(str(manifest.path), results))
    mark("build the JSON document")
    dump_json(doc)
    mark("write its text")
    before = T0
    for name, at in marks:
        print(f"{name:32s} {1000 * (at - before):7.1f} ms")
        before = at
    print(f"{'total':32s} {1000 * (before - T0):7.1f} ms")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
