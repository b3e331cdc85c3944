/**
 * unipi-tui bridge extension.
 *
 * Loaded into every Pi process the unipi-tui workbench starts (`pi -e <this file>`). It connects
 * to the workbench over a private Unix socket and speaks newline-delimited JSON (the protocol is
 * documented in docs/bridge-protocol.md of the unipi-tui repository). It is deliberately thin and
 * generic — no feature logic lives here:
 *
 *  - it forwards Pi's lifecycle events (with usage and context figures) to the workbench;
 *  - it registers whatever the workbench declares (tools with JSON Schema parameters, `/unipi:*`
 *    commands, card renderers for custom messages) and forwards their invocations;
 *  - it draws the generic cards (`details.card`) of tool results and custom messages;
 *  - it executes the workbench's calls (send a message, set the model, compact, hide the footer…);
 *  - it re-emits the workbench's module events on Pi's `pi.events` under Unipi's names and
 *    payloads, and keeps Unipi's shared background-task registry (read-only) on `globalThis`,
 *    so other Pi extensions written against Unipi keep working.
 *
 * Both Pi lines are served (1.x `@earendil-works`, 0.7x `@mariozechner`). Where they differ, the
 * difference is detected at run time by probing what exists, never by version number.
 *
 * Without UNIPI_TUI_SOCKET and UNIPI_TUI_TOKEN (Pi run outside the workbench) it does nothing.
 * It removes them from the environment Pi's own child processes inherit.
 */
import * as fs from "node:fs";
import * as net from "node:net";
import * as os from "node:os";
import * as nodePath from "node:path";
import { fileURLToPath } from "node:url";

const PROTOCOL_VERSION = 1;
const MAX_LINE_BYTES = 8388608;
/** How long the host may take to answer `hello`. */
const HELLO_TIMEOUT_MS = 5000;
/** Tries when the host says the previous instance's connection is still open (after /reload). */
const CONNECT_ATTEMPTS = 6;
/** Argument completions are interactive: give up quickly. */
const COMPLETE_TIMEOUT_MS = 1000;
/** A backstop over the host's own command timeout. */
const COMMAND_TIMEOUT_MS = 30000;
/** How long session shutdown waits for the host to acknowledge the goodbye. */
const GOODBYE_TIMEOUT_MS = 1000;
/** A backstop over the host's hook timeout (Pi waits for the answer meanwhile). */
const HOOK_TIMEOUT_MS = 65000;
/** A backstop over the host's own bound on a settle hold (its longest wait is 30 minutes). */
const SETTLE_HOLD_MS = 40 * 60 * 1000;
/** A backstop over each tool's declared timeout, should the host stop answering. */
const TOOL_TIMEOUT_MARGIN_MS = 5000;
/** User input is forwarded for "user is active" signals; a huge paste is cut. */
const INPUT_TEXT_LIMIT = 64 * 1024;
/** The widget that lends the bridge Pi's TUI (to ask for a frame); removed as soon as it is made. */
const RENDER_WIDGET_KEY = "unipi-tui-render";
/** The command a hand-off to a new session runs through: Pi hands `ctx.newSession` to commands
 * only (not to tools or event handlers). */
const NEW_SESSION_COMMAND = "unipi-tui-new-session";
/** Events some Pi lines emit and others do not, probed at run time. */
const OPTIONAL_EVENTS = ["agent_settled", "agent_before_settle", "session_compact_failed"];

type Msg = Record<string, any>;

/** Where Unipi's background-tasks package published its registry for sibling extensions. */
const SHARED_TASK_REGISTRY = Symbol.for("unipi.background-tasks.shared-registry");
/** The module events that carry tasks (each `task`, or every one as `tasks`). */
const TASK_STARTED = "unipi:bg:task:started";
const TASK_FINISHED = "unipi:bg:task:finished";
const TASKS_SNAPSHOT = "unipi:bg:tasks:snapshot";

/**
 * Unipi's shared background-task registry, read-only: the workbench owns the tasks, and this
 * copy follows its task events. Readers get frozen snapshots (Unipi's `BgTaskSnapshot` fields);
 * what would change a task throws and names the way that does.
 */
class SharedTaskRegistry {
	private readonly tasks = new Map<string, Readonly<Msg>>();
	readonly readOnly = true;

	/** Every task, oldest start first. */
	allTasks(): Readonly<Msg>[] {
		return [...this.tasks.values()].sort((a, b) => (a.startTime ?? 0) - (b.startTime ?? 0));
	}

	/** The task's current snapshot (a task object from `allTasks`, or its id). */
	snapshot(task: Msg | string): Readonly<Msg> {
		return this.resolveTask(typeof task === "string" ? task : String(task?.id ?? ""));
	}

	getTask(id: string): Readonly<Msg> | undefined {
		return this.tasks.get(id);
	}

	/** An exact id, else a unique prefix (as Unipi's `resolveTask`). */
	resolveTask(idOrPrefix: string): Readonly<Msg> {
		const query = String(idOrPrefix ?? "").trim();
		if (!query) throw new Error("A background task ID is required");
		const exact = this.tasks.get(query);
		if (exact) return exact;
		const matches = [...this.tasks.keys()].filter((id) => id.startsWith(query));
		if (matches.length === 1) return this.tasks.get(matches[0]) as Readonly<Msg>;
		if (matches.length > 1) throw new Error(`Ambiguous background task ID prefix ${query}: ${matches.sort().join(", ")}`);
		throw new Error(`Unknown background task ID: ${query}`);
	}

	/** The task's output (its end when `tail`), at most `maxBytes` bytes of it. */
	async getTaskLogs(task: Msg | string, maxBytes = 64 * 1024, tail = true): Promise<{ text: string; details: { truncated: boolean } }> {
		const found = this.snapshot(task);
		const path = nodePath.resolve(String(found.cwd ?? ""), String(found.outputPath ?? ""));
		const handle = await fs.promises.open(path, "r");
		try {
			const size = (await handle.stat()).size;
			const length = Math.max(0, Math.min(size, Math.floor(maxBytes)));
			const buffer = Buffer.alloc(length);
			await handle.read(buffer, 0, length, tail ? size - length : 0);
			return { text: buffer.toString("utf8"), details: { truncated: length < size } };
		} finally {
			await handle.close();
		}
	}

	stopTask(): never {
		throw new Error("The unipi-tui task registry is read-only: stop a task with bg_kill or from the dock (/unipi:bg-tasks)");
	}

	/** Takes the tasks a module event carries; false when it carries none. */
	take(name: string, data: Msg): boolean {
		if (name === TASKS_SNAPSHOT && Array.isArray(data.tasks)) {
			this.tasks.clear();
			for (const task of data.tasks) this.put(task);
			return true;
		}
		if ((name === TASK_STARTED || name === TASK_FINISHED) && data.task && typeof data.task === "object") {
			this.put(data.task);
			return true;
		}
		return false;
	}

