// One stream of provider events, four policies side by side: what each renders, and which refunds each ran. Then
// the app crashes after the refund ran and before it was recorded, and runs the turn again on restart.
//
// Between a failed attempt and the next one the client waits `retryDelay` milliseconds (a query parameter of the
// page, `?retryDelay=5000`; default 2000). During the wait each reset-aware column says "retrying in 2 s (…)",
// and shows the abandoned attempt's text the way its view reducer presents a reset: rolled back, or struck through
// and labelled interrupted until the next attempt's text replaces it.

import {
  type AssembledEvent,
  type AttemptRecord,
  accumulateTurn,
  attemptPipeline,
  cleanTurn,
  effectKey,
  lateExecutionPolicy,
  naivePolicy,
  type PolicyEvent,
  type ProviderEvent,
  resetOnlyPolicy,
  retryAsEvents,
  TurnError,
  type TurnState,
} from 'cleanturn';
import { executeTools, MemoryEffectLedger, type ToolHandlers } from 'cleanturn/effects';
import { initialView, retryMessage, type TurnView, type ViewEvent, viewReducer } from 'cleanturn/renderers';
import { fromSSE, sseJson } from 'cleanturn/transport';
import {
  concat,
  defer,
  distinctUntilChanged,
  filter,
  merge,
  type Observable,
  type OperatorFunction,
  Subject,
  type Subscription,
  scan,
  share,
  takeUntil,
  tap,
} from 'rxjs';

/** The turn's id: the scope of effect keys, stable across attempts and restarts. */
const turnId = 'turn-42';
/** How long a ledger claim holds: after the crash, the restart waits up to this long for the crashed run's claim. */
const leaseMs = 1500;

/**
 * How long the client waits between a failed attempt and the next one, in milliseconds: the page's `retryDelay`
 * query parameter (`?retryDelay=5000`), default 2000. The reset comes before the wait, and says how long it is.
 */
const retryDelayMs = ((value: string | null) => {
  const ms = value === null ? Number.NaN : Number(value);
  return Number.isFinite(ms) && ms >= 0 ? ms : 2000;
})(new URLSearchParams(location.search).get('retryDelay'));

/** One column of the comparison. */
type Column = {
  /** `data-policy` of its card. */
  id: string;
  title: string;
  note: string;
  /** The policy holds calls until their attempt finishes. */
  holds: boolean;
  /** Rule 3 is played on this column: its app crashes after the refund, before recording it, and restarts. */
  restarts: boolean;
  /**
   * How the column's view reducer (`viewReducer({ onReset })`) presents the abandoned attempt at a reset: its text
   * disappears (`rollback`), or stays struck through and labelled interrupted until the next attempt's text
   * arrives (`mark`). Absent when the policy emits no resets.
   */
  onReset?: 'rollback' | 'mark';
} & (
  | {
      /** Every tool call the policy emits asks the payment service for a refund, with no idempotency key. */
      kind: 'policy';
      policy: () => OperatorFunction<AssembledEvent<ProviderEvent>, PolicyEvent>;
    }
  | {
      /** cleanTurn, and executeTools with a ledger: the handler passes the effect key as the idempotency key. */
      kind: 'clean-turn';
    }
);

const columns: Column[] = [
  {
    id: 'naive',
    title: 'Naive',
    note: 'Keep appending; run each call as soon as it is complete.',
    holds: false,
    restarts: false,
    kind: 'policy',
    policy: naivePolicy,
  },
  {
    id: 'reset-only',
    title: 'Reset on retry',
    note: 'Clear the text when the retry starts; run calls at once.',
    holds: false,
    restarts: false,
    onReset: 'rollback',
    kind: 'policy',
    policy: resetOnlyPolicy,
  },
  {
    id: 'late-execution',
    title: 'Reset + late execution',
    note: 'Run calls only after their attempt finishes. No memory of what ran.',
    holds: true,
    restarts: true,
    onReset: 'rollback',
    kind: 'policy',
    policy: lateExecutionPolicy,
  },
  {
    id: 'clean-turn',
    title: 'cleanTurn',
    note: '+ effect keys from meaning; executeTools with a ledger.',
    holds: true,
    restarts: true,
    onReset: 'mark',
    kind: 'clean-turn',
  },
];

