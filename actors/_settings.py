"""``Settings``: the knobs of a runtime's sessions, with checked values."""

from __future__ import annotations

import difflib
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

import attrs

from runtime import (
    AGENT_SENDER,
    ArtifactStore,
    InputLimits,
    PriceTable,
    ToolSpec,
    TurnSettings,
    Window,
)
from runtime._article import article

from ._errors import InvalidConfig

__all__ = ["MAX_DELIVERY_BACKOFF", "MAX_LEASE_TTL", "Settings"]


def _positive_or_none(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value > 0:
        raise InvalidConfig(
            f"Settings.{attribute.name} must be a positive number of seconds or None "
            f"(got {value!r})."
        )


def _seconds(value: object) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        return math.nan
    return float(value)


MAX_LEASE_TTL = 86400.0
"""The longest lease ttl (a day): a dead worker's sessions wait that long for another."""


def _lease_ttl(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if not 1 <= _seconds(value) <= MAX_LEASE_TTL:  # NaN and infinities fail too
        raise InvalidConfig(
            f"Settings.lease_ttl must be a number of seconds from 1 to 86400 (got {value!r}); "
            "a session's lease lasts that long unrenewed (it is renewed every third of it), "
            "30 is the default."
        )


def _lease_poll(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    seconds = _seconds(value)
    if not (seconds > 0 and math.isfinite(seconds)):
        raise InvalidConfig(
            f"Settings.lease_poll must be a positive, finite number of seconds (got {value!r}); "
            "it is how often a worker looks for work nobody runs, 30 is the default."
        )


def _non_negative(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not value >= 0:
        raise InvalidConfig(
            f"Settings.{attribute.name} must be a non-negative number (got {value!r})."
        )


def _default_prices() -> PriceTable:
    from .providers._prices import default_prices

    return default_prices()


def _prices(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is not None and not isinstance(value, PriceTable):
        raise InvalidConfig(
            f"Settings.prices must be a PriceTable or None (got {value!r}); load one with "
            "actors.providers.load_prices(path)."
        )


def _count(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidConfig(
            f"Settings.{attribute.name} must be a non-negative int (got {value!r})."
        )


def _model_calls(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidConfig(
            f"Settings.max_model_calls must be an int of 1 or more (got {value!r}); it is how "
            "many model calls one turn may make before it fails, 25 is the default."
        )


def _result_chars(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if value is None:
        return
    if isinstance(value, bool) or not isinstance(value, int) or value < 1:
        raise InvalidConfig(
            f"Settings.max_result_chars must be a positive int or None to never excerpt "
            f"(got {value!r})."
        )


def _finite_seconds(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    seconds = _seconds(value)
    if not (seconds > 0 and math.isfinite(seconds)):
        raise InvalidConfig(
            f"Settings.{attribute.name} must be a positive, finite number of seconds "
            f"(got {value!r})."
        )


MAX_DELIVERY_BACKOFF = 300.0
"""The longest wait between two tries of a failed send (the doubling stops there)."""


def _delivery_retries(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise InvalidConfig(
            f"Settings.delivery_retries must be an int of 0 or more (got {value!r}); it is how "
            "many times a send an adapter failed is tried again while the session is live "
            "(0: never, until the session is next loaded), 5 is the default."
        )


def _delivery_backoff(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
    seconds = _seconds(value)
    if not (seconds > 0 and math.isfinite(seconds)):
        raise InvalidConfig(
            f"Settings.delivery_backoff must be a positive, finite number of seconds (got "
            f"{value!r}); it is the wait before the first retry of a failed send (each next "
            f"waits twice as long, up to {MAX_DELIVERY_BACKOFF:g} s), 1.0 is the default."
        )


def _kind(expected: str, ok: Any, how: str) -> Any:
    """A validator refusing a value ``ok(value)`` is false for, naming what was expected."""

    def check(instance: object, attribute: attrs.Attribute[Any], value: object) -> None:
        if not ok(value):
            raise InvalidConfig(
                f"Settings.{attribute.name} must be {expected} (got {value!r} that is "
                f"{article(type(value).__name__)}); {how}"
            )

    return check


_system_prompt = _kind(
    "a str or None", lambda v: v is None or isinstance(v, str), "None sends no system prompt."
)
_agent_name = _kind(
    "a str that is not blank",
    lambda v: isinstance(v, str) and not v.isspace() and v != "",
    f"it is the sender of the agent's messages, {AGENT_SENDER!r} by default.",
)
_window = _kind(
    "a Window or None",
    lambda v: v is None or isinstance(v, Window),
    "e.g. Window(max_tokens=100_000); None keeps all history.",
)
_artifacts = _kind(
    "an ArtifactStore or None",
    lambda v: v is None or isinstance(v, ArtifactStore),
    "an object with read(attachment) -> bytes (runtime.ArtifactStore).",
)
_input_limits = _kind(
    "an InputLimits",
    lambda v: isinstance(v, InputLimits),
    "e.g. InputLimits(max_text_chars=50_000); leave it out for the defaults.",
)


@attrs.frozen(kw_only=True)
class Settings:
    """How sessions run. Every field has a default that suits a chat bot."""

    system_prompt: str | None = attrs.field(default=None, validator=_system_prompt)
    """The system prompt given to the model on every call."""
    agent_name: str = attrs.field(default=AGENT_SENDER, validator=_agent_name)
    """The ``sender`` of the agent's messages."""
    window: Window | None = attrs.field(default=None, validator=_window)
    """Token and message budget of the model's view (None: all history)."""
    artifacts: ArtifactStore | None = attrs.field(default=None, validator=_artifacts)
    """Where attachment bytes are read from (images for the model)."""
    max_result_chars: int | None = attrs.field(default=20_000, validator=_result_chars)
    """Tool results longer than this reach the model as head + tail excerpts."""
    input_limits: InputLimits = attrs.field(factory=InputLimits, validator=_input_limits)
    """Limits on user input (text size, attachments, browser elements)."""
    max_nudges: int = attrs.field(default=2, validator=_count)
    """Empty model responses nudged and retried in one turn before it fails."""
    max_model_calls: int = attrs.field(default=25, validator=_model_calls)
    """Model calls in one turn before it fails (a loop guard)."""
    approval_timeout: float | None = attrs.field(default=None, validator=_positive_or_none)
    """Seconds a tool call may wait for approval before it is denied (None: it waits)."""
    model_timeout: float | None = attrs.field(default=300.0, validator=_positive_or_none)
    """Seconds one model call may take before it fails the turn."""
    passivate_after: float | None = attrs.field(default=300.0, validator=_positive_or_none)
    """Idle seconds before a session's actor stops (it is reloaded on the next message)."""
    recover_after: float = attrs.field(default=300.0, validator=_non_negative)
    """Seconds a turn left active by a dead runner waits before its input is taken back."""
    store_timeout: float = attrs.field(default=60.0, validator=_finite_seconds)
    """Seconds to wait for the store to commit or load before giving up."""
    ask_timeout: float = attrs.field(default=30.0, validator=_finite_seconds)
    """Seconds the runtime waits for a session actor to answer."""
    delivery_retries: int = attrs.field(default=5, validator=_delivery_retries)
    """Times a send an adapter failed (its platform refused or was unreachable) is tried
    again while the session is live; then it stays undelivered until the session is next
    loaded (0: no retries)."""
    delivery_backoff: float = attrs.field(default=1.0, validator=_delivery_backoff)
    """Seconds before the first retry of a failed send; each next retry waits twice as long
    (at most ``MAX_DELIVERY_BACKOFF``, 300 s)."""
    lease_ttl: float = attrs.field(default=30.0, validator=_lease_ttl)
    """With a shared (PostgreSQL) store: seconds a session's lease lasts unrenewed (it is
    renewed every third of it); another worker takes the session over after it."""
    lease_poll: float = attrs.field(default=30.0, validator=_lease_poll)
    """With a shared store: seconds between polls for sessions with work nobody runs (the
    fallback for lost notifications)."""
    prices: PriceTable | None = attrs.field(factory=_default_prices, validator=_prices, repr=False)
    """Prices that put a cost on each model call (audit row, turn metrics, sessions): Amber's
    shipped table, with the file ``AMBER_PRICES`` names layered over it; None: no costs."""

    def delivery_delay(self, failures: int) -> float:
        """Seconds to wait before trying again a send that has failed ``failures`` times."""
        doubled = self.delivery_backoff * 2.0 ** min(failures - 1, 64)
        return min(doubled, max(self.delivery_backoff, MAX_DELIVERY_BACKOFF))

    def turn_settings(
        self, *, tools: Sequence[ToolSpec], model_name: str | None, runner: str, exclusive: bool
    ) -> TurnSettings:
        """What the turn machine needs of these settings, with the runtime's own facts."""
        return TurnSettings(
            system_prompt=self.system_prompt,
            agent_name=self.agent_name,
            window=self.window,
            artifacts=self.artifacts,
            max_result_chars=self.max_result_chars,
            max_nudges=self.max_nudges,
            max_model_calls=self.max_model_calls,
            model_timeout=self.model_timeout,
            passivate_after=self.passivate_after,
            recover_after=self.recover_after,
            approval_timeout=self.approval_timeout,
            tools=tuple(tools),
            model_name=model_name,
            prices=self.prices,
            runner=runner,
            exclusive=exclusive,
        )


_NAMES = tuple(field.name for field in attrs.fields(Settings))


def _explained(init: Callable[..., None]) -> Callable[..., None]:
    """``Settings``' attrs ``__init__``, refusing an unknown setting (a typo) or a positional
    argument with ``InvalidConfig`` that names it, instead of attrs' bare ``TypeError``."""

    @functools.wraps(init)
    def __init__(self: Settings, *args: Any, **kwargs: Any) -> None:
        if args:
            shown = ", ".join(repr(arg) for arg in args)
            plural = "s" if len(args) > 1 else ""
            raise InvalidConfig(
                f"Settings takes its settings by name (got {len(args)} positional argument"
                f"{plural}: {shown}); write Settings(system_prompt=..., passivate_after=...)."
            )
        unknown = [name for name in kwargs if name not in _NAMES]
        if unknown:
            name = unknown[0]
            hint = _nearest(name)
            raise InvalidConfig(
                f"Settings has no setting {name!r}; {hint} The settings are: "
                f"{', '.join(_NAMES)} (docs/runtime.md, Settings)."
            )
        init(self, **kwargs)

    return __init__


def _nearest(name: str) -> str:
    """The valid setting names near ``name``, as a question (or that there are none)."""
    near = sorted(difflib.get_close_matches(name, _NAMES, n=3))
    if not near:
        return "no setting has a name near it."
    if len(near) == 1:
        return f"did you mean {near[0]!r}?"
    return f"did you mean {', '.join(map(repr, near[:-1]))} or {near[-1]!r}?"


# setattr: mypy keeps checking calls against the attrs signature.
setattr(Settings, "__init__", _explained(Settings.__init__))  # noqa: B010
