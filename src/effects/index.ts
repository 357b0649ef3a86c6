/**
 * Exactly-once tool effects: the {@link executeTools} operator, the {@link EffectLedger} contract and the
 * in-memory ledger. The durable ledgers have entries of their own, so that their drivers load only when used:
 * `cleanturn/effects/sqlite` (better-sqlite3) and `cleanturn/effects/redis` (ioredis).
 *
 * @module
 */

// Errors
export {
  EffectInDoubtError,
  EffectResultError,
  HandlerTimeoutError,
  LeaseLostError,
  MissingEffectKeyError,
} from './errors.js';
export type { ExecuteToolsOptions } from './executeTools.js';
// The executor
export { executeTools } from './executeTools.js';
// For ledger authors: the storage rules every ledger applies
export { checkResultSize, decodeError, decodeResult, encodeResult, serializeError } from './json.js';
export type {
  Decision,
  LedgerAnswers,
  LedgerOperation,
  LedgerWrite,
  SettleAnswer,
  StoredRecord,
} from './ledgerRules.js';
export { checkDuration, decide, isLeaseLive, isLive, isSettled, toEffectRecord } from './ledgerRules.js';
export type { MemoryEffectLedgerOptions } from './MemoryEffectLedger.js';
// Ledgers
export { MemoryEffectLedger } from './MemoryEffectLedger.js';
// The ledger contract and the result events
export type {
  Awaitable,
  ClaimOptions,
  ClaimResult,
  EffectLedger,
  EffectRecord,
  JsonValue,
  LedgerCallOptions,
  SerializedError,
  SyncEffectLedger,
  ToolContext,
  ToolExecutedEvent,
  ToolFailedEvent,
  ToolHandler,
  ToolHandlers,
  ToolInProgressEvent,
  ToolOutcome,
  ToolReplayedEvent,
  ToolResultEvent,
  UnknownToolEvent,
} from './types.js';
