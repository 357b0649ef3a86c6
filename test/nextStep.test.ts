// What an agent loop does after a turn, from the final attempt's finish alone.
import { type FinishReason, nextStep } from 'cleanturn';
import { describe, expect, it } from 'vitest';

describe('nextStep', () => {
  it.each<[FinishReason, ReturnType<typeof nextStep>]>([
    ['stop', 'done'],
    ['tool-calls', 'answer'],
    ['length', 'failed'],
    ['content-filter', 'failed'],
    ['error', 'failed'],
    ['other', 'failed'],
  ])('a %s finish: %s', (reason, step) => {
    expect(nextStep({ reason })).toBe(step);
  });

  it('a paused turn continues, whatever its reason', () => {
    expect(nextStep({ reason: 'other', paused: true })).toBe('continue');
    expect(nextStep({ reason: 'tool-calls', paused: true })).toBe('continue');
  });

  it('a turn without a finish failed', () => {
    expect(nextStep(undefined)).toBe('failed');
  });
});
