"""Hypothesis fuzz tests of every entry point (issue 15): the codec, user input, events
appended to stores, damaged stores, command lines.

Each test feeds a target of ``targets`` (which raises ``Unhandled`` or
``WrongState`` on a finding) with inputs from ``inputs``, drawn through a
Hypothesis ``Random`` (so a failure replays from its seed) or from Hypothesis'
own strategies (so it shrinks). The default profile runs a few dozen
examples per target (seconds in all); ``AMBER_FUZZ=long`` runs thousands
(``.ci/run`` does, with a bounded budget). ``campaign.py`` runs the same
targets a million times.
"""

from __future__ import annotations

import pathlib
import random
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from runtime import Event, Message, SessionState
from runtime.testing import json_values

from . import inputs, targets
from .conftest import examples
from .targets import StoreFixture

CORPUS = inputs.corpus()
FAST = settings(
    max_examples=examples(60, 3_000),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
    derandomize=False,
)
SLOW = settings(
    max_examples=examples(8, 200),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)

# Text that may hold anything, lone surrogates included.
ANY_TEXT = st.text(alphabet=st.characters(codec=None, exclude_categories=()), max_size=20)
ANY_VALUE = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(min_value=-(2**70), max_value=2**70)
    | st.floats()
    | ANY_TEXT,
    lambda children: (
        st.lists(children, max_size=3) | st.dictionaries(ANY_TEXT, children, max_size=3)
    ),
    max_leaves=8,
)


class TestCodec:
    @FAST
    @given(rng=st.randoms(use_true_random=False))
    def test_mutated_json(self, rng: random.Random) -> None:
        """JSON text of real values, mutated: a DecodeError, or a value that round-trips."""
        kind, raw = inputs.json_bytes(rng, CORPUS)
        targets.decode_bytes(raw, kind)

    @FAST
    @given(rng=st.randoms(use_true_random=False))
    def test_mutated_data(self, rng: random.Random) -> None:
        """Plain data with Python-only oddities (surrogates, big ints, NaN, deep nesting)."""
        kind, data = inputs.python_data(rng, CORPUS)
        targets.decode_data(data, kind)

    @FAST
    @given(st.binary(max_size=200), st.sampled_from(targets.KINDS))
    def test_any_bytes(self, raw: bytes, kind: type) -> None:
        targets.decode_bytes(raw, kind)

    @FAST
    @given(ANY_VALUE, st.sampled_from([Event, Message, SessionState]))
    def test_any_value(self, data: Any, kind: type) -> None:
        targets.decode_data(data, kind)

    @FAST
    @given(st.dictionaries(ANY_TEXT, ANY_VALUE, max_size=4))
    def test_metadata_in_a_message(self, metadata: dict[str, Any]) -> None:
        """Any metadata in a stored message: refused with its path, or stored and read back."""
        kind, value = CORPUS[-1]
        data = inputs.to_data(value)
        data["message"]["metadata"] = metadata
        targets.decode_data(data, kind)

    @FAST
    @given(st.dictionaries(st.text(max_size=4), json_values(), max_size=5))
    def test_valid_metadata_round_trips(self, metadata: dict[str, Any]) -> None:
        """Metadata JSON can carry is always accepted (never a false refusal)."""
        kind, value = CORPUS[-1]
        data = inputs.to_data(value)
        data["message"]["metadata"] = metadata
        assert targets.decode_data(data, kind) == "accepted"


class TestUserInput:
    @FAST
    @given(rng=st.randoms(use_true_random=False))
    def test_fields(self, rng: random.Random) -> None:
        fields, session_id = inputs.input_fields(rng)
        targets.make_input(fields, session_id)

    @FAST
    @given(ANY_TEXT, ANY_TEXT)
    def test_any_text(self, text: str, sender: str) -> None:
        targets.make_input({"text": text, "sender": sender}, "s")


class TestAppend:
    @FAST
    @given(rng=st.randoms(use_true_random=False))
    def test_memory_store(self, rng: random.Random) -> None:
        base = inputs.scenario.conversation("s", rng.randint(1, 25))
        targets.append_events(base, inputs.events_after(rng, base), targets.memory_store())

    @SLOW
    @given(rng=st.randoms(use_true_random=False))
    def test_sqlite_store(
        self, rng: random.Random, tmp_path_factory: pytest.TempPathFactory
    ) -> None:
        base = inputs.scenario.conversation("s", rng.randint(1, 25))
        path = tmp_path_factory.mktemp("append") / "a.db"
        from runtime.store import SQLiteStore

        with SQLiteStore(path, snapshot_every=rng.randint(1, 8)) as store:
            targets.append_events(base, inputs.events_after(rng, base), store)


class TestDamagedStores:
    @SLOW
    @given(rng=st.randoms(use_true_random=False))
    def test_every_read(self, rng: random.Random, sound_store: StoreFixture) -> None:
        """A damaged copy: every read raises an AmberError or gives the sound answer."""
        targets.damaged_store(sound_store, inputs.damage(rng))


class TestCommandLines:
    @SLOW
    @given(rng=st.randoms(use_true_random=False))
    def test_amber(self, rng: random.Random, cli_store: pathlib.Path) -> None:
        targets.run_cli(CliRunner(), inputs.cli_args(rng, str(cli_store)))


class TestMutations:
    """The mutations edit copies only: a shared odd value edited in place made later
    examples draw differently (Hypothesis' FlakyStrategyDefinition in the long profile)."""

    def test_shared_values_are_never_edited(self) -> None:
        odd: list[Any] = [inputs._DEEPEST, [1, [2]], {"k": {"j": 1}}]

        def shapes() -> list[str]:
            shared, depth = odd[0], 0
            while isinstance(shared, list) and len(shared) == 1:
                shared, depth = shared[0], depth + 1
            return [f"{depth}:{shared!r}", repr(odd[1:])]

        before = shapes()
        for seed in range(3_000):
            data = {"a": [1, {"b": [1, 2]}], "c": {"d": "e"}}
            inputs.mutate_data(random.Random(seed), data, odd)
        assert shapes() == before
