import { openSessions, toolPolicies, transports } from '../index.js';
import { parseHandleRef } from '../state/store.js';
import { checkSystemPromptFlags, parseSeconds, cancelOnInterrupt, parseWait, readMessage, renderError, renderTurnCall, systemPromptOf, openOptions } from './common.js';
import { liveOutput } from './progress.js';
import { defineCommand } from './spec.js';

export const command = defineCommand({
  name: 'continue',
  help: 'send a message to a session: paste into its live pane, or resume it natively in a new one',
  args: [
    { name: 'handle', help: 'handle id or name', required: true },
    { name: 'message', help: 'the message, or - to read it from stdin' },
  ],
  options: {
    cwd: { value: '<dir>', help: 'expected working directory (stale_handle if it differs)' },
    model: { value: '<model>', help: 'expected model (stale_handle if it differs)' },
    systemPrompt: { value: '<text>', help: 'expected system prompt' },
    systemPromptFile: { value: '<file>', help: 'expected system prompt, from a file' },
    mcpConfig: { value: '<file>', help: 'expected MCP config' },
    toolPolicy: { value: '<policy>', help: 'expected tool policy (stale_handle if it differs)', choices: toolPolicies },
    acpCommand: { value: '<command line>', help: 'expected ACP agent command line of a --provider acp session (stale_handle if it differs)' },
    noTrust: { help: 'from this turn on, never trust the working directory on your behalf (recorded on the handle; docs/security.md)' },
    transport: { value: '<kind>', help: 'expected transport (non_applicable if the handle runs on another: a handle keeps its transport)', choices: transports },
    wait: { value: '[seconds]', help: 'wait in line while another continuation runs, forever or --wait=S seconds (default: fail with busy)' },
    timeout: { value: '<seconds>', help: 'give up waiting for the end of the turn after this long' },
    hostWait: { value: '<seconds>', help: 'through a fleet: how long to wait for the host to be up before host_unavailable (default 30)' },
    events: { help: 'stream lifecycle events as NDJSON on stderr' },
    stream: { help: "print the assistant's text and tool activity as the CLI records them (NDJSON events with --json)" },
    detach: { help: 'return once the turn is recorded and sent: the turn id on stdout (JSON with --json); cal wait prints its result' },
    json: { help: 'print one JSON object on stdout' },
  },
  async run([ref, messageArg], opts, global) {
    try {
      parseHandleRef(ref);
      checkSystemPromptFlags(opts);
      // The detached cal's own run (commands/detach.ts) tells the cal that started it when its message left.
      // Loaded only when detaching, or in the detached cal (CAL_DETACHED_CHILD): not on every continue.
      const detach = opts.detach || process.env.CAL_DETACHED_CHILD ? await import('./detach.js') : null;
      const onSent = detach?.detachedOnSent();
      if (detach && opts.detach && !onSent) return await detach.runDetached(opts, messageArg === '-');
      const message = await readMessage(messageArg);
      const wait = parseWait(opts.wait);
      const sessions = await openSessions(openOptions(global));
      const live = await liveOutput(opts, 'sending');
      return await renderTurnCall(
        async () =>
          sessions.continue(ref, message, {
            cwd: opts.cwd,
            model: opts.model,
            systemPrompt: await systemPromptOf(opts),
            mcpConfig: opts.mcpConfig,
            toolPolicy: opts.toolPolicy,
            acpCommand: opts.acpCommand,
            ...(opts.noTrust ? { trustWorkingDir: false } : {}),
            transport: opts.transport,
            wait,
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
