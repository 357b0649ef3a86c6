import { runMarbleCase } from 'cleanturn/testing';
import { describe, expect, it } from 'vitest';
import type { MarbleSpec } from '../src/testing/marbles.js';

// Every diagram in marbles/ is executed here: the pictures in the docs cannot drift from the behaviour.
const specs = import.meta.glob<{ default: MarbleSpec }>('../marbles/*.marbles.ts', { eager: true });

const operators = [
  'tagAttempts',
  'resetOnRetry',
  'bufferUntilFinish',
  'dedupeByEffectKey',
  'assembleToolCalls',
  'cleanTurn',
  'attemptPipeline',
  'turnPipeline',
  'accumulateTurn',
  'retryAsEvents',
  'requireFinish',
  'naivePolicy',
  'resetOnlyPolicy',
  'lateExecutionPolicy',
  'executeTools',
  'turnView',
  'toTerminal',
  'toAcpUpdates',
  'decodeWith',
  'openaiChat',
  'openaiResponses',
  'anthropicMessages',
  'geminiContent',
  'aiSdkParts',
  'resumeResponse',
  'httpClientSSE',
];

it('has one marble spec per operator and policy', () => {
  const names = Object.values(specs).map((m) => m.default.name);
  expect(names.sort()).toEqual(expect.arrayContaining(operators.sort()));
  for (const [file, m] of Object.entries(specs)) expect(file).toBe(`../marbles/${m.default.name}.marbles.ts`);
});

for (const [file, { default: spec }] of Object.entries(specs)) {
  describe(`${spec.name} (${file.replace('../', '')})`, () => {
    for (const marbleCase of spec.cases) {
      it(marbleCase.title, () =>
        runMarbleCase(marbleCase, (actual, expected) => expect(actual).toEqual(expected)),
      );
    }
  });
}
