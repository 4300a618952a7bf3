import { afterAll, describe, expect, it } from 'vitest';
import { handleFromStderr } from '../support/cal.js';
import { cliSuite, type CliSuite, type SuiteProvider } from '../support/cli-suite.js';

/**
 * A pane started under the bypass tool policy takes pastes like any other: some TUIs draw their
 * input box differently in that mode (Gemini CLI and Qwen Code open it with `*` in YOLO mode, not
 * `>`), and a box cal cannot read is refused as a possible draft. Every pane CLI, the real pinned
 * binary: start with `--tool-policy bypass`, then continue into the live pane and recall.
 * CAL_BYPASS_PROVIDERS picks the CLIs (default: every pane CLI; Pi and Qwen only where cal runs
 * on Node >= 22.19, as CI does: docs/node.md).
 */
const TIMEOUT = ['--timeout', '120'];
const [major = 0, minor = 0] = process.versions.node.split('.').map(Number);
const node22 = major > 22 || (major === 22 && minor >= 19);
const providers = (process.env.CAL_BYPASS_PROVIDERS ?? `claude-code,codex,gemini,copilot,opencode${node22 ? ',pi,qwen' : ''}`)
  .split(',')
  .filter(Boolean) as SuiteProvider[];

describe.each(providers)('%s under --tool-policy bypass, in tmux', (provider) => {
  let suite: CliSuite | undefined;
  afterAll(async () => {
    await suite?.close();
  });

  it('the live pane takes the pasted continue (no draft read into its box) and recalls', async () => {
    suite = await cliSuite(provider, { prefix: `bypass-${provider}` });
    const start = await suite.cal(['start', '--provider', provider, '--tool-policy', 'bypass', '--cwd', suite.work, ...TIMEOUT, 'Remember the codeword KIWI.']);
    expect(start.code, start.stderr).toBe(0);
    const handle = handleFromStderr(start.stderr) ?? '';
    const before = await suite.inspect(handle);
    const run = await suite.cal(['continue', handle, '--json', ...TIMEOUT, 'What was the codeword?']);
    expect(run.code, run.stderr).toBe(0);
    expect(run.json.turn).toMatchObject({ status: 'completed', answer: 'The codeword was KIWI.' });
    const after = await suite.inspect(handle);
    expect(after.provider.tmux.paneId).toBe(before.provider.tmux.paneId);
    expect(after.panes).toHaveLength(1);
  });
});