	private put(task: Msg) {
		if (typeof task?.id === "string") this.tasks.set(task.id, Object.freeze({ ...task }));
	}
}

// Written without TypeScript-only syntax that needs transforming (parameter properties, enums),
// so plain Node can load this file by stripping types (the benchmark does).
class BridgeFailure extends Error {
	readonly code: string;
	constructor(code: string, message: string) {
		super(message);
		this.code = code;
	}
}

interface PendingTool {
	resolve: (result: unknown) => void;
	reject: (err: Error) => void;
	onUpdate?: (update: unknown) => void;
}

export default function unipiBridge(pi: any) {
	const target = bridgeTarget();
	if (!target) return;
	new Bridge(pi, target.socket, target.token, target.agent).subscribe();
}

interface Target {
	socket: string;
	token: string;
	agent: string;
}

/**
 * Where to connect. The first instance moves the variables out of `process.env`, so processes Pi
 * starts (the bash tool, a nested pi) do not inherit the token; the instances Pi creates later in
 * the same process (/reload, /new, /resume, /fork) find them in a process-wide slot.
 */
function bridgeTarget(): Target | undefined {
	const slot = Symbol.for("unipi-tui.bridge.target");
	const store = globalThis as Record<symbol, Target | undefined>;
	if (store[slot]) return store[slot];
	const socket = process.env.UNIPI_TUI_SOCKET;
	const token = process.env.UNIPI_TUI_TOKEN;
	if (!socket || !token) return undefined;
	store[slot] = { socket, token, agent: process.env.UNIPI_TUI_AGENT ?? "" };
	delete process.env.UNIPI_TUI_SOCKET;
	delete process.env.UNIPI_TUI_TOKEN;
	delete process.env.UNIPI_TUI_AGENT;
	return store[slot];
}

class Bridge {
	private socket?: net.Socket;
	private connected = false;
	private buffered = "";
	private nextId = 1;
	private ctx: any;
	private caps: Msg = { events: [], methods: [], ui: [], tool_exposure: false };
	private tui: any;
	/** Pi's running TUI (not the module above), once a component factory handed it over. */
	private piTui: any;
	private settledSeen = false;
	private queuePending = false;
	private lastStopReason: string | undefined;
	/** The model stream's last phase sent (thinking, writing, calling_tool). */
	private streamPhase: string | undefined;
	/** Pi's footer data as last sent (JSON), to send it only when it changes. */
	private footerStatusSent = "";
	private handshakeWaiter?: (message: Msg) => void;
	private goodbyeWaiter?: () => void;
	private readonly tools = new Map<number, PendingTool>();
	private readonly replies = new Map<number, (message: Msg | undefined) => void>();
	private readonly renderers = new Set<string>();
	/** Tool names the host declared last time (to withdraw the ones it stops declaring). */
	private declaredTools = new Set<string>();
	/** Custom message types kept out of the model's context. */
	private readonly hiddenTypes = new Set<string>();
	/** The host's tool policy: calls of other tools are blocked with the reason. */
	private toolPolicy?: ToolPolicy;
	/** Unipi's shared task registry, on `globalThis` while a session runs. */
	private readonly sharedTasks = new SharedTaskRegistry();
	/** The first message of the new session the host asked for (`new_session`), until the
	 * command that starts it runs. */
	private pendingNewSession?: string;
	/** What was in Pi's editor when the new-session command was put there (Pi 0.7x). */
	private pendingDraft?: string;

	private readonly pi: any;
	private readonly socketPath: string;
	private readonly token: string;
	private readonly agent: string;

	constructor(pi: any, socketPath: string, token: string, agent: string) {
		this.pi = pi;
		this.socketPath = socketPath;
		this.token = token;
		this.agent = agent;
	}

