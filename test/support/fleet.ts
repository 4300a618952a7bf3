import { execFileSync, spawn, type ChildProcess } from 'node:child_process';
import { realpathSync, writeFileSync } from 'node:fs';
import fs from 'node:fs/promises';
import net from 'node:net';
import path from 'node:path';
import { baseEnv, scratchDir } from './cal.js';
import { calBin } from './clis.js';
import { fakeCli } from './structured-fakes.js';

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

/** A server certificate for 127.0.0.1 and the CA that signed it (PEM files), for a TLS redis-server. */
export interface TlsFiles {
  ca: string;
  cert: string;
  key: string;
}

/** A throwaway CA and a certificate it signs for 127.0.0.1 and localhost, made with openssl in `dir`. */
export function makeTlsFiles(dir: string): TlsFiles {
  const f = (name: string) => path.join(dir, name);
  const ssl = (...args: string[]) => execFileSync('openssl', args, { stdio: 'ignore' });
  ssl('req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('ca.key'), '-out', f('ca.crt'), '-days', '2', '-subj', '/CN=cal test CA');
  ssl('req', '-newkey', 'rsa:2048', '-nodes', '-keyout', f('server.key'), '-out', f('server.csr'), '-subj', '/CN=127.0.0.1');
  writeFileSync(f('ext.cnf'), 'subjectAltName=IP:127.0.0.1,DNS:localhost\n');
  ssl('x509', '-req', '-in', f('server.csr'), '-CA', f('ca.crt'), '-CAkey', f('ca.key'), '-CAcreateserial', '-out', f('server.crt'), '-days', '2', '-extfile', f('ext.cnf'));
  return { ca: f('ca.crt'), cert: f('server.crt'), key: f('server.key') };
}

export async function startRedis(dir: string, opts: { password?: string; appendonly?: boolean; port?: number; tls?: TlsFiles } = {}): Promise<RedisServer> {
  const port = opts.port ?? (await freePort());
  // TLS only: the plain port is closed (0), clients must speak TLS and need not show a certificate.
  const listen = opts.tls
    ? ['--port', '0', '--tls-port', String(port), '--tls-cert-file', opts.tls.cert, '--tls-key-file', opts.tls.key, '--tls-ca-cert-file', opts.tls.ca, '--tls-auth-clients', 'no']
    : ['--port', String(port)];
  const args = [...listen, '--bind', '127.0.0.1', '--save', '', '--dir', dir];
  if (opts.appendonly) args.push('--appendonly', 'yes', '--appendfsync', 'always');
  if (opts.password) args.push('--requirepass', opts.password);
  const child = spawn('redis-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  await until(() => out.includes('Ready to accept connections'), `redis-server on ${port}: ${out}`);
  const auth = opts.password ? `:${encodeURIComponent(opts.password)}@` : '';
  return {
    url: `${opts.tls ? 'rediss' : 'redis'}://${auth}127.0.0.1:${port}`,
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

/**
 * `cal worker` as a child process; resolves once it says it takes jobs. Its sessions may run
 * under the test's scratch folder (`<root>/<host>/state` → `--allow-dir <root>`) unless `more`
 * names its own --allow-dir. `url` null: none on the command line (CAL_FLEET in `env`).
 */
export async function startWorker(url: string | null, host: string, state: string, env: Record<string, string>, more: string[] = []): Promise<WorkerProcess> {
  const allow = more.includes('--allow-dir') ? [] : ['--allow-dir', path.resolve(state, '..', '..')];
  const fleet = url === null ? [] : ['--fleet', url];
  const child = spawn(process.execPath, [calBin, '--state-dir', state, ...fleet, 'worker', '--host', host, ...allow, ...more], { env, stdio: ['ignore', 'ignore', 'pipe'] });
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

/** A fleet test's scratch folder with the Cursor CLI stand-in as `bin/cursor-agent`, the log it writes, and a folder to work in. */
export interface StandInFleet {
  root: string;
  bin: string;
  work: string;
  /** Where the stand-in logs every message it is sent (timesSent reads it). */
  log: string;
}

export async function standInFleet(prefix: string): Promise<StandInFleet> {
  const root = realpathSync(await scratchDir(prefix));
  const fleet = { root, bin: path.join(root, 'bin'), work: path.join(root, 'work'), log: path.join(root, 'cursor.log') };
  await fs.mkdir(fleet.bin);
  await fs.mkdir(fleet.work);
  await fs.symlink(fakeCli.cursor, path.join(fleet.bin, 'cursor-agent'));
  return fleet;
}

/** A worker host's folders on a stand-in fleet (its HOME made) and its environment: the stand-in first on PATH, plus `extra`. */
export async function standInWorker(fleet: StandInFleet, host: string, extra: Record<string, string>): Promise<{ state: string; env: Record<string, string> }> {
  const dirs = workerDirs(fleet.root, host);
  await fs.mkdir(dirs.home, { recursive: true });
  return { state: dirs.state, env: baseEnv({ HOME: dirs.home, PATH: `${fleet.bin}:${process.env.PATH}`, FAKE_CURSOR_LOG: fleet.log, ...extra }) };
}
