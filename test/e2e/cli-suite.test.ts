import { existsSync } from 'node:fs';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { describe, expect, it } from 'vitest';
import { scratchDir } from '../support/cal.js';
import { cliSuite, pinnedName, type CliSuite, type SuiteProvider } from '../support/cli-suite.js';
import { cliBin, copilotPackageCache } from '../support/clis.js';
import { removeScratch } from '../support/scratch.js';

/**
 * The suite every end-to-end file builds on: each CLI's throwaway home points at the suite's own
 * scripted model inside its scratch folder, nothing of the caller's environment leaks in, and
 * close ends what the suite started and nothing else. No CLI runs here.
 */
const tmux = (socket: string, args: string[]) => execa('tmux', ['-S', socket, '-f', '/dev/null', ...args], { reject: false });

/** Where each CLI was told the scripted model is. */
const modelWiring: Record<SuiteProvider, (suite: CliSuite) => Promise<string>> = {
  'claude-code': async (suite) => suite.env.ANTHROPIC_BASE_URL!,
  codex: (suite) => fs.readFile(path.join(suite.configDir, 'config.toml'), 'utf8'),
  pi: (suite) => fs.readFile(path.join(suite.configDir, 'models.json'), 'utf8'),
  gemini: async (suite) => suite.env.GOOGLE_GEMINI_BASE_URL!,
  qwen: async (suite) => suite.env.OPENAI_BASE_URL!,
  copilot: async (suite) => suite.env.COPILOT_PROVIDER_BASE_URL!,
  opencode: (suite) => fs.readFile(suite.env.OPENCODE_CONFIG!, 'utf8'),
  cline: (suite) => fs.readFile(path.join(suite.configDir, 'settings', 'providers.json'), 'utf8'),
  kilo: (suite) => fs.readFile(suite.env.KILO_CONFIG!, 'utf8'),
};

describe('cliSuite', () => {
  it.each(Object.keys(modelWiring) as SuiteProvider[])('%s: a home in the scratch folder, pointed at its own scripted model, the pinned CLI first on PATH', async (provider) => {
    const suite = await cliSuite(provider, { prefix: `suite-${provider}` });
    try {
      expect(await fs.realpath(suite.root)).toBe(suite.root);
      expect(suite.env.HOME).toBe(suite.home);
      for (const dir of [suite.home, suite.configDir, suite.work, suite.state]) expect(dir.startsWith(`${suite.root}/`), dir).toBe(true);
      // Claude Code makes its ~/.claude on its first run; the others' config is written up front.
      for (const dir of [suite.home, suite.work, ...(provider === 'claude-code' ? [] : [suite.configDir])]) expect(existsSync(dir), dir).toBe(true);
      expect(await modelWiring[provider](suite)).toContain(suite.server.url);
      expect(path.join(suite.env.PATH!.split(':')[0]!, path.basename(cliBin(pinnedName[provider])))).toBe(cliBin(pinnedName[provider]));
      // Only what the suite set: nothing else of the caller's environment (its HOME, its keys).
      // Copilot's unpacked native binary is cached once for the repository (.tmp/copilot-pkg-cache):
      // the suite sets that folder itself, and CI exports the same one for everything it runs.
      if (provider === 'copilot') expect(suite.env.COPILOT_PKG_CACHE_HOME).toBe(copilotPackageCache);
      for (const [name, value] of Object.entries(process.env)) {
        if (!['PATH', 'LANG', 'TERM', 'COPILOT_PKG_CACHE_HOME'].includes(name)) expect(suite.env[name], name).not.toBe(value);
      }
      if (provider === 'claude-code') expect(suite.env.DISABLE_AUTOUPDATER).toBe('1');
    } finally {
      await suite.close();
    }
  });

  it('close ends its background cal and the tmux server of each of its state dirs, no other server, and removes its folder', async () => {
    const suite = await cliSuite('claude-code', { prefix: 'suite-close' });
    const other = await scratchDir('suite-close-other');
    const otherSocket = path.join(other, 'tmux.sock');
    try {
      const second = suite.stateDir('second-state');
      const sockets = [await suite.tmuxSocket(), await suite.tmuxSocket(second)];
      for (const socket of [...sockets, otherSocket]) expect((await tmux(socket, ['new-session', '-d', 'sleep 120'])).exitCode).toBe(0);
      // A background cal running a command of its own, which writes its pid.
      const pidFile = path.join(other, 'command.pid');
      const background = suite.spawnCal(['lock', 'suite-close', '--', 'sh', '-c', `echo $$ > ${pidFile}; exec sleep 30`]);
      for (let i = 0; i < 100 && !existsSync(pidFile); i++) await new Promise((r) => setTimeout(r, 50));
      const command = Number((await fs.readFile(pidFile, 'utf8')).trim());
      expect(background.child.exitCode).toBeNull();

      await suite.close();
      const ended = await background.done;
      expect(ended.code).toBe(-1);
      expect(background.child.signalCode).toBe('SIGKILL');
      for (let i = 0; i < 100 && existsSync(`/proc/${command}`); i++) await new Promise((r) => setTimeout(r, 50));
      expect(existsSync(`/proc/${command}`)).toBe(false);
      for (const socket of sockets) expect((await tmux(socket, ['has-session'])).exitCode).not.toBe(0);
      expect((await tmux(otherSocket, ['has-session'])).exitCode).toBe(0);
      if (process.env.CAL_KEEP_TEST_HOMES !== '1') expect(existsSync(suite.root)).toBe(false);
    } finally {
      await tmux(otherSocket, ['kill-server']);
      await removeScratch(other);
    }
  });
});
