#!/bin/sh
# Play Claude Code's part in a throw-away project: `veil install claude-code` over the user's
# own settings, then the installed hook commands fed the payloads of tests/data/claude_code/
# exactly as Claude Code runs a command hook (sh -c, the JSON on stdin), until the task circles
# to convergence level 2 and an identical edit is denied. Prints every answer; this is the
# transcript in docs/claude-code.md.
#
#   scripts/claude_code_session.sh [PROJECT_DIR]      (needs veil and python3 on PATH)
set -eu
REPO=$(cd "$(dirname "$0")/.." && pwd)
FIX="$REPO/tests/data/claude_code"
P=${1:-$(mktemp -d)/proj}
unset VEIL_MODEL CLAUDE_PROJECT_DIR || true
rm -rf "$P" && mkdir -p "$P/tests" "$P/.claude" && cd "$P"
printf 'def add(a, b):\n    return a - b\n' > calc.py
printf 'from calc import add\n\n\ndef test_add():\n    assert add(2, 3) == 5\n' > tests/test_calc.py
git init -q && git add . && git -c user.email=u@example.com -c user.name=u commit -qm init
cat > .claude/settings.json <<'JSON'
{"permissions": {"allow": ["Bash(pytest:*)"]},
 "hooks": {"PostToolUse": [{"matcher": "Edit", "hooks": [{"type": "command", "command": "echo formatted"}]}]}}
JSON
echo '$ veil install claude-code'
veil install claude-code

# hook EVENT FIXTURE [python statements changing the payload d]
hook() {
  event=$1 fixture=$2 change=${3:-pass}
  command=$(python3 -c "
import json
s = json.load(open('.claude/settings.json'))
print(next(h['command'] for g in s['hooks']['$event'] for h in g['hooks'] if 'hook claude-code' in h['command']))")
  echo "--- $event ($fixture${3:+; $3})"
  python3 -c "
import json
d = json.loads(open('$FIX/$fixture.json').read().replace('{project}', '$P')
               .replace('{session}', 'sess-1').replace('{transcript}', '$P/transcript.jsonl'))
$change
print(json.dumps(d))" | CLAUDE_PROJECT_DIR="$P" sh -c "$command"
}

hook SessionStart session_start_startup
hook UserPromptSubmit user_prompt_submit
hook PostToolUse post_tool_use_read
for n in 0 1 2 3; do
  hook PostToolUseFailure post_tool_use_failure_bash "d['tool_use_id'] = 'toolu_t$n'"
  hook PostToolUse post_tool_use_edit "d['tool_input']['new_string'] = 'return a + b  # try $((n + 1))'; d['tool_use_id'] = 'toolu_e$n'"
done
hook PostToolUseFailure post_tool_use_failure_bash "d['tool_use_id'] = 'toolu_t4'"
hook PreToolUse pre_tool_use_edit "d['tool_input']['new_string'] = 'return a + b  # try 4'"
hook PreToolUse pre_tool_use_edit "d['tool_input']['new_string'] = 'return b + a'"
cp "$FIX/transcript.jsonl" "$P/transcript.jsonl"
hook PreCompact pre_compact
hook UserPromptSubmit user_prompt_submit "d['session_id'] = 'sess-2'"
