"""Who may write which memory (seed §4: "a regular user can curate their own memories,
while shared company and team memories are operator-gated, and you cannot supersede a
memory you don't own").

The rules, one function per operation; each raises :class:`~reckon._errors.NotAuthorized`
naming who, what and why:

* **create** — a member may create a *user*-scope memory owned by themselves, a
  *project*-scope memory of a project they are a member of and a *conversation*-scope
  memory of a conversation they take part in (``Principal.projects`` /
  ``Principal.conversations``, graph data); team and company memories need an operator; sources ``operator``, ``onboarding`` and ``import``
  (a person curating, onboarding a tenant, importing) need an operator; a member cannot
  create a memory owned by someone else.
* **update** — a member may edit their own user-scope memories and those of their
  projects and conversations; an operator may edit any memory (seed §5: "an operator can author, edit, and organize memories").
* **supersede** — only the owner: a user-scope memory is superseded only by its owner
  person (operators included: an operator does not own a member's personal memory);
  a project's or a conversation's memories by its members / participants and the
  operators; team and company memories belong to the tenant's operators.
* **restore**, **delete** — operators only.

And who may *read* one (:func:`can_read`, the one policy of every read path:
``Tenant.get`` / ``history``, search, the bundle, HTTP, MCP, the inspector): operators
every memory of the tenant; members company memories, their teams', their projects',
their conversations' and their own. A
memory a principal may not read is reported exactly as an absent one (HTTP 404, MCP
"not found", :class:`~reckon._errors.UnknownMemory`), on reads and on writes alike, so
neither its existence nor its owner leaks.
"""

from __future__ import annotations

from collections.abc import Collection

from reckon._errors import NotAuthorized
from reckon.memory.models import HUMAN_SOURCES, Memory, Principal

__all__ = [
    "can_read",
    "can_read_memory",
    "can_supersede",
    "check_create",
    "check_delete",
    "check_restore",
    "check_supersede",
    "check_update",
    "in_audience",
    "in_audience_memory",
]


def _who(p: Principal) -> str:
    return f"{p.role} {p.person!r}"


def _shares(principal: Principal, scope: str | None, project: str | None, conversation: str | None) -> bool:
    """True when ``principal`` is a member of the memory's project (project scope) or a
    participant of its conversation (conversation scope)."""
    if scope == "project":
        return project is not None and project in principal.projects
    if scope == "conversation":
        return conversation is not None and conversation in principal.conversations
    return False


def check_create(principal: Principal, *, scope: str, source: str, owner: str | None, label: str,
                 project: str | None = None, conversation: str | None = None) -> None:
    """:raises NotAuthorized: when ``principal`` may not create this memory."""
    if source in HUMAN_SOURCES and not principal.is_operator:
        raise NotAuthorized(
            f"{_who(principal)} may not create memory {label!r} with source {source!r}: "
            f"sources {sorted(HUMAN_SOURCES)} are operator-only"
        )
    if scope in ("team", "company") and not principal.is_operator:
        raise NotAuthorized(
            f"{_who(principal)} may not create {scope}-scope memory {label!r}: "
            f"team and company memories are operator-gated"
        )
    if scope == "user" and owner is not None and owner != principal.person and not principal.is_operator:
        raise NotAuthorized(
            f"{_who(principal)} may not create memory {label!r} owned by {owner!r}: "
            f"members create only their own user-scope memories"
        )
    if scope in ("project", "conversation") and not principal.is_operator \
            and not _shares(principal, scope, project, conversation):
        who = "members of the project" if scope == "project" else "participants of the conversation"
        raise NotAuthorized(
            f"{_who(principal)} may not create {scope}-scope memory {label!r}: only the {who} "
            f"(and operators) write its memories"
        )


