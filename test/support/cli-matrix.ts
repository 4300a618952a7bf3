import { existsSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { cliBin, pinnedCli, pinnedCliOf, repoRoot } from './clis.js';

/**
 * The version matrix (cli-matrix.json): releases beyond the pinned devDependencies, installed by
 * scripts/install-cli-matrix.mjs (and .ci/run) into .tmp/clis/<provider>-<version>.
 */
export type MatrixProvider = 'claude-code' | 'codex' | 'gemini' | 'pi';

interface MatrixEntry {
  /** The npm package of the newest releases. */
  package: string;
  /** A CLI that moved: release below which the older package applies → that package. */
  packageBefore?: Record<string, string>;
  bin: string;
  versions: string[];
  /** The floor, certified on the P0 certifications when it was set (docs/certify.md, Version matrix). */
  certify: string[];
}

export const cliMatrix = JSON.parse(readFileSync(path.join(repoRoot, 'test', 'support', 'cli-matrix.json'), 'utf8')) as Record<MatrixProvider, MatrixEntry>;

const pinnedOf = (provider: MatrixProvider) => pinnedCli[pinnedCliOf[provider]];

/** Every release the matrix certifies for a provider, oldest first, the pinned one included. */
export function matrixVersions(provider: MatrixProvider): string[] {
  const all = new Set([...cliMatrix[provider].versions, pinnedOf(provider).version]);
  return [...all].sort((a, b) => a.localeCompare(b, 'en', { numeric: true }));
}

/** Where a matrix release is installed (the pinned one is the project's own). */
export function matrixBin(provider: MatrixProvider, version: string): string {
  if (version === pinnedOf(provider).version) return cliBin(pinnedCliOf[provider]);
  return path.join(repoRoot, '.tmp', 'clis', `${provider}-${version}`, 'node_modules', '.bin', cliMatrix[provider].bin);
}

/** The releases that are installed here (CI installs them all; a checkout may not have). */
export function installedMatrix(provider: MatrixProvider): { version: string; bin: string }[] {
  return matrixVersions(provider)
    .map((version) => ({ version, bin: matrixBin(provider, version) }))
    .filter((v) => existsSync(v.bin));
}

/** A line for a skipped release, so a run says what it did not prove. */
export function missingMatrix(provider: MatrixProvider): string[] {
  return matrixVersions(provider).filter((v) => !existsSync(matrixBin(provider, v)));
}
