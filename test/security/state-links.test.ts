import { existsSync, lstatSync, mkdirSync, readFileSync, symlinkSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { SIGNAL_FILE, SETTINGS_FILE, hookSettings, writeHookSettings } from '../../src/adapters/claude-code/signals.js';
import { writePluginDir } from '../../src/adapters/cursor/store.js';
import { recordNextLaunch } from '../../src/adapters/early-launch.js';
import { prepareManagedHome } from '../../src/adapters/gemini/managed-home.js';
import { feedSignals } from '../../src/engine/transcript-feed.js';
import { CalError } from '../../src/errors.js';
import { scratchDir } from '../support/cal.js';
import { removeScratch } from '../support/scratch.js';
import { execFileSync } from 'node:child_process';

/**
 * Issue 40, item 5: nothing cal writes or reads in its state directory goes through a link
 * planted there (homes/<id> itself, the Claude settings and signal files, the Gemini managed home,
 * the Cursor plugin folder, the early-launch record), before or after a check: refused with a
 * typed error, the link's target untouched.
 */
describe('links planted under homes/ are never written or read through', () => {
  let root: string;
  let homes: string;
  let target: string;
  const VICTIM = 'victim: must stay as it is\n';

  beforeEach(async () => {
    root = await scratchDir('sec-links');
    homes = path.join(root, 'state', 'homes');
    mkdirSync(homes, { recursive: true, mode: 0o700 });
    target = path.join(root, 'victim');
    mkdirSync(target, { mode: 0o700 });
    writeFileSync(path.join(target, 'file'), VICTIM);
  });
  afterEach(async () => removeScratch(root));

  const sessionDir = () => path.join(homes, 'abcdef12');
  const victimUntouched = () => {
    expect(readFileSync(path.join(target, 'file'), 'utf8')).toBe(VICTIM);
  };
  const refused = (fn: () => unknown) => {
    let err: unknown;
    try {
      fn();
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CalError);
    expect((err as CalError).kind).toBe('usage');
  };

  it('Claude: a linked claude-settings.json or claude-signals.jsonl is refused, its target unchanged', () => {
    for (const name of [SETTINGS_FILE, SIGNAL_FILE]) {
      mkdirSync(sessionDir(), { recursive: true, mode: 0o700 });
      const link = path.join(sessionDir(), name);
      symlinkSync(path.join(target, 'file'), link);
      refused(() => writeHookSettings(sessionDir(), '2.1.328'));
      victimUntouched();
      expect(lstatSync(link).isSymbolicLink()).toBe(true);
      execFileSync('rm', ['-rf', sessionDir()]);
    }
    // A dangling link (its target created by a write through it) and a FIFO: refused too.
    mkdirSync(sessionDir(), { recursive: true, mode: 0o700 });
    symlinkSync(path.join(target, 'made-through-link'), path.join(sessionDir(), SIGNAL_FILE));
    refused(() => writeHookSettings(sessionDir(), '2.1.328'));
    expect(existsSync(path.join(target, 'made-through-link'))).toBe(false);
    execFileSync('rm', ['-rf', sessionDir()]);
    mkdirSync(sessionDir(), { recursive: true, mode: 0o700 });
    execFileSync('mkfifo', [path.join(sessionDir(), SIGNAL_FILE)]);
    refused(() => writeHookSettings(sessionDir(), '2.1.328'));
  });

  it('homes/<id> itself a link: refused before anything is written into its target, for every writer', async () => {
    symlinkSync(target, sessionDir());
    refused(() => writeHookSettings(sessionDir(), '2.1.328'));
    refused(() => prepareManagedHome({ HOME: root, PATH: '/usr/bin:/bin' }, { cwd: root, model: null, systemPrompt: 'p', mcpConfigPath: null, toolPolicy: 'default' }, sessionDir()));
    const mcp = path.join(root, 'mcp.json');
    writeFileSync(mcp, JSON.stringify({ mcpServers: {} }));
    expect(await writePluginDir(sessionDir(), mcp).then(() => undefined, (e: unknown) => e)).toBeInstanceOf(CalError);
    recordNextLaunch(sessionDir(), 'claude-code', { argv: ['claude'], env: {}, cwd: root }, {}, null);
    expect(execFileSync('ls', ['-A', target], { encoding: 'utf8' }).trim()).toBe('file');
    victimUntouched();
  });

  it('the hook commands never append through a link put in the signal file\'s place after cal created it', () => {
    mkdirSync(sessionDir(), { recursive: true, mode: 0o700 });
    const { signalFile } = writeHookSettings(sessionDir(), '2.1.328');
    expect(lstatSync(signalFile).isFile()).toBe(true);
    execFileSync('rm', [signalFile]);
    symlinkSync(path.join(target, 'file'), signalFile);
    for (const version of ['2.1.328', '2.1.29']) {
      const hooks = hookSettings(signalFile, version) as { hooks: { Stop: Array<{ hooks: Array<{ command: string }> }> } };
      const command = hooks.hooks.Stop[0]!.hooks[0]!.command;
      execFileSync('/bin/sh', ['-c', command], { input: '{"hook_event_name":"Stop","session_id":"x"}' });
      victimUntouched();
    }
  });

  it('the signal file read by the engine is never read through a link', async () => {
    mkdirSync(sessionDir(), { recursive: true, mode: 0o700 });
    const link = path.join(sessionDir(), SIGNAL_FILE);
    writeFileSync(path.join(target, 'file'), '{"hook_event_name":"Stop","session_id":"x"}\n');
    symlinkSync(path.join(target, 'file'), link);
    const seen: unknown[] = [];
    const err = await feedSignals(link, 0, { feedSignal: (v: unknown) => seen.push(v) } as never).then(() => undefined, (e: unknown) => e);
    expect(err).toBeInstanceOf(CalError);
    expect(seen).toEqual([]);
  });
});
