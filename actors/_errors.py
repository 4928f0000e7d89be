"""The errors of the actors layer, under ``runtime``'s one root ``AmberError``.

Every class also subclasses the matching built-in, so ``except TimeoutError``
or ``except ValueError`` keeps working for callers that do not know Amber::

    AmberError
    ├── InvalidConfig (TypeError, ValueError)  a setting, argument or option Amber cannot use
    ├── NotAwaitingApproval (ValueError)       approve/deny of a tool call that does not wait
    ├── RuntimeStopped (RuntimeError)          the runtime is not running (not started, stopped)
    ├── AlreadyStarted (RuntimeError)          a runtime or effects loop started a second time
    ├── EffectsStopped (RuntimeError)          the trio effects loop is not running
    ├── SessionGone (RuntimeError)             a session actor kept stopping under a call
    ├── OwnedElsewhere (RuntimeError)          another worker holds the session's lease
    ├── IdleTimeout (TimeoutError)             a session was not idle within the time given
    ├── AskTimeout (TimeoutError)              an asked input was not answered in time
    ├── ModelTimeout (TimeoutError)            a model call took longer than its limit
    ├── ModelFailure (RuntimeError)            a scripted model's failure (a provider's, in life)
    ├── ScriptExhausted (RuntimeError)         a ScriptedModel called more times than scripted
    ├── InvalidTool (ValueError)               a tool definition Amber cannot use
    ├── MissingSDK (ImportError)               a provider model whose official SDK is not installed
    └── PlatformError (ConnectionError)        a chat platform refused a send or an edit

``runtime``'s errors (``InvalidInput``, ``UnknownSession``, ``StoreError`` …)
come through the actors layer unchanged.
"""

from __future__ import annotations

from runtime import AmberError, UnknownSession

__all__ = [
    "AlreadyStarted",
    "AskTimeout",
    "EffectsStopped",
    "IdleTimeout",
    "InvalidConfig",
    "MissingSDK",
    "ModelFailure",
    "ModelTimeout",
    "NotAwaitingApproval",
    "OwnedElsewhere",
    "RuntimeStopped",
    "ScriptExhausted",
    "SessionGone",
]


class InvalidConfig(AmberError, TypeError, ValueError):
    """A setting, constructor argument or option that Amber cannot use."""


class MissingSDK(AmberError, ImportError):
    """A provider model was asked for and its official SDK is not installed."""


class NotAwaitingApproval(AmberError, ValueError):
    """``approve``/``deny`` named a tool call that does not wait for approval (now)."""


class RuntimeStopped(AmberError, RuntimeError):
    """The runtime is not running (not started yet, or stopped)."""


class AlreadyStarted(AmberError, RuntimeError):
    """A runtime or an effects loop was started a second time; each starts once."""


class EffectsStopped(AmberError, RuntimeError):
    """The effects loop is not running (never started, or stopped)."""


class SessionGone(AmberError, RuntimeError):
    """A session's actor kept stopping while a call was routed to it."""


class OwnedElsewhere(AmberError, RuntimeError):
    """Another worker holds the session's lease (a shared store): this runtime cannot run it.

    ``send`` and ``post`` still work (the input is stored for the owner), and so do
    ``approve`` and ``deny`` (the decision is stored for the owner); calls that need the
    session's actor here (``ask``, ``interrupt``) do not.
    """


class IdleTimeout(AmberError, TimeoutError):
    """A session did not become idle (or settled) within the time given."""


class StopTimeout(AmberError, TimeoutError):
    """``Runtime.stop`` waited its whole timeout for a stop another thread began, which
    still runs (the runtime is not yet stopped)."""


class AskTimeout(AmberError, TimeoutError):
    """An input sent with ``ask`` was not answered within the time given (its turn goes on)."""


class ModelTimeout(AmberError, TimeoutError):
    """A model call took longer than ``Settings.model_timeout``."""


class ModelFailure(AmberError, RuntimeError):
    """The failure a scripted ``error`` step raises (a provider error, in real life)."""


class ScriptExhausted(AmberError, RuntimeError):
    """A ``ScriptedModel`` was called more times than its script has responses."""


def unknown_session(session_id: str) -> UnknownSession:
    """The store's UnknownSession, with the hint a Runtime's caller can follow."""
    return UnknownSession(
        f"No session {session_id!r} is stored: nothing was ever accepted for it (an input "
        "refused with InvalidInput stores nothing). Runtime.sessions() lists the stored "
        "sessions."
    )


def not_running(state: str, cause: object = None) -> str:
    """``RuntimeStopped``'s message for a runtime that is ``state`` (not running); ``cause``:
    why it stopped on its own (``Runtime.failed``), if it did."""
    if cause is not None:
        return f"The runtime is {state}: {cause}"
    if state == "new":
        return "The runtime is not started; call start() or use it in a with block."
    return f"The runtime is {state}; make a new Runtime to go on."
