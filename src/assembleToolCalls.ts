import type { OperatorFunction } from 'rxjs';
import { toolCallAssemblyError } from './errors.js';
import { type Sink, Stage, stageOperator } from './internal/stage.js';
import type { ToolCallEvent } from './types.js';

/**
 * The events {@link assembleToolCalls} emits for an input of `E`: fragments become whole calls.
 */
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
  /** Where the argument text stands: whether its top-level object has closed. */
  json: JsonScan;
  /** Emitted already: its arguments closed before the finish. */
  emitted: boolean;
}

/** An incremental scan of JSON text that tells when the top-level object or array closes. Linear, no parsing. */
interface JsonScan {
  /** Nesting depth of objects and arrays. */
  depth: number;
  /** Inside a string literal. */
  inString: boolean;
  /** The previous character inside a string was a backslash. */
  escaped: boolean;
  /** The text started with `{` or `[`: only then can a close be detected before the finish. */
  structured: boolean;
  /** The text started with something else (a scalar): completion is known only at the finish. */
  opaque: boolean;
  /** The top-level object or array has closed. */
  closed: boolean;
}

function newScan(): JsonScan {
  return { depth: 0, inString: false, escaped: false, structured: false, opaque: false, closed: false };
}

/** Advances `scan` over `text`; sets `closed` when the top-level object or array closes. */
function advance(scan: JsonScan, text: string): void {
  if (scan.opaque) return;
  // The state in locals for the loop (read and written back once per fragment, not once per character).
  let { depth, inString, escaped, structured } = scan;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (escaped) escaped = false;
      else if (c === 92 /* \\ */) escaped = true;
      else if (c === 34 /* " */) inString = false;
    } else if (c === 34) {
      inString = true;
    } else if (c === 123 /* { */ || c === 91 /* [ */) {
      depth++;
      structured = true;
    } else if (c === 125 /* } */ || c === 93 /* ] */) {
      depth--;
      if (depth === 0 && structured) scan.closed = true;
    } else if (!structured && c !== 32 && c !== 10 && c !== 13 && c !== 9) {
      scan.opaque = true;
      return;
    }
  }
  scan.depth = depth;
  scan.inString = inString;
  scan.escaped = escaped;
  scan.structured = structured;
}

/**
 * Joins `tool-call-delta` fragments into whole `tool-call` events.
 *
 * Fragments are grouped by `index`, in any interleaving; the first fragment to name an `id` or `name` sets
 * it. A call is emitted as soon as it is complete: when the top-level JSON object of its arguments closes
 * (tracked by a linear scan of the fragments, with no re-parsing). Calls whose completion cannot be seen
 * before the end (no arguments, or arguments that never close) are emitted at the attempt's `finish`, in the
 * order their first fragments arrived, immediately before it (same frame). Whole `tool-call` events and
 * everything else pass through untouched. Holding state-changing calls until their attempt finishes is the
 * job of {@link bufferUntilFinish}, after this operator; pure reads marked `early` there can start as soon as
 * they are complete.
 *
 * - Arguments may arrive whole in the first fragment, or not at all: an empty buffer means `{}`.
 * - A fragment with a new `id` at an index whose call already has another id starts a new call.
 * - A `retry` or `reset` discards the open fragments (their attempt is void); so does a completion or an
 *   error without `finish`: a call that never completed is never emitted.
 * - A call whose arguments are not valid JSON (also: text after the closed object), or that never named its
 *   tool, errors the stream with a retryable {@link TurnError} (`tool-call-invalid-json` or `tool-call-missing-name`) carrying the raw argument text.
 * - A call with no id gets `index-<index>`.
 *
 * ```text
 * source:   -p-q-s-u-t-f-|
 *           assembleToolCalls()
 * result:   -----A-B-t-f-|
 *
 * where
 *   p = tool-call-delta #0 c1 issue_refund "{\"order_id\":\"ORD-7781\","
 *   q = tool-call-delta #1 c2 lookup_order ""
 *   s = tool-call-delta #0 "\"amount\":\"full\"}"
 *   u = tool-call-delta #1 "{\"order_id\":\"ORD-7781\"}"
 *   t = text "Refund started."
 *   f = finish tool-calls
 *   A = tool-call c1 issue_refund({"order_id":"ORD-7781","amount":"full"})
 *   B = tool-call c2 lookup_order({"order_id":"ORD-7781"})
 * ```
 *
 * Every case of `marbles/assembleToolCalls.marbles.ts`, with pictures: `docs/operators/assembleToolCalls.md`.
 *
 * State: the open calls of the current attempt, by index, their arrival order, and a scan of each one's
 * argument text.
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
  return stageOperator((out: Sink<AssembledEvent<E>>) => new AssembleStage<E>(out));
}

/** The stage of {@link assembleToolCalls}. */
export class AssembleStage<E extends { type: string }> extends Stage<E, AssembledEvent<E>> {
  /** The call each index currently feeds. */
  private byIndex = new Map<number, OpenCall>();
  /** Every open call of the attempt, in the order its first fragment arrived. */
  private order: OpenCall[] = [];

