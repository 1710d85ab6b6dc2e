/** A counting semaphore: at most `limit` holders at once, first come first served. */
export class Semaphore {
  private held = 0;
  private readonly waiting: Array<() => void> = [];
  constructor(private readonly limit: number) {}
  /** Holders and waiters together. */
  get load(): number {
    return this.held + this.waiting.length;
  }
  async acquire(): Promise<void> {
    if (this.held < this.limit) {
      this.held++;
      return;
    }
    await new Promise<void>((resolve) => this.waiting.push(resolve));
  }
  release(): void {
    const next = this.waiting.shift();
    if (next) next();
    else this.held--;
  }
}
