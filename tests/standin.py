"""Stand-in base images for vLLM releases, built locally because no image registry is reachable.

    python tests/standin.py --vllm 0.29.0                     # patchset-standin/vllm-openai:v0.29.0
    python tests/standin.py --vllm 0.29.0 --with-site DIR     # ... and :v0.29.0-cpu with DIR's packages

Three images, each a layer on the previous one:

1. ``patchset-standin/debian:bookworm``: ``debootstrap --variant=minbase --include=python3``
   (the mirror is read from the machine's apt configuration), imported with the docker SDK. The
   rootfs tarball is cached, so only the first run pays for debootstrap.
2. ``patchset-standin/vllm-openai:vV``: the real vLLM wheel's files, installed on the host with
   ``pip install --no-deps --target`` (bytecode compiled, as an installer in a real image leaves
   it) and copied into ``/usr/local/lib/python3.11/dist-packages``. This is what an image's
   ``site-packages/vllm`` holds; nothing in it can run a model, and nothing needs to.
3. ``patchset-standin/vllm-openai:vV-cpu``: plus the site-packages of a CPU venv (torch CPU,
   vLLM's CPU-runnable requirements, pytest) so the upstream offload tests run inside it.

Layers 2 and 3 are written with ``put_archive`` on a created container and ``commit``: the files
stream straight into the engine, without a build context staged on disk. Each image carries a
label with the digest of its inputs; a rerun with the same inputs does nothing.
"""

from __future__ import annotations

import argparse
import hashlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent))

import docker  # noqa: E402
import docker.errors  # noqa: E402

from patchset.images.engine import commit, connect, tar_stream, tree_members  # noqa: E402

REPOSITORY = "patchset-standin/vllm-openai"
DEBIAN = "patchset-standin/debian:bookworm"
INPUT_LABEL = "io.patchset.standin.inputs"
#: Bump when how the images are made changes: images made the old way are then rebuilt.
LAYOUT = "2"
SUITE = "bookworm"
#: bookworm's python3 reads /usr/local/lib/python3.11/dist-packages, as pip-installed images do.
SITE = "/usr/local/lib/python3.11/dist-packages"
#: What a vllm-openai image runs when started; inspection must never depend on it.
ENTRYPOINT = '["python3", "-m", "vllm.entrypoints.openai.api_server"]'
#: Packages in a test venv that the image must not get: tooling of the venv itself, and vLLM,
#: which the layer below already holds from the wheel.
_VENV_SKIP = re.compile(r"^(vllm|vllm-.*\.dist-info|pip|pip-.*\.dist-info|__pycache__)$")


def cache_dir() -> Path:
    root = Path(os.environ.get("PATCHSET_CACHE") or Path.home() / ".cache" / "patchset")
    path = root / "standin"
    path.mkdir(parents=True, exist_ok=True)
    return path


def log(message: str) -> None:
    print(f"[standin] {message}", file=sys.stderr, flush=True)


def timed(what: str, fn: Callable, *args, **kwargs):
    start = time.monotonic()
    result = fn(*args, **kwargs)
    log(f"{what}: {time.monotonic() - start:.1f} s")
    return result


# --- layer 1: Debian ------------------------------------------------------------------------------


def debian_mirror() -> str:
    """The Debian archive URI the machine's apt uses (deb822 ``.sources`` first, then one-line)."""
    sources = sorted(Path("/etc/apt/sources.list.d").glob("*.sources"))
    for path in sources:
        for stanza in re.split(r"\n\s*\n", path.read_text()):
            lines = [line for line in stanza.splitlines() if ":" in line and not line.startswith("#")]
            fields = {key.strip(): value.strip() for key, value in (line.split(":", 1) for line in lines)}
            suites = fields.get("Suites", "").split()
            if SUITE in suites and fields.get("URIs"):
                return fields["URIs"].split()[0]
    for path in [Path("/etc/apt/sources.list"), *sorted(Path("/etc/apt/sources.list.d").glob("*.list"))]:
        if path.exists():
            for line in path.read_text().splitlines():
                parts = line.split()
                if len(parts) >= 3 and parts[0] == "deb" and SUITE in parts:
                    return next(p for p in parts[1:] if "://" in p)
    raise SystemExit(f"no apt source for {SUITE} in /etc/apt: cannot tell debootstrap where Debian is")


def rootfs_tarball() -> Path:
    """The cached minbase+python3 rootfs, made with debootstrap on first use."""
    tarball = cache_dir() / f"{SUITE}-minbase-python3.tar"
    if tarball.exists():
        return tarball
    if shutil.which("debootstrap") is None:
        raise SystemExit("debootstrap is not installed (apt-get install debootstrap; .ci/docker.sh does)")
    with tempfile.TemporaryDirectory(dir=cache_dir()) as tmp:
        rootfs = Path(tmp, "rootfs")
        mirror = debian_mirror()
        log(f"debootstrap {SUITE} from the apt mirror")
        timed(
            "debootstrap",
            subprocess.run,
            ["debootstrap", "--variant=minbase", "--include=python3", SUITE, str(rootfs), mirror],
            check=True,
            stdout=subprocess.DEVNULL,
        )
        partial = Path(tmp, "rootfs.tar")
        with open(partial, "wb") as sink:
            for block in tar_stream(_rootfs_members(rootfs)):
                sink.write(block)
        os.replace(partial, tarball)  # atomic: a concurrent or interrupted run never sees half a tarball
    return tarball


