"""action.yml, run as the GitHub runner runs a composite action, in a scratch fork, without GitHub.

Each step's ``run`` goes to ``bash --noprofile --norc -eo pipefail`` (what ``shell: bash`` means on the
runner) with the step's ``env`` evaluated, fresh ``GITHUB_OUTPUT``/``GITHUB_ENV``/``GITHUB_PATH`` files
and the job's ``GITHUB_STEP_SUMMARY``; the outputs are parsed from the files as the runner parses them.
The action keeps its expressions to plain context look-ups (``inputs.X``, ``github.X``, ``runner.X``,
``steps.ID.outputs.X``) so that this runner is the real one's equal; anything else fails here.
The action and this repository's workflows are validated against SchemaStore's published schemas.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

import jsonschema
import pytest
from helpers import SCRATCH_MOD, SCRATCH_PRISTINE, SCRATCH_SOURCE, load_yaml, scratch_fork

ROOT = Path(__file__).resolve().parents[1]
SCHEMAS = Path(__file__).parent / "data" / "schemastore"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def schema(name: str) -> dict:
    return json.loads((SCHEMAS / name).read_text())


def action() -> dict:
    return load_yaml((ROOT / "action.yml").read_text())


@dataclass
class ActionRun:
    """What one run of the action left: its outputs, each step's exit code and logs, the job summary."""

    outputs: dict[str, str]
    steps: dict[str, dict[str, str]] = field(default_factory=dict)
    codes: list[int] = field(default_factory=list)
    log: str = ""
    summary: str = ""

    @property
    def failed(self) -> bool:
        return any(self.codes)


def parse_output_file(text: str) -> dict[str, str]:
    """``name=value`` lines and ``name<<DELIMITER`` blocks, as the runner reads GITHUB_OUTPUT/GITHUB_ENV."""
    out: dict[str, str] = {}
    lines = iter(text.splitlines())
    for line in lines:
        if "<<" in line and ("=" not in line or line.index("<<") < line.index("=")):
            name, delimiter = line.split("<<", 1)
            value = []
            for more in lines:
                if more == delimiter:
                    break
                value.append(more)
            out[name] = "\n".join(value)
        elif "=" in line:
            name, value = line.split("=", 1)
            out[name] = value
    return out


class Runner:
    """A composite action's steps run as the runner runs them, in ``workspace``."""

    def __init__(self, action_path: Path, workspace: Path, temp: Path, ref: str = "") -> None:
        self.action_path, self.workspace, self.temp, self.ref = action_path, workspace, temp, ref
        self.summary = temp / "step_summary.md"
        self.summary.touch()

    def run(self, inputs: dict[str, str], *, only: tuple[str, ...] = (),
            given: dict[str, dict[str, str]] | None = None) -> ActionRun:
        spec = load_yaml((self.action_path / "action.yml").read_text())
        assert spec["runs"]["using"] == "composite"
        unknown = set(inputs) - set(spec["inputs"])
        assert not unknown, f"not inputs of the action: {unknown}"
        values = {k: str(inputs.get(k, v.get("default", ""))) for k, v in spec["inputs"].items()}
        steps: dict[str, dict[str, str]] = dict(given or {})
        env_extra: dict[str, str] = {}
        path_extra: list[str] = []
        result = ActionRun({})
        start = self.summary.stat().st_size
        for i, step in enumerate(spec["runs"]["steps"]):
            sid = step.get("id", f"step{i}")
            if only and sid not in only:
                continue
            assert step.get("shell") == "bash" and "uses" not in step, "every step is a bash script"
            assert "if" not in step or step["if"] == "always()", f"step {sid}: condition {step['if']!r}"
            if result.failed and step.get("if") != "always()":
                continue  # a failed step skips the rest, as on the runner
            context = {"inputs": values, "steps": steps, "runner": {"temp": str(self.temp), "os": "Linux"},
                       "github": {"action_path": str(self.action_path), "action_ref": self.ref,
                                  "workspace": str(self.workspace)}}
            files = {name: self.temp / f"{sid}.{name.lower()}" for name in ("GITHUB_OUTPUT", "GITHUB_ENV",
                                                                              "GITHUB_PATH")}
            for f in files.values():
                f.write_text("")
            env = {k: v for k, v in os.environ.items() if not k.startswith(("PATCHSET_", "GITHUB_", "COLUMNS"))}
            env.update({"GITHUB_ACTIONS": "true", "CI": "true", "RUNNER_TEMP": str(self.temp),
                        "GITHUB_WORKSPACE": str(self.workspace), "GITHUB_STEP_SUMMARY": str(self.summary),
                        "GITHUB_ACTION_PATH": str(self.action_path),
                        "PATCHSET_CACHE": str(self.temp / "cache")})
            env.update({k: str(v) for k, v in {n: str(p) for n, p in files.items()}.items()})
            env.update(env_extra)
            if path_extra:
                env["PATH"] = os.pathsep.join([*path_extra, env["PATH"]])
            env.update({k: evaluate(str(v), context) for k, v in (step.get("env") or {}).items()})
            script = self.temp / f"{sid}.sh"
            script.write_text(evaluate(step["run"], context))
            done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)],
                                  cwd=self.workspace, env=env, capture_output=True, text=True)
            result.codes.append(done.returncode)
            result.log += done.stdout + done.stderr
            steps[sid] = {"outputs": parse_output_file(files["GITHUB_OUTPUT"].read_text())}  # type: ignore[dict-item]
            env_extra.update(parse_output_file(files["GITHUB_ENV"].read_text()))
            path_extra[:0] = files["GITHUB_PATH"].read_text().split()
        result.steps = {k: v["outputs"] for k, v in steps.items()}  # type: ignore[misc]
        context = {"inputs": values, "steps": steps, "runner": {}, "github": {}}
        result.outputs = {k: evaluate(str(v["value"]), context) for k, v in spec["outputs"].items()}
        result.summary = self.summary.read_text()[start:]
        return result


