import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { buildProgram, commandModules, commandWord, normaliseArgv, specsFor } from '../../src/cli.js';
import { stateDirArg } from '../../src/cli-argv.js';
import { flagOf, type CommandSpec } from '../../src/commands/spec.js';
import { repoRoot } from '../support/clis.js';

/**
 * Each command declares its flags once, in the spec beside its behaviour; src/cli.ts builds
 * commander from the specs and loads only the spec of the command being run.
 */
async function allSpecs(): Promise<CommandSpec[]> {
  return Promise.all(Object.values(commandModules).map(async (load) => (await load()).command));
}

describe('command specs', () => {
  it('every command module exports one spec, and the program has each command once, in help order', async () => {
    const specs = await allSpecs();
    expect(specs.map((s) => s.name)).toEqual(['start', 'continue', 'kill-tmux', 'remove', 'cancel', 'attach', 'reap', 'inspect', 'ls', 'show', 'wait', 'events', 'run', 'lock', 'recover', 'worker', 'certify', 'demo', 'doctor', 'model serve', 'model env']);
    const program = buildProgram(specs, () => undefined);
    expect(program.commands.map((c) => c.name())).toEqual(['start', 'continue', 'kill-tmux', 'remove', 'cancel', 'attach', 'reap', 'inspect', 'ls', 'show', 'wait', 'events', 'run', 'lock', 'recover', 'worker', 'certify', 'demo', 'doctor', 'model']);
    const model = program.commands.find((c) => c.name() === 'model')!;
    expect(model.description()).toBe('the scripted model server');
    expect(model.commands.map((c) => c.name())).toEqual(['serve', 'env']);
  });

  it("a command's options are exactly its spec's, with the flag spelled from the key", async () => {
    for (const spec of await allSpecs()) {
      const program = buildProgram([spec], () => undefined);
      const words = spec.name.split(' ');
      let command = program;
      for (const word of words) command = command.commands.find((c) => c.name() === word)!;
      expect(command.options.map((o) => o.long)).toEqual(Object.keys(spec.options).map(flagOf));
      for (const [key, o] of Object.entries(spec.options)) {
        const option = command.options.find((x) => x.long === flagOf(key))!;
        expect(option.flags).toBe(o.value ? `${flagOf(key)} ${o.value}` : flagOf(key));
        // A required option is checked by cal after commander's own checks (so a misspelt flag is
        // reported as unknown, test/unit/cli-errors.test.ts), never by commander.
        expect(option.mandatory).toBe(false);
        expect(option.argChoices).toEqual(o.choices ? [...o.choices] : undefined);
      }
      expect(command.registeredArguments.map((a) => [a.name(), a.required, a.variadic])).toEqual(spec.args.map((a) => [a.name, a.required === true, a.variadic === true]));
    }
    expect(flagOf('systemPromptFile')).toBe('--system-prompt-file');
  });

  it('no command module declares its options a second time as an interface', () => {
    const offenders: string[] = [];
    for (const file of ['start', 'continue', 'kill-tmux', 'remove', 'cancel', 'attach', 'inspect', 'ls', 'show', 'events', 'run', 'lock', 'recover', 'certify', 'demo', 'model-serve']) {
      const text = readFileSync(path.join(repoRoot, 'src', 'commands', `${file}.ts`), 'utf8');
      for (const m of text.matchAll(/interface (\w*Options)\b/g)) offenders.push(`${file}.ts: ${m[1]}`);
      if (/\.option\(|new Option\(/.test(text)) offenders.push(`${file}.ts registers commander options itself`);
    }
    expect(offenders).toEqual([]);
  });

  it('finds the command word past the global options, and loads only what the run needs', async () => {
    expect(commandWord(['--state-dir', '/tmp/x', 'continue', 'h', 'msg'])).toBe('continue');
    expect(commandWord(['--state-dir=/tmp/x', 'start', '--provider', 'pi'])).toBe('start');
    expect(commandWord(['--version'])).toBeNull();
    expect(commandWord(['--state-dir'])).toBeNull();
    expect(commandWord(['--fleet', 'redis://h:6379', 'continue', 'h', 'msg'])).toBe('continue');
    expect(commandWord(['model', 'serve'])).toBe('model');
    // The global --state-dir in either form, the last one given, never past `--`.
    expect(stateDirArg(['--state-dir', '/a', 'continue', 'h', 'm'])).toBe('/a');
    expect(stateDirArg(['continue', 'h', '--state-dir=/b', 'm'])).toBe('/b');
    expect(stateDirArg(['--state-dir', '/a', '--state-dir=/b', 'continue'])).toBe('/b');
    expect(stateDirArg(['continue', 'h', '--', '--state-dir=/c'])).toBeUndefined();
    expect(await specsFor(['--version'])).toEqual([]);
    expect(await specsFor(['-V'])).toEqual([]);
    expect((await specsFor(['--state-dir', 'x', 'continue', 'h', 'm'])).map((s) => s.name)).toEqual(['continue']);
    expect((await specsFor(['model', 'serve'])).map((s) => s.name)).toEqual(['model serve']);
    // An alias loads its command's module alone.
    expect((await specsFor(['list', '--live'])).map((s) => s.name)).toEqual(['ls']);
    expect((await specsFor(['ls'])).map((s) => s.name)).toEqual(['ls']);
    expect((await specsFor(['model', 'env', '--url', 'x'])).map((s) => s.name)).toEqual(['model env']);
    expect((await specsFor(['model', '--help'])).map((s) => s.name)).toEqual(['model serve', 'model env']);
    // Help and unknown words need every command (to list them, or to suggest one).
    for (const args of [[], ['--help'], ['help', 'start'], ['strat']]) expect(await specsFor(args)).toHaveLength(21);
  });

  it('a bare --wait never swallows the message after it', () => {
    expect(normaliseArgv(['node', 'cal', 'continue', 'h', '--wait', 'hello'])).toEqual(['node', 'cal', 'continue', 'h', '--wait=forever', 'hello']);
  });
});
