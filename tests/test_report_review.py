"""report/review.py: a review note on a copy, as port and next show it."""

from __future__ import annotations

from patchset.report.review import TEXT_DIFF_LINES, review_markdown, review_text
from patchset.verbs.copynotes import Review

DIFF = "--- a/vllm/x.py\n+++ b/vllm/x.py\n@@ -1,1 +1,1 @@\n-old = 1\n+new = 1\n"


def test_text_gives_the_note_in_full_then_the_diff_indented() -> None:
    note = Review("vllm/x_copy.py", "vllm/x.py", "vllm/x_copy.py is a copy of vllm/x.py (…)", DIFF)
    assert review_text("fork", note) == ["fork, review: vllm/x_copy.py is a copy of vllm/x.py (…)",
                                         "    --- a/vllm/x.py", "    +++ b/vllm/x.py", "    @@ -1,1 +1,1 @@",
                                         "    -old = 1", "    +new = 1"]
    assert review_text("fork", Review("a", "b", "gone upstream")) == ["fork, review: gone upstream"]
    long = Review("a", "b", "the note", DIFF + "".join(f"+line {i}\n" for i in range(100)))
    shown = review_text("fork", long)
    assert len(shown) == 1 + TEXT_DIFF_LINES + 1
    assert shown[-1] == "    … 65 more line(s) of the diff: --format markdown or json has it all"


def test_markdown_folds_the_diff_under_the_list_item() -> None:
    md = review_markdown("fork", Review("vllm/x_copy.py", "vllm/x.py", "the note", DIFF))
    assert md.startswith("- fork, review: the note\n  <details><summary>what upstream changed there</summary>\n")
    assert "  ```diff\n  --- a/vllm/x.py\n" in md and md.endswith("  ```\n  </details>\n")
    assert review_markdown("fork", Review("a", "b", "gone upstream")) == "- fork, review: gone upstream\n"
