{
  "format": "amber.session",
  "version": 1,
  "session_id": "x",
  "seq": 19,
  "events": [
    {
      "kind": "message_added",
      "session_id": "x",
      "seq": 1,
      "at": "2026-05-27T12:50:01+00:00",
      "message": {
        "id": "m1",
        "session_id": "x",
        "role": "user",
        "type": "text",
        "status": "pending_agent",
        "created_at": "2026-05-27T12:50:01+00:00",
        "content": "question 1: run the tests",
        "sender": "Chii",
        "parent_id": null,
        "turn_id": null,
        "chatbot_id": "",
        "channel_id": "",
        "tool_call": null,
        "tool_call_id": null,
        "is_error": false,
        "error_type": null,
        "attachments": [],
        "browser_elements": [],
        "metadata": {},
        "event_seq": null,
        "active": true
      }
    },
    {
      "kind": "turn_started",
      "session_id": "x",
      "seq": 2,
      "at": "2026-05-27T12:50:02+00:00",
      "turn_id": "t2"
    },
    {
      "kind": "message_added",
      "session_id": "x",
      "seq": 3,
      "at": "2026-05-27T12:50:03+00:00",
      "message": {
        "id": "m3",
        "session_id": "x",
        "role": "assistant",
        "type": "thought",
        "status": "responded",
        "created_at": "2026-05-27T12:50:03+00:00",
        "content": "I should run pytest.",
        "sender": "Amber",
        "parent_id": null,
        "turn_id": "t2",
        "chatbot_id": "",
        "channel_id": "",
        "tool_call": null,
        "tool_call_id": null,
        "is_error": false,
        "error_type": null,
        "attachments": [],
        "browser_elements": [],
        "metadata": {},
        "event_seq": null,
        "active": true
      }
    },
    {
      "kind": "message_added",
      "session_id": "x",
      "seq": 4,
      "at": "2026-05-27T12:50:04+00:00",
      "message": {
        "id": "m4",
        "session_id": "x",
        "role": "tool",
        "type": "tool_call",
        "status": "responded",
        "created_at": "2026-05-27T12:50:04+00:00",
        "content": "",
        "sender": "Amber",
        "parent_id": null,
        "turn_id": "t2",
        "chatbot_id": "",
        "channel_id": "",
        "tool_call": {
          "id": "call4",
          "name": "sh",
          "arguments": {
            "command": "pytest -q"
          },
          "index": 0
        },
        "tool_call_id": null,
        "is_error": false,
        "error_type": null,
        "attachments": [],
        "browser_elements": [],
        "metadata": {},
        "event_seq": null,
        "active": true
      }
    },
    {
      "kind": "message_added",
      "session_id": "x",
      "seq": 5,
      "at": "2026-05-27T12:50:05+00:00",
      "message": {
        "id": "m5",
        "session_id": "x",
        "role": "tool",
        "type": "tool_result",
        "status": "responded",
        "created_at": "2026-05-27T12:50:05+00:00",
        "content": "5 passed in 0.42s",
        "sender": "sh",
        "parent_id": "m4",
        "turn_id": "t2",
        "chatbot_id": "",
        "channel_id": "",
        "tool_call": null,
        "tool_call_id": "call4",
        "is_error": false,
        "error_type": null,
        "attachments": [],
        "browser_elements": [],
        "metadata": {},
        "event_seq": null,
        "active": true
      }
    },
    {
      "kind": "message_added",
      "session_id": "x",
      "seq": 6,
      "at": "2026-05-27T12:50:06+00:00",
      "message": {
        "id": "m6",
        "session_id": "x",
        "role": "assistant",
        "type": "text",
        "status": "pending",
        "created_at": "2026-05-27T12:50:06+00:00",
        "content": "All five tests pass.",
        "sender": "Amber",
        "parent_id": null,
        "turn_id": "t2",
        "chatbot_id": "",
        "channel_id": "",
        "tool_call": null,
        "tool_call_id": null,
        "is_error": false,
        "error_type": null,
        "attachments": [],
        "browser_elements": [],
        "metadata": {},
        "event_seq": null,
        "active": true
      }
    },
    {
      "kind": "turn_ended",
      "session_id": "x",
      "seq": 7,
      "at": "2026-05-27T12:50:07+00:00",
      "turn_id": "t2",
      "outcome": "processed",
      "reason": null,
      "metrics": {
        "tool_calls": 1
      },
      "duration_ms": 1234.5,
      "partial": []
    },
    {
      "kind": "status_changed",
      "session_id": "x",
      "seq": 8,
      "at": "2026-05-27T12:50:08+00:00",
      "message_id": "m3",
      "expected": "responded",
      "status": "delivered"
    },
    {
      "kind": "metadata_updated",
      "session_id": "x",
      "seq": 9,
      "at": "2026-05-27T12:50:09+00:00",
      "message_id": "m6",
      "metadata": {
        "a": {
          "nested": [
            1,
            2.5,
            null,
            "é"
          ]
        },
        "m": true,
        "z": 1
      }
    },
    {
      "kind": "status_changed",
      "session_id": "x",
      "seq": 10,
      "at": "2026-05-27T12:50:10+00:00",
      "message_id": "m4",
      "expected": "responded",
      "status": "delivered"
    },
    {
      "kind": "status_changed",
      "session_id": "x",
      "seq": 11,
      "at": "2026-05-27T12:50:11+00:00",
      "message_id": "m5",
      "expected": "responded",
      "status": "delivered"
    },
    {
      "kind": "status_changed",
      "session_id": "x",
      "seq": 12,
      "at": "2026-05-27T12:50:12+00:00",
      "message_id": "m6",
      "expected": "pending",
      "status": "delivered"
    },
    {
      "kind": "message_added",
      "session_id": "x",
      "seq": 13,
      "at": "2026-05-27T12:50:13+00:00",
      "message": {
        "id": "qa12",
        "session_id": "x",
        "role": "user",
        "type": "text",
        "status": "pending_agent",
        "created_at": "2026-05-27T12:50:13+00:00",
        "content": "and the weather?",
        "sender": "Chii",
        "parent_id": null,
        "turn_id": null,
        "chatbot_id": "",
        "channel_id": "",
        "tool_call": null,
        "tool_call_id": null,
        "is_error": false,
        "error_type": null,
        "attachments": [],
        "browser_elements": [],
        "metadata": {
          "a": 2,
          "b": [
            1,
            {
              "c": null
            }
          ]
        },
        "event_seq": null,
        "active": true
      }
    },
    {
      "kind": "turn_started",
      "session_id": "x",
      "seq": 14,
      "at": "2026-05-27T12:50:14+00:00",
      "turn_id": "ta12"
    },
    {
      "kind": "model_call_started",
      "session_id": "x",
      "seq": 15,
      "at": "2026-05-27T12:50:15+00:00",
      "operation_id": "op12",
      "source_key": "ta12#1",
      "turn_id": "ta12",
      "sequence": 1,
      "role": "assistant",
      "model": "scripted"
    },
    {
      "kind": "model_call_finished",
      "session_id": "x",
      "seq": 16,
      "at": "2026-05-27T12:50:16+00:00",
      "operation_id": "op12",
      "status": "completed",
      "duration_ms": 3.5,
      "usage": {
        "input_tokens": 9,
        "output_tokens": 4,
        "cache_read_tokens": 0
      },
      "content": "sunny",
      "reasoning": "",
      "tool_calls": [
        {
          "id": "c",
          "name": "sh",
          "arguments_json": "{\"a\": 1}"
        }
      ],
      "stop_reason": "end_turn",
      "error": null
    },
    {
      "kind": "message_added",
      "session_id": "x",
      "seq": 17,
      "at": "2026-05-27T12:50:17+00:00",
      "message": {
        "id": "ra12",
        "session_id": "x",
        "role": "assistant",
        "type": "text",
        "status": "pending",
        "created_at": "2026-05-27T12:50:17+00:00",
        "content": "Sunny, 21 °C.",
        "sender": "Amber",
        "parent_id": null,
        "turn_id": "ta12",
        "chatbot_id": "",
        "channel_id": "",
        "tool_call": null,
        "tool_call_id": null,
        "is_error": false,
        "error_type": null,
        "attachments": [],
        "browser_elements": [],
        "metadata": {},
        "event_seq": null,
        "active": true
      }
    },
    {
      "kind": "turn_ended",
      "session_id": "x",
      "seq": 18,
      "at": "2026-05-27T12:50:18+00:00",
      "turn_id": "ta12",
      "outcome": "processed",
      "reason": null,
      "metrics": {
        "tokens": 13,
        "tool_calls": 0
      },
      "duration_ms": 12.0,
      "partial": []
    },
    {
      "kind": "rolled_back",
      "session_id": "x",
      "seq": 19,
      "at": "2026-05-27T12:50:19+00:00",
      "to_seq": 3,
      "reason": null
    }
  ]
}
