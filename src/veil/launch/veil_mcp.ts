/**
 * Veil's MCP server, as the extensions Veil ships for hosts without MCP hooks use it: pi's
 * extension (`pi_extension.ts`) and opencode's plugin (`opencode_plugin.ts`) import this one
 * module. No dependency: node's and bun's `child_process` only.
 *
 * - {@link McpClient}: a JSON-RPC client over a child's stdin/stdout (MCP's stdio transport).
 * - {@link startServer}: `veil mcp --project ROOT` started and initialised, with its tools.
 * - {@link VeilHooks}: Veil's hooks (docs/claude-code.md) through the server's `hook` tool — the
 *   handlers Claude Code and Codex reach the same way — with Claude-Code-shaped payloads
 *   (`hook_event_name`, `tool_name` as the host names its tools, `tool_input`,
 *   `tool_response`, `session_id`, `cwd`), and the answer read back as a {@link Verdict}
 *   the host applies its own way. It fails open: an error, a server that is gone or an answer
 *   later than the event's timeout (`VEIL_HOOK_TIMEOUTS`, set by the launcher from Veil's hook
 *   table; 1 s when absent) is no opinion, with one line on stderr per kind of failure.
 */
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";

const PROTOCOL = "2025-06-18";
const START_TIMEOUT_MS = 60_000;
const DEFAULT_TIMEOUT_S = 1;

export type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Reply = { id?: number; result?: { [key: string]: Json }; error?: { message?: string } };
export type McpTool = { name: string; description?: string; inputSchema?: { [key: string]: Json } };

/** A JSON-RPC client over a child's stdin/stdout (MCP's stdio transport: one message a line). */
export class McpClient {
	private next = 1;
	private buffer = "";
	private waiting = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();
	private ended: Error | null = null;

	constructor(private readonly child: ChildProcessWithoutNullStreams) {
		child.stdout.setEncoding("utf8");
		child.stdout.on("data", (chunk: string) => this.read(chunk));
		child.stderr.resume(); // its notices (no model configured…) are not the host's output
		const end = (why: string) => {
			this.ended = new Error(why);
			for (const pending of this.waiting.values()) pending.reject(this.ended);
			this.waiting.clear();
		};
		child.on("error", (error) => end(`Veil's MCP server did not start: ${error.message}`));
		child.on("exit", (code, signal) => end(`Veil's MCP server exited (${signal ?? code})`));
		child.stdin.on("error", () => end("Veil's MCP server closed its input"));
	}

	private read(chunk: string): void {
		this.buffer += chunk;
		let newline = this.buffer.indexOf("\n");
		while (newline >= 0) {
			const line = this.buffer.slice(0, newline).trim();
			this.buffer = this.buffer.slice(newline + 1);
			newline = this.buffer.indexOf("\n");
			if (!line) continue;
			let reply: Reply;
			try {
				reply = JSON.parse(line) as Reply;
			} catch {
				continue;
			}
			const pending = reply.id === undefined ? undefined : this.waiting.get(reply.id);
			if (pending && reply.id !== undefined) {
				this.waiting.delete(reply.id);
				pending.resolve(reply);
			}
		}
	}

	request(method: string, params: { [key: string]: Json }, timeoutMs = 0): Promise<Reply> {
		if (this.ended) return Promise.reject(this.ended);
		const id = this.next++;
		return new Promise<Reply>((resolve, reject) => {
			const timer =
				timeoutMs > 0
					? setTimeout(() => {
							this.waiting.delete(id);
							reject(new Error(`Veil's MCP server did not answer ${method} in ${timeoutMs / 1000} s`));
						}, timeoutMs)
					: undefined;
			this.waiting.set(id, {
				resolve: (r) => (clearTimeout(timer), resolve(r)),
				reject: (e) => (clearTimeout(timer), reject(e)),
			});
			this.child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", id, method, params })}\n`);
		});
	}

	notify(method: string): void {
		if (!this.ended) this.child.stdin.write(`${JSON.stringify({ jsonrpc: "2.0", method })}\n`);
	}

	close(): void {
		this.child.stdin.end();
		this.child.kill();
	}
}

/** Veil's MCP server (`command`: its command line) started and initialised, with its tools. */
export async function startServer(command: string[], name: string): Promise<{ client: McpClient; tools: McpTool[] }> {
	const [program, ...args] = command;
	const child = spawn(program, args, { stdio: ["pipe", "pipe", "pipe"] });
	// the host ends its process when the run is over; the server must not keep it alive (it
	// ends on its own when its stdin closes with the host)
	child.unref();
	const client = new McpClient(child);
	const init = { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name, version: "1" } };
	const hello = await client.request("initialize", init, START_TIMEOUT_MS);
	if (hello.error) throw new Error(`Veil's MCP server refused to start: ${hello.error.message}`);
	client.notify("notifications/initialized");
	const listed = await client.request("tools/list", {}, START_TIMEOUT_MS);
	return { client, tools: (listed.result?.tools ?? []) as unknown as McpTool[] };
}

