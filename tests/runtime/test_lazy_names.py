"""``runtime`` and ``runtime.store`` load their names on first use (PEP 562)."""

from __future__ import annotations

import ast
import importlib
import pathlib
import subprocess
import sys
from types import ModuleType

import pytest

import runtime
import runtime.store

PACKAGES = [runtime, runtime.store]


def _type_checking_imports(module: ModuleType) -> dict[str, str]:
    """Name -> relative module, as the ``if TYPE_CHECKING:`` block of the package imports it."""
    assert module.__file__ is not None
    tree = ast.parse(pathlib.Path(module.__file__).read_text())
    found: dict[str, str] = {}
    for node in tree.body:
        if isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test):
            for item in node.body:
                assert isinstance(item, ast.ImportFrom), ast.unparse(item)
                for alias in item.names:
                    assert alias.asname == alias.name, "re-exported as itself"
                    found[alias.name] = "." * item.level + (item.module or "")
    return found


def _loaded_after(code: str) -> set[str]:
    """The modules a fresh interpreter has loaded after running ``code``."""
    probe = f"{code}\nimport sys\nprint(' '.join(sorted(sys.modules)))"
    result = subprocess.run(
        [sys.executable, "-c", probe], capture_output=True, text=True, timeout=120, check=True
    )
    return set(result.stdout.split())


@pytest.mark.parametrize("module", PACKAGES, ids=lambda m: m.__name__)
class TestLazyNames:
    def test_table_matches_all_and_type_checking_imports(self, module: ModuleType) -> None:
        """The name table, ``__all__`` and the imports type checkers read name the same things."""
        sources = module._SOURCES
        assert set(sources) == set(module.__all__)
        assert _type_checking_imports(module) == sources

    def test_every_name_resolves_to_its_definition(self, module: ModuleType) -> None:
        """Each name is the object its module defines (and is cached on the package after)."""
        for name, source in module._SOURCES.items():
            value = getattr(module, name)
            assert getattr(importlib.import_module(source, module.__name__), name) is value
            assert vars(module)[name] is value

    def test_dir_lists_every_name(self, module: ModuleType) -> None:
        """``dir()`` shows the public names before any is used."""
        assert set(module.__all__) <= set(dir(module))

    def test_unknown_name_is_an_attribute_error(self, module: ModuleType) -> None:
        """A name not in the table is an ``AttributeError`` naming the module, as usual."""
        with pytest.raises(AttributeError, match=rf"^module '{module.__name__}' has no attribute"):
            _ = module.NoSuchName
        assert not hasattr(module, "no_such_name")


def test_importing_the_packages_loads_no_core_module() -> None:
    """``import runtime, runtime.store`` loads the two packages and nothing else of Amber's."""
    loaded = _loaded_after("import runtime, runtime.store")
    assert {m for m in loaded if m.split(".")[0] == "runtime"} == {"runtime", "runtime.store"}


def test_one_name_loads_what_it_needs_only() -> None:
    """``from runtime import Message`` loads ``_message``, not the stream, views or codec."""
    loaded = _loaded_after("from runtime import Message")
    assert "runtime._message" in loaded
    heavy = {"runtime._assembly", "runtime._stream", "runtime._providers", "runtime._clean",
             "runtime._codec", "runtime._events", "cattrs", "runtime.store"}  # fmt: skip
    assert not heavy & loaded


def test_the_codec_loads_cattrs_on_its_general_path_only() -> None:
    """Encoding a state and a plain event needs no cattrs; decoding through the codec does."""
    encode = (
        "from runtime import SessionState, TurnStarted, to_json\n"
        "from datetime import UTC, datetime\n"
        "to_json(SessionState.empty('s'))\n"
        "to_json(TurnStarted(session_id='s', seq=1, at=datetime.now(UTC), turn_id='t'))\n"
    )
    loaded = _loaded_after(encode)
    assert "runtime._codec" in loaded
    assert not {"cattrs", "runtime._converter"} & loaded
    decode = (
        "from runtime import DecodeError, Event, from_json\n"
        "try:\n"
        "    from_json(b'{}', Event)\n"
        "except DecodeError:\n"
        "    pass\n"
    )
    decoded = _loaded_after(encode + decode)
    assert {"cattrs", "runtime._converter"} <= decoded


def test_postgres_store_without_psycopg_says_what_to_install() -> None:
    """Without psycopg, ``runtime.store`` imports and ``PostgresStore`` names the extra."""
    code = (
        "import sys\n"
        "class Block:\n"
        "    def find_spec(self, name, path=None, target=None):\n"
        "        if name.split('.')[0] in ('psycopg', 'psycopg_pool'):\n"
        "            raise ImportError(f'No module named {name!r}')\n"
        "sys.meta_path.insert(0, Block())\n"
        "import runtime.store\n"
        "print(runtime.store.SQLiteStore.__name__)\n"
        "try:\n"
        "    runtime.store.PostgresStore\n"
        "except ImportError as exc:\n"
        "    print(exc)\n"
    )
    result = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, timeout=120, check=True
    )
    lines = result.stdout.splitlines()
    assert lines[0] == "SQLiteStore"
    assert lines[1].startswith("runtime.store.PostgresStore needs psycopg 3 and psycopg-pool (")
    assert lines[1].endswith(
        "install them with: python3 -m pip install '.[postgres]' in your Amber checkout "
        "('amber[postgres]' where Amber comes from a package index)."
    )
