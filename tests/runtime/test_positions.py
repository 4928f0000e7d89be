"""``MessageIndex`` and ``InputQueue``: versions sharing one log behave as separate maps."""

from __future__ import annotations

import gc
import pickle
import threading

import pytest
from hypothesis import given
from hypothesis import strategies as st
from immutables import Map

from runtime._positions import COPY_LIMIT, MAX_DEPTH, InputQueue, MessageIndex

KEYS = st.sampled_from([f"m{i}" for i in range(12)])

# A program of operations on a growing set of versions: (version to start from, what to do).
INDEX_OPS = st.lists(st.tuples(st.integers(min_value=0, max_value=40), KEYS), max_size=40)
QUEUE_OPS = st.lists(
    st.tuples(
        st.integers(min_value=0, max_value=40),
        st.one_of(st.none(), st.tuples(KEYS, st.integers(min_value=0, max_value=300))),
    ),
    max_size=40,
)


def same(version: MessageIndex | InputQueue, model: Map[str, int]) -> None:
    """Every way of reading ``version`` agrees with ``model`` (the general map)."""
    assert dict(version) == dict(model)
    assert len(version) == len(model)
    assert bool(version) == bool(model)
    assert version == model
    assert model == version
    # Equal maps hash equal, however they were built.
    assert hash(version) == hash(frozenset(model.items()))
    for key in [f"m{i}" for i in range(12)]:
        assert (key in version) == (key in model)
        assert version.get(key) == model.get(key)
    if isinstance(version, MessageIndex):  # the bulk lookup, in C or key by key
        keys: list[str | None] = [None, *(f"m{i}" for i in range(12))]
        assert version.positions(keys, -1) == [-1 if k is None else model.get(k, -1) for k in keys]
        assert version.get(key, -1) == model.get(key, -1)
        if key in model:
            assert version[key] == model[key]
        else:
            with pytest.raises(KeyError):
                version[key]


def shape(version: MessageIndex | InputQueue | None) -> object:
    """A version's slots and its parents', as plain values (with the length of the log it
    shares, which tells an append to the shared log from a copy)."""
    if version is None:
        return None
    return (
        type(version),
        version._log[: version._end],
        len(version._log),
        version._end,
        version._size,
        version._offset,
        version._depth,
        shape(version._parent),
    )


class TestNewKeys:
    """``add_new`` and ``set_new`` (the reducer's append case: a key known to be new) give
    exactly what ``add`` and ``set`` give, version for version, slot for slot."""

    @given(INDEX_OPS)
    def test_add_new_same_as_add(self, ops: list[tuple[int, str]]) -> None:
        """The same program of new ids, run once with ``add`` and once with ``add_new``,
        makes versions of the same shape, each the general map."""
        general: list[MessageIndex] = [MessageIndex()]
        fast: list[MessageIndex] = [MessageIndex()]
        models: list[Map[str, int]] = [Map()]
        for which, key in ops:
            n = which % len(models)
            if key in models[n]:
                continue  # add_new is for new ids only
            general.append(general[n].add(key))
            fast.append(fast[n].add_new(key))
            models.append(models[n].set(key, len(models[n])))
            for made, expected, model in zip(fast, general, models, strict=True):
                assert shape(made) == shape(expected)
                same(made, model)

    @given(QUEUE_OPS)
    def test_set_new_same_as_set(self, ops: list[tuple[int, tuple[str, int] | None]]) -> None:
        """Likewise ``set_new`` and ``set`` for keys a queue does not hold."""
        general: list[InputQueue] = [InputQueue()]
        fast: list[InputQueue] = [InputQueue()]
        models: list[Map[str, int]] = [Map()]
        for which, op in ops:
            n = which % len(models)
            if op is None:
                general.append(InputQueue())
                fast.append(InputQueue())
                models.append(Map())
            elif op[0] not in models[n]:
                key, position = op
                general.append(general[n].set(key, position))
                fast.append(fast[n].set_new(key, position))
                models.append(models[n].set(key, position))
            for made, expected, model in zip(fast, general, models, strict=True):
                assert shape(made) == shape(expected)
                same(made, model)