/** A server's command line from a variable holding it as a JSON array ([] when unset). */
export function commandOf(variable: string): string[] {
	try {
		const parsed = JSON.parse(process.env[variable] ?? "[]") as unknown;
		return Array.isArray(parsed) ? parsed.map(String) : [];
	} catch {
		return [];
	}
}

export type Event = "UserPromptSubmit" | "PreToolUse" | "PostToolUse" | "PostToolUseFailure";

/** What Veil's answer asks of the host: `context` for the model (the memory briefing, a
 * convergence note), `block` a call with this reason, `stop` the run with this summary. */
export type Verdict = { context?: string; block?: string; stop?: string };

/** One tool call's outcome as the host reports it: the text the model sees, the command's exit
 * status when the host gives one, and whether the tool failed (threw) otherwise. */
export type Outcome = { text: string; exitCode?: number; failed?: boolean };

/** Veil's hooks through the server's `hook` tool, for one host (`client`: `pi`, `opencode`). */
export class VeilHooks {
	private readonly timeouts: { [event: string]: number };
	private readonly said = new Set<string>();

	constructor(
		private readonly server: McpClient,
		private readonly client: string,
		private readonly say: (line: string) => void,
	) {
		let parsed: unknown = {};
		try {
			parsed = JSON.parse(process.env.VEIL_HOOK_TIMEOUTS ?? "{}");
		} catch {
			parsed = {};
		}
		this.timeouts = parsed && typeof parsed === "object" ? (parsed as { [event: string]: number }) : {};
	}

	/** The person's prompt: the memory briefing (on a session's first), the record of a task
	 * asked again. */
	prompt(sessionId: string, cwd: string, prompt: string): Promise<Verdict> {
		return this.call("UserPromptSubmit", { session_id: sessionId, cwd, prompt });
	}

	/** Before a call runs: blocked (a repeated failed edit; every call at level 3), or not. */
	before(sessionId: string, cwd: string, tool: string, input: Json, callId: string): Promise<Verdict> {
		return this.call("PreToolUse", { session_id: sessionId, cwd, tool_name: tool, tool_input: input, tool_use_id: callId });
	}

	/** After a call: recorded as an attempt (or a step), and what the level asks for. A
	 * command's exit status goes as Claude Code's hooks give it (`exit_code` beside its
	 * output); a tool that failed otherwise is a PostToolUseFailure with its error. */
	after(sessionId: string, cwd: string, tool: string, input: Json, callId: string, outcome: Outcome): Promise<Verdict> {
		const common = { session_id: sessionId, cwd, tool_name: tool, tool_input: input, tool_use_id: callId };
		if (outcome.exitCode !== undefined) {
			return this.call("PostToolUse", { ...common, tool_response: { stdout: outcome.text, exit_code: outcome.exitCode } });
		}
		if (outcome.failed) return this.call("PostToolUseFailure", { ...common, error: outcome.text });
		return this.call("PostToolUse", { ...common, tool_response: outcome.text });
	}

	private async call(event: Event, fields: { [key: string]: Json }): Promise<Verdict> {
		const seconds = this.timeouts[event] ?? DEFAULT_TIMEOUT_S;
		const args = { client: this.client, event, hook_event_name: event, ...fields };
		try {
			const reply = await this.server.request("tools/call", { name: "hook", arguments: args }, seconds * 1000);
			if (reply.error) throw new Error(reply.error.message ?? "the hook tool failed");
			const content = (reply.result?.content ?? []) as { type: string; text?: string }[];
			const text = content.map((c) => c.text ?? "").join("");
			return verdict(text ? (JSON.parse(text) as { [key: string]: Json }) : {});
		} catch (error) {
			const why = (error as Error).message;
			const kind = why.replace(/\d+(\.\d+)?/g, "N");
			if (!this.said.has(kind)) {
				this.said.add(kind);
				this.say(`no opinion from Veil's hooks (${why}); the agent goes on`);
			}
			return {};
		}
	}
}

/** A Claude-Code-shaped hook answer (`hookSpecificOutput`, `continue`, `stopReason`) as what
 * it asks of the host. */
export function verdict(answer: { [key: string]: Json }): Verdict {
	const out: Verdict = {};
	const specific = answer.hookSpecificOutput;
	if (specific && typeof specific === "object" && !Array.isArray(specific)) {
		if (specific.permissionDecision === "deny") out.block = String(specific.permissionDecisionReason ?? "Veil blocked this call");
		if (typeof specific.additionalContext === "string" && specific.additionalContext) out.context = specific.additionalContext;
	}
	if (answer.continue === false) out.stop = String(answer.stopReason ?? "Veil stopped the run");
	return out;
}
