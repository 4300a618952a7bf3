/**
 * How a CLI treats the folder it works in (issue 50, item 6). Every adapter declares it, so no
 * CLI's trust is left to an adapter's good memory.
 * - `none`: the CLI has no notion of folder trust: it runs the same in any folder.
 * - `asks`: the CLI asks before it works in a folder it has not been told to trust (interactive,
 *   and for some CLIs headless too), and keeps the answer.
 */
export type FolderTrust =
  | { readonly kind: 'none'; readonly why: string }
  | {
      readonly kind: 'asks';
      /**
       * Whether the CLI, launched on this transport in `cwd` with nothing cal adds for trust,
       * works there without asking: its own record trusts the folder (or an ancestor it counts),
       * trust is off in its settings, or its headless mode never asks.
       */
      trusted(env: Record<string, string>, cwd: string, transport: 'tmux' | 'structured'): boolean | Promise<boolean>;
      /**
       * Trusts `cwd` as the CLI's dialog would, where the CLI keeps that answer (its config);
       * resolves whether it wrote. A CLI that takes trust per launch (a flag, a variable) writes
       * nothing here: its `launch` adds that when `config.trustWorkingDir`.
       */
      trust(env: Record<string, string>, cwd: string): Promise<boolean>;
      /** How a person trusts `cwd` for this CLI themselves: one sentence for the error. */
      howToTrust(cwd: string): string;
    };
