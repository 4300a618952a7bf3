import { render } from 'ink-testing-library';
import { afterEach, describe, expect, it } from 'vitest';
import { cleanup } from 'ink-testing-library';
import { HandleList } from '../../src/tui/HandleList.js';
import { NOW, ago, summary, turn } from './fixtures.js';

afterEach(() => cleanup());

describe('HandleList view', () => {
  it('shows each handle with name, provider, transport and pane, a status that agrees with its last turn, the last activity and the working directory (issue 41)', () => {
    const summaries = [
      summary('aaaaaa1111', { name: 'refactor', createdAt: ago(7200) }, turn(3, { status: 'completed', updatedAt: ago(90) })),
      summary('bbbbbb2222', { createdAt: ago(45) }, turn(1, { status: 'running', updatedAt: ago(5) })),
      summary('cccccc3333', { createdAt: ago(3 * 86400) }, null),
    ];
    summaries[0]!.paneAlive = true;
    summaries[2]!.handle.provider.status = 'lost';
    summaries[2]!.handle.provider.transport = 'structured';
    const { lastFrame } = render(<HandleList summaries={summaries} selected={1} now={NOW} stateDir="/tmp/state" />);
    const frame = lastFrame() ?? '';
    expect(frame).toContain('cal inspect · 3 handles in /tmp/state');
    expect(frame).toMatch(/ID\s+NAME\s+PROVIDER\s+VIA\s+STATUS\s+LAST TURN\s+CWD/);
    const rows = frame.split('\n');
    const row = (id: string) => rows.find((l) => l.includes(id)) ?? '';
    const cwd = summaries[0]!.handle.config.workingDir.realPath;
    const tail = cwd.length <= 12 ? cwd : `…${cwd.slice(-11)}`;
    expect(row('aaaaaa1111')).toMatch(/^ {2}aaaaaa1111\s+refactor\s+claude-code\s+tmux alive\s+idle\s+completed 1m\s+/);
    expect(row('aaaaaa1111')).toContain(tail);
    // The handle recorded `idle`, but its last turn runs: STATUS says so (never idle beside running).
    expect(row('bbbbbb2222')).toMatch(/^› bbbbbb2222\s+-\s+claude-code\s+tmux gone\s+active\s+running 5s\s+/);
    expect(row('cccccc3333')).toMatch(/cccccc3333\s+-\s+claude-code\s+structured\s+lost\s+-\s+/);
  });

  it('fits 80 columns: no row and no header wraps, however long the state directory (issue 20, item 10)', () => {
    const summaries = [summary('aaaaaa1111', { name: 'a-very-long-handle-name-indeed' }, turn(3, { status: 'interrupted', updatedAt: ago(90) }))];
    const { lastFrame } = render(<HandleList summaries={summaries} selected={0} now={NOW} stateDir={`/tmp/${'deep/'.repeat(20)}state`} />);
    const lines = (lastFrame() ?? '').split('\n');
    // The table is 78 columns wide whatever the terminal; the title is cut at the terminal's
    // width (ink-testing-library's is 100) rather than wrapped onto a second line.
    for (const line of lines.slice(1)) expect(Array.from(line).length, line).toBeLessThanOrEqual(80);
    expect(lines[0]).toMatch(/^cal inspect · 1 handle in \/tmp\/deep\/.*…$/);
    expect(lines[1]).toBe('');
    expect(lines.filter((l) => l.includes('aaaaaa1111'))).toHaveLength(1);
  });

  it('says how to start one when there are no handles', () => {
    const { lastFrame } = render(<HandleList summaries={[]} selected={0} now={NOW} />);
    expect(lastFrame()).toContain('cal inspect · 0 handles');
    expect(lastFrame()).toContain('No handles yet');
  });

  it('scrolls to keep the selected row visible when there are more handles than rows', () => {
    const summaries = Array.from({ length: 12 }, (_, i) => summary(`hh${String(i).padStart(8, '0')}`));
    const { lastFrame } = render(<HandleList summaries={summaries} selected={10} now={NOW} maxRows={4} />);
    const frame = lastFrame() ?? '';
    expect(frame).toContain('› hh00000010');
    expect(frame).not.toContain('hh00000000');
    expect(frame).toContain('rows 8-11 of 12');
  });
});
