/**
 * The source of a tiny stdio MCP server for certification scenarios, written into the
 * scenario's folder and run with node: `node mcp-probe.mjs <call-log>`. One tool, `echo`,
 * answers `echo: <text>`; every request (initialize, tools/list, tools/call) is appended to the log, so a scenario can prove that the
 * MCP config reached the CLI natively and that the CLI really made the call.
 */
export function mcpProbeSource(): string {
  return `// cal certify: MCP probe (newline-delimited JSON-RPC 2.0 over stdio)
import { appendFileSync } from 'node:fs';
import { createInterface } from 'node:readline';

const callLog = process.argv[2];
const echoTool = {
  name: 'echo',
  description: 'Returns the given text, prefixed with "echo: ".',
  inputSchema: { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] },
  annotations: { readOnlyHint: true },
};

function reply(id, result, error) {
  const message = error ? { jsonrpc: '2.0', id, error } : { jsonrpc: '2.0', id, result };
  process.stdout.write(JSON.stringify(message) + '\\n');
}

function answer(request) {
  const params = request.params ?? {};
  if (callLog) appendFileSync(callLog, JSON.stringify({ method: request.method, name: params.name, arguments: params.arguments }) + '\\n');
  if (request.method === 'initialize') {
    return {
      protocolVersion: params.protocolVersion ?? '2025-06-18',
      capabilities: { tools: { listChanged: false } },
      serverInfo: { name: 'calprobe', version: '1.0.0' },
    };
  }
  if (request.method === 'ping') return {};
  if (request.method === 'tools/list') return { tools: [echoTool] };
  if (request.method === 'tools/call') {
    const args = params.arguments ?? {};
    if (params.name !== 'echo') return { content: [{ type: 'text', text: 'no such tool: ' + params.name }], isError: true };
    return { content: [{ type: 'text', text: 'echo: ' + String(args.text ?? '') }] };
  }
  return undefined;
}

createInterface({ input: process.stdin }).on('line', (line) => {
  let request;
  try {
    request = JSON.parse(line);
  } catch {
    return;
  }
  if (request === null || typeof request !== 'object' || request.id === undefined || request.id === null) return;
  const result = answer(request);
  if (result === undefined) reply(request.id, undefined, { code: -32601, message: 'method not found: ' + request.method });
  else reply(request.id, result);
});
`;
}
