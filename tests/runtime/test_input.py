"""User input validation: validate_input, InputLimits and UserInput.to_message (DESIGN §2)."""

from __future__ import annotations

import re
from datetime import UTC, datetime

import pytest
from hypothesis import given
from pyrsistent import PMap, pmap, pvector

from runtime import (
    Attachment,
    BrowserElement,
    Category,
    InputLimits,
    InvalidInput,
    Role,
    Status,
    UserInput,
    category_of,
    validate_input,
)
from runtime.testing import user_inputs

T0 = datetime(2026, 5, 27, 12, 50, tzinfo=UTC)
FILE = Attachment(id="art_1", name="data.csv", media_type="text/csv", size=120)
ELEMENT = BrowserElement(url="https://a.example/", tag="div", text="price: 3")
EMPTY = (
    "Input text is empty and nothing is attached; send some text, an attachment or a "
    "browser element."
)


def exact(text: str) -> str:
    """A regex matching exactly ``text``."""
    return f"^{re.escape(text)}$"


def element(chars: int) -> BrowserElement:
    """A browser element carrying exactly ``chars`` characters (URL included)."""
    url = "https://a.example/"
    return BrowserElement(url=url, text="x" * (chars - len(url)))


class TestEmptyInput:
    @pytest.mark.parametrize("text", ["", " ", "\n\t "])
    def test_empty_text_alone_is_rejected(self, text: str) -> None:
        """Empty or blank text with nothing attached is refused."""
        with pytest.raises(InvalidInput, match=exact(EMPTY)):
            validate_input(UserInput(text=text))

    def test_empty_text_with_attachment(self) -> None:
        """Empty text is fine when a file comes with it."""
        validate_input(UserInput(text="", attachments=[FILE]))

    def test_empty_text_with_browser_element(self) -> None:
        """Empty text is fine when a browser element comes with it."""
        validate_input(UserInput(text="", browser_elements=[ELEMENT]))

    def test_returns_the_input(self) -> None:
        """validate_input returns the very input it checked."""
        user_input = UserInput(text="hello")
        assert validate_input(user_input) is user_input

    def test_empty_sender(self) -> None:
        """An input needs the person's display name."""
        with pytest.raises(
            InvalidInput,
            match=exact("Input needs a sender (the person's display name); got an empty one."),
        ):
            validate_input(UserInput(text="hi", sender=""))

    def test_text_must_be_str(self) -> None:
        """Non-str text is refused, naming its type."""
        with pytest.raises(
            InvalidInput,
            match=exact("Input text must be a str (got b'hi' that is a 'bytes')."),
        ):
            validate_input(UserInput(text=b"hi"))  # type: ignore[arg-type]

    def test_attachments_must_be_attachments(self) -> None:
        """A plain string among attachments is refused, naming its position."""
        with pytest.raises(InvalidInput, match=r"^attachments\[1\] must be a"):
            validate_input(UserInput(text="hi", attachments=[FILE, "b.csv"]))

    def test_browser_elements_must_be_browser_elements(self) -> None:
        """A dict among browser elements is refused, naming its position."""
        with pytest.raises(
            InvalidInput,
            match=exact(
                "browser_elements[0] must be a BrowserElement (got {'url': 'u'} that is a 'dict')."
            ),
        ):
            validate_input(UserInput(text="hi", browser_elements=[{"url": "u"}]))

    def test_attachment_type_message_reads_well(self) -> None:
        """The wrong-type message for attachments says 'an Attachment'."""
        with pytest.raises(
            InvalidInput,
            match=exact(
                "attachments[0] must be an Attachment (got 'a' that is a 'str'). An Attachment "
                "refers to bytes kept in an artifact store: Attachment(id=<their key there>, "
                "name='photo.png', kind='image', media_type='image/png'); only id and name are "
                "required."
            ),
        ):
            validate_input(UserInput(text="hi", attachments=["a"]))


