import { CalError, openSessions, providerNames, toolPolicies, transports } from '../index.js';
import { checkSystemPromptFlags, parseSeconds, cancelOnInterrupt, readMessage, renderError, renderTurnCall, systemPromptOf, openOptions } from './common.js';
import { liveOutput } from './progress.js';
import { defineCommand } from './spec.js';

export const command = defineCommand({
  name: 'start',
  help: 'start a session and send its first message; the answer on stdout, the handle on stderr',
  args: [{ name: 'message', help: 'the first message, or - to read it from stdin' }],
  options: {
    provider: { value: '<name>', help: 'which CLI or API', choices: providerNames, required: true },
    cwd: { value: '<dir>', help: 'working directory of the session (default: the current one)' },
    model: { value: '<model>', help: 'model name passed to the CLI' },
    transport: { value: '<kind>', help: 'how cal drives the CLI', choices: transports },
    name: { value: '<name>', help: 'a name to use instead of the handle id' },
    replace: { help: 'with --name: remove the handle that has this name first (refused while it is busy)' },
    systemPrompt: { value: '<text>', help: 'system prompt appended natively by the CLI' },
    systemPromptFile: { value: '<file>', help: 'read the system prompt from a file' },
    mcpConfig: { value: '<file>', help: 'MCP config file handed to the CLI' },
    toolPolicy: { value: '<policy>', help: "what the CLI may do without asking: default (the CLI's own settings), read-only, accept-edits, bypass", choices: toolPolicies },
    noTrust: { help: "never trust the working directory on your behalf (a CLI that asks fails untrusted_folder); kept for the session's continues (docs/security.md)" },
    cliPath: { value: '<path>', help: 'the CLI executable to pin (default: found on PATH)' },
    worktree: { help: 'run the session in a new git worktree of the repository --cwd is in, beside it at <repo>.cal-worktrees/<name> (docs/commands.md)' },
    branch: { value: '<name>', help: 'with --worktree: the new branch (default: cal/<name or handle id>)' },
    acpCommand: { value: '<command line>', help: 'with --provider acp: the ACP agent to run, as words (no shell), e.g. "gemini --acp"' },
    timeout: { value: '<seconds>', help: 'give up waiting for the end of the turn after this long' },
    hostWait: { value: '<seconds>', help: 'through a fleet: how long to wait for the host to be up before host_unavailable (default 30)' },
    events: { help: 'stream lifecycle events as NDJSON on stderr' },
    stream: { help: "print the assistant's text and tool activity as the CLI records them (NDJSON events with --json)" },
    detach: { help: 'return once the turn is recorded and sent: the turn id on stdout (JSON with --json); cal wait prints its result' },
    json: { help: 'print one JSON object on stdout' },
  },
  async run([messageArg], opts, global) {
    try {
      checkSystemPromptFlags(opts);
      if (opts.replace && opts.name === undefined) throw new CalError('usage', '--replace needs --name (the name to reuse)');
      // The detached cal's own run (commands/detach.ts) tells the cal that started it when its message left.
      // Loaded only when detaching, or in the detached cal (CAL_DETACHED_CHILD): not on every continue.
      const detach = opts.detach || process.env.CAL_DETACHED_CHILD ? await import('./detach.js') : null;
      const onSent = detach?.detachedOnSent();
      if (detach && opts.detach && !onSent) return await detach.runDetached(opts, messageArg === '-');
      const message = await readMessage(messageArg);
      const sessions = await openSessions(openOptions(global));
      const live = await liveOutput(opts, 'starting');
      return await renderTurnCall(
        async () =>
          sessions.start({
            provider: opts.provider,
            message,
            cwd: opts.cwd,
            model: opts.model,
            transport: opts.transport,
            name: opts.name,
            replace: opts.replace === true,
            systemPrompt: await systemPromptOf(opts),
            mcpConfig: opts.mcpConfig,
            toolPolicy: opts.toolPolicy,
            ...(opts.noTrust ? { trustWorkingDir: false } : {}),
            cliPath: opts.cliPath,
            ...(opts.worktree ? { worktree: true } : {}),
            ...(opts.branch !== undefined ? { branch: opts.branch } : {}),
            acpCommand: opts.acpCommand,
            timeoutSeconds: opts.timeout ? parseSeconds(opts.timeout, '--timeout') : undefined,
            hostWaitSeconds: opts.hostWait ? parseSeconds(opts.hostWait, '--host-wait') : undefined,
            onEvent: live.onEvent,
            onProgress: live.onProgress,
            onSent,
            signal: cancelOnInterrupt(),
          }),
        live,
        opts,
      );
    } catch (err) {
      return renderError(err, opts);
    }
  },
});
