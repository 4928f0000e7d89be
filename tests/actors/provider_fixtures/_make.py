"""Writes the provider fixtures (run: python tests/actors/provider_fixtures/_make.py).

Each fixture is what a provider's streaming endpoint sends, spelled from its
documented wire format, with what Amber must make of it (``expect``):

- OpenAI Chat Completions: ``data: {chat.completion.chunk}`` lines, ``data: [DONE]``
  (platform.openai.com/docs/api-reference/chat-streaming);
- OpenAI Responses: ``event: response.*`` with typed data
  (platform.openai.com/docs/api-reference/responses-streaming);
- Anthropic Messages: ``event: message_start`` … ``message_stop``
  (docs.anthropic.com/en/docs/build-with-claude/streaming);
- Gemini: ``streamGenerateContent?alt=sse``, one ``GenerateContentResponse``
  per ``data:`` line (ai.google.dev/api/generate-content).

The JSON files are the fixtures; this script is how they were written.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

HERE = Path(__file__).parent
SIG_A = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYdsOjLWZVW0EfhSxgZ9Ew3Dw=="
SIG_R = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpPkNRj2YfWXGmKDxH4mPnZ5sQ7vB5URj2pLmN1=="
SIG_G = "CiQB0e2Kb7cZ3Vt3m5KHmQy1Y6k2qKcS8nL7PbA0v4c2vEoaBwE="
SIG_G2 = "CiwB0e2Kb1nUYk9o2m3s8w2a5bQv7xRj0tC4oP6hZyW1eF3gJkLmNbVc"
ENC = "gAAAAABoXyZx3p9Ycb1Q6R0k5u2nK8mL4v7Wd1fS3aT9eO6hJiG0cVbNzXqPyMrLwKs2Ut4Y=="
ERRORS = ("auth", "bad_request", "context_length")


def chat(delta: dict[str, Any] | None, finish: str | None = None, **extra: Any) -> dict[str, Any]:
    chunk = {
        "id": "chatcmpl-B9MHDbslfkBeAs8l4bebGdFOJ6PeG",
        "object": "chat.completion.chunk",
        "created": 1741570283,
        "model": "gpt-4.1-mini-2025-04-14",
        "system_fingerprint": "fp_44709d6fcb",
        "choices": []
        if delta is None
        else [{"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish}],
    }
    chunk.update(extra)
    return {"data": chunk}


CHAT_USAGE = {
    "prompt_tokens": 120,
    "completion_tokens": 40,
    "total_tokens": 160,
    "prompt_tokens_details": {"cached_tokens": 64, "audio_tokens": 0},
    "completion_tokens_details": {"reasoning_tokens": 12, "audio_tokens": 0},
}
DONE = {"data": "[DONE]"}


def chat_call(index: int, id: str | None, name: str | None, arguments: str) -> dict[str, Any]:
    call: dict[str, Any] = {"index": index, "function": {"arguments": arguments}}
    if id is not None:
        call.update(id=id, type="function")
        call["function"]["name"] = name
    return {"tool_calls": [call]}


def openai() -> dict[str, dict[str, Any]]:
    usage = chat(None, usage=CHAT_USAGE)
    return {
        "cut": {
            "description": "The reply reaches the output token limit (finish_reason length).",
            "events": [
                chat({"role": "assistant", "content": "", "refusal": None}),
                chat({"content": "Sunny in"}),
                chat({"content": " Tokyo, with"}),
                chat({}, "length"),
                usage,
                DONE,
            ],
            "expect": {"text": "Sunny in Tokyo, with", "stop_reason": "length"},
        },
        "blocked": {
            "description": "The content filter stops the reply (finish_reason content_filter).",
            "events": [
                chat({"role": "assistant", "content": "", "refusal": None}),
                chat({"content": "Sunny in"}),
                chat({}, "content_filter"),
                usage,
                DONE,
            ],
            "expect": {"text": "Sunny in", "stop_reason": "content_filter"},
        },
        "text": {
            "events": [
                chat({"role": "assistant", "content": "", "refusal": None}),
                chat({"content": "Sunny in"}),
                chat({"content": " Tokyo."}),
                chat({}, "stop"),
                usage,
                DONE,
            ],
            "expect": {"text": "Sunny in Tokyo.", "stop_reason": "stop"},
        },
        "reasoning": {
            "description": "An OpenAI-compatible server (vLLM, DeepSeek) streams reasoning_content.",
            "events": [
                chat({"role": "assistant", "content": None, "reasoning_content": "The user"}),
                chat({"reasoning_content": " wants weather."}),
                chat({"content": "Sunny."}),
                chat({}, "stop"),
                usage,
                DONE,
            ],
            "expect": {
                "text": "Sunny.",
                "reasoning": "The user wants weather.",
                "parts": [["reasoning", None], ["text", None]],
            },
        },
        "parallel_calls": {
            "events": [
                chat({"role": "assistant", "content": None}),
                chat(chat_call(0, "call_DdmO9pD3xa9XTPNJ32zg2hcA", "lookup", "")),
                chat(chat_call(0, None, None, '{"query"')),
                chat(chat_call(0, None, None, ': "tokyo"}')),
                chat(chat_call(1, "call_ABCDEF0123456789ghijklmn", "lookup", '{"qu')),
                chat(chat_call(1, None, None, 'ery": "paris"}')),
                chat({}, "tool_calls"),
                usage,
                DONE,
            ],
            "expect": {
                "calls": [["lookup", {"query": "tokyo"}], ["lookup", {"query": "paris"}]],
                "stop_reason": "tool_calls",
                "parts": [["call", 0], ["call", 1]],
            },
        },
        "text_then_call": {
            "events": [
                chat({"role": "assistant", "content": "Let me "}),
                chat({"content": "check."}),
                chat(chat_call(0, "call_1", "lookup", '{"query": "tokyo"}')),
                chat({}, "tool_calls"),
                usage,
                DONE,
            ],
            "expect": {
                "text": "Let me check.",
                "calls": [["lookup", {"query": "tokyo"}]],
                "parts": [["text", None], ["call", 0]],
            },
        },
    }


def openai_errors() -> dict[str, Any]:
    return {
        "rate": {
            "error": {
                "message": "Rate limit reached for gpt-4.1-mini in organization org-x "
                "on tokens per min (TPM): Limit 200000, Used 199000, Requested 2000.",
                "type": "tokens",
                "param": None,
                "code": "rate_limit_exceeded",
            }
        },
        "server": {
            "error": {
                "message": "The server had an error while processing your request.",
                "type": "server_error",
                "param": None,
                "code": None,
            }
        },
        "auth": {
            "error": {
                "message": "Incorrect API key provided: sk-test. You can find your API "
                "key at https://platform.openai.com/account/api-keys.",
                "type": "invalid_request_error",
                "param": None,
                "code": "invalid_api_key",
            }
        },
        "bad_request": {
            "error": {
                "message": "Invalid value for 'tool_choice': 'sometimes'.",
                "type": "invalid_request_error",
                "param": "tool_choice",
                "code": "invalid_value",
            }
        },
        "context_length": {
            "error": {
                "message": "This model's maximum context length is 128000 "
                "tokens. However, your messages resulted in 131072 tokens. "
                "Please reduce the length of the messages.",
                "type": "invalid_request_error",
                "param": "messages",
                "code": "context_length_exceeded",
            }
        },
    }


def responses_event(kind: str, seq: int, **data: Any) -> dict[str, Any]:
    return {"event": kind, "data": {"type": kind, "sequence_number": seq, **data}}


RESPONSE = {
    "id": "resp_67ccd2bed1ec8190b14f964abc0542670bb6a6b452d3795b",
    "object": "response",
    "created_at": 1741476542,
    "status": "in_progress",
    "error": None,
    "incomplete_details": None,
    "instructions": None,
    "model": "o4-mini-2025-04-16",
    "output": [],
    "parallel_tool_calls": True,
    "tool_choice": "auto",
    "tools": [],
    "usage": None,
    "store": False,
}
RESPONSES_USAGE = {
    "input_tokens": 328,
    "input_tokens_details": {"cached_tokens": 128},
    "output_tokens": 52,
    "output_tokens_details": {"reasoning_tokens": 24},
    "total_tokens": 380,
}


class Responses:
    def __init__(self) -> None:
        self.seq = 0
        self.events: list[dict[str, Any]] = []

    def add(self, kind: str, **data: Any) -> Responses:
        self.events.append(responses_event(kind, self.seq, **data))
        self.seq += 1
        return self

    def created(self) -> Responses:
        return self.add("response.created", response=RESPONSE).add(
            "response.in_progress", response=RESPONSE
        )

    def message(self, index: int, pieces: list[str]) -> Responses:
        item_id = f"msg_67ccd2bf17f0819081ff3bb2cf6508e6{index}"
        item = {
            "id": item_id,
            "type": "message",
            "status": "in_progress",
            "role": "assistant",
            "content": [],
        }
        self.add("response.output_item.added", output_index=index, item=item)
        self.add(
            "response.content_part.added",
            item_id=item_id,
            output_index=index,
            content_index=0,
            part={"type": "output_text", "text": "", "annotations": []},
        )
        for piece in pieces:
            self.add(
                "response.output_text.delta",
                item_id=item_id,
                output_index=index,
                content_index=0,
                delta=piece,
            )
        text = "".join(pieces)
        self.add(
            "response.output_text.done",
            item_id=item_id,
            output_index=index,
            content_index=0,
            text=text,
        )
        done = dict(
            item,
            status="completed",
            content=[{"type": "output_text", "text": text, "annotations": []}],
        )
        return self.add("response.output_item.done", output_index=index, item=done)

    def reasoning(self, index: int, summaries: list[list[str]]) -> Responses:
        item_id = f"rs_6876cf02e0bc8192b74af0fb64b715ff0{index}"
        item = {"id": item_id, "type": "reasoning", "summary": []}
        self.add("response.output_item.added", output_index=index, item=item)
        for number, pieces in enumerate(summaries):
            self.add(
                "response.reasoning_summary_part.added",
                item_id=item_id,
                output_index=index,
                summary_index=number,
                part={"type": "summary_text", "text": ""},
            )
            for piece in pieces:
                self.add(
                    "response.reasoning_summary_text.delta",
                    item_id=item_id,
                    output_index=index,
                    summary_index=number,
                    delta=piece,
                )
        done = dict(
            item,
            summary=[{"type": "summary_text", "text": "".join(p)} for p in summaries],
            encrypted_content=ENC,
        )
        return self.add("response.output_item.done", output_index=index, item=done)

    def call(self, index: int, call_id: str, name: str, pieces: list[str]) -> Responses:
        item_id = f"fc_67ca09c6bedc8190a7abfec07b1a1332{index}"
        item = {
            "id": item_id,
            "type": "function_call",
            "status": "in_progress",
            "call_id": call_id,
            "name": name,
            "arguments": "",
        }
        self.add("response.output_item.added", output_index=index, item=item)
        for piece in pieces:
            self.add(
                "response.function_call_arguments.delta",
                item_id=item_id,
                output_index=index,
                delta=piece,
            )
        arguments = "".join(pieces)
        self.add(
            "response.function_call_arguments.done",
            item_id=item_id,
            output_index=index,
            arguments=arguments,
        )
        done = dict(item, status="completed", arguments=arguments)
        return self.add("response.output_item.done", output_index=index, item=done)

    def completed(self) -> list[dict[str, Any]]:
        self.add(
            "response.completed", response=dict(RESPONSE, status="completed", usage=RESPONSES_USAGE)
        )
        return self.events

    def incomplete(self, reason: str) -> list[dict[str, Any]]:
        response = dict(
            RESPONSE,
            status="incomplete",
            incomplete_details={"reason": reason},
            usage=RESPONSES_USAGE,
        )
        self.add("response.incomplete", response=response)
        return self.events


def responses() -> dict[str, dict[str, Any]]:
    return {
        "cut": {
            "description": "The reply reaches max_output_tokens: response.incomplete.",
            "events": Responses()
            .created()
            .message(0, ["Sunny in", " Tokyo, with"])
            .incomplete("max_output_tokens"),
            "expect": {"text": "Sunny in Tokyo, with", "stop_reason": "max_output_tokens"},
        },
        "blocked": {
            "description": "The content filter stops the reply: response.incomplete.",
            "events": Responses().created().message(0, ["Sunny in"]).incomplete("content_filter"),
            "expect": {"text": "Sunny in", "stop_reason": "content_filter"},
        },
        "text": {
            "events": Responses().created().message(0, ["Sunny in", " Tokyo."]).completed(),
            "expect": {
                "text": "Sunny in Tokyo.",
                "stop_reason": "completed",
                "parts": [["text", "msg_67ccd2bf17f0819081ff3bb2cf6508e60"]],
            },
        },
        "reasoning": {
            "events": Responses()
            .created()
            .reasoning(0, [["**Checking", " weather**"], ["Need a lookup."]])
            .message(1, ["Sunny."])
            .completed(),
            "expect": {
                "text": "Sunny.",
                "reasoning": "**Checking weather**\n\nNeed a lookup.",
                "parts": [["reasoning", ENC], ["text", "msg_67ccd2bf17f0819081ff3bb2cf6508e61"]],
            },
        },
        "parallel_calls": {
            "events": Responses()
            .created()
            .reasoning(0, [["Two cities."]])
            .call(1, "call_tokyo", "lookup", ['{"query"', ': "tokyo"}'])
            .call(2, "call_paris", "lookup", ['{"qu', 'ery": "paris"}'])
            .completed(),
            "expect": {
                "calls": [["lookup", {"query": "tokyo"}], ["lookup", {"query": "paris"}]],
                "reasoning": "Two cities.",
                "parts": [["reasoning", ENC], ["call", 0], ["call", 1]],
                "call_ids": ["call_tokyo", "call_paris"],
            },
        },
        "text_then_call": {
            "events": Responses()
            .created()
            .message(0, ["Let me ", "check."])
            .call(1, "call_1", "lookup", ['{"query": "tokyo"}'])
            .completed(),
            "expect": {
                "text": "Let me check.",
                "calls": [["lookup", {"query": "tokyo"}]],
                "parts": [["text", "msg_67ccd2bf17f0819081ff3bb2cf6508e60"], ["call", 0]],
            },
        },
    }


def anthropic_event(kind: str, **data: Any) -> dict[str, Any]:
    return {"event": kind, "data": {"type": kind, **data}}


ANTHROPIC_START = anthropic_event(
    "message_start",
    message={
        "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "claude-sonnet-4-5-20250929",
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {
            "input_tokens": 472,
            "cache_creation_input_tokens": 100,
            "cache_read_input_tokens": 2048,
            "output_tokens": 2,
        },
    },
)


def anthropic_end(stop: str, output: int = 89) -> list[dict[str, Any]]:
    return [
        anthropic_event(
            "message_delta",
            delta={"stop_reason": stop, "stop_sequence": None},
            usage={"output_tokens": output},
        ),
        anthropic_event("message_stop"),
    ]


def a_text(index: int, pieces: list[str]) -> list[dict[str, Any]]:
    return [
        anthropic_event(
            "content_block_start", index=index, content_block={"type": "text", "text": ""}
        ),
        *[
            anthropic_event(
                "content_block_delta", index=index, delta={"type": "text_delta", "text": p}
            )
            for p in pieces
        ],
        anthropic_event("content_block_stop", index=index),
    ]


def a_thinking(index: int, pieces: list[str], signature: str) -> list[dict[str, Any]]:
    return [
        anthropic_event(
            "content_block_start",
            index=index,
            content_block={"type": "thinking", "thinking": "", "signature": ""},
        ),
        *[
            anthropic_event(
                "content_block_delta", index=index, delta={"type": "thinking_delta", "thinking": p}
            )
            for p in pieces
        ],
        anthropic_event(
            "content_block_delta",
            index=index,
            delta={"type": "signature_delta", "signature": signature},
        ),
        anthropic_event("content_block_stop", index=index),
    ]


def a_tool(index: int, id: str, name: str, pieces: list[str]) -> list[dict[str, Any]]:
    return [
        anthropic_event(
            "content_block_start",
            index=index,
            content_block={"type": "tool_use", "id": id, "name": name, "input": {}},
        ),
        *[
            anthropic_event(
                "content_block_delta",
                index=index,
                delta={"type": "input_json_delta", "partial_json": p},
            )
            for p in ["", *pieces]
        ],
        anthropic_event("content_block_stop", index=index),
    ]


PING = anthropic_event("ping")


def anthropic() -> dict[str, dict[str, Any]]:
    return {
        "cut": {
            "description": "The reply reaches max_tokens (stop_reason max_tokens).",
            "events": [
                ANTHROPIC_START,
                *a_text(0, ["Sunny in", " Tokyo, with"]),
                *anthropic_end("max_tokens"),
            ],
            "expect": {"text": "Sunny in Tokyo, with", "stop_reason": "max_tokens"},
        },
        "blocked": {
            "description": "The safety classifiers stop the reply (stop_reason refusal).",
            "events": [ANTHROPIC_START, *a_text(0, ["Sunny in"]), *anthropic_end("refusal")],
            "expect": {"text": "Sunny in", "stop_reason": "refusal"},
        },
        "text": {
            "events": [
                ANTHROPIC_START,
                *a_text(0, ["Sunny in", " Tokyo."])[:1],
                PING,
                *a_text(0, ["Sunny in", " Tokyo."])[1:],
                *anthropic_end("end_turn"),
            ],
            "expect": {
                "text": "Sunny in Tokyo.",
                "stop_reason": "end_turn",
                "id": "msg_01XFDUDYJgAACzvnptvVoYEL",
                "usage": {
                    "input_tokens": 2620,
                    "output_tokens": 89,
                    "cache_read_tokens": 2048,
                    "cache_write_tokens": 100,
                },
            },
        },
        "reasoning": {
            "description": "Extended thinking: a signed thinking block, a redacted one, text.",
            "events": [
                ANTHROPIC_START,
                *a_thinking(0, ["Let me think", " about Tokyo."], SIG_A),
                anthropic_event(
                    "content_block_start",
                    index=1,
                    content_block={"type": "redacted_thinking", "data": SIG_R},
                ),
                anthropic_event("content_block_stop", index=1),
                *a_text(2, ["Sunny."]),
                *anthropic_end("end_turn"),
            ],
            "expect": {
                "text": "Sunny.",
                "reasoning": "Let me think about Tokyo.",
                "parts": [["reasoning", SIG_A], ["redacted", SIG_R], ["text", None]],
            },
        },
        "parallel_calls": {
            "events": [
                ANTHROPIC_START,
                *a_thinking(0, ["Two cities."], SIG_A),
                *a_tool(1, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "lookup", ['{"query"', ': "tokyo"}']),
                *a_tool(2, "toolu_01ABCDEFghijklmnopqrstuv", "lookup", ['{"qu', 'ery": "paris"}']),
                *anthropic_end("tool_use"),
            ],
            "expect": {
                "calls": [["lookup", {"query": "tokyo"}], ["lookup", {"query": "paris"}]],
                "stop_reason": "tool_use",
                "reasoning": "Two cities.",
                "parts": [["reasoning", SIG_A], ["call", 0], ["call", 1]],
            },
        },
        "text_then_call": {
            "events": [
                ANTHROPIC_START,
                *a_text(0, ["Let me ", "check."]),
                *a_tool(1, "toolu_01T1x1fJ34qAmk2tNTrN7Up6", "lookup", ['{"query": "tokyo"}']),
                *anthropic_end("tool_use"),
            ],
            "expect": {
                "text": "Let me check.",
                "calls": [["lookup", {"query": "tokyo"}]],
                "parts": [["text", None], ["call", 0]],
            },
        },
    }


def anthropic_errors() -> dict[str, Any]:
    def error(kind: str, message: str) -> dict[str, Any]:
        return {
            "type": "error",
            "error": {"type": kind, "message": message},
            "request_id": "req_011CSHoEeqs5C35K2UUqR7Fy",
        }

    return {
        "rate": error(
            "rate_limit_error",
            "This request would exceed the rate limit for your "
            "organization of 50,000 input tokens per minute.",
        ),
        "server": error("api_error", "Internal server error"),
        "auth": error("authentication_error", "invalid x-api-key"),
        "bad_request": error(
            "invalid_request_error", "messages.1.content.0.thinking.signature: Field required"
        ),
        "context_length": error(
            "invalid_request_error", "prompt is too long: 208317 tokens > 200000 maximum"
        ),
    }


def gemini_chunk(
    parts: list[dict[str, Any]], finish: str | None = None, usage: bool = False
) -> dict[str, Any]:
    candidate: dict[str, Any] = {"content": {"parts": parts, "role": "model"}, "index": 0}
    if finish:
        candidate["finishReason"] = finish
    data: dict[str, Any] = {
        "candidates": [candidate],
        "modelVersion": "gemini-2.5-flash",
        "responseId": "mjbZaPqWIPCw1MkPv9OSgQk",
    }
    if usage:
        data["usageMetadata"] = {
            "promptTokenCount": 412,
            "candidatesTokenCount": 31,
            "totalTokenCount": 500,
            "cachedContentTokenCount": 256,
            "thoughtsTokenCount": 57,
            "promptTokensDetails": [{"modality": "TEXT", "tokenCount": 412}],
        }
    return {"data": data}


def gemini() -> dict[str, dict[str, Any]]:
    blocked = gemini_chunk([], "SAFETY", usage=True)
    del blocked["data"]["candidates"][0]["content"]  # a blocked candidate has no content
    blocked["data"]["candidates"][0]["safetyRatings"] = [
        {"category": "HARM_CATEGORY_DANGEROUS_CONTENT", "probability": "HIGH", "blocked": True}
    ]
    return {
        "prompt_blocked": {
            "description": "The prompt is blocked: promptFeedback.blockReason, no candidates.",
            "events": [
                {
                    "data": {
                        "promptFeedback": {
                            "blockReason": "PROHIBITED_CONTENT",
                            "blockReasonMessage": "The prompt was blocked.",
                        },
                        "usageMetadata": {"promptTokenCount": 412, "totalTokenCount": 412},
                        "modelVersion": "gemini-2.5-flash",
                        "responseId": "mjbZaPqWIPCw1MkPv9OSgQk",
                    }
                }
            ],
            "expect": {
                "error": "ModelRequestError",
                "message": "blocked the prompt (block reason PROHIBITED_CONTENT: The prompt "
                "was blocked.); the model was not asked. Rephrase",
            },
        },
        "cut": {
            "description": "The reply reaches maxOutputTokens (finishReason MAX_TOKENS).",
            "events": [
                gemini_chunk([{"text": "Sunny in"}]),
                gemini_chunk([{"text": " Tokyo, with"}], "MAX_TOKENS", usage=True),
            ],
            "expect": {"text": "Sunny in Tokyo, with", "stop_reason": "MAX_TOKENS"},
        },
        "blocked": {
            "description": "The safety filter stops the reply (finishReason SAFETY, no content).",
            "events": [gemini_chunk([{"text": "Sunny in"}]), blocked],
            "expect": {"text": "Sunny in", "stop_reason": "SAFETY"},
        },
        "text": {
            "events": [
                gemini_chunk([{"text": "Sunny in"}]),
                gemini_chunk([{"text": " Tokyo."}], "STOP", usage=True),
            ],
            "expect": {
                "text": "Sunny in Tokyo.",
                "stop_reason": "STOP",
                "id": "mjbZaPqWIPCw1MkPv9OSgQk",
                "usage": {
                    "input_tokens": 412,
                    "output_tokens": 88,
                    "cache_read_tokens": 256,
                    "reasoning_tokens": 57,
                },
            },
        },
        "reasoning": {
            "description": "Thought summaries (include_thoughts) and a signature on the text; "
            "the signature arrives on a last, empty text part.",
            "events": [
                gemini_chunk([{"text": "**Weather**\nThe user", "thought": True}]),
                gemini_chunk([{"text": " asks about Tokyo.", "thought": True}]),
                gemini_chunk([{"text": "Sunny"}]),
                gemini_chunk(
                    [
                        {
                            "text": ".",
                        }
                    ]
                ),
                gemini_chunk([{"text": "", "thoughtSignature": SIG_G}], "STOP", usage=True),
            ],
            "expect": {
                "text": "Sunny.",
                "reasoning": "**Weather**\nThe user asks about Tokyo.",
                "parts": [["reasoning", None], ["text", SIG_G]],
            },
        },
        "parallel_calls": {
            "description": "Gemini 3: the first function call of a step carries the signature.",
            "events": [
                gemini_chunk(
                    [
                        {
                            "functionCall": {"name": "lookup", "args": {"query": "tokyo"}},
                            "thoughtSignature": SIG_G,
                        }
                    ]
                ),
                gemini_chunk(
                    [{"functionCall": {"name": "lookup", "args": {"query": "paris"}}}],
                    "STOP",
                    usage=True,
                ),
            ],
            "expect": {
                "calls": [["lookup", {"query": "tokyo"}], ["lookup", {"query": "paris"}]],
                "parts": [["call", 0, SIG_G], ["call", 1]],
            },
        },
        "text_then_call": {
            "events": [
                gemini_chunk([{"text": "Let me check."}]),
                gemini_chunk(
                    [
                        {
                            "functionCall": {"name": "lookup", "args": {"query": "tokyo"}},
                            "thoughtSignature": SIG_G2,
                        }
                    ],
                    "STOP",
                    usage=True,
                ),
            ],
            "expect": {
                "text": "Let me check.",
                "calls": [["lookup", {"query": "tokyo"}]],
                "parts": [["text", None], ["call", 0, SIG_G2]],
            },
        },
    }


def gemini_errors() -> dict[str, Any]:
    def error(code: int, status: str, message: str, *details: Any) -> dict[str, Any]:
        body: dict[str, Any] = {"code": code, "message": message, "status": status}
        if details:
            body["details"] = list(details)
        return {"error": body}

    retry = {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": "0.05s"}
    return {
        "rate": error(
            429,
            "RESOURCE_EXHAUSTED",
            "You exceeded your current quota, please check your plan and billing details.",
            retry,
        ),
        "server": error(
            500,
            "INTERNAL",
            "An internal error has occurred. Please retry or "
            "report in https://developers.generativeai.google/guide/troubleshooting",
        ),
        "auth": error(
            403,
            "PERMISSION_DENIED",
            "Method doesn't allow unregistered callers "
            "(callers without established identity). Please use API Key or other form "
            "of API consumer identity to call this API.",
        ),
        "bad_request": error(
            400,
            "INVALID_ARGUMENT",
            "Function call is missing a thought_signature in functionCall parts.",
        ),
        "context_length": error(
            400,
            "INVALID_ARGUMENT",
            "The input token count (1210000) "
            "exceeds the maximum number of tokens allowed (1048576).",
        ),
    }


PROVIDERS = {
    "openai": (openai, openai_errors),
    "openai-responses": (responses, openai_errors),
    "anthropic": (anthropic, anthropic_errors),
    "gemini": (gemini, gemini_errors),
}
CLASSES = {
    "auth": "ModelAuthError",
    "bad_request": "ModelRequestError",
    "context_length": "ContextLengthError",
}
STATUS = {"auth": 401, "bad_request": 400, "context_length": 400}


def second_piece(events: list[dict[str, Any]]) -> int:
    """The position of the event that streams " Tokyo." (the text's second piece)."""
    return next(i for i, e in enumerate(events) if '" Tokyo."' in json.dumps(e["data"]))


def malformed(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stream with the second text piece's JSON cut in the middle."""
    at = second_piece(events)
    cut = dict(events[at])
    cut["data"] = json.dumps(cut["data"], separators=(",", ":"))[:25]
    return [*events[:at], cut, *events[at + 1 :]]


def malformed_first(events: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The stream with its first event's JSON cut in the middle (nothing arrived before)."""
    cut = dict(events[0])
    cut["data"] = json.dumps(cut["data"], separators=(",", ":"))[:25]
    return [cut, *events[1:]]


def write() -> None:
    for provider, (streams, errors) in PROVIDERS.items():
        folder = HERE / provider
        folder.mkdir(exist_ok=True)
        made = streams()
        bodies = errors()
        text = made["text"]
        for name, fixture in made.items():
            fixture = {"provider": provider, **fixture}
            fixture["replies"] = [{"events": fixture.pop("events")}]
            dump(folder / f"{name}.json", fixture)
        rate_headers = {"retry-after": "0.05"} if provider != "gemini" else {}
        dump(
            folder / "rate_limited.json",
            {
                "provider": provider,
                "description": "A 429 with retry-after, then the answer: the retry is reported.",
                "replies": [
                    {"status": 429, "headers": rate_headers, "body": bodies["rate"]},
                    {"events": text["events"]},
                ],
                "expect": dict(text["expect"], retries=[[429, 0.05]]),
            },
        )
        dump(
            folder / "server_error.json",
            {
                "provider": provider,
                "description": "A 500, then the answer: retried with backoff.",
                "replies": [{"status": 500, "body": bodies["server"]}, {"events": text["events"]}],
                "expect": dict(text["expect"], retries=[[500, None]]),
            },
        )
        for name in ERRORS:
            status = 403 if provider == "gemini" and name == "auth" else STATUS[name]
            dump(
                folder / f"{name}.json",
                {
                    "provider": provider,
                    "replies": [{"status": status, "body": bodies[name]}],
                    "expect": {
                        "error": CLASSES[name],
                        "status": status,
                        "message": message(bodies[name]),
                    },
                },
            )
        dump(
            folder / "malformed.json",
            {
                "provider": provider,
                "description": "An event's JSON is cut short: the stream is broken, what arrived "
                "before is kept.",
                "replies": [{"events": malformed(text["events"])}],
                "expect": {"error": "ModelStreamBroken", "partial_text": "Sunny in"},
            },
        )
        dump(
            folder / "malformed_first.json",
            {
                "provider": provider,
                "description": "The first event's JSON is cut short: the stream is broken, as "
                "when a later one is (not an unavailable model).",
                "replies": [{"events": malformed_first(text["events"])}],
                "expect": {"error": "ModelStreamBroken"},
            },
        )
        dump(
            folder / "dropped.json",
            {
                "provider": provider,
                "description": "The connection drops in the middle of the text.",
                "replies": [{"events": text["events"], "drop_after": second_piece(text["events"])}],
                "expect": {"error": "ModelStreamBroken", "partial_text": "Sunny in"},
            },
        )
        dump(
            folder / "slow.json",
            {
                "provider": provider,
                "description": "The first events, then the stream stays open: an interrupt must "
                "close it.",
                "replies": [
                    {"events": text["events"][: second_piece(text["events"])], "hold": True}
                ],
                "expect": {"interrupted": True, "partial_text": "Sunny in"},
            },
        )


def message(body: dict[str, Any]) -> str:
    return str(body["error"]["message"])


def dump(path: Path, data: dict[str, Any]) -> None:
    path.write_text(json.dumps(data, indent=1, ensure_ascii=False) + "\n", encoding="utf-8")


if __name__ == "__main__":
    write()
