/**
 * Replay options for sandboxes of a kind a user names (`--sandbox`, the image sources):
 * the replay opens each task's sandbox itself, so that a verb passes settings, never a
 * sandbox.
 */
import { openSandbox } from '../sandbox/open.ts';
import type { ImageSources } from '../settings/image-sources.ts';
import type { SandboxKind } from '../settings/sandbox-kinds.ts';
import type { ReplayOptions } from './replay.ts';

export interface SandboxReplaySettings {
  sandbox: SandboxKind;
  imageSources: ImageSources;
  /** Sandboxes verifying states at once. */
  concurrency: number;
  /** Times the final state is verified (a varying verdict marks the task flaky). */
  repeats: number;
  /** Where the repository is placed (`--workdir`), over the trajectory's and the task's. */
  workdir?: string | undefined;
}

export function sandboxReplayOptions(s: SandboxReplaySettings): ReplayOptions {
  return {
    openSandbox: (task) => openSandbox(s.sandbox, task, { imageSources: s.imageSources }),
    sandboxName: s.sandbox,
    concurrency: s.concurrency,
    repeats: s.repeats,
    ...(s.workdir ? { workdir: s.workdir } : {}),
  };
}
