/** The settings (by key) that differ between a stored run and the one asking to continue it, compared as JSON. */
export function changedSettings(previous: Record<string, unknown>, next: Record<string, unknown>): string[] {
  return [...new Set([...Object.keys(previous), ...Object.keys(next)])].filter(
    (key) => JSON.stringify(previous[key]) !== JSON.stringify(next[key]),
  );
}