def check_update(principal: Principal, *, memory_id: str, scope: str, owner: str | None,
                 project: str | None = None, conversation: str | None = None) -> None:
    """:raises NotAuthorized: when ``principal`` may not edit this memory."""
    if principal.is_operator or _shares(principal, scope, project, conversation):
        return
    if scope != "user":
        raise NotAuthorized(
            f"{_who(principal)} may not update {scope}-scope memory {memory_id}: "
            f"{'team and company memories are operator-gated' if scope in ('team', 'company') else 'not a member'}"
        )
    if owner != principal.person:
        raise NotAuthorized(
            f"{_who(principal)} may not update memory {memory_id} owned by {owner!r}: "
            f"members curate only their own memories"
        )


def in_audience(principal: Principal, *, scope: str | None, owner: str | None,
                teams: Collection[str], project: str | None = None, conversation: str | None = None) -> bool:
    """True when a memory of this scope and stakeholders speaks to ``principal``: company
    memories, their teams', their projects', their conversations' and their own. The
    candidates of their bundle and their search (an operator's bundle holds the
    operator's own personal memories, not every member's); always a subset of what
    :func:`can_read` allows."""
    if scope == "company":
        return True
    if scope == "team":
        return bool(set(teams) & set(principal.teams))
    if scope in ("project", "conversation"):
        return _shares(principal, scope, project, conversation)
    return scope == "user" and owner is not None and owner == principal.person


def in_audience_memory(principal: Principal, memory: Memory) -> bool:
    """:func:`in_audience` of a :class:`~reckon.memory.models.Memory`."""
    return in_audience(principal, scope=memory.scope, owner=memory.owner, teams=memory.teams,
                       project=memory.project, conversation=memory.conversation)


def can_read(principal: Principal, *, scope: str | None, owner: str | None, teams: Collection[str],
             project: str | None = None, conversation: str | None = None) -> bool:
    """True when ``principal`` may read a memory of this scope, owner and teams: operators
    every memory of the tenant; members those :func:`in_audience`. The one read check of
    every read path (``Tenant.get`` / ``history``, search, the bundle, REST, MCP, the
    inspector); a memory that fails it is reported exactly as an absent one."""
    return principal.is_operator or in_audience(principal, scope=scope, owner=owner, teams=teams,
                                                project=project, conversation=conversation)


def can_read_memory(principal: Principal, memory: Memory) -> bool:
    """:func:`can_read` of a :class:`~reckon.memory.models.Memory`."""
    return can_read(principal, scope=memory.scope, owner=memory.owner, teams=memory.teams,
                    project=memory.project, conversation=memory.conversation)


def can_supersede(principal: Principal, *, scope: str, owner: str | None,
                  project: str | None = None, conversation: str | None = None) -> bool:
    """True when ``principal`` owns the memory in the sense of seed §4."""
    if scope == "user":
        return owner == principal.person
    return principal.is_operator or _shares(principal, scope, project, conversation)


def check_supersede(principal: Principal, *, memory_id: str, scope: str, owner: str | None,
                    project: str | None = None, conversation: str | None = None) -> None:
    """:raises NotAuthorized: when ``principal`` does not own the memory to be superseded."""
    if can_supersede(principal, scope=scope, owner=owner, project=project, conversation=conversation):
        return
    if scope == "user":
        why = f"it is owned by {owner!r}; nobody supersedes a memory they do not own"
    else:
        why = f"{scope}-scope memories are operator-gated"
    raise NotAuthorized(f"{_who(principal)} may not supersede memory {memory_id}: {why}")


def check_restore(principal: Principal, *, memory_id: str) -> None:
    """:raises NotAuthorized: unless ``principal`` is an operator."""
    if not principal.is_operator:
        raise NotAuthorized(f"{_who(principal)} may not restore memory {memory_id}: restore is operator-only")


def check_delete(principal: Principal, *, memory_id: str) -> None:
    """:raises NotAuthorized: unless ``principal`` is an operator."""
    if not principal.is_operator:
        raise NotAuthorized(f"{_who(principal)} may not delete memory {memory_id}: delete is operator-only")
