import {
  assertInInjectionContext,
  computed,
  DestroyRef,
  type Injector,
  inject,
  type Signal,
  signal,
  untracked,
} from '@angular/core';
import { isObservable, type Observable, type Subscription } from 'rxjs';
import { UsageError } from '../errors.js';
import { describeValue } from '../internal/describeValue.js';
import { checkNumber, checkOption } from '../internal/options.js';
import { type ResetPresentation, resetPresentation } from '../renderers/internal/options.js';
import {
  initialView,
  type ToolCallView,
  type TurnView,
  type ViewEvent,
  viewReducer,
} from '../renderers/reduceView.js';

/**
 * Where a turn shown by {@link injectTurn} is:
 * - `idle`: not started yet (`start: false`, until `reload()`);
 * - `streaming`: the turn runs (this includes a `resume`: the same answer goes on);
 * - `retrying`: an attempt failed and the next one has shown nothing yet: `retryDelay` says how long the wait is;
 * - `done`: the turn's stream completed (`view().finishReason` says how the last attempt finished);
 * - `error`: the turn's stream failed: `error()` holds why;
 * - `stopped`: `stop()` ended it before its end.
 *
 * @inline
 */
export type TurnStatus = 'idle' | 'streaming' | 'retrying' | 'done' | 'error' | 'stopped';

/**
 * How often {@link injectTurn} writes its signals while a turn streams:
 * - `'frame'` (the default): at most once per animation frame (`requestAnimationFrame`; a 16 ms timer where there is
 *   none, as on a server);
 * - a number: at most once per that many milliseconds (`0`: once per macrotask);
 * - `'sync'`: at every event that changes the view.
 *
 * @inline
 */
export type TurnCadence = 'frame' | 'sync' | number;

/**
 * Options of {@link injectTurn}.
 *
 * @inline
 */
export interface InjectTurnOptions {
  /**
   * The injector whose `DestroyRef` ends the turn: for a call outside an injection context (a click handler, an
   * `ngOnInit`). Default: the current injection context's.
   */
  injector?: Injector;
  /** Whether the turn starts at once (`true`, the default) or waits for `reload()` (`false`). */
  start?: boolean;
  /** How often the signals are written while the turn streams (`TurnCadence`); default `'frame'`. */
  cadence?: TurnCadence;
  /**
   * What a reset does with what the abandoned attempt showed, as in `viewReducer` (`ResetPresentation`):
   * `'rollback'` (the default) drops it; `'mark'` keeps it in `view().interrupted`, never in `text`.
   */
  onReset?: ResetPresentation;
}

/**
 * A turn as signals, from {@link injectTurn}: what the user should see now, and the two controls. Every signal is
 * read-only and changes at most once per frame (the `cadence`) while the turn streams.
 */
export interface TurnSignals {
  /** The whole view (`TurnView` of `cleanturn/renderers`): every field below and the rest (`notice`, `resets`…). */
  readonly view: Signal<TurnView>;
  /** The live attempt's text only: a reset empties it, and an abandoned attempt's text is never part of it. */
  readonly text: Signal<string>;
  /** The live attempt's reasoning (the model's thinking) only, apart from the answer. */
  readonly reasoning: Signal<string>;
  /** The live attempt's released tool calls, with their status (`released`, `repeat`, `running`, `completed`, `failed`). */
  readonly calls: Signal<readonly ToolCallView[]>;
  /** Where the turn is (`TurnStatus`). */
  readonly status: Signal<TurnStatus>;
  /**
   * While `status` is `retrying`: the wait the reset announced, in milliseconds, before the next attempt starts;
   * `undefined` otherwise, and when the reset did not say.
   */
  readonly retryDelay: Signal<number | undefined>;
  /**
   * While `status` is `retrying`: when the next attempt starts (`Date.now()` when the reset arrived, plus its
   * delay), for a countdown; `undefined` otherwise, and when the reset did not say.
   */
  readonly retryAt: Signal<number | undefined>;
  /** The live attempt: 1, then one more per retry. */
  readonly attempt: Signal<number>;
  /** Why the turn failed, while `status` is `error`; `undefined` otherwise. */
  readonly error: Signal<unknown>;
  /**
   * Ends the turn now: unsubscribes from it (with `streamTurn` or `httpClientSSE`, the request is aborted), shows
   * what arrived until then and sets `status` to `stopped`. Does nothing once the turn has ended.
   */
  stop(): void;
  /**
   * Runs the turn anew: ends the current one (unsubscribing from it), clears the view and calls `source()` again.
   * Starts the turn when `start: false` left it idle. Does nothing once the component is destroyed.
   */
  reload(): void;
}

