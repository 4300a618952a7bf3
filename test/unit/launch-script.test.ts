import { execFileSync } from 'node:child_process';
import { existsSync, mkdtempSync, readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { paneCommand } from '../../src/engine/launch-script.js';
import { removeScratch } from '../support/scratch.js';

/** The pane's launch script: private, self-removing, and the argv exactly as given. */
describe('paneCommand', () => {
  let root = '';
  afterEach(async () => removeScratch(root));

  it('writes a 0600 script in a 0700 folder it creates, which runs the argv byte for byte and removes itself', async () => {
    root = mkdtempSync(path.join(os.tmpdir(), 'cal-launch-script-'));
    const dir = path.join(root, 'session');
    const argv = ['printf', '%s|', "it's", 'a b', '$HOME', '-- "q"'];
    const [shell, file] = await paneCommand(dir, argv);
    expect(shell).toBe('/bin/sh');
    expect(path.dirname(file as string)).toBe(dir);
    expect(statSync(dir).mode & 0o777).toBe(0o700);
    expect(statSync(file as string).mode & 0o777).toBe(0o600);
    expect(readFileSync(file as string, 'utf8')).toContain('exec ');
    expect(execFileSync('/bin/sh', [file as string], { encoding: 'utf8' })).toBe(`it's|a b|$HOME|-- "q"|`);
    expect(existsSync(file as string)).toBe(false);
  });

  it('each launch gets its own script', async () => {
    root = mkdtempSync(path.join(os.tmpdir(), 'cal-launch-script-'));
    const a = await paneCommand(root, ['true']);
    const b = await paneCommand(root, ['true']);
    expect(a[1]).not.toBe(b[1]);
  });
});
