/**
 * The k best of a stream of (slot, similarity) pairs: a binary min-heap on similarity, so the
 * worst kept candidate is at the root and a better one replaces it in O(log k).
 */
export class TopK {
  private readonly slots: number[] = [];
  private readonly sims: number[] = [];

  constructor(private readonly k: number) {}

  /** The similarity a candidate must beat to be kept (−∞ until k are held). */
  get floor(): number {
    return this.slots.length < this.k ? -Infinity : (this.sims[0] as number);
  }

  offer(slot: number, sim: number): void {
    if (this.slots.length < this.k) {
      this.slots.push(slot);
      this.sims.push(sim);
      this.up(this.slots.length - 1);
    } else if (sim > (this.sims[0] as number)) {
      this.slots[0] = slot;
      this.sims[0] = sim;
      this.down(0);
    }
  }

  /** The kept pairs, best first. */
  best(): { slot: number; sim: number }[] {
    return this.slots
      .map((slot, i) => ({ slot, sim: this.sims[i] as number }))
      .sort((a, b) => b.sim - a.sim);
  }

  private swap(i: number, j: number): void {
    [this.slots[i], this.slots[j]] = [this.slots[j] as number, this.slots[i] as number];
    [this.sims[i], this.sims[j]] = [this.sims[j] as number, this.sims[i] as number];
  }

  private up(i: number): void {
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if ((this.sims[parent] as number) <= (this.sims[i] as number)) return;
      this.swap(i, parent);
      i = parent;
    }
  }

  private down(i: number): void {
    const n = this.slots.length;
    for (;;) {
      const l = 2 * i + 1;
      const r = l + 1;
      let least = i;
      if (l < n && (this.sims[l] as number) < (this.sims[least] as number)) least = l;
      if (r < n && (this.sims[r] as number) < (this.sims[least] as number)) least = r;
      if (least === i) return;
      this.swap(i, least);
      i = least;
    }
  }
}
