// The whole retrying pipeline with the Vercel AI SDK: streamText().fullStream → aiSdkParts() → a clean turn,
// retried with `retry` events when the stream breaks. The model here is OpenAI's; any AI SDK provider works.
//
//   OPENAI_API_KEY=… npx tsx examples/ai-sdk.ts   asks the API
//   npx tsx examples/ai-sdk.ts                    replays a recorded Chat Completions stream from a local server:
//                                                 the first response breaks before its finish, the second is whole
import { fileURLToPath } from 'node:url';
import { createOpenAI } from '@ai-sdk/openai';
import { type LanguageModel, streamText, type TextStreamPart, tool } from 'ai';
import { accumulateTurn, attemptPipeline, backoff, type TurnState, turnPipeline } from 'cleanturn';
import { aiSdkParts } from 'cleanturn/providers';
import { defer, lastValueFrom, tap } from 'rxjs';
import { z } from 'zod';
import { printTurnSummary, turnPrinter } from './support/print.js';
import { replayServer } from './support/replayServer.js';

// No `execute`: the SDK would run the tool as soon as its call is complete, even in an attempt that fails later.
// cleanTurn (in turnPipeline) releases the call once its attempt finished, with an effect key for the tool to deduplicate by.
const tools = {
  issue_refund: tool({
    description: 'Refunds an order, in full or in part.',
    inputSchema: z.object({ order_id: z.string(), amount: z.enum(['full', 'partial']) }),
  }),
};

/** The help-desk turn as a clean turn stream: attempts, resets, calls released once their attempt finished. */
export function helpDeskTurn(model: LanguageModel, turnId: string) {
  return defer(
    // fullStream is a ReadableStream and an async iterable: the annotation picks the iterable for RxJS.
    (): AsyncIterable<TextStreamPart<typeof tools>> =>
      streamText({
        model,
        tools,
        prompt: 'The book of order ORD-7781 arrived damaged. Please refund it.',
        maxRetries: 0, // the pipeline retries, and says so
        onError: () => {}, // errors arrive as error parts or a stream error: the adapter reports them
      }).fullStream,
  ).pipe(
    // Each attempt: stream parts → neutral events (calls whole, at the end of their step) → assembleToolCalls →
    // requireFinish (a stream that ends without finish is retryable).
    attemptPipeline(aiSdkParts()),
    // The turn: retried twice at the most with `retry` events, then cleanTurn (attempts, resets, late release,
    // effect keys).
    turnPipeline({ turnId, retry: { count: 2, delay: backoff({ initialDelay: 250 }) } }),
  );
}

async function main(): Promise<TurnState> {
  const replay = process.env.OPENAI_API_KEY ? undefined : await startReplay();
  const openai = createOpenAI(replay ? { apiKey: 'replay', baseURL: `${replay.url}/v1` } : {});
  try {
    return await lastValueFrom(
      helpDeskTurn(openai.chat('gpt-4o'), 'turn-42').pipe(tap(turnPrinter()), accumulateTurn()),
    );
  } finally {
    await replay?.close();
  }
}

/** A local server that replays a recorded Chat Completions stream: cut before its finish, then whole. */
function startReplay() {
  return replayServer(
    'ai-sdk/upstream-openai-chat.sse',
    (body) => body.lastIndexOf('\n', body.indexOf('"finish_reason":"tool_calls"')) + 1,
  );
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const turn = await main();
  printTurnSummary(turn);
}