	/** Registers the event handlers (allowed while Pi loads the extension). */
	subscribe() {
		const pi = this.pi;
		// Unipi published its registry when the extension loaded, and again at each session start.
		(globalThis as Record<symbol, unknown>)[SHARED_TASK_REGISTRY] = this.sharedTasks;
		const on = (name: string, handler: (event: any, ctx: any) => unknown) =>
			pi.on(name, (event: any, ctx: any) => {
				if (ctx) this.ctx = ctx;
				try {
					return handler(event ?? {}, ctx);
				} catch {
					return undefined; // forwarding must never break Pi
				}
			});

		// Sockets are opened in session_start, not in the factory: Pi may load extensions in
		// invocations that never start a session. Pi awaits this handler, so the declared tools
		// are registered before the first prompt.
		on("session_start", async (event, ctx) => {
			(globalThis as Record<symbol, unknown>)[SHARED_TASK_REGISTRY] = this.sharedTasks;
			await this.connect(ctx);
			const sm = ctx?.sessionManager;
			this.emit("session_start", {
				reason: event.reason ?? "startup",
				previous_session_file: event.previousSessionFile ?? null,
				session_id: attempt(() => sm?.getSessionId?.()) ?? null,
				session_file: attempt(() => sm?.getSessionFile?.()) ?? null,
				session_name: attempt(() => pi.getSessionName?.()) ?? null,
				cwd: ctx?.cwd ?? null,
				model: modelInfo(ctx?.model),
				thinking_level: attempt(() => pi.getThinkingLevel?.()) ?? null,
				context_usage: contextUsage(ctx),
			});
		});
		on("session_shutdown", async (event) => {
			this.emit("session_shutdown", {
				reason: event.reason ?? "quit",
				target_session_file: event.targetSessionFile ?? null,
			});
			await this.goodbye(event.reason ?? "quit");
			// Unipi cleared it at shutdown, so readers see a clean slate (counts are per session).
			const store = globalThis as Record<symbol, unknown>;
			if (store[SHARED_TASK_REGISTRY] === this.sharedTasks) delete store[SHARED_TASK_REGISTRY];
		});
		// What the host adds to this run's system prompt (the milestones' progress).
		on("before_agent_start", async (event) => {
			const answer = await this.hook("before_agent_start", { message_type: event.messageType ?? "user" });
			const append = answer && typeof answer === "object" ? (answer as Msg).append_system_prompt : undefined;
			if (typeof append !== "string" || !append) return undefined;
			const base = typeof event.systemPrompt === "string" ? event.systemPrompt : "";
			return { systemPrompt: base ? `${base}\n\n${append}` : append };
		});
		pi.registerCommand(NEW_SESSION_COMMAND, {
			description: "unipi-tui: start the new session the workbench has a first message for",
			handler: async (_args: string, ctx: any) => this.startNewSession(ctx),
		});
		on("session_info_changed", (event) => this.emit("session_info_changed", { name: event.name ?? null }));
		on("agent_start", () => this.emit("agent_start"));
		on("agent_end", (_event, ctx) => {
			this.emit("agent_end");
			// A Pi without `agent_settled` is idle once a run ends: say so in the same terms.
			if (!this.settledSeen && !this.caps.events.includes("agent_settled")) {
				this.emit("agent_settled", { aborted: this.lastStopReason === "aborted", synthetic: true });
			}
			this.checkQueue(ctx);
		});
		on("agent_settled", async (event, ctx) => {
			this.settledSeen = true;
			this.emit("agent_settled", { aborted: Boolean(event.aborted), synthetic: false });
			this.checkQueue(ctx);
			// A print or JSON run ends once this handler returns (Pi awaits it before its prompt
			// resolves, and runs what was sent meanwhile as a new run first): while the host still
			// owes this agent a wake-up (a background task that will start a turn), wait for it,
			// so the follow-up turn belongs to this run. The host bounds the wait.
			if (!event.aborted && this.endsWithRun()) await this.hold("agent_settled", { aborted: false });
		});
		on("turn_start", (event) => this.emit("turn_start", { turn_index: event.turnIndex ?? 0 }));
		on("turn_end", (event, ctx) => {
			this.emit("turn_end", {
				turn_index: event.turnIndex ?? 0,
				usage: event.message?.role === "assistant" ? usage(event.message.usage) : null,
				context_usage: contextUsage(ctx),
			});
			this.checkQueue(ctx);
		});
		on("message_start", (event, ctx) => {
			this.streamPhase = undefined;
			const role = event.message?.role;
			if (role === "user" || role === "custom") this.checkQueue(ctx);
		});
		on("message_end", (event) => {
			const message = event.message;
			// The result of a call of a tool hidden by the policy, should Pi have copied it
			// (tool_execution_end below rewrites it in place where Pi shares it).
			if (message?.role === "toolResult") {
				const reason = this.hiddenToolReason(message.toolName, message.isError, message.content);
				return reason === undefined ? undefined : { message: { ...message, content: [{ type: "text", text: reason }] } };
			}
			if (message?.role !== "assistant") return;
			this.lastStopReason = message.stopReason;
			this.emit("message_end", {
				provider: message.provider ?? null,
				model: message.model ?? null,
				usage: usage(message.usage),
				stop_reason: message.stopReason ?? null,
				error_message: message.errorMessage ?? null,
				text: messageText(message.content),
			});
		});
		// What the model's stream is doing, sent only when it changes (not per token).
		on("message_update", (event) => {
			const type = String(event.assistantMessageEvent?.type ?? "");
			const phase = type.startsWith("thinking")
				? "thinking"
				: type.startsWith("text")
					? "writing"
					: type.startsWith("toolcall")
						? "calling_tool"
						: undefined;
			if (phase && phase !== this.streamPhase) {
				this.streamPhase = phase;
				this.emit("stream_phase", { phase });
			}
		});
		on("tool_execution_start", (event) =>
			this.emit("tool_execution_start", { tool: event.toolName, call_id: event.toolCallId }),
		);
		on("tool_execution_end", (event) => {
			// Pi answers a call of a tool missing from the active set "Tool X not found" without
			// asking the tool_call hook. While a policy hides tools, say why instead: the result
			// object is the one Pi's pane draws and the model's tool message is made of.
			const content = event.result?.content;
			const reason = this.hiddenToolReason(event.toolName, event.isError, content);
			if (reason !== undefined && Array.isArray(content)) content.splice(0, content.length, { type: "text", text: reason });
			this.emit("tool_execution_end", {
				tool: event.toolName,
				call_id: event.toolCallId,
				is_error: Boolean(event.isError),
			});
		});
		on("model_select", (event) =>
			this.emit("model_select", {
				model: modelInfo(event.model),
				previous: modelInfo(event.previousModel),
				source: event.source ?? null,
			}),
		);
		on("thinking_level_select", (event) =>
			this.emit("thinking_level_select", { level: event.level, previous: event.previousLevel ?? null }),
		);
		on("session_before_compact", async (event, ctx) => {
			this.emit("compaction_start", { reason: event.reason ?? null });
			// Cancelling or summarising is a module's decision: ask the host and return its answer.
			const answer = await this.hook("session_before_compact", compactionHookData(event, ctx));
			if (answer && typeof answer === "object" && ("cancel" in answer || "compaction" in answer)) return answer;
			return undefined;
		});
		on("context", (event) => {
			if (this.hiddenTypes.size === 0 || !Array.isArray(event.messages)) return undefined;
			const messages = event.messages.filter(
				(message: Msg) => !(message?.role === "custom" && this.hiddenTypes.has(message.customType)),
			);
			return messages.length === event.messages.length ? undefined : { messages };
		});
		on("session_compact", (event, ctx) =>
			this.emit("compaction_end", {
				reason: event.reason ?? null,
				aborted: false,
				error: null,
				from_extension: Boolean(event.fromExtension),
				tokens_before: event.compactionEntry?.tokensBefore ?? null,
				// Pi's figure after the compaction (its tokens are unknown until the next reply).
				context_usage: contextUsage(ctx),
			}),
		);
		on("session_compact_failed", (event) =>
			this.emit("compaction_end", {
				reason: event.reason ?? null,
				aborted: Boolean(event.aborted),
				error: event.errorMessage ?? (event.aborted ? "aborted" : "failed"),
				from_extension: Boolean(event.fromExtension),
				tokens_before: null,
			}),
		);
		on("input", (event, ctx) => {
			const text = typeof event.text === "string" ? event.text : "";
			this.emit("input", {
				text: text.slice(0, INPUT_TEXT_LIMIT),
				truncated: text.length > INPUT_TEXT_LIMIT,
				source: event.source ?? null,
				streaming_behavior: event.streamingBehavior ?? null,
			});
			// The message is queued after the input handlers run.
			setTimeout(() => this.checkQueue(ctx), 0);
			return undefined;
		});
		// The host's tool policy (set_tool_policy): a call of a tool outside it is blocked, and so
		// is a write of a path-ruled tool outside its root.
		on("tool_call", (event, ctx) => {
			const policy = this.toolPolicy;
			const tool = String(event.toolName ?? "");
			if (!policy) return undefined;
			if (!policy.allowed.has(tool)) return { block: true, reason: fill(policy.reason, tool, "") };
			const paths = policy.paths;
			if (!paths || !paths.tools.has(tool)) return undefined;
			const asked = event.input?.path;
			const cwd = typeof ctx?.cwd === "string" ? ctx.cwd : process.cwd();
			const target = typeof asked === "string" ? resolveToolPath(asked, cwd) : undefined;
			if (target !== undefined && isWithin(paths.root, target)) return undefined;
			return { block: true, reason: fill(paths.reason, tool, typeof asked === "string" ? asked : "(no path)") };
		});
		on("ui_prompt_start", (event) => this.emit("ui_prompt_start", { kind: event.kind ?? null, title: event.title ?? null }));
		on("ui_prompt_end", () => this.emit("ui_prompt_end"));
	}

