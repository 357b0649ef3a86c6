// @vitest-environment happy-dom
// The guide's other way: Angular 20's rxResource({ stream }) over turnView() snapshots, thinned to one per frame with
// auditTime(0, animationFrameScheduler). What the guide says of it holds: the reset empties the text, the resource is
// `resolved` while views arrive, the last view arrives when the turn ends, and a change of params unsubscribes the
// previous turn.
import './zonelessTestBed.js';
import { signal } from '@angular/core';
import { rxResource } from '@angular/core/rxjs-interop';
import { TestBed } from '@angular/core/testing';
import { type ProviderEvent, turnPipeline } from 'cleanturn';
import { turnView } from 'cleanturn/renderers';
import { finish, text } from 'cleanturn/testing';
import { animationFrameScheduler, auditTime, defer, finalize, Subject } from 'rxjs';
import { expect, it, vi } from 'vitest';
import type { AssembledEvent } from '../../src/assembleToolCalls.js';

/** Steps fake time by `ms`, then lets the resource's effects run. */
async function elapse(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
  TestBed.tick();
  await vi.advanceTimersByTimeAsync(1);
}

it('rxResource over turnView(): one view per frame, the reset empties the text, params unsubscribe the turn', async () => {
  const attempts: Subject<AssembledEvent<ProviderEvent>>[] = [];
  const finalized: string[] = [];
  const question = signal<string | undefined>(undefined);
  const answer = TestBed.runInInjectionContext(() =>
    rxResource({
      params: () => question(),
      stream: ({ params }) =>
        defer(() => {
          const attempt = new Subject<AssembledEvent<ProviderEvent>>();
          attempts.push(attempt);
          return attempt;
        }).pipe(
          turnPipeline({ turnId: 'turn-42', retry: { count: 1, delay: 0 } }),
          turnView(),
          auditTime(0, animationFrameScheduler),
          finalize(() => finalized.push(params)),
        ),
    }),
  );
  await elapse(16);
  expect(answer.status()).toBe('idle');
  expect(attempts).toHaveLength(0);

  question.set('Please refund order ORD-7781.');
  await elapse(16);
  expect(answer.status()).toBe('loading');
  const first = attempts[0] as Subject<AssembledEvent<ProviderEvent>>;
  for (const piece of ['Checking order ', 'ORD-7781. ', 'Refunding the dam']) first.next(text(piece));
  await elapse(16);
  expect(answer.status()).toBe('resolved');
  expect(answer.value()?.text).toBe('Checking order ORD-7781. Refunding the dam');

  first.error(new Error('connection reset'));
  await elapse(16);
  expect(answer.value()?.text).toBe('');
  expect(answer.value()?.notice?.type).toBe('retrying');

  const second = attempts[1] as Subject<AssembledEvent<ProviderEvent>>;
  second.next(text('Checking order ORD-7781. '));
  second.next(text('The book arrived damaged.'));
  second.next(finish());
  second.complete();
  await elapse(16);
  expect(answer.value()?.text).toBe('Checking order ORD-7781. The book arrived damaged.');
  expect(answer.value()?.finished).toBe(true);
  expect(finalized).toEqual(['Please refund order ORD-7781.']);

  // A new question: a new turn, and the one still running is unsubscribed (its request would be aborted).
  question.set('And order ORD-7782?');
  await elapse(16);
  expect(attempts).toHaveLength(3);
  question.set('And order ORD-7783?');
  await elapse(16);
  expect(attempts).toHaveLength(4);
  expect(attempts[2]?.observed).toBe(false);
  expect(finalized).toEqual(['Please refund order ORD-7781.', 'And order ORD-7782?']);

  // The resource's destroy() (or its component's) ends the running turn: stop() has no other counterpart.
  answer.destroy();
  expect(attempts[3]?.observed).toBe(false);
  expect(finalized).toHaveLength(3);
});
