#!/usr/bin/env node
// Installs the CLI releases of the version matrix (test/support/cli-matrix.json) into
// .tmp/clis/<provider>-<version>, each in a prefix of its own: never globally, never into the
// project's node_modules. An installed release is kept. Claude Code's updater stays off
// (DISABLE_AUTOUPDATER=1): without it, a started Claude ran a global npm install of a newer release.
import { execFileSync } from 'node:child_process';
import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const matrix = JSON.parse(readFileSync(path.join(root, 'test', 'support', 'cli-matrix.json'), 'utf8'));
const only = process.argv.slice(2);

/** Orders two plain release numbers (x.y.z) numerically. */
const older = (a, b) => a.localeCompare(b, 'en', { numeric: true }) < 0;

/** The npm package a release was published under: a CLI that moved names its old package in packageBefore. */
function packageOf(entry, version) {
  const moves = Object.entries(entry.packageBefore ?? {}).sort(([a], [b]) => (older(a, b) ? -1 : 1));
  return moves.find(([below]) => older(version, below))?.[1] ?? entry.package;
}
for (const [provider, entry] of Object.entries(matrix)) {
  if (provider === 'comment' || (only.length && !only.includes(provider))) continue;
  for (const version of entry.versions) {
    const prefix = path.join(root, '.tmp', 'clis', `${provider}-${version}`);
    const bin = path.join(prefix, 'node_modules', '.bin', entry.bin);
    if (existsSync(bin)) {
      console.log(`${provider} ${version}: installed (${bin})`);
      continue;
    }
    const pkg = packageOf(entry, version);
    console.log(`${provider} ${version}: installing ${pkg}@${version} into ${prefix}`);
    execFileSync('npm', ['install', '--no-audit', '--no-fund', '--no-save', '--prefix', prefix, `${pkg}@${version}`], {
      stdio: 'inherit',
      env: { ...process.env, DISABLE_AUTOUPDATER: '1' },
    });
  }
}
