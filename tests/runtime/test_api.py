"""The public surface of ``runtime`` and the purity of the core."""

from __future__ import annotations

import ast
import inspect
import pathlib
import subprocess
import sys

import pytest

import runtime
import runtime.store
import runtime.testing

PACKAGE = pathlib.Path(runtime.__file__).parent


@pytest.mark.parametrize("module", [runtime, runtime.store, runtime.testing])
class TestPublicNames:
    def test_all_is_sorted_and_unique(self, module: object) -> None:
        """__all__ is sorted (constants, classes, then functions) and has no repeats."""
        names = module.__all__  # type: ignore[attr-defined]
        assert len(names) == len(set(names))
        assert names == sorted(names, key=lambda n: (not n.isupper(), not n[0].isupper(), n))

    def test_every_name_exported_once(self, module: object) -> None:
        """Each public name is defined and re-exported exactly once."""
        for name in module.__all__:  # type: ignore[attr-defined]
            assert hasattr(module, name), name
        public = {
            n for n in vars(module) if not n.startswith("_") and n not in {"testing", "annotations"}
        }
        public -= {n for n, v in vars(module).items() if inspect.ismodule(v)}
        assert public == set(module.__all__)  # type: ignore[attr-defined]

    def test_public_api_documented(self, module: object) -> None:
        """Every public class and function has a docstring."""
        for name in module.__all__:  # type: ignore[attr-defined]
            value = getattr(module, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                assert inspect.getdoc(value), f"{name} has no docstring"


class TestPurity:
    @pytest.mark.parametrize(
        ("module", "banned"),
        [
            ("runtime", {"actors", "pykka", "trio"}),
            ("runtime.store", {"actors", "pykka", "trio"}),
            # Hypothesis itself imports trio when it is installed; the AST test
            # below pins that no runtime.testing module does.
            ("runtime.testing", {"actors", "pykka"}),
        ],
    )
    def test_import_loads_no_actor_machinery(self, module: str, banned: set[str]) -> None:
        """Importing the core loads neither actors, pykka nor trio."""
        code = (
            f"import sys, {module}\n"
            f"bad = sorted(m for m in sys.modules if m.split('.')[0] in {sorted(banned)!r})\n"
            "print(','.join(bad))\n"
        )
        result = subprocess.run(
            [sys.executable, "-c", code], capture_output=True, text=True, check=True
        )
        assert result.stdout.strip() == ""

    def test_no_forbidden_imports_in_source(self) -> None:
        """No runtime module imports actors, pykka, trio, threading, time or pickle."""
        forbidden = {"actors", "pykka", "trio", "threading", "time", "pickle", "random", "uuid"}
        for path in PACKAGE.rglob("*.py"):
            tree = ast.parse(path.read_text())
            for node in ast.walk(tree):
                if isinstance(node, ast.Import):
                    roots = {alias.name.split(".")[0] for alias in node.names}
                elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
                    roots = {node.module.split(".")[0]}
                else:
                    continue
                assert not roots & forbidden, f"{path.name} imports {roots & forbidden}"

    def test_no_clock_reads(self) -> None:
        """No runtime module reads the wall clock."""
        for path in PACKAGE.rglob("*.py"):
            source = path.read_text()
            for call in ("datetime.now(", "datetime.utcnow(", "date.today("):
                assert call not in source.replace("use datetime.now(timezone.utc)", ""), (
                    path.name,
                    call,
                )
