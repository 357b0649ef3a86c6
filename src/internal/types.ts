// Type helpers shared by the operators' signatures.

/**
 * `T`, in a position that TypeScript must not infer `T` from (what `NoInfer<T>` does since TypeScript 5.4, but
 * resolved to `T` itself in the result). An operator's type parameter comes from its source: inferred from
 * what follows it, or from a declared result type, it would no longer match what the operator before it emits.
 */
export type NotInferred<T> = [T][T extends unknown ? 0 : never];

/**
 * `E`, with tool-call fragments replaced by a type that names the mistake: an operator that reads whole calls
 * only takes this as its input, so that a source of fragments (no `assembleToolCalls()` before it) does not
 * compile, instead of running no tools.
 */
export type WholeCalls<E, Reader extends string> = E extends { type: 'tool-call-delta' }
  ? { error: `assembleToolCalls() must come before ${Reader}` }
  : E;

/**
 * What an operator generic in `E` that reads whole calls only requires of `E`: events, and no fragments among
 * them (an error that names the mistake otherwise).
 */
export type WholeCallEvents<E, Reader extends string> = { type: string } & ([
  Extract<E, { type: 'tool-call-delta' }>,
] extends [never]
  ? unknown
  : { error: `assembleToolCalls() must come before ${Reader}` });
