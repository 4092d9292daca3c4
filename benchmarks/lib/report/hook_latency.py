"""The hook-latency section: Veil's hooks per tool call inside the real Claude Code."""

from __future__ import annotations

from typing import Any

from benchmarks.lib.report.common import ms
from benchmarks.lib.results import Loaded

Json = dict[str, Any]


def _gap_sentence(configs: dict[str, Json]) -> str:
    none = configs.get("none")
    if none is None or none["request_gap_ms"]["p50"] is None:
        return ""
    base = none["request_gap_ms"]["p50"]
    added = ", ".join(
        f"{c['request_gap_ms']['p50'] - base:+,.0f} ms with `{name}`"
        for name, c in configs.items()
        if name != "none"
    )
    return (
        f" End to end, the median gap between model requests is {base:,.0f} ms without "
        f"hooks; {added}."
    )


def table(result: Json) -> str:
    """The markdown the report shows, with what each number is."""
    configs: dict[str, Json] = result["configs"]
    lines = [
        "| hooks | tool calls | per tool call p50 ms | p95 | max | UserPromptSubmit ms "
        "| request gap p50 ms | p95 | session s | hooks failed / gave up |",
        "| --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    for name, c in configs.items():
        per, gap = c["per_tool_call_ms"], c["request_gap_ms"]
        lines.append(
            f"| {name} | {c['tool_calls']} | {ms(per['p50'])} | {ms(per['p95'])} "
            f"| {ms(per['max'])} | {ms(c['user_prompt_submit_ms'])} | {ms(gap['p50'])} "
            f"| {ms(gap['p95'])} | {c['seconds']:.1f} | {len(c['not_success'])} "
            f"/ {len(c['gave_up']) + c['server_gave_up']} |"
        )
    lines += [
        "",
        "| hooks | event | kind | n | p50 ms | p95 | max |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: |",
    ]
    for name, c in configs.items():
        for event, e in c["by_event"].items():
            lines.append(
                f"| {name} | {event} | {e['kind']} | {e['n']} | {ms(e['p50'])} "
                f"| {ms(e['p95'])} | {ms(e['max'])} |"
            )
    start = result["session_start"]
    lines += [
        "",
        "| process (`veil hook`, one per hook) | runs | p50 ms | p95 | max |",
        "| --- | ---: | ---: | ---: | ---: |",
    ]
    for name, s in start["wall_ms"].items():
        lines.append(f"| {name} | {s['n']} | {ms(s['p50'])} | {ms(s['p95'])} | {ms(s['max'])} |")
    wall = start["wall_ms"]
    mcp = configs["mcp_tool"]
    r = result["ratio_command_to_mcp_tool"]
    p95 = mcp["per_tool_call_ms"]["p95"]
    held = "met" if p95 is not None and p95 <= result["target_p95_ms"] else "NOT met"
    mix = ", ".join(f"{n} {label}" for label, n in result["mix"].items())
    m = result["machine"]
    lines += [
        "",
        f"Claude Code {result['claude_code']} (the real binary, headless, offline against the "
        f"scripted model server), one session per configuration in the same run: "
        f"{result['tool_calls']} scripted tool calls ({mix}). **Per tool call** is the sum of "
        "the durations of the hooks Claude Code ran for that call (PreToolUse + PostToolUse or "
        "PostToolUseFailure), read from its debug log: a command hook's duration as Claude "
        "Code logs it, an `mcp_tool` hook's from the log line of its call to the line of its "
        "outcome. **UserPromptSubmit** is the one prompt hook of the session (the project "
        f"briefing and memory; delivered: {mcp['briefing_delivered']}). **Request gap** is the "
        "time between consecutive model requests at the scripted server (reply, hooks, tool and "
        "Claude Code's own work); `none` has the MCP server but no hooks.",
        "",
        f"`mcp_tool` (what `veil install claude-code` installs) costs p50 "
        f"{ms(mcp['per_tool_call_ms']['p50'])} ms / p95 {ms(p95)} ms per tool call (target "
        f"≤ {result['target_p95_ms']:.0f} ms: {held}); one process per hook (`command`) costs "
        f"{r['per_tool_call_p50']}x that at p50 and {r['per_tool_call_p95']}x at p95, "
        f"{r['user_prompt_submit']}x for UserPromptSubmit, measured in the same run."
        + _gap_sentence(configs),
        "",
        "Veil installs no SessionStart hook (the briefing comes with the first prompt, the "
        "record after a compaction with the next hook), so a session start costs nothing. The "
        "command entry point that remains, `veil hook claude-code SessionStart`, as a "
        "subprocess with a `startup` payload (the handler returns at once) and with a `resume` "
        "payload of the recorded session, round-robin with `python -c pass` (the "
        f"interpreter's floor) after one discarded warm-up each: resume p50 "
        f"{ms(wall['SessionStart resume']['p50'])} ms, startup "
        f"{ms(wall['SessionStart startup']['p50'])} ms, floor "
        f"{ms(wall['python -c pass (floor)']['p50'])} ms.",
        "",
        f"Machine: {m['cpus']} cores, load average {m['load_average']['start']} at the start, "
        f"{m['load_average']['end']} at the end (other work on the machine shows in the "
        f"tails); Python {m['python']}; the run took {result['seconds']:.0f} s.",
    ]
    failures = [
        f"{name}: {f['event']} {f['status']} ({f['detail'][:80]})"
        for name, c in configs.items()
        for f in c["not_success"]
    ]
    if failures:
        lines += ["", "Hooks that did not succeed: " + "; ".join(failures) + "."]
    gave_up = [
        f"{name}: {', '.join(c['gave_up'] + ['(in veil mcp)'] * c['server_gave_up'])}"
        for name, c in configs.items()
        if c["gave_up"] or c["server_gave_up"]
    ]
    if gave_up:
        lines += [
            "",
            "Hooks that missed Veil's own deadline and answered nothing (`veil hook` gives up "
            "after 0.9 s of handler time, the `hook` tool after 0.8 s, 4 s for a prompt; the "
            "duration counted is the time until it gave up, so it understates the work): "
            + "; ".join(gave_up)
            + ".",
        ]
    return "\n".join(lines)


def section(loaded: Loaded, other: Loaded | None) -> str:
    return (
        "What Veil's hooks cost inside the real Claude Code (the pinned binary, headless and "
        "offline against the scripted model server): the `mcp_tool` hooks `veil install "
        "claude-code` installs, answered by the warm `veil mcp`, against the same handlers run "
        "as one `veil hook` process per hook, in the same run. Durations come from Claude "
        "Code's debug log.\n\n" + table(loaded.data)
    )
