// The whole retrying pipeline with the official Google Gen AI SDK: generateContentStream → geminiContent() → a
// clean turn, retried with `retry` events when the stream breaks.
//
//   GEMINI_API_KEY=… npx tsx examples/gemini.ts   asks the API
//   npx tsx examples/gemini.ts                    replays a recorded stream from a local server: the first
//                                                 response breaks in its last chunk, the second is whole
import { fileURLToPath } from 'node:url';
import { GoogleGenAI, Type } from '@google/genai';
import { accumulateTurn, attemptPipeline, backoff, type TurnState, turnPipeline } from 'cleanturn';
import { geminiContent } from 'cleanturn/providers';
import { concatMap, defer, lastValueFrom, tap } from 'rxjs';
import { printTurnSummary, turnPrinter } from './support/print.js';
import { replayServer } from './support/replayServer.js';

/** The help-desk turn as a clean turn stream: attempts, resets, calls released once their attempt finished. */
export function helpDeskTurn(ai: GoogleGenAI, turnId: string) {
  return defer(() =>
    ai.models.generateContentStream({
      model: 'gemini-2.5-flash',
      contents: 'The book of order ORD-7781 arrived damaged. Please refund it.',
      config: {
        tools: [
          {
            functionDeclarations: [
              {
                name: 'issue_refund',
                description: 'Refunds an order, in full or in part.',
                parameters: {
                  type: Type.OBJECT,
                  properties: { order_id: { type: Type.STRING }, amount: { type: Type.STRING } },
                  required: ['order_id', 'amount'],
                },
              },
            ],
          },
        ],
      },
    }),
  ).pipe(
    concatMap((stream) => stream), // an async generator of GenerateContentResponse chunks
    // Each attempt: chunks → neutral events (whole calls get stable ids) → assembleToolCalls → requireFinish (a
    // stream that ends without finishReason is retryable).
    attemptPipeline(geminiContent()),
    // The turn: retried twice at the most with `retry` events, then cleanTurn (attempts, resets, late release,
    // effect keys).
    turnPipeline({ turnId, retry: { count: 2, delay: backoff({ initialDelay: 250 }) } }),
  );
}

async function main(): Promise<TurnState> {
  const replay = process.env.GEMINI_API_KEY ? undefined : await startReplay();
  // No retryOptions: the SDK does not retry; the pipeline does, and says so.
  const ai = new GoogleGenAI({
    apiKey: process.env.GEMINI_API_KEY ?? 'replay',
    ...(replay && { httpOptions: { baseUrl: replay.url } }),
  });
  try {
    return await lastValueFrom(helpDeskTurn(ai, 'turn-42').pipe(tap(turnPrinter()), accumulateTurn()));
  } finally {
    await replay?.close();
  }
}

/** A local server that replays a recorded stream: cut inside its last chunk (a connection reset), then whole. */
function startReplay() {
  return replayServer('gemini/text-and-call.sse', (body) => body.indexOf('"finishReason"'));
}

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  const turn = await main();
  printTurnSummary(turn);
}
