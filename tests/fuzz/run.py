"""Run the fuzz targets of targets.py under atheris (libFuzzer), each for a bounded time.

    python tests/fuzz/run.py [--seconds N] [--runs N] [--target NAME]... [--jobs N] [--workdir DIR]
                             [--results FILE] [--replay]

Each target runs in its own process (a child of this one) with a per-input time bound
(``-timeout``), a memory limit (``-rss_limit_mb``) and a largest input (``-max_len``). Its corpus
starts from the seeds in tests/fuzz/corpus/NAME (``seed.py`` writes them); what the fuzzer finds
new goes to the work folder, never into the repository. An input that breaks the contract stops
the child with a crash, timeout or out-of-memory file under ``WORKDIR/findings``; the target is
started again for its remaining time, so one finding does not hide the next. Prints, per target,
the executions, the inputs in the corpus and the findings; exits 1 when there is any finding.

``--replay`` runs every seed once through each target in this process, without atheris: what CI
can do where atheris does not install.
"""

from __future__ import annotations

import argparse
import datetime
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

HERE = Path(__file__).resolve().parent
CORPUS = HERE / "corpus"
TIMEOUT_S = 10  # per input: the slowest seed takes well under a second
RSS_LIMIT_MB = 2048
MAX_FINDINGS = 5  # per target and run: the same bug found again and again says nothing more

# Modules instrumented for coverage besides patchset's own: zipfile for the wheel target, tarfile and gzip
# for the sdist target, so the fuzzer learns a zip's records and a tar's headers; instrumented, they cost
# those targets nothing measurable. The email, gzip (of import-gz), xml and ruamel.yaml parsers are left
# uninstrumented: the email parser instrumented made the mail targets several times slower
# (docs/fuzzing.md), and the contract is about what patchset does with what they return or raise, which
# the instrumented readers' own branches guide.
EXTRA = {"wheel": ["zipfile"], "sdist": ["tarfile", "gzip"]}


def child(name: str, args: list[str]) -> None:
    """In the child: instrument patchset (and the target's parsers), then hand over to libFuzzer."""
    import atheris

    sys.path.insert(0, str(HERE))
    import targets

    target = targets.TARGETS[name]
    # Only the target's own readers: instrumenting all of patchset costs seconds of start-up per target.
    with atheris.instrument_imports(include=[*target.modules, *EXTRA.get(name, [])]):
        for module in target.modules:
            __import__(module)
    os.environ.setdefault("PATCHSET_NO_PARSE_CACHE", "1")

    def one(data: bytes) -> None:
        target.run(data)
        targets.reset()

    atheris.Setup([sys.argv[0], *args], one)
    atheris.Fuzz()


def fuzz(name: str, seconds: float, workdir: Path, runs: int = 0) -> dict:
    """Run one target for ``seconds`` (or until ``runs`` executions, when given); returns its row of the table."""
    sys.path.insert(0, str(HERE))
    import targets

    corpus = workdir / "corpus" / name
    findings = workdir / "findings"
    corpus.mkdir(parents=True, exist_ok=True)
    findings.mkdir(parents=True, exist_ok=True)
    seeds = CORPUS / name
    scratch = tempfile.mkdtemp(prefix=f"patchset-fuzz-{name}-", dir=targets.SHM)
    env = {**os.environ, "PATCHSET_CACHE": str(workdir / "cache"), "PATCHSET_NO_PARSE_CACHE": "1",
           "PATCHSET_FUZZ_SCRATCH": scratch}
    row = {"target": name, "seconds": 0.0, "executions": 0, "findings": [], "corpus": 0,
           "started": _now(), "load": [os.getloadavg()[0]], "cov": 0, "peak_rss_mb": 0, "slowest_s": 0}
    deadline = time.monotonic() + seconds
    while (left := deadline - time.monotonic()) >= 1 and len(row["findings"]) < MAX_FINDINGS:
        if runs and row["executions"] >= runs:
            break
        args = [f"-max_total_time={int(left)}", f"-timeout={TIMEOUT_S}", f"-rss_limit_mb={RSS_LIMIT_MB}",
                *([f"-runs={runs - row['executions']}"] if runs else []),
                f"-max_len={targets.TARGETS[name].max_len}", f"-artifact_prefix={findings}/{name}-",
                "-print_final_stats=1", str(corpus)] + ([str(seeds)] if seeds.is_dir() else [])
        log = workdir / f"{name}.log"
        started = time.monotonic()
        with log.open("ab") as out:
            proc = subprocess.run([sys.executable, __file__, "--child", name, "--", *args], env=env,
                                  stdout=out, stderr=subprocess.STDOUT, timeout=left + 120)
        row["seconds"] += time.monotonic() - started
        text = log.read_bytes().decode("utf-8", "replace")
        text = text[text.rfind("INFO: Seed:"):] if "INFO: Seed:" in text else text
        done = re.findall(r"stat::number_of_executed_units:\s*(\d+)", text) or re.findall(r"^#(\d+)\s", text, re.M)
        row["executions"] += int(done[-1]) if done else 0
        for key, pattern in (("cov", r"\bcov: (\d+)"), ("peak_rss_mb", r"stat::peak_rss_mb:\s*(\d+)"),
                             ("slowest_s", r"stat::slowest_unit_time_sec:\s*(\d+)")):
            seen = [int(v) for v in re.findall(pattern, text)]
            row[key] = max([row[key], *seen])
        found = re.findall(r"Test unit written to (\S+)", text)
        if found:
            row["findings"].append({"file": found[-1], "why": _why(text)})
        elif proc.returncode != 0:
            row["findings"].append({"file": str(log), "why": f"the fuzzer exited {proc.returncode}: {_why(text)}"})
    shutil.rmtree(scratch, ignore_errors=True)
    row["ended"], row["load"] = _now(), [*row["load"], os.getloadavg()[0]]
    row["corpus"] = len(list(corpus.iterdir())) + (len(list(seeds.iterdir())) if seeds.is_dir() else 0)
    return row


