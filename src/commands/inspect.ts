import { AgentSessions, type HandleView } from '../sessions/agent-sessions.js';
import { StateStore } from '../state/store.js';
import { renderError, type GlobalOptions } from './common.js';

/** Plain inspect: JSON or text, no Ink (the TUI is a later addition for TTYs). */
export async function runInspect(ref: string | undefined, opts: { json?: boolean }, global: GlobalOptions): Promise<number> {
  try {
    const store = await StateStore.open(global.stateDir);
    const sessions = new AgentSessions(store);
    if (ref === undefined) {
      const list = await sessions.list();
      if (opts.json) {
        process.stdout.write(JSON.stringify({ handles: list.map(({ handle, lastTurn }) => ({ ...handle, lastTurn })) }) + '\n');
      } else {
        for (const { handle, lastTurn } of list) {
          process.stdout.write(
            [handle.id, handle.name ?? '-', handle.provider.provider, handle.provider.cli?.version ?? '-', handle.provider.status, lastTurn?.status ?? '-', handle.updatedAt].join('\t') + '\n',
          );
        }
      }
      return 0;
    }
    const view = await sessions.describe(ref);
    if (opts.json) process.stdout.write(JSON.stringify(viewJson(view)) + '\n');
    else process.stdout.write(viewText(view));
    return 0;
  } catch (err) {
    return renderError(err, opts);
  }
}

function viewJson(view: HandleView): Record<string, unknown> {
  return { ...view.handle, currentPaneAlive: view.currentPaneAlive, turns: view.turns, events: view.events };
}

function viewText(view: HandleView): string {
  const h = view.handle;
  const p = h.provider;
  const lines = [
    `handle     ${h.id}${h.name ? ` (${h.name})` : ''}`,
    `provider   ${p.provider} via ${p.transport}, CLI ${p.cli?.version ?? '-'} at ${p.cli?.realPath ?? '-'}`,
    `model      ${p.model ?? '(CLI default)'}`,
    `cwd        ${h.config.workingDir.realPath}`,
    `native id  ${p.nativeSessionId ?? '(none yet)'}`,
    `status     ${p.status}`,
    'panes',
    ...h.panes.map((pane, i) =>
      `  ${i === 0 && pane.endedAt === null ? 'current ' : 'archived'} ${pane.tmux.session} ${pane.tmux.paneId} ${pane.launch} ${pane.startedAt}${pane.endedAt ? ` ended ${pane.endedAt}: ${pane.endReason}` : view.currentPaneAlive ? ' (alive)' : ' (gone)'}`,
    ),
    'turns',
    ...view.turns.map((t) => `  ${t.id} ${t.status}${t.answer ? `: ${t.answer.split('\n')[0]?.slice(0, 80)}` : ''}${t.error ? ` [${t.error.message}]` : ''}`),
    'events',
    ...view.events.map((e) => `  ${e.time} ${e.event}${e.turn ? ` ${e.turn}` : ''}`),
  ];
  return lines.join('\n') + '\n';
}