/**
 * The provider events of one run of the turn (whole tool calls), with a `retry` event between attempts,
 * multicast to every policy. Each subscription to `oneAttempt` is a new request; the server counts them per run.
 */
function providerEvents(run: string): Observable<AssembledEvent<ProviderEvent>> {
  const oneAttempt = fromSSE(({ signal }) => ({
    url: `/turn?run=${encodeURIComponent(run)}`,
    init: {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ message: 'Order ORD-7781: the book arrived damaged. I want a refund.' }),
      signal,
    },
  })).pipe(
    // The server sends neutral ProviderEvents; with a provider's own format, its adapter replaces sseJson.
    // attemptPipeline: the adapter, then assembleToolCalls and requireFinish, once per attempt.
    attemptPipeline(sseJson<ProviderEvent>()),
  );
  // share(): the four policies and the wire view read the same attempts; the request is made once per attempt.
  // The retry event comes the moment an attempt fails, before the wait, and carries its delay.
  return oneAttempt.pipe(retryAsEvents({ count: 2, delay: retryDelayMs }), share());
}

/** A refund the payment service made. */
interface Refund {
  id: string;
  callId: string;
}

/**
 * The payment provider: a fake per column, which outlives the app's crash. Given an idempotency key, it refunds
 * once per key and answers a repeat with the refund it already made (as Stripe does with `Idempotency-Key`).
 */
class PaymentService {
  readonly refunds: Refund[] = [];
  readonly #byKey = new Map<string, Refund>();

  refund(callId: string, idempotencyKey?: string): { refund: Refund; again: boolean } {
    const earlier = idempotencyKey === undefined ? undefined : this.#byKey.get(idempotencyKey);
    if (earlier !== undefined) return { refund: earlier, again: true };
    const refund = { id: `re_${this.refunds.length + 1}`, callId };
    this.refunds.push(refund);
    if (idempotencyKey !== undefined) this.#byKey.set(idempotencyKey, refund);
    return { refund, again: false };
  }
}

/** A call that reached the refund tool, as its column shows it. */
interface CallView {
  id: string;
  /** Where the provider stream sent it: `sent in attempt 2`, `sent after the restart`. */
  sent: string;
  /** It came in the run after the restart. */
  restarted: boolean;
  /** Its effect key: stamped by cleanTurn, or computed here for display. */
  key: string;
  status: 'waiting' | 'refunded' | 'already-refunded' | 'replayed' | 'failed';
  /** What the payment service answered, or why the call waits or failed. */
  outcome: string;
  detail?: string;
  /** The app crashed right after this call's refund, before recording it. */
  crashAfter?: boolean;
}

/** What one column has done in one press of start: its refunds, and the turn the user reads in each run. */
interface ColumnState {
  payments: PaymentService;
  calls: CallView[];
  /** The turn as accumulated (its attempts and finish): the first run's, then the restart's. */
  turns: TurnState<unknown>[];
  /** What the user reads, as the column's view reducer computes it: the first run's, then the restart's. */
  views: TurnView[];
  /** When the notice of the latest view appeared (`performance.now()`), for the countdown of its wait. */
  noticeSince: number;
}

/** The provider stream of one run as it came: each attempt's text, and the attempt that sent each call. */
interface SourceRun {
  texts: string[];
  sent: Map<string, number>;
}

// ---- DOM ------------------------------------------------------------------------------------------------------

function element<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  props: { className?: string; text?: string; data?: Record<string, string>; title?: string } = {},
  children: (Node | string)[] = [],
): HTMLElementTagNameMap[K] {
  const node = document.createElement(tag);
  if (props.className !== undefined) node.className = props.className;
  if (props.text !== undefined) node.textContent = props.text;
  if (props.title !== undefined) node.title = props.title;
  for (const [name, value] of Object.entries(props.data ?? {})) node.dataset[name] = value;
  node.append(...children);
  return node;
}

