/**
 * Veil inside pi (npm `@mariozechner/pi-coding-agent`), for one run of `veil pi`.
 *
 * `veil pi` starts pi with `-e <this file>` and four variables; pi loads this module (with
 * jiti: TypeScript, no build) before its first request. It
 *
 * 1. points the provider pi will use at Veil's proxy: `pi.registerProvider(NAME, { baseUrl })`
 *    with only a base URL overrides that provider's URL for every model it has, for this process
 *    only (nothing is written to `~/.pi/agent/models.json`). `VEIL_PI_PROVIDER` names the
 *    provider, `VEIL_PI_BASE_URL` is the proxy's base URL (the upstream's path kept).
 * 2. gives the model Veil's `expand` as the tool `veil_expand`, the name the proxy's stubs give
 *    (`[veil: read — … veil_expand veil://warm/… restores it]`). pi has no MCP client, so this
 *    module brings one (`veil_mcp.ts`, beside it): it starts Veil's MCP server (`VEIL_PI_MCP`, a JSON array: the command line of
 *    `veil mcp --project ROOT`), takes the description and input schema of its `expand` tool —
 *    the verb catalogue defines them once for every surface — and answers each call with what
 *    the server's `expand` answers, the restored result byte for byte.
 * 3. gives pi Veil's hooks, as `veil claude` gives Claude Code (docs/pi.md): through the same
 *    server's `hook` tool (`veil_mcp.ts`), the person's prompt (`before_agent_start`: the memory
 *    briefing comes back as a message for the model), every call before it runs (`tool_call`:
 *    a repeated failed edit, or any call at convergence level 3, is blocked with Veil's reason)
 *    and after (`tool_result`: recorded as an attempt; the level's note is added to the
 *    result). At level 3 the run ends (`ctx.abort()`). Fail open: no answer within
 *    `VEIL_HOOK_TIMEOUTS`, no opinion.
 *
 * Should the model be one of another provider (a `/model` switch), its requests would bypass
 * the proxy: one line on stderr says so. A server that does not start is one line on stderr
 * (no `veil_expand`, no hooks); the provider is redirected all the same.
 */
import type { ExtensionAPI } from "@mariozechner/pi-coding-agent";
import { commandOf, startServer, VeilHooks, type Json, type McpClient, type McpTool, type Outcome } from "./veil_mcp.ts";

const TOOL = "veil_expand";
const EXIT = /(?:^|\n\n)Command exited with code (-?\d+)\s*$/;

function say(line: string): void {
	process.stderr.write(`veil pi: ${line}\n`);
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

	const command = commandOf("VEIL_PI_MCP");
	if (command.length === 0) return;
	let client: McpClient;
	let tools: McpTool[];
	try {
		({ client, tools } = await startServer(command, "veil-pi"));
	} catch (error) {
		say(`no ${TOOL} and no hooks: ${(error as Error).message}`);
		return;
	}
	pi.on("session_shutdown", async () => client.close());
	const tool = tools.find((t) => t.name === "expand");
	if (tool) expand(pi, client, tool);
	else say(`no ${TOOL} for the model: Veil's MCP server offers no expand (no .veil/context.db in this project?)`);
	if (tools.some((t) => t.name === "hook")) hooks(pi, new VeilHooks(client, "pi", say));
}

/** `veil_expand`: the server's `expand`, its description and schema as they are. */
function expand(pi: ExtensionAPI, client: McpClient, tool: McpTool): void {
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

/** A pi tool result as Veil's hooks take it: pi's bash throws on a non-zero exit, its error
 * ending "Command exited with code N" after the output. */
function outcome(tool: string, content: { type: string; text?: string }[], isError: boolean): Outcome {
	const text = content.map((c) => (c.type === "text" ? (c.text ?? "") : "")).join("");
	const exited = tool === "bash" && isError ? EXIT.exec(text) : null;
	if (exited) return { text: text.slice(0, exited.index), exitCode: Number(exited[1]) };
	if (tool === "bash" && !isError) return { text, exitCode: 0 };
	return { text, failed: isError };
}

/** Veil's hooks on pi's events. */
function hooks(pi: ExtensionAPI, veil: VeilHooks): void {
	let stopped = false;
	const stop = (ctx: { abort(): void }, summary: string) => {
		if (!stopped) say(summary); // what the person reads: the record, and that a new prompt steers
		stopped = true;
		void ctx.abort();
	};
	pi.on("agent_start", async () => {
		stopped = false;
	});
	pi.on("before_agent_start", async (event, ctx) => {
		const found = await veil.prompt(ctx.sessionManager.getSessionId(), ctx.cwd, event.prompt);
		if (!found.context) return;
		return { message: { customType: "veil", content: found.context, display: false } };
	});
	pi.on("tool_call", async (event, ctx) => {
		if (event.toolName === TOOL) return;
		const id = ctx.sessionManager.getSessionId();
		const found = await veil.before(id, ctx.cwd, event.toolName, event.input as Json, event.toolCallId);
		if (found.stop) stop(ctx, found.stop); // level 3: the run ends once this call is refused
		if (found.block) return { block: true, reason: found.block };
	});
	pi.on("tool_result", async (event, ctx) => {
		if (event.toolName === TOOL) return;
		const id = ctx.sessionManager.getSessionId();
		const done = outcome(event.toolName, event.content as { type: string; text?: string }[], event.isError);
		const found = await veil.after(id, ctx.cwd, event.toolName, event.input as Json, event.toolCallId, done);
		if (found.stop) stop(ctx, found.stop); // level 3: the model is not asked again
		if (!found.context) return;
		return { content: [...event.content, { type: "text" as const, text: `\n\n${found.context}` }] };
	});
}