class TestMessageIndex:
    @given(INDEX_OPS)
    def test_versions_match_the_general_map(self, ops: list[tuple[int, str]]) -> None:
        """Adding to any version, newest or not, gives what ``Map.set`` at the next
        position gives, and no other version changes; adding an indexed id raises."""
        versions: list[tuple[MessageIndex, Map[str, int]]] = [(MessageIndex(), Map())]
        for which, key in ops:
            index, model = versions[which % len(versions)]
            if key in model:
                with pytest.raises(ValueError, match=r"^Message id '\w+' is indexed already; "):
                    index.add(key)
                continue
            versions.append((index.add(key), model.set(key, len(model))))
            for version, expected in versions:
                same(version, expected)
        for version, expected in versions:
            assert list(version) == sorted(expected, key=expected.__getitem__)

    @given(st.lists(KEYS, max_size=20))
    def test_built_from_ids_like_a_dict(self, ids: list[str]) -> None:
        """Built from ids (duplicates included), an index is the dict of their last
        positions: shorter than ``ids`` when one repeats."""
        expected = {key: position for position, key in enumerate(ids)}
        index = MessageIndex(ids)
        same(index, Map(expected))
        assert pickle.loads(pickle.dumps(index)) == index

    def test_branching_again_and_again(self) -> None:
        """Adding to versions that are not their log's newest (a chain of logs, flattened
        past ``MAX_DEPTH``) keeps every version's ids and positions."""
        index, model = MessageIndex(["a"]), {"a": 0}
        versions = [(index, dict(model))]
        depths = set()
        for n in range(3 * MAX_DEPTH):
            for i in range(COPY_LIMIT + 1):
                index = index.add(f"k{n}-{i}")
                model[f"k{n}-{i}"] = len(model)
            index.add(f"sibling{n}")  # grows index's log: the next add starts a new one
            versions.append((index, dict(model)))
            depths.add(index._depth)
        for version, expected in versions:
            same(version, Map(expected))
            assert list(version.items()) == list(expected.items())
        assert depths == set(range(1, MAX_DEPTH + 1))

    def test_two_events_applied_to_each_state(self) -> None:
        """Adding to each version twice and going on from the second copy copies the short
        log of the version: the chain grows by one log per ``COPY_LIMIT`` steps, not one
        a step."""
        index, model = MessageIndex(), {}
        for n in range(20 * COPY_LIMIT):
            index.add(f"k{n}")
            index = index.add(f"k{n}")
            model[f"k{n}"] = n
            assert index._depth <= min(MAX_DEPTH, 1 + n // COPY_LIMIT)
        same(index, Map(model))

    def test_holds_nothing_the_gc_tracks(self) -> None:
        """The shared dict of an index holds strings and ints only: CPython does not track it."""
        index = MessageIndex(["a"]).add("b").add("c")
        assert not gc.is_tracked(index._where)

    def test_threads_adding_to_one_version(self) -> None:
        """Versions grown from one version by many threads each see only their own key."""
        base = MessageIndex(["a"])
        results: dict[str, MessageIndex] = {}
        barrier = threading.Barrier(8)

        def grow(key: str) -> None:
            barrier.wait()
            results[key] = base.add(key)

        threads = [threading.Thread(target=grow, args=(f"k{i}",)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for key, index in results.items():
            assert dict(index) == {"a": 0, key: 1}
        assert dict(base) == {"a": 0}


class TestInputQueue:
    @given(QUEUE_OPS)
    def test_versions_match_the_general_map(
        self, ops: list[tuple[int, tuple[str, int] | None]]
    ) -> None:
        """Setting in any version (a new key, or a queued one moved) or clearing gives
        what ``Map`` gives, and no other version changes."""
        versions: list[tuple[InputQueue, Map[str, int]]] = [(InputQueue(), Map())]
        for which, op in ops:
            queue, model = versions[which % len(versions)]
            if op is None:
                versions.append((type(queue)(), Map()))
            else:
                key, position = op
                versions.append((queue.set(key, position), model.set(key, position)))
            for version, expected in versions:
                same(version, expected)

    @given(st.dictionaries(KEYS, st.integers(min_value=0, max_value=300)))
    def test_built_from_a_mapping(self, items: dict[str, int]) -> None:
        """Built from a mapping, a queue holds its items in their order."""
        queue = InputQueue(items)
        same(queue, Map(items))
        assert list(queue) == list(items)
        assert pickle.loads(pickle.dumps(queue)) == queue


class TestStepsKeepFewObjects:
    def test_a_user_question_keeps_at_most_nine_tracked_objects(self) -> None:
        """A step that adds a user question keeps at most 9 objects the cyclic GC tracks
        (the event, its message, the stamped copy, the state, the vector and its tail, one
        object per index; with ``immutables.Map`` indexes it kept 14)."""
        from datetime import UTC, datetime

        from runtime import Category, MessageAdded, Timeline, new_message

        at = datetime(2026, 1, 1, tzinfo=UTC)

        def build(steps: int) -> Timeline:
            timeline = Timeline.start("gc")
            for n in range(steps):
                message = new_message(
                    Category.USER_QUESTION,
                    id=f"m{n}",
                    session_id="gc",
                    created_at=at,
                    content="a question",
                    sender="U",
                )
                event = MessageAdded(session_id="gc", seq=n + 1, at=at, message=message)
                timeline = timeline.append(event)
            return timeline

        build(10)  # warm every cache first
        gc.collect()
        before = len(gc.get_objects())
        timeline = build(1000)
        gc.collect()
        kept = len(gc.get_objects()) - before
        assert timeline.head.seq == 1000
        assert kept / 1000 <= 9


class TestInputQueueThreads:
    def test_threads_setting_one_key_in_one_version(self) -> None:
        """Threads that queue the same id at different positions in one version each get
        a queue with their own position (the entries are told apart by identity)."""
        base = InputQueue({"a": 0})
        results: dict[int, InputQueue] = {}
        barrier = threading.Barrier(8)

        def grow(position: int) -> None:
            barrier.wait()
            results[position] = base.set("k", position)

        threads = [threading.Thread(target=grow, args=(i + 1,)) for i in range(8)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        for position, queue in results.items():
            assert dict(queue) == {"a": 0, "k": position}
        assert dict(base) == {"a": 0}