function byId<T extends HTMLElement>(id: string): T {
  const node = document.getElementById(id);
  if (node === null) throw new Error(`#${id} is missing from index.html`);
  return node as T;
}

const startButton = byId<HTMLButtonElement>('start');
const breakButton = byId<HTMLButtonElement>('break');
const status = byId<HTMLParagraphElement>('status');
const wire = byId<HTMLOListElement>('wire');

/** The parts of a column's card that change. */
interface ColumnView {
  column: Column;
  card: HTMLElement;
  /** The box of what the user reads: the notice, the interrupted attempt and the live text. */
  reads: HTMLElement;
  notice: HTMLElement;
  /** The abandoned attempt's text, shown by `onReset: 'mark'` until the next attempt's text arrives. */
  interrupted: HTMLElement;
  interruptedText: HTMLElement;
  /** The live attempt's text. */
  text: HTMLElement;
  count: HTMLElement;
  calls: HTMLElement;
  attempts: HTMLElement;
  verdict: HTMLElement;
  /** What the column has done since start was pressed. */
  state: ColumnState;
}

const emptyState = (): ColumnState => ({
  payments: new PaymentService(),
  calls: [],
  turns: [],
  views: [],
  noticeSince: 0,
});

const views = columns.map((column): ColumnView => {
  const notice = element('span', { className: 'notice', data: { role: 'notice' } });
  const interruptedText = element('s', { data: { role: 'interrupted-text' } });
  const interrupted = element('span', { className: 'interrupted', data: { role: 'interrupted' } }, [
    element('span', { className: 'label', text: 'interrupted' }),
    interruptedText,
  ]);
  const text = element('span', { className: 'text', data: { role: 'text' } });
  const reads = element('p', { className: 'reads', data: { role: 'reads' } }, [notice, interrupted, text]);
  const presentation =
    column.onReset === undefined
      ? []
      : [
          element('code', {
            className: 'presentation',
            text: `onReset: '${column.onReset}'`,
            title:
              column.onReset === 'mark'
                ? "viewReducer({ onReset: 'mark' }): at a reset the abandoned text stays, struck through and labelled interrupted, until the next attempt's text replaces it"
                : "viewReducer({ onReset: 'rollback' }): at a reset the abandoned text disappears",
          }),
        ];
  const count = element('span', { className: 'count', data: { role: 'refund-count' } });
  const calls = element('ul', { className: 'refunds', data: { role: 'calls' } });
  const attempts = element('ul', { className: 'attempts', data: { role: 'attempts' } });
  const verdict = element('p', { className: 'verdict', data: { role: 'verdict' } });
  const card = element('article', { className: 'card', data: { policy: column.id } }, [
    element('h2', { text: column.title }),
    element('p', { className: 'note', text: column.note }),
    element('h3', {}, ['What the user reads', ...presentation]),
    reads,
    element('h3', {}, ['Refunds made ', count]),
    calls,
    element('h3', { text: 'Attempts (each one is billed)' }),
    attempts,
    verdict,
  ]);
  byId('columns').append(card);
  return {
    column,
    card,
    reads,
    notice,
    interrupted,
    interruptedText,
    text,
    count,
    calls,
    attempts,
    verdict,
    state: emptyState(),
  };
});

/**
 * What the user reads in a column: the live attempt's text; during the wait for a retry the notice
 * (`retryMessage`, counting down); with `onReset: 'mark'` the abandoned attempt's text, struck through, until the
 * next attempt's text arrives.
 */
function renderReads(view: ColumnView) {
  const shown = view.state.views.at(-1) ?? initialView;
  view.text.textContent = shown.text;
  const abandoned = shown.interrupted;
  view.interrupted.hidden = abandoned === undefined;
  view.interruptedText.textContent = abandoned?.text ?? '';
  view.interrupted.title =
    abandoned === undefined ? '' : `attempt ${abandoned.attempt} was abandoned: ${abandoned.reason}`;
  if (abandoned === undefined) delete view.interrupted.dataset.attempt;
  else view.interrupted.dataset.attempt = String(abandoned.attempt);
  renderNotice(view);
}

