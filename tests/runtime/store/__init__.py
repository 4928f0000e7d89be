"""Tests of runtime.store (a package, so its conftest does not shadow tests/runtime/conftest.py)."""
