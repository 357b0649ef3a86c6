/**
 * Exactly-once tool effects: the {@link executeTools} operator, the {@link EffectLedger} contract, the in-memory
 * ledger and the one error class of effects, {@link EffectError}. The durable ledgers have entries of their own,
 * so that their drivers load only when used: `cleanturn/effects/sqlite` (better-sqlite3),
 * `cleanturn/effects/redis` (ioredis) and `cleanturn/effects/postgres` (pg); their errors are `EffectError`s too.
 *
 * @module
 */

// The error of effects and their ledgers
export { EffectError } from './errors.js';
// The executor
export { executeTools } from './executeTools.js';
// The in-memory ledger
export { MemoryEffectLedger } from './MemoryEffectLedger.js';
// The ledger contract, the handlers and the result events
export type {
  ClaimResult,
  EffectLedger,
  EffectRecord,
  ToolContext,
  ToolHandlers,
  ToolResultEvent,
} from './types.js';
