"""``diff(a, b)``: what changed between two states of a session."""

from __future__ import annotations

import attrs

from ._audit import AuditStatus
from ._json import FrozenJSON
from ._message import Message
from ._state import SessionState
from ._turn import TurnStatus

__all__ = ["AuditChange", "FieldChange", "StateDiff", "TurnChange", "diff"]

_FIELDS = tuple(f.name for f in attrs.fields(Message) if f.name != "metadata")


@attrs.frozen(kw_only=True)
class FieldChange:
    """One field of one message that differs.

    Metadata changes are reported per key, as ``field="metadata.<key>"``; a
    key that is absent on one side reads as ``None`` there.
    """

    message_id: str
    """The message."""
    field: str
    """``status``, ``active``, ``turn_id``, ``metadata.<key>`` …"""
    before: object
    """Value in the first state."""
    after: object
    """Value in the second state."""


@attrs.frozen(kw_only=True)
class TurnChange:
    """A turn whose status differs (``None``: the turn does not exist there)."""

    turn_id: str
    """The turn."""
    before: TurnStatus | None
    """Status in the first state."""
    after: TurnStatus | None
    """Status in the second state."""


@attrs.frozen(kw_only=True)
class AuditChange:
    """A model call whose audit status differs (``None``: no row there)."""

    operation_id: str
    """The call's operation id."""
    before: AuditStatus | None
    """Status in the first state."""
    after: AuditStatus | None
    """Status in the second state."""
    source_key: str = ""
    """The call's source key (its row's key: operation ids repeat across turns)."""


@attrs.frozen(kw_only=True)
class StateDiff:
    """What changed from state ``a`` to state ``b``."""

    before_seq: int
    """Seq of the first state."""
    after_seq: int
    """Seq of the second state."""
    added: tuple[Message, ...] = ()
    """Messages in ``b`` only, in ``b``'s order."""
    removed: tuple[Message, ...] = ()
    """Messages in ``a`` only (never within one timeline; possible across a fork)."""
    changed: tuple[FieldChange, ...] = ()
    """Field changes of messages in both."""
    turns: tuple[TurnChange, ...] = ()
    """Turns started, ended or recovered."""
    model_calls: tuple[AuditChange, ...] = ()
    """Model calls started, finished or closed (audit rows)."""

    @property
    def status_changes(self) -> tuple[FieldChange, ...]:
        """Only the status changes."""
        return tuple(c for c in self.changed if c.field == "status")

    @property
    def metadata_changes(self) -> tuple[FieldChange, ...]:
        """Only the metadata changes."""
        return tuple(c for c in self.changed if c.field.startswith("metadata."))

    def __bool__(self) -> bool:
        return bool(self.added or self.removed or self.changed or self.turns or self.model_calls)


def _message_changes(before: Message, after: Message) -> list[FieldChange]:
    changes = [
        FieldChange(message_id=after.id, field=name, before=old, after=new)
        for name in _FIELDS
        if (old := getattr(before, name)) != (new := getattr(after, name))
    ]
    if before.metadata is not after.metadata and before.metadata != after.metadata:
        missing: FrozenJSON = None
        for key in sorted(set(before.metadata) | set(after.metadata)):
            old = before.metadata.get(key, missing)
            new = after.metadata.get(key, missing)
            if old != new or (key in before.metadata) != (key in after.metadata):
                changes.append(
                    FieldChange(message_id=after.id, field=f"metadata.{key}", before=old, after=new)
                )
    return changes


def diff(a: SessionState, b: SessionState) -> StateDiff:
    """What changed from ``a`` to ``b`` (usually two states of one timeline).

    Messages are matched by id, so two sessions (a fork and its source) can be
    compared too. Shared structure makes this cheap: a message object that is
    the same in both states is skipped without comparing fields.
    """
    added: list[Message] = []
    changed: list[FieldChange] = []
    a_messages = a.messages
    for position, message in enumerate(b.messages):
        if position < len(a_messages) and a_messages[position] is message:
            continue
        old_position = a.index.get(message.id)
        if old_position is None:
            added.append(message)
            continue
        old = a_messages[old_position]
        if old is not message:
            changed.extend(_message_changes(old, message))
    removed = [m for m in a_messages if m.id not in b.index]
    a_turns = {turn.id: turn for turn in a.turn_list()}
    b_turns = {turn.id: turn for turn in b.turn_list()}
    turns = []
    for turn_id in sorted(a_turns.keys() | b_turns.keys()):
        before, after = a_turns.get(turn_id), b_turns.get(turn_id)
        if before is after:
            continue
        before_status = None if before is None else before.status
        after_status = None if after is None else after.status
        if before_status != after_status:
            turns.append(TurnChange(turn_id=turn_id, before=before_status, after=after_status))
    calls: list[tuple[int, AuditChange]] = []
    if a.audit is not b.audit:
        for key in set(a.audit.keys()) | set(b.audit.keys()):
            old_row, new_row = a.audit.get(key), b.audit.get(key)
            if old_row is new_row:
                continue
            old_status = None if old_row is None else old_row.status
            new_status = None if new_row is None else new_row.status
            if old_status != new_status:
                row = new_row if new_row is not None else old_row
                assert row is not None
                calls.append(
                    (
                        row.sequence,
                        AuditChange(
                            operation_id=row.operation_id,
                            before=old_status,
                            after=new_status,
                            source_key=key,
                        ),
                    )
                )
        calls.sort(key=lambda entry: entry[0])
    return StateDiff(
        before_seq=a.seq,
        after_seq=b.seq,
        added=tuple(added),
        removed=tuple(removed),
        changed=tuple(changed),
        turns=tuple(turns),
        model_calls=tuple(change for _, change in calls),
    )
