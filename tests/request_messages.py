"""The messages of one small request with every kind of message a policy sends (two system messages, a
summary after the instruction, a tool call and its result, a working-memory anchor, a question and its
reply), for the tests of the merge rule and of each backend's rendering."""

from __future__ import annotations

SYSTEM = {"role": "system", "content": "You are an expense assistant."}
MEMORY = {"role": "system", "content": "<LONG_TERM_MEMORY>none</LONG_TERM_MEMORY>"}
TASK = {"role": "user", "content": "Itemize EXP-1."}
SUMMARY = {"role": "user", "content": "<EARLIER_STEPS_SUMMARY>\nopened\n</EARLIER_STEPS_SUMMARY>"}
CALL = {
    "role": "assistant",
    "content": "",
    "tool_calls": [{"id": "call_1", "type": "function", "function": {"name": "lookup", "arguments": '{"q": "x"}'}}],
}
RESULT = {"role": "tool", "tool_call_id": "call_1", "name": "lookup", "content": "found"}
ANCHOR = {"role": "user", "content": "<WORKING_MEMORY>progress</WORKING_MEMORY>"}
QUESTION = {"role": "assistant", "content": "Shall I?"}
REPLY = {"role": "user", "content": "Yes."}
