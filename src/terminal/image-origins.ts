/**
 * Where each task's images came from, as lines after a table: the tasks built on the Debian
 * stand-in (a different environment from the author's, with why) and the images pulled,
 * with the digest their registry served.
 */
import type { BaseImage } from '../sandbox/registry.ts';

export interface TaskImageOrigin {
  task: string;
  notes: readonly string[];
  base_images: readonly BaseImage[];
}

export function imageOriginLines(tasks: readonly TaskImageOrigin[]): string {
  let text = '';
  const standIns = tasks.filter((t) => t.notes.length > 0);
  if (standIns.length) text += `\nBuilt on the stand-in: ${standIns.map((t) => `${t.task}: ${t.notes.join('; ')}`).join(' · ')}\n`;
  const pulled = [...new Map(tasks.flatMap((t) => t.base_images.filter((b) => b.origin === 'pulled')).map((b) => [b.name, b])).values()];
  if (pulled.length)
    text += `\nPulled: ${pulled.map((b) => `${b.name} from ${b.pulled_from} (${b.digests[0] ?? 'no digest'})`).join(' · ')}\n`;
  return text;
}
