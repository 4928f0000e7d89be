"""What a request says is the same bytes in every process: no order from string hashing.

A pmap iterates in the order of its keys' hashes, which Python seeds per process
(PYTHONHASHSEED). Tool-call arguments and provider parameters are frozen maps, so
thawing them as they iterate sent the same call in a different order after every
restart: a different prompt, which misses the provider's prompt cache.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys

from runtime._json import freeze
from runtime._payloads import _merge
from runtime._view import ToolUsePart, arguments_json

ARGUMENTS = {
    "zeta": 1,
    "alpha": "a",
    "mid": [3, {"y": 1, "x": 2}],
    "beta": True,
    "gamma": {"q": None, "b": 1.5, "k": "v"},
    "delta": 0,
    "eta": "é",
    "kappa": -1,
}

SCRIPT = """
import json
from runtime._json import freeze
from runtime._payloads import _merge
from runtime._view import arguments_json
from runtime._payloads import _merge
arguments = json.loads({arguments!r})
print(arguments_json(freeze(arguments)))
print(json.dumps(_merge({{}}, freeze({{"top_p": 0.9, "temperature": 0.1, "seed": 7, "stop": ["x"],
                                     "metadata": {{"b": 1, "a": 2}}}}))))
"""


def test_arguments_are_sorted() -> None:
    """Arguments are JSON with sorted keys at every level (the codec's canonical form)."""
    expected = json.dumps(ARGUMENTS, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    assert arguments_json(freeze(ARGUMENTS)) == expected
    part = ToolUsePart(call_id="c1", name="t", arguments=freeze(ARGUMENTS))
    assert json.dumps(part.arguments_dict()) == json.dumps(ARGUMENTS, sort_keys=True)


def test_the_same_bytes_under_every_hash_seed() -> None:
    """Arguments and parameters come out the same in processes with different hash seeds."""
    outputs = set()
    for seed in ("1", "2", "3", "4"):
        env = {**os.environ, "PYTHONHASHSEED": seed}
        script = SCRIPT.format(arguments=json.dumps(ARGUMENTS))
        result = subprocess.run(
            [sys.executable, "-c", script], env=env, capture_output=True, text=True, check=True
        )
        outputs.add(result.stdout)
    assert len(outputs) == 1, outputs


def test_params_are_sorted_in_the_payload() -> None:
    """Provider parameters merged into a payload are in sorted order at every level."""
    params = freeze({"top_p": 0.9, "temperature": 0.1, "seed": 7, "metadata": ARGUMENTS})
    payload = _merge({"model": "m"}, params)
    assert list(payload) == ["model", "metadata", "seed", "temperature", "top_p"]
    assert json.dumps(payload["metadata"]) == json.dumps(ARGUMENTS, sort_keys=True)
