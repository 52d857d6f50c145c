"""Reading conversation files for ``reckon import conversation``.

Two formats, recognised by content:

* **LoCoMo-style JSON** (Maharana et al. 2024): an object, or a list of objects, each
  with ``conversation: {speaker_a, speaker_b, session_1_date_time, session_1: [{speaker,
  dia_id, text, blip_caption?}], ...}`` and optionally ``sample_id`` (the conversation id;
  else the file name and its index). Session times like ``"1:56 pm on 8 May, 2023"`` are
  read as UTC; the dialog id becomes the turn's ``external_id``, the image caption its
  ``caption``; every speaker is a person (role ``user``).
* **Chat JSONL**: one JSON object per line, ``{"role": "user"|"assistant"|"tool"|...,
  "content"|"text": "...", "speaker"|"name"?: "...", "at"|"time"|"timestamp"?: ISO 8601,
  "conversation"|"thread"?: "...", "id"?: "..."}`` (OpenAI-style messages). The
  conversation id defaults to the file's stem.
"""

from __future__ import annotations

import json
import re
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from reckon._errors import InvalidInput
from reckon.store.terms import parse_datetime_text

__all__ = ["read_conversation_file"]

_DIA = re.compile(r"D(\d+):(\d+)")


def _slug(name: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", str(name).casefold()).strip("-") or "speaker"


def _session_time(s: str, where: str) -> datetime:
    for fmt in ("%I:%M %p on %d %B, %Y", "%I:%M %p on %d %b, %Y"):
        try:
            return datetime.strptime(s.strip(), fmt).replace(tzinfo=UTC)
        except ValueError:
            continue
    try:
        t = parse_datetime_text(s)
        return t if t.tzinfo else t.replace(tzinfo=UTC)
    except ValueError as exc:
        why = f": {exc}" if "fractional" in str(exc) else ""
        raise InvalidInput(f"{where}: cannot read the session time {s!r}{why}", field="date_time") from None


def _locomo(obj: dict[str, Any], default_id: str, where: str) -> list[dict[str, Any]]:
    conv = obj.get("conversation")
    if not isinstance(conv, dict):
        raise InvalidInput(f"{where}: no 'conversation' object", field="conversation")
    cid = str(obj.get("sample_id") or default_id)
    out: list[dict[str, Any]] = []
    n = 1
    while f"session_{n}" in conv or f"session_{n}_date_time" in conv:
        turns = conv.get(f"session_{n}") or []
        when = _session_time(conv.get(f"session_{n}_date_time", ""), f"{where} session_{n}") if turns else None
        for k, t in enumerate(turns):
            if not isinstance(t, dict) or "text" not in t or "speaker" not in t:
                raise InvalidInput(f"{where} session_{n}[{k}]: a turn needs speaker and text", field="turn")
            dia = t.get("dia_id")
            m = _DIA.fullmatch(str(dia)) if dia is not None else None
            out.append(dict(conversation=cid, text=str(t["text"]), role="user", speaker=_slug(t["speaker"]),
                            at=when, caption=t.get("blip_caption") or None,
                            external_id=f"D{int(m.group(1))}:{int(m.group(2))}" if m else (str(dia) if dia else None)))
        n += 1
    return out


def _jsonl(lines: list[str], default_id: str, path: Path) -> list[dict[str, Any]]:
    out: list[dict[str, Any]] = []
    for i, line in enumerate(lines, 1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except ValueError as exc:
            raise InvalidInput(f"{path}:{i}: not JSON: {exc}", field="line") from None
        if not isinstance(obj, dict):
            raise InvalidInput(f"{path}:{i}: expected a JSON object per line", field="line")
        text = obj.get("content", obj.get("text"))
        if isinstance(text, list):  # content parts: keep the text ones
            text = " ".join(p.get("text", "") for p in text if isinstance(p, dict))
        if not isinstance(text, str):
            raise InvalidInput(f"{path}:{i}: a message needs 'content' or 'text'", field="content")
        role = str(obj.get("role", "user"))
        if role == "function":
            role = "tool"
        turn: dict[str, Any] = dict(conversation=str(obj.get("conversation") or obj.get("thread") or default_id),
                                    text=text, role=role)
        speaker = obj.get("speaker") or obj.get("name")
        if speaker and role in ("user", "assistant"):
            turn["speaker"] = _slug(speaker) if role == "user" else str(speaker)
        at = obj.get("at") or obj.get("time") or obj.get("timestamp")
        if at:
            try:
                t = parse_datetime_text(str(at))
            except ValueError as exc:
                why = f": {exc}" if "fractional" in str(exc) else ""
                raise InvalidInput(f"{path}:{i}: not an ISO 8601 time: {at!r}{why}", field="at") from None
            turn["at"] = t if t.tzinfo else t.replace(tzinfo=UTC)
        if obj.get("id") is not None:
            turn["external_id"] = str(obj["id"])
        out.append(turn)
    return out


def read_conversation_file(path: str | Path) -> list[dict[str, Any]]:
    """The turns of a LoCoMo-style JSON or chat JSONL file, as ``record_turns`` payloads.

    :raises InvalidInput: naming the file (and line / session) when it is neither.
    :raises OSError: when it cannot be read.
    """
    p = Path(path)
    text = p.read_text(encoding="utf-8")
    stripped = text.lstrip()
    if p.suffix.lower() == ".jsonl" or (stripped.startswith("{") and "\n{" in stripped.rstrip()
                                         and not stripped.startswith('{\n')):
        try:
            return _jsonl(text.splitlines(), p.stem, p)
        except InvalidInput:
            if p.suffix.lower() == ".jsonl":
                raise
    try:
        data = json.loads(text)
    except ValueError as exc:
        raise InvalidInput(f"{p}: neither LoCoMo-style JSON nor chat JSONL ({exc})", field="file") from None
    if isinstance(data, dict):
        return _locomo(data, p.stem, str(p))
    if isinstance(data, list) and all(isinstance(x, dict) for x in data):
        if data and "conversation" in data[0]:
            out = []
            for k, obj in enumerate(data):
                out.extend(_locomo(obj, f"{p.stem}-{k}", f"{p}[{k}]"))
            return out
        return _jsonl([json.dumps(x) for x in data], p.stem, p)
    raise InvalidInput(f"{p}: neither LoCoMo-style JSON nor chat JSONL", field="file")