def evaluate(text: str, context: dict) -> str:
    """``${{ a.b.c }}`` look-ups; a missing value is the empty string, as on the runner."""

    def look_up(m: re.Match) -> str:
        expr = m.group(1)
        assert re.fullmatch(r"[a-z_]+(\.[A-Za-z0-9_-]+)+", expr), f"not a plain look-up: {expr}"
        value: object = context
        for part in expr.split("."):
            value = value.get(part, "") if isinstance(value, dict) else ""
        return str(value)

    return EXPRESSION.sub(look_up, text)


def copy_of_the_action(dest: Path) -> Path:
    """What the runner downloads for ``uses: OWNER/patchset@REF``: the repository's files, no git history."""
    listed = subprocess.run(["git", "-C", str(ROOT), "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
                            capture_output=True, check=True).stdout.decode().split("\0")
    for rel in filter(None, listed):
        src = ROOT / rel
        if src.is_file():
            (dest / rel).parent.mkdir(parents=True, exist_ok=True)
            shutil.copy2(src, dest / rel)
    return dest


# -- the schemas -------------------------------------------------------------------------------------------


def test_action_yml_is_valid_against_the_published_schema():
    jsonschema.validate(action(), schema("github-actions.json"))


@pytest.mark.parametrize("workflow", sorted((ROOT / ".github" / "workflows").glob("*.yml")), ids=lambda p: p.name)
def test_this_repositorys_workflows_are_valid_against_the_published_schema(workflow):
    jsonschema.validate(load_yaml(workflow.read_text()), schema("github-workflows.json"))


def test_the_schema_check_can_fail():
    broken = action()
    broken["runs"]["steps"][0].pop("shell")  # a composite run step must name its shell
    with pytest.raises(jsonschema.ValidationError):
        jsonschema.validate(broken, schema("github-actions.json"))


def test_the_action_takes_what_the_issue_names_and_keeps_out_of_the_forks_environment():
    spec = action()
    assert {"command", "vllm", "manifest", "args", "version"} <= set(spec["inputs"])
    assert spec["inputs"]["command"]["default"] == "check"
    assert {"ok", "report"} <= set(spec["outputs"])
    install = spec["runs"]["steps"][0]["run"]
    assert "-m venv" in install and "RUNNER_TEMP" in install


def test_output_files_are_read_as_the_runner_reads_them():
    assert parse_output_file("a=1\nb<<EOF\nx=y\nz\nEOF\nc=\n") == {"a": "1", "b": "x=y\nz", "c": ""}


# -- the action, run -----------------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def installed(tmp_path_factory):
    """The whole action run once as a fork's workflow would: install (from the action's own files), then
    ``check``; later tests run the ``run`` step again with the install step's outputs."""
    base = tmp_path_factory.mktemp("action")
    action_path = copy_of_the_action(base / "action")
    fork = scratch_fork(base / "fork")
    temp = base / "runner-temp"
    temp.mkdir()
    runner = Runner(action_path, fork, temp, ref="v9.8.7")
    first = runner.run({"args": f"--source {SCRATCH_SOURCE}"})
    return runner, first


@pytest.mark.slow
def test_the_action_installs_patchset_in_its_own_venv_and_checks_the_fork(installed):
    runner, run = installed
    assert not run.failed, run.log
    patchset = Path(run.outputs["patchset"])
    assert patchset.is_file() and patchset.is_relative_to(runner.temp), "a venv of its own, not the fork's"
    assert "patchset 9.8.7 (Python" in run.log, "the release tag names the version without git history"
    assert run.outputs["ok"] == "true" and run.outputs["exit-code"] == "0"
    report = json.loads(Path(run.outputs["report"]).read_text())
    assert report["ok"] is True and [t["vllm"] for t in report["targets"]] == ["0.29.0", "0.30.0"]
    # The check's own Markdown (a table a row per release and patch), then the action's verdict line.
    assert "| 0.29.0 | fix | applies |" in run.summary and "| 0.30.0 | fix | upstream |" in run.summary
    assert run.summary.rstrip().endswith("**patchset check**: ok")
    assert "::error" not in run.log
    assert not subprocess.run(["git", "status", "--porcelain"], cwd=runner.workspace, capture_output=True,
                              text=True, check=True).stdout, "nothing written into the fork's checkout"


@pytest.mark.slow
def test_a_failing_hunk_is_annotated_on_its_patch_file_and_the_step_fails(installed):
    runner, first = installed
    tree = runner.workspace / "trees" / "0.29.0" / SCRATCH_MOD
    tree.write_text(SCRATCH_PRISTINE.replace("line11 = 11", "line11 = 12"))
    try:
        run = runner.run({"vllm": "0.29.0", "args": f"--source {SCRATCH_SOURCE}"}, only=("run",),
                         given={"install": {"outputs": first.steps["install"]}})  # type: ignore[dict-item]
    finally:
        tree.write_text(SCRATCH_PRISTINE)
    assert run.failed and run.outputs["ok"] == "false" and run.outputs["exit-code"] == "1"
    assert re.search(r"^::error file=recipes/fix/fix\.patch,line=\d+::", run.log, re.M), run.log
    report = json.loads(Path(run.outputs["report"]).read_text())
    assert report["ok"] is False and report["targets"][0]["patches"][0]["status"] == "failed"
    assert "**patchset check**: FAILED" in run.summary


@pytest.mark.slow
def test_bad_input_is_one_annotation_naming_the_file(installed):
    runner, first = installed
    run = runner.run({"manifest": "missing.yaml"}, only=("run",),
                     given={"install": {"outputs": first.steps["install"]}})  # type: ignore[dict-item]
    assert run.outputs["exit-code"] == "2" and run.outputs["ok"] == "false"
    line = next(x for x in run.log.splitlines() if x.startswith("::error title=patchset check (exit 2)::"))
    assert "missing.yaml: no manifest here" in line and "patchset init" in line
    assert json.loads(Path(run.outputs["report"]).read_text())["ok"] is False  # JSON errors are one document
    assert "**patchset check**: bad input (exit 2)" in run.summary


@pytest.mark.slow
def test_targets_as_a_matrix_for_the_workflow(installed):
    runner, first = installed
    run = runner.run({"command": "targets", "args": "--format matrix"}, only=("run",),
                     given={"install": {"outputs": first.steps["install"]}})  # type: ignore[dict-item]
    assert not run.failed, run.log
    matrix = json.loads(Path(run.outputs["report"]).read_text())
    assert [row["vllm"] for row in matrix["include"]] == ["0.29.0", "0.30.0"]


# -- the GPU jobs: the generated workflow's and images.yml's, their shell steps run as the runner runs them ---------

DOCKER_STAND_IN = """#!/bin/sh
# Records each call and what it read on stdin (a login's password): the steps are run up to the engine.
printf '%s\\n' "$*" >> "{log}"
case "$1" in login) printf 'stdin:%s\\n' "$(cat)" >> "{log}" ;; esac
exit 0
"""
LOOKUP = re.compile(r"\$\{\{\s*([a-z]+(?:\.[A-Za-z0-9_-]+)+)\s*\}\}")


def look_up(text: str, context: dict) -> str:
    """The plain look-ups the GPU jobs' shell steps and job env use (anything else is left for the assert)."""
    def value(m: re.Match) -> str:
        v: object = context
        for part in m.group(1).split("."):
            v = v.get(part, "") if isinstance(v, dict) else ""
        return str(v)

    return LOOKUP.sub(value, text)


def run_shell_steps(job: dict, context: dict, tmp_path: Path) -> list[str]:
    """The job's ``run`` steps, in order, with the job's and each step's env, a recording ``docker`` first on
    the PATH and bash as ``shell: bash`` runs it; the calls docker got."""
    bin_ = tmp_path / "bin"
    bin_.mkdir(exist_ok=True)
    calls = tmp_path / "docker.log"
    calls.write_text("")
    (bin_ / "docker").write_text(DOCKER_STAND_IN.format(log=calls))
    (bin_ / "docker").chmod(0o755)
    job_env = {k: look_up(str(v), context) for k, v in (job.get("env") or {}).items()}
    context = {**context, "env": job_env}
    for i, step in enumerate(job["steps"]):
        if "run" not in step or "patchset " in step["run"] or "pip install" in step["run"]:
            continue  # actions, and the steps that install or run patchset (tested above, and by its own tests)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("PATCHSET_", "GITHUB_"))}
        env.update({"PATH": f"{bin_}{os.pathsep}{env['PATH']}", **job_env})
        env.update({k: look_up(str(v), context) for k, v in (step.get("env") or {}).items()})
        script = tmp_path / f"step{i}.sh"
        script.write_text(look_up(step["run"], context))
        assert "${{" not in script.read_text(), f"step {i}: an expression the runner would evaluate is left"
        done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], env=env,
                              capture_output=True, text=True, cwd=tmp_path)
        assert done.returncode == 0, f"step {step.get('name', i)}: {done.stdout}{done.stderr}"
    return calls.read_text().splitlines()


