/**
 * Marble helpers for specifying turn policies: an event alphabet, the help-desk turn, and a runner for marble
 * cases that works with any test framework's deep equality.
 *
 * @module
 */
export {
  at,
  call,
  delta,
  finish,
  helpDesk,
  keyed,
  reasoning,
  repeated,
  reset,
  retrying,
  text,
  usage,
} from './events.js';
export { defineMarbles, runMarbleCase } from './marbles.js';
