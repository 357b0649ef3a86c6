// Types of the transport's resume: the event it emits, the options it takes, and what streamTurn accepts.
import type { Attempted, ProviderEvent, TurnEvent } from 'cleanturn';
import { openaiChat, openaiResponses } from 'cleanturn/providers';
import {
  openaiBackground,
  resumeResponse,
  streamTurn,
  type TransportError,
  type TurnReport,
} from 'cleanturn/transport';
import { type Observable, of } from 'rxjs';
import { describe, expectTypeOf, test } from 'vitest';
import type { ResumeFailure } from '../../src/transport/errors.js';
import type { ResumeRequests } from '../../src/transport/openaiBackground.js';
import type { ResumeEvent, ResumeFrom } from '../../src/types.js';

describe('resume', () => {
  test('a resume is a provider event, and an attempted one in the clean turn', () => {
    expectTypeOf<ResumeEvent>().toEqualTypeOf<{
      type: 'resume';
      after: number;
      cursor?: string;
      reason: string;
    }>();
    expectTypeOf<ResumeEvent>().toExtend<ProviderEvent>();
    expectTypeOf<Attempted<ResumeEvent>>().toExtend<TurnEvent>();
    expectTypeOf<Extract<TurnEvent, { type: 'resume' }>>().toEqualTypeOf<Attempted<ResumeEvent>>();
  });

  test('resumeResponse makes one attempt of provider events from observables, iterables or promises of streams', () => {
    const payloads = of({ type: 'response.created', sequence_number: 0, response: { id: 'resp_1' } });
    expectTypeOf(
      resumeResponse({ create: () => payloads, retrieve: () => payloads, adapter: openaiResponses() }),
    ).toEqualTypeOf<Observable<ProviderEvent>>();
    async function* stream() {
      yield { type: 'response.completed', sequence_number: 1 };
    }
    resumeResponse({
      create: async () => stream(),
      retrieve: ({ id, after, signal }) => {
        expectTypeOf(id).toEqualTypeOf<string>();
        expectTypeOf(after).toEqualTypeOf<number>();
        expectTypeOf(signal).toEqualTypeOf<AbortSignal>();
        return stream();
      },
      cancel: ({ id }) => fetch(`http://127.0.0.1/v1/responses/${id}/cancel`, { method: 'POST' }),
      adapter: openaiResponses(),
    });
    // @ts-expect-error the adapter is required: the attempt's events are provider events
    resumeResponse({ create: () => payloads, retrieve: () => payloads });
    // @ts-expect-error retrieve returns the events of a stream, not one event
    resumeResponse({ create: () => payloads, retrieve: () => 42, adapter: openaiResponses() });
  });

  test('streamTurn takes resume requests, on their own or in a plan', () => {
    expectTypeOf(
      openaiBackground({ headers: { authorization: 'Bearer k' } }),
    ).toEqualTypeOf<ResumeRequests>();
    const request = () => 'http://127.0.0.1/v1/responses';
    streamTurn({ turnId: 't', adapter: openaiResponses(), request, resume: openaiBackground() });
    streamTurn({
      turnId: 't',
      plan: ({ attempt }) =>
        attempt === 1
          ? { adapter: openaiResponses(), request, resume: openaiBackground() }
          : { adapter: openaiChat(), request },
    });
    // @ts-expect-error resume requests are made by openaiBackground() or shaped like them
    streamTurn({ turnId: 't', adapter: openaiResponses(), request, resume: true });
    // A takeover goes on with the lost runner's response: StepContext.resumeFrom.
    const resumeFrom: ResumeFrom | undefined = { responseId: 'resp_1', delivered: [] };
    streamTurn({ turnId: 't', adapter: openaiResponses(), request, resume: openaiBackground(), resumeFrom });
    streamTurn({
      turnId: 't',
      adapter: openaiResponses(),
      request,
      resume: openaiBackground(),
      // @ts-expect-error resumeFrom is { responseId, delivered }, not an id alone
      resumeFrom: 'resp_1',
    });
  });

  test('the report and the error say what happened', () => {
    expectTypeOf<TurnReport['resumes']>().toEqualTypeOf<number>();
    expectTypeOf<TurnReport['attempts'][number]['resumes']>().toEqualTypeOf<number>();
    expectTypeOf<`resume-${ResumeFailure}`>().toExtend<TransportError['code']>();
    expectTypeOf<TransportError['responseId']>().toEqualTypeOf<string | undefined>();
    expectTypeOf<ResumeFailure>().toEqualTypeOf<
      'not-found' | 'expired' | 'gap' | 'unverifiable' | 'repeated' | 'diverged'
    >();
  });
});
