import { promises as fs } from 'node:fs';

/**
 * Processes that belong to one certification scenario: every process whose command line,
 * environment or working directory names the scenario's own scratch folder (the CLI, its shell
 * tools and MCP servers, the scenario's tmux server). Linux only: null where /proc is missing.
 */
export interface MarkedProcess {
  pid: number;
  command: string;
}

export async function processesMarkedBy(marker: string): Promise<MarkedProcess[] | null> {
  let entries: string[];
  try {
    entries = await fs.readdir('/proc');
  } catch {
    return null;
  }
  const out: MarkedProcess[] = [];
  for (const entry of entries) {
    if (!/^\d+$/.test(entry)) continue;
    const pid = Number(entry);
    if (pid === process.pid) continue;
    const cmdline = (await fs.readFile(`/proc/${pid}/cmdline`, 'utf8').catch(() => '')).replace(/\0/g, ' ').trim();
    if (!cmdline) continue; // gone, a kernel thread, or a zombie
    const environ = await fs.readFile(`/proc/${pid}/environ`, 'utf8').catch(() => '');
    const cwd = await fs.readlink(`/proc/${pid}/cwd`).catch(() => '');
    if (cmdline.includes(marker) || environ.includes(marker) || cwd === marker || cwd.startsWith(`${marker}/`)) {
      out.push({ pid, command: cmdline.slice(0, 160) });
    }
  }
  return out;
}

/** Kills processes a scenario left behind (only those carrying its own folder). */
export async function killMarked(marker: string): Promise<number> {
  const found = (await processesMarkedBy(marker)) ?? [];
  for (const p of found) {
    try {
      process.kill(p.pid, 'SIGKILL');
    } catch {
      // already gone
    }
  }
  return found.length;
}
