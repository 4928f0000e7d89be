"""The crash notice a failed model call leaves for the user: short, human, and saying what
kind of failure it was (``runtime._notices``)."""

from __future__ import annotations

import pytest

from runtime import (
    ContextLengthError,
    ModelAuthError,
    ModelEnded,
    ModelError,
    ModelRateLimited,
    ModelRequestError,
    ModelStreamBroken,
    ModelUnavailable,
    TurnEnded,
)
from runtime._notices import NOTICES, model_error_notice, model_error_type
from tests.runtime.test_machine import Driver

CLASSIFIED = [
    ("ModelAuthError", "auth"),
    ("ModelRateLimited", "rate_limited"),
    ("ContextLengthError", "context"),
    ("ModelRequestError", "refused"),
    ("ModelUnavailable", "unavailable"),
    ("ModelStreamBroken", "broken"),
]


def notice_after(error_type: str | None, error: str = "it failed") -> str:
    """The crash notice of a turn whose model call ended with ``error`` of ``error_type``."""
    d = Driver()
    call = d.started()
    failed = d(ModelEnded, run_id=call.run_id, error=error, error_type=error_type)
    ended = failed.events[-1]
    assert isinstance(ended, TurnEnded)
    assert ended.notice is not None
    return ended.notice.content


class TestModelErrorNotices:
    @pytest.mark.parametrize(("error_type", "cause"), CLASSIFIED)
    def test_a_classified_failure_is_named(self, error_type: str, cause: str) -> None:
        """Auth, rate limit, context length, a refused request, an unavailable provider and
        a broken stream each told the user "The model call failed; please try again."."""
        assert notice_after(error_type) == NOTICES[cause]
        assert NOTICES[cause] != NOTICES["model"]

    def test_an_unclassified_failure_names_its_kind(self) -> None:
        """Any other exception is named by its class, never by its message (which may hold
        a key, a URL or a long body)."""
        notice = notice_after("ConnectError", "ConnectError: https://key:sk-secret@host ...")
        assert notice == "The model call failed (ConnectError); please try again."

    @pytest.mark.parametrize(
        ("error_type", "shown"),
        [("A" * 200, "A" * 39 + "…"),
         ("Weird <Error>\n", "WeirdError"),
         ("pkg.mod.Failure", "pkg.mod.Failure")],
        ids=["long", "odd characters", "dotted"],
    )  # fmt: skip
    def test_the_name_shown_is_bounded_and_plain(self, error_type: str, shown: str) -> None:
        assert notice_after(error_type) == f"The model call failed ({shown}); please try again."

    @pytest.mark.parametrize("error_type", [None, "", "<>"])
    def test_no_name_keeps_the_plain_notice(self, error_type: str | None) -> None:
        assert notice_after(error_type) == NOTICES["model"]
        assert model_error_notice(error_type) == "The model call failed; please try again."


class _MyLimit(ModelRateLimited):
    """A custom model's own rate-limit error."""


class _MyError(ModelError):
    """A custom model's own error, of no classified kind."""


class TestModelErrorType:
    @pytest.mark.parametrize(
        ("exc", "name"),
        [(ModelAuthError("x"), "ModelAuthError"),
         (ContextLengthError("x"), "ContextLengthError"),
         (ModelRequestError("x"), "ModelRequestError"),
         (ModelUnavailable("x"), "ModelUnavailable"),
         (ModelStreamBroken("x"), "ModelStreamBroken"),
         (_MyLimit("x"), "ModelRateLimited"),
         (_MyError("x"), "_MyError"),
         (ConnectionResetError("x"), "ConnectionResetError")],
        ids=lambda value: type(value).__name__ if isinstance(value, BaseException) else value,
    )  # fmt: skip
    def test_the_kind_a_failure_is_told_as(self, exc: BaseException, name: str) -> None:
        """A subclass of a classified error is told as that kind; anything else by its own
        class name."""
        assert model_error_type(exc) == name
