// The whole retrying pipeline with the official Anthropic SDK: the SDK's stream → anthropicMessages() → a
// clean turn, retried with `retry` events when the stream breaks.
//
//   ANTHROPIC_API_KEY=… npx tsx examples/anthropic.ts   asks the API
//   npx tsx examples/anthropic.ts                       replays a recorded stream from a local server: the first
//                                                       response breaks after the tool call, the second is whole
import { fileURLToPath } from 'node:url';
import Anthropic from '@anthropic-ai/sdk';
import { accumulateTurn, attemptPipeline, backoff, type TurnState, turnPipeline } from 'cleanturn';
import { anthropicMessages } from 'cleanturn/providers';
import { concatMap, defer, lastValueFrom, tap } from 'rxjs';
import { printTurnSummary, turnPrinter } from './support/print.js';
import { replayServer } from './support/replayServer.js';

/** The help-desk turn as a clean turn stream: attempts, resets, calls released once their attempt finished. */
export function helpDeskTurn(client: Anthropic, turnId: string) {
  return defer(() =>
    client.messages.create({
      model: 'claude-sonnet-4-6',
      max_tokens: 1024,
      messages: [{ role: 'user', content: 'The book of order ORD-7781 arrived damaged. Please refund it.' }],
      tools: [
        {
          name: 'issue_refund',
          description: 'Refunds an order, in full or in part.',
          input_schema: {
            type: 'object',
            properties: {
              order_id: { type: 'string' },
              amount: { type: 'string', enum: ['full', 'partial'] },
            },
            required: ['order_id', 'amount'],
          },
        },
      ],
      stream: true,
    }),
  ).pipe(
    concatMap((stream) => stream), // the SDK's Stream is an async iterable of events
    // Each attempt: Messages events → neutral events → assembleToolCalls (tool_use fragments → whole calls) →
    // requireFinish (a clean close before message_stop is retryable too).
    attemptPipeline(anthropicMessages()),
    // The turn: retried twice at the most with `retry` events, then cleanTurn (attempts, resets, late release,
    // effect keys).
    turnPipeline({ turnId, retry: { count: 2, delay: backoff({ initialDelay: 250 }) } }),
  );
}

async function main(): Promise<TurnState> {
  const replay = process.env.ANTHROPIC_API_KEY ? undefined : await startReplay();
  // maxRetries: 0: the pipeline retries, and says so; the SDK would splice a retry silently.
  const client = new Anthropic({ maxRetries: 0, ...(replay && { apiKey: 'replay', baseURL: replay.url }) });
  try {
    return await lastValueFrom(helpDeskTurn(client, 'turn-42').pipe(tap(turnPrinter()), accumulateTurn()));
  } finally {
    await replay?.close();
  }
}

/** A local server that replays a recorded stream: cut after the tool call (a connection reset), then whole. */
function startReplay() {
  return replayServer('anthropic/text-and-tool.sse', (body) => body.indexOf('event: message_delta'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const turn = await main();
  printTurnSummary(turn);
}
