import { AgentSessions, type HandleView } from '../sessions/agent-sessions.js';
import { StateStore } from '../state/store.js';
import { age, certificationText, eventDetail, oneLine, screenTail, splitPanes, toolLine } from '../tui/format.js';
import { listCertifications, type CertificationSummary } from '../certify/results.js';
import { liveCertificationOnly } from '../certify/scope.js';
import type { InspectSource } from '../tui/source.js';
import { renderError, type GlobalOptions } from './common.js';
import type { ProviderName } from '../handles/schema.js';

/**
 * `cal inspect [<handle>]`. On a terminal (stdin and stdout both TTYs, no --json) it opens the
 * Ink TUI, imported only here and only then; otherwise the same information as plain text or
 * JSON, without loading Ink or React.
 */
export async function runInspect(ref: string | undefined, opts: { json?: boolean }, global: GlobalOptions): Promise<number> {
  try {
    const store = await StateStore.open(global.stateDir);
    const sessions = new AgentSessions(store);
    if (!opts.json && process.stdout.isTTY && process.stdin.isTTY) {
      // A bad reference fails here, as a plain typed error, before the terminal is taken over.
      if (ref !== undefined) await sessions.describe(ref);
      const { runTui } = await import('../tui/run.js');
      return await runTui({ source: tuiSource(sessions, store.layout.root), ref, stateDir: store.layout.root });
    }
    if (ref === undefined) {
      const list = await sessions.list();
      const certifications = await listCertifications(store.layout.root);
      if (opts.json) {
        process.stdout.write(JSON.stringify({ handles: list.map(({ handle, lastTurn }) => ({ ...handle, lastTurn })), certifications }) + '\n');
      } else {
        for (const { handle, lastTurn } of list) {
          process.stdout.write(
            [handle.id, handle.name ?? '-', handle.provider.provider, handle.provider.cli?.version ?? '-', handle.provider.status, lastTurn?.status ?? '-', handle.updatedAt].join('\t') + '\n',
          );
        }
        if (certifications.length > 0) process.stdout.write(certificationsText(certifications, Date.now()));
      }
      return 0;
    }
    const view = await sessions.describe(ref);
    const cli = view.handle.provider.cli;
    const certification = cli ? await certificationsOf(store.layout.root, view.handle.provider.provider, cli.version) : [];
    const screen = view.currentPaneAlive ? await sessions.screen(ref).catch(() => null) : null;
    const attach = view.currentPaneAlive ? await sessions.attachCommand(ref) : null;
    const uncertified = uncertifiedHere(view.handle.provider.provider, certification);
    if (opts.json) process.stdout.write(JSON.stringify({ ...viewJson(view, screen, attach), certification, ...(uncertified ? { uncertifiedHere: uncertified } : {}) }) + '\n');
    else process.stdout.write(viewText(view, screen, attach, Date.now(), uncertified ?? (cli ? certificationText(certification, Date.now()) : null)));
    return 0;
  } catch (err) {
    return renderError(err, opts);
  }
}

/**
 * For a CLI only a live run can certify (Cursor, Agy) and no live pass on record for this
 * version: says so, with what would certify it. Null otherwise.
 */
function uncertifiedHere(provider: ProviderName, results: CertificationSummary[]): string | null {
  const why = liveCertificationOnly(provider);
  if (!why || results.some((r) => r.mode === 'live' && r.certified)) return null;
  return `uncertified here: ${why}; a user's live run certifies it (cal certify --provider ${provider} --live)`;
}

/** Stored `cal certify` results of one CLI version, one per mode. */
async function certificationsOf(stateRoot: string, provider: string, version: string): Promise<CertificationSummary[]> {
  return (await listCertifications(stateRoot)).filter((c) => c.provider === provider && c.version === version);
}

/** What the TUI reads: the sessions object, plus certification results from certify's store. */
function tuiSource(sessions: AgentSessions, stateRoot: string): InspectSource {
  return {
    list: () => sessions.list(),
    describe: (ref) => sessions.describe(ref),
    screen: (ref) => sessions.screen(ref),
    attachCommand: (ref) => sessions.attachCommand(ref),
    certification: (provider, version) => certificationsOf(stateRoot, provider, version),
  };
}

function viewJson(view: HandleView, screen: string | null, attach: string[] | null): Record<string, unknown> {
  return { ...view.handle, currentPaneAlive: view.currentPaneAlive, turns: view.turns, events: view.events, screen, attach };
}

const SCREEN_LINES = 15;

/** `cal certify` results on record, after the handle lines (only when there are any). */
function certificationsText(list: CertificationSummary[], now: number): string {
  const lines = ['certifications'];
  for (const c of list) lines.push(`  ${c.provider} ${c.version}: ${certificationText([c], now)}`);
  return lines.join('\n') + '\n';
}

function viewText(view: HandleView, screen: string | null, attach: string[] | null, now: number, certified: string | null = null): string {
  const h = view.handle;
  const p = h.provider;
  const { current, archived } = splitPanes(view.panes);
  const lines = [
    `handle     ${h.id}${h.name ? ` (${h.name})` : ''}`,
    `provider   ${p.provider} via ${p.transport}, CLI ${p.cli?.version ?? '-'} at ${p.cli?.realPath ?? '-'}`,
    ...(certified !== null ? [`certified  ${certified}`] : []),
    `model      ${p.model ?? '(CLI default)'}`,
    `cwd        ${h.config.workingDir.realPath}`,
    `native id  ${p.nativeSessionId ?? '(none yet)'}`,
    `status     ${p.status}`,
    'panes',
    ...view.panes.map((pane) =>
      `  ${pane.current ? 'current ' : 'archived'} ${pane.label} ${pane.launch} ${pane.startedAt}${pane.endedAt ? ` ended ${pane.endedAt}: ${pane.endReason}` : pane.alive ? ' (alive)' : ' (gone)'}`,
    ),
  ];
  if (current && screen !== null) {
    lines.push(`screen of ${current.label} (last ${SCREEN_LINES} lines)`, ...screenTail(screen, SCREEN_LINES).map((l) => `  | ${l}`));
  }
  if (attach) lines.push(`attach     ${attach.join(' ')}`);
  lines.push(`archived   ${archived.length} pane${archived.length === 1 ? '' : 's'}`);
  lines.push(
    'turns',
    ...view.turns.flatMap((t) => [
      `  ${t.id} ${t.status} (${age(t.updatedAt, now)} ago)${t.answer ? `: ${t.answer.split('\n')[0]?.slice(0, 80)}` : ''}${t.error ? ` [${t.error.message}]` : ''}`,
      ...t.tools.map((tool) => `    tool ${toolLine(tool, 120)}`),
    ]),
    'events',
    ...view.events.map((e) => `  ${e.time} ${e.event}${e.turn ? ` ${e.turn}` : ''}${eventDetail(e) ? ` ${oneLine(eventDetail(e), 120)}` : ''}`),
  );
  return lines.join('\n') + '\n';
}