/** The column's retry notice, with the time left of its wait; hidden when there is none. */
function renderNotice(view: ColumnView) {
  const notice = view.state.views.at(-1)?.notice;
  const retrying = notice?.type === 'retrying' ? notice : undefined;
  view.notice.hidden = retrying === undefined;
  view.notice.textContent =
    retrying === undefined
      ? ''
      : retryMessage(
          retrying,
          retrying.delay === undefined
            ? {}
            : { remaining: retrying.delay - (performance.now() - view.state.noticeSince) },
        );
  tickWhileWaiting();
}

/** The timer that counts the notices down; set while any column shows one. */
let countdown: ReturnType<typeof setInterval> | undefined;

function tickWhileWaiting() {
  const waiting = views.some((view) => !view.notice.hidden);
  if (waiting && countdown === undefined) {
    countdown = setInterval(() => {
      for (const view of views) renderNotice(view);
    }, 200);
  } else if (!waiting && countdown !== undefined) {
    clearInterval(countdown);
    countdown = undefined;
  }
}

function renderColumn(view: ColumnView, sources: readonly SourceRun[]) {
  const { state } = view;
  const turn = state.turns.at(-1);
  renderReads(view);
  const n = state.payments.refunds.length;
  const refunded = state.calls.filter((call) => call.status === 'refunded');
  /** A refund whose key an earlier refund had: the same refund again. */
  const isAgain = (call: CallView) =>
    refunded.includes(call) && refunded.find((r) => r.key === call.key) !== call;
  const twice = refunded.some(isAgain);
  view.count.textContent = `${n} refund${n === 1 ? '' : 's'}`;
  view.count.className = `count ${twice ? 'bad' : n > 0 ? 'good' : ''}`;
  view.calls.replaceChildren(
    ...state.calls.flatMap((call) => {
      const again = isAgain(call);
      const item = element(
        'li',
        {
          className: `${call.status}${again ? ' dup' : ''}`,
          data: { role: 'call', callId: call.id, effectKey: call.key, status: call.status },
        },
        [
          element('span', { className: 'call', text: `issue_refund ${call.id}` }),
          element('span', { className: 'meta', text: call.sent, data: { role: 'sent' } }),
          element('code', {
            className: 'key',
            text: call.key,
            title:
              view.column.kind === 'clean-turn'
                ? 'effect key stamped by cleanTurn, passed to the payment service'
                : "effectKey('turn-42', call), shown here only: this policy has no key to pass on",
          }),
          element('span', { className: 'outcome', text: call.outcome }),
          ...(again ? [element('span', { className: 'dup', text: 'the same refund again' })] : []),
          ...(call.detail === undefined ? [] : [element('span', { className: 'detail', text: call.detail })]),
        ],
      );
      if (!call.crashAfter) return [item];
      const crash = element('li', {
        className: 'crash',
        data: { role: 'crash' },
        text: 'The app crashes here: the refund ran, and was never recorded. It runs the turn again.',
      });
      return [item, crash];
    }),
  );
  if (state.calls.length === 0) {
    const waiting = view.column.holds && turn !== undefined && turn.finish === undefined;
    view.calls.append(
      element('li', {
        className: 'none',
        text: waiting ? 'none yet: calls wait for the finish' : 'none yet',
      }),
    );
  }
  view.attempts.replaceChildren(
    ...state.turns.flatMap((run, i) => {
      const notice = state.views[i]?.notice;
      const waitsFor = notice?.type === 'retrying' ? notice.attempt : undefined;
      return run.attempts.map((record) => describeAttempt(record, i > 0, record.attempt === waitsFor));
    }),
  );
  view.verdict.textContent = verdict(state, sources);
}

