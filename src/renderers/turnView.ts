import { distinctUntilChanged, filter, type OperatorFunction, scan } from 'rxjs';
import { initialView, reduceView, type TurnView, type ViewEvent } from './reduceView.js';

/**
 * Folds the turn into what a user should see now, emitting an immutable view snapshot whenever it changes.
 *
 * The operator form of {@link reduceView} for UIs that subscribe: a web chat sets its bubble's text from
 * `view.text`, a terminal redraws, a log tailer prints. A `reset` empties the text and the calls and shows a
 * "retrying" notice until the new attempt has something to show; events that change nothing (usage, late
 * events of abandoned attempts) emit nothing. Snapshots share what did not change with the one before.
 *
 * ```text
 * source:       -a-d-u-X-b-K-f-|      d = 'Refunding the dam', u = usage, X = reset to attempt 2
 *          turnView()
 * result:       -A-D---R-B-C-F-|      R: text '' and notice 'retrying'; B: attempt 2's text, no notice
 * ```
 *
 * State: the last snapshot; each subscription starts from {@link initialView}.
 *
 * ## Example
 * ```ts
 * import { cleanTurn } from 'cleanturn';
 * import { turnView } from 'cleanturn/renderers';
 *
 * providerEvents$.pipe(cleanTurn({ turnId: 'turn-42' }), turnView()).subscribe((view) => {
 *   bubble.textContent = view.text;
 *   banner.textContent = view.notice ? `Retrying (${view.notice.reason})…` : '';
 *   chips.replaceChildren(...view.toolCalls.map((call) => chip(call.name, call.status)));
 * });
 * ```
 *
 * @see {@link reduceView} for the state changes, event by event.
 * @returns An operator from the turn (and tool results) to view snapshots.
 */
export function turnView(): OperatorFunction<ViewEvent, TurnView> {
  return function turnViewOperator(source) {
    return source.pipe(
      scan((view: TurnView, event: ViewEvent) => reduceView(view, event), initialView),
      distinctUntilChanged(),
      // Nothing to show yet: events before the first change leave the initial view.
      filter((view) => view !== initialView),
    );
  };
}