def _now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M:%S")


def _why(text: str) -> str:
    """The finding in one line: the exception, or libFuzzer's word (timeout, out-of-memory)."""
    for pattern in (r"^(\w+(?:Error|Exception|Finding)\b.*)$", r"(ERROR: libFuzzer: [^\n]*)", r"(ALARM: [^\n]*)"):
        hits = re.findall(pattern, text, re.M)
        if hits:
            return hits[-1].strip()[:300]
    return "see the log"


def replay(names: list[str]) -> int:
    """Every seed through its target once, in this process: 0 when every one keeps the contract."""
    sys.path.insert(0, str(HERE))
    import targets

    bad = 0
    for name in names:
        seeds = sorted((CORPUS / name).iterdir()) if (CORPUS / name).is_dir() else []
        for seed in seeds:
            try:
                targets.TARGETS[name].run(seed.read_bytes())
            except Exception as e:  # noqa: BLE001 -- a finding, reported and counted
                bad += 1
                print(f"{name}: {seed.name}: {type(e).__name__}: {e}")
            finally:
                targets.reset()
        print(f"{name}: {len(seeds)} seeds replayed")
    return bad


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["--child"]:
        child(argv[1], argv[3:])
        return 0
    sys.path.insert(0, str(HERE))
    import targets

    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=float, default=float(os.environ.get("FUZZ_SECONDS", 60)))
    parser.add_argument("--target", action="append", choices=sorted(targets.TARGETS))
    parser.add_argument("--runs", type=int, default=int(os.environ.get("FUZZ_RUNS", 0)),
                        help="stop a target after this many executions (--seconds still bounds it); 0: no limit")
    parser.add_argument("--workdir", type=Path)
    parser.add_argument("--results", type=Path, help="append each target's row to this file, one JSON line each")
    parser.add_argument("--replay", action="store_true")
    parser.add_argument("--jobs", type=int, default=int(os.environ.get("FUZZ_JOBS", 1)),
                        help="targets run side by side (one process each): as many as there are cores to spare")
    opts = parser.parse_args(argv)
    names = opts.target or list(targets.TARGETS)
    if opts.replay:
        return 1 if replay(names) else 0
    workdir = opts.workdir or Path(tempfile.mkdtemp(prefix="patchset-fuzz-run-"))
    rows = []
    print(f"{'target':<14} {'seconds':>8} {'executions':>11} {'exec/s':>8} {'corpus':>7} {'findings':>8}", flush=True)
    with ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:  # threads that wait on child processes
        def one(name: str) -> dict:
            row = fuzz(name, opts.seconds, workdir, opts.runs)
            if opts.results:  # as each target ends, so that a long run can be watched
                with opts.results.open("a") as out:
                    out.write(json.dumps(row) + "\n")
            return row

        for row in pool.map(one, names):
            _print_row(row)
            rows.append(row)
    total = sum(len(r["findings"]) for r in rows)
    print(f"total: {sum(r['executions'] for r in rows)} executions, {total} findings (logs and inputs in {workdir})")
    if not opts.workdir and not total:
        shutil.rmtree(workdir, ignore_errors=True)
    return 1 if total else 0


def _print_row(row: dict) -> None:
    rate = row["executions"] / row["seconds"] if row["seconds"] else 0
    print(f"{row['target']:<14} {row['seconds']:>8.0f} {row['executions']:>11} {rate:>8.0f} {row['corpus']:>7} "
          f"{len(row['findings']):>8}", flush=True)
    for f in row["findings"]:
        print(f"  finding: {f['why']}\n    input: {f['file']}", flush=True)


if __name__ == "__main__":
    sys.exit(main())