/** What the signals show, written at once: one object per flush, so that a frame writes one signal. */
interface Shown {
  readonly view: TurnView;
  /** Where the subscription is; `retrying` is read off the view. */
  readonly phase: 'idle' | 'running' | 'done' | 'error' | 'stopped';
  readonly error: unknown;
  /** When the next attempt starts, while the view shows a retry notice with a delay. */
  readonly retryAt: number | undefined;
}

/** Cancels a scheduled flush. */
type Cancel = () => void;

/**
 * A turn's events as Angular signals: the text, reasoning and tool calls the user should see now, the status (with
 * the wait while a retry waits), the attempt and the error, plus `stop()` and `reload()`.
 *
 * `source` makes the turn: an Observable of the clean turn (`streamTurn` of `cleanturn/transport`, a pipeline that
 * ends in `cleanTurn` or `turnPipeline`, optionally merged with the executor's `tool-result` events). It is called
 * when the turn starts and again at every `reload()`. The events are folded by `reduceView` of
 * `cleanturn/renderers`, so a `reset` drops what the abandoned attempt showed exactly as every renderer of the
 * library does; the signals are written at most once per animation frame (the `cadence` option), never once per
 * token, and at once when the turn ends, fails or is stopped.
 *
 * Its lifetime is the injection context's: when the component (or service) is destroyed, the turn is unsubscribed
 * and the pending frame cancelled; no subscription or timer outlives it. Call it in an injection context (a field
 * initializer, a constructor) or pass `options.injector`.
 *
 * `source()` runs when the turn starts: with the default `start: true`, in the field initializer, before the
 * component's inputs are set. A source that reads inputs takes `start: false` and a `reload()` in `ngOnInit`.
 * What `source()` throws, or a value that is not an Observable, fails the turn (`status` `error`).
 *
 * ## Example
 * ```ts
 * import { ChangeDetectionStrategy, Component } from '@angular/core';
 * import { injectTurn } from 'cleanturn/angular';
 * import { openaiChat } from 'cleanturn/providers';
 * import { streamTurn } from 'cleanturn/transport';
 *
 * @Component({
 *   selector: 'app-answer',
 *   changeDetection: ChangeDetectionStrategy.OnPush,
 *   template: `
 *     @if (turn.status() === 'retrying') {
 *       <p class="notice">Retrying in {{ (turn.retryDelay() ?? 0) / 1000 }} s…</p>
 *     }
 *     <p class="bubble">{{ turn.text() }}</p>
 *     <button (click)="turn.stop()">Stop</button>
 *     <button (click)="turn.reload()">Again</button>
 *   `,
 * })
 * export class AnswerComponent {
 *   protected readonly turn = injectTurn(() =>
 *     streamTurn({
 *       turnId: crypto.randomUUID(),
 *       request: ({ signal }) =>
 *         new Request('/api/chat/completions', {
 *           method: 'POST',
 *           body: JSON.stringify({ messages: [{ role: 'user', content: 'Where is my order?' }], stream: true }),
 *           signal,
 *         }),
 *       adapter: openaiChat(),
 *     }),
 *   );
 * }
 * ```
 *
 * @param source Makes the turn's Observable; called at the start and at every `reload()`.
 * @param options `injector` (outside an injection context), `start` (`false`: wait for `reload()`), `cadence`
 *   (`'frame'`, milliseconds or `'sync'`) and `onReset` (`'rollback'` or `'mark'`).
 * @returns The turn's signals and its `stop()` and `reload()`.
 * @throws UsageError when `source` is not a function, an option has the wrong shape, or it is called outside an
 *   injection context without `options.injector`.
 */
