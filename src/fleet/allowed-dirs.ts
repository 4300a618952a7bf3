import { realpathSync, statSync } from 'node:fs';
import path from 'node:path';
import { CalError } from '../errors.js';

/**
 * `cal worker --allow-dir DIR`: the folders under which a fleet client may run a session on this
 * machine (docs/fleet.md, docs/security.md). A folder is where a CLI reads its project's hooks,
 * settings and MCP servers, so naming one is a way to run code: a worker runs sessions only under
 * the roots its operator allowed, by real path (no `..` or symbolic link leads out of one).
 * Without --allow-dir, the worker's own current directory is the one root.
 */
export function allowedRoots(dirs: readonly string[] | undefined, cwd: string): string[] {
  const given = dirs && dirs.length > 0 ? dirs : [cwd];
  return given.map((d) => {
    let real: string;
    try {
      real = realpathSync(path.resolve(cwd, d));
    } catch {
      throw new CalError('usage', `--allow-dir ${JSON.stringify(d)} is not a folder on this machine`);
    }
    if (!statSync(real).isDirectory()) throw new CalError('usage', `--allow-dir ${JSON.stringify(d)} is not a folder`);
    return real;
  });
}

/** Refuses (usage) a session folder that is not under one of the roots, before anything runs. */
export function checkAllowed(roots: readonly string[], dir: string, host: string, cwd: string): void {
  let real: string;
  try {
    real = realpathSync(path.resolve(cwd, dir));
  } catch {
    throw new CalError('usage', `the folder ${JSON.stringify(dir)} is not on host ${host}; nothing was sent`);
  }
  if (roots.some((root) => isUnder(real, root))) return;
  throw new CalError('usage', `host ${host} runs sessions only under ${roots.join(', ')} (its cal worker --allow-dir); ${JSON.stringify(dir)} (${real}) is not under them; nothing was sent`);
}

function isUnder(real: string, root: string): boolean {
  const rel = path.relative(root, real);
  return rel === '' || (rel !== '..' && !rel.startsWith(`..${path.sep}`) && !path.isAbsolute(rel));
}
