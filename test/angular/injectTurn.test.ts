// @vitest-environment happy-dom
// injectTurn in a real Angular 20 app: TestBed, zoneless change detection, JIT-compiled standalone components whose
// templates render the turn's signals into happy-dom's DOM. Time is faked (vitest fakes setTimeout and
// requestAnimationFrame, which both the signals' frames and Angular's zoneless scheduler use), so every frame is
// stepped by the test. Each case ends with no timer left and every subscription to the turn finalized.
import './zonelessTestBed.js';
import {
  Component,
  createEnvironmentInjector,
  EnvironmentInjector,
  effect,
  type Injector,
  provideZonelessChangeDetection,
  runInInjectionContext,
  signal,
} from '@angular/core';
import { type ComponentFixture, TestBed } from '@angular/core/testing';
import { cleanTurn, type ProviderEvent, type TurnEvent, turnPipeline, UsageError } from 'cleanturn';
import { injectTurn, type TurnSignals } from 'cleanturn/angular';
import { initialView, type ViewEvent } from 'cleanturn/renderers';
import { finish, helpDesk, reasoning, text } from 'cleanturn/testing';
import { concat, defer, EMPTY, finalize, from, NEVER, type Observable, of, Subject, throwError } from 'rxjs';
import { describe, expect, it, vi } from 'vitest';
import type { AssembledEvent } from '../../src/assembleToolCalls.js';

const turnId = helpDesk.turnId;
const attempt2 = 'Checking order ORD-7781. The book arrived damaged, so I have started a full refund.';

/** One frame of `requestAnimationFrame` under fake timers. */
const FRAME = 16;

/**
 * Steps fake time by `ms`, running the timers and frames due, then by 1 ms more for the change detection that they
 * scheduled: Angular's zoneless scheduler asks for a timer of 0 ms when a signal that a template reads changes, which
 * fake timers run 1 ms later when it is asked for while they run.
 */
async function elapse(ms: number): Promise<void> {
  await vi.advanceTimersByTimeAsync(ms);
  await vi.advanceTimersByTimeAsync(1);
}

type Options = Parameters<typeof injectTurn>[1];

/** The component under test: its template renders every signal of the turn and counts its renders. */
interface TurnHost {
  readonly turn: TurnSignals;
  renders: number;
}

/** A standalone component whose `turn` field is `injectTurn(source, options)`, rendered by its template. */
function hostOf(source: () => Observable<ViewEvent>, options?: Options) {
  class TurnComponent implements TurnHost {
    renders = 0;
    readonly turn = injectTurn(source, options);
    protected rendered(): string {
      this.renders++;
      return '';
    }
    protected describe(error: unknown): string {
      return error instanceof Error ? `${error.name}: ${error.message}` : '';
    }
  }
  Component({
    selector: 'app-turn',
    template: `{{ rendered() }}<p class="status">{{ turn.status() }}</p>
      @if (turn.status() === 'retrying') {
        <p class="notice">retrying in {{ turn.retryDelay() }} ms</p>
      }
      <p class="attempt">{{ turn.attempt() }}</p>
      <p class="reasoning">{{ turn.reasoning() }}</p>
      <p class="text">{{ turn.text() }}</p>
      <ul>
        @for (call of turn.calls(); track call.id) {
          <li>{{ call.name }} {{ call.status }}</li>
        }
      </ul>
      <p class="error">{{ describe(turn.error()) }}</p>`,
  })(TurnComponent);
  return TurnComponent;
}

/** Renders the host of `source` and lets its first change detection run. */
async function render(
  source: () => Observable<ViewEvent>,
  options?: Options,
): Promise<{ fixture: ComponentFixture<TurnHost>; turn: TurnSignals; dom: (cls: string) => string }> {
  const fixture = TestBed.createComponent(hostOf(source, options)) as ComponentFixture<TurnHost>;
  await elapse(FRAME);
  const element = fixture.nativeElement as HTMLElement;
  const dom = (cls: string) => element.querySelector(`.${cls}`)?.textContent?.trim() ?? '';
  return { fixture, turn: fixture.componentInstance.turn, dom };
}

