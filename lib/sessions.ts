/**
 * Sessions: records, lifecycle moves, create and end (SPEC 2, 3, 4.1–4.4). The parts
 * live in `lib/sessions/`; this module is the one import for routes and other surfaces.
 */
export {
  conflictBackoff,
  counterValue,
  isTerminal,
  KV_U64_MINUS_ONE,
  listSessions,
  type ListSessionsOptions,
  MAX_COMMIT_ATTEMPTS,
  type MoveOptions,
  type MoveReason,
  type MoveResult,
  moveSession,
  readSession,
  recordOf,
  sessionKey,
  type SessionRecord,
  sessionsByTenantKey,
  sessionsOpenKey,
  tenantOpenSessionsKey,
  TERMINAL_RETENTION_MS,
  TERMINAL_STATUSES,
  type TerminalStatus,
  type TimelineEntry,
} from "./sessions/store.ts";
export { concurrencyError, insertSession } from "./sessions/insert.ts";
export {
  tenantUsage,
  type UsageBucket,
  type UsageTotal,
} from "./sessions/usage.ts";
export {
  createSession,
  type CreateSessionRequest,
  type CreateSessionResult,
  startSession,
} from "./sessions/create.ts";
export { credentialsOf, resolveAvatar } from "./sessions/create_input.ts";
export { resolveTransport } from "./sessions/transport.ts";
export { endConflict, endSession, endWithWarning } from "./sessions/end.ts";
export {
  isSessionId,
  issueMediaTokens,
  ownedSession,
  sessionNotFound,
  toClientTokenResponse,
  toEndResponse,
  toSessionResponse,
  toStatusResponse,
} from "./sessions/views.ts";
export type { EndReason, SessionStatus, Transport } from "./api/schemas.ts";
