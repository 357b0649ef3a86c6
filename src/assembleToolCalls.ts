import { Observable, type OperatorFunction } from 'rxjs';
import { ToolCallAssemblyError } from './errors.js';
import { subscribeLinked } from './internal/subscribeLinked.js';
import type { ToolCallEvent } from './types.js';

/** The events {@link assembleToolCalls} emits for an input of `E`: fragments become whole calls. */
export type AssembledEvent<E> = E extends { type: 'tool-call-delta' }
  ? Omit<E, 'type' | 'index' | 'id' | 'name' | 'argsDelta'> & ToolCallEvent
  : E;

interface Fragment {
  type: string;
  index: number;
  id?: string;
  name?: string;
  argsDelta: string;
}

/** One call being assembled. */
interface OpenCall {
  /** The first fragment: its extra fields (such as `attempt`) are carried over to the call. */
  first: Fragment;
  index: number;
  id: string | undefined;
  name: string | undefined;
  /** Argument pieces, joined once when the call completes (linear in the argument size). */
  parts: string[];
}

/**
 * Joins `tool-call-delta` fragments into whole `tool-call` events.
 *
 * Fragments are grouped by `index`, in any interleaving; the first fragment to name an `id` or `name` sets
 * it. A stream only says that a call is complete when its attempt finishes, so the calls are emitted at the
 * `finish`, in the order their first fragments arrived, immediately before it (same frame). Whole `tool-call`
 * events and everything else pass through untouched.
 *
 * - Arguments may arrive whole in the first fragment, or not at all: an empty buffer means `{}`.
 * - A fragment with a new `id` at an index whose call already has another id starts a new call.
 * - A `retry` or `reset` discards the open fragments (their attempt is void); so does a completion or an
 *   error without `finish`: a call that never completed is never emitted.
 * - A call whose arguments are not valid JSON, or that never named its tool, errors the stream with a
 *   retryable {@link ToolCallAssemblyError} carrying the raw argument text.
 * - A call with no id gets `index-<index>`.
 *
 * ```text
 * source:       -a-b-a-b-t-f-|      a, b: fragments of calls 0 and 1, interleaved
 *          assembleToolCalls()
 * result:       ---------t-(ABf)|   A, B: whole calls, in the order they started
 * ```
 *
 * State: the open calls of the current attempt, by index, and their arrival order.
 *
 * ## Example
 * ```ts
 * import { from } from 'rxjs';
 * import { assembleToolCalls } from 'cleanturn';
 *
 * from([
 *   { type: 'tool-call-delta', index: 0, id: 'c1', name: 'issue_refund', argsDelta: '{"order_id":' },
 *   { type: 'tool-call-delta', index: 0, argsDelta: '"ORD-7781"}' },
 *   { type: 'finish', reason: 'tool-calls' },
 * ] as const)
 *   .pipe(assembleToolCalls())
 *   .subscribe(console.log); // { type: 'tool-call', id: 'c1', name: 'issue_refund', args: { order_id: 'ORD-7781' } }, then the finish
 * ```
 *
 * @returns An operator that replaces fragments with whole calls.
 */
export function assembleToolCalls<E extends { type: string }>(): OperatorFunction<E, AssembledEvent<E>> {
  return function assembleToolCallsOperator(source) {
    return new Observable<AssembledEvent<E>>((subscriber) => {
      // The call each index currently feeds.
      let byIndex = new Map<number, OpenCall>();
      // Every open call of the attempt, in the order its first fragment arrived.
      let order: OpenCall[] = [];
      const discard = () => {
        if (order.length > 0) {
          byIndex = new Map();
          order = [];
        }
      };
      const subscription = subscribeLinked(source, subscriber, {
        next(event) {
          if (subscriber.closed) return;
          switch (event.type) {
            case 'tool-call-delta': {
              const fragment = event as unknown as Fragment;
              let call = byIndex.get(fragment.index);
              if (
                call === undefined ||
                (fragment.id !== undefined && call.id !== undefined && fragment.id !== call.id)
              ) {
                call = { first: fragment, index: fragment.index, id: undefined, name: undefined, parts: [] };
                byIndex.set(fragment.index, call);
                order.push(call);
              }
              if (call.id === undefined && fragment.id !== undefined) call.id = fragment.id;
              if (call.name === undefined && fragment.name !== undefined) call.name = fragment.name;
              if (fragment.argsDelta.length > 0) call.parts.push(fragment.argsDelta);
              return;
            }
            case 'finish': {
              const complete = order;
              discard();
              for (const call of complete) {
                let assembled: ToolCallEvent;
                try {
                  assembled = assemble(call);
                } catch (error) {
                  subscriber.error(error);
                  return;
                }
                subscriber.next(assembled as AssembledEvent<E>);
              }
              subscriber.next(event as AssembledEvent<E>);
              return;
            }
            case 'retry':
            case 'reset':
              discard();
              subscriber.next(event as AssembledEvent<E>);
              return;
            default:
              subscriber.next(event as AssembledEvent<E>);
          }
        },
        error(error) {
          discard();
          subscriber.error(error);
        },
        complete() {
          discard();
          subscriber.complete();
        },
      });
      return () => {
        discard();
        subscription.unsubscribe();
      };
    });
  };
}

function assemble(call: OpenCall): ToolCallEvent {
  const argsText = call.parts.length === 1 ? (call.parts[0] as string) : call.parts.join('');
  const described = { index: call.index, id: call.id, name: call.name, argsText };
  if (call.name === undefined) throw new ToolCallAssemblyError('missing-name', described);
  let args: unknown;
  if (argsText.trim() === '') {
    args = {};
  } else {
    try {
      args = JSON.parse(argsText);
    } catch (error) {
      throw new ToolCallAssemblyError('invalid-json', described, error);
    }
  }
  const { type: _type, index: _index, id: _id, name: _name, argsDelta: _argsDelta, ...rest } = call.first;
  return { ...rest, type: 'tool-call', id: call.id ?? `index-${call.index}`, name: call.name, args };
}
