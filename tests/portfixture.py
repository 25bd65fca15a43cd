"""A small series on two releases held in folders: every `port` result, in one manifest.

Release 0.28.0 is the one the patches were made for, 0.29.0 the new one. Each
patch has its own module, so each result has exactly one cause:

| patch    | what 0.29.0 did to its lines              | next         | port      |
| -------- | ----------------------------------------- | ------------ | --------- |
| carry    | 5 lines added above                       | carries      | carried   |
| retire   | has the fix (the probe holds)             | upstream     | retired   |
| merge    | 3 lines above, a context line edited      | needs-port   | ported    |
| clash    | edited the very line the patch edits      | needs-port   | conflict  |
| after    | nothing (but it comes after clash)        | blocked      | blocked   |
| syntax   | turned the function into an if block      | needs-port   | conflict  |
| partly   | has the first of its two hunks            | partly-upst. | ported    |
"""

from __future__ import annotations

from pathlib import Path

from helpers import udiff, write_manifest, write_patch

HEADER = "Description: {id}\nOrigin: backport, upstream PR 1\nLast-Update: 2026-01-01\n---\n"
FUNC = "def f():\n    x = 1\n    y = 2\n    z = 3\n    w = 4\n"


def L(i: int, how: str = "") -> str:
    """Line i of a module: pristine, "fixed" by a patch, or changed "upstream"."""
    return {"": f"line_{i} = {i}\n", "fixed": f"line_{i} = -{i}\n", "upstream": f"line_{i} = {i}  # upstream\n"}[how]


def _files() -> dict[str, tuple[str, str, str]]:
    """module -> (0.28.0 content, the patch's result on 0.28.0, 0.29.0 content)."""
    base = "".join(L(i) for i in range(1, 31))
    new = "new = 0\n"

    def edit(text: str, i: int, how: str) -> str:
        return text.replace(L(i), L(i, how))

    return {
        "carry": (base, edit(base, 15, "fixed"), new * 5 + base),
        "retire": (base, base.replace(L(15), L(15) + "fixed = True\n"), base.replace(L(15), L(15) + "fixed = True\n")),
        "merge": (base, edit(base, 10, "fixed"), new * 3 + edit(base, 12, "upstream")),
        "clash": (base, edit(base, 20, "fixed"), edit(base, 20, "upstream")),
        "after": (base, edit(base, 5, "fixed"), base),
        "syntax": (FUNC, FUNC.replace("    z = 3\n", "    z = 3\n    return z\n"),
                   FUNC.replace("def f():", "if True:")),
        "partly": (base, edit(edit(base, 5, "fixed"), 25, "fixed"), edit(base, 5, "fixed")),
    }


PATCHES = list(_files())


def build(root: Path) -> Path:
    """Trees under root/trees/<version>/, recipes and patches.yaml under root/project/; returns the manifest."""
    project = root / "project"
    entries = []
    for version in ("0.28.0", "0.29.0"):
        init = root / "trees" / version / "vllm" / "__init__.py"
        init.parent.mkdir(parents=True, exist_ok=True)
        init.write_text(f'__version__ = "{version}"\n')
    for name, (old, fixed, new) in _files().items():
        for version, content in (("0.28.0", old), ("0.29.0", new)):
            f = root / "trees" / version / "vllm" / f"{name}.py"
            f.parent.mkdir(parents=True, exist_ok=True)
            f.write_text(content)
        write_patch(project, f"recipes/{name}/vllm-0.28.patch", udiff(f"vllm/{name}.py", old, fixed),
                    header=HEADER.format(id=name))
        extra = ""
        if name == "retire":
            extra = f'\n    present: {{file: vllm/{name}.py, contains: "fixed = True"}}'
        if name == "after":
            extra = "\n    after: [clash]"
        entries.append(f"""
  - id: {name}
    releases: ">=0.28.0,<0.30.0"
    patch:
      "<0.29": recipes/{name}/vllm-0.28.patch  # made on 0.28.0{extra}""")
    # write_manifest dedents: keep the body flush left
    return write_manifest(project, "# the series\nschema: 1\ntargets:\n  \"0.28.0\": {image: \"img:v0.28.0\"}\n"
                          "patches:" + "".join(entries) + "\n")


def source(root: Path) -> str:
    return f"dir:{root / 'trees'}/{{version}}"


def snapshot(project: Path) -> dict[str, bytes]:
    """Every file of the project (the manifest and the recipes), for byte-identical comparisons."""
    return {str(f.relative_to(project)): f.read_bytes() for f in sorted(project.rglob("*"))
            if f.is_file() and ".patchset" not in f.parts}
