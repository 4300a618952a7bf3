import { describe, expect, it } from 'vitest';
import { transportAlive, transportsAlive } from '../../src/engine/transport.js';
import type { ProviderHandle } from '../../src/handles/schema.js';
import type { FakeCli } from '../support/fake-engine.js';
import { FakeTmux } from '../support/fake-tmux.js';

/**
 * A listing (`cal inspect`, `cal ls`, the TUI) asks whether each session's pane is alive and its
 * own: one `list-panes` per tmux server, however many handles (200 handles on one server took 200
 * tmux clients, 0.65 s), with the same answer a handle's own check gives.
 */
class CountingTmux extends FakeTmux {
  listings = 0;
  override async listPanes() {
    this.listings++;
    return super.listPanes();
  }
}

function server(socket: string, panes: { id: string; session: string; pid: number; dead?: boolean }[]): CountingTmux {
  const tmux = new CountingTmux(socket, {} as FakeCli);
  tmux.panes = panes.map((p) => ({ argv: [], pasted: [], keys: [], dead: false, ...p }));
  return tmux;
}

const at = (socket: string, paneId: string, session: string, panePid?: number) =>
  ({ tmux: { socket, paneId, session, ...(panePid !== undefined ? { panePid } : {}) } }) as unknown as ProviderHandle;

describe('transportsAlive', () => {
  it('answers every handle from one listing per tmux server, as each handle alone would be answered', async () => {
    const one = server('/s/one', [
      { id: '%0', session: 'cal-a-1', pid: 100 },
      { id: '%1', session: 'cal-b-1', pid: 101, dead: true },
      { id: '%2', session: 'cal-other-1', pid: 102 },
    ]);
    const two = server('/s/two', [{ id: '%0', session: 'cal-c-1', pid: 200 }]);
    const servers: Record<string, CountingTmux> = { '/s/one': one, '/s/two': two };
    const handles = [
      at('/s/one', '%0', 'cal-a-1', 100), // alive, its own
      at('/s/one', '%1', 'cal-b-1'), // its process ended
      at('/s/one', '%2', 'cal-x-1'), // the id now names another session's pane
      at('/s/one', '%0', 'cal-a-1', 999), // the same pane id and session, another process
      at('/s/one', '%7', 'cal-d-1'), // gone
      { tmux: null } as unknown as ProviderHandle, // structured: no pane
      at('/s/two', '%0', 'cal-c-1'), // alive, on another server
    ];
    const factory = (socket: string) => servers[socket]!;
    const listed = await transportsAlive(handles, factory);
    expect(listed).toEqual([true, false, false, false, false, false, true]);
    expect([one.listings, two.listings, one.paneStateCalls, two.paneStateCalls]).toEqual([1, 1, 0, 0]);
    // The listing's answer is the one each handle's own check (transportAlive, a pane's state) gives.
    expect(await Promise.all(handles.map((h) => transportAlive(h, factory)))).toEqual(listed);
  });
});
