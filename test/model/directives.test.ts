import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { decodeReplyText, parseDirectives } from '../../src/model/directives.js';

describe('parseDirectives', () => {
  it('parses every directive kind', () => {
    const text = [
      '[[cal:http=529]]',
      '[[cal:delay=250]]',
      '[[cal:chunk-delay=40]]',
      '[[cal:chunks=7]]',
      '[[cal:break]]',
      '[[cal:fail]]',
      '[[cal:shell=ls -la | wc -l]]',
      '[[cal:mcp=probe.echo {"text":"hi"}]]',
      '[[cal:echo]]',
      '[[cal:reply=one\\ntwo]]',
      '[[cal:lines=12]]',
    ].join(' ');
    const p = parseDirectives(text);
    expect(p.directives).toEqual([
      { kind: 'http', status: 529 },
      { kind: 'delay', ms: 250 },
      { kind: 'chunk-delay', ms: 40 },
      { kind: 'chunks', n: 7 },
      { kind: 'break' },
      { kind: 'fail' },
      { kind: 'shell', command: 'ls -la | wc -l' },
      { kind: 'mcp', server: 'probe', tool: 'echo', args: { text: 'hi' } },
      { kind: 'echo' },
      { kind: 'reply', text: 'one\ntwo' },
      { kind: 'lines', n: 12 },
    ]);
    expect(p.raw).toEqual([
      'http=529',
      'delay=250',
      'chunk-delay=40',
      'chunks=7',
      'break',
      'fail',
      'shell=ls -la | wc -l',
      'mcp=probe.echo {"text":"hi"}',
      'echo',
      'reply=one\\ntwo',
      'lines=12',
    ]);
    expect(p.stripped).toBe('');
  });

  it('removes directive tokens from the text and trims it', () => {
    const p = parseDirectives('  Hello [[cal:delay=5]]world\n[[cal:chunks=2]] ');
    expect(p.stripped).toBe('Hello world');
    expect(p.raw).toEqual(['delay=5', 'chunks=2']);
  });

  it('scans the MCP JSON arguments with brace matching, so they may contain ]]', () => {
    const p = parseDirectives('x [[cal:mcp=srv.tool {"a":[[1,2]],"s":"]] } {"}]] y');
    expect(p.directives).toEqual([{ kind: 'mcp', server: 'srv', tool: 'tool', args: { a: [[1, 2]], s: ']] } {' } }]);
    expect(p.stripped).toBe('x  y');
  });

  it('accepts an MCP call without arguments', () => {
    expect(parseDirectives('[[cal:mcp=srv.tool]]').directives).toEqual([{ kind: 'mcp', server: 'srv', tool: 'tool', args: {} }]);
  });

  it('reports invalid directives instead of guessing', () => {
    const kinds = (t: string): string[] => parseDirectives(t).directives.map((d) => (d.kind === 'invalid' ? `invalid:${d.reason}` : d.kind));
    expect(kinds('[[cal:htpp=500]]')).toEqual(['invalid:unknown directive "htpp"']);
    expect(kinds('[[cal:http=abc]]')[0]).toMatch(/^invalid:expected a whole number/);
    expect(kinds('[[cal:http=302]]')[0]).toMatch(/^invalid:value out of range/);
    expect(kinds('[[cal:delay]]')[0]).toMatch(/^invalid:expected a whole number/);
    expect(kinds('[[cal:chunks=0]]')[0]).toMatch(/^invalid:value out of range/);
    expect(kinds('[[cal:echo=1]]')).toEqual(['invalid:"echo" takes no value']);
    expect(kinds('[[cal:shell=  ]]')).toEqual(['invalid:shell needs a command']);
    expect(kinds('[[cal:mcp=nodot]]')[0]).toMatch(/^invalid:mcp needs SERVER.TOOL/);
    expect(kinds('[[cal:mcp=a.b [1]]]')[0]).toMatch(/^invalid:mcp arguments must be a JSON object/);
  });

  it('leaves unterminated or malformed tokens in the text', () => {
    expect(parseDirectives('a [[cal:http=500 b').directives).toEqual([]);
    expect(parseDirectives('a [[cal:http=500 b').stripped).toBe('a [[cal:http=500 b');
    expect(parseDirectives('[[cal:]] [[cal:Echo]] [[cal:echo x]]').directives).toEqual([]);
  });

  it('decodes \\n, \\t and \\\\ in reply text', () => {
    expect(decodeReplyText('a\\nb\\tc\\\\n')).toBe('a\nb\tc\\n');
  });

  it('finds no directive in text without the [[cal: marker (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', maxLength: 80 }).filter((s) => !s.includes('[[cal:')),
        (s) => {
          const p = parseDirectives(s);
          expect(p.directives).toEqual([]);
          expect(p.stripped).toBe(s.trim());
        },
      ),
      { numRuns: 200 },
    );
  });

  it('round-trips reply text without ]] or backslashes (property)', () => {
    fc.assert(
      fc.property(
        fc.string({ unit: 'grapheme', minLength: 1, maxLength: 60 }).filter((s) => !s.includes(']]') && !s.includes('\\') && !s.endsWith(']')),
        (s) => {
          const p = parseDirectives(`[[cal:reply=${s}]]`);
          expect(p.directives).toEqual([{ kind: 'reply', text: s }]);
        },
      ),
      { numRuns: 200 },
    );
  });
});
