// One stream of provider events, four policies side by side: what each renders, and which refunds each ran.

import {
  type AssembledEvent,
  type AttemptRecord,
  accumulateTurn,
  attemptPipeline,
  cleanTurn,
  effectKey,
  type PolicyEvent,
  type ProviderEvent,
  policies,
  RetriesExhaustedError,
  retryAsEvents,
  type ToolCallEvent,
  type TurnEvent,
  type TurnState,
} from 'cleanturn';
import { fromSSE, sseJson } from 'cleanturn/transport';
import { merge, type Observable, type OperatorFunction, type Subscription, share, tap } from 'rxjs';

/** The turn's id: the scope of effect keys, stable across attempts. */
const turnId = 'turn-42';

/** One column of the comparison. */
interface Column {
  /** `data-policy` of its card. */
  id: string;
  title: string;
  note: string;
  policy: () => OperatorFunction<AssembledEvent<ProviderEvent>, PolicyEvent | TurnEvent>;
  /** The policy holds calls until their attempt finishes. */
  holds: boolean;
}

const columns: Column[] = [
  {
    id: 'naive',
    title: 'Naive',
    note: 'Keep appending; run each call as soon as it is complete.',
    policy: policies.naive,
    holds: false,
  },
  {
    id: 'reset-only',
    title: 'Reset on retry',
    note: 'Clear the text when the retry starts; run calls at once.',
    policy: policies.resetOnly,
    holds: false,
  },
  {
    id: 'late-execution',
    title: 'Reset + late execution',
    note: 'Run calls only after their attempt finishes.',
    policy: policies.lateExecution,
    holds: true,
  },
  {
    id: 'clean-turn',
    title: 'cleanTurn',
    note: '+ effect keys from meaning: one effect per key.',
    policy: () => cleanTurn({ turnId }),
    holds: true,
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
  return oneAttempt.pipe(retryAsEvents({ count: 2 }), share());
}

/** A tool call that came out of a policy, so it "ran". */
interface Executed {
  id: string;
  attempt: number;
  key: string;
  /** The policy stamped the key itself (cleanTurn); otherwise it is computed here for display. */
  keyedByPolicy: boolean;
  /** A call with this key had already run in this column: the same refund twice. */
  duplicate: boolean;
}

function execute(call: ToolCallEvent & { attempt: number }, before: readonly Executed[]): Executed {
  const stamped = 'effectKey' in call && typeof call.effectKey === 'string' ? call.effectKey : undefined;
  const key = stamped ?? effectKey(turnId, call);
  return {
    id: call.id,
    attempt: call.attempt,
    key,
    keyedByPolicy: stamped !== undefined,
    duplicate: before.some((done) => done.key === key),
  };
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
  text: HTMLElement;
  count: HTMLElement;
  refunds: HTMLElement;
  attempts: HTMLElement;
}

const views = columns.map((column): ColumnView => {
  const text = element('p', { className: 'reads', data: { role: 'text' } });
  const count = element('span', { className: 'count', data: { role: 'refund-count' } });
  const refunds = element('ul', { className: 'refunds', data: { role: 'refunds' } });
  const attempts = element('ul', { className: 'attempts', data: { role: 'attempts' } });
  const card = element('article', { className: 'card', data: { policy: column.id } }, [
    element('h2', { text: column.title }),
    element('p', { className: 'note', text: column.note }),
    element('h3', { text: 'What the user reads' }),
    text,
    element('h3', {}, ['Refunds executed ', count]),
    refunds,
    element('h3', { text: 'Attempts (each one is billed)' }),
    attempts,
  ]);
  byId('columns').append(card);
  return { column, card, text, count, refunds, attempts };
});

function renderColumn(view: ColumnView, turn: TurnState<unknown> | undefined, executed: readonly Executed[]) {
  view.text.textContent = turn?.text ?? '';
  const n = executed.length;
  view.count.textContent = `${n} refund${n === 1 ? '' : 's'}`;
  view.count.className = `count ${executed.some((e) => e.duplicate) ? 'bad' : n > 0 ? 'good' : ''}`;
  view.refunds.replaceChildren(
    ...executed.map((done) =>
      element(
        'li',
        {
          className: done.duplicate ? 'dup' : '',
          data: { role: 'refund', callId: done.id, effectKey: done.key },
        },
        [
          element('span', { className: 'call', text: `issue_refund ${done.id}` }),
          element('span', { className: 'meta', text: `attempt ${done.attempt}` }),
          element('code', {
            className: 'key',
            text: done.key,
            title: done.keyedByPolicy ? 'effect key stamped by cleanTurn' : "effectKey('turn-42', call)",
          }),
          ...(done.duplicate ? [element('span', { className: 'dup', text: 'the same refund again' })] : []),
        ],
      ),
    ),
  );
  if (n === 0) {
    const waiting = view.column.holds && turn !== undefined && turn.finish === undefined;
    view.refunds.append(
      element('li', {
        className: 'none',
        text: waiting ? 'none yet: calls wait for the finish' : 'none yet',
      }),
    );
  }
  view.attempts.replaceChildren(...(turn?.attempts ?? []).map(describeAttempt));
}

function describeAttempt(record: AttemptRecord): HTMLElement {
  const usage =
    record.usage === undefined
      ? `usage not reported${record.outcome === 'abandoned' ? ', billed anyway' : ''}`
      : `${record.usage.inputTokens ?? '?'} + ${record.usage.outputTokens ?? '?'} tokens`;
  const calls = `${record.toolCalls} call${record.toolCalls === 1 ? '' : 's'}`;
  return element('li', { data: { role: 'attempt', outcome: record.outcome } }, [
    element('span', { className: `outcome ${record.outcome}`, text: `#${record.attempt} ${record.outcome}` }),
    ` ${record.textLength} chars · ${calls} · ${usage}`,
    ...(record.reason === undefined ? [] : [element('span', { className: 'reason', text: record.reason })]),
  ]);
}

function showOnWire(event: AssembledEvent<ProviderEvent>) {
  const chip = (kind: string, text: string) => wire.append(element('li', { className: kind, text }));
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
      return chip('retry', `retry: ${event.reason}`);
  }
}

