"""The article of a noun in error messages (messages said "a int", "a 'int'")."""

from __future__ import annotations

import pytest

from runtime._article import article, type_named


class TestArticle:
    @pytest.mark.parametrize(
        ("noun", "expected"),
        [
            ("int", "an int"),
            ("str", "a str"),
            ("Attachment", "an Attachment"),
            ("Message", "a Message"),
            ("'int'", "an 'int'"),
            ("'str'", "a 'str'"),
            ("'_EditsOnly'", "an '_EditsOnly'"),
            ("'orphan_recovered'", "an 'orphan_recovered'"),
            ("Usage", "a Usage"),
            ("UUID", "a UUID"),
            ("UserInput", "a UserInput"),
            ("edit(message_id, text)", "an edit(message_id, text)"),
        ],
    )
    def test_the_article_follows_the_first_letter(self, noun: str, expected: str) -> None:
        """ "an" before a vowel (past a quote or an underscore), "a" before a consonant or a
        vowel that sounds like "you"."""
        assert article(noun) == expected

    @pytest.mark.parametrize(
        ("value", "expected"), [(5, "an 'int'"), ("x", "a 'str'"), (object(), "an 'object'")]
    )
    def test_type_named_quotes_the_type(self, value: object, expected: str) -> None:
        """The type of a value, quoted, with its article: what "(got 5 that is ...)" ends with."""
        assert type_named(value) == expected
