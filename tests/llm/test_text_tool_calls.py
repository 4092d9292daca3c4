"""Tool calls a model wrote into its text: the shapes local models use, validated against the
offered tools. Real-model responses are replayed from tests/data/recorded/ in
``test_recorded_agent.py``; these are the shapes one by one."""

from __future__ import annotations

from veil.llm.messages import ToolSpec
from veil.llm.text_tool_calls import recover

READ = ToolSpec(
    "read",
    "Read a file.",
    {
        "type": "object",
        "properties": {"path": {"type": "string"}, "limit": {"type": "integer"}},
        "required": ["path"],
        "additionalProperties": False,
    },
)
BASH = ToolSpec(
    "bash",
    "Run a command.",
    {"type": "object", "properties": {"command": {"type": "string"}}, "required": ["command"]},
)
TOOLS = [READ, BASH]


def test_qwen_hermes_tags() -> None:
    text = (
        "Let me look.\n<tool_call>\n"
        '{"name": "read", "arguments": {"path": "calc.py"}}\n</tool_call>'
    )
    found = recover(text, TOOLS)
    assert [(c.name, c.arguments) for c in found.calls] == [("read", {"path": "calc.py"})]
    assert found.content == "Let me look."


def test_several_tags_and_string_arguments() -> None:
    text = (
        '<tool_call>{"name": "read", "arguments": "{\\"path\\": \\"a.py\\"}"}</tool_call>'
        '<tool_call>{"name": "bash", "arguments": {"command": "ls"}}</tool_call>'
    )
    found = recover(text, TOOLS)
    assert [c.name for c in found.calls] == ["read", "bash"]
    assert found.calls[0].arguments == {"path": "a.py"}
    assert [c.id for c in found.calls] == ["text_1", "text_2"]


def test_a_fenced_json_block_and_the_function_wrapper() -> None:
    text = (
        "I will run the tests.\n```json\n"
        '{"function": {"name": "bash", "parameters": {"command": "python -m unittest"}}}\n```'
    )
    found = recover(text, TOOLS)
    assert [(c.name, c.arguments) for c in found.calls] == [
        ("bash", {"command": "python -m unittest"})
    ]
    assert found.content == "I will run the tests."


def test_a_bare_object_and_a_list() -> None:
    assert recover('{"name": "read", "arguments": {"path": "x"}}', TOOLS).calls[0].name == "read"
    listed = recover(
        '[{"name": "read", "arguments": {"path": "x"}}, '
        '{"name": "bash", "arguments": {"command": "pwd"}}]',
        TOOLS,
    )
    assert [c.name for c in listed.calls] == ["read", "bash"]


def test_unknown_tools_and_bad_arguments_are_not_calls() -> None:
    unknown = recover('<tool_call>{"name": "rm", "arguments": {"path": "/"}}</tool_call>', TOOLS)
    assert unknown.calls == () and "'rm' is not an offered tool" in unknown.problems
    bad = recover('{"name": "read", "arguments": {"path": 3, "mode": "x"}}', TOOLS)
    assert bad.calls == () and any("read:" in p for p in bad.problems)


def test_code_and_prose_are_not_calls() -> None:
    """What the 1.5B model answered after a failing test run: prose with a fenced code block."""
    text = (
        "To fix the `test_add` function, replace the `add` function:\n\n```python\n"
        "def add(a, b):\n    return a + b\n```\n\nThen run `python -m unittest`."
    )
    found = recover(text, TOOLS)
    assert found.calls == () and found.content == text
    assert recover('The config is {"debug": true}.', TOOLS).calls == ()
    assert recover("no tools here", []).calls == ()
