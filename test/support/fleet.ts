import { spawn, type ChildProcess } from 'node:child_process';
import net from 'node:net';
import path from 'node:path';
import { calBin } from './clis.js';

/**
 * A real redis-server and real `cal worker` processes for the fleet's tests (docs/fleet.md):
 * each test's own server on a free port of 127.0.0.1, with no saved data unless asked, killed by
 * its pid; each worker a child process with its own state directory, HOME and tmux socket.
 */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = net.createServer();
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as net.AddressInfo;
      server.close(() => resolve(port));
    });
    server.on('error', reject);
  });
}

export interface RedisServer {
  url: string;
  port: number;
  child: ChildProcess;
  stop(): Promise<void>;
}

export async function startRedis(dir: string, opts: { password?: string; appendonly?: boolean; port?: number } = {}): Promise<RedisServer> {
  const port = opts.port ?? (await freePort());
  const args = ['--port', String(port), '--bind', '127.0.0.1', '--save', '', '--dir', dir];
  if (opts.appendonly) args.push('--appendonly', 'yes');
  if (opts.password) args.push('--requirepass', opts.password);
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await until(() => out.includes('Ready to accept connections'), `redis-server on ${port}: ${out}`);
  const auth = opts.password ? `:${encodeURIComponent(opts.password)}@` : '';
  return {
    url: `redis://${auth}127.0.0.1:${port}`,
    port,
    child,
    stop: () => stopChild(child, 'SIGKILL'),
  };
}

export interface WorkerProcess {
  host: string;
  child: ChildProcess;
  stderr: () => string;
}

/** `cal worker` as a child process; resolves once it says it takes jobs. */
export async function startWorker(url: string, host: string, state: string, env: Record<string, string>, more: string[] = []): Promise<WorkerProcess> {
  const child = spawn(process.execPath, [calBin, '--state-dir', state, '--fleet', url, 'worker', '--host', host, ...more], { env, stdio: ['ignore', 'ignore', 'pipe'] });
  let stderr = '';
  child.stderr!.on('data', (d: Buffer) => (stderr += d.toString()));
  await until(() => stderr.includes(`worker ${host} ready`) || child.exitCode !== null, `worker ${host} ready`, 30_000);
  if (child.exitCode !== null) throw new Error(`worker ${host} exited ${child.exitCode}: ${stderr}`);
  return { host, child, stderr: () => stderr };
}

export async function stopChild(child: ChildProcess, signal: NodeJS.Signals): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return;
  const exited = new Promise((r) => child.once('exit', r));
  child.kill(signal);
  await exited;
}

export async function until(check: () => boolean | Promise<boolean>, what: string, ms = 15_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await check()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

export const workerDirs = (root: string, host: string) => ({ state: path.join(root, host, 'state'), home: path.join(root, host, 'home') });
