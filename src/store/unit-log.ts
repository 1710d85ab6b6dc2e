/**
 * The progress of one long job that is not a scoring run (a probe-set build): a crash-safe
 * log whose first line fixes the settings and whose other lines are finished units by id.
 * Rerunning with `resume` reads the finished units back, each checked against the units'
 * schema; a log left by an interrupted job is never silently restarted or mixed with other
 * settings, and one with a line of another shape is bad input, left as it is.
 */
import { z } from 'zod';
import type { ItemMemo } from '../probes/memo.ts';
import { JsonlLog } from './jsonl-log.ts';
import { checkResume } from './resume.ts';

type Line<T> = { header: Record<string, unknown> } | { id: string; value: T };

/** A line of the log: the settings, or a finished unit whose value fits `unit`. */
function lineSchema(unit: z.ZodType): z.ZodType {
  return z.union([z.object({ header: z.record(z.string(), z.unknown()) }), z.object({ id: z.string(), value: unit })]);
}

export class UnitLog<T> implements ItemMemo<T> {
  private readonly done = new Map<string, T>();

  private constructor(private readonly log: JsonlLog<Line<T>>) {}

  /**
   * Opens the log for a job with these settings; `what` names the job in messages; `units`:
   * the schema of a finished unit as the log holds it (which may accept what logs of older
   * versions hold besides `T`).
   */
  static open<T>(file: string, header: Record<string, unknown>, options: { resume: boolean; what: string; units: z.ZodType }): UnitLog<T> {
    const records = { schema: lineSchema(options.units) as z.ZodType<Line<T>>, what: `a line of the ${options.what}'s progress` };
    const log = new JsonlLog<Line<T>>(file, undefined, records);
    const lines = log.read();
    const previous = lines[0] && 'header' in lines[0] ? lines[0].header : undefined;
    const unit = new UnitLog<T>(log);
    const status = checkResume({
      file,
      // A log with a header and no finished unit holds no work: it is started again.
      stored: lines.length > 1 ? previous : undefined,
      settings: header,
      resume: options.resume,
      refusal: `an interrupted ${options.what} left its progress here: pass --resume to continue it, or delete the file to start over`,
      differs: (_field, was, now) =>
        `the interrupted ${options.what} used ${JSON.stringify(was)}, this one ${JSON.stringify(now)}; use the same settings to resume, or delete the file`,
    });
    if (status === 'resumed') {
      for (const line of lines.slice(1)) if ('id' in line) unit.done.set(line.id, line.value);
      return unit;
    }
    log.reset();
    log.append({ header });
    return unit;
  }

  get(id: string): T | undefined {
    return this.done.get(id);
  }

  put(id: string, value: T): void {
    this.log.append({ id, value });
    this.done.set(id, value);
  }

  /** The job is done and its output written: the progress log has served its purpose. */
  remove(): void {
    this.log.reset();
  }
}
