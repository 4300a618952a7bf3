import type { HandleSummary, HandleView } from '../sessions/agent-sessions.js';
import { inFlight, shownStatus } from './format.js';

/** The footers: every key the view answers to, on two lines that fit 80 columns. */
export const listFooter = ['s send · c cancel · k kill pane · d remove · n new · a attach · / filter', '↑/↓ move · enter open · r refresh · q quit'] as const;
export const detailFooter = ['s send · c cancel · k kill pane · d remove · n new · / filter', 'a attach (detach with C-b d) · esc list · r refresh · q quit'] as const;

/** The session an action applies to: the selected row, or the handle shown. */
export interface Target {
  id: string;
  /** `id (name)`, as the views show it. */
  label: string;
  provider: string;
  cwd: string;
  /** The turn in flight on it, by cal's records (from any process), or null. */
  busyTurn: string | null;
}

export function targetOfSummary(s: HandleSummary): Target {
  const h = s.handle;
  return { id: h.id, label: labelOf(h.id, h.name), provider: h.provider.provider, cwd: h.config.workingDir.realPath, busyTurn: inFlight(s.lastTurn) ? (s.lastTurn?.id ?? null) : null };
}

export function targetOfView(v: HandleView): Target {
  const h = v.handle;
  const last = v.turns.at(-1) ?? null;
  return { id: h.id, label: labelOf(h.id, h.name), provider: h.provider.provider, cwd: h.config.workingDir.realPath, busyTurn: inFlight(last) ? (last?.id ?? null) : null };
}

function labelOf(id: string, name: string | null): string {
  return name ? `${id} (${name})` : id;
}

/** `/`: the rows whose id, name, provider, status or directory contain the text (any case). */
export function filtered(summaries: readonly HandleSummary[], text: string): HandleSummary[] {
  const needle = text.trim().toLowerCase();
  if (needle === '') return [...summaries];
  return summaries.filter((s) => {
    const h = s.handle;
    return [h.id, h.name ?? '', h.provider.provider, shownStatus(s), h.config.workingDir.realPath].some((field) => field.toLowerCase().includes(needle));
  });
}
