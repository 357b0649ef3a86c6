// Seeded randomness for tests over real sockets: a failing run can be replayed with CLEANTURN_SEED.

/** The seed of this run: CLEANTURN_SEED, or one drawn from the clock (print it with the results). */
export const seed = Number(process.env.CLEANTURN_SEED ?? Date.now() % 2 ** 31);

/** mulberry32: a small seeded generator of numbers in [0, 1). */
export function prng(a: number): () => number {
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
