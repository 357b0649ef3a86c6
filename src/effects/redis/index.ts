/**
 * The Redis effect ledger, for many processes and machines. Needs the optional peer dependency `ioredis`;
 * importing `cleanturn/effects` alone never loads it.
 *
 * @module
 */
export type { RedisLedgerOperation } from './errors.js';
export {
  LedgerDataLostError,
  LedgerMemoryFullError,
  LedgerPersistenceError,
  LedgerTimeoutError,
} from './errors.js';
export type { RedisEffectLedgerOptions, RedisPersistenceCheck } from './RedisEffectLedger.js';
export { RedisEffectLedger } from './RedisEffectLedger.js';
