import { closeSync, openSync, readFileSync, readSync } from 'node:fs';
import path from 'node:path';
import { z } from '../util/zod.js';

/**
 * Which Node.js a CLI written for Node runs on (docs/node.md). cal starts such a CLI by its own
 * executable, whose `#!/usr/bin/env node` line finds the `node` first on the PATH cal passes it:
 * that node is the one it runs on. A CLI whose package declares a newer Node (`engines.node`,
 * e.g. Pi 1.x: >= 22.19) than that node is refused before it is launched, naming both and the
 * fix (put a newer node first on PATH), instead of dying inside the pane on a missing API
 * (checkCliNode in resolve.ts, when a CLI is pinned).
 */

const PackageEngines = z.object({ name: z.string().optional(), engines: z.object({ node: z.string().optional() }).optional() });

/** True when the file starts like a script (`#!`), not like a native executable. */
export function isScript(file: string): boolean {
  let fd: number | null = null;
  try {
    fd = openSync(file, 'r');
    const buf = Buffer.alloc(2);
    readSync(fd, buf, 0, 2, 0);
    return buf.toString('latin1') === '#!';
  } catch {
    return false;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

/** The lowest Node a plain `>=X.Y.Z` range admits, or null for a range cal does not place. */
export function engineFloor(range: string): string | null {
  const m = /^\s*>=\s*v?(\d+(?:\.\d+){0,2})\s*$/.exec(range);
  return m?.[1] ?? null;
}

/** Whether a file starts with a `#!` line that runs node. */
function runsOnNode(file: string): boolean {
  let fd: number | null = null;
  try {
    fd = openSync(file, 'r');
    const buf = Buffer.alloc(128);
    const n = readSync(fd, buf, 0, buf.length, 0);
    const first = buf.subarray(0, n).toString('utf8').split('\n')[0] ?? '';
    return /^#!.*\bnode\b/.test(first);
  } catch {
    return false;
  } finally {
    if (fd !== null) closeSync(fd);
  }
}

/** The package.json (with engines) of the package that holds `file`, nearest first. */
function owningPackage(file: string): { name: string; nodeRange: string } | null {
  let dir = path.dirname(file);
  for (let i = 0; i < 8; i++) {
    try {
      const parsed = PackageEngines.safeParse(JSON.parse(readFileSync(path.join(dir, 'package.json'), 'utf8')));
      if (parsed.success && parsed.data.name) {
        return parsed.data.engines?.node ? { name: parsed.data.name, nodeRange: parsed.data.engines.node } : null;
      }
    } catch {
      // no package.json here: look further up
    }
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
  return null;
}

/** What Node a CLI executable needs: null for a native binary or a package with no plain `>=` floor. */
export function nodeRequirement(cliRealPath: string): { name: string; nodeRange: string; floor: string } | null {
  if (!runsOnNode(cliRealPath)) return null;
  const pkg = owningPackage(cliRealPath);
  const floor = pkg ? engineFloor(pkg.nodeRange) : null;
  return pkg && floor ? { ...pkg, floor } : null;
}

const PackageBin = z.object({ version: z.string(), bin: z.union([z.string(), z.record(z.string(), z.string())]).optional() });

/**
 * The version of a Node CLI read from the package that installed it, when `cliRealPath` is one of
 * that package's own `bin` scripts: no process to start. `--version` starts the whole CLI (1 s of
 * CPU for Claude Code 2.1.29), and 16 sessions started at once on a busy 2-core machine took over
 * 30 s each to answer it (measured), failing their starts. null: ask the binary.
 */
export function packageVersion(cliRealPath: string): string | null {
  if (!runsOnNode(cliRealPath)) return null;
  let dir = path.dirname(cliRealPath);
  for (let i = 0; i < 8; i++) {
    let text: string | null = null;
    try {
      text = readFileSync(path.join(dir, 'package.json'), 'utf8');
    } catch {
      // no package.json here: look further up
    }
    if (text !== null) {
      let parsed;
      try {
        parsed = PackageBin.safeParse(JSON.parse(text));
      } catch {
        return null;
      }
      if (!parsed.success || !/^\d+\.\d+\.\d+(?:[-+][\w.]+)?$/.test(parsed.data.version)) return null;
      const bins = typeof parsed.data.bin === 'string' ? [parsed.data.bin] : Object.values(parsed.data.bin ?? {});
      return bins.some((b) => path.resolve(dir, b) === cliRealPath) ? parsed.data.version : null;
    }
    const up = path.dirname(dir);
    if (up === dir) return null;
    dir = up;
  }
  return null;
}
