"""Would a merged module still import? The checks a clean merge must pass before it is accepted.

A 3-way merge that is clean and compiles can still be dead on arrival: the
patch kept ``Optional[...]`` where the new release dropped ``from typing import
Optional``, or it imports a name from a vLLM module the new release moved it
out of. Both raise at import time, and both are visible without importing
anything:

* undefined names, by pyflakes (from the AST alone), counted only when they
  are new: a name the new release's own file or the old patched file already
  leaves undefined (a ``__getattr__`` module, a star import) is not the merge's
  doing;
* every ``import vllm...`` and ``from vllm... import name`` that the new
  release's own file does not have resolves in the new release's tree: the
  module exists, and the name is defined or re-exported there (or is a
  submodule). When it is not, the tree is searched for where the name is
  defined, so the message can say where it went.

Pure: file contents in, reasons out; the tree is read through a callable.
"""

from __future__ import annotations

import ast
import functools
import re
import textwrap
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from pyflakes import checker, messages

from patchset.core.patchfile import FilePatch

Read = Callable[[str], "bytes | None"]



@dataclass(frozen=True)
class Problem:
    """One reason a module would not import: what, and on which line of the merged file."""

    line: int
    message: str
    name: str = ""  # the name that is missing
    file: str = ""  # the file it is missing from (the module imported from, or the merged file itself)


def undefined_names(content: bytes, path: str = "<merged>") -> list[tuple[str, int]]:
    """(name, line) for each use of a name nothing defines, as pyflakes reports it; [] if it does not parse."""
    try:
        tree = ast.parse(content, path)
    except (SyntaxError, ValueError):
        return []
    found = checker.Checker(tree, filename=path)
    return [(m.message_args[0], m.lineno) for m in found.messages if isinstance(m, messages.UndefinedName)]


def new_undefined(merged: bytes, references: Iterable[bytes | None], path: str = "<merged>") -> list[tuple[str, int]]:
    """Undefined names of ``merged`` that none of ``references`` (V's pristine file, the old patched one)
    leaves undefined as well. The references are only analysed when ``merged`` has any."""
    found = undefined_names(merged, path)
    if not found:
        return []
    known = {name for ref in references if ref is not None for name, _ in undefined_names(ref, path)}
    return [(name, line) for name, line in found if name not in known]


# Where an import of the package may start. Found by a regular expression and each statement parsed
# alone: walking the whole AST of a 5,000-line module costs about 0.2 s, the expression a millisecond.
# A docstring line that reads like such an import is parsed as one; it can only add a check.
_IMPORT = re.compile(rb"^[ \t]*(?:from[ \t]+vllm[\w.]*[ \t]+import\b|import[ \t]+vllm\b)", re.M)


def vllm_imports(content: bytes, package: str = "vllm") -> list[tuple[str, str | None, int]]:
    """(module, imported name or None for ``import module``, line) for each absolute import of ``package``."""
    pattern = _IMPORT if package == "vllm" else re.compile(_IMPORT.pattern.replace(b"vllm", package.encode()), re.M)
    out: list[tuple[str, str | None, int]] = []
    for m in pattern.finditer(content):
        line = content.count(b"\n", 0, m.start()) + 1
        for node in _statement(content, m.start()):
            if isinstance(node, ast.Import):
                out += [(a.name, None, line) for a in node.names
                        if a.name == package or a.name.startswith(package + ".")]
            elif isinstance(node, ast.ImportFrom) and not node.level and node.module and \
                    (node.module == package or node.module.startswith(package + ".")):
                out += [(node.module, a.name, line) for a in node.names if a.name != "*"]
    return out


def _statement(content: bytes, start: int) -> list[ast.stmt]:
    """The import statement that starts at ``start``: up to its closing parenthesis, or the end of its
    line and the lines a backslash continues it to."""
    end = start
    while True:
        nl = content.find(b"\n", end)
        nl = len(content) if nl < 0 else nl
        text = content[start:nl]
        if text.count(b"(") > text.count(b")") and nl < len(content):
            end = nl + 1
            continue
        if text.rstrip().endswith(b"\\") and nl < len(content):
            end = nl + 1
            continue
        break
    try:
        return ast.parse(textwrap.dedent(text.decode("utf-8", errors="replace"))).body
    except (SyntaxError, ValueError):
        return []


