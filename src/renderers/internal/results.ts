// What an executor's outcome means to a renderer.

/** The status of a call whose executor reported `outcome` (see `ToolResultLike.outcome`). */
export function resultStatus(outcome: string): 'running' | 'completed' | 'failed' {
  if (outcome === 'executed' || outcome === 'replayed') return 'completed';
  if (outcome === 'in-progress') return 'running';
  return 'failed';
}
