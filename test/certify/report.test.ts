import { spawn } from 'node:child_process';
import fs from 'node:fs/promises';
import path from 'node:path';
import { execa } from 'execa';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startModelServer, type ModelServer } from '../../src/model/server.js';
import { mcpProbeSource } from '../../src/certify/mcp-probe.js';
import { startRecordingProxy } from '../../src/certify/recording-proxy.js';
import { junitXml, redactor, tableRow } from '../../src/certify/report.js';
import { CertificationFile, listCertifications, readCertification, saveCertification } from '../../src/certify/results.js';
import type { CertifyReport } from '../../src/certify/types.js';
import { certIds, type CertOutcome } from '../../src/certify/types.js';
import { scratchDir } from '../support/cal.js';

function report(outcomes: Array<Partial<CertOutcome> & Pick<CertOutcome, 'id' | 'result'>>, extra: Partial<CertifyReport> = {}): CertifyReport {
  const full = outcomes.map((o) => ({ priority: 'P0' as const, capability: 'tmuxContinuation' as const, durationMs: 1234, evidence: 'seen', failure: o.result === 'fail' ? 'broke' : null, ...o }));
  const counts = { pass: 0, fail: 0, skip: 0 };
  for (const o of full) counts[o.result]++;
  return {
    provider: 'claude-code',
    cli: { path: '/bin/claude', realPath: '/opt/claude.exe', version: '2.1.328' },
    mode: 'scripted',
    only: null,
    startedAt: '2026-01-01T00:00:00.000Z',
    finishedAt: '2026-01-01T00:01:00.000Z',
    durationMs: 60_000,
    outcomes: full,
    passed: counts.fail === 0,
    counts,
    ...extra,
  };
}

describe('certification output', () => {
  it('redacts the values of secret-looking variables, longest first, and nothing else', () => {
    const redact = redactor({ ANTHROPIC_API_KEY: 'sk-ant-secret-123456', GITHUB_TOKEN: 'ghp_abcdef', HOME: '/home/someone', SHORT_KEY: 'abc' });
    expect(redact('key sk-ant-secret-123456 and ghp_abcdef in /home/someone abc')).toBe('key [redacted] and [redacted] in /home/someone abc');
  });

  it('JUnit XML: one case per certification, failures and skips counted, text escaped', () => {
    const xml = junitXml(
      report([
        { id: 'CertFreshLaunch', result: 'pass', evidence: 'model saw 1 user message <ok> & "fine"' },
        { id: 'CertPromptPaste', result: 'fail', evidence: "answer was 'x' \u0001", failure: 'answer <wrong>' },
        { id: 'CertStructuredResume', result: 'skip', evidence: 'claude-code does not claim structuredTransport' },
      ]),
    );
    expect(xml.startsWith('<?xml version="1.0" encoding="UTF-8"?>\n<testsuites name="cal certify" tests="3" failures="1" errors="0" skipped="1"')).toBe(true);
    expect(xml.match(/<testcase /g)).toHaveLength(3);
    expect(xml.match(/<\/testcase>/g)).toHaveLength(3);
    expect(xml).toContain('name="CertFreshLaunch [P0]" time="1.234"');
    expect(xml).toContain('<system-out>model saw 1 user message &lt;ok&gt; &amp; &quot;fine&quot;</system-out>');
    expect(xml).toContain('<failure message="answer &lt;wrong&gt;" type="CertFailure">answer was &apos;x&apos; �</failure>');
    expect(xml).toContain('<skipped message="claude-code does not claim structuredTransport"/>');
    expect(xml).toContain('<property name="cliVersion" value="2.1.328"/>');
    // Nothing but the characters XML allows.
    expect(/[\u0000-\u0008\u000b\u000c\u000e-\u001f]/.test(xml)).toBe(false);
  });

  it('table rows: id, priority, result (FAIL stands out), time, evidence', () => {
    expect(tableRow({ id: 'CertCleanup', priority: 'P1', capability: 'tmuxContinuation', result: 'fail', durationMs: 2500, evidence: 'a process was left', failure: 'x' })).toMatch(
      /^CertCleanup\s+P1 {2}FAIL {2}\s+2\.5s {2}a process was left$/,
    );
    expect(tableRow({ id: 'CertStableWorkingDir', priority: 'P0', capability: 'needsStableWorkingDir', result: 'skip', durationMs: 0, evidence: 'codex does not claim it', failure: null })).toMatch(/ skip {4}\s+- {2}codex does not claim it$/);
  });
});

