import { describe, expect, it } from 'vitest';
import { loadRegisteredAdapters } from '../../src/adapters/registry.js';
import { geminiAdapter } from '../../src/adapters/gemini/index.js';
import { compareVersions, pinSupported, versionSupport } from '../../src/adapters/versions.js';
import { CalError, exitCodes } from '../../src/errors.js';
import { pinnedCli } from '../support/clis.js';

describe('release numbers', () => {
  it('orders dotted numbers field by field, numerically', () => {
    expect(compareVersions('2.1.29', '2.1.332')).toBeLessThan(0);
    expect(compareVersions('2.1.332', '2.1.29')).toBeGreaterThan(0);
    expect(compareVersions('2.0.76', '2.1.0')).toBeLessThan(0);
    expect(compareVersions('0.171.0', '0.40.0')).toBeGreaterThan(0);
    expect(compareVersions('1.2', '1.2.0')).toBe(0);
    expect(compareVersions('v1.2.3', '1.2.3')).toBe(0);
  });

  it('puts a prerelease before its release and ignores build metadata', () => {
    expect(compareVersions('0.172.0-alpha.1', '0.172.0')).toBeLessThan(0);
    expect(compareVersions('0.172.0-alpha.2', '0.172.0-alpha.10')).toBeLessThan(0);
    expect(compareVersions('0.172.0-alpha.1', '0.171.0')).toBeGreaterThan(0);
    expect(compareVersions('1.0.0+build.7', '1.0.0')).toBe(0);
  });

  it('refuses what is not a release number', () => {
    expect(() => compareVersions('latest', '1.0.0')).toThrow(CalError);
  });
});

describe('supported versions', () => {
  const supported = { floor: '2.0.12', certified: '2.1.332' };

  it('a release below the floor is cli_unsupported (exit 16), naming the version found and the floor', () => {
    let err: unknown;
    try {
      versionSupport('Claude Code', '1.0.128', supported, '/opt/claude');
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(CalError);
    const cal = err as CalError;
    expect(cal.kind).toBe('cli_unsupported');
    expect(cal.exitCode).toBe(16);
    expect(exitCodes.cli_unsupported).toBe(16);
    expect(cal.message).toContain('Claude Code 1.0.128');
    expect(cal.message).toContain('2.0.12');
    expect(cal.message).toContain('/opt/claude');
    expect(cal.toJSON()).toMatchObject({ kind: 'cli_unsupported', actual: '1.0.128', expected: '>=2.0.12' });
  });

  it('the floor and everything up to the newest certified is certified; newer runs, uncertified', () => {
    expect(versionSupport('Claude Code', '2.0.12', supported, 'x')).toBe('certified');
    expect(versionSupport('Claude Code', '2.1.29', supported, 'x')).toBe('certified');
    expect(versionSupport('Claude Code', '2.1.332', supported, 'x')).toBe('certified');
    expect(versionSupport('Claude Code', '2.1.333', supported, 'x')).toBe('newer_than_certified');
    expect(versionSupport('Claude Code', '3.0.0', supported, 'x')).toBe('newer_than_certified');
  });

  it('a version that cannot be placed is cli_unsupported, not a guess', () => {
    expect(() => versionSupport('Claude Code', 'nightly', supported, 'x')).toThrow(/cannot place/);
  });

  it('pins the found executable with where it stands', () => {
    expect(pinSupported('Codex', { path: '/a', realPath: '/b', version: '0.172.0' }, { floor: '0.40.0', certified: '0.171.0' })).toEqual({
      path: '/a',
      realPath: '/b',
      version: '0.172.0',
      support: 'newer_than_certified',
      newestCertified: '0.171.0',
    });
  });

  it('every adapter declares a floor at or below its newest certified release, and certifies the pinned one', async () => {
    const pinned: Record<string, string> = {
      'claude-code': pinnedCli.claude.version,
      codex: pinnedCli.codex.version,
      pi: pinnedCli.pi.version,
      gemini: pinnedCli.gemini.version,
      qwen: pinnedCli.qwen.version,
      copilot: pinnedCli.copilot.version,
      opencode: pinnedCli.opencode.version,
      cline: pinnedCli.cline.version,
      kilo: pinnedCli.kilo.version,
    };
    // (Cursor and Agy cannot run here: their releases are placed by the user's live certification.)
    for (const adapter of [...(await loadRegisteredAdapters()), geminiAdapter].filter((a) => !a.liveCertificationOnly)) {
      const { floor, certified } = adapter.versions!;
      expect(compareVersions(floor, certified), adapter.name).toBeLessThanOrEqual(0);
      expect(versionSupport(adapter.name, pinned[adapter.name] as string, adapter.versions!, 'x'), adapter.name).toBe('certified');
    }
  });
});
