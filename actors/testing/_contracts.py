"""What the contract classes share: running a property with the class's settings, and
the violation a broken contract raises.

Subclass ``ToolContract`` (``_tool_contract``) or ``AdapterContract``
(``_adapter_contract``) to test your own parts:

    class TestWordCount(ToolContract):
        tool = word_count

    class TestSlackAdapter(AdapterContract):
        def make_adapter(self):
            return SlackAdapter.start(client=FakeSlack())

Each ``test_*`` method is a Hypothesis property of the contract in
docs/tools.md or docs/adapters.md; a class sets ``examples`` to run more.
The same checks are functions too: ``check_tool_call``, ``check_adapter_updates``.
"""

from __future__ import annotations

from typing import Any

from hypothesis import settings

from runtime.testing import InvariantViolation
from runtime.testing._options import with_article as _a
from runtime.testing._testcase import kit_settings

from .._errors import InvalidConfig


def _contract(rule: str, detail: str) -> InvariantViolation:
    return InvariantViolation(f"Contract ({rule}) broken: {detail}", name=rule, detail=detail)


_DEFAULT_EXAMPLES = 25


def _run_property(contract: object, base: type, name: str, prop: Any) -> None:
    """Run the ``@given`` property ``prop`` of ``contract`` (a ``base`` subclass) with its
    settings: the class's ``settings`` (or the profile's), ``examples`` as max_examples,
    health checks off and no deadline unless chosen (``kit_settings``, as for the kit's
    machines), and the example database kept, under a key of the class and property (every
    contract class runs the same inner function: without it they would share failures)."""
    owner = type(contract)
    where = f"{owner.__name__}.{{}} ({base.__name__}.{{}})"
    chosen = getattr(owner, "settings", None)
    if chosen is not None and not isinstance(chosen, settings):
        raise InvalidConfig(
            f"{where.format('settings', 'settings')} must be hypothesis.settings(...) or None "
            f"(got {chosen!r}, {_a(type(chosen).__name__)}); e.g. settings = "
            "settings(max_examples=100)."
        )
    examples = getattr(owner, "examples", None)
    if examples is not None and (
        isinstance(examples, bool) or not isinstance(examples, int) or examples < 1
    ):
        raise InvalidConfig(
            f"{where.format('examples', 'examples')} must be an int of at least 1, the "
            f"Hypothesis examples per property (got {examples!r}, {_a(type(examples).__name__)})."
        )
    given_settings = chosen if chosen is not None else settings()
    if examples is not None:
        given_settings = settings(given_settings, max_examples=examples)
    elif chosen is None:
        given_settings = settings(given_settings, max_examples=_DEFAULT_EXAMPLES)
    wrapped = kit_settings(given_settings)(prop)
    key = f"{owner.__module__}.{owner.__qualname__}.{name}".encode()
    # As Hypothesis's own stateful tests do, so that a failure is saved and replayed per class.
    wrapped.hypothesis.inner_test._hypothesis_internal_add_digest = key
    wrapped()
