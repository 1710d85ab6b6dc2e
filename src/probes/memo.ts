/** Per-item results a probe has already finished for one checkpoint, so a resumed run skips them. */
export interface ItemMemo<T> {
  get(id: string): T | undefined;
  /** Called once per newly finished item, as soon as it is finished. */
  put(id: string, value: T): void;
}

/** The item's saved result, or computes it and saves it before returning. */
export async function memoized<T>(memo: ItemMemo<T> | undefined, id: string, compute: () => Promise<T>): Promise<T> {
  const known = memo?.get(id);
  if (known !== undefined) return known;
  const value = await compute();
  memo?.put(id, value);
  return value;
}

/** What a scoring loop is told besides its items: progress, and the memo of a resumable run. */
export interface ItemHooks<T> {
  /** An item is done (its id as the memo knows it): called once per item, computed or read back. */
  onItem?: (id: string) => void;
  memo?: ItemMemo<T>;
}
