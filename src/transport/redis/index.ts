/**
 * The Redis turn log, for turn servers on many processes and machines. It works on a client of the optional peer
 * dependency `ioredis`; importing `cleanturn/transport` alone never loads it. Its errors are `TransportError`s of
 * `cleanturn/transport` (`turn-log-timeout` when Redis does not answer in time).
 *
 * @module
 */
export type { RedisTurnLogOptions } from './redisTurnLog.js';
export { redisTurnLog } from './redisTurnLog.js';