/** A source factory over subjects, one per call, that counts its subscriptions and finalizations. */
function subjects() {
  const made: Subject<ViewEvent>[] = [];
  const counts = { calls: 0, finalized: 0 };
  const source = () => {
    counts.calls++;
    const subject = new Subject<ViewEvent>();
    made.push(subject);
    return subject.pipe(finalize(() => counts.finalized++));
  };
  return { source, made, counts, last: () => made[made.length - 1] as Subject<ViewEvent> };
}

/**
 * A turn with one retry after `delay` ms, through the real pipeline (`turnPipeline`: retryAsEvents → cleanTurn): each
 * attempt is a subject the test drives.
 */
function retriedTurn(delay: number) {
  const attempts: Subject<AssembledEvent<ProviderEvent>>[] = [];
  const counts = { calls: 0, finalized: 0 };
  const source = (): Observable<TurnEvent> => {
    counts.calls++;
    return defer(() => {
      const attempt = new Subject<AssembledEvent<ProviderEvent>>();
      attempts.push(attempt);
      return attempt;
    }).pipe(
      turnPipeline({ turnId, retry: { count: 1, delay } }),
      finalize(() => counts.finalized++),
    );
  };
  return {
    source,
    attempts,
    counts,
    attempt: (n: number) => attempts[n - 1] as Subject<AssembledEvent<ProviderEvent>>,
  };
}