def generated_gpu_job() -> dict:
    from patchset.verbs.init import workflow_text

    return load_yaml(workflow_text("owner/patchset@v1", ["0.29.0"]))["jobs"]["images"]  # type: ignore[index]


@pytest.mark.parametrize(("base", "host"), [
    ("vllm/vllm-openai:v0.29.0", None),  # Docker Hub: team/name has no registry part
    ("ubuntu:24.04", None),
    ("localhost:5000/team/vllm-openai:v0.29.0", "localhost:5000"),
    ("mirror.internal/team/vllm-openai:v0.29.0", "mirror.internal"),
    ("localhost/vllm-openai:v1", "localhost"),
])
def test_the_generated_gpu_job_logs_in_where_docker_would_pull_its_base(base, host, tmp_path):
    job = generated_gpu_job()
    context = {"matrix": {"vllm": "0.29.0", "image": base}, "github": {"workspace": str(tmp_path / "ws"),
               "sha": "abc123"}, "secrets": {"REGISTRY_USER": "bot", "REGISTRY_PASSWORD": "s3cret"}}
    calls = run_shell_steps(job, context, tmp_path)
    login = ["login --username bot --password-stdin" + (f" {host}" if host else ""), "stdin:s3cret"]
    assert calls == [*login, f"rmi patchset/vllm-openai:v0.29.0-abc123 {base}"]


