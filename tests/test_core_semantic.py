"""core/semantic.py: would a merged module still import?"""

from __future__ import annotations

import pytest

from patchset.core import semantic

TREE = {
    "vllm/__init__.py": b"",
    "vllm/a.py": b"from vllm.b import moved as moved\n\ndef here():\n    pass\n",
    "vllm/b.py": b"def moved():\n    pass\n",
    "vllm/lazy.py": b"def __getattr__(name):\n    raise AttributeError(name)\n",
    "vllm/pkg/__init__.py": b"",
    "vllm/pkg/sub.py": b"X = 1\n",
}


def read(path: str) -> bytes | None:
    return TREE.get(path)


def test_only_undefined_names_new_with_the_merge_count():
    pristine = b"import os\n\ndef f():\n    return os.sep, magic\n"
    merged = b"import os\n\ndef f(x: Optional[int]):\n    return os.sep, magic\n"
    assert semantic.new_undefined(merged, (pristine, None)) == [("Optional", 3)]
    assert semantic.new_undefined(merged, (pristine, merged)) == []  # the old patched file had it too


def test_vllm_imports_resolve_in_the_tree_with_re_exports_submodules_and_lazy_modules():
    assert semantic.unresolved_import("vllm.a", "here", read) == ""
    assert semantic.unresolved_import("vllm.a", "moved", read) == ""  # re-exported
    assert semantic.unresolved_import("vllm.pkg", "sub", read) == ""  # a submodule
    assert semantic.unresolved_import("vllm.lazy", "anything", read) == ""  # cannot be told: not refused
    assert semantic.unresolved_import("vllm.gone", None, read) == "module vllm.gone does not exist"
    assert semantic.unresolved_import("vllm.a", "nothere", read) == "'nothere' is not in vllm/a.py"


def test_problems_name_the_line_and_where_the_name_lives_now():
    pristine = b"from vllm.a import here\n"
    merged = b"from vllm.a import here\nfrom vllm.a import elsewhere\n\nx: Optional[int] = None\n"
    found = semantic.problems(merged, pristine, None, read, "vllm/c.py", lambda name: ["vllm/b.py"], "1.0")
    assert semantic.describe(found) == ("merges cleanly but would not import: 'elsewhere' is not in vllm/a.py in "
                                        "1.0 (it is in vllm/b.py); 'Optional' is undefined at line 4")
    assert semantic.problems(pristine, pristine, None, read, "vllm/c.py") == []  # upstream's imports are its own
    assert semantic.problems(merged, None, None, read, "README.md") == []


def test_imports_are_found_in_every_form_and_only_for_the_package():
    source = (b"import vllm\nimport vllm.a as a, os\nfrom vllm.b import (\n    moved,\n    other as o,\n)\n"
              b"from vllm_ext import x\nfrom . import y\ndef f():\n    from vllm.pkg import \\\n        sub\n"
              b"text = 'from vllm.z import nothing'\n")
    assert semantic.vllm_imports(source) == [("vllm", None, 1), ("vllm.a", None, 2), ("vllm.b", "moved", 3),
                                             ("vllm.b", "other", 3), ("vllm.pkg", "sub", 10)]


@pytest.mark.network
def test_a_guarded_import_that_does_not_resolve_is_the_modules_own_fallback():
    """Real 0.11.2 code: vllm/attention/ops/flashmla.py imports the compiled ``vllm._flashmla_C`` inside
    ``try: … except ImportError:``. No such module is in the source tree; the guard expects that."""
    from patchset.cache import Cache
    from patchset.sources.sdist import SdistSource

    root = SdistSource("vllm", "0.11.2", Cache()).root

    def tree(path: str) -> bytes | None:
        f = root / path
        return f.read_bytes() if f.is_file() else None

    real = tree("vllm/attention/ops/flashmla.py")
    assert real is not None and b"        import vllm._flashmla_C  # noqa: F401\n" in real
    assert semantic.problems(real, None, None, tree, "vllm/attention/ops/flashmla.py") == []
    # The same import unguarded, at the top of the module, would fail: it is still reported.
    bare = b"import vllm._flashmla_C\n" + real
    (p,) = semantic.problems(bare, None, None, tree, "vllm/attention/ops/flashmla.py")
    assert (p.line, p.message) == (1, "module vllm._flashmla_C does not exist")
    # Under ``if TYPE_CHECKING:`` an import is never run.
    typed = b"from typing import TYPE_CHECKING\nif TYPE_CHECKING:\n    from vllm.gone import Thing\n"
    assert semantic.problems(typed, None, None, tree, "vllm/x.py") == []
    # A guard that catches something else is no guard for a failed import.
    other = b"try:\n    from vllm.gone import Thing\nexcept KeyError:\n    pass\n"
    assert [p.line for p in semantic.problems(other, None, None, tree, "vllm/x.py")] == [2]
