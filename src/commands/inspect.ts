import { realpathSync } from 'node:fs';
import { CalError, openSessions, providerNames, type CertificationSummary, type ProviderName, type SessionDetail, type Sessions, type TurnResult } from '../index.js';
import { listCertifications } from '../certify/results.js';
import { liveCertificationOnly } from '../certify/scope.js';
import type { InspectSource, TurnOutcome } from '../tui/source.js';
import { age, certificationText, eventDetail, listing, listingRows, oneLine, screenTail, splitPanes, toolLine, type ListingFilter } from '../tui/format.js';
import { cancelText } from './cancel.js';
import { renderError, uncertifiedCliText, openOptions } from './common.js';
import { defineCommand } from './spec.js';
import { createRequire } from 'node:module';
import { packagePath } from '../util/package-root.js';

/**
 * The TUI from its own compiled modules (dist/tui/), by a path the bundler does not follow: Ink
 * is an ES module graph with top-level await, which the CommonJS bundle of the command line
 * (dist/bin/) cannot hold, and the TUI shares no state with the rest of cal (its modules import
 * cal's only for types). tui/load.ts says why it is a require.
 */
function loadTui(): ReturnType<typeof import('../tui/load.js').loadTui> {
  const door = createRequire(import.meta.url)(packagePath('dist', 'tui', 'load.js')) as typeof import('../tui/load.js');
  return door.loadTui();
}

/** Marks the options of `cal ls` (commands/ls.ts): inspect's listing, never its TUI. */
export const LISTING_ONLY = Symbol('cal ls');

/**
 * `cal inspect [<handle>]`. On a terminal (stdin and stdout both TTYs, no --json) it opens the
 * Ink TUI, imported only here and only then; otherwise the same information as plain text or
 * JSON, without loading Ink or React.
 */
export const command = defineCommand({
  name: 'inspect',
  help: 'show handles: identity, panes, turns and events',
  args: [{ name: 'handle', help: 'handle id or name (default: every handle)' }],
  options: {
    cwd: { value: '<dir>', help: 'only the handles working in DIR' },
    provider: { value: '<name>', help: 'only the handles of this provider' },
    live: { help: 'only the handles with a live pane or a turn in flight' },
    json: { help: 'print JSON' },
  },
  async run([ref], opts, global) {
    try {
      const filter = listingFilter(opts);
      if (ref !== undefined && (filter.cwd !== undefined || filter.provider !== undefined || filter.live)) {
        throw new CalError('usage', '--cwd, --provider and --live filter the list of handles; leave them out with a handle');
      }
      const sessions = await openSessions(openOptions(global));
      if (!opts.json && process.stdout.isTTY && process.stdin.isTTY && !(LISTING_ONLY in opts)) {
        // A bad reference fails here, as a plain typed error, before the terminal is taken over.
        if (ref !== undefined) await sessions.inspect(ref, { screen: false });
        const { runTui } = await loadTui();
        return await runTui({ source: tuiSource(sessions, filter), ref, stateDir: sessions.stateDir });
      }
      if (ref === undefined) {
        const list = await sessions.inspect();
        const { certifications, unreadable, hosts } = list;
        const handles = listing(list.handles, filter);
        // Through a fleet: a host down makes the listing partial (its handles as it last listed
        // them, marked down): printed all the same, and the exit code says so (host_unavailable).
        const down = new Set((hosts ?? []).filter((h) => !h.available).map((h) => h.host));
        const partial = down.size > 0 ? new CalError('host_unavailable', `the listing is partial: host${down.size === 1 ? '' : 's'} ${[...down].join(', ')} did not answer; ${down.size === 1 ? 'its' : 'their'} handles are shown as last listed, marked down`) : null;
        const hostOf = (h: object) => (h as { host?: string }).host;
        const hostDown = (h: object) => down.has(hostOf(h) ?? '');
        if (opts.json) {
          const entries = handles.map(({ handle, lastTurn, paneAlive }) => ({ ...handle, lastTurn, paneAlive, ...(hostDown(handle) ? { hostDown: true } : {}) }));
          process.stdout.write(JSON.stringify({ handles: entries, certifications, unreadable, ...(hosts ? { hosts } : {}), ...(partial ? { partial: true, error: partial.toJSON() } : {}) }) + '\n');
        } else {
          // A handle file that cannot be read is reported (on stderr), never left out in silence.
          for (const u of unreadable) process.stderr.write(`cal: unreadable handle ${u.file}${u.name ? ` (name ${u.name})` : ''}: ${u.reason}\n`);
          if (handles.length > 0) {
            const rows = listingRows(handles);
            const withHosts = hosts ? rows.map((r, i) => [i === 0 ? 'HOST' : hostCell(hostOf(handles[i - 1]!.handle), down), ...r]) : rows;
            process.stdout.write(columns(withHosts));
          } else if (list.handles.length > 0) {
            process.stderr.write(`cal: no handles match ${filterText(filter)} (of ${list.handles.length} in ${sessions.stateDir})\n`);
          } else if (unreadable.length === 0) {
            // Said on stderr, so stdout stays empty for a script that counts lines.
            process.stderr.write(`cal: no handles in ${sessions.stateDir}; start one with cal start\n`);
          }
          if (certifications.length > 0) process.stdout.write(certificationsText(certifications, Date.now()));
          if (partial) process.stderr.write(`cal: ${partial.kind}: ${partial.message}\n`);
        }
        return partial ? partial.exitCode : 0;
      }
      const detail = await sessions.inspect(ref);
      const uncertified = await uncertifiedHere(detail.handle.provider.provider, detail.certification);
      // A release newer than the adapter certified: uncertified, whatever a local certify run says.
      const newer = uncertifiedCliText(detail.handle);
      if (opts.json) {
        process.stdout.write(
          JSON.stringify({ ...viewJson(detail), certification: detail.certification, ...(uncertified ? { uncertifiedHere: uncertified } : {}), ...(newer ? { uncertifiedCli: newer } : {}) }) + '\n',
        );
      } else {
        const results = detail.handle.provider.cli ? certificationText(detail.certification, Date.now()) : null;
        process.stdout.write(viewText(detail, Date.now(), uncertified ?? (newer ? `uncertified: ${newer}${results ? ` · cal certify: ${results}` : ''}` : results)));
      }
      return 0;
    } catch (err) {
      return renderError(err, opts);
    }
  },
});