  next(event: E): void {
    if (this.closed) return;
    switch (event.type) {
      case 'tool-call-delta':
        this.fragment(event as unknown as Fragment);
        return;
      case 'finish': {
        const calls = this.order;
        this.clear();
        for (const call of calls) {
          if (!call.emitted && !this.emit(call)) return;
        }
        this.out.next(event as AssembledEvent<E>);
        return;
      }
      case 'retry':
      case 'reset':
        this.clear();
        this.out.next(event as AssembledEvent<E>);
        return;
      default:
        this.out.next(event as AssembledEvent<E>);
    }
  }

  protected override clear(): void {
    if (this.order.length > 0) {
      this.byIndex = new Map();
      this.order = [];
    }
  }

  private fragment(fragment: Fragment): void {
    let call = this.byIndex.get(fragment.index);
    if (
      call === undefined ||
      (fragment.id !== undefined && call.id !== undefined && fragment.id !== call.id)
    ) {
      call = {
        first: fragment,
        index: fragment.index,
        id: undefined,
        name: undefined,
        parts: [],
        json: newScan(),
        emitted: false,
      };
      this.byIndex.set(fragment.index, call);
      this.order.push(call);
    }
    if (call.id === undefined && fragment.id !== undefined) call.id = fragment.id;
    if (call.name === undefined && fragment.name !== undefined) call.name = fragment.name;
    const text = fragment.argsDelta;
    if (call.emitted) {
      // Whitespace after the closed arguments is harmless; anything else makes them invalid.
      if (text.trim() === '') return;
      call.parts.push(text);
      this.error(toolCallAssemblyError('tool-call-invalid-json', describeCall(call)));
      return;
    }
    if (text.length === 0) return;
    call.parts.push(text);
    advance(call.json, text);
    if (call.json.closed && call.name !== undefined) {
      call.emitted = true;
      this.emit(call);
    }
  }

  /** Assembles a complete call and emits it; on a malformed call, errors the stream and returns false. */
  private emit(call: OpenCall): boolean {
    let assembled: ToolCallEvent;
    try {
      assembled = assemble(call);
    } catch (error) {
      this.error(error);
      return false;
    }
    this.out.next(assembled as AssembledEvent<E>);
    return true;
  }
}

function describeCall(
  call: OpenCall,
  argsText = joined(call),
): {
  index: number;
  id: string | undefined;
  name: string | undefined;
  argsText: string;
} {
  return { index: call.index, id: call.id, name: call.name, argsText };
}

/** The argument text of a call, joined once. */
function joined(call: OpenCall): string {
  return call.parts.length === 1 ? (call.parts[0] as string) : call.parts.join('');
}

/** The fields of a fragment that do not carry over to the call. */
const FRAGMENT_FIELDS = new Set<PropertyKey>(['type', 'index', 'id', 'name', 'argsDelta']);

/**
 * The own enumerable fields of a first fragment beyond the fragment's own (such as `attempt`), which carry over
 * to the call; undefined when there are none, as from the adapters.
 */
function extraFields(first: Fragment): PropertyKey[] | undefined {
  const extra: PropertyKey[] = [];
  // `for…in` walks the enumerable keys without making a list of them (the prototype's: a plain object has none).
  for (const key in first) {
    if (!FRAGMENT_FIELDS.has(key) && Object.hasOwn(first, key)) extra.push(key);
  }
  for (const key of Object.getOwnPropertySymbols(first)) {
    if (Object.prototype.propertyIsEnumerable.call(first, key)) extra.push(key);
  }
  return extra.length === 0 ? undefined : extra;
}

function assemble(call: OpenCall): ToolCallEvent {
  const argsText = joined(call);
  if (call.name === undefined)
    throw toolCallAssemblyError('tool-call-missing-name', describeCall(call, argsText));
  let args: unknown;
  if (argsText.trim() === '') {
    args = {};
  } else {
    try {
      args = JSON.parse(argsText);
    } catch (error) {
      throw toolCallAssemblyError('tool-call-invalid-json', describeCall(call, argsText), error);
    }
  }
  const id = call.id ?? `index-${call.index}`;
  const extra = extraFields(call.first);
  // The usual call is one object literal: no copy of the fragment, which a rest pattern and a spread would make.
  if (extra === undefined) return { type: 'tool-call', id, name: call.name, args };
  // The extra fields first, in the fragment's order, as `{ ...rest, type, id, name, args }` would place them.
  const event: Record<PropertyKey, unknown> = {};
  for (const key of extra) {
    Object.defineProperty(event, key, {
      value: (call.first as unknown as Record<PropertyKey, unknown>)[key],
      writable: true,
      enumerable: true,
      configurable: true,
    });
  }
  event.type = 'tool-call';
  event.id = id;
  event.name = call.name;
  event.args = args;
  return event as unknown as ToolCallEvent;
}
