import { describe, expect, it } from 'vitest';
import { lastActivity, listing, listingRows, shownStatus } from '../../src/tui/format.js';
import { ago, summary, turn } from '../tui/fixtures.js';

/** The handle listing of `cal inspect` and the TUI (issue 41): columns that agree, filters, order. */
describe('the handle listing', () => {
  const elsewhere = { path: '/work/other', realPath: '/work/other', dev: 1, ino: 3 };
  const make = () => {
    const old = summary('aaaaaa1111', { updatedAt: ago(10) }, turn(2, { status: 'completed', updatedAt: ago(3600) }));
    const running = summary('bbbbbb2222', { updatedAt: ago(7200) }, turn(5, { status: 'running', updatedAt: ago(30) }));
    const codex = summary('cccccc3333', { updatedAt: ago(60) }, turn(1, { status: 'interrupted', updatedAt: ago(60) }));
    codex.handle.provider.provider = 'codex';
    codex.handle.config.workingDir = elsewhere;
    codex.paneAlive = true;
    const fresh = summary('dddddd4444', { updatedAt: ago(5) }, null);
    fresh.handle.provider.transport = 'structured';
    return { old, running, codex, fresh };
  };

  it('STATUS is never idle while the last turn is in flight; UPDATED is the last turn\'s last activity', () => {
    const { old, running, fresh } = make();
    expect(running.handle.provider.status).toBe('idle');
    expect(shownStatus(running)).toBe('active');
    expect(shownStatus(old)).toBe('idle');
    // The handle file changed later (a pane check, a name), but the turn is the activity.
    expect(lastActivity(old)).toBe(ago(3600));
    expect(lastActivity(running)).toBe(ago(30));
    expect(lastActivity(fresh)).toBe(ago(5));
  });

  it('sorts by last activity, newest first, and filters by --cwd, --provider and --live', () => {
    const { old, running, codex, fresh } = make();
    const all = [old, running, codex, fresh];
    expect(listing(all).map((s) => s.handle.id)).toEqual(['dddddd4444', 'bbbbbb2222', 'cccccc3333', 'aaaaaa1111']);
    expect(listing(all, { cwd: '/work/other' }).map((s) => s.handle.id)).toEqual(['cccccc3333']);
    expect(listing(all, { provider: 'claude-code' }).map((s) => s.handle.id)).toEqual(['dddddd4444', 'bbbbbb2222', 'aaaaaa1111']);
    // Live: a pane alive, or a turn in flight.
    expect(listing(all, { live: true }).map((s) => s.handle.id)).toEqual(['bbbbbb2222', 'cccccc3333']);
    expect(listing(all, { live: true, provider: 'codex', cwd: '/work/proj' })).toEqual([]);
  });

  it('shows the transport, whether the pane is alive, and the working directory', () => {
    const { running, codex, fresh } = make();
    const [header, ...rows] = listingRows([codex, running, fresh]);
    expect(header).toEqual(['HANDLE', 'NAME', 'PROVIDER', 'CLI', 'TRANSPORT', 'PANE', 'STATUS', 'LAST TURN', 'UPDATED', 'CWD']);
    expect(rows[0]).toEqual(['cccccc3333', '-', 'codex', '2.1.328', 'tmux', 'alive', 'idle', 'interrupted', ago(60), '/work/other']);
    expect(rows[1]).toEqual(['bbbbbb2222', '-', 'claude-code', '2.1.328', 'tmux', 'gone', 'active', 'running', ago(30), '/work/proj']);
    expect(rows[2]?.slice(4, 8)).toEqual(['structured', '-', 'idle', '-']);
  });
});
