"""The public surface of ``actors``."""

from __future__ import annotations

import inspect

import actors


class TestPublicNames:
    def test_all_is_sorted_and_unique(self) -> None:
        """__all__ is sorted (constants, classes, then functions) and has no repeats."""
        names = actors.__all__
        assert len(names) == len(set(names))
        assert names == sorted(names, key=lambda n: (not n.isupper(), not n[0].isupper(), n))

    def test_every_name_exported_once(self) -> None:
        """Each public name is defined and re-exported exactly once."""
        for name in actors.__all__:
            assert hasattr(actors, name), name
        public = {n for n in vars(actors) if not n.startswith("_") and n != "annotations"}
        public -= {n for n, v in vars(actors).items() if inspect.ismodule(v)}
        assert public == set(actors.__all__)

    def test_public_api_documented(self) -> None:
        """Every public class and function has a docstring."""
        for name in actors.__all__:
            value = getattr(actors, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                assert inspect.getdoc(value), f"{name} has no docstring"
