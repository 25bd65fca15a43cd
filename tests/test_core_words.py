"""Status words are enum members that read exactly as the bare words did (JSON, f-strings, dict keys)."""

from __future__ import annotations

import json

import pytest

from patchset.core.engine import HunkStatus, OutcomeStatus
from patchset.core.series import PatchStatus
from patchset.core.words import Word
from patchset.verbs.audit import FixStatus
from patchset.verbs.next import NextStatus
from patchset.verbs.port import PortStatus
from patchset.verbs.refresh import RefreshMode

VOCABULARIES = (HunkStatus, OutcomeStatus, PatchStatus, NextStatus, PortStatus, RefreshMode, FixStatus)


@pytest.mark.parametrize("word", [w for v in VOCABULARIES for w in v], ids=str)
def test_a_word_reads_as_its_text_everywhere(word: Word) -> None:
    text = word.value
    assert isinstance(word, str) and word == text and hash(word) == hash(text)
    assert str(word) == f"{word}" == text
    assert f"{word:>20}" == f"{text:>20}"
    assert json.dumps({word: [word]}) == json.dumps({text: [text]})
    assert {text: 1}[word] == 1 and {word: 1}[text] == 1
    assert type(word)(text) is word


def test_each_vocabulary_holds_each_word_once() -> None:
    for vocabulary in VOCABULARIES:
        values = [w.value for w in vocabulary]
        assert len(values) == len(set(values)), vocabulary


def test_the_words_users_read_are_the_documented_ones() -> None:
    assert [w.value for w in HunkStatus] == ["exact", "offset", "fuzz", "already-applied", "failed", "not-in-tree"]
    assert [w.value for w in PatchStatus] == ["applies", "upstream", "not-targeted", "failed", "blocked",
                                              "partly-upstream", "excluded", "not-in-tree"]
    assert [w.value for w in NextStatus] == ["carries", "upstream", "partly-upstream", "needs-port", "blocked",
                                             "not-targeted", "not-in-tree"]
    assert [w.value for w in FixStatus] == ["carried", "upstream", "missing", "stale", "tampered", "unknown"]
    assert [w.value for w in PortStatus] == ["carried", "retired", "ported", "conflict", "blocked"]
