// The code union of TransportError is closed: a switch over it that names every code leaves nothing.
import type { TransportError } from 'cleanturn/transport';
import { describe, expectTypeOf, test } from 'vitest';
import type { TransportErrorCode } from '../../src/transport/errors.js';

/** Every code, each named once: a code added to the union and not here fails `never` below. */
function describeCode(code: TransportErrorCode): string {
  switch (code) {
    case 'http-status':
    case 'connection':
    case 'stall':
    case 'attempt-timeout':
    case 'turn-timeout':
    case 'not-event-stream':
      return 'the request';
    case 'turn-stopped':
      return 'a stop';
    case 'sse-data':
    case 'sse-limit-event':
    case 'sse-limit-unframed':
    case 'sse-field':
      return 'SSE';
    case 'response-resent':
    case 'response-rewritten':
      return 'an HttpClient response';
    case 'resume-not-found':
    case 'resume-expired':
    case 'resume-gap':
    case 'resume-unverifiable':
    case 'resume-repeated':
    case 'resume-diverged':
      return 'a resume';
    case 'unsafe-replay':
      return 'a replay';
    case 'turn-id-not-a-string':
    case 'turn-id-empty':
    case 'turn-id-too-long':
    case 'turn-id-not-well-formed':
      return 'a turn id';
    case 'turn-not-found':
    case 'turn-trimmed':
    case 'turn-ahead':
    case 'turn-taken-over':
    case 'turn-log-timeout':
      return 'the turn log';
    case 'last-event-id':
    case 'remote-turn':
    case 'runner-lost':
    case 'server-closed':
      return 'the turn server';
    default: {
      const unhandled: never = code;
      return unhandled;
    }
  }
}

describe('TransportError', () => {
  test('its code is the union, and a switch over it is exhaustive', () => {
    expectTypeOf<TransportError['code']>().toEqualTypeOf<TransportErrorCode>();
    expectTypeOf(describeCode).returns.toEqualTypeOf<string>();
  });

  test('the fields of the cases', () => {
    expectTypeOf<TransportError['status']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<TransportError['retryAfterMs']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<TransportError['body']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<TransportError['stopReason']>().toEqualTypeOf<unknown>();
    expectTypeOf<TransportError['remoteCode']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<TransportError['operation']>().toEqualTypeOf<
      'claim' | 'append' | 'read' | 'stop' | 'renew' | 'takeOver' | undefined
    >();
  });
});
