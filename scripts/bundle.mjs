#!/usr/bin/env node
// Bundles the command-line entry (dist/cli.js, tsc's output) into CommonJS chunks in dist/bin/:
// a start of `cal` then reads a few chunks instead of resolving and linking ~250 modules (zod
// alone was ~95 of them), and bin/cal.cjs compiles them through V8's code cache
// (src/util/compile-cache.cts), which Node 20 offers to CommonJS only. Commands and adapters stay
// behind their dynamic imports, so each becomes its own chunk, loaded when used. The library
// entry (dist/index.js) is not bundled: programs import tsc's modules as they are.
//
// The TUI (Ink and React, whose modules use top-level await) stays outside: commands/inspect.ts
// requires tsc's dist/tui/load.js by a path computed at run time, so the bundler never sees it.
import { readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { build } from 'rolldown';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
// Never reached from the bundle (the TUI is loaded by path). Should a module import them anyway,
// they stay imports of node_modules: Ink cannot be turned into CommonJS (top-level await).
// BullMQ and ioredis (the fleet, docs/fleet.md) stay packages: BullMQ reads its Lua scripts from
// its own folder, and only a fleet call loads them.
const outside = /^(ink|react|bullmq|ioredis)(\/|$)/;
// util/package-root.js finds the package two folders above its chunk: dist/bin/ keeps that true.
const outDir = path.join(root, 'dist', 'bin');
rmSync(outDir, { recursive: true, force: true });

// Every chunk a command loads costs about half a millisecond on its own (resolving, reading it
// and its code-cache entry, a vm.Script, a require), so cal's shared modules are grouped into two
// chunks instead of the two dozen the automatic split makes:
// - `base`: what the entry itself imports, so `cal --version` reads one chunk besides the entry;
// - `core`: everything the commands share (state, sessions, engine, the adapters' common parts,
//   zod). Each command, each CLI's adapter folder, and what only certify, the scripted model or
//   the TUI need keep chunks of their own, loaded when used.
const dist = path.join(root, 'dist') + path.sep;
const own = (id) => id.startsWith(dist) && !id.includes(`${path.sep}node_modules${path.sep}`);
const relative = (id) => id.slice(dist.length).split(path.sep).join('/');
// With them, what bin/cal.cjs runs before the command line (commands/early-start.js, the entry
// `early`): it may start a CLI, and the sooner the better.
const baseModules = new Set(['errors.js', 'commands/spec.js', 'util/timing.js', 'util/package-root.js', 'util/closed-pipe.js', 'cli-argv.js', 'commands/early-start.js', 'sessions/early-start.js', 'handles/id.js', 'adapters/early-launch.js', 'util/spawn.js', 'state/paths.js', 'util/private-dir.js', 'util/random.js', 'util/process-identity.js']);
// The commands' own modules, read from cli.ts's table of them (so a new command gets its chunk
// without a second list here to keep).
const cliTable = /commandModules[^=]*=\s*\{([\s\S]*?)\};/.exec(readFileSync(path.join(root, 'dist', 'cli.js'), 'utf8'))?.[1] ?? '';
const commandEntries = new Set([...cliTable.matchAll(/import\('\.\/(commands\/[a-z-]+\.js)'\)/g)].map((m) => m[1]));
if (commandEntries.size === 0) throw new Error('scripts/bundle.mjs: no command modules found in dist/cli.js commandModules');
const ownChunks = /^(cli\.js|commands\/register\.js|adapters\/[^/]+\/|certify\/(?!types\.js)|model\/|tui\/|workflow\/|fleet\/)/;
// Only zod 3's modules (util/zod.ts: the API every cal schema uses). zod 4 is the ACP SDK's: in
// core it made every command load it (18 modules, 97 KB: a `cal continue`'s module graph took
// 14.4 ms with it, 11.0 ms without, medians of 11); it belongs with the adapters that load the SDK.
const zod = /[\\/]node_modules[\\/]zod[\\/]v3[\\/]/;
const isBase = (id) => own(id) && baseModules.has(relative(id));
const isCore = (id) => zod.test(id) || (own(id) && !commandEntries.has(relative(id)) && !ownChunks.test(relative(id)));

// cal's version, read here once instead of from package.json at every start (util/package-root.ts).
const { version } = JSON.parse(readFileSync(path.join(root, 'package.json'), 'utf8'));
if (typeof version !== 'string') throw new Error('scripts/bundle.mjs: package.json has no version');

const result = await build({
  input: { cli: path.join(root, 'dist', 'cli.js'), early: path.join(root, 'dist', 'commands', 'early-start.js') },
  platform: 'node',
  transform: { define: { __CAL_VERSION__: JSON.stringify(version) } },
  external: (id) => outside.test(id),
  logLevel: 'warn',
  output: {
    dir: outDir,
    format: 'cjs',
    entryFileNames: '[name].cjs',
    chunkFileNames: '[name]-[hash].cjs',
    // BUNDLE_MINIFY=0 keeps names and lines, for reading a CPU profile of a command.
    minify: process.env.BUNDLE_MINIFY !== '0',
    codeSplitting: {
      groups: [
        { name: 'base', test: isBase, priority: 2 },
        { name: 'core', test: isCore, priority: 1 },
      ],
    },
  },
});
// BUNDLE_LIST=1 prints which modules went into which chunk (for tuning the groups above).
if (process.env.BUNDLE_LIST) for (const c of result.output) if (c.type === 'chunk') console.log(c.fileName, c.code.length, c.moduleIds.map((m) => m.replace(/.*\/dist\//, '').replace(/.*node_modules\//, 'nm:')).join(' '));
