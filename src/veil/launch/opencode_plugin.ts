/**
 * Veil's hooks inside opencode (npm `opencode-ai`), for one run of `veil opencode`.
 *
 * `veil opencode` names this file in the run's `plugin` list (`OPENCODE_CONFIG_CONTENT`, as a
 * `file://` URL); opencode (a bun executable) loads it at start. It starts Veil's MCP server
 * (`VEIL_OPENCODE_MCP`, a JSON array: the command line of `veil mcp --project ROOT`) and sends
 * opencode's events to its `hook` tool (`veil_mcp.ts`, shared with pi's extension) — the
 * handlers `veil claude`'s hooks reach — with opencode's own tool names (`bash`, `edit`,
 * `read`…, which Veil's host vocabulary knows):
 *
 * - `chat.message` (the person's message, before it is saved): the memory briefing, or the
 *   record of a task asked again, is added to the message as a synthetic text part — the model
 *   reads it with the prompt, the TUI does not show it;
 * - `tool.execute.before`: a repeated failed edit, or any call at convergence level 3, is
 *   refused — the hook throws Veil's reason, which the model reads as the call's error;
 * - `tool.execute.after` (opencode runs it for a call that returned, its bash too whatever the
 *   exit status: `metadata.exit`): recorded as an attempt; the level's note is added to the
 *   output the model reads. At level 3 the session is aborted (`session.abort`), with the
 *   summary on stderr.
 *
 * A call whose tool threw (a read of a missing file) reaches no `after` hook in opencode
 * 1.18.33, so it is not recorded. Fail open: a server that does not start, an error or no
 * answer within the hooks' timeouts is no opinion.
 */
import { commandOf, startServer, VeilHooks, type Json, type Outcome } from "./veil_mcp.ts";

type Part = { id?: string; type: string; text?: string; synthetic?: boolean; [key: string]: unknown };
type Input = {
	client: { session: { abort(options: { path: { id: string } }): Promise<unknown> } };
	directory: string;
};
type ToolOutput = { title?: string; output?: unknown; metadata?: { exit?: unknown; [key: string]: unknown } };

const OWN = /^veil_/; // Veil's own MCP tools (expand, recall…): not attempts at the task

function say(line: string): void {
	process.stderr.write(`veil opencode: ${line}\n`);
}

/** A part id after every other of this millisecond (opencode's `prt_` + 12 hex digits of
 * time·4096 + a counter, then 14 random characters): the briefing follows the prompt. */
function partId(): string {
	const stamp = (BigInt(Date.now()) * 4096n + 4095n).toString(16).padStart(12, "0").slice(-12);
	const chars = "0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz";
	let tail = "";
	for (let i = 0; i < 14; i++) tail += chars[Math.floor(Math.random() * chars.length)];
	return `prt_${stamp}${tail}`;
}

/** An opencode tool result as Veil's hooks take it: its bash returns whatever the exit status,
 * the status in `metadata.exit`. */
function outcome(tool: string, result: ToolOutput): Outcome {
	const text = typeof result.output === "string" ? result.output : JSON.stringify(result.output ?? "");
	const exit = result.metadata?.exit;
	if (tool === "bash" && typeof exit === "number") return { text, exitCode: exit };
	return { text };
}

export default async function veil(input: Input): Promise<{ [hook: string]: unknown }> {
	const command = commandOf("VEIL_OPENCODE_MCP");
	if (command.length === 0) return {};
	let hooks: VeilHooks;
	try {
		const { client, tools } = await startServer(command, "veil-opencode");
		if (!tools.some((t) => t.name === "hook")) {
			client.close();
			say("no hooks: Veil's MCP server has no hook tool");
			return {};
		}
		hooks = new VeilHooks(client, "opencode", say);
	} catch (error) {
		say(`no hooks: ${(error as Error).message}`);
		return {};
	}
	const cwd = input.directory;
	const stopped = new Set<string>();
	const stop = async (session: string, summary: string) => {
		if (stopped.has(session)) return;
		stopped.add(session);
		say(summary); // what the person reads: the record, and that a new prompt steers
		try {
			await input.client.session.abort({ path: { id: session } });
		} catch (error) {
			say(`could not end the session: ${(error as Error).message}`);
		}
	};

	return {
		"chat.message": async (event: { sessionID: string }, output: { message: { id: string }; parts: Part[] }) => {
			const prompt = output.parts
				.filter((p) => p.type === "text" && !p.synthetic && typeof p.text === "string")
				.map((p) => p.text)
				.join("\n");
			if (!prompt.trim()) return;
			stopped.delete(event.sessionID);
			const found = await hooks.prompt(event.sessionID, cwd, prompt);
			if (!found.context) return;
			output.parts.push({
				id: partId(),
				messageID: output.message.id,
				sessionID: event.sessionID,
				type: "text",
				text: found.context,
				synthetic: true,
			});
		},
		"tool.execute.before": async (event: { tool: string; sessionID: string; callID: string }, output: { args: unknown }) => {
			if (OWN.test(event.tool)) return;
			const found = await hooks.before(event.sessionID, cwd, event.tool, output.args as Json, event.callID);
			if (found.stop) void stop(event.sessionID, found.stop); // level 3: refused, and the run ends
			if (found.block) throw new Error(found.block);
		},
		"tool.execute.after": async (event: { tool: string; sessionID: string; callID: string; args: unknown }, output: ToolOutput) => {
			if (OWN.test(event.tool)) return;
			const done = outcome(event.tool, output);
			const found = await hooks.after(event.sessionID, cwd, event.tool, event.args as Json, event.callID, done);
			if (found.context && typeof output.output === "string") output.output = `${output.output}\n\n${found.context}`;
			if (found.stop) await stop(event.sessionID, found.stop); // level 3: the model is not asked again
		},
	};
}