describe('injectTurn in a component', () => {
  it('renders the help-desk turn: the reset clears attempt 1, the notice shows the wait, attempt 2 ends clean', async () => {
    const turn$ = retriedTurn(3000);
    const { turn, dom, fixture } = await render(turn$.source);
    expect(dom('status')).toBe('streaming');

    turn$.attempt(1).next(text('Checking order ORD-7781. '));
    turn$.attempt(1).next(text('Refunding the dam'));
    await elapse(FRAME);
    expect(dom('text')).toBe('Checking order ORD-7781. Refunding the dam');
    expect(dom('attempt')).toBe('1');

    // The connection resets: the retry waits 3 s; the screen drops attempt 1 at once and says how long.
    const resetAt = Date.now();
    turn$.attempt(1).error(new Error('connection reset'));
    await elapse(FRAME);
    expect(dom('status')).toBe('retrying');
    expect(dom('notice')).toBe('retrying in 3000 ms');
    expect(dom('text')).toBe('');
    expect(dom('attempt')).toBe('2');
    expect(turn.retryAt()).toBe(resetAt + 3000);
    expect(turn$.attempts).toHaveLength(1);

    await elapse(3000);
    expect(turn$.attempts).toHaveLength(2); // the wait is over: attempt 2 is subscribed
    turn$.attempt(2).next(text('Checking order ORD-7781. '));
    await elapse(FRAME);
    expect(dom('status')).toBe('streaming');
    expect(dom('notice')).toBe('');
    expect(turn.retryDelay()).toBeUndefined();
    expect(turn.retryAt()).toBeUndefined();

    turn$.attempt(2).next(text('The book arrived damaged, so I have started a full refund.'));
    turn$.attempt(2).next({ type: 'tool-call', id: 'c7', name: 'issue_refund', args: helpDesk.refundArgs });
    turn$.attempt(2).next(finish('tool-calls'));
    turn$.attempt(2).complete();
    await elapse(FRAME);
    expect(dom('status')).toBe('done');
    expect(dom('text')).toBe(attempt2);
    expect(dom('text')).not.toContain('Refunding the dam');
    expect(fixture.nativeElement.querySelector('li')?.textContent?.trim()).toBe('issue_refund released');
    expect(turn.view().resets).toHaveLength(1);
    expect(turn.view().toolCalls[0]?.effectKey).toBe(helpDesk.keyedRefund.effectKey);
    expect(turn$.counts).toEqual({ calls: 1, finalized: 1 });
  });

  it('coalesces: many events in one frame make one signal change and one render', async () => {
    const turn$ = subjects();
    const { turn, dom, fixture } = await render(turn$.source);
    const host = fixture.componentInstance;
    const rendersBefore = host.renders;
    const viewBefore = turn.view();

    // Fifty tokens in one frame: no signal moves until the frame.
    for (let i = 0; i < 50; i++) turn$.last().next({ type: 'text', text: `${i} `, attempt: 1 });
    expect(turn.view()).toBe(viewBefore);
    expect(turn.text()).toBe('');
    await elapse(FRAME);
    const once = host.renders - rendersBefore;
    expect(turn.text()).toBe(Array.from({ length: 50 }, (_, i) => `${i} `).join(''));
    expect(dom('text')).toBe(turn.text().trim());

    // One more token and one more frame render exactly as often as fifty did: one change detection per frame.
    const rendersBetween = host.renders;
    turn$.last().next({ type: 'text', text: 'end', attempt: 1 });
    await elapse(FRAME);
    expect(host.renders - rendersBetween).toBe(once);
    expect(once).toBeGreaterThan(0);
    turn$.last().complete();
  });

  it('changes its signals at most once per frame while tokens arrive every millisecond', async () => {
    const turn$ = subjects();
    const { turn, fixture } = await render(turn$.source);
    const changes: string[] = [];
    const effects = TestBed.runInInjectionContext(() =>
      effect(() => {
        changes.push(turn.text());
      }),
    );
    await elapse(FRAME);
    const views = new Set([turn.view()]);
    for (let ms = 0; ms < 64; ms++) {
      turn$.last().next({ type: 'text', text: 'x', attempt: 1 });
      await vi.advanceTimersByTimeAsync(1);
      views.add(turn.view());
    }
    // 64 tokens over 64 ms: one snapshot per frame, not one per token.
    expect(views.size - 1).toBeLessThanOrEqual(64 / FRAME + 1);
    expect(views.size - 1).toBeGreaterThanOrEqual(64 / FRAME - 1);
    expect(changes.length - 1).toBeLessThanOrEqual(64 / FRAME + 1);
    await elapse(FRAME);
    expect(turn.text()).toBe('x'.repeat(64));
    effects.destroy();
    turn$.last().complete();
    fixture.destroy();
  });

  it("cadence: 'sync' writes at every event; a number waits that many milliseconds", async () => {
    const sync = subjects();
    const { turn } = await render(sync.source, { cadence: 'sync' });
    sync.last().next({ type: 'text', text: 'a', attempt: 1 });
    expect(turn.text()).toBe('a');
    sync.last().next({ type: 'text', text: 'b', attempt: 1 });
    expect(turn.text()).toBe('ab');
    sync.last().complete();
    TestBed.resetTestingModule();
    TestBed.configureTestingModule({ providers: [provideZonelessChangeDetection()] });

    const slow = subjects();
    const second = await render(slow.source, { cadence: 100 });
    slow.last().next({ type: 'text', text: 'a', attempt: 1 });
    await vi.advanceTimersByTimeAsync(99);
    expect(second.turn.text()).toBe('');
    await vi.advanceTimersByTimeAsync(1);
    expect(second.turn.text()).toBe('a');
    expect(second.dom('text')).toBe('');
    await elapse(FRAME);
    expect(second.dom('text')).toBe('a');
    slow.last().complete();
  });

  it('without requestAnimationFrame (as on a server), a frame is a 16 ms timer', async () => {
    vi.stubGlobal('requestAnimationFrame', undefined);
    try {
      const turn$ = subjects();
      const turn = TestBed.runInInjectionContext(() => injectTurn(turn$.source));
      turn$.last().next({ type: 'text', text: 'a', attempt: 1 });
      turn$.last().next({ type: 'text', text: 'b', attempt: 1 });
      expect(vi.getTimerCount()).toBe(1);
      await vi.advanceTimersByTimeAsync(15);
      expect(turn.text()).toBe('');
      await vi.advanceTimersByTimeAsync(1);
      expect(turn.text()).toBe('ab');
      turn$.last().complete();
    } finally {
      vi.unstubAllGlobals();
    }
  });

  it('a synchronous turn renders once, finished', async () => {
    const calls = vi.fn(() => from(helpDesk.turn).pipe(cleanTurn({ turnId })));
    const { turn, dom } = await render(calls);
    expect(dom('status')).toBe('done');
    expect(dom('text')).toBe(attempt2);
    expect(turn.calls().map((c) => c.id)).toEqual(['c7']);
    expect(calls).toHaveBeenCalledTimes(1);
  });

  it('shows the live attempt’s reasoning apart from its text', async () => {
    const turn$ = subjects();
    const { dom } = await render(turn$.source);
    turn$.last().next({ ...reasoning('The order is ORD-7781.'), attempt: 1 });
    turn$.last().next({ ...text('Refunding.'), attempt: 1 });
    turn$.last().next({ type: 'reset', attempt: 2, reason: 'connection reset' });
    turn$.last().next({ ...reasoning('Again: ORD-7781.'), attempt: 2 });
    await elapse(FRAME);
    expect(dom('reasoning')).toBe('Again: ORD-7781.');
    expect(dom('text')).toBe('');
    turn$.last().complete();
  });

  it("onReset: 'mark' keeps the abandoned text in view().interrupted, never in text()", async () => {
    const turn$ = subjects();
    const { turn } = await render(turn$.source, { onReset: 'mark' });
    turn$.last().next({ ...text('Refunding the dam'), attempt: 1 });
    turn$.last().next({ type: 'reset', attempt: 2, reason: 'connection reset' });
    await elapse(FRAME);
    expect(turn.text()).toBe('');
    expect(turn.view().interrupted?.text).toBe('Refunding the dam');
    turn$.last().complete();
  });

  it('error: the status is error and error() holds why; what was shown stays', async () => {
    const turn$ = subjects();
    const { turn, dom } = await render(turn$.source);
    turn$.last().next({ ...text('Checking order'), attempt: 1 });
    turn$.last().error(new UsageError('server', 'body', 'must be JSON, not "<html>"'));
    await elapse(FRAME);
    expect(dom('status')).toBe('error');
    expect(dom('error')).toBe('UsageError: server: body must be JSON, not "<html>"');
    expect(dom('text')).toBe('Checking order');
    expect(turn.error()).toBeInstanceOf(UsageError);
    expect(turn$.counts.finalized).toBe(1);
  });

  it('the retry cap: past it the turn errors, and the notice is gone', async () => {
    const turn$ = retriedTurn(0);
    const { turn, dom } = await render(turn$.source);
    turn$.attempt(1).error(new Error('connection reset'));
    await elapse(FRAME);
    turn$.attempt(2).error(new Error('connection reset'));
    await elapse(FRAME);
    expect(dom('status')).toBe('error');
    expect(dom('notice')).toBe('');
    expect(turn.retryDelay()).toBeUndefined();
    expect((turn.error() as { code?: string }).code).toBe('retries-exhausted');
  });
});

