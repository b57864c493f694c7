/**
 * The render queue's audio as tagged runs, with caption marks between them (for
 * ./speech.ts). Every operation an engine's messages can repeat costs O(1) amortized:
 * marks of the turn being spoken are placed from the tail, where its audio is; whether
 * a tag has anything queued is a counter; and at most `MAX_MARKS` marks are queued, the
 * oldest dropped past it. An engine's stream of transcripts cannot grow the queue, nor
 * the work per mark, without bound.
 */

/** Caption marks queued, at most: past it the oldest is dropped. */
export const MAX_MARKS = 512;

/** Samples of one tag in a row, or a caption mark (`n` 0). */
export interface Run {
  tag: string | undefined;
  n: number;
  /** A caption mark: reported where the stream reaches it. */
  mark?: number;
  /** A dropped or cut mark not yet swept out of the queue: skipped. */
  dead?: boolean;
}

/** The tagged runs of the render queue, head first. */
export class TaggedRuns {
  #runs: Run[] = [];
  /** Live runs (audio and marks) of each tag; a tag with none has no entry. */
  #count = new Map<string | undefined, number>();
  /** Queued samples of each tag. */
  #samples = new Map<string, number>();
  #marks = 0;
  /** Marks in the order they came, from `#markHead` (placed and dropped ones cleared). */
  #markOrder: (Run | undefined)[] = [];
  #markHead = 0;
  /** Dead runs still in `#runs`. */
  #dead = 0;

  /** Live marks queued (at most `MAX_MARKS`). */
  get marks(): number {
    return this.#marks;
  }

  /** Whether anything of `tag` (audio or a mark) is queued. */
  has(tag: string | undefined): boolean {
    return this.#count.has(tag);
  }

  /** Queued samples of `tag`. */
  samplesOf(tag: string): number {
    return this.#samples.get(tag) ?? 0;
  }

  /** The tag of the oldest live run, if any. */
  firstTag(): string | undefined {
    return this.#runs.find((r) => !r.dead)?.tag;
  }

  /** The head run, dead ones swept off first; null when empty. */
  head(): Run | null {
    while (this.#runs.length > 0 && this.#runs[0].dead) {
      this.#runs.shift();
      this.#dead--;
    }
    return this.#runs[0] ?? null;
  }

  /** `n` samples of `tag` joined the tail. */
  push(tag: string | undefined, n: number): void {
    if (n <= 0) return;
    if (tag !== undefined) this.#samples.set(tag, this.samplesOf(tag) + n);
    const last = this.#runs.at(-1);
    if (last && last.tag === tag && last.mark === undefined && !last.dead) {
      last.n += n;
    } else this.#add(this.#runs.length, { tag, n });
  }

  /** `use` samples of the head run were taken; an emptied run leaves. */
  take(use: number): void {
    const run = this.#runs[0];
    run.n -= use;
    const tag = run.tag;
    if (tag !== undefined) {
      const left = this.samplesOf(tag) - use;
      if (left > 0) this.#samples.set(tag, left);
      else this.#samples.delete(tag);
    }
    if (run.n === 0) this.#shift();
  }

  /** The head mark leaves (it was reached); returns its id. */
  takeMark(): number {
    const run = this.#runs[0];
    const id = run.mark!;
    this.#shift();
    run.mark = undefined;
    return id;
  }

  /**
   * Queues mark `id` with `back` samples of `tag` after it (0: after all of `tag`
   * queued). Without audio of `tag` queued, it goes after everything queued now.
   */
  mark(tag: string, id: number, back: number): void {
    if (this.#marks >= MAX_MARKS) this.#dropOldestMark();
    const run: Run = { tag, n: 0, mark: id };
    this.#trimMarkOrder();
    this.#markOrder.push(run);
    if (this.samplesOf(tag) === 0) {
      this.#add(this.#runs.length, run);
      return;
    }
    let i = this.#runs.length;
    while (i > 0) {
      const r = this.#runs[i - 1];
      if (r.tag === tag && !r.dead && back === 0) break;
      if (r.tag === tag && r.mark === undefined && !r.dead) {
        if (back < r.n) {
          // The mark falls inside this run: split it there.
          r.n -= back;
          this.#add(i, { tag, n: back });
          break;
        }
        back -= r.n;
        i--;
        if (back === 0) break;
        continue;
      }
      i--;
    }
    this.#add(i, run);
  }

  /** Drops everything. */
  clear(): void {
    this.#runs = [];
    this.#count.clear();
    this.#samples.clear();
    this.#marks = 0;
    this.#dead = 0;
    this.#markOrder = [];
    this.#markHead = 0;
  }

  /**
   * Drops every run of `tag`; returns the sample counts of the runs before, each with
   * whether it was `tag`'s (to rebuild the audio queue without them).
   */
  remove(tag: string | undefined): { n: number; dropped: boolean }[] {
    const layout = this.#runs.map((r) => ({ n: r.n, dropped: r.tag === tag }));
    for (const r of this.#runs) {
      if (r.tag !== tag) continue;
      if (r.dead) this.#dead--;
      else this.#uncount(r);
      // A removed mark is no longer queued: dropping it later must not count it again.
      r.dead = true;
      r.mark = undefined;
    }
    if (tag !== undefined) this.#samples.delete(tag);
    this.#runs = this.#runs.filter((r) => r.tag !== tag);
    return layout;
  }

  #add(i: number, run: Run): void {
    if (i === this.#runs.length) this.#runs.push(run);
    else this.#runs.splice(i, 0, run);
    this.#count.set(run.tag, (this.#count.get(run.tag) ?? 0) + 1);
    if (run.mark !== undefined) this.#marks++;
  }

  #shift(): void {
    this.#uncount(this.#runs.shift()!);
  }

  #uncount(run: Run): void {
    const left = (this.#count.get(run.tag) ?? 1) - 1;
    if (left > 0) this.#count.set(run.tag, left);
    else this.#count.delete(run.tag);
    if (run.mark !== undefined) this.#marks--;
  }

  /**
   * Drops the oldest queued mark: it stays in `#runs` as a dead run that `head` skips
   * (finding its index would cost a walk), and once as many are dead as may live, one
   * pass sweeps them out and joins the runs they split.
   */
  #dropOldestMark(): void {
    this.#trimMarkOrder();
    const run = this.#markOrder[this.#markHead];
    if (!run) return;
    this.#markOrder[this.#markHead++] = undefined;
    this.#uncount(run);
    run.mark = undefined;
    run.dead = true;
    if (++this.#dead < MAX_MARKS) return;
    const kept: Run[] = [];
    for (const r of this.#runs) {
      if (r.dead) continue;
      const last = kept.at(-1);
      if (
        last && last.tag === r.tag && last.mark === undefined &&
        r.mark === undefined
      ) {
        last.n += r.n;
        this.#uncount(r);
      } else kept.push(r);
    }
    this.#runs = kept;
    this.#dead = 0;
  }

  /** Moves `#markHead` past marks no longer queued (placed, removed or dropped). */
  #trimMarkOrder(): void {
    const order = this.#markOrder;
    while (this.#markHead < order.length) {
      const r = order[this.#markHead];
      if (r && r.mark !== undefined && !r.dead) break;
      order[this.#markHead++] = undefined;
    }
    if (this.#markHead >= MAX_MARKS) {
      this.#markOrder = order.slice(this.#markHead);
      this.#markHead = 0;
    }
  }
}
