import { setImmediate as nextTurn } from 'node:timers/promises';
import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import { type RunEvent, runSteps } from 'cleanturn';
import { type EffectLedger, executeTools, MemoryEffectLedger, type ToolHandlers } from 'cleanturn/effects';
import { openaiChat, toOpenAIChatMessages } from 'cleanturn/providers';
import {
  memoryTurnLog,
  type StreamTurnOptions,
  streamTurn,
  type TurnLog,
  type TurnMessage,
  type TurnServer,
  turnServer,
} from 'cleanturn/transport';
import { type Observable, ReplaySubject, takeUntil } from 'rxjs';
import { Payments } from './payments.js';

/**
 * What a client of `GET /turns/:id` reads: the run's events, each with its `step`: the clean turn of each step, the
 * result of each tool call, and a `step-end` after each step (the last one says why the run ended).
 */
export type TurnUpdate = RunEvent;

/**
 * Where tool effects are recorded. A ledger that answers synchronously (`MemoryEffectLedger`, `SqliteEffectLedger`)
 * has `seen(turnId)`, which is also `streamTurn`'s `seen`, so that a call whose effect is settled comes as a repeat;
 * without it (`RedisEffectLedger`, `PostgresEffectLedger`), `executeTools` replays the settled keys from the ledger.
 */
export type TurnsLedger = EffectLedger & Partial<Pick<MemoryEffectLedger, 'seen'>>;

/** How the module reaches the model, where it records tool effects, and where its runs keep their events. */
export interface TurnsOptions {
  /** The OpenAI Chat Completions API (`https://api.openai.com/v1`), or a server that speaks it. */
  baseUrl: string;
  apiKey?: string;
  /** Default `gpt-4.1`. */
  model?: string;
  /**
   * Where tool effects are recorded, once per effect key. Default: in memory. `new SqliteEffectLedger({ database:
   * 'effects.db' })` of `cleanturn/effects/sqlite` keeps them through a restart.
   */
  ledger?: TurnsLedger;
  /** The delay between attempts of a turn (`streamTurn`'s `backoff`). Default: `backoff()`'s defaults. */
  backoff?: StreamTurnOptions['backoff'];
  /** The most steps (provider turns) of a run. Default 5. */
  maxSteps?: number;
  /**
   * Where the runs keep their events, for the clients that reconnect and for the instance that takes a run over.
   * Default `memoryTurnLog()`: this process only. `redisTurnLog({ client })` of `cleanturn/transport/redis`
   * shares the runs across instances: a reconnect that reaches another instance reads the same run, only one
   * instance runs it, and a run whose instance went away is taken over by another once its lease lapses.
   */
  log?: TurnLog<TurnUpdate>;
  /**
   * What the app's close does to the runs of this instance. `false` (the default): they end as failed
   * (`TransportError` `server-closed`, retryable), and their clients are told. `true`: they stop and nothing is written,
   * their clients' connections end, and another instance sharing the `log` takes each run over once its lease
   * lapses (a deploy that restarts instances one at a time): the clients reconnect there and read on.
   */
  handOver?: boolean;
}

/** The injection token of {@link TurnsOptions}. */
export const TURNS_OPTIONS = Symbol('TURNS_OPTIONS');

/** The refund tool, as the model sees it. */
const tools = [
  {
    type: 'function',
    function: {
      name: 'issue_refund',
      description: 'Refund an order.',
      parameters: {
        type: 'object',
        properties: { order_id: { type: 'string' }, amount: { type: 'string', enum: ['full', 'partial'] } },
        required: ['order_id', 'amount'],
      },
    },
  },
];

@Injectable()
export class TurnsService implements OnModuleDestroy {
  /** Runs each run once, across the instances sharing the log, and keeps its events for the clients that reconnect. */
  readonly #turns: TurnServer<TurnUpdate>;
  readonly #ledger: TurnsLedger;
  /** Ends this instance's connections, and those that come late, once it has handed its runs over. */
  readonly #closing = new ReplaySubject<void>(1);

