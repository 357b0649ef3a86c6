// Types of stopping a turn and of its timers: streamTurn's `signal` and `timeout`, the errors they end a turn
// with, the report's `stopped` outcome, turnServer's `stop` and the run's signal, and the client's `stopTurn`.
import type { TurnEvent } from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import {
  memoryTurnLog,
  type StreamTurnOptions,
  stopTurn,
  streamTurn,
  type TransportError,
  type TurnLog,
  type TurnReport,
  turnServer,
} from 'cleanturn/transport';
import { NEVER, type Observable } from 'rxjs';
import { describe, expectTypeOf, test } from 'vitest';
import type { StopTurnOptions } from '../../src/transport/fromTurnSSE.js';
import type { TurnTimeouts } from '../../src/transport/streamTurn.js';

const base = { turnId: 'turn-42', adapter: openaiChat(), request: () => 'http://127.0.0.1/' };

describe('streamTurn: signal and timeout', () => {
  test('takes an AbortSignal and an object of three optional timers in milliseconds', () => {
    expectTypeOf<StreamTurnOptions['signal']>().toEqualTypeOf<AbortSignal | undefined>();
    expectTypeOf<StreamTurnOptions['timeout']>().toEqualTypeOf<TurnTimeouts | undefined>();
    expectTypeOf<TurnTimeouts>().toEqualTypeOf<{ totalMs?: number; attemptMs?: number; chunkMs?: number }>();
    expectTypeOf(
      streamTurn({
        ...base,
        signal: new AbortController().signal,
        timeout: { totalMs: 1, attemptMs: 1, chunkMs: 1 },
      }),
    ).toEqualTypeOf<Observable<TurnEvent>>();
    // @ts-expect-error: a timer's name is totalMs, attemptMs or chunkMs
    streamTurn({ ...base, timeout: { total: 1 } });
    // @ts-expect-error: milliseconds, not a string
    streamTurn({ ...base, timeout: { chunkMs: '30s' } });
    // @ts-expect-error: a signal, not a controller
    streamTurn({ ...base, signal: new AbortController() });
  });

  test('the errors say what ended the turn, and the report has a stopped outcome', () => {
    expectTypeOf<TransportError['stopReason']>().toEqualTypeOf<unknown>();
    expectTypeOf<TransportError['retryable']>().toEqualTypeOf<boolean>();
    expectTypeOf<TransportError['timeoutMs']>().toEqualTypeOf<number | undefined>();
    expectTypeOf<'turn-stopped' | 'attempt-timeout' | 'turn-timeout' | 'stall'>().toExtend<
      TransportError['code']
    >();
    expectTypeOf<TurnReport['outcome']>().toEqualTypeOf<'completed' | 'failed' | 'stopped' | 'cancelled'>();
  });
});

describe('turnServer: stop', () => {
  test('stop resolves whether a running turn was asked to stop; the run gets the signal', () => {
    const turns = turnServer<TurnEvent>({ log: memoryTurnLog() });
    expectTypeOf(turns.stop('turn-42')).toEqualTypeOf<Promise<boolean>>();
    expectTypeOf(turns.stop('turn-42', 'stopped by the user')).toEqualTypeOf<Promise<boolean>>();
    turns.serve({
      turnId: 'turn-42',
      run: ({ signal }) => {
        expectTypeOf(signal).toEqualTypeOf<AbortSignal>();
        return streamTurn({ ...base, signal });
      },
    });
    // A run that takes nothing still fits.
    turns.serve({ turnId: 'turn-42', run: () => NEVER });
  });

  test('stop marks are optional methods of a log', () => {
    expectTypeOf<TurnLog['requestStop']>().toEqualTypeOf<
      ((turnId: string, reason: string) => Promise<boolean>) | undefined
    >();
    expectTypeOf<TurnLog['watchStop']>().toEqualTypeOf<
      ((turnId: string) => Observable<string>) | undefined
    >();
  });

  test('stopTurn takes a request and resolves whether the server stopped a turn', () => {
    expectTypeOf(stopTurn('/turns/turn-42/stop')).toEqualTypeOf<Promise<boolean>>();
    expectTypeOf(stopTurn({ url: '/turns/turn-42/stop', init: { method: 'DELETE' } })).toEqualTypeOf<
      Promise<boolean>
    >();
    expectTypeOf<StopTurnOptions>().toEqualTypeOf<{ fetch?: typeof fetch; signal?: AbortSignal }>();
  });
});
