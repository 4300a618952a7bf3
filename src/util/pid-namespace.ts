import { readFileSync, readlinkSync } from 'node:fs';

/**
 * Where a pid means something: the PID namespace it was read in (the link /proc/self/ns/pid
 * names, `pid:[<inode>]`) and the kernel's boot (/proc/sys/kernel/random/boot_id, shared by a
 * host and its containers). Null where the system does not tell (not Linux).
 */
export interface PidScope {
  pidNs: string | null;
  bootId: string | null;
}

function readOrNull(read: () => string): string | null {
  try {
    return read().trim() || null;
  } catch {
    return null;
  }
}

let own: PidScope | null = null;

/** This process's scope, read once. */
export function ownPidScope(): PidScope {
  own ??= {
    pidNs: readOrNull(() => readlinkSync('/proc/self/ns/pid')),
    bootId: readOrNull(() => readFileSync('/proc/sys/kernel/random/boot_id', 'utf8')),
  };
  return own;
}

/**
 * How a process recorded with `scope` can be judged from here (a state directory shared by a
 * container and its host, issue 40 item 9):
 * - `by_pid`: the same namespace of the same boot, or a record that carries no scope (an older
 *   cal's, or a system that tells none): its pid and start time say whether it runs;
 * - `other_boot`: written under another boot of the kernel: that process is gone (a lock never
 *   outlives the kernel it was taken under; a state directory shared between machines is not
 *   supported, docs/security.md);
 * - `other_namespace`: the same kernel, another PID namespace: its pid means nothing here, so it
 *   is never judged dead by it.
 */
export function judgeFromHere(scope: Partial<PidScope>): 'by_pid' | 'other_boot' | 'other_namespace' {
  const mine = ownPidScope();
  if (scope.bootId && mine.bootId && scope.bootId !== mine.bootId) return 'other_boot';
  if (scope.pidNs && mine.pidNs && scope.pidNs !== mine.pidNs) return 'other_namespace';
  return 'by_pid';
}