/** One line under the column: what the user reads, and how many refunds ran. */
function verdict(state: ColumnState, sources: readonly SourceRun[]): string {
  const turn = state.turns.at(-1);
  const source = sources[state.turns.length - 1];
  if (turn === undefined || source === undefined) return '';
  const reads =
    turn.text === source.texts.at(-1)
      ? 'Reads the last attempt only'
      : `Reads ${source.texts.length} attempts glued together`;
  const name = (call: CallView) => (call.restarted ? `${call.id} (after the restart)` : call.id);
  const refunded = state.calls.filter((call) => call.status === 'refunded').map(name);
  const kept = state.calls.filter((call) => call.status === 'already-refunded').map(name);
  const n = state.payments.refunds.length;
  return (
    `${reads}. ${n} refund${n === 1 ? '' : 's'}${n > 0 ? `: ${refunded.join(', ')}` : ''}.` +
    (kept.length > 0 ? ` ${kept.join(', ')} had the same key: no new refund.` : '')
  );
}

/**
 * One attempt under the column. `waiting`: the attempt has not started yet, its retry's wait is under way (the
 * record says `streaming` from the reset on).
 */
function describeAttempt(record: AttemptRecord, restarted: boolean, waiting: boolean): HTMLElement {
  const outcome = waiting && record.outcome === 'streaming' ? 'waiting' : record.outcome;
  const usage =
    record.usage === undefined
      ? `usage not reported${record.outcome === 'abandoned' ? ', billed anyway' : ''}`
      : `${record.usage.inputTokens ?? '?'} + ${record.usage.outputTokens ?? '?'} tokens`;
  const calls = `${record.toolCalls} call${record.toolCalls === 1 ? '' : 's'}`;
  const label = `${restarted ? 'restart ' : ''}#${record.attempt} ${outcome === 'waiting' ? 'waiting to start' : outcome}`;
  return element('li', { data: { role: 'attempt', outcome } }, [
    element('span', { className: `outcome ${outcome}`, text: label }),
    ` ${record.textLength} chars · ${calls} · ${usage}`,
    ...(record.reason === undefined ? [] : [element('span', { className: 'reason', text: record.reason })]),
  ]);
}

function chip(kind: string, text: string) {
  wire.append(element('li', { className: kind, text }));
}

function showOnWire(event: AssembledEvent<ProviderEvent>) {
  switch (event.type) {
    case 'text':
      return chip('text', JSON.stringify(event.text));
    case 'tool-call':
      return chip('call', `${event.name} ${event.id}`);
    case 'usage':
      return chip('usage', `usage ${event.inputTokens ?? '?'} + ${event.outputTokens ?? '?'}`);
    case 'finish':
      return chip('finish', `finish: ${event.reason}`);
    case 'retry':
      return chip(
        'retry',
        `retry: ${event.reason}${event.delay === undefined ? '' : ` · next attempt in ${event.delay} ms`}`,
      );
  }
}

/** What the page is doing; `retrying`: an attempt failed, and the next one starts after the wait. */
type State = 'idle' | 'streaming' | 'retrying' | 'restarting' | 'finished' | 'failed';

function setState(state: State, message: string) {
  const live = state === 'streaming' || state === 'retrying' || state === 'restarting';
  document.body.dataset.state = state;
  status.textContent = message;
  startButton.disabled = live;
  breakButton.disabled = state !== 'streaming' && state !== 'restarting';
  startButton.textContent = state === 'idle' ? 'Start the turn' : 'Run it again';
  for (const view of views) view.card.classList.toggle('live', live);
}

// ---- the run --------------------------------------------------------------------------------------------------

/**
 * One column's app in one run: it renders the turn and asks the payment service for each refund its policy
 * releases. In the first run of a column that restarts, the app crashes right after its first refund: its
 * execution stops there, before anything is recorded, as a process that dies would.
 */
