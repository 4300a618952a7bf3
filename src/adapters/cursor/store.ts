import { digestHex } from '../../util/digest.js';
import { existsSync } from 'node:fs';
import { promises as fs } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { ensurePlainDirSync, writePlainFileSync } from '../../util/private-file.js';
import { z } from '../../util/zod.js';
import { CalError } from '../../errors.js';
import { readUserFileSync } from '../../util/user-file.js';

/**
 * Where Cursor CLI keeps a chat, as documented by third parties who read it off the CLI
 * (research §D "On-disk chats", verified by them against 2026.09.18-9a7762b):
 * `<config root>/chats/<md5(cwd)>/<chatId>/` holding `meta.json` (schemaVersion 1: cwd,
 * createdAtMs, updatedAtMs, hasConversation, …) and `store.db` (SQLite, a content-addressed blob
 * store cal never reads). The config root is `CURSOR_CONFIG_DIR`, else `$XDG_CONFIG_HOME/cursor`,
 * else `~/.cursor`. The folder is keyed by the working directory: resuming from another folder
 * makes the CLI keep a second store under that folder's hash, so cal resumes only in the original.
 */
export function configRoots(env: Record<string, string>): string[] {
  if (env.CURSOR_CONFIG_DIR) return [path.resolve(env.CURSOR_CONFIG_DIR)];
  const home = env.HOME || os.homedir();
  const roots = env.XDG_CONFIG_HOME ? [path.join(env.XDG_CONFIG_HOME, 'cursor')] : [];
  return [...roots, path.join(home, '.cursor')];
}

export function workspaceHash(cwd: string): string {
  return digestHex('md5', cwd);
}

/** The chat's folder, where the CLI keeps it now; null when it is in none of the roots. */
export function findChatDir(env: Record<string, string>, cwd: string, chatId: string): string | null {
  for (const root of configRoots(env)) {
    const dir = path.join(root, 'chats', workspaceHash(cwd), chatId);
    if (existsSync(dir)) return dir;
  }
  return null;
}

/**
 * The file cal records as the session's transcript for inspect and recover: the chat's
 * `meta.json` (which names its working directory), else its `store.db`.
 */
export function chatRecordFile(chatDir: string): string | null {
  for (const name of ['meta.json', 'store.db']) {
    const file = path.join(chatDir, name);
    if (existsSync(file)) return file;
  }
  return null;
}

const McpConfig = z.object({ mcpServers: z.record(z.string(), z.unknown()) }).passthrough();

/**
 * The plugin folder that gives one launch its MCP servers (`--plugin-dir <dir>`): a
 * `.cursor-plugin/plugin.json` naming the plugin and a root `mcp.json` with `mcpServers`. The
 * tools appear as `plugin-<folder name>-<server>-<tool>`, so the folder is always named `cal` and
 * tool ids stay the same across resumes. `mcp.json` is a symlink to the user's own file: its
 * contents (which may hold tokens for the servers) are never copied into cal's state, and the
 * user's `~/.cursor/mcp.json` and project `.cursor/mcp.json` are never written.
 */
export async function writePluginDir(sessionDir: string, mcpConfigPath: string): Promise<string> {
  let parsed: unknown;
  try {
    parsed = JSON.parse(readUserFileSync(mcpConfigPath, '--mcp-config'));
  } catch (err) {
    throw new CalError('usage', `the MCP config ${mcpConfigPath} is not readable JSON: ${(err as Error).message}`);
  }
  if (!McpConfig.safeParse(parsed).success) {
    throw new CalError('usage', `the MCP config ${mcpConfigPath} has no "mcpServers" object, which Cursor's mcp.json format needs`);
  }
  const dir = path.join(sessionDir, 'cursor-plugin', 'cal');
  // homes/<id> and the plugin's folders: plain, no link planted in their place.
  ensurePlainDirSync(path.join(dir, '.cursor-plugin'), path.dirname(sessionDir));
  writePlainFileSync(path.join(dir, '.cursor-plugin', 'plugin.json'), JSON.stringify({ name: 'cal' }) + '\n');
  const link = path.join(dir, 'mcp.json');
  await fs.rm(link, { force: true });
  await fs.symlink(path.resolve(mcpConfigPath), link);
  return dir;
}
