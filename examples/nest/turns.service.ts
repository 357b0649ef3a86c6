import { setImmediate as nextTurn } from 'node:timers/promises';
import { Inject, Injectable, type OnModuleDestroy } from '@nestjs/common';
import type { BackoffOptions, TurnEvent } from 'cleanturn';
import {
  executeTools,
  MemoryEffectLedger,
  type SyncEffectLedger,
  type ToolHandlers,
  type ToolResultEvent,
} from 'cleanturn/effects';
import { openaiChat } from 'cleanturn/providers';
import { memoryTurnLog, streamTurn, type TurnMessage, turnServer } from 'cleanturn/transport';
import { connect, merge, type Observable } from 'rxjs';
import { Payments } from './payments.js';

/** What a client of `GET /turns/:id` reads: the clean turn, and the result of each tool call. */
export type TurnUpdate = TurnEvent | ToolResultEvent;

/** How the module reaches the model, and where it records tool effects. */
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
  ledger?: SyncEffectLedger;
  /** The delay between attempts of a turn (`streamTurn`'s `backoff`). Default: `backoff()`'s defaults. */
  backoff?: BackoffOptions | false;
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
  /** Runs each turn once and keeps its events for the clients that reconnect. */
  readonly #turns = turnServer<TurnUpdate>({ log: memoryTurnLog() });
  readonly #ledger: SyncEffectLedger;

  constructor(
    @Inject(TURNS_OPTIONS) private readonly options: TurnsOptions,
    @Inject(Payments) private readonly payments: Payments,
  ) {
    this.#ledger = options.ledger ?? new MemoryEffectLedger();
  }

  /**
   * The messages of turn `turnId` for one connection. The first connection starts the turn; a reconnect
   * (`Last-Event-ID`) reads the events after its last one, and the turn goes on as if nothing happened.
   */
  serve(turnId: string, message: string, lastEventId: string | undefined): Observable<TurnMessage> {
    return this.#turns.serve({ turnId, lastEventId, run: () => this.#run(turnId, message) });
  }

  /** How many turns run now. */
  get running(): number {
    return this.#turns.running;
  }

  /**
   * Stops the running turns when the app closes (`app.close()`, or a signal with `enableShutdownHooks()`): their
   * provider requests are aborted, and their clients read that the turn failed (`retryable`).
   */
  async onModuleDestroy(): Promise<void> {
    await this.#turns.close();
    // Let the responses write that before Nest closes the server (which closes the idle connections only).
    await nextTurn();
  }

  /** One turn: retried provider attempts, cleaned; then each released call run once against the ledger. */
  #run(turnId: string, message: string): Observable<TurnUpdate> {
    const { baseUrl, apiKey, model = 'gpt-4.1', backoff } = this.options;
    const body = JSON.stringify({
      model,
      messages: [{ role: 'user', content: message }],
      tools,
      stream: true,
      stream_options: { include_usage: true },
    });
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
    return streamTurn({
      turnId,
      adapter: openaiChat(),
      request: ({ signal }) => ({
        url: `${baseUrl}/chat/completions`,
        init: { method: 'POST', headers, body, signal },
      }),
      seen: this.#ledger.seen(turnId), // calls whose keys already ran come as repeats
      ...(backoff !== undefined && { backoff }),
    }).pipe(
      // One turn, two readers: the client sees every event, the executor runs the released calls.
      connect((turn) => merge(turn, turn.pipe(executeTools(handlers, { turnId, ledger: this.#ledger })))),
    );
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
