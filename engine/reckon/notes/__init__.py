"""Keyed shared notes with a time to live (seed 000 "Transit"): see
:mod:`reckon.notes.service`."""

from reckon.notes.service import CasResult, Namespace, Note, NoteService, parse_key

__all__ = ["CasResult", "Namespace", "Note", "NoteService", "parse_key"]