def test_the_generated_gpu_job_keeps_its_cache_proves_with_a_timeout_and_audits_whatever_the_tests_say(tmp_path):
    job = generated_gpu_job()
    workspace = tmp_path / "ws"
    context = {"matrix": {"vllm": "0.29.0", "image": ""}, "github": {"workspace": str(workspace), "sha": "abc"},
               "secrets": {}}
    cache = Path(look_up(job["env"]["PATCHSET_CACHE"], context)).resolve()
    assert not cache.is_relative_to(workspace), "checkout's clean would wipe a cache in the workspace"
    (cached,) = [s for s in job["steps"] if s.get("uses", "").startswith("actions/cache@")]
    assert Path(look_up(cached["with"]["path"], context)).resolve() == cache
    by_command = {s["with"]["command"]: s for s in job["steps"] if s.get("uses") == "owner/patchset@v1"}
    assert re.search(r"--gpus all --timeout \d+", by_command["test"]["with"]["args"])
    assert "always()" in by_command["audit"]["if"] and "steps.build.outcome == 'success'" in by_command["audit"]["if"]
    assert by_command["build"]["id"] == "build"
    # No credentials: an anonymous pull, and the images still go when the job ends (always()).
    assert run_shell_steps(job, context, tmp_path) == ["rmi patchset/vllm-openai:v0.29.0-abc"]
    assert job["steps"][-1]["if"] == "${{ always() }}"


@pytest.mark.parametrize(("repository", "host"), [("team/vllm-openai", None),
                                                  ("registry.internal:443/team/vllm", "registry.internal:443")])
def test_images_yml_logs_in_to_the_publishing_registry_docker_would_push_to(repository, host, tmp_path):
    job = load_yaml((ROOT / ".github" / "workflows" / "images.yml").read_text())["jobs"]["image"]  # type: ignore[index]
    tag = f"{repository}:v0.29.0-abc"
    context = {"matrix": {"vllm": "0.29.0", "image": "vllm/vllm-openai:v0.29.0"}, "github": {"sha": "abc"},
               "secrets": {"REGISTRY_USER": "bot", "REGISTRY_PASSWORD": "pw"}, "vars": {}}
    job = {**job, "env": {**job["env"], "TAG": tag}}  # IMAGE_REPOSITORY set: `vars.X || 'default'` evaluated here
    calls = run_shell_steps(job, context, tmp_path)
    # The base's credentials are not set (anonymous pull); the publishing login names the registry as docker does.
    assert calls == ["login --username bot --password-stdin" + (f" {host}" if host else ""), "stdin:pw",
                     f"rmi {tag} vllm/vllm-openai:v0.29.0"]
    assert "--timeout" in next(s["run"] for s in job["steps"] if "patchset test" in s.get("run", ""))