  constructor(
    @Inject(TURNS_OPTIONS) private readonly options: TurnsOptions,
    @Inject(Payments) private readonly payments: Payments,
  ) {
    this.#turns = turnServer<TurnUpdate>({ log: options.log ?? memoryTurnLog() });
    this.#ledger = options.ledger ?? new MemoryEffectLedger();
  }

  /**
   * The messages of run `turnId` for one connection. The first connection starts the run; a reconnect
   * (`Last-Event-ID`) reads the events after its last one, and the run goes on as if nothing happened.
   */
  serve(turnId: string, message: string, lastEventId: string | undefined): Observable<TurnMessage> {
    return this.#turns
      .serve({ turnId, lastEventId, run: (context) => this.#run(turnId, message, context) })
      .pipe(takeUntil(this.#closing));
  }

  /** How many runs this instance runs now. */
  get running(): number {
    return this.#turns.running;
  }

  /**
   * Stops the runs of this instance when the app closes (`app.close()`, or a signal with `enableShutdownHooks()`):
   * their provider requests are aborted. Without `handOver`, their clients read that the run failed (`retryable`);
   * with it, their connections end, and the clients reconnect to an instance that takes the runs over.
   */
  async onModuleDestroy(): Promise<void> {
    const handOver = this.options.handOver === true;
    await this.#turns.close({ handOver });
    if (handOver) this.#closing.next(); // nothing more comes here: the clients reconnect elsewhere
    // Let the responses write that before Nest closes the server (which closes the idle connections only).
    await nextTurn();
  }

  /**
   * One run: steps of retried provider attempts, cleaned, each released call run once against the ledger, until
   * the model answers without a call. A run taken over from a lost instance (`takeover`) goes on at its step.
   */
  #run(
    turnId: string,
    message: string,
    { signal, takeover }: { signal: AbortSignal; takeover?: { events: readonly TurnUpdate[] } },
  ): Observable<TurnUpdate> {
    const { baseUrl, apiKey, model = 'gpt-4.1', backoff, maxSteps = 5 } = this.options;
    const headers = {
      'content-type': 'application/json',
      ...(apiKey && { authorization: `Bearer ${apiKey}` }),
    };
    const handlers: ToolHandlers = {
      issue_refund: (args, { effectKey }) => {
        const order = refundArgs(args); // the model's arguments: check them
        const refund = this.payments.refund(order, { idempotencyKey: `${turnId}:${effectKey}` });
        return { refund_id: refund.refund_id };
      },
    };
    return runSteps({
      runId: turnId,
      resume: takeover?.events, // the events of the lost runner: its finished steps are not run again
      maxSteps,
      turn: ({ step, history }) => {
        // The whole conversation from the history: a run taken over here never saw its earlier steps.
        const messages: unknown[] = [{ role: 'user', content: message }];
        for (const done of history)
          if (done.turn) messages.push(...toOpenAIChatMessages(done.turn, done.results));
        const body = JSON.stringify({
          model,
          messages,
          tools,
          stream: true,
          stream_options: { include_usage: true },
        });
        return streamTurn({
          turnId,
          step, // in every effect key of the step
          signal, // the run's stop
          adapter: openaiChat(),
          request: ({ signal: attempt }) => ({
            url: `${baseUrl}/chat/completions`,
            init: { method: 'POST', headers, body, signal: attempt },
          }),
          // calls whose keys already ran come as repeats (an asynchronous ledger's executor replays them)
          ...(this.#ledger.seen !== undefined && { seen: this.#ledger.seen(turnId) }),
          ...(backoff !== undefined && { backoff }),
        });
      },
      // The same events as the client reads: the executor runs the released calls of each step.
      execute: (turn$) => turn$.pipe(executeTools(handlers, { turnId, ledger: this.#ledger })),
    });
  }
}

/** The refund's arguments, checked: what the model sends is input, not a promise. */
function refundArgs(args: unknown): { order_id: string; amount: 'full' | 'partial' } {
  const { order_id, amount } = (args ?? {}) as Record<string, unknown>;
  if (typeof order_id !== 'string' || (amount !== 'full' && amount !== 'partial')) {
    throw Object.assign(new Error('issue_refund needs an order_id and an amount (full or partial)'), {
      retryable: false,
    });
  }
  return { order_id, amount };
}
