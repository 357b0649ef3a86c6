// What the provider examples print: the clean turn as it streams, then what each attempt cost.
import type { TurnEvent, TurnState } from 'cleanturn';

/**
 * A printer of the clean turn's events, for `tap()`: text as it streams; at a reset, a line that says which text
 * above is void (the abandoned attempt's, quoted); a line for a released call (a repeat, whose key already ran, is
 * answered with the recorded result instead of running again).
 */
export function turnPrinter(): (event: TurnEvent) => void {
  /** The live attempt's text so far: what a reset takes away. */
  let shown = '';
  return function printTurnEvent(event) {
    if (event.type === 'reset') {
      console.log(
        `\n[reset: attempt ${event.attempt} starts; ${event.reason}; discard ${JSON.stringify(shown)}]`,
      );
      shown = '';
    }
    if (event.type === 'text') {
      shown += event.text;
      process.stdout.write(event.text);
    }
    if (event.type === 'tool-call')
      console.log(`\n[run ${event.name}(${JSON.stringify(event.args)}) once, key ${event.effectKey}]`);
    if (event.type === 'tool-call-repeat')
      console.log(
        `\n[${event.name}(${JSON.stringify(event.args)}) already ran under key ${event.effectKey}: answer it with the recorded result]`,
      );
  };
}

/** Prints the final text and one line per attempt: how it ended and its usage (every attempt is billed). */
export function printTurnSummary(turn: TurnState<unknown>): void {
  console.log(`\n\nfinal text (attempt ${turn.attempt} only): ${JSON.stringify(turn.text)}`);
  for (const a of turn.attempts) {
    const usage = a.usage
      ? `${a.usage.inputTokens ?? '?'} in / ${a.usage.outputTokens ?? '?'} out`
      : 'usage unknown';
    console.log(`attempt ${a.attempt}: ${a.outcome}${a.reason ? ` (${a.reason})` : ''}, ${usage}`);
  }
}
