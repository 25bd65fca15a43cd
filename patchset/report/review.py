"""How a review note on a copy looks (port and next alike): the note, then upstream's change to what it copies."""

from __future__ import annotations

from patchset.verbs.copynotes import Review

#: Lines of a note's diff a terminal shows (FlagScale's FlagCX engine gives 346: docs/records/port.md); the rest is in
#: the Markdown and JSON reports and a conflict's README.
TEXT_DIFF_LINES = 40


def review_text(patch: str, note: Review) -> list[str]:
    """The note in full (a table cell would cut it short), then the diff, indented as next shows a hunk's, up to
    ``TEXT_DIFF_LINES`` lines."""
    diff = note.diff.rstrip("\n").splitlines()
    out = [f"{patch}, review: {note.message}"] + ["    " + x for x in diff[:TEXT_DIFF_LINES]]
    if len(diff) > TEXT_DIFF_LINES:
        more = len(diff) - TEXT_DIFF_LINES
        out.append(f"    … {more} more line(s) of the diff: --format markdown or json has it all")
    return out


def review_markdown(patch: str, note: Review) -> str:
    """A list item, with the diff folded away under it."""
    diff = ("\n  <details><summary>what upstream changed there</summary>\n\n  ```diff\n"
            + "".join("  " + x for x in note.diff.splitlines(keepends=True)) + "  ```\n  </details>\n"
            if note.diff else "\n")
    return f"- {patch}, review: {note.message}{diff}"
