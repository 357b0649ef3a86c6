// Runs the help-desk turn of the otel tests: streamTurn over the loopback server, its calls run by executeTools against
// a ledger that already holds the refund from an earlier run.
import { effectKey, type TurnEvent } from 'cleanturn';
import { executeTools, MemoryEffectLedger, type ToolResultEvent } from 'cleanturn/effects';
import { streamTurn } from 'cleanturn/transport';
import { lastValueFrom, share, tap, toArray } from 'rxjs';
import type { TestServer } from '../support/httpServer.js';
import { email, helpDeskPlan, refund } from './harness.js';

export const turnId = 'turn-otel-1';

/** The effect keys of the turn's two calls: they must never appear in telemetry. */
export const refundKey = effectKey(turnId, { name: 'issue_refund', args: refund });
export const emailKey = effectKey(turnId, { name: 'send_email', args: email });

/** A ledger in which an earlier run of the turn already issued the refund. */
export function ledgerWithRefund(): MemoryEffectLedger {
  const ledger = new MemoryEffectLedger();
  const claimed = ledger.claim(turnId, refundKey, { leaseMs: 60_000 });
  if (claimed.status !== 'claimed') throw new Error('the refund could not be claimed');
  ledger.complete(turnId, refundKey, claimed.token, { refund_id: 're_7781', status: 'pending' });
  return ledger;
}

/** Which handlers ran, with what. */
export interface Ran {
  refunds: unknown[];
  emails: unknown[];
}

/** Runs the turn and its tools with `telemetry`; resolves with what the consumer saw and what ran. */
export async function runHelpDesk(
  server: TestServer,
  // biome-ignore lint/suspicious/noExplicitAny: both options' observer types, whatever the object is
  telemetry: any,
): Promise<{ events: TurnEvent[]; results: ToolResultEvent[]; ran: Ran }> {
  const ledger = ledgerWithRefund();
  const ran: Ran = { refunds: [], emails: [] };
  const events: TurnEvent[] = [];
  const turn = streamTurn({
    turnId,
    plan: helpDeskPlan(server),
    seen: ledger.seen(turnId),
    backoff: false,
    telemetry,
  }).pipe(
    tap((event) => events.push(event)),
    share(),
  );
  const results = await lastValueFrom(
    turn.pipe(
      executeTools(
        {
          issue_refund: (args) => {
            ran.refunds.push(args);
            return { refund_id: 're_again' };
          },
          send_email: async (args) => {
            ran.emails.push(args);
            return { sent: true, to: email.to };
          },
        },
        { turnId, ledger, telemetry },
      ),
      toArray(),
    ),
  );
  return { events, results, ran };
}
