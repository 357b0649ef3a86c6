// The turns module in a NestJS app, on Nest's own HTTP platform (Express): each turn id is a run of steps (the
// model asks for the refund, the refund runs, the model answers with its result).
//
//   OPENAI_API_KEY=sk-… npm run demo:nest    against the API (or OPENAI_BASE_URL, a server that speaks it)
//   npm run demo:nest                        offline: a local server replays a recorded turn and resets the
//                                            connection in the middle of attempt 1
//
// The recording is one step, a refund call: the replay server would answer step 2 with the same call (a second
// refund), so the offline run stops after step 1 (`maxSteps: 1`, its last `step-end` says `max-steps`).
//
// Then post a turn and read its events as they arrive (curl shows the raw SSE; a browser uses fromTurnSSE):
//
//   curl -N -X POST http://127.0.0.1:3000/turns/turn-42 \
//     -H 'content-type: application/json' -d '{"message":"Please refund order ORD-7781"}'
//
// or, with the message in the URL (for an EventSource, which can only GET):
//
//   curl -N 'http://127.0.0.1:3000/turns/turn-42?message=Please%20refund%20order%20ORD-7781'
import 'reflect-metadata';
import { NestFactory } from '@nestjs/core';
import { replayServer } from '../support/replayServer.js';
import { TurnsModule } from './turns.module.js';

const apiKey = process.env.OPENAI_API_KEY;
const offline =
  apiKey === undefined
    ? await replayServer('openai-chat/text-and-call.sse', (body) =>
        body.lastIndexOf('data: ', body.indexOf('"finish_reason":"tool_calls"')),
      )
    : undefined;
const baseUrl = offline ? `${offline.url}/v1` : (process.env.OPENAI_BASE_URL ?? 'https://api.openai.com/v1');

const app = await NestFactory.create(
  TurnsModule.forRoot({ baseUrl, apiKey, ...(offline && { maxSteps: 1 }) }),
);
app.enableShutdownHooks(); // Ctrl-C closes the app: running runs stop, their clients are told
await app.listen(Number(process.env.PORT ?? 3000), '127.0.0.1');
const url = await app.getUrl();
if (offline)
  console.log('(offline: replaying a recorded turn, one step; set OPENAI_API_KEY to call the API)');
console.log(
  `curl -N -X POST ${url}/turns/turn-42 -H 'content-type: application/json' -d '{"message":"Please refund order ORD-7781"}'`,
);
