/**
 * The Redis turn log, for turn servers on many processes and machines. It works on a client of the optional peer
 * dependency `ioredis`; importing `cleanturn/transport` alone never loads it.
 *
 * @module
 */
export type { RedisTurnLogOperation } from './errors.js';
export { TurnLogTimeoutError } from './errors.js';
export type { RedisTurnLogOptions } from './redisTurnLog.js';
export { redisTurnLog } from './redisTurnLog.js';
