// A stand-in for a payment API, in memory: idempotent on a key as Stripe is (a request with a key it has seen
// gets the first answer and moves no money), and counting every request that reaches it, so that a test can
// tell how often the refund tool ran.

/** What the payment API answers for a refund. */
export interface Refund {
  refund_id: string;
  order_id: string;
  amount: 'full' | 'partial';
}

export class Payments {
  /** Refund requests that reached the API, repeats included: how often the tool's handler ran. */
  requests = 0;
  /** The refunds made: money that moved. */
  readonly refunds: Refund[] = [];
  /** The answer given to each idempotency key. */
  readonly #byKey = new Map<string, Refund>();

  /** Refunds an order, once per idempotency key. */
  refund(
    order: { order_id: string; amount: 'full' | 'partial' },
    options: { idempotencyKey: string },
  ): Refund {
    this.requests++;
    const earlier = this.#byKey.get(options.idempotencyKey);
    if (earlier !== undefined) return earlier;
    const refund = { refund_id: `re_${this.refunds.length + 1}`, ...order };
    this.refunds.push(refund);
    this.#byKey.set(options.idempotencyKey, refund);
    return refund;
  }
}
