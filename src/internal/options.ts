// The one place where options are checked, so that every refusal reads the same way:
// `<operator>: <option> must be <what it must be>, not <what it was>`, raised as a UsageError.
import { UsageError } from '../errors.js';
import { describeValue } from './describeValue.js';

/**
 * Refuses an option unless `ok`.
 *
 * @param ok Whether the value is acceptable.
 * @param operator The function that checks (`retryBudget`, `memoryTurnLog`).
 * @param option The option (`ttlMs`, `takeover.max`).
 * @param what What it must be, as it reads after "must be": `an integer >= 0`.
 * @param value The value given.
 * @throws UsageError when `ok` is false.
 */
export function checkOption(
  ok: boolean,
  operator: string,
  option: string,
  what: string,
  value: unknown,
): void {
  if (!ok) throw new UsageError(operator, option, `must be ${what}, not ${describeValue(value)}`);
}

/**
 * Refuses an option that is not a safe integer of at least `min`.
 *
 * @throws UsageError `<operator>: <option> must be an integer >= <min>, not <value>`.
 */
export function checkInteger(operator: string, option: string, value: unknown, min: number): void {
  checkOption(
    Number.isSafeInteger(value) && (value as number) >= min,
    operator,
    option,
    `an integer >= ${min}`,
    value,
  );
}

/**
 * Refuses an option that is not a finite number above 0 (`positive`) or of at least 0 (`non-negative`): a duration,
 * a delay, a size.
 *
 * @throws UsageError `<operator>: <option> must be a finite number > 0, not <value>` (or `>= 0`).
 */
export function checkNumber(
  operator: string,
  option: string,
  value: unknown,
  range: 'positive' | 'non-negative',
): void {
  const ok =
    typeof value === 'number' && Number.isFinite(value) && (range === 'positive' ? value > 0 : value >= 0);
  checkOption(ok, operator, option, `a finite number ${range === 'positive' ? '> 0' : '>= 0'}`, value);
}

/**
 * Refuses an option that is none of `choices`.
 *
 * @throws UsageError `<operator>: <option> must be 'a', 'b' or 'c', not <value>`.
 */
export function checkOneOf<T extends string>(
  operator: string,
  option: string,
  value: unknown,
  choices: readonly T[],
): asserts value is T {
  const quoted = choices.map((choice) => `'${choice}'`);
  const what = quoted.length < 2 ? quoted.join('') : `${quoted.slice(0, -1).join(', ')} or ${quoted.at(-1)}`;
  checkOption((choices as readonly unknown[]).includes(value), operator, option, what, value);
}

/**
 * Refuses an option that is given and is not a function.
 *
 * @throws UsageError `<operator>: <option> must be <what>, not <value>`.
 */
export function checkOptionalFunction(operator: string, option: string, value: unknown, what: string): void {
  checkOption(value === undefined || typeof value === 'function', operator, option, what, value);
}
