"""What the transcript shows of a run: the assistant's Markdown, each edit and write as a unified
diff (also in the approval modal, before it runs), the end of a failing command's output as
print mode shows it, and a call's output unfolded one key away (ctrl+o, or enter on its line)."""

from __future__ import annotations

from pathlib import Path
from typing import cast

from tests.tui.conftest import make_app, run, run_turns, submit, wait_until, write_script
from veil.tui.app import VeilApp
from veil.tui.approval import ApprovalScreen
from veil.tui.widgets import AssistantText, ToolDetail

CALC = "def add(a, b):\n    return a - b\n\n\nprint(add(1, 2))\n"
FAILING = "echo collecting; echo 'FAILED test_add - assert 2 == 3'; echo '1 failed'; exit 1"
TURNS = [
    {
        "content": "## Plan\n\nFix **add** in `calc.py`.",
        "tool_calls": [
            {
                "name": "edit",
                "arguments": {
                    "path": "calc.py",
                    "old_text": "    return a - b",
                    "new_text": "    return a + b",
                },
            }
        ],
    },
    {
        "content": "Notes.",
        "tool_calls": [
            {"name": "write", "arguments": {"path": "NOTES.md", "content": "fixed\n"}},
            {"name": "write", "arguments": {"path": "old.txt", "content": "new text\n"}},
        ],
    },
    {"content": "Testing.", "tool_calls": [{"name": "bash", "arguments": {"command": FAILING}}]},
    {"content": "Still failing."},
]


def detail(app: VeilApp, call_id: str) -> str | None:
    """The text under a call's line (its diff, tail or output), None when there is none."""
    line = app.tool_line(call_id)
    assert line is not None
    return line.detail.source if line.detail is not None else None


def test_markdown_diffs_failing_tail_and_folded_output(repo: Path, tmp_path: Path) -> None:
    (repo / "calc.py").write_text(CALC)
    (repo / "old.txt").write_text("old text\n")
    app = make_app(repo, write_script(tmp_path / "s.json", TURNS))

    async def scenario() -> None:
        async with app.run_test(size=(100, 50)) as pilot:
            await run_turns(pilot, app, "fix add")
            # Markdown: rendered, not shown as its source.
            plan = next(w for w in app.transcript.children if isinstance(w, AssistantText))
            assert plan.source.startswith("## Plan")
            svg = app.export_screenshot()
            assert "**add**" not in svg and "##" not in svg and "Plan" in svg

            edit = detail(app, "call_1_1")
            assert edit is not None and edit.startswith("--- a/calc.py\n+++ b/calc.py\n@@")
            assert "\n-    return a - b\n+    return a + b\n" in edit
            assert detail(app, "call_2_1") == (
                "--- /dev/null\n+++ b/NOTES.md\n@@ -0,0 +1 @@\n+fixed\n"
            )
            assert "\n-old text\n+new text\n" in (detail(app, "call_2_2") or "")
            # A failing command: its last lines under it, as print mode shows them.
            assert (
                detail(app, "call_3_1") == "collecting\nFAILED test_add - assert 2 == 3\n1 failed"
            )

            # ctrl+o unfolds the latest call's whole output, and folds it back.
            await pilot.press("ctrl+o")
            assert (detail(app, "call_3_1") or "").endswith("1 failed\n[exit code 1]")
            await pilot.press("ctrl+o")
            assert (
                detail(app, "call_3_1") == "collecting\nFAILED test_add - assert 2 == 3\n1 failed"
            )
            # Enter on a focused line unfolds that one; a call with no summary gets one.
            line = app.tool_line("call_1_1")
            assert line is not None
            line.focus()
            await pilot.press("enter")
            assert (detail(app, "call_1_1") or "").startswith("Edited calc.py at line 2")
            await pilot.press("enter")
            assert detail(app, "call_1_1") == edit
            widgets = list(app.transcript.children)
            assert widgets.index(cast(ToolDetail, line.detail)) == widgets.index(line) + 1

    run(scenario())


def test_approval_shows_the_diff_a_change_would_make(repo: Path, tmp_path: Path) -> None:
    (repo / "calc.py").write_text(CALC)
    (repo / "old.txt").write_text("old text\n")
    app = make_app(repo, write_script(tmp_path / "s.json", TURNS), approve="ask")

    async def scenario() -> None:
        async with app.run_test(size=(100, 50)) as pilot:
            await submit(pilot, "fix add")
            await wait_until(pilot, lambda: isinstance(app.screen, ApprovalScreen))
            screen = cast(ApprovalScreen, app.screen)
            assert screen.diff is not None
            assert "\n-    return a - b\n+    return a + b\n" in screen.diff
            assert (repo / "calc.py").read_text() == CALC  # shown before it runs
            await pilot.press("y")
            await wait_until(
                pilot,
                lambda: (
                    isinstance(app.screen, ApprovalScreen)
                    and app.screen.arguments["path"] == "NOTES.md"
                ),
            )
            await pilot.press("y")
            await wait_until(
                pilot,
                lambda: (
                    isinstance(app.screen, ApprovalScreen)
                    and app.screen.arguments["path"] == "old.txt"
                ),
            )
            screen = cast(ApprovalScreen, app.screen)
            assert screen.diff is not None and "\n-old text\n+new text\n" in screen.diff
            await pilot.press("n")
            await wait_until(
                pilot,
                lambda: isinstance(app.screen, ApprovalScreen) and app.screen.tool_name == "bash",
            )
            assert cast(ApprovalScreen, app.screen).diff is None  # a command shows its arguments
            await pilot.press("n")
            await wait_until(pilot, lambda: not app.running)
            assert (repo / "old.txt").read_text() == "old text\n"

    run(scenario())