describe('stop(), reload() and the component’s lifetime', () => {
  it('stop() unsubscribes (finalize runs), shows what arrived and sets stopped; a pending frame is flushed', async () => {
    const turn$ = subjects();
    const { turn, dom } = await render(turn$.source);
    turn$.last().next({ ...text('Checking order'), attempt: 1 });
    turn.stop();
    expect(turn$.counts.finalized).toBe(1);
    expect(turn$.last().observed).toBe(false);
    expect(turn.status()).toBe('stopped');
    expect(turn.text()).toBe('Checking order');
    await elapse(FRAME);
    expect(dom('status')).toBe('stopped');
    turn.stop(); // once ended, nothing more
    expect(turn$.counts.finalized).toBe(1);
  });

  it('stop() during a retry wait cancels the wait: no attempt starts, no timer is left', async () => {
    const turn$ = retriedTurn(3000);
    const { turn } = await render(turn$.source);
    turn$.attempt(1).error(new Error('connection reset'));
    await elapse(FRAME);
    expect(turn.status()).toBe('retrying');
    turn.stop();
    expect(turn.status()).toBe('stopped');
    expect(turn.retryDelay()).toBeUndefined();
    await elapse(5000);
    expect(turn$.attempts).toHaveLength(1);
    expect(turn$.counts.finalized).toBe(1);
  });

  it('destroying the component unsubscribes the turn and cancels the pending frame', async () => {
    const turn$ = retriedTurn(3000);
    const { fixture, turn } = await render(turn$.source);
    turn$.attempt(1).next(text('Checking order'));
    fixture.destroy();
    expect(turn$.counts.finalized).toBe(1);
    expect(turn$.attempt(1).observed).toBe(false);
    expect(vi.getTimerCount()).toBe(0);
    // Destroyed: reload() and stop() do nothing.
    turn.reload();
    turn.stop();
    expect(turn$.counts.calls).toBe(1);
  });

  it('destroying the component during a retry wait cancels the wait', async () => {
    const turn$ = retriedTurn(3000);
    const { fixture } = await render(turn$.source);
    turn$.attempt(1).error(new Error('connection reset'));
    await elapse(FRAME);
    fixture.destroy();
    expect(vi.getTimerCount()).toBe(0);
    expect(turn$.counts.finalized).toBe(1);
  });

  it('reload() ends the running turn, clears the view and calls the source again', async () => {
    const turn$ = subjects();
    const { turn, dom } = await render(turn$.source);
    turn$.last().next({ ...text('Refunding the dam'), attempt: 1 });
    await elapse(FRAME);
    expect(dom('text')).toBe('Refunding the dam');
    const first = turn$.last();

    turn.reload();
    expect(first.observed).toBe(false);
    expect(turn$.counts).toEqual({ calls: 2, finalized: 1 });
    expect(turn.view()).toBe(initialView);
    expect(turn.status()).toBe('streaming');
    first.next({ ...text(' stale'), attempt: 1 }); // the replaced turn says nothing any more
    turn$.last().next({ ...text('Checking order'), attempt: 1 });
    await elapse(FRAME);
    expect(dom('text')).toBe('Checking order');

    // After its end, too.
    turn$.last().complete();
    turn.reload();
    expect(turn$.counts.calls).toBe(3);
    turn$.last().complete();
  });

  it('reload() in an effect: the effect does not depend on the signals that source() reads', async () => {
    const question = signal('Where is ORD-7781?');
    const asked: string[] = [];
    const go = signal(0);
    const turn = TestBed.runInInjectionContext(() =>
      injectTurn(
        () => {
          asked.push(question());
          return NEVER;
        },
        { start: false },
      ),
    );
    const reloads = TestBed.runInInjectionContext(() =>
      effect(() => {
        if (go() > 0) turn.reload();
      }),
    );
    go.set(1);
    await elapse(FRAME);
    expect(asked).toEqual(['Where is ORD-7781?']);
    question.set('Refund it.');
    await elapse(FRAME);
    expect(asked).toEqual(['Where is ORD-7781?']);
    reloads.destroy();
    turn.stop();
  });

  it('start: false stays idle until reload(), which starts it', async () => {
    const turn$ = subjects();
    const { turn, dom } = await render(turn$.source, { start: false });
    expect(dom('status')).toBe('idle');
    expect(turn$.counts.calls).toBe(0);
    turn.stop(); // nothing to stop
    expect(turn.status()).toBe('idle');
    turn.reload();
    expect(turn$.counts.calls).toBe(1);
    expect(turn.status()).toBe('streaming');
    turn$.last().complete();
    expect(turn.status()).toBe('done');
  });

  it('options.injector: outside an injection context, the injector’s DestroyRef ends the turn', async () => {
    const turn$ = subjects();
    const child = createEnvironmentInjector([], TestBed.inject(EnvironmentInjector));
    const turn = injectTurn(turn$.source, { injector: child });
    turn$.last().next({ ...text('a'), attempt: 1 });
    await elapse(FRAME);
    expect(turn.text()).toBe('a');
    turn$.last().next({ ...text('b'), attempt: 1 });
    child.destroy();
    expect(turn$.counts.finalized).toBe(1);
    expect(turn.text()).toBe('a');
  });

  it('runs in runInInjectionContext', () => {
    const turn$ = subjects();
    const child = createEnvironmentInjector([], TestBed.inject(EnvironmentInjector));
    const turn = runInInjectionContext(child, () => injectTurn(turn$.source));
    expect(turn.status()).toBe('streaming');
    child.destroy();
    expect(turn$.counts.finalized).toBe(1);
  });
});