class TestDefaultLimits:
    def test_defaults(self) -> None:
        """The default limits suit a chat channel."""
        limits = InputLimits()
        assert limits.max_text_chars == 100_000
        assert limits.max_attachments == 10
        assert limits.max_attachment_bytes == 20 * 1024 * 1024
        assert limits.max_browser_elements == 5
        assert limits.max_browser_chars == 50_000

    def test_text_at_the_limit(self) -> None:
        """Text of exactly the maximum length is accepted."""
        validate_input(UserInput(text="x" * 100_000))

    def test_text_over_the_limit(self) -> None:
        """Text one character over the limit is refused."""
        with pytest.raises(
            InvalidInput,
            match=exact(
                "Input text has 100001 characters, more than the limit of 100000; shorten it "
                "or send it as an attachment."
            ),
        ):
            validate_input(UserInput(text="x" * 100_001))

    def test_attachment_count(self) -> None:
        """Ten attachments pass; eleven are refused."""
        validate_input(UserInput(text="hi", attachments=[FILE] * 10))
        with pytest.raises(
            InvalidInput,
            match=exact(
                "Input has 11 attachments, more than the limit of 10; send them in several "
                "messages."
            ),
        ):
            validate_input(UserInput(text="hi", attachments=[FILE] * 11))

    def test_attachment_size(self) -> None:
        """An attachment of exactly 20 MiB passes; one byte more is refused."""
        limit = 20 * 1024 * 1024
        validate_input(
            UserInput(text="", attachments=[Attachment(id="a", name="big.bin", size=limit)])
        )
        with pytest.raises(
            InvalidInput,
            match=exact(
                "Attachment 'big.bin' is 20971521 bytes, more than the limit of 20971520; "
                "compress or split it."
            ),
        ):
            validate_input(
                UserInput(
                    text="", attachments=[FILE, Attachment(id="a", name="big.bin", size=limit + 1)]
                )
            )

    def test_browser_element_count(self) -> None:
        """Five browser elements pass; six are refused."""
        validate_input(UserInput(text="", browser_elements=[ELEMENT] * 5))
        with pytest.raises(
            InvalidInput,
            match=exact(
                "Input has 6 browser elements, more than the limit of 5; select fewer elements."
            ),
        ):
            validate_input(UserInput(text="", browser_elements=[ELEMENT] * 6))

    def test_browser_chars_total(self) -> None:
        """Browser elements may carry 50,000 characters in all, counted across elements."""
        validate_input(UserInput(text="", browser_elements=[element(25_000), element(25_000)]))
        with pytest.raises(
            InvalidInput,
            match=exact(
                "Browser elements carry 50001 characters in all, more than the limit of 50000; "
                "select smaller elements."
            ),
        ):
            validate_input(UserInput(text="", browser_elements=[element(25_000), element(25_001)]))

    def test_browser_chars_count_every_field(self) -> None:
        """URL, title, tag, selector, text and HTML all count towards the limit."""
        big = BrowserElement(
            url="u" * 10_000,
            title="t" * 10_000,
            tag="g" * 10_000,
            selector="s" * 10_000,
            text="x" * 5_000,
            html="h" * 5_001,
        )
        with pytest.raises(InvalidInput, match=r"^Browser elements carry 50001 characters in all"):
            validate_input(UserInput(text="", browser_elements=[big]))


class TestCustomLimits:
    def test_text(self) -> None:
        """A custom text limit is applied exactly."""
        limits = InputLimits(max_text_chars=5)
        validate_input(UserInput(text="12345"), limits)
        with pytest.raises(
            InvalidInput,
            match=exact(
                "Input text has 6 characters, more than the limit of 5; shorten it or send it "
                "as an attachment."
            ),
        ):
            validate_input(UserInput(text="123456"), limits)

    def test_attachments(self) -> None:
        """Custom attachment count and size limits are applied."""
        limits = InputLimits(max_attachments=1, max_attachment_bytes=100)
        with pytest.raises(
            InvalidInput,
            match=exact(
                "Input has 2 attachments, more than the limit of 1; send them in several messages."
            ),
        ):
            validate_input(UserInput(text="hi", attachments=[FILE, FILE]), limits)
        with pytest.raises(
            InvalidInput,
            match=exact(
                "Attachment 'data.csv' is 120 bytes, more than the limit of 100; compress or "
                "split it."
            ),
        ):
            validate_input(UserInput(text="hi", attachments=[FILE]), limits)

    def test_browser_elements(self) -> None:
        """Custom browser element count and size limits are applied."""
        limits = InputLimits(max_browser_elements=1, max_browser_chars=30)
        with pytest.raises(
            InvalidInput,
            match=exact(
                "Input has 2 browser elements, more than the limit of 1; select fewer elements."
            ),
        ):
            validate_input(UserInput(text="hi", browser_elements=[element(20)] * 2), limits)
        with pytest.raises(
            InvalidInput,
            match=exact(
                "Browser elements carry 31 characters in all, more than the limit of 30; "
                "select smaller elements."
            ),
        ):
            validate_input(UserInput(text="hi", browser_elements=[element(31)]), limits)

    def test_limits_loosen_too(self) -> None:
        """A larger custom limit admits what the default refuses."""
        validate_input(
            UserInput(text="hi", attachments=[FILE] * 11), InputLimits(max_attachments=11)
        )

    def test_none_means_defaults(self) -> None:
        """limits=None applies the defaults."""
        with pytest.raises(InvalidInput, match=r"^Input has 11 attachments"):
            validate_input(UserInput(text="hi", attachments=[FILE] * 11), None)