	/** `new_session`: keeps the first message and runs the command that starts the session —
	 * dispatched by `sendUserMessage` where Pi does that (1.x), else submitted from Pi's editor
	 * as if typed (0.7x: Pi's TUI takes the Enter). */
	private requestNewSession(firstMessage: string): boolean {
		this.pendingNewSession = firstMessage;
		this.pendingDraft = undefined;
		const command = `/${NEW_SESSION_COMMAND}`;
		if (this.caps.command_dispatch) {
			this.pi.sendUserMessage(command, { expandPromptTemplates: true });
			return true;
		}
		const ui = needCtx(this.ctx).ui;
		if (typeof ui?.setEditorText !== "function") {
			this.pendingNewSession = undefined;
			throw new BridgeFailure("unsupported", "this Pi cannot start a new session for an extension");
		}
		// What the user had typed comes back in the new session's editor.
		const draft = attempt(() => ui.getEditorText?.());
		this.pendingDraft = typeof draft === "string" && draft.trim() ? draft : undefined;
		ui.setEditorText(command);
		this.requestRender(ui);
		if (typeof this.piTui?.handleInput !== "function") {
			this.pendingNewSession = undefined;
			throw new BridgeFailure("unsupported", "this Pi's editor cannot be submitted for an extension");
		}
		this.piTui.handleInput("\r");
		return true;
	}

	/** The new-session command: Pi's own new session, whose first message is the one kept. */
	private async startNewSession(ctx: any) {
		const firstMessage = this.pendingNewSession;
		const draft = this.pendingDraft;
		this.pendingNewSession = undefined;
		this.pendingDraft = undefined;
		if (firstMessage === undefined) {
			if (ctx?.hasUI) attempt(() => ctx.ui.notify("No task is waiting for a new session", "warning"));
			return;
		}
		try {
			const parentSession = attempt(() => ctx.sessionManager?.getSessionFile?.()) ?? undefined;
			const result = await ctx.newSession({
				parentSession,
				withSession: async (next: any) => {
					if (draft !== undefined) attempt(() => next.ui?.setEditorText?.(draft));
					await next.sendUserMessage(firstMessage);
				},
			});
			if (result?.cancelled && ctx?.hasUI) attempt(() => ctx.ui.notify("The new session was cancelled", "warning"));
		} catch (err) {
			this.report(ctx, `unipi-tui: could not start a new session: ${err instanceof Error ? err.message : String(err)}`);
		}
	}

	// --- connection --------------------------------------------------------------------------

	private async connect(ctx: any) {
		const piModule = await importFirst(["@earendil-works/pi-coding-agent", "@mariozechner/pi-coding-agent"]);
		this.tui ??= await importFirst(["@earendil-works/pi-tui", "@mariozechner/pi-tui"]);
		this.caps = probeCapabilities(this.pi, ctx, piModule);
		for (let round = 1; ; round++) {
			try {
				const welcome = await this.handshake(String(piModule?.VERSION ?? "unknown"));
				this.connected = true;
				this.applyDeclarations(welcome.declarations ?? {});
				if (welcome.options?.hide_footer) attempt(() => this.setFooter(true));
				cardColors = welcome.options?.card_colors ?? {};
				return;
			} catch (err) {
				this.close();
				// The previous instance's connection may still be closing (after /reload): retry.
				if (err instanceof BridgeFailure && err.code === "token_in_use" && round < CONNECT_ATTEMPTS) {
					await sleep(50 * round);
					continue;
				}
				this.report(ctx, `unipi-tui bridge: ${err instanceof Error ? err.message : String(err)}`);
				return;
			}
		}
	}

	private handshake(piVersion: string): Promise<Msg> {
		return new Promise((resolve, reject) => {
			const socket = net.createConnection(this.socketPath);
			this.socket = socket;
			this.buffered = "";
			socket.setEncoding("utf8");
			const timer = setTimeout(() => fail(new BridgeFailure("hello_timeout", "no welcome from unipi-tui")), HELLO_TIMEOUT_MS);
			const fail = (err: Error) => {
				clearTimeout(timer);
				this.handshakeWaiter = undefined;
				reject(err);
			};
			this.handshakeWaiter = (message) => {
				clearTimeout(timer);
				this.handshakeWaiter = undefined;
				if (message.type === "welcome") resolve(message);
				else if (message.type === "error") reject(new BridgeFailure(message.code, message.message));
				else reject(new BridgeFailure("bad_message", `expected welcome, got ${message.type}`));
			};
			socket.on("connect", () =>
				this.write({
					type: "hello",
					token: this.token,
					protocol: PROTOCOL_VERSION,
					pi_version: piVersion,
					agent: this.agent,
					pid: process.pid,
					capabilities: this.caps,
				}),
			);
			socket.on("data", (chunk: string) => this.receive(chunk));
			socket.on("error", (err) => fail(err));
			socket.on("close", () => {
				if (this.socket === socket) this.disconnected();
				fail(new BridgeFailure("closed", "unipi-tui closed the connection"));
			});
		});
	}

	private async goodbye(reason: string) {
		if (this.connected) {
			const acknowledged = new Promise<void>((resolve) => {
				this.goodbyeWaiter = resolve;
				setTimeout(resolve, GOODBYE_TIMEOUT_MS);
			});
			this.write({ type: "goodbye", reason });
			await acknowledged;
		}
		this.close();
	}

	private close() {
		const socket = this.socket;
		this.socket = undefined;
		this.disconnected();
		socket?.end();
		socket?.destroy();
	}

	/** Fails everything that waits on the host. */
	private disconnected() {
		this.connected = false;
		for (const pending of this.tools.values()) pending.reject(new Error("the unipi-tui bridge disconnected"));
		this.tools.clear();
		for (const reply of this.replies.values()) reply(undefined);
		this.replies.clear();
		this.goodbyeWaiter?.();
	}

	private report(ctx: any, message: string) {
		if (ctx?.hasUI) attempt(() => ctx.ui.notify(message, "error"));
		else console.error(message);
	}

	// --- wire --------------------------------------------------------------------------------

	/** Sends one message; false when it cannot go (not connected, or over the line limit). */
	private write(message: Msg): boolean {
		const socket = this.socket;
		if (!socket || socket.destroyed) return false;
		const line = JSON.stringify(message) + "\n";
		// A UTF-16 unit is at most 3 UTF-8 bytes: count exactly only when it could matter.
		if (line.length * 3 > MAX_LINE_BYTES && Buffer.byteLength(line) > MAX_LINE_BYTES + 1) return false;
		socket.write(line);
		return true;
	}

	private send(message: Msg): boolean {
		return this.connected && this.write(message);
	}


