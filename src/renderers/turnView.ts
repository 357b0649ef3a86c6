import { distinctUntilChanged, filter, type OperatorFunction, scan } from 'rxjs';
import { resetPresentation } from './internal/options.js';
import { initialView, type TurnView, type ViewEvent, type ViewOptions, viewReducer } from './reduceView.js';

/**
 * Options of {@link turnView}: those of {@link viewReducer}.
 *
 * @inline
 */
export type TurnViewOptions = ViewOptions;

/**
 * Folds the turn into what a user should see now, emitting an immutable view snapshot whenever it changes.
 *
 * The operator form of {@link reduceView} for UIs that subscribe: a web chat sets its bubble's text from
 * `view.text`, a terminal redraws, a log tailer prints. A `reset` empties the text and the calls and shows a
 * "retrying" notice with the reset's facts (the wait, the retry count, the cause) until the new attempt has
 * something to show; with `onReset: 'mark'` the abandoned text and reasoning stay in `view.interrupted` until the
 * new attempt's first text or reasoning. Events that change nothing (usage, late events of abandoned attempts)
 * emit nothing. Snapshots share what did not change with the one before.
 *
 * ```text
 * source:   -A-D-X-B-E-K-F-|
 *           turnView()
 * result:   -a-d-x-b-e-k-f-|
 *
 * where
 *   A = text "Checking order ORD-7781. ", attempt 1
 *   D = text "Refunding the dam", attempt 1
 *   X = reset to attempt 2 (connection reset)
 *   B = text "Checking order ORD-7781. ", attempt 2
 *   E = text "The book arrived damaged, so I have started a full refund.", attempt 2
 *   K = tool-call c7 issue_refund({"order_id":"ORD-7781","amount":"full"}), attempt 2, key 4d02b5b61ea1afa1
 *   F = finish stop, attempt 2
 *   a = {"attempt":1,"text":"Checking order ORD-7781. ","reasoning":"","toolCalls":[],"finished":false,"resets":[]}
 *   d = {"attempt":1,"text":"Checking order ORD-7781. Refunding the dam","reasoning":"","toolCalls":[],"finished":false,"resets":[]}
 *   x = {"attempt":2,"text":"","reasoning":"","toolCalls":[],"finished":false,"resets":[{"type":"reset","attempt":2,"reason":"connection reset"}],"notice":{"type":"retrying","attempt":2,"reason":"connection reset"}}
 *   b = {"attempt":2,"text":"Checking order ORD-7781. ","reasoning":"","toolCalls":[],"finished":false,"resets":[{"type":"reset","attempt":2,"reason":"connection reset"}]}
 *   e = {"attempt":2,"text":"Checking order ORD-7781. The book arrived damaged, so I have started a full refund.","reasoning":"","toolCalls":[],"finished":false,"resets":[{"type":"reset","attempt":2,"reason":"connection reset"}]}
 *   k = {"attempt":2,"text":"Checking order ORD-7781. The book arrived damaged, so I have started a full refund.","reasoning":"","toolCalls":[{"id":"c7","name":"issue_refund","args":{"order_id":"ORD-7781","amount":"full"},"effectKey":"4d02b5b61ea1afa1","status":"released"}],"finished":false,"resets":[{"type":"reset","attempt":2,"reason":"connection reset"}]}
 *   f = {"attempt":2,"text":"Checking order ORD-7781. The book arrived damaged, so I have started a full refund.","reasoning":"","toolCalls":[{"id":"c7","name":"issue_refund","args":{"order_id":"ORD-7781","amount":"full"},"effectKey":"4d02b5b61ea1afa1","status":"released"}],"finished":true,"finishReason":"stop","resets":[{"type":"reset","attempt":2,"reason":"connection reset"}]}
 * ```
 *
 * Every case of `marbles/turnView.marbles.ts`, with pictures: `docs/operators/turnView.md`.
 *
 * State: the last snapshot; each subscription starts from {@link initialView}.
 *
 * ## Example
 * ```ts
 * import { cleanTurn } from 'cleanturn';
 * import { retryMessage, turnView } from 'cleanturn/renderers';
 *
 * providerEvents$.pipe(cleanTurn({ turnId: 'turn-42' }), turnView()).subscribe((view) => {
 *   bubble.textContent = view.text;
 *   banner.textContent = view.notice?.type === 'retrying' ? retryMessage(view.notice) : '';
 *   chips.replaceChildren(...view.toolCalls.map((call) => chip(call.name, call.status)));
 * });
 * ```
 *
 * @see {@link reduceView} for the state changes, event by event; {@link retryMessage} for the notice in words.
 * @param options `onReset`: `'rollback'` (the default) drops the abandoned attempt's text at the reset; `'mark'`
 *   keeps it in `view.interrupted` until the new attempt's first text or reasoning.
 * @returns An operator from the turn (and tool results) to view snapshots.
 * @throws UsageError when `options` is not an object or `onReset` is neither `'rollback'` nor `'mark'`.
 */
export function turnView(options?: TurnViewOptions): OperatorFunction<ViewEvent, TurnView> {
  const reduce = viewReducer({ onReset: resetPresentation('turnView', options) });
  return function turnViewOperator(source) {
    return source.pipe(
      scan((view: TurnView, event: ViewEvent) => reduce(view, event), initialView),
      distinctUntilChanged(),
      // Nothing to show yet: events before the first change leave the initial view.
      filter((view) => view !== initialView),
    );
  };
}
