"""Memories: pydantic models, the validated and authorized write path, dedup, conflict
detection, supersession and lineage (seed §3–§5, §9)."""
