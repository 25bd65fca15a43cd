"""How a review note on a copy looks (port and next alike): the note, then upstream's change to what it copies."""

from __future__ import annotations

from patchset.verbs.copynotes import Review


def review_text(patch: str, note: Review) -> list[str]:
    """The note in full (a table cell would cut it short), then the diff, indented as next shows a hunk's."""
    return [f"{patch}, review: {note.message}"] + ["    " + x for x in note.diff.rstrip("\n").splitlines()]


def review_markdown(patch: str, note: Review) -> str:
    """A list item, with the diff folded away under it."""
    diff = ("\n  <details><summary>what upstream changed there</summary>\n\n  ```diff\n"
            + "".join("  " + x for x in note.diff.splitlines(keepends=True)) + "  ```\n  </details>\n"
            if note.diff else "\n")
    return f"- {patch}, review: {note.message}{diff}"