type State = 'idle' | 'streaming' | 'finished' | 'failed';

function setState(state: State, message: string) {
  document.body.dataset.state = state;
  status.textContent = message;
  startButton.disabled = state === 'streaming';
  breakButton.disabled = state !== 'streaming';
  startButton.textContent = state === 'idle' ? 'Start the turn' : 'Run it again';
  for (const view of views) view.card.classList.toggle('live', state === 'streaming');
}

// ---- the run --------------------------------------------------------------------------------------------------

let running: Subscription | undefined;
let runs = 0;

function start() {
  running?.unsubscribe();
  runs += 1;
  const run = `${Date.now().toString(36)}-${runs}`;
  wire.replaceChildren();
  for (const view of views) renderColumn(view, undefined, []);
  setState('streaming', 'Attempt 1 is streaming…');

  let attempt = 1;
  const events$ = providerEvents(run);
  const wireView = events$.pipe(
    tap((event) => {
      showOnWire(event);
      if (event.type === 'retry') {
        attempt += 1;
        setState(
          'streaming',
          `Attempt ${attempt - 1} broke (${event.reason}). Attempt ${attempt} is streaming…`,
        );
      }
    }),
  );
  const policyViews = views.map((view) => {
    // Every tool call that comes out of the policy "runs": in an app, this is where the refund is issued. A
    // tool-call-repeat (cleanTurn: its key already ran) does not run; it is answered with the recorded result.
    const executed: Executed[] = [];
    return events$.pipe(
      view.column.policy(),
      tap((event) => {
        if (event.type === 'tool-call') executed.push(execute(event, executed));
      }),
      accumulateTurn(),
      tap((turn) => renderColumn(view, turn, executed)),
    );
  });

  running = merge(wireView, ...policyViews).subscribe({
    complete: () =>
      setState('finished', `Finished after ${attempt} attempt${attempt === 1 ? '' : 's'}. Run it again?`),
    error: (error: unknown) =>
      setState(
        'failed',
        error instanceof RetriesExhaustedError
          ? `Gave up after ${attempt} attempts: retries are capped at 2 per turn.`
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
for (const view of views) renderColumn(view, undefined, []);