/**
 * What the TUI reads, from the library. Its certification results come from the stored
 * `cal certify` runs (certify/results.ts), and one poll's describe and screen share one read.
 */
function tuiSource(sessions: Sessions, filter: ListingFilter): InspectSource {
  const reading = new Map<string, Promise<SessionDetail>>();
  const detail = (ref: string): Promise<SessionDetail> => {
    let pending = reading.get(ref);
    if (!pending) {
      pending = sessions.inspect(ref).finally(() => reading.delete(ref));
      reading.set(ref, pending);
    }
    return pending;
  };
  return {
    list: async () => listing((await sessions.inspect()).handles, filter),
    describe: (ref) => detail(ref),
    screen: async (ref) => (await detail(ref)).screen,
    attachCommand: async (ref) => (await sessions.inspect(ref, { screen: false })).attach,
    certification: async (provider, version) => (await listCertifications(sessions.stateDir)).filter((c) => c.provider === provider && c.version === version),
    // The view's actions: the library calls of cal continue, start, cancel, kill-tmux and remove.
    send: async (ref, message, watch) => turnOutcome(await sessions.continue(ref, message, watch)),
    start: async ({ provider, cwd, message }, watch) => turnOutcome(await sessions.start({ provider: provider as ProviderName, cwd, message, ...watch })),
    cancel: async (ref) => cancelText(await sessions.cancel(ref)),
    killPane: async (ref) => `killed the pane of ${(await sessions.killTmux(ref)).id}: the session survives (the next message resumes it natively)`,
    remove: async (ref) => {
      const { handle } = await sessions.remove(ref);
      return `removed: ${handle.id}${handle.name ? ` (${handle.name})` : ''}`;
    },
    providers: providerNames,
  };
}

function turnOutcome({ handle, turn }: TurnResult): TurnOutcome {
  return { handle: handle.id, turn: turn.id, answer: turn.answer };
}

