"""Edits of a saved release's JSON document, for the tests that a loader refuses
an edited file (PRIVACY.md rule 11)."""

from __future__ import annotations


def _set(keys, value):
    def edit(doc):
        target = doc
        for k in keys[:-1]:
            target = target[k]
        target[keys[-1]] = value
    return edit


def _drop(keys):
    def edit(doc):
        target = doc
        for k in keys[:-1]:
            target = target[k]
        del target[keys[-1]]
    return edit