def _rootfs_members(rootfs: Path):
    # debootstrap's apt lists and package cache are 40+ MB that no image needs.
    for arcname, path in tree_members(rootfs):
        if arcname.startswith(("var/cache/apt/archives/", "var/lib/apt/lists/")) and path.is_file():
            continue
        yield arcname, path


def debian_image(client: docker.DockerClient) -> str:
    tarball = rootfs_tarball()
    inputs = f"{tarball.name}:{tarball.stat().st_size}:{int(tarball.stat().st_mtime)}"
    if _current(client, DEBIAN, inputs):
        return DEBIAN
    repository, tag = DEBIAN.rsplit(":", 1)
    log(f"importing {tarball.name} as {DEBIAN}")
    # From the file, not a stream: docker-py declares a stream "chunked" but sends it raw.
    timed(
        "docker import",
        client.api.import_image_from_file,
        str(tarball),
        repository=repository,
        tag=tag,
        changes=[f"LABEL {INPUT_LABEL}={inputs}", 'CMD ["bash"]'],
    )
    return DEBIAN


# --- layer 2: the real vLLM package files -----------------------------------------------------------


def vllm_wheel(version: str) -> Path:
    wheels = cache_dir() / "wheels"
    found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    if not found:
        log(f"pip download vllm=={version} (wheel, no deps)")
        timed(
            "pip download",
            subprocess.run,
            [sys.executable, "-m", "pip", "download", "-q", "--no-deps", "--only-binary", ":all:",
             "--python-version", "3.12", "--platform", "manylinux_2_28_x86_64",
             f"vllm=={version}", "-d", str(wheels)],
            check=True,
        )
        found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    return found[0]


def vllm_target(version: str) -> Path:
    """The wheel installed with ``--no-deps --target`` (bytecode compiled by the host's 3.11)."""
    target = cache_dir() / f"vllm-{version}-target"
    if (target / ".complete").exists():
        return target
    wheel = vllm_wheel(version)
    shutil.rmtree(target, ignore_errors=True)
    timed(
        "pip install --target",
        subprocess.run,
        [sys.executable, "-m", "pip", "install", "-q", "--no-deps", "--target", str(target), str(wheel)],
        check=True,
    )
    (target / ".complete").write_text(wheel.name)
    return target


def vllm_image(client: docker.DockerClient, version: str) -> str:
    tag = f"{REPOSITORY}:v{version}"
    base = debian_image(client)
    target = vllm_target(version)
    inputs = _digest([LAYOUT, client.images.get(base).id, (target / ".complete").read_text(), ENTRYPOINT])
    if _current(client, tag, inputs):
        return tag
    members = tree_members(target, SITE.lstrip("/"), skip={"bin", ".complete"})
    timed(f"layer vllm {version}", _commit_layer, client, base, tag, members, inputs,
          [f"ENTRYPOINT {ENTRYPOINT}", "CMD []"])
    return tag


# --- layer 3: what the upstream tests need on a CPU ---------------------------------------------------


def cpu_image(client: docker.DockerClient, version: str, site: Path) -> str:
    tag = f"{REPOSITORY}:v{version}-cpu"
    base = vllm_image(client, version)
    names = sorted(n for n in os.listdir(site) if not _VENV_SKIP.match(n))
    inputs = _digest([LAYOUT, client.images.get(base).id, str(site.resolve()), *names,
                      *(str(int((site / n).stat().st_mtime)) for n in names)])
    if _current(client, tag, inputs):
        return tag

    def members():
        for name in names:
            path = site / name
            arcname = f"{SITE.lstrip('/')}/{name}"
            if path.is_dir() and not path.is_symlink():
                yield arcname, path
                yield from tree_members(path, arcname)
            else:
                yield arcname, path

    timed("layer test requirements", _commit_layer, client, base, tag, members(), inputs, [])
    return tag


# --- helpers -----------------------------------------------------------------------------------------


def _commit_layer(client, base: str, tag: str, members, inputs: str, changes: list[str]) -> None:
    log(f"writing {tag}")
    container = client.containers.create(base, entrypoint=["/bin/true"], network_disabled=True)
    try:
        if not container.put_archive("/", tar_stream(members)):
            raise RuntimeError(f"put_archive into {base} failed")
        commit(container, client.images.get(base), tag, [f"LABEL {INPUT_LABEL}={inputs}", *changes])
    finally:
        container.remove(force=True)


def _current(client, tag: str, inputs: str) -> bool:
    try:
        image = client.images.get(tag)
    except docker.errors.ImageNotFound:
        return False
    return (image.labels or {}).get(INPUT_LABEL) == inputs


def _digest(parts: list[str]) -> str:
    return hashlib.sha256("\0".join(parts).encode()).hexdigest()[:32]


def build(version: str, site: Path | None = None) -> str:
    client = connect()
    return cpu_image(client, version, site) if site else vllm_image(client, version)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--vllm", default="0.29.0")
    parser.add_argument("--with-site", type=Path, help="a CPU venv's site-packages to add (test variant)")
    args = parser.parse_args(argv)
    start = time.monotonic()
    tag = build(args.vllm, args.with_site)
    log(f"{tag} ready in {time.monotonic() - start:.1f} s")
    print(tag)
    return 0


if __name__ == "__main__":
    sys.exit(main())
