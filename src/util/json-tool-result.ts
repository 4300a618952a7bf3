/**
 * The text inside a tool result a CLI passes to the model as JSON (Cline CLI 3.0.65: an MCP
 * result as `{"content":[{"type":"text","text":…}]}`, its shell tool's as
 * `[{"query":…,"result":…,"success":…}]`); any other output as it is.
 */
export function unwrapJsonResult(output: string): string {
  const t = output.trim();
  if (!t.startsWith('{') && !t.startsWith('[')) return output;
  let v: unknown;
  try {
    v = JSON.parse(t);
  } catch {
    return output;
  }
  const texts = (items: unknown[], key: string): string[] | null => {
    const out = items.map((i) => (i && typeof i === 'object' && typeof (i as Record<string, unknown>)[key] === 'string' ? ((i as Record<string, unknown>)[key] as string) : null));
    return out.length > 0 && out.every((x) => x !== null) ? (out as string[]) : null;
  };
  if (Array.isArray(v) && v.every((i) => i && typeof i === 'object' && 'query' in i)) return texts(v, 'result')?.join('\n') ?? output;
  if (v && typeof v === 'object' && Array.isArray((v as { content?: unknown }).content)) {
    const content = (v as { content: unknown[] }).content.filter((c) => (c as { type?: unknown })?.type === 'text');
    return texts(content, 'text')?.join('\n') ?? output;
  }
  return output;
}
