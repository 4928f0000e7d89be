"""Amber's exceptions, one root split by cause.

Every class also subclasses the matching built-in, so ``except ValueError``
keeps working for callers that do not know Amber::

    AmberError
    ├── InvalidArgument (TypeError, ValueError)  an argument the API cannot take (a bad type,
    │                                      a value out of range, text that cannot be stored)
    ├── InvalidInput (ValueError)          user input rejected before it became a message
    ├── InvalidMessage (ValueError)        a message whose fields contradict each other
    ├── InvalidEvent (ValueError)          an event whose own fields are malformed
    ├── EventRejected (ValueError)         a well-formed event that cannot apply to this state
    │   ├── IllegalTransition              a status change the lifecycle does not allow
    │   ├── StatusConflict                 compare-and-set lost: the status is not the expected one
    │   ├── SeqMismatch                    the event's seq is not the next one
    │   ├── ForeignEvent                   the event belongs to another session
    │   ├── UnknownMessage (+ KeyError)    the event names a message the session does not have
    │   ├── DuplicateMessage               the message id is already in the session
    │   ├── TurnConflict                   no active turn, another turn active, or a wrong turn id
    │   ├── UnmatchedToolResult            a tool result that answers no open tool call of its turn
    │   └── AuditConflict                  a model-call start or finish contradicting its audit row
    ├── DecodeError (ValueError)           JSON that is not a valid Amber value
    ├── StreamError (ValueError)           a model stream that breaks the chunk protocol
    ├── PriceError (ValueError)            a price or price table Amber cannot read
    ├── ProjectionError (ValueError)       a view (history, provider view, segments) cannot be built
    │   ├── MissingArtifact (+ LookupError) a current-turn image the artifact store cannot give back
    │   └── UnknownTurn (+ KeyError)       a projection names a turn the session does not have
    ├── SeqOutOfRange (IndexError)         a timeline asked for a seq it does not hold
    ├── ReplayMismatch (AssertionError)    a replayed log does not reproduce the recorded states
    ├── ModelError (RuntimeError)          a model call failed (provider models raise these)
    │   ├── ModelAuthError (+ PermissionError) no API key, or the provider refused it (401/403)
    │   ├── ModelRequestError (+ ValueError) the provider refused the request (400, 404, 422)
    │   │   └── ContextLengthError         the request is longer than the model's window
    │   ├── ModelRateLimited               429 after the retries
    │   ├── ModelUnavailable               5xx, overload, timeouts, connection errors after retries;
    │   │                                  a 200 that is not a stream (check base_url)
    │   └── ModelStreamBroken              the stream broke mid-way (what arrived is kept)
    └── StoreError (RuntimeError)          an event store cannot do what was asked
        ├── SeqConflict                    an append whose seq is taken or skips one (none stored)
        ├── UnknownSession (+ KeyError)    the store holds no event of that session
        ├── SessionExists                  an import into a session that already has events
        ├── CorruptRow                     a stored row that does not decode or does not fit
        ├── NotAStore                      the file is not an Amber store
        ├── SchemaVersionError             the store's schema is newer than this Amber, or unknown
        ├── StoreClosed                    the store was used after ``close()``
        └── LeaseLost                      another owner took the session's lease (none stored)

When an event is rejected the state is unchanged: ``apply`` raises before it
builds anything, and the old state stays what it was.
"""

from __future__ import annotations

__all__ = [
    "AmberError",
    "AuditConflict",
    "ContextLengthError",
    "CorruptRow",
    "DecodeError",
    "DuplicateMessage",
    "EventRejected",
    "ForeignEvent",
    "IllegalTransition",
    "InvalidArgument",
    "InvalidEvent",
    "InvalidInput",
    "InvalidMessage",
    "LeaseLost",
    "MissingArtifact",
    "ModelAuthError",
    "ModelError",
    "ModelRateLimited",
    "ModelRequestError",
    "ModelStreamBroken",
    "ModelUnavailable",
    "NotAStore",
    "PriceError",
    "ProjectionError",
    "ReplayMismatch",
    "SchemaVersionError",
    "SeqConflict",
    "SeqMismatch",
    "SeqOutOfRange",
    "SessionExists",
    "StatusConflict",
    "StoreClosed",
    "StoreError",
    "StreamError",
    "TurnConflict",
    "UnknownMessage",
    "UnknownSession",
    "UnknownTurn",
    "UnmatchedToolResult",
]


class AmberError(Exception):
    """Root of every error Amber raises on purpose."""


class InvalidArgument(AmberError, TypeError, ValueError):
    """An argument the API cannot take: nothing was done.

    A wrong type (a session id that is not a str), a value out of range (a
    negative seq, an integer beyond 64 bits), or a value that cannot be stored
    and read back unchanged (text with a lone surrogate, nesting deeper than
    ``MAX_DEPTH``). It is both a ``TypeError`` and a ``ValueError``, so code that
    catches either keeps working.
    """


class InvalidInput(AmberError, ValueError):
    """User input that cannot become a message; nothing was stored."""


class InvalidMessage(AmberError, ValueError):
    """A message whose fields contradict each other or its category."""


class InvalidEvent(AmberError, ValueError):
    """An event whose own fields are malformed (independent of any state)."""


class EventRejected(AmberError, ValueError):
    """A well-formed event that cannot apply to the given state.

    The state is unchanged: ``apply`` validates before it builds.
    """


