"""What the user is told when a turn fails: short crash notices, by cause.

The detail of a failure (the provider's words, a status, a body) stays in the
turn's recorded reason, the model call's audit row and the log; the user gets
one short, human sentence saying what kind of failure it was and what to do.
A failed model call is told by the kind of its error: the classified
``ModelError`` subclasses each have a notice of their own, and any other
error is named by its class name only (never its message, which may hold a
key, a URL or a long body), cut to a bounded length.
"""

from __future__ import annotations

import re

__all__ = ["MODEL_ERRORS", "NOTICES", "model_error_notice", "model_error_type"]

NOTICES = {
    "runtime": "Something went wrong on my side; please try again.",
    "model": "The model call failed; please try again.",
    "timeout": "The model took too long to answer; please try again.",
    "empty": "The model gave no answer; please try again.",
    "cut": "My reply was cut off: it reached the model's output token limit. Raise the model's "
    "max tokens, or ask for less.",
    "blocked": "My reply was blocked by the provider's safety filter; please rephrase your "
    "request.",
    "malformed_call": "The model wrote a tool call the provider could not read; please try again.",
    "view": "I could not prepare the conversation for the model; please try again.",
    "steps": "I could not finish this within the steps I am allowed; please try again, or ask "
    "for less.",
    "auth": "The model provider refused my API key, so I cannot answer until it is fixed; "
    "please tell whoever runs me.",
    "rate_limited": "The model provider is rate-limiting me right now; please try again in a "
    "minute.",
    "context": "This conversation has grown too long for the model to read; please start a "
    "new one, or ask for less.",
    "refused": "The model provider refused my request; please try again, and tell whoever "
    "runs me if it keeps happening.",
    "unavailable": "The model provider is unavailable right now; please try again in a moment.",
    "broken": "The model's answer broke off midway; please try again.",
}
"""What the user is told when a turn fails, by cause: short and human. The detail stays in
the turn's recorded reason, the model-call audit row and the log."""

MODEL_ERRORS = {
    "ModelAuthError": "auth",
    "ModelRateLimited": "rate_limited",
    "ContextLengthError": "context",
    "ModelRequestError": "refused",
    "ModelUnavailable": "unavailable",
    "ModelStreamBroken": "broken",
}
"""The classified model errors (``runtime._errors``), by class name, with their cause (a key
of ``NOTICES``)."""

_SHOWN = 40
"""The most characters of an unclassified error's class name a notice shows."""


def model_error_type(exc: BaseException) -> str:
    """What a model call's failure is told as (``ModelEnded.error_type``): the classified
    ``ModelError`` class it is an instance of (a custom model's subclass included), else its
    own class name."""
    for cls in type(exc).__mro__:
        if cls.__name__ in MODEL_ERRORS and cls.__module__ == "runtime._errors":
            return cls.__name__
    return type(exc).__name__


def model_error_notice(error_type: str | None) -> str:
    """The crash notice of a model call that failed with an error of ``error_type`` (a
    class name; None: not known)."""
    cause = MODEL_ERRORS.get(error_type) if error_type is not None else None
    if cause is not None:
        return NOTICES[cause]
    name = re.sub(r"[^A-Za-z0-9_.]", "", error_type or "")
    if not name:
        return NOTICES["model"]
    if len(name) > _SHOWN:
        name = name[: _SHOWN - 1] + "…"
    return f"The model call failed ({name}); please try again."
