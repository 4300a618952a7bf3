import { realpathSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { nativeCopilotBinary } from '../../src/adapters/copilot/binary.js';
import { copilotAdapter } from '../../src/adapters/copilot/index.js';
import { cliBin } from '../support/clis.js';

/**
 * `node_modules/.bin/copilot` is the npm loader (a node script that runs the platform package's
 * native binary and waits for it). cal pins and runs the native binary itself, so a signal (cancel's
 * SIGINT) and tmux reach Copilot with no node process between (docs/copilot.md).
 */
describe('the Copilot binary cal pins', () => {
  const loader = cliBin('copilot');
  const native = path.join('@github', `copilot-linux-${process.arch}`, 'copilot');

  it('is the platform package’s native binary behind the npm loader', () => {
    expect(realpathSync(loader)).toMatch(/@github\/copilot\/npm-loader\.js$/);
    expect(nativeCopilotBinary({ path: loader, realPath: realpathSync(loader) })).toMatch(new RegExp(`${native.replace(/\//g, '\\/')}$`));
  });

  it('is what resolveCli pins, with the platform package’s version (the binary is not run)', async () => {
    const pinned = await copilotAdapter.resolveCli(loader, { PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: '/nonexistent' });
    expect(pinned.realPath.endsWith(native)).toBe(true);
    expect(pinned.version).toBe('1.0.102');
  });
});
