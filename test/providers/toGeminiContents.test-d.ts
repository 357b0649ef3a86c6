// Type tests: what toGeminiContents returns is what @google/genai takes as the next request's contents, and the
// output on a Gemini finish is the SDK's parts; the turn states of the pipelines fit its parameter.
import type { Content, GenerateContentParameters, GoogleGenAI, Part } from '@google/genai';
import type { ToolResultLike, TurnState } from 'cleanturn';
import type { ToolResultEvent } from 'cleanturn/effects';
import { toGeminiContents } from 'cleanturn/providers';
import { describe, expectTypeOf, it } from 'vitest';
import type { GeminiOutput } from '../../src/providers/geminiContent.js';

declare const turn: TurnState;
declare const results: ToolResultEvent[];
declare const ai: GoogleGenAI;

describe('toGeminiContents types', () => {
  it("returns Content[] entries of @google/genai, for generateContentStream's contents", () => {
    const contents = toGeminiContents(turn, results);
    expectTypeOf(contents).toMatchTypeOf<Content[]>();
    const history: Content[] = [{ role: 'user', parts: [{ text: 'Please refund order ORD-7781.' }] }];
    history.push(...contents);
    const params: GenerateContentParameters = { model: 'gemini-3-pro-preview', contents: history };
    expectTypeOf(ai.models.generateContentStream(params)).resolves.toBeObject();
    expectTypeOf(contents).toMatchTypeOf<GenerateContentParameters['contents']>();
  });

  it("the output's parts are the SDK's Part", () => {
    expectTypeOf<GeminiOutput['parts'][number]>().toMatchTypeOf<Part>();
    expectTypeOf<[...GeminiOutput['parts']]>().toMatchTypeOf<Part[]>();
  });

  it('takes the turn state of accumulateTurn and any tool results', () => {
    expectTypeOf(toGeminiContents).parameter(0).toMatchTypeOf<object>();
    expectTypeOf<TurnState>().toMatchTypeOf<Parameters<typeof toGeminiContents>[0]>();
    expectTypeOf<ToolResultEvent[]>().toMatchTypeOf<readonly ToolResultLike[]>();
    expectTypeOf<Parameters<typeof toGeminiContents>[1]>().toEqualTypeOf<readonly ToolResultLike[]>();
  });
});