	/** The policy's reason when `content` is Pi's "not found" answer to a call of a tool the
	 * policy does not allow (Pi hid it from the model: it is not in the active set). */
	private hiddenToolReason(toolName: unknown, isError: unknown, content: unknown): string | undefined {
		const policy = this.toolPolicy;
		const tool = String(toolName ?? "");
		if (!policy || policy.allowed.has(tool) || !isError) return undefined;
		return textOf(content) === `Tool ${tool} not found` ? fill(policy.reason, tool, "") : undefined;
	}
	private emit(name: string, data: Msg = {}) {
		this.send({ type: "event", name, data });
	}

	private receive(chunk: string) {
		this.buffered += chunk;
		let end: number;
		while ((end = this.buffered.indexOf("\n")) >= 0) {
			const line = this.buffered.slice(0, end);
			this.buffered = this.buffered.slice(end + 1);
			let message: Msg;
			try {
				message = JSON.parse(line);
			} catch (err) {
				this.write({ type: "error", code: "malformed_json", message: `the extension cannot parse a line: ${err}` });
				continue;
			}
			if (this.handshakeWaiter) this.handshakeWaiter(message);
			else this.dispatch(message);
		}
	}

	private dispatch(message: Msg) {
		switch (message.type) {
			case "tool_result": {
				const pending = this.tools.get(message.id);
				if (!pending) return;
				this.tools.delete(message.id);
				if (message.is_error) pending.reject(new Error(textOf(message.content) || "the tool failed"));
				else pending.resolve({ content: message.content ?? [], details: message.details ?? undefined });
				return;
			}
			case "tool_update":
				attempt(() => this.tools.get(message.id)?.onUpdate?.({ content: message.content ?? [], details: message.details ?? undefined }));
				return;
			case "command_result":
			case "complete_result":
			case "hook_result": {
				const reply = this.replies.get(message.id);
				this.replies.delete(message.id);
				reply?.(message);
				return;
			}
			case "call":
				void this.execute(message);
				return;
			case "declare":
				this.applyDeclarations(message.declarations ?? {});
				return;
			case "unipi_event":
				this.reemit(String(message.name ?? ""), message.data ?? {});
				return;
			case "goodbye":
				if (this.goodbyeWaiter) this.goodbyeWaiter();
				else this.close(); // the workbench is going away
				return;
			case "error":
				return; // the host logged it; nothing here can fix it
			default:
				this.write({ type: "error", code: "unknown_type", message: `the extension does not know ${JSON.stringify(message.type)}` });
		}
	}

	/** A workbench module event for the Pi extensions listening on `pi.events`; the task
	 * registry takes its tasks first, so a listener reading it sees the task the event names. */
	private reemit(name: string, data: Msg) {
		if (!name.startsWith("unipi:")) return;
		attempt(() => this.sharedTasks.take(name, data));
		// A listener's error is its own (Unipi's emitEvent swallowed them too).
		attempt(() => this.pi.events?.emit?.(name, data));
	}

	/** Sends a request and waits for the reply with the same id (undefined on timeout). */
	private request(message: Msg, timeoutMs: number): Promise<Msg | undefined> {
		const id = this.nextId++;
		return new Promise((resolve) => {
			const timer = setTimeout(() => {
				this.replies.delete(id);
				resolve(undefined);
			}, timeoutMs);
			this.replies.set(id, (reply) => {
				clearTimeout(timer);
				resolve(reply);
			});
			if (!this.send({ ...message, id })) {
				this.replies.delete(id);
				clearTimeout(timer);
				resolve(undefined);
			}
		});
	}

	/** Whether Pi ends the process once its agent settles (print and JSON mode). */
	private endsWithRun(): boolean {
		return this.connected && (this.caps.mode === "print" || this.caps.mode === "json");
	}

	/** Waits for the host's answer to `name` without the hook backstop: the host bounds the wait,
	 * and a closed connection answers at once. */
	private async hold(name: string, data: Msg): Promise<void> {
		await this.request({ type: "hook", name, data }, SETTLE_HOLD_MS);
	}

	/** Asks the host to answer one of Pi's hooks; undefined when it has no opinion or cannot answer. */
	private async hook(name: string, data: Msg): Promise<unknown> {
		if (!this.connected) return undefined;
		let reply = await this.request({ type: "hook", name, data }, HOOK_TIMEOUT_MS);
		if (!reply && data.branch_entries) {
			// Too large for one line: the host reads the branch from the session file instead.
			reply = await this.request({ type: "hook", name, data: { ...data, branch_entries: null } }, HOOK_TIMEOUT_MS);
		}
		return reply?.result ?? undefined;
	}

	// --- declarations ------------------------------------------------------------------------

	private applyDeclarations(declarations: Msg) {
		const tools: Msg[] = declarations.tools ?? [];
		for (const tool of tools) attempt(() => this.registerTool(tool));
		for (const command of declarations.commands ?? []) attempt(() => this.registerCommand(command));
		this.hiddenTypes.clear();
		for (const type of declarations.message_types ?? []) {
			attempt(() => this.ensureRenderer(type.custom_type, type.label));
			if (type.hidden_from_model) this.hiddenTypes.add(type.custom_type);
		}
		const names = new Set(tools.map((tool) => String(tool.name)));
		attempt(() => this.syncActiveTools(names));
		this.declaredTools = names;
	}

	/**
	 * Pi cannot unregister a tool: one the host stops declaring (an MCP server stopped) is taken
	 * out of the active set instead, and put back when it is declared again.
	 */
	private syncActiveTools(names: Set<string>) {
		const withdrawn = [...this.declaredTools].filter((name) => !names.has(name));
		const returning = [...names].filter((name) => !this.declaredTools.has(name));
		if (withdrawn.length === 0 && returning.length === 0) return;
		if (typeof this.pi.getActiveTools !== "function" || typeof this.pi.setActiveTools !== "function") return;
		const active: string[] = this.pi.getActiveTools() ?? [];
		const next = active.filter((name) => !withdrawn.includes(name));
		for (const name of returning) if (!next.includes(name)) next.push(name);
		if (next.length !== active.length || next.some((name, i) => name !== active[i])) this.pi.setActiveTools(next);
	}

	private registerTool(tool: Msg) {
		const definition: Msg = {
			name: tool.name,
			label: tool.label ?? tool.name,
			description: tool.description ?? "",
			parameters: tool.parameters ?? { type: "object", properties: {} },
			execute: (toolCallId: string, params: unknown, signal?: AbortSignal, onUpdate?: (update: unknown) => void) =>
				this.callTool(tool, toolCallId, params, signal, onUpdate),
		};
		if (tool.prompt_snippet) definition.promptSnippet = tool.prompt_snippet;
		if (tool.prompt_guidelines?.length) definition.promptGuidelines = tool.prompt_guidelines;
		if (tool.exposure && this.caps.tool_exposure) definition.exposure = tool.exposure;
		// A result with `details.card` is drawn as the card; without one the renderer throws,
		// which both Pi lines answer with their default result rendering.
		definition.renderResult = (result: Msg, _options: Msg, theme: any) => {
			const card = cardOf(result?.details);
			const component = card && this.cardComponent(card, theme);
			if (!component) throw new Error("no card");
			return component;
		};
		this.pi.registerTool(definition);
	}