class IllegalTransition(EventRejected):
    """A status change that the lifecycle table does not allow."""


class StatusConflict(EventRejected):
    """Compare-and-set failed: the message's status is not the expected one."""


class SeqMismatch(EventRejected):
    """The event's seq is not the state's seq plus one."""


class ForeignEvent(EventRejected):
    """The event belongs to another session."""


class UnknownMessage(EventRejected, KeyError):
    """The event names a message id the session does not hold."""

    def __str__(self) -> str:
        # KeyError would quote the message; keep it readable.
        return str(self.args[0]) if self.args else ""


class DuplicateMessage(EventRejected):
    """The message id is already used in this session."""


class TurnConflict(EventRejected):
    """The event needs a turn state the session is not in."""


class UnmatchedToolResult(EventRejected):
    """A tool result that answers no open tool call of its own turn."""


class AuditConflict(EventRejected):
    """A model-call start or finish that contradicts the session's audit rows."""


class DecodeError(AmberError, ValueError):
    """JSON that does not decode to a valid Amber value."""


class StreamError(AmberError, ValueError):
    """A model's stream broke the chunk protocol (a chunk of the wrong type, say)."""


class PriceError(AmberError, ValueError):
    """A price or a price table that Amber cannot read (the message names the model)."""


class ProjectionError(AmberError, ValueError):
    """A projection (history, provider view, UI segments) cannot be built as asked.

    Projections never change the state; nothing was built.
    """


class MissingArtifact(ProjectionError, LookupError):
    """A current-turn image whose bytes the artifact store lacks or cannot vouch for."""


class UnknownTurn(ProjectionError, KeyError):
    """A projection names a turn the session does not have."""

    def __str__(self) -> str:
        # KeyError would quote the message; keep it readable.
        return str(self.args[0]) if self.args else ""


class SeqOutOfRange(AmberError, IndexError):
    """A timeline was asked for a seq outside the range it holds."""


class ReplayMismatch(AmberError, AssertionError):
    """Replaying a stored log did not reproduce a recorded state."""


class ModelError(AmberError, RuntimeError):
    """A model call failed; the message says why in the provider's words and what to do.

    Attributes:
        provider: the API (``openai``, ``anthropic`` …), if known.
        status: the HTTP status, if there was one.
        retries: the attempts refused before this failure (``ModelRetry``).
    """

    def __init__(
        self,
        message: str,
        *,
        provider: str | None = None,
        status: int | None = None,
        retries: tuple[object, ...] = (),
    ) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status
        self.retries = retries

    def __str__(self) -> str:
        return str(self.args[0]) if self.args else ""


class ModelAuthError(ModelError, PermissionError):
    """No API key was found, or the provider refused the one given (401/403)."""


class ModelRequestError(ModelError, ValueError):
    """The provider refused the request as malformed or unknown (400, 404, 422); not retried."""


class ContextLengthError(ModelRequestError):
    """The request is longer than the model's context window; lower the view's window."""


class ModelRateLimited(ModelError):
    """The provider kept answering 429 (rate or quota limit) until the retries ran out."""


class ModelUnavailable(ModelError):
    """The provider failed (5xx, overloaded), timed out or could not be reached, retries
    included."""


class ModelStreamBroken(ModelError):
    """The stream broke after it started (malformed data, a dropped connection, an error
    event, an end without a finish); what arrived before is kept, marked."""


class StoreError(AmberError, RuntimeError):
    """An event store cannot do what was asked (see the subclasses)."""


class SeqConflict(StoreError):
    """An append whose seq is already taken (another writer won) or skips one.

    The whole batch was refused: no event of it was stored.
    """


class UnknownSession(StoreError, KeyError):
    """The store holds no event of the session."""

    def __str__(self) -> str:
        # KeyError would quote the message; keep it readable.
        return str(self.args[0]) if self.args else ""


class SessionExists(StoreError):
    """An import names a session the store already holds."""


class CorruptRow(StoreError):
    """A stored row that does not decode or does not fit its place.

    The message names the session and the seq (also given as ``session_id``
    and ``seq``, None where the damage is not one session's or one seq's).
    Rows are never skipped.
    """

    def __init__(self, message: str, *, session_id: str | None = None, seq: int | None = None):
        super().__init__(message)
        self.session_id = session_id
        """The session whose row is damaged, if one is."""
        self.seq = seq
        """The seq of the damaged row (an event's, or a snapshot's), if one is."""


class NotAStore(StoreError):
    """The file is not an Amber store (another SQLite database, or not SQLite)."""


class SchemaVersionError(StoreError):
    """The store's schema version is newer than this Amber reads, or unknown."""


class StoreClosed(StoreError):
    """The store was used after ``close()``."""


class LeaseLost(StoreError):
    """A write under a session's lease that another owner has taken over since.

    The lease's fencing token grew when the other owner took it: the write was
    refused in the same transaction that checked the token, so nothing was stored.
    The message names the session, the stale token and the current one.
    """

    def __init__(self, message: str, *, session_id: str, token: int, current: int | None):
        super().__init__(message)
        self.session_id = session_id
        """The session whose lease was lost."""
        self.token = token
        """The fencing token the writer held."""
        self.current = current
        """The lease's token now (None: the lease was released)."""