export function injectTurn(source: () => Observable<ViewEvent>, options?: InjectTurnOptions): TurnSignals {
  checkOption(typeof source === 'function', 'injectTurn', 'source', 'a function', source);
  checkOption(
    options === undefined || (typeof options === 'object' && options !== null),
    'injectTurn',
    'options',
    'an object',
    options,
  );
  const { injector, start = true, cadence = 'frame' } = options ?? {};
  const reduce = viewReducer({ onReset: resetPresentation('injectTurn', options) });
  checkOption(typeof start === 'boolean', 'injectTurn', 'start', 'true or false', start);
  if (cadence !== 'frame' && cadence !== 'sync') {
    checkOption(typeof cadence === 'number', 'injectTurn', 'cadence', "'frame', 'sync' or a number", cadence);
    checkNumber('injectTurn', 'cadence', cadence, 'non-negative');
  }
  const turn = new SignalTurn(source, reduce, cadence);
  destroyRefOf(injector).onDestroy(() => turn.destroy());
  if (start) turn.run();
  return turn.signals();
}

const idle: Shown = { view: initialView, phase: 'idle', error: undefined, retryAt: undefined };

/**
 * One turn shown as signals: its runs (one per start or reload), what the turn has reached, and the flush that
 * writes it to the signals at the cadence.
 */
class SignalTurn {
  /** What the signals show: written once per flush. */
  readonly #shown = signal<Shown>(idle);
  /** What `#shown` holds, read without a signal read (which would track it in a reactive caller). */
  #written: Shown = idle;
  /** What the turn has reached, ahead of `#written` until the next flush. */
  #latest: Shown = idle;
  /** The live subscription to the turn, while it runs. */
  #subscription: Subscription | undefined;
  /** The scheduled flush, while `#latest` is ahead of `#shown`. */
  #cancelFlush: Cancel | undefined;
  /** Set when the injection context is destroyed: nothing runs any more. */
  #destroyed = false;

  constructor(
    private readonly source: () => Observable<ViewEvent>,
    private readonly reduce: (view: TurnView, event: ViewEvent) => TurnView,
    private readonly cadence: TurnCadence,
  ) {}

  /** Starts the turn (a reload ends the run it replaces first); untracked, so that an effect may call it. */
  run(): void {
    if (!this.#destroyed) untracked(() => this.#start());
  }

  /** Ends the live run, showing `stopped`. */
  stop(): void {
    const running = this.#subscription;
    if (running === undefined) return;
    this.#subscription = undefined;
    running.unsubscribe();
    this.#latest = { ...this.#latest, phase: 'stopped', retryAt: undefined };
    this.#flush();
  }

  /** The injection context ended: the live run and a pending flush end, and nothing runs any more. */
  destroy(): void {
    this.#destroyed = true;
    this.#cancelFlush?.();
    this.#cancelFlush = undefined;
    const running = this.#subscription;
    this.#subscription = undefined;
    running?.unsubscribe();
  }

  /** The read-only signals, and the turn's `stop` and `reload`. */
  signals(): TurnSignals {
    const shown = this.#shown;
    const view = computed(() => shown().view);
    const status = computed<TurnStatus>(() => {
      const { phase, view } = shown();
      if (phase !== 'running') return phase;
      return view.notice?.type === 'retrying' ? 'retrying' : 'streaming';
    });
    return {
      view,
      text: computed(() => view().text),
      reasoning: computed(() => view().reasoning),
      calls: computed(() => view().toolCalls),
      status,
      retryDelay: computed(() => {
        const notice = view().notice;
        return status() === 'retrying' && notice?.type === 'retrying' ? finiteDelay(notice.delay) : undefined;
      }),
      retryAt: computed(() => (status() === 'retrying' ? shown().retryAt : undefined)),
      attempt: computed(() => view().attempt),
      error: computed(() => shown().error),
      stop: () => this.stop(),
      reload: () => this.run(),
    };
  }

  #start(): void {
    const previous = this.#subscription;
    this.#subscription = undefined;
    previous?.unsubscribe();
    this.#latest = { view: initialView, phase: 'running', error: undefined, retryAt: undefined };
    this.#flush();
    let turn$: Observable<ViewEvent>;
    try {
      const made: unknown = this.source();
      if (!isObservable(made))
        throw new UsageError(
          'injectTurn',
          'source()',
          `must return an Observable, not ${describeValue(made)}`,
        );
      turn$ = made as Observable<ViewEvent>;
    } catch (error) {
      this.#end('error', error);
      return;
    }
    this.#subscribe(turn$);
  }

