// What an executor's outcome means to a renderer.

/** The status of a call whose executor reported `outcome` (see `ToolResultLike.outcome`). */
export function resultStatus(outcome: string): 'running' | 'completed' | 'failed' {
  if (outcome === 'executed' || outcome === 'replayed') return 'completed';
  if (outcome === 'in-progress') return 'running';
  return 'failed';
}

/** A one-line description of a tool failure: its message when it has one. */
export function describeError(error: unknown): string {
  if (typeof error === 'object' && error !== null && 'message' in error && typeof error.message === 'string')
    return error.message;
  return typeof error === 'string' ? error : 'failed';
}