function runColumn(
  view: ColumnView,
  events$: Observable<AssembledEvent<ProviderEvent>>,
  run: number,
  sources: readonly SourceRun[],
  ledger: MemoryEffectLedger,
): Observable<unknown> {
  const { column, state } = view;
  const render = () => renderColumn(view, sources);
  const sent = (id: string) => {
    if (run > 0) return 'sent after the restart';
    const attempt = sources[run]?.sent.get(id);
    return attempt === undefined ? '' : `sent in attempt ${attempt}`;
  };
  const crashes = run === 0 && column.restarts;
  const crashed = new Subject<void>();
  const crash = (call: CallView) => {
    call.crashAfter = true;
    render();
    queueMicrotask(() => crashed.next());
  };
  const show = tap((turn: TurnState<unknown>) => {
    state.turns[run] = turn;
    render();
  });
  // What the user reads: the column's view reducer over its policy's events. The reducer returns the same view
  // for an event that changes nothing on screen.
  const reduce = viewReducer({ onReset: column.onReset ?? 'rollback' });
  const read = (turn$: Observable<ViewEvent>) =>
    turn$.pipe(
      scan(reduce, initialView),
      distinctUntilChanged(),
      tap((shown) => {
        if (shown.notice !== state.views[run]?.notice) state.noticeSince = performance.now();
        state.views[run] = shown;
        render();
      }),
    );

  if (column.kind === 'policy') {
    const turn$ = events$.pipe(column.policy(), share());
    const refunds$ = turn$.pipe(
      filter((event) => event.type === 'tool-call'),
      tap((event) => {
        const { refund } = state.payments.refund(event.id);
        const call: CallView = {
          id: event.id,
          sent: sent(event.id),
          restarted: run > 0,
          key: effectKey(turnId, event),
          status: 'refunded',
          outcome: `refund ${refund.id}`,
        };
        state.calls.push(call);
        if (crashes) crash(call);
        else render();
      }),
    );
    return merge(turn$.pipe(accumulateTurn(), show), read(turn$), refunds$.pipe(takeUntil(crashed)));
  }

  // The handler passes the effect key to the payment service as its idempotency key, as the docs recommend: after
  // a crash between the effect and its record, the ledger only knows that the key was claimed.
  const shownById = new Map<string, CallView>();
  const refund: ToolHandlers[string] = (_args, { effectKey: key, call, reclaimed }) => {
    const { refund, again } = state.payments.refund(call.id, key);
    const shown = shownById.get(call.id);
    if (shown !== undefined) {
      shown.status = again ? 'already-refunded' : 'refunded';
      shown.outcome = again ? `already refunded: ${refund.id}` : `refund ${refund.id}`;
      shown.detail = reclaimed
        ? 'The crashed run’s claim expired unrecorded (in doubt): the handler ran again with the same key, and the payment service answered with the refund it had made.'
        : undefined;
    }
    if (crashes && shown !== undefined) {
      crash(shown);
      return new Promise(() => {});
    }
    render();
    return { refund_id: refund.id };
  };
  const turn$ = events$.pipe(cleanTurn({ turnId, seen: ledger.seen(turnId) }), share());
  const executed$ = turn$.pipe(
    tap((event) => {
      if (event.type !== 'tool-call' && event.type !== 'tool-call-repeat') return;
      const held = ledger.get(turnId, event.effectKey);
      const shown: CallView = {
        id: event.id,
        sent: sent(event.id),
        restarted: run > 0,
        key: event.effectKey,
        status: 'waiting',
        outcome: 'waiting for its key',
        ...(held?.status === 'claimed'
          ? {
              detail: `Its key is still claimed by the crashed run: the ledger waits for the claim's lease (${leaseMs / 1000} s) to expire.`,
            }
          : {}),
      };
      shownById.set(event.id, shown);
      state.calls.push(shown);
      render();
    }),
    executeTools({ issue_refund: refund }, { turnId, ledger, leaseMs }),
    tap((result) => {
      if (result.outcome === 'executed') return;
      const shown = shownById.get(result.call.id);
      if (shown === undefined) return;
      if (result.outcome === 'replayed') {
        shown.status = 'replayed';
        shown.outcome = 'answered with the recorded result';
      } else {
        shown.status = 'failed';
        shown.outcome = 'error' in result ? result.error.message : result.outcome;
      }
      render();
    }),
  );
  return merge(turn$.pipe(accumulateTurn(), show), read(turn$), executed$.pipe(takeUntil(crashed)));
}