describe('misuse', () => {
  it('outside an injection context without options.injector: a UsageError that says what to do', () => {
    let thrown: unknown;
    try {
      injectTurn(() => NEVER);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(UsageError);
    expect(thrown).toMatchObject({
      operator: 'injectTurn',
      option: 'injector',
      code: 'usage',
      retryable: false,
    });
    expect(String((thrown as Error).message)).toMatch(
      /^injectTurn: injector must be given outside an injection context/,
    );
  });

  it.each([
    ['source', () => injectTurn('turn' as never), /^injectTurn: source must be a function, not "turn"$/],
    ['options', () => injectTurn(() => NEVER, 5 as never), /^injectTurn: options must be an object, not 5$/],
    [
      'cadence',
      () => injectTurn(() => NEVER, { cadence: 'fast' as never }),
      /cadence must be 'frame', 'sync' or a number/,
    ],
    [
      'cadence',
      () => injectTurn(() => NEVER, { cadence: -1 }),
      /cadence must be a finite number >= 0, not -1/,
    ],
    ['start', () => injectTurn(() => NEVER, { start: 'yes' as never }), /start must be true or false/],
    ['onReset', () => injectTurn(() => NEVER, { onReset: 'hide' as never }), /^injectTurn: onReset must be/],
    [
      'injector',
      () => injectTurn(() => NEVER, { injector: {} as Injector }),
      /injector must be an Angular Injector/,
    ],
  ])('refuses a wrong %s with a UsageError', (_, call, message) => {
    TestBed.runInInjectionContext(() => {
      expect(call).toThrow(UsageError);
      expect(call).toThrow(message);
    });
  });
});

describe('standard checks', () => {
  const signalsOf = (source: () => Observable<ViewEvent>) =>
    TestBed.runInInjectionContext(() => injectTurn(source));

  it('a source that errors at once: error status, empty view', () => {
    const boom = new Error('connection refused');
    const turn = signalsOf(() => throwError(() => boom));
    expect(turn.status()).toBe('error');
    expect(turn.error()).toBe(boom);
    expect(turn.view()).toBe(initialView);
  });

  it('an empty source: done, with the empty view', () => {
    const turn = signalsOf(() => EMPTY);
    expect(turn.status()).toBe('done');
    expect(turn.view()).toBe(initialView);
    expect(turn.error()).toBeUndefined();
  });

  it('a source that never emits: streaming, with no timer scheduled', () => {
    const turn = signalsOf(() => NEVER);
    expect(turn.status()).toBe('streaming');
    expect(vi.getTimerCount()).toBe(0);
    turn.stop();
    expect(turn.status()).toBe('stopped');
  });

  it('a source() that throws: error status with what it threw; reload() calls it again', () => {
    const thrown = new Error('no session');
    let calls = 0;
    const turn = signalsOf(() => {
      calls++;
      throw thrown;
    });
    expect(turn.status()).toBe('error');
    expect(turn.error()).toBe(thrown);
    turn.reload();
    expect(calls).toBe(2);
  });

  it('a source() that returns no Observable: error status with a UsageError', () => {
    const turn = signalsOf(() => [text('a')] as never);
    expect(turn.status()).toBe('error');
    expect(turn.error()).toBeInstanceOf(UsageError);
    expect(String(turn.error())).toMatch(/injectTurn: source\(\) must return an Observable, not/);
  });

  it('a source that errors after events: the events are shown', () => {
    const cut = new Error('cut');
    const turn = signalsOf(() =>
      concat(
        of<ViewEvent>({ ...text('partial'), attempt: 1 }),
        throwError(() => cut),
      ),
    );
    expect(turn.status()).toBe('error');
    expect(turn.error()).toBe(cut);
    expect(turn.text()).toBe('partial');
  });

  it('events that change nothing write no signal', async () => {
    const turn$ = subjects();
    const turn = signalsOf(turn$.source);
    turn$.last().next({ type: 'usage', inputTokens: 10, attempt: 1 });
    expect(vi.getTimerCount()).toBe(0); // no frame was asked for
    await elapse(FRAME);
    expect(turn.view()).toBe(initialView);
    turn$.last().complete();
  });
});
