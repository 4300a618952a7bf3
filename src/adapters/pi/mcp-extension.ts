/**
 * A Pi extension (loaded by Pi itself with `-e <this file>`) that gives Pi the MCP servers of a
 * `--mcp-config` file: Pi 0.73.1 has no MCP client of its own. cal passes the config's path in
 * CAL_PI_MCP_CONFIG. Each stdio server (`{"mcpServers": {"<name>": {"command", "args", "env"}}}`)
 * is started, initialised and asked for its tools; each tool is registered with Pi as
 * `mcp__<server>__<tool>` with the server's own JSON schema, and a call is forwarded as
 * `tools/call`. The servers end with Pi.
 *
 * This file runs inside Pi's process, not cal's: it imports nothing but Node built-ins and cal's
 * spawn helper (which imports nothing else either).
 */
import type { ChildProcessWithoutNullStreams } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { spawnChild } from '../../util/spawn.js';

export const MCP_CONFIG_ENV = 'CAL_PI_MCP_CONFIG';

interface ServerSpec {
  command?: string;
  args?: string[];
  env?: Record<string, string>;
  cwd?: string;
}

interface McpTool {
  name: string;
  description?: string;
  inputSchema?: Record<string, unknown>;
}

interface ToolResultContent {
  type: string;
  text?: string;
}

/** The part of Pi's ExtensionAPI this extension uses. */
interface PiExtensionApi {
  registerTool(tool: {
    name: string;
    label: string;
    description: string;
    parameters: Record<string, unknown>;
    execute(toolCallId: string, params: unknown, signal?: AbortSignal): Promise<{ content: Array<{ type: 'text'; text: string }>; details: unknown }>;
  }): void;
  on(event: string, handler: (...args: unknown[]) => unknown): void;
}

class StdioClient {
  private nextId = 1;
  private buffer = '';
  private readonly pending = new Map<number, { resolve: (v: unknown) => void; reject: (e: Error) => void }>();

  constructor(private readonly child: ChildProcessWithoutNullStreams) {
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => this.onData(chunk));
    child.stderr.resume();
    const fail = (why: string) => {
      for (const p of this.pending.values()) p.reject(new Error(why));
      this.pending.clear();
    };
    child.on('exit', (code) => fail(`the MCP server exited (${code ?? 'signal'})`));
    child.on('error', (err) => fail(err.message));
    child.stdin.on('error', () => undefined);
  }

  private onData(chunk: string): void {
    this.buffer += chunk;
    for (let nl = this.buffer.indexOf('\n'); nl >= 0; nl = this.buffer.indexOf('\n')) {
      const line = this.buffer.slice(0, nl).trim();
      this.buffer = this.buffer.slice(nl + 1);
      if (!line) continue;
      let msg: { id?: unknown; result?: unknown; error?: { message?: string } };
      try {
        msg = JSON.parse(line) as typeof msg;
      } catch {
        continue;
      }
      if (typeof msg.id !== 'number') continue;
      const p = this.pending.get(msg.id);
      if (!p) continue;
      this.pending.delete(msg.id);
      if (msg.error) p.reject(new Error(msg.error.message ?? 'MCP error'));
      else p.resolve(msg.result);
    }
  }

  request(method: string, params: unknown, timeoutMs = 30_000): Promise<unknown> {
    const id = this.nextId++;
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.pending.delete(id);
        reject(new Error(`MCP ${method} timed out`));
      }, timeoutMs);
      this.pending.set(id, {
        resolve: (v) => {
          clearTimeout(timer);
          resolve(v);
        },
        reject: (e) => {
          clearTimeout(timer);
          reject(e);
        },
      });
      this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', id, method, params }) + '\n');
    });
  }

  notify(method: string, params: unknown): void {
    this.child.stdin.write(JSON.stringify({ jsonrpc: '2.0', method, params }) + '\n');
  }

  close(): void {
    try {
      this.child.stdin.end();
      this.child.kill('SIGTERM');
    } catch {
      // already gone
    }
  }
}

function readServers(file: string): Record<string, ServerSpec> {
  const parsed = JSON.parse(readFileSync(file, 'utf8')) as { mcpServers?: Record<string, ServerSpec> };
  return parsed.mcpServers ?? {};
}

export default async function calMcpBridge(pi: PiExtensionApi): Promise<void> {
  const file = process.env[MCP_CONFIG_ENV];
  if (!file) return;
  const clients: StdioClient[] = [];
  const closeAll = () => {
    for (const c of clients) c.close();
  };
  process.once('exit', closeAll);
  pi.on('session_shutdown', closeAll);

  const servers = readServers(file);
  await Promise.all(
    Object.entries(servers).map(async ([server, spec]) => {
      if (!spec.command) return; // only stdio servers
      const child = spawnChild(spec.command, spec.args ?? [], {
        cwd: spec.cwd ?? process.cwd(),
        env: { ...process.env, ...(spec.env ?? {}) },
        stdio: ['pipe', 'pipe', 'pipe'],
      }) as ChildProcessWithoutNullStreams;
      const client = new StdioClient(child);
      clients.push(client);
      try {
        await client.request('initialize', { protocolVersion: '2025-06-18', capabilities: {}, clientInfo: { name: 'cal-pi-mcp-bridge', version: '1' } });
        client.notify('notifications/initialized', {});
        const listed = (await client.request('tools/list', {})) as { tools?: McpTool[] } | null;
        for (const tool of listed?.tools ?? []) {
          pi.registerTool({
            name: `mcp__${server}__${tool.name}`,
            label: `${server}.${tool.name}`,
            description: tool.description ?? `MCP tool ${tool.name} of server ${server}`,
            parameters: tool.inputSchema ?? { type: 'object', properties: {} },
            async execute(_id, params) {
              const result = (await client.request('tools/call', { name: tool.name, arguments: params ?? {} }, 600_000)) as {
                content?: ToolResultContent[];
                structuredContent?: unknown;
                isError?: boolean;
              } | null;
              const texts = (result?.content ?? []).map((c) => (typeof c.text === 'string' ? c.text : JSON.stringify(c)));
              const text = texts.length ? texts.join('\n') : result?.structuredContent !== undefined ? JSON.stringify(result.structuredContent) : '';
              if (result?.isError) throw new Error(text || 'the MCP tool failed');
              return { content: [{ type: 'text', text }], details: { server, tool: tool.name } };
            },
          });
        }
      } catch {
        // A server that does not start offers no tools; the model sees none of them.
        client.close();
      }
    }),
  );
}
