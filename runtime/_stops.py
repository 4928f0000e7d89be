"""Stop reasons that mean a model's reply is no whole answer (DESIGN §7).

A provider says why its model stopped (``MessageFinish.stop_reason``, kept
as the provider spelled it). Most reasons mean the model was done; these mean
it was stopped, and the turn fails at once rather than taking the rest as the
answer (or, when nothing came, nudging the model into the same stop again):

- cut off at the output token limit: OpenAI Chat ``length``, OpenAI
  Responses ``max_output_tokens`` (a ``response.incomplete``), Anthropic
  ``max_tokens`` and ``model_context_window_exceeded``, Gemini ``MAX_TOKENS``;
- blocked by the provider's safety filter: OpenAI ``content_filter``,
  Anthropic ``refusal``, Gemini ``SAFETY``, ``RECITATION``, ``BLOCKLIST``,
  ``PROHIBITED_CONTENT``, ``SPII`` and ``IMAGE_SAFETY``;
- a function call the provider could not parse: Gemini
  ``MALFORMED_FUNCTION_CALL``.

What the model wrote before it stopped is kept, marked, and none of its
tool calls run.
"""

from __future__ import annotations

__all__ = ["STOPPED_SHORT", "stopped_short"]

STOPPED_SHORT: dict[str, str] = {
    "length": "cut",
    "max_output_tokens": "cut",
    "max_tokens": "cut",
    "model_context_window_exceeded": "cut",
    "MAX_TOKENS": "cut",
    "content_filter": "blocked",
    "refusal": "blocked",
    "SAFETY": "blocked",
    "RECITATION": "blocked",
    "BLOCKLIST": "blocked",
    "PROHIBITED_CONTENT": "blocked",
    "SPII": "blocked",
    "IMAGE_SAFETY": "blocked",
    "MALFORMED_FUNCTION_CALL": "malformed_call",
}
"""Stop reasons that fail the turn, with the cause (a key of ``NOTICES``) the user is told."""

_REASONS = {
    "cut": (
        "the model's reply was cut off at its output token limit (stop reason {stop!r}): "
        "what it wrote is kept, marked, and none of its tool calls ran. Raise the model's "
        "output limit (params max_tokens; max_completion_tokens for OpenAI reasoning models, "
        "max_output_tokens for OpenAI Responses and Gemini), or ask for less"
    ),
    "blocked": (
        "the provider's safety filter blocked the model's reply (stop reason {stop!r}): what "
        "it wrote before is kept, marked, and none of its tool calls ran. The same request "
        "would be blocked again; rephrase it"
    ),
    "malformed_call": (
        "the model wrote a function call the provider could not parse (stop reason {stop!r}): "
        "what it wrote before is kept, marked, and none of its tool calls ran. Try again, or "
        "simplify the tools' parameter schemas"
    ),
}


def stopped_short(stop_reason: str | None) -> tuple[str, str] | None:
    """``(cause, reason)`` when ``stop_reason`` says the reply is no whole answer, else None."""
    cause = STOPPED_SHORT.get(stop_reason) if stop_reason is not None else None
    if cause is None:
        return None
    return cause, _REASONS[cause].format(stop=stop_reason)
