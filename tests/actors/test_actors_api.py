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

    def test_runtime_errors_exported(self) -> None:
        """The errors ``Runtime`` methods raise from the pure core (docs/runtime.md) are
        importable from ``actors``, as the same classes ``runtime`` defines."""
        import runtime
        import runtime.store

        for name in ("AmberError", "InvalidInput", "UnknownSession", "StoreError"):
            assert name in actors.__all__, name
            assert getattr(actors, name) is getattr(runtime, name), name
        assert actors.StoreError is runtime.store.StoreError
        assert actors.UnknownSession is runtime.store.UnknownSession

    def test_public_api_documented(self) -> None:
        """Every public class and function has a docstring."""
        for name in actors.__all__:
            value = getattr(actors, name)
            if inspect.isclass(value) or inspect.isfunction(value):
                assert inspect.getdoc(value), f"{name} has no docstring"


class TestLayers:
    def test_no_import_circle_in_actors(self) -> None:
        """No module of ``actors`` imports, directly or not, one that imports it back
        (``TYPE_CHECKING`` imports included)."""
        import ast
        import pathlib

        root = pathlib.Path(actors.__file__).parent
        graph: dict[str, set[str]] = {}
        for path in root.rglob("*.py"):
            parts = path.relative_to(root.parent).with_suffix("").parts
            name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
            package = ".".join(parts[:-1])
            edges: set[str] = set()
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.ImportFrom):
                    if node.level:
                        base = package.split(".")
                        base = base[: len(base) - node.level + 1]
                        target = ".".join([*base, node.module] if node.module else base)
                    else:
                        target = node.module or ""
                    targets = [target] + [f"{target}.{a.name}" for a in node.names]
                elif isinstance(node, ast.Import):
                    targets = [a.name for a in node.names]
                else:
                    continue
                edges |= {t for t in targets if t.startswith("actors") and t != name}
            graph[name] = edges
        modules = set(graph)
        graph = {m: {e for e in edges if e in modules and not m.startswith(e + ".")}
                 for m, edges in graph.items()}  # fmt: skip
        # A package's __init__ gathers its modules; edges into it from its own modules are
        # re-exports, not circles.
        circles: list[list[str]] = []

        def visit(node: str, path: list[str], seen: set[str]) -> None:
            for nxt in sorted(graph[node]):
                if nxt in path:
                    cycle = [*path[path.index(nxt) :], nxt]
                    if not any(c == "actors" or c.endswith(".testing") for c in cycle):
                        circles.append(cycle)
                elif nxt not in seen:
                    seen.add(nxt)
                    visit(nxt, [*path, nxt], seen)

        for start in sorted(graph):
            visit(start, [start], {start})
        assert circles == [], f"import circles: {circles[:3]}"

    def test_every_error_is_an_amber_error(self) -> None:
        """Every exception class the actors layer defines is an ``AmberError``, and every
        ``raise`` of a built-in error in its source names an Amber subclass instead."""
        import ast
        import builtins
        import pathlib

        from runtime import AmberError

        for name in actors.__all__:
            value = getattr(actors, name)
            if isinstance(value, type) and issubclass(value, BaseException):
                assert issubclass(value, AmberError), name
        root = pathlib.Path(actors.__file__).parent
        allowed = {"NotImplementedError", "StopIteration", "KeyboardInterrupt", "SystemExit"}
        # Raised on purpose by code that is not Amber's API: orjson's ``default`` hook must
        # raise TypeError; the demo's weather tool fails as a real tool would.
        # A module's __getattr__ must raise AttributeError (the lazy package namespaces).
        exempt = {("_cli/_text.py", "TypeError"), ("_cli/_app.py", "TypeError"),
                  ("_demo.py", "ConnectionError"), ("providers/_wire.py", "TypeError"),
                  ("providers/__init__.py", "AttributeError"),
                  ("__init__.py", "AttributeError"),
                  ("_cli/__init__.py", "AttributeError")}  # fmt: skip
        found = []
        for path in root.rglob("*.py"):
            for node in ast.walk(ast.parse(path.read_text())):
                if isinstance(node, ast.Raise) and isinstance(node.exc, ast.Call):
                    func = node.exc.func
                    called = func.id if isinstance(func, ast.Name) else None
                    builtin = getattr(builtins, called or "", None)
                    where = str(path.relative_to(root))
                    if (
                        isinstance(builtin, type)
                        and issubclass(builtin, BaseException)
                        and called not in allowed
                        and (where, called) not in exempt
                    ):
                        found.append(f"{path.relative_to(root)}:{node.lineno} raises {called}")
        assert found == []