let running: Subscription | undefined;
let starts = 0;

function start() {
  running?.unsubscribe();
  starts += 1;
  const run = `${Date.now().toString(36)}-${starts}`;
  // Kept across the simulated restart, as a durable ledger (SQLite, Redis, Postgres) would be.
  const ledger = new MemoryEffectLedger();
  const sources: SourceRun[] = [];
  wire.replaceChildren();
  for (const view of views) {
    view.state = emptyState();
    renderColumn(view, sources);
  }
  setState('streaming', 'Attempt 1 is streaming…');

  /** Run 0 is the turn; run 1 is the same turn after the crash, on the columns that restart. */
  const play = (index: number) =>
    defer(() => {
      const source: SourceRun = { texts: [''], sent: new Map() };
      sources[index] = source;
      const state: State = index === 0 ? 'streaming' : 'restarting';
      /** A line of the status, after the restart prefixed as such. */
      const say = (line: string) =>
        index === 0 ? `${line.charAt(0).toUpperCase()}${line.slice(1)}` : `After the restart: ${line}`;
      const events$ = providerEvents(run);
      /** The retry whose wait is under way: set from the retry until the next attempt's first event. */
      let waitingFor: Extract<ProviderEvent, { type: 'retry' }> | undefined;
      const wireView = events$.pipe(
        tap((event) => {
          showOnWire(event);
          const attempt = source.texts.length;
          if (event.type === 'retry') {
            source.texts.push('');
            waitingFor = event;
            const wait = event.delay === undefined ? '' : ` in ${event.delay / 1000} s`;
            setState(
              'retrying',
              say(`attempt ${attempt} broke (${event.reason}). Attempt ${attempt + 1} starts${wait}…`),
            );
            return;
          }
          if (waitingFor !== undefined) {
            setState(
              state,
              say(`attempt ${attempt - 1} broke (${waitingFor.reason}). Attempt ${attempt} is streaming…`),
            );
            waitingFor = undefined;
          }
          if (event.type === 'text') source.texts[attempt - 1] += event.text;
          if (event.type === 'tool-call') source.sent.set(event.id, attempt);
        }),
      );
      const apps = views
        .filter((view) => index === 0 || view.column.restarts)
        .map((view) => runColumn(view, events$, index, sources, ledger));
      return merge(wireView, ...apps);
    });

  const restart = defer(() => {
    chip('crash', 'crash · restart');
    setState(
      'restarting',
      'The app crashed after the refund ran and before it was recorded. It runs the turn again…',
    );
    return play(1);
  });

  running = concat(play(0), restart).subscribe({
    complete: () => {
      const attempts = sources[0]?.texts.length ?? 0;
      setState(
        'finished',
        `Finished: ${attempts} attempt${attempts === 1 ? '' : 's'}, a crash after the refund, and a restart. Run it again?`,
      );
    },
    error: (error: unknown) =>
      setState(
        'failed',
        error instanceof TurnError && error.code === 'retries-exhausted'
          ? 'Gave up: retries are capped at 2 per turn.'
          : `Failed: ${error instanceof Error ? error.message : String(error)}`,
      ),
  });
}

async function breakConnection() {
  status.textContent = 'Breaking the connection…';
  const response = await fetch('/break', { method: 'POST' });
  const { broken } = (await response.json()) as { broken: number };
  if (broken === 0) status.textContent = 'No stream was open: nothing to break.';
}

startButton.addEventListener('click', start);
breakButton.addEventListener('click', () => {
  breakConnection().catch((error: unknown) => {
    status.textContent = `Could not reach the server: ${String(error)}`;
  });
});
for (const view of views) renderColumn(view, []);
