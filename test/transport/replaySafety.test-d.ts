// Types of the replay rule: what replaySafety returns, what streamTurn's replay callback is given, and the error.
import type { CleanturnError } from 'cleanturn';
import { openaiResponses } from 'cleanturn/providers';
import { streamTurn, type TransportError } from 'cleanturn/transport';
import { describe, expectTypeOf, test } from 'vitest';
import type { TransportErrorCode } from '../../src/transport/errors.js';
import type { SseRequest } from '../../src/transport/fromSSE.js';
import {
  type ReplayBasis,
  type ReplayInfo,
  type ReplaySafety,
  type ReplayVerdict,
  replaySafety,
} from '../../src/transport/replaySafety.js';

describe('replay safety', () => {
  test('replaySafety takes the request an attempt made (or none) and any error, and returns a verdict', () => {
    expectTypeOf(replaySafety).parameters.toEqualTypeOf<[SseRequest | undefined, unknown]>();
    expectTypeOf(replaySafety).returns.toEqualTypeOf<ReplayVerdict>();
    expectTypeOf<ReplayVerdict>().toEqualTypeOf<{
      safety: ReplaySafety;
      basis: ReplayBasis;
      reason: string;
    }>();
    expectTypeOf<ReplaySafety>().toEqualTypeOf<'safe' | 'unsafe' | 'unknown'>();
    expectTypeOf<ReplayBasis>().toEqualTypeOf<
      'not-sent' | 'refused' | 'stateless' | 'stateful' | 'unreadable'
    >();
  });

  test('the replay callback is asked about unsafe and unknown replays only, and answers with a boolean', () => {
    expectTypeOf<ReplayInfo['safety']>().toEqualTypeOf<'unsafe' | 'unknown'>();
    expectTypeOf<ReplayInfo['request']>().toEqualTypeOf<SseRequest | undefined>();
    streamTurn({
      turnId: 'turn-42',
      adapter: openaiResponses(),
      request: () => 'https://example.test/',
      replay: (info) => {
        expectTypeOf(info).toEqualTypeOf<ReplayInfo>();
        return info.basis === 'stateful';
      },
    });
    streamTurn({
      turnId: 't',
      adapter: openaiResponses(),
      request: () => 'https://example.test/',
      // @ts-expect-error: the callback must answer with a boolean
      replay: () => 'yes',
    });
  });

  test('a refused replay is a TransportError unsafe-replay: a cleanturn error with the safety and the attempt', () => {
    expectTypeOf<TransportError>().toExtend<CleanturnError<TransportErrorCode>>();
    expectTypeOf<'unsafe-replay'>().toExtend<TransportErrorCode>();
    expectTypeOf<TransportError['safety']>().toEqualTypeOf<'unsafe' | 'unknown' | undefined>();
    expectTypeOf<TransportError['attempt']>().toEqualTypeOf<number | undefined>();
  });
});