class TestToMessage:
    def test_builds_a_pending_user_question(self) -> None:
        """A valid input becomes a pending_agent user question carrying its parts."""
        user_input = UserInput(
            text="what is in this file?",
            sender="Chii",
            attachments=[FILE],
            browser_elements=[ELEMENT],
            chatbot_id="discord",
            channel_id="general",
            metadata={"discord_message_id": "123", "tags": ["a"]},
        )
        message = user_input.to_message(id="msg_1", session_id="sess", created_at=T0)
        assert category_of(message) is Category.USER_QUESTION
        assert message.role is Role.USER
        assert message.status is Status.PENDING_AGENT
        assert (message.id, message.session_id, message.created_at) == ("msg_1", "sess", T0)
        assert message.content == "what is in this file?"
        assert message.sender == "Chii"
        assert message.attachments == pvector([FILE])
        assert message.browser_elements == pvector([ELEMENT])
        assert (message.chatbot_id, message.channel_id) == ("discord", "general")
        assert isinstance(message.metadata, PMap)
        assert message.metadata == pmap({"discord_message_id": "123", "tags": pvector(["a"])})
        assert message.turn_id is None

    def test_attachment_only(self) -> None:
        """An attachment-only input becomes a question with empty content."""
        message = UserInput(text="", attachments=[FILE]).to_message(
            id="msg_1", session_id="sess", created_at=T0
        )
        assert message.content == ""
        assert list(message.attachments) == [FILE]
        assert message.sender == "user"

    def test_invalid_input_builds_nothing(self) -> None:
        """to_message validates first and raises InvalidInput for a bad input."""
        with pytest.raises(InvalidInput, match=exact(EMPTY)):
            UserInput(text="").to_message(id="msg_1", session_id="sess", created_at=T0)

    def test_custom_limits(self) -> None:
        """to_message applies the limits it is given."""
        with pytest.raises(
            InvalidInput, match=r"^Input text has 3 characters, more than the limit of 2;"
        ):
            UserInput(text="abc").to_message(
                id="msg_1", session_id="sess", created_at=T0, limits=InputLimits(max_text_chars=2)
            )

    def test_bad_metadata(self) -> None:
        """Metadata JSON cannot hold becomes InvalidInput, naming the path."""
        with pytest.raises(
            InvalidInput,
            match=exact(
                "User input cannot become a message: $.metadata.score must be a finite number "
                "(got nan); JSON has no NaN or infinity, store it as a string or null."
            ),
        ):
            UserInput(text="hi", metadata={"score": float("nan")}).to_message(
                id="msg_1", session_id="sess", created_at=T0
            )

    def test_bad_message_fields(self) -> None:
        """Message-level failures (an empty id) become InvalidInput."""
        with pytest.raises(
            InvalidInput,
            match=exact(
                "User input cannot become a message: Message.id must be a non-empty str "
                "(got '' that is a 'str')."
            ),
        ):
            UserInput(text="hi").to_message(id="", session_id="sess", created_at=T0)

    def test_naive_time(self) -> None:
        """A naive created_at becomes InvalidInput."""
        with pytest.raises(
            InvalidInput,
            match=r"^User input cannot become a message: Message\.created_at must be a "
            r"timezone-aware datetime \(got datetime\.datetime\(2026, 5, 27, 0, 0\)\); use "
            r"datetime\.now\(timezone\.utc\)\.$",
        ):
            UserInput(text="hi").to_message(
                id="msg_1", session_id="sess", created_at=datetime(2026, 5, 27)
            )

    def test_forged_category_flag(self) -> None:
        """Input cannot pass itself off as a cron prompt through its metadata."""
        with pytest.raises(
            InvalidInput,
            match=exact(
                "User input cannot become a message: Message 'msg_1' was built as a user "
                "question but reads back as a cron prompt; check its sender and metadata flags."
            ),
        ):
            UserInput(text="hi", metadata={"is_cronjob": True}).to_message(
                id="msg_1", session_id="sess", created_at=T0
            )


class TestProperties:
    @given(user_inputs(valid=True))
    def test_valid_inputs_validate(self, user_input: UserInput) -> None:
        """Every input the kit calls valid passes and becomes a user question."""
        assert validate_input(user_input) is user_input
        message = user_input.to_message(id="msg_1", session_id="sess", created_at=T0)
        assert category_of(message) is Category.USER_QUESTION
        assert message.status is Status.PENDING_AGENT
        assert message.attachments == user_input.attachments

    @given(user_inputs(valid=False))
    def test_invalid_inputs_raise(self, user_input: UserInput) -> None:
        """Every input the kit calls invalid is refused with InvalidInput, and so is its message."""
        with pytest.raises(InvalidInput):
            validate_input(user_input)
        with pytest.raises(InvalidInput):
            user_input.to_message(id="msg_1", session_id="sess", created_at=T0)