	private callTool(tool: Msg, toolCallId: string, params: unknown, signal?: AbortSignal, onUpdate?: (update: unknown) => void) {
		return new Promise((resolve, reject) => {
			if (!this.connected) {
				reject(new Error(`unipi-tui is not connected, so ${tool.name} cannot run`));
				return;
			}
			const id = this.nextId++;
			const limitMs = (tool.timeout_ms ?? 120000) + TOOL_TIMEOUT_MARGIN_MS;
			const cancel = () => this.send({ type: "tool_cancel", id });
			const done = () => {
				clearTimeout(timer);
				signal?.removeEventListener?.("abort", cancel);
			};
			const timer = setTimeout(() => {
				this.tools.delete(id);
				done();
				reject(new Error(`unipi-tui did not answer ${tool.name} within ${limitMs} ms`));
			}, limitMs);
			this.tools.set(id, {
				resolve: (result) => (done(), resolve(result)),
				reject: (err) => (done(), reject(err)),
				onUpdate,
			});
			if (!this.send({ type: "tool_call", id, tool: tool.name, call_id: toolCallId, args: params ?? {} })) {
				this.tools.get(id)?.reject(new Error(`the arguments of ${tool.name} are too large for the unipi-tui bridge`));
				this.tools.delete(id);
				return;
			}
			// The host answers a cancelled call too (with whatever the module returns).
			if (signal?.aborted) cancel();
			else signal?.addEventListener?.("abort", cancel, { once: true });
		});
	}

	private registerCommand(command: Msg) {
		this.pi.registerCommand(command.name, {
			description: command.description ?? "",
			getArgumentCompletions: async (prefix: string) => {
				const reply = await this.request({ type: "complete", command: command.name, prefix: prefix ?? "" }, COMPLETE_TIMEOUT_MS);
				const items = (reply?.items ?? []).map((item: Msg) => ({
					value: item.value,
					label: item.label ?? item.value,
					description: item.description ?? undefined,
				}));
				return items.length > 0 ? items : null;
			},
			handler: async (args: string, ctx: any) => {
				if (ctx) this.ctx = ctx;
				const reply = await this.request({ type: "command", name: command.name, args: args ?? "" }, COMMAND_TIMEOUT_MS);
				const message = reply ? reply.message : `unipi-tui did not answer /${command.name}`;
				const level = reply ? (reply.level ?? (reply.ok ? "info" : "error")) : "error";
				if (message && ctx?.hasUI) attempt(() => ctx.ui.notify(message, level));
			},
		});
	}

	/** A generic card for a host-made message type: a titled box with the text. */
	private ensureRenderer(customType: string, label?: string) {
		if (!customType || this.renderers.has(customType)) return;
		if (typeof this.pi.registerMessageRenderer !== "function") return;
		this.renderers.add(customType);
		this.pi.registerMessageRenderer(customType, (message: Msg, options: Msg, theme: any) => {
			const { Box, Text } = this.tui ?? {};
			if (!Text) return undefined;
			const card = cardOf(message.details);
			if (card) {
				const text = cardText(card, theme);
				if (!Box) return new Text(text, 1, 0);
				const box = new Box(1, 1, (line: string) => theme.bg("customMessageBg", line));
				box.addChild(new Text(text, 0, 0));
				return box;
			}
			let text = theme.fg("accent", theme.bold(label || customType));
			const body = typeof message.content === "string" ? message.content : textOf(message.content);
			if (body) text += "\n" + body;
			if (options?.expanded && message.details != null) text += "\n" + theme.fg("dim", JSON.stringify(message.details, null, 2));
			if (!Box) return new Text(text, 1, 0);
			const box = new Box(1, 1, (line: string) => theme.bg("customMessageBg", line));
			box.addChild(new Text(text, 0, 0));
			return box;
		});
	}

	/** A card as a text component (the tool row supplies the box and background). */
	private cardComponent(card: Msg, theme: any): any {
		const Text = this.tui?.Text;
		return Text ? new Text(cardText(card, theme), 0, 0) : undefined;
	}

	// --- host calls --------------------------------------------------------------------------

	private async execute(message: Msg) {
		try {
			const value = await this.run(message.method, message.params ?? {});
			this.send({ type: "call_result", id: message.id, ok: true, value: value ?? null });
		} catch (err) {
			const code = err instanceof BridgeFailure ? err.code : "internal";
			const text = err instanceof Error ? err.message : String(err);
			this.send({ type: "call_result", id: message.id, ok: false, error: { code, message: text } });
		}
	}

	private async run(method: string, p: Msg): Promise<unknown> {
		const pi = this.pi;
		const ctx = this.ctx;
		switch (method) {
			case "send_message":
				this.ensureRenderer(p.custom_type);
				pi.sendMessage(
					{ customType: p.custom_type, content: p.content ?? "", display: p.display !== false, details: p.details ?? undefined },
					{ deliverAs: p.deliver_as ?? undefined, triggerTurn: Boolean(p.trigger_turn) },
				);
				return true;
			case "send_user_message":
				pi.sendUserMessage(p.content ?? "", p.deliver_as ? { deliverAs: p.deliver_as } : undefined);
				return true;
			case "set_model": {
				const model = needCtx(ctx).modelRegistry?.find?.(p.provider, p.id);
				if (!model) throw new BridgeFailure("unknown_model", `Pi knows no model ${p.provider}/${p.id}`);
				return Boolean(await pi.setModel(model));
			}
			case "list_models": {
				const registry = needCtx(ctx).modelRegistry;
				const listed = p.all ? registry?.getAll?.() : (registry?.getAvailable?.() ?? registry?.getAll?.());
				const models = (await listed) ?? [];
				return models.map((model: any) => {
					const info = modelInfo(model);
					if (info && typeof registry?.hasConfiguredAuth === "function") {
						info.has_auth = Boolean(attempt(() => registry.hasConfiguredAuth(model)));
					}
					return info;
				});
			}
			case "set_session_name":
				if (typeof pi.setSessionName !== "function") throw new BridgeFailure("unsupported", "this Pi cannot name sessions");
				pi.setSessionName(String(p.name ?? ""));
				return true;
			case "compact":
				needCtx(ctx).compact({ customInstructions: p.instructions ?? undefined });
				return true;
			case "get_context_usage":
				return contextUsage(needCtx(ctx));
			case "set_active_tools":
				pi.setActiveTools(p.names ?? []);
				return pi.getActiveTools();
			case "get_active_tools":
				return pi.getActiveTools();
			case "set_thinking_level":
				pi.setThinkingLevel(p.level);
				return pi.getThinkingLevel();
			case "notify":
				needCtx(ctx).ui?.notify?.(p.message ?? "", p.level ?? "info");
				return Boolean(ctx.hasUI);
			case "set_footer":
				return this.setFooter(Boolean(p.hidden));
			case "set_widget":
				return this.setWidget(String(p.key ?? ""), p.lines);
			case "set_tool_policy":
				this.toolPolicy = Array.isArray(p.allowed) ? toolPolicy(p) : undefined;
				return true;
			case "new_session":
				return this.requestNewSession(String(p.first_message ?? ""));
			case "set_editor_text": {
				const ui = needCtx(ctx).ui;
				if (typeof ui?.setEditorText !== "function") throw new BridgeFailure("unsupported", "this Pi cannot set its editor text");
				ui.setEditorText(String(p.text ?? ""));
				// Pi's editor takes the text without asking for a frame: the editor would look empty
				// until the next key.
				this.requestRender(ui);
				return Boolean(ctx.hasUI);
			}
			default:
				throw new BridgeFailure("unsupported", `the bridge extension has no method ${JSON.stringify(method)}`);
		}
	}

