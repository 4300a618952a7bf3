import { existsSync, readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import { repoRoot } from '../support/clis.js';

/** Issue 43: the README is the front door, and no link of it or of docs/ leaves the repository. */
const docs = ['README.md', ...readdirSync(path.join(repoRoot, 'docs')).filter((f) => f.endsWith('.md')).map((f) => `docs/${f}`)];

/** The text outside fenced code blocks and inline code (a link there is an example, not a link). */
function prose(text: string): string {
  return text.replace(/```[\s\S]*?```/g, '').replace(/`[^`\n]*`/g, '');
}

function links(text: string): string[] {
  const out: string[] = [];
  for (const m of prose(text).matchAll(/\]\(([^)\s]+)\)/g)) out.push(m[1] as string);
  for (const m of prose(text).matchAll(/<(https?:\/\/[^>]+)>/g)) out.push(m[1] as string);
  for (const m of prose(text).matchAll(/^\[[^\]]+\]:\s*(\S+)/gm)) out.push(m[1] as string);
  return out;
}

describe('README and docs', () => {
  it.each(docs)('%s links only to files inside the repository, all of them there', (file) => {
    const text = readFileSync(path.join(repoRoot, file), 'utf8');
    for (const link of links(text)) {
      expect(link, `${file}: ${link}`).not.toMatch(/^[a-z][a-z0-9+.-]*:|^\/\//i);
      const target = link.split('#')[0] as string;
      if (target === '') continue;
      const resolved = path.resolve(path.dirname(path.join(repoRoot, file)), target);
      expect(resolved.startsWith(`${repoRoot}${path.sep}`), `${file}: ${link} leaves the repository`).toBe(true);
      expect(existsSync(resolved), `${file}: ${link} names no file`).toBe(true);
    }
  });

  /** GitHub's anchors of a Markdown file: each heading lower-cased, punctuation dropped, spaces to '-', repeats numbered. */
  function anchors(file: string): Set<string> {
    const seen = new Map<string, number>();
    const out = new Set<string>();
    for (const m of readFileSync(file, 'utf8').replace(/```[\s\S]*?```/g, '').matchAll(/^#{1,6}\s+(.*?)\s*#*\s*$/gm)) {
      const slug = (m[1] as string).trim().toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replace(/ /g, '-');
      const n = seen.get(slug) ?? 0;
      seen.set(slug, n + 1);
      out.add(n === 0 ? slug : `${slug}-${n}`);
    }
    return out;
  }

  // Issue 52 §3: docs/library.md and docs/scripted-model.md sent readers to a README section that was gone.
  it.each(docs)('%s: every link to a section, and every "README, \"Section\"" it names, is a heading that exists', (file) => {
    const text = readFileSync(path.join(repoRoot, file), 'utf8');
    for (const link of links(text).filter((l) => l.includes('#') && !/^[a-z][a-z0-9+.-]*:/i.test(l))) {
      const [target, anchor] = link.split('#') as [string, string];
      const resolved = target === '' ? path.join(repoRoot, file) : path.resolve(path.dirname(path.join(repoRoot, file)), target);
      expect(anchors(resolved).has(anchor), `${file}: ${link} names no heading`).toBe(true);
    }
    const readme = anchors(path.join(repoRoot, 'README.md'));
    for (const m of prose(text).matchAll(/README(?:'s)?,? "([^"]+)"/g)) {
      const slug = (m[1] as string).toLowerCase().replace(/[^\p{L}\p{N}_\- ]/gu, '').replace(/ /g, '-');
      expect(readme.has(slug), `${file}: the README has no section "${m[1]}"`).toBe(true);
    }
  });

  it('the README is under 15 KB, with no line over 160 characters outside tables and code, and no dated measurement', () => {
    const text = readFileSync(path.join(repoRoot, 'README.md'), 'utf8');
    expect(Buffer.byteLength(text)).toBeLessThan(15 * 1024);
    let inCode = false;
    for (const line of text.split('\n')) {
      if (line.startsWith('```')) inCode = !inCode;
      if (inCode || line.startsWith('|') || line.startsWith('    ')) continue;
      expect(line.length, line).toBeLessThanOrEqual(160);
    }
    expect(text).not.toMatch(/\b20\d\d-\d\d-\d\d\b/);
  });

  it('docs/README.md lists every document in docs/', () => {
    const index = readFileSync(path.join(repoRoot, 'docs', 'README.md'), 'utf8');
    for (const file of docs.filter((f) => f.startsWith('docs/') && f !== 'docs/README.md')) expect(index, file).toContain(`(${path.basename(file)})`);
  });
});
