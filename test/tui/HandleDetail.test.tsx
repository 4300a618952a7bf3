import { cleanup, render } from 'ink-testing-library';
import { afterEach, describe, expect, it } from 'vitest';
import { HandleDetail } from '../../src/tui/HandleDetail.js';
import { certificationText } from '../../src/tui/format.js';
import { NOW, archivedPane, certified, currentPane, view } from './fixtures.js';

afterEach(() => cleanup());

const screen = ['╭──────────────╮', '│ > hello      │', '╰──────────────╯', '  ? for shortcuts', '', ''].join('\n');

describe('HandleDetail view', () => {
  it('shows identity and the pinned CLI', () => {
    const { lastFrame } = render(<HandleDetail view={view()} screen={screen} now={NOW} />);
    const frame = lastFrame() ?? '';
    expect(frame).toContain('handle abc123def0 (refactor) · chat');
    expect(frame).toContain('provider   claude-code via tmux · model (CLI default)');
    expect(frame).toContain('cwd        /work/proj');
    expect(frame).toContain('CLI        2.1.328 at /opt/claude/claude.exe\n');
    expect(frame).toContain('certified  none recorded (see cal certify)');
    expect(frame).toMatch(/native id {2}11111111-2222-3333-4444-555555555555 · status idle · created 10m ago/);
  });

  it('shows the current pane alive with a preview of its screen', () => {
    const { lastFrame } = render(<HandleDetail view={view()} screen={screen} now={NOW} />);
    const frame = lastFrame() ?? '';
    expect(frame).toContain('current pane cal-abc-2 %7 (resume, started 2m ago) ● alive');
    expect(frame).toContain('│ > hello      │');
    expect(frame).toContain('? for shortcuts');
  });

  it('shows archived panes with when and why they ended', () => {
    const { lastFrame } = render(<HandleDetail view={view()} screen={screen} now={NOW} />);
    const frame = lastFrame() ?? '';
    expect(frame).toContain('archived panes (1)');
    expect(frame).toContain('cal-abc-1 %3 (fresh) · started 10m ago · ended 3m ago (11:57:00): pane gone');
  });

  it('shows the turns with status, answer and tool activity', () => {
    const { lastFrame } = render(<HandleDetail view={view()} screen={screen} now={NOW} />);
    const frame = lastFrame() ?? '';
    expect(frame).toContain('turns (3)');
    expect(frame).toMatch(/t0001-abcdef completed\s+Remember the codeword TANGO\. → OK, I will remember the codeword TANGO\./);
    expect(frame).toMatch(/t0002-abcdef completed\s+Run it \[\[cal:shell=sleep 2; e… → Tool finished: hi/);
    expect(frame).toContain('⚙ shell sleep 2; echo hi → completed: hi');
    expect(frame).toMatch(/t0003-abcdef failed\s+message 3 → \[turn_failed\] API Error: 500/);
  });

  it('shows the lifecycle events as a timeline', () => {
    const { lastFrame } = render(<HandleDetail view={view()} screen={screen} now={NOW} />);
    const lines = (lastFrame() ?? '').split('\n');
    const start = lines.findIndex((l) => l.startsWith('events (UTC)'));
    expect(start).toBeGreaterThan(0);
    expect(lines.slice(start + 1, start + 6).map((l) => l.trim())).toEqual([
      '11:50:10 running t0001-abcdef',
      '11:50:20 completed t0001-abcdef',
      '11:57:00 lost_tmux t0002-abcdef pane=%3',
      '11:57:01 resuming t0002-abcdef nativeSessionId=11111111-2222-3333-4444-555555555555',
      '11:59:50 failed t0003-abcdef kind=turn_failed message=API Error: 500',
    ]);
  });

  it('a current pane that is gone shows no preview and says the next continue resumes', () => {
    const v = view({ panes: [{ ...currentPane, alive: false }, archivedPane], currentPaneAlive: false });
    const { lastFrame } = render(<HandleDetail view={v} screen={null} now={NOW} />);
    const frame = lastFrame() ?? '';
    expect(frame).toContain('current pane cal-abc-2 %7 (resume, started 2m ago) ○ gone (the next continue resumes natively)');
    expect(frame).not.toContain('╭');
  });

  it('with no pane at all, and no turns or events yet', () => {
    const v = view({ panes: [], currentPaneAlive: false, turns: [], events: [] });
    const { lastFrame } = render(<HandleDetail view={v} screen={null} now={NOW} />);
    const frame = lastFrame() ?? '';
    expect(frame).toContain('current pane none');
    expect(frame).toMatch(/archived panes \(0\)\n\s+none/);
    expect(frame).toMatch(/turns \(0\)\n\s+none/);
    expect(frame).toMatch(/events \(UTC\)\n\s+none/);
  });

  it('fits a small terminal: the most recent turns and events, the last screen lines', () => {
    const many = view();
    const turns = Array.from({ length: 30 }, (_, i) => ({ ...many.turns[0]!, id: `t${String(i + 1).padStart(4, '0')}-x`, seq: i + 1 }));
    const events = Array.from({ length: 40 }, (_, i) => ({ ...many.events[0]!, turn: `t${String(i + 1).padStart(4, '0')}-x` }));
    const tall = Array.from({ length: 50 }, (_, i) => `screen line ${i + 1}`).join('\n');
    const { lastFrame } = render(<HandleDetail view={{ ...many, turns, events }} screen={tall} now={NOW} rows={30} />);
    const frame = lastFrame() ?? '';
    expect(frame.split('\n').length).toBeLessThanOrEqual(34);
    expect(frame).toContain('screen line 50');
    expect(frame).not.toContain('screen line 1\n');
    expect(frame).toContain('t0030-x');
    expect(frame).not.toContain('t0001-x completed');
    expect(frame).toMatch(/turns \(30\) · last \d+/);
    expect(frame).toMatch(/events \(UTC\) · last \d+ of 40/);
  });
});

describe('screen preview', () => {
  it('squeezes the blank gap of a full-screen CLI so the conversation stays in view', () => {
    const claude = ['● The codeword was TANGO.', '', '✻ Cooked for 0s', ...Array(30).fill(''), '────', '❯ ', '────', '  ⏵⏵ auto mode on', '', ''].join('\n');
    const { lastFrame } = render(<HandleDetail view={view()} screen={claude} now={NOW} rows={40} />);
    const framed = (lastFrame() ?? '').split('\n').filter((l) => l.startsWith('│')).map((l) => l.replace(/^│ |\s*│$/g, ''));
    expect(framed).toEqual(['● The codeword was TANGO.', '', '✻ Cooked for 0s', '', '────', '❯', '────', '  ⏵⏵ auto mode on']);
  });
});

describe('certification of the pinned CLI', () => {
  it('says when the version passed, failed or was only partly certified', () => {
    const ok = render(<HandleDetail view={view()} screen={null} now={NOW} certification={[certified()]} />);
    expect(ok.lastFrame()).toContain('certified  scripted: yes (14 pass, 2 skipped, 3h ago)\n');
    cleanup();
    const failed = certified({ mode: 'live', certified: false, pass: 10, fail: 2, failing: ['resume-after-kill', 'paste-5kb'] });
    const bad = render(<HandleDetail view={view()} screen={null} now={NOW} certification={[certified(), failed]} />);
    expect(bad.lastFrame()).toContain('certified  scripted: yes (14 pass, 2 skipped, 3h ago) · live: NO, failing resume-after-kill');
    expect(certificationText([failed], NOW)).toBe('live: NO, failing resume-after-kill, paste-5kb (10 pass, 2 fail, 3h ago)');
    cleanup();
    const partial = render(<HandleDetail view={view()} screen={null} now={NOW} certification={[certified({ certified: false, pass: 3, skip: 0, missing: ['a', 'b'] })]} />);
    expect(partial.lastFrame()).toContain('certified  scripted: incomplete (3 pass, 2 not run, 3h ago)');
  });
});
