// Ends the run with one line per suite that was skipped for a missing system package, after vitest's summary:
// `skipped: Redis ledger and turn-log tests (13 files): apt-get install redis-server`. The guards record what
// they skip (test/support/requirements.ts) in the folder this names in CLEANTURN_SKIPS_DIR for the workers.
import { collectSkips } from '../support/requirements.js';

export default function skips(): () => void {
  return collectSkips();
}
