import { execFileSync } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { baseEnv, runCal, type CalRun } from '../support/cal.js';
import { makeTlsFiles, startRedis, startWorker, stopChild, type RedisServer, type TlsFiles, type WorkerProcess, standInFleet, standInWorker, workerDirs, type StandInFleet } from '../support/fleet.js';

const password = 'pw-S3cret-in-the-url';
const apiKey = 'sk-worker-key-never-through-redis';
const clientSecret = 'client-env-value-never-through-redis';

/**
 * The fleet (docs/fleet.md, "Security") on a Redis that asks for a password, plainly and over TLS
 * with a certificate from a CA of the test's own: sessions run through both, the CA is trusted
 * with NODE_EXTRA_CA_CERTS, a wrong password or an untrusted certificate is one clear line and
 * exit 17 at once, and nothing secret is stored in Redis.
 */
describe('a fleet on a Redis with a password, plain and over TLS', () => {
  let root: string;
  let tls: TlsFiles;
  let plain: RedisServer;
  let secure: RedisServer;
  let fleet: StandInFleet;
  const workers: WorkerProcess[] = [];

  const clientEnv = (more: Record<string, string> = {}) => baseEnv({ HOME: path.join(root, 'client-home'), CAL_TEST_CLIENT_SECRET: clientSecret, ...more });
  const trusted = () => clientEnv({ NODE_EXTRA_CA_CERTS: tls.ca });
  const cal = (url: string, args: string[], env = trusted()): Promise<CalRun> => runCal(['--fleet', url, ...args], { env, timeoutMs: 60_000 });
  const launch = async (url: string, host: string) => {
    const { state, env } = await standInWorker(fleet, host, { CURSOR_API_KEY: apiKey, NODE_EXTRA_CA_CERTS: tls.ca });
    workers.push(await startWorker(url, host, state, env));
  };
  /** Every value Redis holds (strings, hashes, lists, sets, streams), as one text. */
  const everything = (server: RedisServer) =>
    execFileSync(
      'redis-cli',
      [...(server.url.startsWith('rediss') ? ['--tls', '--cacert', tls.ca] : []), '-p', String(server.port), '-a', password, '--no-auth-warning', '--no-raw', 'eval',
        "local out = {} for _, k in ipairs(redis.call('keys', '*')) do table.insert(out, k) local t = redis.call('type', k).ok if t == 'hash' then for _, v in ipairs(redis.call('hgetall', k)) do table.insert(out, v) end elseif t == 'string' then table.insert(out, redis.call('get', k)) elseif t == 'list' then for _, v in ipairs(redis.call('lrange', k, 0, -1)) do table.insert(out, v) end elseif t == 'set' then for _, v in ipairs(redis.call('smembers', k)) do table.insert(out, v) end elseif t == 'zset' then for _, v in ipairs(redis.call('zrange', k, 0, -1)) do table.insert(out, v) end elseif t == 'stream' then for _, e in ipairs(redis.call('xrange', k, '-', '+')) do for _, v in ipairs(e[2]) do table.insert(out, v) end end end end return out", '0'],
      { encoding: 'utf8', maxBuffer: 64 << 20 },
    );

  beforeAll(async () => {
    fleet = await standInFleet('fleet-security');
    root = fleet.root;
    tls = makeTlsFiles(root);
    plain = await startRedis(root, { password });
    secure = await startRedis(root, { password, tls });
    await launch(plain.url, 'p1');
    await launch(secure.url, 't1');
  }, 90_000);

  afterAll(async () => {
    for (const w of workers) await stopChild(w.child, 'SIGKILL');
    await plain?.stop();
    await secure?.stop();
    await fs.rm(root, { recursive: true, force: true });
  });

  it('sessions start and continue through redis://:password@ and rediss://:password@ (the test CA given in NODE_EXTRA_CA_CERTS)', async () => {
    expect(secure.url).toMatch(/^rediss:\/\/:.+@127\.0\.0\.1:\d+$/);
    for (const [url, host] of [[plain.url, 'p1'], [secure.url, 't1']] as const) {
      const s = await cal(url, ['start', '--provider', 'cursor', '--cwd', fleet.work, '--json', `Remember the codeword ${host.toUpperCase()}OK.`]);
      expect(s.code, s.stderr).toBe(0);
      expect(s.json.host).toBe(host);
      const c = await cal(url, ['continue', s.json.handle, '--json', 'What was the codeword?']);
      expect(c.code, c.stderr).toBe(0);
      expect(c.json.turn.answer).toBe(`The codeword was ${host.toUpperCase()}OK.`);
    }
  }, 90_000);

  it('a wrong or missing password is one clear line and exit 17 at once, for a client and for a worker, and the password is never printed', async () => {
    for (const server of [plain, secure]) {
      const wrong = server.url.replace(password, 'not-the-password');
      const t0 = Date.now();
      const r = await cal(wrong, ['inspect']);
      expect(Date.now() - t0).toBeLessThan(8000);
      expect(r.code, r.stderr).toBe(17);
      const lines = r.stderr.trim().split('\n');
      expect(lines).toHaveLength(1);
      expect(lines[0]).toMatch(/^cal: host_unavailable: the fleet's Redis at rediss?:\/\/:\*\*\*@127\.0\.0\.1:\d+\/? refused the credentials: the user or password in the URL is wrong \(WRONGPASS\)/);
      expect(r.stderr).not.toContain('not-the-password');
      const none = await cal(server.url.replace(`:${password}@`, ''), ['continue', 'x', '--json', 'hi']);
      expect(none.code, none.stderr).toBe(17);
      expect(none.json.error.message).toMatch(/requires a password and the URL gives none/);
      const worker = await runCal(['--state-dir', path.join(root, 'w-wrong', 'state'), '--fleet', wrong, 'worker', '--host', 'wrong'], { env: trusted(), timeoutMs: 20_000 });
      expect(worker.code, worker.stderr).toBe(17);
      expect(worker.stderr).toMatch(/^cal: host_unavailable: .* refused the credentials/);
      expect(worker.stderr).not.toContain('not-the-password');
    }
  }, 90_000);

  it('a TLS certificate whose CA is not trusted is one clear line that names NODE_EXTRA_CA_CERTS, exit 17 at once', async () => {
    const r = await cal(secure.url, ['inspect'], clientEnv());
    expect(r.code, r.stderr).toBe(17);
    expect(r.stderr.trim().split('\n')).toHaveLength(1);
    expect(r.stderr).toMatch(/^cal: host_unavailable: the fleet's Redis at rediss:\/\/:\*\*\*@.* presented a TLS certificate this machine does not trust \(SELF_SIGNED_CERT_IN_CHAIN: .*\); give the certificate of the CA that signed it in NODE_EXTRA_CA_CERTS/);
    expect(r.stderr).not.toContain(password);
  }, 30_000);

  it('what Redis stores holds the messages, never the password, a worker\'s key or a client\'s environment value', async () => {
    for (const server of [plain, secure]) {
      const dump = everything(server);
      expect(dump).toContain('Remember the codeword');
      expect(dump).toContain('bull:');
      // Environment values, of a worker and of a client (a handle record names the variables a CLI was given, never their values).
      for (const secret of [password, apiKey, clientSecret, tls.ca, path.join(root, 'client-home')]) expect(dump).not.toContain(secret);
    }
    const mode = (await fs.stat(workerDirs(root, 't1').state)).mode & 0o777;
    expect(mode).toBe(0o700);
  }, 30_000);

  it('the password can stay out of every argv: CAL_FLEET_PASSWORD for a worker, --fleet-password-file for a client; a ?password= URL is redacted in errors', async () => {
    const bare = plain.url.replace(`:${password}@`, '');
    expect(bare).not.toContain(password);
    const { state, env } = await standInWorker(fleet, 'e1', { CURSOR_API_KEY: apiKey, CAL_FLEET: bare, CAL_FLEET_PASSWORD: password });
    const worker = await startWorker(null, 'e1', state, env);
    workers.push(worker);
    const argv = await fs.readFile(`/proc/${worker.child.pid}/cmdline`, 'utf8');
    expect(argv).toContain('worker');
    expect(argv).not.toContain(password);
    const file = path.join(root, 'fleet-password');
    await fs.writeFile(file, `${password}\n`, { mode: 0o600 });
    const s = await runCal(['--fleet', bare, '--fleet-password-file', file, 'start', '--provider', 'cursor', '--cwd', fleet.work, '--json', 'Remember the codeword NOARGV.'], { env: clientEnv(), timeoutMs: 60_000 });
    expect(s.code, s.stderr).toBe(0);
    const viaEnv = await runCal(['continue', s.json.handle, '--json', 'What was the codeword?'], { env: clientEnv({ CAL_FLEET: bare, CAL_FLEET_PASSWORD: password }), timeoutMs: 60_000 });
    expect(viaEnv.code, viaEnv.stderr).toBe(0);
    expect(viaEnv.json.turn.answer).toBe('The codeword was NOARGV.');
    // Every form of the URL is redacted: ?password=, a user alone, a password in the URL.
    const wrong = 'wrong-Secret-in-query';
    for (const url of [`${bare}/?password=${wrong}`, `${bare}/?db=0&password=${wrong}`, bare.replace('//', `//${wrong}@`)]) {
      for (const args of [['inspect'], ['continue', 'x', '--json', 'hi']]) {
        const r = await runCal(['--fleet', url, ...args], { env: clientEnv(), timeoutMs: 30_000 });
        expect(r.code, r.stderr).toBe(17);
        expect(r.stdout + r.stderr).not.toContain(wrong);
        expect(r.stdout + r.stderr).toMatch(/\*\*\*/);
      }
    }
    const notRedis = await runCal(['--fleet', `http://127.0.0.1:1/?password=${wrong}`, 'inspect'], { env: clientEnv(), timeoutMs: 30_000 });
    expect(notRedis.code).toBe(2);
    expect(notRedis.stderr).not.toContain(wrong);
  }, 90_000);
});
