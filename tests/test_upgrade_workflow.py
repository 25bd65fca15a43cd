"""The upgrade workflow `patchset init` writes (.github/workflows/patchset-upgrade.yml), run as the runner runs it.

Its steps run in a scratch fork whose ``origin`` is a local bare repository: the patchset action's steps as
tests/test_action.py runs them, the workflow's own bash steps with their ``env`` and ``if`` evaluated, and
the pull-request step as the git commands peter-evans/create-pull-request runs (src/create-or-update-branch.ts
at v8: commit every change on a temporary branch off the base; fetch the pull-request branch; reset it to
the temporary branch only when their trees or the number of commits ahead of the base differ; push with
``--force-with-lease`` only when it then differs from the remote). The GitHub API part (opening the pull
request, labels, draft) cannot run here; its inputs are checked against the action's vendored action.yml.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
from pathlib import Path

import jsonschema
import pytest
from helpers import SCRATCH_FIXED, SCRATCH_MOD, load_yaml, scratch_fork
from test_action import Runner, copy_of_the_action

from patchset.cli import main
from patchset.verbs.init import UPGRADE_WORKFLOW, WORKFLOW

DATA = Path(__file__).parent / "data"
CPR = "peter-evans/create-pull-request"
BOT = "github-actions[bot]"
BOT_EMAIL = "41898282+github-actions[bot]@users.noreply.github.com"
EXPRESSION = re.compile(r"\$\{\{\s*(.*?)\s*\}\}")


def workflow(tmp_path: Path) -> dict:
    assert main(["init", "--vllm", "0.29.0", "--into", str(tmp_path), "--action", "me/patchset@v1"]) == 0
    return load_yaml((tmp_path / UPGRADE_WORKFLOW).read_text())


def steps(wf: dict) -> list[dict]:
    return wf["jobs"]["upgrade"]["steps"]


# --- what the file says ------------------------------------------------------------------------------------


def test_init_writes_the_upgrade_workflow_valid_against_the_published_schema(tmp_path, capsys):
    wf = workflow(tmp_path)
    jsonschema.validate(wf, json.loads((DATA / "schemastore" / "github-workflows.json").read_text()))
    on = wf[True] if True in wf else wf["on"]  # YAML 1.1 reads a bare `on` as true
    assert on["schedule"][0]["cron"].split()[2:] == ["*", "*", "*"]  # daily
    assert on["workflow_dispatch"]["inputs"]["release"]["default"] == ""
    assert wf["permissions"] == {"contents": "write", "pull-requests": "write"}
    upgrade = next(s for s in steps(wf) if s.get("id") == "upgrade")
    assert upgrade["uses"] == "me/patchset@v1" and upgrade["with"]["command"] == "upgrade"
    assert upgrade["with"]["args"].startswith("--prove --body ")
    assert upgrade["continue-on-error"] is True  # a conflict still makes a (draft) pull request


def test_no_upgrade_workflow_leaves_it_out(tmp_path):
    assert main(["init", "--vllm", "0.29.0", "--into", str(tmp_path), "--no-upgrade-workflow"]) == 0
    assert (tmp_path / WORKFLOW).is_file() and not (tmp_path / UPGRADE_WORKFLOW).exists()


def test_the_pull_request_step_uses_only_inputs_of_the_vendored_action_pinned_to_its_major_tag(tmp_path):
    wf = workflow(tmp_path)
    step = next(s for s in steps(wf) if s.get("uses", "").startswith(CPR + "@"))
    spec = load_yaml((DATA / "create-pull-request" / "action.yml").read_text())
    ref = step["uses"].split("@", 1)[1]
    assert re.fullmatch(r"v\d+", ref), "pinned to a major tag"
    vendored = (DATA / "create-pull-request" / "README.md").read_text()
    assert f"the major tag `@{ref}`" in vendored and re.search(rf"tag {ref}\.\d+\.\d+", vendored)
    assert set(step["with"]) <= set(spec["inputs"]), set(step["with"]) - set(spec["inputs"])
    assert {"branch", "title", "body-path", "labels", "draft", "commit-message"} <= set(step["with"])
    assert step["with"]["branch"] == "${{ steps.pr.outputs.branch }}"
    assert "always-true" in spec["inputs"]["draft"]["description"]  # the value the pr step gives a conflict
    assert "Display Name <email@address.com>" in spec["inputs"]["committer"]["description"]
    assert BOT_EMAIL in spec["inputs"]["committer"]["default"]  # whose commits the branch step leaves alone


# --- run as the runner runs it -----------------------------------------------------------------------------


def evaluate(expr: str, context: dict) -> object:
    """The expressions this workflow uses: look-ups, '' strings, ==, !=, && and || (GitHub's semantics)."""
    expr = expr.strip()
    for op in ("||", "&&"):
        if op in expr:
            left, right = expr.split(op, 1)
            a = evaluate(left, context)
            if op == "||":
                return a if a else evaluate(right, context)
            return evaluate(right, context) if a else a
    for op in ("!=", "=="):
        if op in expr:
            left, right = expr.split(op, 1)
            same = str(evaluate(left, context)) == str(evaluate(right, context))
            return same if op == "==" else not same
    if re.fullmatch(r"'[^']*'", expr):
        return expr[1:-1]
    assert re.fullmatch(r"[a-z_]+(\.[A-Za-z0-9_-]+)+", expr), f"not an expression this test knows: {expr}"
    value: object = context
    for part in expr.split("."):
        value = value.get(part, "") if isinstance(value, dict) else ""
    return value


def substitute(text: str, context: dict) -> str:
    return EXPRESSION.sub(lambda m: str(evaluate(m.group(1), context)), text)


def git(cwd: Path, *args: str, who: tuple[str, str] = ("t", "t@example.invalid"), check: bool = True
        ) -> subprocess.CompletedProcess:
    env = {**os.environ, "GIT_AUTHOR_NAME": who[0], "GIT_AUTHOR_EMAIL": who[1], "GIT_COMMITTER_NAME": who[0],
           "GIT_COMMITTER_EMAIL": who[1]}
    return subprocess.run(["git", *args], cwd=cwd, env=env, capture_output=True, text=True, check=check)


def create_pull_request(workspace: Path, with_: dict[str, str]) -> str:
    """What peter-evans/create-pull-request@v8 does with git (createOrUpdateBranch, then the push), without
    the GitHub API: 'created', 'updated' or 'not-updated'."""
    branch, message = with_["branch"], with_["commit-message"]
    bot = (BOT, BOT_EMAIL)
    git(workspace, "checkout", "-q", "-b", "cpr-temp")
    if git(workspace, "status", "--porcelain").stdout:
        git(workspace, "add", "-A")
        git(workspace, "commit", "-q", "-m", message, who=bot)
    fetched = git(workspace, "fetch", "--quiet", "origin", f"+refs/heads/{branch}:refs/remotes/origin/{branch}",
                  check=False).returncode == 0
    if not fetched:
        git(workspace, "checkout", "-q", "-b", branch, "cpr-temp")
        action = "created"
    else:
        git(workspace, "checkout", "-q", "-B", branch, f"origin/{branch}")

        def ahead(ref: str) -> int:
            return int(git(workspace, "rev-list", "--right-only", "--count", f"main...{ref}").stdout)

        if git(workspace, "diff", "--quiet", f"{branch}..cpr-temp", check=False).returncode \
                or ahead(branch) != ahead("cpr-temp") or not ahead("cpr-temp"):
            git(workspace, "checkout", "-q", "-B", branch, "cpr-temp")
        even = git(workspace, "rev-parse", branch).stdout == git(workspace, "rev-parse", f"origin/{branch}").stdout
        action = "not-updated" if even else "updated"
    if action != "not-updated":
        git(workspace, "push", "--quiet", "--force-with-lease", "origin", f"{branch}:refs/heads/{branch}")
    git(workspace, "branch", "-q", "-D", "cpr-temp")
    git(workspace, "checkout", "-q", "main")
    return action


class WorkflowRun:
    """The upgrade job's steps in a fresh checkout of ``origin``, as the runner runs them."""

    def __init__(self, wf: dict, action: Runner, install: dict[str, str], root: Path, origin: Path,
                 extra_args: str) -> None:
        self.wf, self.action, self.install, self.root, self.origin = wf, action, install, root, origin
        self.extra_args = extra_args  # the scratch fork's releases are folders: --source says where
        self.runs = 0

    def __call__(self, release: str = "") -> dict:
        self.runs += 1
        workspace = self.root / f"checkout-{self.runs}"
        git(self.root, "clone", "-q", str(self.origin), str(workspace))  # actions/checkout, fetch-depth 0
        self.action.workspace = workspace
        temp = self.action.temp
        context: dict = {"inputs": {"release": release}, "steps": {}, "runner": {"temp": str(temp)},
                         "secrets": {}, "github": {"token": "t"}}
        log: dict = {"workspace": workspace, "cpr": None, "summary": ""}
        job_env: dict[str, str] = {}  # what steps wrote to GITHUB_ENV
        log["env"] = job_env
        summary = temp / "step_summary.md"
        start = summary.stat().st_size if summary.exists() else 0
        for step in steps(self.wf):
            sid = step.get("id", "")
            if "if" in step and not evaluate(EXPRESSION.sub(r"\1", step["if"]), context):
                continue
            uses = step.get("uses", "")
            if uses.startswith(("actions/checkout@", "actions/cache@")):
                continue  # done above / nothing to restore here
            with_ = {k: substitute(str(v), context) for k, v in (step.get("with") or {}).items()}
            if uses.startswith(CPR + "@"):
                log["cpr"] = create_pull_request(workspace, with_)
                continue
            if uses:  # the patchset action
                with_["args"] += " " + self.extra_args
                saved = dict(os.environ)
                os.environ.update(job_env)  # the runner gives GITHUB_ENV's variables to every later step
                try:
                    run = self.action.run(with_, only=("run",), given={"install": {"outputs": self.install}})
                finally:
                    os.environ.clear()
                    os.environ.update(saved)
                context["steps"][sid] = {"outputs": run.outputs}
                log["action"] = run
                continue
            outputs = self.bash(step, context, workspace, job_env)
            context["steps"][sid] = {"outputs": outputs}
        log["steps"] = context["steps"]
        log["summary"] = summary.read_text()[start:] if summary.exists() else ""
        return log

    def bash(self, step: dict, context: dict, workspace: Path, job_env: dict[str, str]) -> dict[str, str]:
        done, outputs = run_bash_step(step, context, workspace, self.action.temp, job_env)
        assert done.returncode == 0, done.stdout + done.stderr
        return outputs


def run_bash_step(step: dict, context: dict, workspace: Path, temp: Path, job_env: dict[str, str] | None = None
                  ) -> tuple[subprocess.CompletedProcess, dict[str, str]]:
    """One ``shell: bash`` step of the workflow as the runner runs it: its env evaluated, fresh GITHUB_OUTPUT and
    GITHUB_ENV (what the step adds to the latter goes into ``job_env``, for the steps after it)."""
    from test_action import parse_output_file

    out, add_env = temp / "workflow-output", temp / "workflow-env"
    out.write_text("")
    add_env.write_text("")
    env = {k: v for k, v in os.environ.items() if not k.startswith(("PATCHSET_", "GITHUB_"))}
    env.update(job_env or {})
    env.update({"GITHUB_OUTPUT": str(out), "GITHUB_STEP_SUMMARY": str(temp / "step_summary.md"),
                "GITHUB_ENV": str(add_env), "RUNNER_TEMP": str(temp), "GITHUB_WORKSPACE": str(workspace)})
    env.update({k: substitute(str(v), context) for k, v in (step.get("env") or {}).items()})
    script = temp / "workflow-step.sh"
    script.write_text(substitute(step["run"], context))
    done = subprocess.run(["bash", "--noprofile", "--norc", "-eo", "pipefail", str(script)], cwd=workspace,
                          env=env, capture_output=True, text=True)
    if job_env is not None:
        job_env.update(parse_output_file(add_env.read_text()))
    return done, parse_output_file(out.read_text())


@pytest.fixture(scope="module")
def job(tmp_path_factory):
    """A scratch fork (targets 0.29.0 and 0.30.0, releases in folders, one more: 0.31.0) whose origin is a bare
    repository holding the upgrade workflow `patchset init` writes; the action installed once."""
    root = tmp_path_factory.mktemp("upgrade-job")
    fork = scratch_fork(root / "fork")
    (fork / "trees" / "0.31.0" / "vllm").mkdir(parents=True)
    (fork / "trees" / "0.31.0" / SCRATCH_MOD).write_text("# 0.31.0\n" + SCRATCH_FIXED)
    (fork / "trees" / "0.31.0" / "vllm" / "__init__.py").write_text("")
    assert main(["init", "--vllm", "0.29.0", "--into", str(fork / "ci"), "--action", "me/patchset@v1"]) == 0
    (fork / ".github" / "workflows").mkdir(parents=True)
    (fork / "ci" / UPGRADE_WORKFLOW).rename(fork / UPGRADE_WORKFLOW)
    wf = load_yaml((fork / UPGRADE_WORKFLOW).read_text())
    shutil.rmtree(fork / "ci")
    git(fork, "add", "-A")
    git(fork, "commit", "-q", "-m", "the upgrade workflow")
    git(fork, "branch", "-q", "-M", "main")
    origin = root / "origin.git"
    git(root, "clone", "-q", "--bare", str(fork), str(origin))
    temp = root / "runner-temp"
    temp.mkdir()
    runner = Runner(copy_of_the_action(root / "action"), fork, temp, ref="v9.8.7")
    installed = runner.run({"command": "validate"})  # the install step, once; then only the run step
    assert not installed.failed, installed.log
    return WorkflowRun(wf, runner, installed.steps["install"], root, origin, "--source dir:trees/{version}")


def remote_head(origin: Path, branch: str) -> str:
    return git(origin, "rev-parse", f"refs/heads/{branch}", check=False).stdout.strip()


@pytest.mark.slow
def test_a_release_becomes_one_branch_with_the_expected_commit_and_a_second_run_pushes_nothing(job):
    branch = "patchset/vllm-0.31.0"
    first = job("0.31.0")
    assert first["action"].outputs["exit-code"] == "0", first["action"].log
    assert first["steps"]["pr"]["outputs"] == {"version": "0.31.0", "branch": branch,
                                               "title": "vLLM 0.31.0: no patch to carry", "draft": "false"}
    assert first["steps"]["branch"]["outputs"] == {"skip": "false"}
    base_time = git(job.origin, "log", "-1", "--format=%ct", "main").stdout.strip()
    assert first["env"] == {"SOURCE_DATE_EPOCH": base_time}  # new patch files dated by the base, not the day
    assert first["cpr"] == "created"
    head = remote_head(job.origin, branch)
    log = git(job.origin, "log", "--format=%s|%an|%ce|%P", "-n", "1", head).stdout.strip().split("|")
    main_head = remote_head(job.origin, "main")
    assert log == ["vLLM 0.31.0: no patch to carry", "github-actions[bot]", BOT_EMAIL, main_head]
    changed = git(job.origin, "diff", "--name-only", main_head, head).stdout.split()
    assert changed == ["patches.yaml"]
    manifest = git(job.origin, "show", f"{head}:patches.yaml").stdout
    assert '"0.31.0"' in manifest  # V a target
    body = (job.action.temp / "patchset-upgrade.md").read_text()
    assert body.startswith("vLLM 0.31.0: no patch to carry\n") and "**vLLM 0.31.0 is a target now**" in body
    assert "patchset upgrade" in first["summary"]

    second = job("0.31.0")
    assert second["cpr"] == "not-updated" and remote_head(job.origin, branch) == head  # nothing pushed

    # a maintainer pushes to the branch: the next run leaves it alone
    work = second["workspace"]
    git(work, "fetch", "-q", "origin", branch)
    git(work, "checkout", "-q", "-b", "mine", "FETCH_HEAD")
    (work / "NOTES.md").write_text("checked by hand\n")
    git(work, "add", "NOTES.md")
    git(work, "commit", "-q", "-m", "notes", who=("Maintainer", "m@example.invalid"))
    git(work, "push", "-q", "origin", f"mine:refs/heads/{branch}")
    mine = remote_head(job.origin, branch)
    third = job("0.31.0")
    assert third["steps"]["branch"]["outputs"] == {"skip": "true"} and third["cpr"] is None
    assert remote_head(job.origin, branch) == mine
    assert f"{branch} holds commits by m@example.invalid: left as it is" in third["summary"]


@pytest.mark.parametrize(("code", "doc", "outputs"), [
    ("0", {"vllm": None, "branch": None, "title": "no vLLM release newer than the targets", "draft": False}, {}),
    ("0", {"vllm": "0.35.0", "branch": "patchset/vllm-0.35.0", "title": "vLLM 0.35.0: 2 carried", "draft": False},
     {"version": "0.35.0", "branch": "patchset/vllm-0.35.0", "title": "vLLM 0.35.0: 2 carried", "draft": "false"}),
    ("1", {"vllm": "0.35.0", "branch": "patchset/vllm-0.35.0", "title": "vLLM 0.35.0: 1 carried, 1 conflict",
           "draft": True},
     {"version": "0.35.0", "branch": "patchset/vllm-0.35.0", "title": "vLLM 0.35.0: 1 carried, 1 conflict",
      "draft": "always-true"}),
])
def test_the_pr_step_reads_the_upgrade_report(tmp_path, code, doc, outputs):
    """No release: no outputs, so no later step runs. A conflict (exit 1): a draft, kept a draft on update."""
    step = next(s for s in steps(workflow(tmp_path / "init")) if s.get("id") == "pr")
    report = tmp_path / "report.json"
    report.write_text(json.dumps(doc))
    context = {"steps": {"upgrade": {"outputs": {"report": str(report), "exit-code": code}}}}
    done, got = run_bash_step(step, context, tmp_path, tmp_path)
    assert done.returncode == 0, done.stderr
    assert got == outputs
    # the same without the action's outputs: its report read from the action's own path
    report.rename(tmp_path / "patchset-upgrade.json")
    done, got = run_bash_step(step, {"steps": {}}, tmp_path, tmp_path)
    assert done.returncode == 0 and got == outputs, done.stderr


@pytest.mark.parametrize(("code", "doc"), [
    ("2", {"ok": False, "error": {"message": "patches.yaml:3: bad"}}), ("3", None), ("", None),
    ("", {"ok": False, "error": {"message": "patches.yaml:3: bad"}})])
def test_bad_input_or_an_internal_error_fails_the_job(tmp_path, code, doc):
    """Also when the action's outputs are missing (a failed step): the report is read from its own path."""
    step = next(s for s in steps(workflow(tmp_path / "init")) if s.get("id") == "pr")
    if doc is not None:
        (tmp_path / "patchset-upgrade.json").write_text(json.dumps(doc))
    context = {"steps": {"upgrade": {"outputs": {"exit-code": code}}}}
    done, got = run_bash_step(step, context, tmp_path, tmp_path)
    assert done.returncode == 1 and got == {} and "::error title=patchset upgrade::" in done.stdout + done.stderr


def test_the_checks_of_a_pull_request_fail_while_a_port_conflict_is_unfinished(tmp_path):
    """The pre-commit hook runs validate when a workspace file is committed, and patchset.yml validates
    before it checks: an upgrade's draft cannot pass either while a conflict is left."""
    hooks = load_yaml((Path(__file__).parents[1] / ".pre-commit-hooks.yaml").read_text())
    pattern = next(h["files"] for h in hooks if h["id"] == "patchset-validate")
    for path in ("patches.yaml", "recipes/x/vllm-0.30.0.patch", ".patchset/port/x/vllm/logger.py",
                 "fork/.patchset/port/x/README.md"):
        assert re.search(pattern, path), path  # pre-commit matches `files` with re.search
    assert not re.search(pattern, "vllm/logger.py")
    assert main(["init", "--vllm", "0.29.0", "--into", str(tmp_path), "--action", "me/patchset@v1"]) == 0
    check = load_yaml((tmp_path / WORKFLOW).read_text())["jobs"]["check"]["steps"]
    commands = [s["with"]["command"] for s in check if s.get("uses") == "me/patchset@v1"]
    assert commands == ["validate", "check"]
