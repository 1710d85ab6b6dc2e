/**
 * Every action format probe knows, by name. A new scaffold is one file in this folder
 * (its `NativeFormat`) plus its line here, and its trajectory importer.
 */
import { InputError, ProbeError } from '../errors.ts';
import type { ProbeItem } from '../schema/probe-item.ts';
import type { ActionFormat, NativeFormat } from './action-format.ts';
import { asapLog, mdXml } from './md-xml-format.ts';
import { miniSweAgentV1, miniSweAgentV2 } from './mini-swe-agent.ts';
import { openHands } from './openhands.ts';
import { r2eGym } from './r2e-gym.ts';
import { sweAgent } from './swe-agent.ts';

const NATIVE_FORMATS = [miniSweAgentV1, miniSweAgentV2, sweAgent, openHands, r2eGym, asapLog] as const;
const ITEM_FORMATS = [mdXml, ...NATIVE_FORMATS] as const;

/** A trajectory format: the scaffold that wrote the trajectory, as its importer names it. */
export type ScaffoldName = (typeof NATIVE_FORMATS)[number]['scaffold'];
export const SCAFFOLDS: readonly ScaffoldName[] = NATIVE_FORMATS.map((f) => f.scaffold);

/** A probe item's `format`. */
export type ItemFormatName = (typeof ITEM_FORMATS)[number]['name'];

export class UnknownFormat extends ProbeError {}

const known = (names: readonly string[]) => names.map((n) => `"${n}"`).join(', ');

/** The format of a probe item's `format` name (`md+xml`, `native:<scaffold>`). */
export function formatOf(name: string): ActionFormat {
  const format = ITEM_FORMATS.find((f) => f.name === name);
  if (!format) throw new UnknownFormat(`unknown action format "${name}" (known: ${known(ITEM_FORMATS.map((f) => f.name))})`);
  return format;
}

/** The format a scaffold writes its own trajectories in. */
export function nativeFormat(scaffold: string): NativeFormat & { readonly name: ItemFormatName; readonly scaffold: ScaffoldName } {
  const format = NATIVE_FORMATS.find((f) => f.scaffold === scaffold);
  if (!format) throw new UnknownFormat(`unknown trajectory format "${scaffold}" (known: ${known(SCAFFOLDS)})`);
  return format;
}

/** `formatOf` for an item, as bad input naming the item when its format is unknown. */
export function itemFormat(item: Pick<ProbeItem, 'id' | 'format' | 'source'>): ActionFormat {
  try {
    return formatOf(item.format);
  } catch (error) {
    if (!(error instanceof UnknownFormat)) throw error;
    throw new InputError({ file: item.source.file, field: 'format' }, `probe ${item.id}: ${error.message}`, { cause: error });
  }
}

/** Action text in a probe item's format back to a runnable action (`formatOf(format).parse`). */
export function parseActionText(text: string, format: string, like?: Parameters<ActionFormat['parse']>[1]) {
  return formatOf(format).parse(text, like);
}