  /** Subscribes a run; a later run or a stop makes it stale, and a stale run's notifications are ignored. */
  #subscribe(turn$: Observable<ViewEvent>): void {
    let mine: Subscription | undefined;
    const live = () => mine !== undefined && this.#subscription === mine;
    let endedEarly: { phase: 'done' | 'error'; error?: unknown } | undefined;
    mine = turn$.subscribe({
      next: (event) => {
        // A synchronous source emits before `subscribe` returns: fold it all the same.
        if (mine !== undefined && !live()) return;
        const next = advance(this.#latest, event, this.reduce);
        if (next === this.#latest) return;
        this.#latest = next;
        if (mine !== undefined) this.#schedule();
      },
      error: (error: unknown) => {
        if (mine === undefined) endedEarly = { phase: 'error', error };
        else if (live()) this.#end('error', error);
      },
      complete: () => {
        if (mine === undefined) endedEarly = { phase: 'done' };
        else if (live()) this.#end('done');
      },
    });
    if (endedEarly !== undefined) {
      this.#end(endedEarly.phase, endedEarly.error);
      return;
    }
    if (this.#destroyed) {
      // The source destroyed the component while it was subscribed to.
      mine.unsubscribe();
      return;
    }
    this.#subscription = mine;
    // What a synchronous source emitted before `subscribe` returned.
    if (this.#latest !== this.#written) this.#schedule();
  }

  #end(phase: Shown['phase'], error?: unknown): void {
    this.#subscription = undefined;
    this.#latest = { ...this.#latest, phase, error, retryAt: undefined };
    this.#flush();
  }

  #write(): void {
    this.#cancelFlush = undefined;
    this.#written = this.#latest;
    this.#shown.set(this.#latest);
  }

  #flush(): void {
    this.#cancelFlush?.();
    this.#write();
  }

  #schedule(): void {
    if (this.cadence === 'sync') this.#flush();
    else this.#cancelFlush ??= scheduleFlush(this.cadence, () => this.#write());
  }
}

/** What the signals show after `event`: `shown` itself when the view does not change. */
function advance(
  shown: Shown,
  event: ViewEvent,
  reduce: (view: TurnView, event: ViewEvent) => TurnView,
): Shown {
  const view = reduce(shown.view, event);
  if (view === shown.view) return shown;
  const notice = view.notice;
  // A new retry notice starts the countdown now; the same notice keeps it.
  const retryAt =
    notice?.type !== 'retrying'
      ? undefined
      : notice === shown.view.notice
        ? shown.retryAt
        : withDelay(finiteDelay(notice.delay));
  return { ...shown, view, retryAt };
}

/** `Date.now()` plus `delay`, when the delay is known. */
function withDelay(delay: number | undefined): number | undefined {
  return delay === undefined ? undefined : Date.now() + delay;
}

/** A reset's delay, when it is a number of milliseconds. */
function finiteDelay(delay: unknown): number | undefined {
  return typeof delay === 'number' && Number.isFinite(delay) && delay >= 0 ? delay : undefined;
}

/** Schedules `flush` at the cadence; returns how to cancel it. */
function scheduleFlush(cadence: 'frame' | number, flush: () => void): Cancel {
  // Read at every call, not once: a test's fake timers and a browser's frame functions replace them.
  const frame = globalThis.requestAnimationFrame;
  const cancelFrame = globalThis.cancelAnimationFrame;
  if (cadence === 'frame' && typeof frame === 'function' && typeof cancelFrame === 'function') {
    const id = frame.call(globalThis, () => flush());
    return () => cancelFrame.call(globalThis, id);
  }
  const timer = setTimeout(flush, cadence === 'frame' ? 16 : cadence);
  return () => clearTimeout(timer);
}

/** The `DestroyRef` that ends the turn: the injector's, or the current injection context's. */
function destroyRefOf(injector: Injector | undefined): DestroyRef {
  if (injector !== undefined) {
    checkOption(
      typeof injector === 'object' && injector !== null && typeof injector.get === 'function',
      'injectTurn',
      'injector',
      'an Angular Injector',
      injector,
    );
    return injector.get(DestroyRef);
  }
  try {
    assertInInjectionContext(injectTurn);
  } catch (error) {
    throw new UsageError(
      'injectTurn',
      'injector',
      'must be given outside an injection context (a field initializer or a constructor has one)',
      error,
    );
  }
  return inject(DestroyRef);
}
