/**
 * Veil inside pi (npm `@mariozechner/pi-coding-agent`), for one run of `veil pi`.
 *
 * `veil pi` starts pi with `-e <this file>` and three variables; pi loads this module (with
 * jiti: TypeScript, no build) before its first request. It
 *
 * 1. points the provider pi will use at Veil's proxy: `pi.registerProvider(NAME, { baseUrl })`
 *    with only a base URL overrides that provider's URL for every model it has, for this process
 *    only (nothing is written to `~/.pi/agent/models.json`). `VEIL_PI_PROVIDER` names the
 *    provider, `VEIL_PI_BASE_URL` is the proxy's base URL (the upstream's path kept).
 * 2. gives the model Veil's `expand` as the tool `veil_expand`, the name the proxy's stubs give
 *    (`[veil: read — … veil_expand veil://warm/… restores it]`). pi has no MCP client, so this
 *    module is one: it starts Veil's MCP server (`VEIL_PI_MCP`, a JSON array: the command line of
 *    `veil mcp --project ROOT`), takes the description and input schema of its `expand` tool —
 *    the verb catalogue defines them once for every surface — and answers each call with what
 *    the server's `expand` answers, the restored result byte for byte.
 *
 * Should the model be one of another provider (a `/model` switch), its requests would bypass
 * the proxy: one line on stderr says so. A server that does not start or has no `expand` is one
 * line on stderr; the provider is redirected all the same.
 */
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { spawn, type ChildProcessWithoutNullStreams } from "node:child_process";

const TOOL = "veil_expand";
const PROTOCOL = "2025-06-18";
const START_TIMEOUT_MS = 60_000;

type Json = null | boolean | number | string | Json[] | { [key: string]: Json };
type Reply = { id?: number; result?: { [key: string]: Json }; error?: { message?: string } };
type McpTool = { name: string; description?: string; inputSchema?: { [key: string]: Json } };

/** A JSON-RPC client over a child's stdin/stdout (MCP's stdio transport: one message a line). */
class McpClient {
	private next = 1;
	private buffer = "";
	private waiting = new Map<number, { resolve: (r: Reply) => void; reject: (e: Error) => void }>();
	private ended: Error | null = null;

	constructor(private readonly child: ChildProcessWithoutNullStreams) {
		child.stdout.setEncoding("utf8");
		child.stdout.on("data", (chunk: string) => this.read(chunk));
		child.stderr.resume(); // its notices (no model configured…) are not pi's output
		const end = (why: string) => {
			this.ended = new Error(why);
			for (const pending of this.waiting.values()) pending.reject(this.ended);
			this.waiting.clear();
		};
		child.on("error", (error) => end(`Veil's MCP server did not start: ${error.message}`));
		child.on("exit", (code, signal) => end(`Veil's MCP server exited (${signal ?? code})`));
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

function say(line: string): void {
	process.stderr.write(`veil pi: ${line}\n`);
}

/** Veil's MCP server started and its `expand` tool, or why not. */
async function startServer(command: string[]): Promise<{ client: McpClient; tool: McpTool }> {
	const [program, ...args] = command;
	const child = spawn(program, args, { stdio: ["pipe", "pipe", "pipe"] });
	// pi ends its process when the run is over; the server must not keep it alive (it ends on
	// its own when its stdin closes with pi)
	child.unref();
	const client = new McpClient(child);
	const init = { protocolVersion: PROTOCOL, capabilities: {}, clientInfo: { name: "veil-pi", version: "1" } };
	const hello = await client.request("initialize", init, START_TIMEOUT_MS);
	if (hello.error) throw new Error(`Veil's MCP server refused to start: ${hello.error.message}`);
	client.notify("notifications/initialized");
	const listed = await client.request("tools/list", {}, START_TIMEOUT_MS);
	const tools = (listed.result?.tools ?? []) as unknown as McpTool[];
	const tool = tools.find((t) => t.name === "expand");
	if (!tool) {
		client.close();
		throw new Error("Veil's MCP server offers no expand (no .veil/context.db in this project?)");
	}
	return { client, tool };
}

export default async function veil(pi: ExtensionAPI): Promise<void> {
	const provider = process.env.VEIL_PI_PROVIDER ?? "";
	const baseUrl = process.env.VEIL_PI_BASE_URL ?? "";
	if (provider && baseUrl) pi.registerProvider(provider, { baseUrl });

	const check = (model: { provider: string; id: string } | undefined) => {
		if (provider && model && model.provider !== provider) {
			say(`${model.provider}/${model.id} is not ${provider}'s: its requests do not go through Veil`);
		}
	};
	pi.on("session_start", async (_event, ctx) => check(ctx.model));
	pi.on("model_select", async (event) => check(event.model));

	let command: string[];
	try {
		command = JSON.parse(process.env.VEIL_PI_MCP ?? "[]") as string[];
	} catch {
		command = [];
	}
	if (command.length === 0) return;
	let server: { client: McpClient; tool: McpTool };
	try {
		server = await startServer(command);
	} catch (error) {
		say(`no ${TOOL} for the model: ${(error as Error).message}`);
		return;
	}
	const { client, tool } = server;
	pi.on("session_shutdown", async () => client.close());
	const description = tool.description ?? "Restore an evicted result from its stub's pointer.";
	pi.registerTool({
		name: TOOL,
		label: "Veil expand",
		description,
		promptSnippet: description,
		// the MCP server's JSON schema as it is: pi validates plain JSON schemas too
		parameters: (tool.inputSchema ?? { type: "object", properties: {} }) as never,
		async execute(_toolCallId, params) {
			const reply = await client.request("tools/call", { name: "expand", arguments: params as Json });
			if (reply.error) throw new Error(reply.error.message ?? "expand failed");
			const content = (reply.result?.content ?? []) as { type: string; text?: string }[];
			const text = content.map((c) => c.text ?? "").join("");
			if (reply.result?.isError) throw new Error(text || "expand failed");
			return { content: [{ type: "text", text }], details: {} };
		},
	});
}