def module_file(module: str, read: Read) -> tuple[str, bytes] | None:
    """The file that defines ``module`` in the tree (``a/b.py`` or ``a/b/__init__.py``), with its content."""
    base = module.replace(".", "/")
    for path in (base + ".py", base + "/__init__.py"):
        data = read(path)
        if data is not None:
            return path, data
    return None


def defines(content: bytes, name: str) -> bool | None:
    """Whether a module binds ``name`` at its top level (def, class, assignment, import, ``__all__``);
    None when it cannot be told (a module ``__getattr__``, a star import, a file that does not parse)."""
    names = _module_names(content)
    if names is None:
        return None
    if name in names:
        return True
    return None if "__getattr__" in names or "*" in names else False


@functools.lru_cache(maxsize=256)
def _module_names(content: bytes) -> frozenset[str] | None:
    """A module's top-level names ("*" for a star import), parsed once per content: a merged file imports
    many names from the same few modules."""
    try:
        tree = ast.parse(content)
    except (SyntaxError, ValueError):
        return None
    star = any(isinstance(n, ast.ImportFrom) and any(a.name == "*" for a in n.names) for n in tree.body)
    return frozenset(top_level_names(tree) | ({"*"} if star else set()))


def top_level_names(tree: ast.Module) -> set[str]:
    """Names a module binds outside functions and classes (inside if/try/with blocks too)."""
    out: set[str] = set()

    def visit(body: list[ast.stmt]) -> None:
        for node in body:
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)):
                out.add(node.name)
            elif isinstance(node, (ast.Import, ast.ImportFrom)):
                out.update((a.asname or a.name).split(".")[0] for a in node.names)
            elif isinstance(node, (ast.Assign, ast.AnnAssign, ast.AugAssign)):
                targets = node.targets if isinstance(node, ast.Assign) else [node.target]
                for t in targets:
                    out.update(n.id for n in ast.walk(t) if isinstance(n, ast.Name))
            elif isinstance(node, (ast.If, ast.Try, ast.With, ast.For, ast.While)):
                for field in ("body", "orelse", "finalbody"):
                    visit(getattr(node, field, []) or [])
                for h in getattr(node, "handlers", []) or []:
                    visit(h.body)
            if isinstance(node, ast.Assign) and isinstance(node.value, (ast.List, ast.Tuple)) and \
                    any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets):
                out.update(e.value for e in node.value.elts
                               if isinstance(e, ast.Constant) and isinstance(e.value, str))

    visit(tree.body)
    return out


def unresolved_import(module: str, name: str | None, read: Read) -> str:
    """Why ``from module import name`` (or ``import module``) would fail in the tree, or ''."""
    found = module_file(module, read)
    if found is None:
        return f"module {module} does not exist"
    if name is None:
        return ""
    path, content = found
    if defines(content, name) is not False:
        return ""
    if module_file(f"{module}.{name}", read) is not None:
        return ""  # a submodule
    return f"{name!r} is not in {path}"


def import_problems(merged: bytes, pristine: bytes | None, read: Read,
                    where_defined: Callable[[str], list[str]] | None = None,
                    version: str = "") -> list[Problem]:
    """The ``vllm`` imports of ``merged`` that its release's own file does not have and that do not resolve."""
    have = set(vllm_imports(pristine)) if pristine is not None else set()
    have_keys = {(m, n) for m, n, _ in have}
    out = []
    for module, name, line in vllm_imports(merged):
        if (module, name) in have_keys:
            continue
        why = unresolved_import(module, name, read)
        if not why or line in guarded_lines(merged):
            continue
        home = module_file(module, read)
        # What is missing: the name from its module's file, or the module itself (a file the series may create)
        missing = (name, home[0]) if name and home else ("", module.replace(".", "/") + ".py") if not home \
            else ("", "")
        if version:
            why += f" in {version}"
        if name and where_defined:
            home = module_file(module, read)
            homes = [p for p in where_defined(name) if home is None or p != home[0]]
            if homes:
                why += f" (it is in {', '.join(homes[:3])})"
        out.append(Problem(line, why, *missing))
    return out


