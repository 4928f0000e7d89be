"""``ArtifactStore``: where attachment bytes live, as projections see it.

Messages carry ``Attachment`` references, never bytes. The model's view loads
the images of the current turn through this protocol and nothing else; it is
the only I/O a projection does, and only when the caller hands a store in.
"""

from __future__ import annotations

import hashlib
from typing import Protocol, runtime_checkable

from ._article import type_named
from ._errors import MissingArtifact
from ._message import Attachment, Message

__all__ = ["ArtifactStore", "load_attachment"]


@runtime_checkable
class ArtifactStore(Protocol):
    """Anything that returns an attachment's bytes.

    ``read`` raises ``KeyError`` (or ``FileNotFoundError``) when it does not
    have them; the projection turns that into a ``MissingArtifact`` naming the
    message and the attachment.
    """

    def read(self, attachment: Attachment) -> bytes:
        """The bytes of ``attachment`` (found by ``attachment.id``)."""
        ...


def load_attachment(store: ArtifactStore | None, message: Message, attachment: Attachment) -> bytes:
    """Read ``attachment`` of ``message`` from ``store`` and check its digest.

    Raises:
        MissingArtifact: no store was given, the store does not have the
            bytes, returned something other than bytes, or the bytes do not
            match ``attachment.sha256``.
    """
    where = f"Image {attachment.name!r} (artifact {attachment.id!r}) of message {message.id!r}"
    if store is None:
        raise MissingArtifact(
            f"{where} is part of the current turn, so the model's view sends its bytes, but no "
            "artifact store was given; pass artifacts=<an ArtifactStore> to the view."
        )
    try:
        data = store.read(attachment)
    except (LookupError, FileNotFoundError) as error:
        raise MissingArtifact(
            f"{where} is not in the artifact store ({type(error).__name__}: {error}); store the "
            "bytes before building the view, or roll the message back."
        ) from error
    if not isinstance(data, bytes | bytearray | memoryview):
        raise MissingArtifact(
            f"{where}: the artifact store returned {type_named(data)}, expected bytes."
        )
    data = bytes(data)
    if attachment.sha256 is not None:
        digest = hashlib.sha256(data).hexdigest()
        if digest != attachment.sha256.lower():
            raise MissingArtifact(
                f"{where}: the artifact store's bytes have sha256 {digest}, but the attachment "
                f"records {attachment.sha256}; the store holds other bytes under that id."
            )
    return data
