// The whole retrying pipeline on the official OpenAI SDK's Chat Completions stream.
//
//   OPENAI_API_KEY=sk-… npx tsx examples/openai-chat.ts   against the API
//   npx tsx examples/openai-chat.ts                       offline: a local server replays a recorded turn and
//                                                         resets the connection in the middle of attempt 1
import { accumulateTurn, attemptPipeline, turnPipeline } from 'cleanturn';
import { openaiChat } from 'cleanturn/providers';
import OpenAI from 'openai';
import { defer, from, last, lastValueFrom, mergeMap, tap } from 'rxjs';
import { printTurnSummary, turnPrinter } from './support/print.js';
import { replayServer } from './support/replayServer.js';

const turnId = 'turn-42';

async function main(): Promise<void> {
  const offline = process.env.OPENAI_API_KEY === undefined ? await startReplay() : undefined;
  // maxRetries: 0: the pipeline retries, and says so; the SDK would splice a retry in silently.
  const client = new OpenAI({
    maxRetries: 0,
    ...(offline && { apiKey: 'offline', baseURL: `${offline.url}/v1` }),
  });

  const turn = await lastValueFrom(
    // One attempt: a new request per subscription, its chunks as the SDK yields them.
    defer(() =>
      client.chat.completions.create({
        model: 'gpt-4.1',
        messages: [
          { role: 'user', content: 'Please refund order ORD-7781 in full, the book arrived damaged.' },
        ],
        tools: [
          {
            type: 'function',
            function: {
              name: 'issue_refund',
              description: 'Refund an order, fully or in part.',
              parameters: {
                type: 'object',
                properties: {
                  order_id: { type: 'string' },
                  amount: { type: 'string', enum: ['full', 'partial'] },
                },
                required: ['order_id', 'amount'],
                additionalProperties: false,
              },
              strict: true,
            },
          },
        ],
        stream: true,
        stream_options: { include_usage: true },
      }),
    ).pipe(
      mergeMap((stream) => from(stream)),
      // One attempt: chunks → text, call fragments, usage, finish; fragments → whole calls; a stream that ends
      // without a finish is a retryable error.
      attemptPipeline(openaiChat()),
      // The turn: retry (at most twice), saying so with a `retry` event; then cleanTurn: attempts, resets, calls
      // held to the finish, effect keys.
      turnPipeline({ turnId, retry: 2 }),
      tap(turnPrinter()),
      accumulateTurn(),
      last(),
    ),
  );

  printTurnSummary(turn);
  await offline?.close();
}

/** A local stand-in for the API: replays a recorded stream, resetting the first connection before the finish. */
async function startReplay() {
  const server = await replayServer('openai-chat/text-and-call.sse', (body) =>
    body.lastIndexOf('data: ', body.indexOf('"finish_reason":"tool_calls"')),
  );
  console.log('(offline: replaying a recorded stream; set OPENAI_API_KEY to call the API)\n');
  return server;
}

await main();
