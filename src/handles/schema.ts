import { z } from '../util/zod.js';
import { HANDLE_ID_PATTERN } from './id.js';

/**
 * Handles: two nested, versioned documents (design §3). The provider handle is transport state
 * only; the agent session handle wraps it with identity, stability fingerprint and pane history.
 */
export const HANDLE_SCHEMA_VERSION = 1;

export const providerNames = ['claude-code', 'codex', 'gemini', 'pi', 'cursor', 'agy', 'qwen', 'copilot', 'opencode', 'cline', 'kilo', 'acp', 'anthropic', 'openai'] as const;
export const ProviderName = z.enum(providerNames);
export type ProviderName = z.infer<typeof ProviderName>;

export const transports = ['tmux', 'structured', 'acp', 'api'] as const;
export const Transport = z.enum(transports);
export type Transport = z.infer<typeof Transport>;

/** A directory as given, plus the identity of its real path: a moved or recreated folder differs. */
export const DirIdentity = z.object({
  path: z.string(),
  realPath: z.string(),
  dev: z.number(),
  ino: z.number(),
  /**
   * When the filesystem records it. A folder deleted and recreated can get its inode back (ext4
   * hands it out again at once when no process holds the folder), but never its birth time.
   */
  birthtimeMs: z.number().optional(),
});
export type DirIdentity = z.infer<typeof DirIdentity>;

export const TmuxLocation = z.object({
  socket: z.string(),
  session: z.string(),
  paneId: z.string(),
  /** The pane's process when it was launched: with the session name, tells a reused pane id apart. */
  panePid: z.number().int().positive().optional(),
  /** The environment tag every process of the pane inherits, so none outlives the pane. */
  tag: z.string().regex(/^[a-z0-9-]{8,64}$/).optional(),
});
export type TmuxLocation = z.infer<typeof TmuxLocation>;

/** What a file is on disk now: an installed or replaced binary differs in at least one field. */
export const FileIdentity = z.object({
  size: z.number(),
  mtimeMs: z.number(),
  dev: z.number(),
  ino: z.number(),
});
export type FileIdentity = z.infer<typeof FileIdentity>;

export const PinnedCli = z.object({
  path: z.string(),
  realPath: z.string(),
  version: z.string(),
  /** The real path's identity when its version was read; absent in handles from before it was kept. */
  identity: FileIdentity.optional(),
  /**
   * Where the version stood against the adapter when it was pinned (design §10): `certified`
   * from the adapter's floor up to the newest release it has certified, `newer_than_certified`
   * above that (it runs, uncertified). Absent on handles written before cal recorded it.
   */
  support: z.enum(['certified', 'newer_than_certified']).optional(),
  /** The newest release the adapter had certified when this version was pinned. */
  newestCertified: z.string().optional(),
  /** `--provider acp`: the arguments of the agent's command line after its executable (`--acp-command`). */
  args: z.array(z.string()).optional(),
});
export type PinnedCli = z.infer<typeof PinnedCli>;

export const TranscriptCursor = z.object({
  path: z.string(),
  offset: z.number().int().nonnegative(),
});
export type TranscriptCursor = z.infer<typeof TranscriptCursor>;

export const ProviderHandle = z.object({
  provider: ProviderName,
  transport: Transport,
  nativeSessionId: z.string().nullable(),
  /** An id chosen up front but not yet recorded by the CLI (no first turn on disk yet). */
  pendingSessionId: z.string().nullable().default(null),
  tmux: TmuxLocation.nullable(),
  workingDir: DirIdentity,
  projectDirId: z.string().nullable().default(null),
  model: z.string().nullable(),
  status: z.enum(['active', 'idle', 'lost', 'closed']),
  cli: PinnedCli.nullable(),
  transcript: TranscriptCursor.nullable(),
  /** The file the CLI's hooks append end-of-turn signals to, where the adapter set one up. */
  signals: TranscriptCursor.nullable().default(null),
  /** Names (never values) of the environment variables the session needs. */
  envNames: z.array(z.string()).default([]),
  /**
   * The structured transport's CLI process while it runs a turn (pid and kernel start time), so
   * a recover after cal died can tell a CLI still working (wait) from one that is gone (settle
   * from the transcript). Null between turns and for a pane.
   */
  cliProcess: z.object({ pid: z.number().int().positive(), startTime: z.string().nullable() }).nullable().optional(),
});
export type ProviderHandle = z.infer<typeof ProviderHandle>;

/**
 * What the CLI may do without asking, in terms no one CLI owns; each adapter maps it to its CLI's
 * own flags and refuses (usage) a policy its CLI has no honest equivalent for:
 * - default: whatever the user's own CLI settings say (cal passes nothing);
 * - read-only: the agent may read and search, not edit files nor run commands that change things;
 * - accept-edits: file edits in the working directory go through without asking;
 * - bypass: no approvals and no sandbox (only where the machine itself is the sandbox).
 */
export const toolPolicies = ['default', 'read-only', 'accept-edits', 'bypass'] as const;
export const ToolPolicy = z.enum(toolPolicies);
export type ToolPolicy = z.infer<typeof ToolPolicy>;

export const StabilityFingerprint = z.object({
  workingDir: DirIdentity,
  model: z.string().nullable(),
  systemPromptHash: z.string().nullable(),
  /** The text itself is kept (0600) because a relaunch must hand it to the CLI again. */
  systemPrompt: z.string().nullable().default(null),
  mcpConfigHash: z.string().nullable(),
  mcpConfigPath: z.string().nullable().default(null),
  toolPolicy: z.string(),
  /**
   * The trust policy of this session (engine/folder-trust.ts): false once `--no-trust` was given
   * (at start or on a continue), kept for every later turn. Handles written before it: true.
   */
  trustWorkingDir: z.boolean().default(true),
});
export type StabilityFingerprint = z.infer<typeof StabilityFingerprint>;

export const PaneRecord = z.object({
  tmux: TmuxLocation,
  startedAt: z.string(),
  endedAt: z.string().nullable(),
  endReason: z.string().nullable(),
  launch: z.enum(['fresh', 'resume']),
});
export type PaneRecord = z.infer<typeof PaneRecord>;

export const HandleId = z.string().regex(HANDLE_ID_PATTERN, 'a handle id is 6-32 lowercase letters and digits');
export const HandleName = z
  .string()
  .min(1)
  .max(64)
  .regex(/^[A-Za-z0-9][A-Za-z0-9._-]*$/, 'a name is letters, digits, dot, dash and underscore, not starting with a dot');

export const AgentSessionHandle = z.object({
  schemaVersion: z.literal(HANDLE_SCHEMA_VERSION),
  id: HandleId,
  name: HandleName.nullable(),
  scope: z.enum(['chat', 'workflow_step', 'background_agent', 'certification']).default('chat'),
  ownerId: z.string().nullable(),
  correlationId: z.string().nullable(),
  config: StabilityFingerprint,
  provider: ProviderHandle,
  /** Every pane this logical session had: the current one first, then archived ones. */
  panes: z.array(PaneRecord),
  /** The git worktree cal made for the session (`start --worktree`, src/git/worktree.ts), if any. */
  worktree: z.object({ path: z.string(), branch: z.string(), repo: z.string(), base: z.string() }).nullable().optional(),
  createdAt: z.string(),
  updatedAt: z.string(),
});
export type AgentSessionHandle = z.infer<typeof AgentSessionHandle>;

/** Only the version field, to tell a newer handle (left alone) from a corrupt one. */
export const VersionProbe = z.object({ schemaVersion: z.number() }).passthrough();
