"""replace(): the reducer's trusted evolve gives what attrs.evolve gives."""

from __future__ import annotations

import attrs
import pytest
from hypothesis import given
from hypothesis import strategies as st

from runtime import Message, SessionState, Status
from runtime._replace import constructor, replace
from runtime.testing import messages


class TestReplace:
    @given(
        messages(), st.sampled_from(list(Status)), st.booleans(), st.none() | st.text(min_size=1)
    )
    def test_same_as_evolve(
        self, message: Message, status: Status, active: bool, turn_id: str | None
    ) -> None:
        """replace() equals attrs.evolve() and leaves the original untouched."""
        before = attrs.evolve(message)
        changed = replace(message, status=status, active=active, turn_id=turn_id)
        assert changed == attrs.evolve(message, status=status, active=active, turn_id=turn_id)
        assert hash(changed) == hash(
            attrs.evolve(message, status=status, active=active, turn_id=turn_id)
        )
        assert message == before
        assert type(changed) is Message

    def test_no_changes_copies(self) -> None:
        """Without changes it returns an equal, distinct object."""
        state = SessionState.empty("s")
        copy = replace(state)
        assert copy == state
        assert copy is not state


class TestStateTruth:
    def test_empty_state_is_truthy(self) -> None:
        """An empty session's state is a value, so ``state or default`` keeps it."""
        state = SessionState.empty("s")
        assert len(state) == 0
        assert bool(state) is True


@attrs.frozen(kw_only=True)
class _Pair:
    left: str
    right: int | None = None


class TestConstructor:
    @given(st.text(), st.integers() | st.none())
    def test_equals_the_classes_init(self, left: str, right: int | None) -> None:
        """A trusted constructor gives what ``__init__`` gives, an instance of the frozen
        class itself; fields not taken are set to their constant."""
        made = constructor(_Pair, "left", "right")(left, right)
        assert type(made) is _Pair
        assert made == _Pair(left=left, right=right)
        assert constructor(_Pair, "left", right="None")(left) == _Pair(left=left)

    def test_refuses_fields_missing_or_unknown(self) -> None:
        """Every field is named once, as a parameter or a constant."""
        with pytest.raises(
            ValueError,
            match=r"^constructor\(\) takes each field of _Pair once \(left, right\); got left\.$",
        ):
            constructor(_Pair, "left")
        with pytest.raises(ValueError, match=r"got left, right, extra\.$"):
            constructor(_Pair, "left", "right", extra="1")
