/**
 * coding-agent-loop: continue a coding-agent session with one call, whatever CLI runs it and
 * whatever happened to its terminal. This is the whole public surface (docs/library.md); nothing
 * else in the package can be imported.
 */
export { openSessions } from './library/sessions.js';
export { CalError, exitCodes } from './errors.js';
export { TurnError, CertificationError } from './library/errors.js';
export { eventKinds } from './library/types.js';
export { providerNames, toolPolicies, transports } from './handles/schema.js';
export type {
  AskOptions,
  CalEvent,
  CancelOptions,
  CancelResult,
  CertId,
  CertificationSummary,
  CertifyOptions,
  CertifyReport,
  CertifyResult,
  CertOutcome,
  ChatMessage,
  ContinueOptions,
  ErrorKind,
  EventKind,
  EventsOptions,
  ExpectedConfig,
  FleetOptions,
  Handle,
  HandleRef,
  HandleSummary,
  HandleView,
  InspectOptions,
  OpenOptions,
  PaneView,
  ProviderName,
  RecoverAction,
  RecoverItem,
  RecoverOptions,
  RecoverResult,
  ReapItem,
  ReapOptions,
  RunRecovery,
  SessionDetail,
  SessionList,
  Sessions,
  StartOptions,
  ToolActivity,
  ToolPolicy,
  Transport,
  Turn,
  TurnCallOptions,
  TurnProgress,
  TurnResult,
  TurnStatus,
  WaitOptions,
} from './library/types.js';
export type { CalErrorDetails } from './errors.js';
