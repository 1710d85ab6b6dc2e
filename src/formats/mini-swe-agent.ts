/**
 * mini-swe-agent's own format: each turn is a THOUGHT and exactly one fenced command
 * (```bash in v1, ```mswea_bash_command in v2's text mode), answered with
 * `<returncode>` and `<output>`.
 */
import type { TrajectoryAction } from '../schema/trajectory.ts';
import { type NativeFormat, plainOutput, UnparsableAction } from './action-format.ts';
import { bashAction } from './actions.ts';

/** The command inside the `<output>` element the templates write (`<output>\n{{ output.output -}}</output>`), its own last newline kept. */
function recordedOutput(observation: string): string {
  const text = plainOutput(observation);
  return /<output>\n?([\s\S]*?)<\/output>/.exec(text)?.[1] ?? text;
}

/** The fenced blocks of a turn, with their commands. */
export function fencedCommands(text: string, fence: string): RegExpMatchArray[] {
  return [...text.matchAll(new RegExp(`\`\`\`${fence}\\s*\\n([\\s\\S]*?)\\n\`\`\``, 'g'))];
}

function miniSweAgentFormat<S extends string>(scaffold: S, fence: string) {
  return {
    name: `native:${scaffold}` as const,
    scaffold,
    /** The info string of the fence that holds a command. */
    fence,
    stops: ['\n```'],
    keepStop: true,
    recordedOutput,
    parse(text: string): TrajectoryAction {
      const blocks = fencedCommands(text, fence);
      if (blocks.length !== 1) throw new UnparsableAction(`expected exactly one \`\`\`${fence} block, found ${blocks.length}`);
      return bashAction(blocks[0]![0], blocks[0]![1]!);
    },
    rollout: {
      observe: (output: string, exitCode: number) => `\n\n<returncode>${exitCode}</returncode>\n<output>\n${output}</output>\n\n`,
      // The opening fence follows a newline too, so a later step ends at a fence that closes a line.
      nextStops: ['\n```\n'],
    },
  } satisfies NativeFormat & { fence: string };
}

export const miniSweAgentV1 = miniSweAgentFormat('mini-swe-agent-1', 'bash');
export const miniSweAgentV2 = miniSweAgentFormat('mini-swe-agent-1.1', 'mswea_bash_command');