describe('certification results in the state directory', () => {
  let state: string;
  beforeAll(async () => {
    state = path.join(await scratchDir('certify-results'), 'state');
  });
  afterAll(async () => {
    await fs.rm(path.dirname(state), { recursive: true, force: true });
  });

  it('saves by provider and CLI version (0700 folders, 0600 file, schema-valid) and lists them', async () => {
    const all = certIds.map((id) => ({ id, result: id === 'CertStructuredResume' ? ('skip' as const) : ('pass' as const) }));
    const file = await saveCertification(state, report(all));
    expect(file).toBe(path.join(state, 'certifications', 'claude-code', '2.1.328.json'));
    expect((await fs.stat(file)).mode & 0o777).toBe(0o600);
    expect((await fs.stat(path.dirname(file))).mode & 0o777).toBe(0o700);
    expect(CertificationFile.safeParse(JSON.parse(await fs.readFile(file, 'utf8'))).success).toBe(true);
    const [summary] = await listCertifications(state);
    expect(summary).toMatchObject({ provider: 'claude-code', version: '2.1.328', mode: 'scripted', certified: true, pass: certIds.length - 1, fail: 0, skip: 1, failing: [], missing: [] });
  });

  it('a later run with --only updates only its ids; a failure makes the version uncertified; live runs are kept apart', async () => {
    await saveCertification(state, report([{ id: 'CertCleanup', result: 'fail' }], { only: ['CertCleanup'], finishedAt: '2026-01-02T00:00:00.000Z' }));
    const stored = await readCertification(state, 'claude-code', '2.1.328');
    expect(stored?.modes.scripted?.results.CertFreshLaunch?.result).toBe('pass');
    expect(stored?.modes.scripted?.results.CertCleanup).toMatchObject({ result: 'fail', at: '2026-01-02T00:00:00.000Z' });
    expect(stored?.modes.scripted?.lastRun).toMatchObject({ only: ['CertCleanup'], passed: false });
    await saveCertification(state, report([{ id: 'CertFreshLaunch', result: 'pass' }], { mode: 'live', only: ['CertFreshLaunch'] }));
    const list = await listCertifications(state);
    expect(list.map((c) => [c.mode, c.certified, c.failing])).toEqual([
      ['scripted', false, ['CertCleanup']],
      ['live', false, []],
    ]);
    expect(list[1]!.missing).toHaveLength(certIds.length - 1);
  });

  it('an unreadable results file is skipped by the listing', async () => {
    const dir = path.join(state, 'certifications', 'codex');
    await fs.mkdir(dir, { recursive: true, mode: 0o700 });
    await fs.writeFile(path.join(dir, '0.169.0.json'), '{ not json', { mode: 0o600 });
    expect((await listCertifications(state)).every((c) => c.provider === 'claude-code')).toBe(true);
  });
});

describe('scenario tools', () => {
  let server: ModelServer;
  beforeAll(async () => {
    server = await startModelServer({});
  });
  afterAll(async () => {
    await server.close();
  });

  it('the MCP probe is valid JavaScript that answers initialize, tools/list and tools/call and logs each', async () => {
    const dir = await scratchDir('certify-probe');
    const script = path.join(dir, 'probe.mjs');
    const log = path.join(dir, 'log.jsonl');
    await fs.writeFile(script, mcpProbeSource());
    await execa(process.execPath, ['--check', script]);
    const child = spawn(process.execPath, [script, log], { stdio: ['pipe', 'pipe', 'inherit'] });
    const lines: any[] = [];
    child.stdout.setEncoding('utf8').on('data', (d: string) => lines.push(...d.split('\n').filter(Boolean).map((l) => JSON.parse(l))));
    const send = (msg: unknown) => child.stdin.write(JSON.stringify(msg) + '\n');
    send({ jsonrpc: '2.0', id: 1, method: 'initialize', params: { protocolVersion: '2025-06-18' } });
    send({ jsonrpc: '2.0', method: 'notifications/initialized' });
    send({ jsonrpc: '2.0', id: 2, method: 'tools/list' });
    send({ jsonrpc: '2.0', id: 3, method: 'tools/call', params: { name: 'echo', arguments: { text: 'ping' } } });
    send({ jsonrpc: '2.0', id: 4, method: 'nope' });
    for (let i = 0; i < 100 && lines.length < 4; i++) await new Promise((r) => setTimeout(r, 20));
    child.kill();
    expect(lines.find((l) => l.id === 1).result.serverInfo.name).toBe('calprobe');
    expect(lines.find((l) => l.id === 2).result.tools[0].name).toBe('echo');
    expect(lines.find((l) => l.id === 3).result.content[0].text).toBe('echo: ping');
    expect(lines.find((l) => l.id === 4).error.code).toBe(-32601);
    const logged = (await fs.readFile(log, 'utf8')).trim().split('\n').map((l) => JSON.parse(l).method);
    expect(logged).toEqual(['initialize', 'tools/list', 'tools/call', 'nope']);
    await fs.rm(dir, { recursive: true, force: true });
  });

  it('the recording proxy passes requests and streamed answers through and keeps the raw bodies', async () => {
    const proxy = await startRecordingProxy(server.url);
    try {
      const body = { model: 'm', max_tokens: 10, stream: true, system: 'SYSTEM-MARKER-42', messages: [{ role: 'user', content: 'hello there' }] };
      const res = await fetch(`${proxy.url}/v1/messages`, { method: 'POST', headers: { 'content-type': 'application/json', 'anthropic-version': '2023-06-01' }, body: JSON.stringify(body) });
      expect(res.status).toBe(200);
      const text = await res.text();
      expect(text).toContain('event: message_stop');
      expect(text).toContain('Received: hello there'.slice(0, 5));
      expect(proxy.bodies()).toHaveLength(1);
      expect(proxy.bodies()[0]).toContain('SYSTEM-MARKER-42');
      expect(server.turnRequests().at(-1)?.lastUserMessage).toBe('hello there');
    } finally {
      await proxy.close();
    }
  });
});