	private setFooter(hidden: boolean): boolean {
		const ui = this.ctx?.ui;
		if (typeof ui?.setFooter !== "function") throw new BridgeFailure("unsupported", "this Pi cannot replace its footer");
		// The empty footer still reads Pi's footer data (other extensions' statuses) each time Pi
		// draws it, and sends it on when it changed: the workbench's footer shows it instead.
		ui.setFooter(
			hidden
				? (tui: any, _theme: any, footerData: any) => {
						this.piTui = tui;
						return {
							render: () => {
								this.sendFooterStatus(footerData);
								return [];
							},
							invalidate() {},
						};
					}
				: undefined,
		);
		return true;
	}

	private sendFooterStatus(footerData: any) {
		const statuses: { key: string; text: string }[] = [];
		const entries = attempt(() => footerData?.getExtensionStatuses?.()) as Map<string, string> | undefined;
		for (const [key, text] of entries ? Array.from(entries.entries()) : []) {
			const plain = stripAnsi(String(text)).replace(/[\r\n\t]/g, " ").replace(/ +/g, " ").trim();
			if (plain) statuses.push({ key: String(key), text: plain });
		}
		statuses.sort((a, b) => a.key.localeCompare(b.key));
		const enabled = attempt(() => this.pi.getSettings?.()?.compaction?.enabled);
		const auto_compaction = typeof this.pi.getSettings === "function" ? enabled !== false : null;
		const body = JSON.stringify({ statuses, auto_compaction });
		if (body === this.footerStatusSent) return;
		this.footerStatusSent = body;
		this.emit("footer_status", { statuses, auto_compaction });
	}

	/**
	 * Asks Pi to draw. Pi hands its TUI only to the factories of components: the footer's keeps
	 * it (hide_footer), else an empty widget lends it and is removed at once (both before Pi
	 * draws, so nothing shows).
	 */
	private requestRender(ui: any) {
		if (!this.piTui && typeof ui?.setWidget === "function") {
			attempt(() => {
				ui.setWidget(RENDER_WIDGET_KEY, (tui: any) => {
					this.piTui = tui;
					return { render: () => [], invalidate() {} };
				});
				ui.setWidget(RENDER_WIDGET_KEY, undefined);
			});
		}
		attempt(() => this.piTui?.requestRender?.());
	}

	/** Plain lines above Pi's editor under `key`; no lines removes them. */
	private setWidget(key: string, lines: unknown): boolean {
		const ctx = needCtx(this.ctx);
		if (typeof ctx.ui?.setWidget !== "function") throw new BridgeFailure("unsupported", "this Pi cannot show widgets");
		if (!key) throw new BridgeFailure("bad_message", "set_widget needs a key");
		const content = Array.isArray(lines) ? lines.map((line) => String(line)) : undefined;
		ctx.ui.setWidget(key, content, { placement: "aboveEditor" });
		return Boolean(ctx.hasUI);
	}

	private checkQueue(ctx: any) {
		const pending = Boolean(attempt(() => ctx?.hasPendingMessages?.()));
		if (pending === this.queuePending) return;
		this.queuePending = pending;
		this.emit("queue_update", { pending });
	}
}

// --- helpers -----------------------------------------------------------------------------------

/** What this Pi offers, found by looking, not by version number. */
function probeCapabilities(pi: any, ctx: any, piModule: any): Msg {
	const functions = (object: any) =>
		object ? Object.keys(object).filter((key) => typeof object[key] === "function").sort() : [];
	// An optional event exists when Pi's session emits it: its name is a literal in the source of
	// AgentSession's methods. Unknown means absent; an event that arrives anyway still counts.
	const proto = piModule?.AgentSession?.prototype;
	const source = proto
		? Object.getOwnPropertyNames(proto)
				.map((name) => {
					const value = Object.getOwnPropertyDescriptor(proto, name)?.value;
					return typeof value === "function" ? String(value) : "";
				})
				.join("\n")
		: "";
	const tools = attempt(() => pi.getAllTools?.()) ?? [];
	return {
		events: OPTIONAL_EVENTS.filter((name) => source.includes(`"${name}"`)),
		methods: functions(pi),
		ui: functions(ctx?.ui),
		tool_exposure: Array.isArray(tools) && tools.some((tool: Msg) => tool && "exposure" in tool),
		// `pi.sendUserMessage` runs a command when asked to (`expandPromptTemplates`).
		command_dispatch: /expandPromptTemplates:\s*options\?\.expandPromptTemplates/.test(source),
		mode: typeof ctx?.mode === "string" ? ctx.mode : null,
		has_ui: typeof ctx?.hasUI === "boolean" ? ctx.hasUI : null,
	};
}

async function importFirst(names: string[]): Promise<any> {
	for (const name of names) {
		try {
			return await import(name);
		} catch {
			// not this Pi line's name
		}
	}
	return undefined;
}

function needCtx(ctx: any): any {
	if (!ctx) throw new BridgeFailure("unsupported", "no Pi session is active yet");
	return ctx;
}

/** What the host needs to answer `session_before_compact` (the branch as Pi's raw entries). */
function compactionHookData(event: any, ctx: any): Msg {
	const preparation = event.preparation ?? {};
	const sm = ctx?.sessionManager;
	return {
		reason: event.reason ?? null,
		custom_instructions: event.customInstructions ?? null,
		will_retry: Boolean(event.willRetry),
		tokens_before: preparation.tokensBefore ?? null,
		first_kept_entry_id: preparation.firstKeptEntryId ?? null,
		previous_summary: preparation.previousSummary ?? null,
		branch_entries: Array.isArray(event.branchEntries) ? event.branchEntries : null,
		session_file: attempt(() => sm?.getSessionFile?.()) ?? null,
		session_id: attempt(() => sm?.getSessionId?.()) ?? null,
		leaf_id: attempt(() => sm?.getLeafId?.()) ?? null,
	};
}

