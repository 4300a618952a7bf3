/**
 * How OpenCode names an MCP server's tool (1.18.33, measured in the binary): the server's name and
 * the tool's name, each with every character outside `[A-Za-z0-9_-]` replaced by `_`, joined by
 * `_` (`calprobe_echo`). Its own tools (`bash`, `read`, `apply_patch`, …) carry no server.
 */
export function sanitiseMcpName(name: string): string {
  return name.replace(/[^a-zA-Z0-9_-]/g, '_');
}

/**
 * The MCP server and tool behind OpenCode's name for a tool, given the MCP servers cal configured
 * for the session; null for a tool of OpenCode's own (or of a server cal did not configure). A
 * server whose name is the longer prefix wins (`a_b` over `a` for `a_b_echo`), so a tool or a
 * server whose own name holds `_` maps right.
 */
export function mcpToolOf(tool: string, servers: readonly string[]): { server: string; name: string } | null {
  const matches = servers
    .map((server) => ({ server, prefix: `${sanitiseMcpName(server)}_` }))
    .filter(({ prefix }) => tool.startsWith(prefix) && tool.length > prefix.length)
    .sort((a, b) => b.prefix.length - a.prefix.length);
  const best = matches[0];
  return best ? { server: best.server, name: tool.slice(best.prefix.length) } : null;
}
