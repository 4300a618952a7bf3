import { CalError } from '../errors.js';
import type { PinnedCli } from '../handles/schema.js';

/**
 * Which releases of a CLI an adapter runs (design §10). `floor` is the oldest release proven end
 * to end (docs/certify.md, "Version matrix"); `certified` is the newest release certified. Below
 * the floor cal refuses at once (`cli_unsupported`); above `certified` it runs and says so.
 */
export interface SupportedVersions {
  floor: string;
  certified: string;
}

/**
 * Where a found release stands: `certified` from the floor up to the newest certified release,
 * `newer_than_certified` above it (it runs; the commands say once that it is uncertified).
 */
export type VersionSupport = 'certified' | 'newer_than_certified';

interface ParsedVersion {
  parts: number[];
  prerelease: string | null;
}

function parse(version: string): ParsedVersion | null {
  const m = /^v?(\d+(?:\.\d+)*)(?:-([0-9A-Za-z.-]+))?(?:\+[0-9A-Za-z.-]+)?$/.exec(version.trim());
  if (!m?.[1]) return null;
  return { parts: m[1].split('.').map(Number), prerelease: m[2] ?? null };
}

/**
 * Orders two release numbers: negative when `a` is older, 0 when equal, positive when newer.
 * Dotted numbers compare field by field (missing fields are 0); a prerelease (`1.2.0-alpha.1`)
 * is older than its release, and prereleases compare by their dotted fields (numbers as numbers).
 * Build metadata (`+…`) is ignored. Throws on a string that is no release number.
 */
export function compareVersions(a: string, b: string): number {
  const pa = parse(a);
  const pb = parse(b);
  if (!pa || !pb) throw new CalError('internal', `not a release number: ${JSON.stringify(pa ? b : a)}`);
  const len = Math.max(pa.parts.length, pb.parts.length);
  for (let i = 0; i < len; i++) {
    const d = (pa.parts[i] ?? 0) - (pb.parts[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  if (pa.prerelease === pb.prerelease) return 0;
  if (pa.prerelease === null) return 1;
  if (pb.prerelease === null) return -1;
  const xa = pa.prerelease.split('.');
  const xb = pb.prerelease.split('.');
  for (let i = 0; i < Math.max(xa.length, xb.length); i++) {
    const ya = xa[i];
    const yb = xb[i];
    if (ya === undefined) return -1;
    if (yb === undefined) return 1;
    const na = /^\d+$/.test(ya) ? Number(ya) : null;
    const nb = /^\d+$/.test(yb) ? Number(yb) : null;
    if (na !== null && nb !== null) {
      if (na !== nb) return Math.sign(na - nb);
    } else if (na !== null) return -1;
    else if (nb !== null) return 1;
    else if (ya !== yb) return ya < yb ? -1 : 1;
  }
  return 0;
}

/**
 * Places a found release against what the adapter supports. Below the floor: `cli_unsupported`,
 * naming the version found, the floor and the executable, before anything is launched.
 */
export function versionSupport(cliName: string, version: string, supported: SupportedVersions, executable: string): VersionSupport {
  if (!parse(version)) {
    throw new CalError('cli_unsupported', `${cliName} at ${executable} reports version ${JSON.stringify(version)}, which cal cannot place; cal supports ${cliName} ${supported.floor} and newer`, {
      actual: version,
      expected: `>=${supported.floor}`,
    });
  }
  if (compareVersions(version, supported.floor) < 0) {
    throw new CalError(
      'cli_unsupported',
      `${cliName} ${version} at ${executable} is older than ${supported.floor}, the oldest release cal supports: update it (or pass --cli-path to ${supported.floor} or newer)`,
      { actual: version, expected: `>=${supported.floor}` },
    );
  }
  return compareVersions(version, supported.certified) > 0 ? 'newer_than_certified' : 'certified';
}

/** A resolved executable pinned with where its version stands (throws below the floor). */
export function pinSupported(cliName: string, found: PinnedCli, supported: SupportedVersions): PinnedCli {
  const support = versionSupport(cliName, found.version, supported, found.path);
  return { ...found, support, newestCertified: supported.certified };
}
