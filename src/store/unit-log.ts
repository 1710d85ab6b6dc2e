/**
 * The progress of one long job that is not a scoring run (a probe-set build): a crash-safe
 * log whose first line fixes the settings and whose other lines are finished units by id.
 * Rerunning with `resume` reads the finished units back; a log left by an interrupted job is
 * never silently restarted or mixed with other settings.
 */
import { InputError } from '../errors.ts';
import type { ItemMemo } from '../probes/memo.ts';
import { JsonlLog } from './jsonl-log.ts';
import { changedSettings } from './settings-diff.ts';

type Line<T> = { header: Record<string, unknown> } | { id: string; value: T };

export class UnitLog<T> implements ItemMemo<T> {
  private readonly done = new Map<string, T>();

  private constructor(private readonly log: JsonlLog<Line<T>>) {}

  /** Opens the log for a job with these settings; `what` names the job in messages. */
  static open<T>(file: string, header: Record<string, unknown>, options: { resume: boolean; what: string }): UnitLog<T> {
    const log = new JsonlLog<Line<T>>(file);
    const lines = log.read();
    const previous = lines[0] && 'header' in lines[0] ? lines[0].header : undefined;
    const unit = new UnitLog<T>(log);
    if (previous && lines.length > 1) {
      if (!options.resume)
        throw new InputError(
          { file },
          `an interrupted ${options.what} left its progress here: pass --resume to continue it, or delete the file to start over`,
        );
      const [key] = changedSettings(previous, header);
      if (key !== undefined) {
        throw new InputError(
          { file, field: key },
          `the interrupted ${options.what} used ${JSON.stringify(previous[key])}, this one ${JSON.stringify(header[key])}; use the same settings to resume, or delete the file`,
        );
      }
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