# What a guard catches when an import fails: the module's own fallback, not a break.
_IMPORT_ERRORS = frozenset({"ImportError", "ModuleNotFoundError", "Exception", "BaseException"})


@functools.lru_cache(maxsize=64)
def guarded_lines(content: bytes) -> frozenset[int]:
    """The lines of import statements a module guards: in the body of a ``try`` whose handler catches
    ImportError (or a bare ``except``, ``Exception``), or under ``if TYPE_CHECKING:`` (never run). Such an
    import that does not resolve is the module's own fallback, not a reason it would not import.

    Parsed only when an import does not resolve: most merged files never need it."""
    try:
        tree = ast.parse(content)
    except (SyntaxError, ValueError):
        return frozenset()
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Try) and any(_catches_import_error(h) for h in node.handlers):
            body: list[ast.stmt] = node.body
        elif isinstance(node, ast.If) and _is_type_checking(node.test):
            body = node.body
        else:
            continue
        out.update(n.lineno for stmt in body for n in ast.walk(stmt) if isinstance(n, (ast.Import, ast.ImportFrom)))
    return frozenset(out)


def _catches_import_error(handler: ast.ExceptHandler) -> bool:
    kinds = handler.type.elts if isinstance(handler.type, ast.Tuple) else [handler.type]
    return any(k is None or (isinstance(k, ast.Name) and k.id in _IMPORT_ERRORS)
               or (isinstance(k, ast.Attribute) and k.attr in _IMPORT_ERRORS) for k in kinds)


def _is_type_checking(test: ast.expr) -> bool:
    return (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
        isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING")


def problems(merged: bytes, pristine: bytes | None, old_patched: bytes | None, read: Read, path: str,
             where_defined: Callable[[str], list[str]] | None = None, version: str = "") -> list[Problem]:
    """Everything that would stop ``merged`` (V's ``path`` after the merge) from importing, new with the merge."""
    if not path.endswith(".py"):
        return []
    lines: dict[str, list[int]] = {}
    for name, line in new_undefined(merged, (pristine, old_patched), path):
        lines.setdefault(name, []).append(line)
    found = [Problem(at[0], f"{name!r} is undefined at line {at[0]}" + (f" (and {len(at) - 1} more)" if len(at) > 1
                                                                        else ""), name, path)
             for name, at in lines.items()]
    found += import_problems(merged, pristine, read, where_defined, version)
    return sorted(found, key=lambda p: p.line)


def unpromised(found: list[Problem], added: Mapping[str, Sequence[bytes]]) -> list[Problem]:
    """``found`` less the names the rest of the series provides: a name missing from a file that another
    patch of the series adds lines naming there (``added``: file -> lines the series' other patches add to
    it, comments aside), or a module another patch creates. The file is judged as the series leaves it;
    when that patch does not land on the release, it is the one to port, not the patch that uses the name."""
    out = []
    for p in found:
        if not p.name and p.file and (p.file in added or p.file.removesuffix(".py") + "/__init__.py" in added):
            continue  # a module another patch of the series creates
        word = re.compile(rb"\b" + re.escape(p.name.encode()) + rb"\b") if p.name else None
        lines = added.get(p.file, ()) if word else ()
        if word and any(word.search(ln.split(b"#", 1)[0]) for ln in lines):
            continue
        out.append(p)
    return out


def added_lines(files: Iterable[FilePatch]) -> dict[str, list[bytes]]:
    """file -> the lines a patch adds to it (its hunks' ``+`` lines)."""
    out: dict[str, list[bytes]] = {}
    for f in files:
        out.setdefault(f.path, []).extend(k for h in f.hunks for kind, k in zip(h.kinds, h.keys, strict=True)
                                          if kind == "+")
    return out


def describe(found: list[Problem]) -> str:
    """The one-line reason a clean merge is refused."""
    seen: list[str] = []
    for p in found:
        if p.message not in seen:
            seen.append(p.message)
    return "merges cleanly but would not import: " + "; ".join(seen)
