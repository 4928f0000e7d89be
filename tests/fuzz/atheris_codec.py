"""Coverage-guided fuzzing of the codec with atheris (optional: ``pip install atheris``).

    python3 tests/fuzz/atheris_codec.py -atheris_runs=200000 [corpus_dir]

libFuzzer mutates bytes towards new coverage of ``runtime`` (instrumented on
import) and feeds them to ``from_json`` for each kind, with the same oracle as
the rest of the fuzz suite (``targets.decode_bytes``): a ``DecodeError``, or a
value that round-trips to the same bytes. A finding is an uncaught
``Unhandled`` or ``WrongState``, which atheris reports with the input saved.
The seeds are the JSON of real values (``inputs.corpus()``).
"""

from __future__ import annotations

import pathlib
import sys

_TESTS = pathlib.Path(__file__).resolve().parent.parent
sys.path.insert(0, str(_TESTS.parent))
sys.path.append(str(_TESTS))

import atheris  # noqa: E402

with atheris.instrument_imports(include=["runtime"]):
    import runtime  # noqa: F401

from fuzz import inputs, targets  # noqa: E402

KINDS = targets.KINDS


def one_input(data: bytes) -> None:
    """One libFuzzer input: the first byte picks the kind, the rest is the JSON."""
    if not data:
        return
    targets.decode_bytes(data[1:], KINDS[data[0] % len(KINDS)])


def main() -> None:
    """Write the seed corpus (if a folder is given and empty), then fuzz."""
    folders = [arg for arg in sys.argv[1:] if not arg.startswith("-")]
    if folders:
        seeds = pathlib.Path(folders[0])
        seeds.mkdir(parents=True, exist_ok=True)
        if not any(seeds.iterdir()):
            for number, (kind, value) in enumerate(inputs.corpus()):
                prefix = bytes([KINDS.index(kind)])
                (seeds / f"seed{number}").write_bytes(prefix + inputs.to_json(value))
    atheris.Setup(sys.argv, one_input)
    atheris.Fuzz()


if __name__ == "__main__":
    main()