function usage(u: any): Msg | null {
	if (!u) return null;
	return {
		input: u.input ?? 0,
		output: u.output ?? 0,
		cache_read: u.cacheRead ?? 0,
		cache_write: u.cacheWrite ?? 0,
		total_tokens: u.totalTokens ?? 0,
		cost: u.cost?.total ?? 0,
	};
}

function contextUsage(ctx: any): Msg | null {
	const u = attempt(() => ctx?.getContextUsage?.());
	if (!u) return null;
	return { tokens: u.tokens ?? null, context_window: u.contextWindow ?? 0, percent: u.percent ?? null };
}

function modelInfo(model: any): Msg | null {
	if (!model) return null;
	const cost = model.cost;
	return {
		provider: model.provider,
		id: model.id,
		name: model.name ?? null,
		context_window: model.contextWindow ?? null,
		max_tokens: model.maxTokens ?? null,
		reasoning: Boolean(model.reasoning),
		vision: Array.isArray(model.input) && model.input.includes("image"),
		has_auth: null,
		cost: cost
			? { input: cost.input ?? 0, output: cost.output ?? 0, cache_read: cost.cacheRead ?? 0, cache_write: cost.cacheWrite ?? 0 }
			: null,
	};
}

/** Pi's theme colour for each card tint. */
const CARD_TINTS: Record<string, string> = { info: "accent", success: "success", warning: "warning", error: "error" };
/** The workbench theme's `#rrggbb` per tint, from `welcome` (preferred over Pi's when set). */
let cardColors: Record<string, string> = {};

/** `text` in the workbench's colour for `tint`, or undefined when it sent none. */
function workbenchTint(tint: string, text: string): string | undefined {
	const match = /^#([0-9a-f]{2})([0-9a-f]{2})([0-9a-f]{2})$/i.exec(cardColors[tint] ?? "");
	if (!match) return undefined;
	const [r, g, b] = match.slice(1).map((hex) => parseInt(hex, 16));
	return `\x1b[38;2;${r};${g};${b}m${text}\x1b[39m`;
}

/** `details.card` when it is a well-formed card (a string title at least), else undefined. */
function cardOf(details: unknown): Msg | undefined {
	const card = (details as Msg | null | undefined)?.card;
	if (!card || typeof card !== "object" || typeof card.title !== "string") return undefined;
	return card;
}

/** `text` without terminal escape sequences (colours, OSC links). */
function stripAnsi(text: string): string {
	return text.replace(/\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)/g, "").replace(/\x1b\[[0-9;?]*[ -\/]*[@-~]/g, "").replace(/\x1b./g, "");
}

/** The card's lines in Pi's theme: a tinted bold title, indented body lines, a dim footer. */
function cardText(card: Msg, theme: any): string {
	const name = typeof card.tint === "string" && card.tint in CARD_TINTS ? card.tint : "info";
	const title = theme.bold(card.title);
	const rows = [workbenchTint(name, title) ?? theme.fg(CARD_TINTS[name], title)];
	for (const line of Array.isArray(card.lines) ? card.lines : []) rows.push("  " + String(line));
	if (typeof card.footer === "string" && card.footer) rows.push(theme.fg("dim", card.footer));
	return rows.join("\n");
}

interface ToolPolicy {
	allowed: Set<string>;
	reason: string;
	/** Tools whose `path` argument must lie under `root` (symlinks followed). */
	paths?: { tools: Set<string>; root: string; reason: string };
}

function toolPolicy(p: Msg): ToolPolicy {
	const names = (list: unknown) => new Set(Array.isArray(list) ? list.map((name: unknown) => String(name)) : []);
	const rule = p.paths;
	return {
		allowed: names(p.allowed),
		reason: String(p.reason ?? "Tool {tool} is not allowed now"),
		paths:
			rule && typeof rule.root === "string"
				? { tools: names(rule.tools), root: realish(nodePath.resolve(rule.root)) ?? rule.root, reason: String(rule.reason ?? "{tool} of {path} is not allowed now") }
				: undefined,
	};
}

/** A policy reason with the tool's name and the path it asked for filled in. */
function fill(reason: string, tool: string, path: string): string {
	return reason.split("{tool}").join(tool).split("{path}").join(path);
}

/** Where a tool's `path` argument lands, resolved as Pi's tools resolve it (Unicode spaces, an
 * `@` prefix, `~`, `file://` URLs, relative to Pi's cwd), symlinks followed; `undefined` when
 * that cannot be known (a dangling link on the way). */
function resolveToolPath(asked: string, cwd: string): string | undefined {
	let path = asked.replace(/[\u00A0\u2000-\u200A\u202F\u205F\u3000]/g, " ");
	if (path.startsWith("@")) path = path.slice(1);
	if (path === "~") path = os.homedir();
	else if (path.startsWith("~/")) path = nodePath.join(os.homedir(), path.slice(2));
	else if (/^file:\/\//.test(path)) path = attempt(() => fileURLToPath(path)) ?? path;
	return realish(nodePath.resolve(cwd, path));
}

/** `path` with the symlinks of its longest existing part followed (the rest is yet to be
 * created); `undefined` when an entry on the way exists but cannot be resolved (a dangling
 * link, which a write would follow anywhere). */
function realish(path: string): string | undefined {
	const missing: string[] = [];
	let head = path;
	for (;;) {
		const real = attempt(() => fs.realpathSync(head));
		if (real !== undefined) return nodePath.join(real, ...missing);
		if (attempt(() => fs.lstatSync(head)) !== undefined) return undefined;
		const parent = nodePath.dirname(head);
		if (parent === head) return path;
		missing.unshift(nodePath.basename(head));
		head = parent;
	}
}

/** Whether `path` is `root` or inside it (both absolute and resolved). */
function isWithin(root: string, path: string): boolean {
	const relative = nodePath.relative(root, path);
	return relative === "" || (relative !== ".." && !relative.startsWith(`..${nodePath.sep}`) && !nodePath.isAbsolute(relative));
}

/** An assistant message's text for the host (the loop's completion marker), its last 64 KiB. */
function messageText(content: unknown): string {
	const text = textOf(content);
	return text.length > 65536 ? text.slice(text.length - 65536) : text;
}

function textOf(content: unknown): string {
	if (!Array.isArray(content)) return typeof content === "string" ? content : "";
	return content
		.filter((block) => block?.type === "text")
		.map((block) => block.text)
		.join("\n");
}

function attempt<T>(f: () => T): T | undefined {
	try {
		return f();
	} catch {
		return undefined;
	}
}

function sleep(ms: number): Promise<void> {
	return new Promise((resolve) => setTimeout(resolve, ms));
}