/** The list filters, checked: a directory that is not there or an unknown provider is a usage error. */
function listingFilter(opts: { cwd?: string | boolean; provider?: string | boolean; live?: boolean | string }): ListingFilter {
  const filter: ListingFilter = { live: opts.live === true };
  if (typeof opts.provider === 'string') {
    if (!(providerNames as readonly string[]).includes(opts.provider)) throw new CalError('usage', `unknown --provider ${JSON.stringify(opts.provider)}; known: ${providerNames.join(', ')}`);
    filter.provider = opts.provider;
  }
  if (typeof opts.cwd === 'string') {
    try {
      filter.cwd = realpathSync(opts.cwd);
    } catch {
      throw new CalError('usage', `--cwd ${JSON.stringify(opts.cwd)} is not a directory cal can read`);
    }
  }
  return filter;
}

function filterText(filter: ListingFilter): string {
  return [filter.cwd !== undefined ? `--cwd ${filter.cwd}` : '', filter.provider !== undefined ? `--provider ${filter.provider}` : '', filter.live ? '--live' : ''].filter(Boolean).join(' ');
}

/** The HOST cell of a fleet listing: the host, marked when it is down. */
function hostCell(host: string | undefined, down: ReadonlySet<string>): string {
  if (host === undefined) return '-';
  return down.has(host) ? `${host} (down)` : host;
}

/** Left-aligned columns, two spaces apart (the last one unpadded). */
function columns(rows: string[][]): string {
  const widths = rows[0]!.map((_, i) => Math.max(...rows.map((r) => (r[i] ?? '').length)));
  return rows.map((r) => r.map((cell, i) => (i === r.length - 1 ? cell : cell.padEnd(widths[i]!))).join('  ')).join('\n') + '\n';
}

/** A word a POSIX shell reads back as itself. */
export function shellQuote(word: string): string {
  return /^[A-Za-z0-9_./:=%@+,-]+$/.test(word) ? word : `'${word.replace(/'/g, `'\\''`)}'`;
}

export function viewJson(view: SessionDetail): Record<string, unknown> {
  // Each recorded pane with what inspect shows of it: the current one or an archived one, alive or not.
  const panes = view.handle.panes.map((p, i) => ({ ...p, current: view.panes[i]?.current ?? false, alive: view.panes[i]?.alive ?? false }));
  return { ...view.handle, panes, currentPaneAlive: view.currentPaneAlive, turns: view.turns, events: view.events, screen: view.screen, attach: view.attach };
}

const SCREEN_LINES = 15;

/** `cal certify` results on record, after the handle lines (only when there are any). */
function certificationsText(list: CertificationSummary[], now: number): string {
  const lines = ['certifications'];
  for (const c of list) lines.push(`  ${c.provider} ${c.version}: ${certificationText([c], now)}`);
  return lines.join('\n') + '\n';
}

function viewText(view: SessionDetail, now: number, certified: string | null = null): string {
  const { screen, attach } = view;
  const h = view.handle;
  const p = h.provider;
  const { current, archived } = splitPanes(view.panes);
  const lines = [
    `handle     ${h.id}${h.name ? ` (${h.name})` : ''}`,
    `provider   ${p.provider} via ${p.transport}, CLI ${p.cli?.version ?? '-'}${p.cli?.support === 'newer_than_certified' ? ' (uncertified)' : ''} at ${p.cli?.realPath ?? '-'}`,
    ...(certified !== null ? [`certified  ${certified}`] : []),
    `model      ${p.model ?? '(CLI default)'}`,
    `cwd        ${h.config.workingDir.realPath}`,
    ...(h.worktree ? [`worktree   ${h.worktree.path} (branch ${h.worktree.branch} from ${h.worktree.base} of ${h.worktree.repo})`] : []),
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
  if (attach) lines.push(`attach     ${attach.map(shellQuote).join(' ')}`);
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

/**
 * For a CLI only a live run can certify (Cursor, Agy) and no live pass on record for this
 * version: says so, with what would certify it. Null otherwise.
 */
async function uncertifiedHere(provider: Parameters<typeof liveCertificationOnly>[0], results: CertificationSummary[]): Promise<string | null> {
  const why = await liveCertificationOnly(provider);
  if (!why || results.some((r) => r.mode === 'live' && r.certified)) return null;
  return `uncertified here: ${why}; a user's live run certifies it (cal certify --provider ${provider} --live)`;
}
