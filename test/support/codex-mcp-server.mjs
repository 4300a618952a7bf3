#!/usr/bin/env node
// A tiny MCP server over stdio (newline-delimited JSON-RPC 2.0) for end-to-end tests.
// One tool, `echo`, answers `echo: <text>`. Every call is appended to $MCP_PROBE_LOG when set,
// so a test can prove the CLI really called it.
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const log = process.env.MCP_PROBE_LOG;
const tools = [
  {
    name: 'echo',
    description: 'Echoes the given text back.',
    inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
    annotations: { readOnlyHint: true },
  },
];

function send(message) {
  process.stdout.write(`${JSON.stringify(message)}\n`);
}

function handle(req) {
  switch (req.method) {
    case 'initialize':
      return {
        protocolVersion: req.params?.protocolVersion ?? '2025-06-18',
        capabilities: { tools: { listChanged: false } },
        serverInfo: { name: 'cal-probe', version: '1.0.0' },
      };
    case 'ping':
      return {};
    case 'tools/list':
      return { tools };
    case 'tools/call': {
      const name = req.params?.name;
      const args = req.params?.arguments ?? {};
      if (log) appendFileSync(log, `${JSON.stringify({ name, arguments: args })}\n`);
      if (name !== 'echo') return { content: [{ type: 'text', text: `unknown tool ${name}` }], isError: true };
      return { content: [{ type: 'text', text: `echo: ${String(args.text ?? '')}` }] };
    }
    default:
      return undefined;
  }
}

createInterface({ input: process.stdin }).on('line', (line) => {
  if (!line.trim()) return;
  let req;
  try {
    req = JSON.parse(line);
  } catch {
    return;
  }
  if (req.id === undefined || req.id === null) return; // a notification
  const result = handle(req);
  if (result === undefined) send({ jsonrpc: '2.0', id: req.id, error: { code: -32601, message: `method not found: ${req.method}` } });
  else send({ jsonrpc: '2.0', id: req.id, result });
});
