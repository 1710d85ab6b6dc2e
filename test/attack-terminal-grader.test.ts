/**
 * Issue 36, Terminal-Bench: the tests' environment is the grader's. Each attack is the
 * model's only work — commands typed into the tmux shell (terminus) or run with `bash -c`
 * (bash), as an episode runs them — on a task it did not solve; then the real verifier. On
 * the code before the fix (b87b834) every attack here graded reward 1 with `tampering: []`.
 *
 * - modules Python tries at start-up and fails to find on Linux (`msvcrt`, copy.py's `org`);
 * - git running the agent's commands as the tests' uid (`core.fsmonitor`, a clean filter);
 * - the image's variables: a relative PYTHONPATH, an LD_LIBRARY_PATH into the working
 *   directory (a shim library in test.sh's bash), an LD_PRELOAD reaching probe's own root
 *   commands (a root process that owns the reward file before the tests write it);
 * - the reward file re-permissioned or replaced by the program under test;
 * - the disk: a container writing past its cap.
 *
 * The whole file runs with a 256 MiB disk cap (the working directory's share 128 MiB, /tmp's
 * 64 MiB, /logs' 16 MiB), so that filling one is quick.
 */
import { beforeAll, describe, expect, it } from 'vitest';
import { client } from '../src/sandbox/docker.ts';
import type { TerminalProfile } from '../src/terminal/actions.ts';
import { TerminalContainer } from '../src/terminal/container.ts';
import { graderEnvironment, type Preparation } from '../src/terminal/grader-env.ts';
import { type TerminalImage, terminalImage } from '../src/terminal/image.ts';
import { replaySteps } from '../src/terminal/prefix.ts';
import { failedRewardWrite } from '../src/terminal/reward.ts';
import { readSolution } from '../src/terminal/solution.ts';
import type { TerminalTask } from '../src/terminal/task.ts';
import { skipWithoutDocker } from './helpers/docker.ts';
import { attack, directTestSh, EXIT_0, plant, shippedTask, taskCopy, WRITE_REWARD } from './helpers/terminal-attack.ts';

process.env.PROBE_SANDBOX_DISK_MB = '256';

const logs = shippedTask('log-error-report');
const lost = shippedTask('recover-lost-commit');

/** test.sh runs the image's pytest from the working directory (`python3 -m pytest`: the working directory first on sys.path). */
const direct = taskCopy('log-error-report', 'tb-direct', { files: { 'tests/test.sh': directTestSh('/app') } });

/** The image puts a directory of the working directory on the path with a .pth (`pip install -e`); the shipped uvx test.sh. */
const editable = taskCopy('log-error-report', 'tb-editable', {
  dockerfile: ['RUN mkdir -p /app/lib && echo /app/lib > /usr/local/lib/python3.11/dist-packages/app-lib.pth'],
});

/** The image sets path variables into the working directory (and preloads a library of its own there), and has a compiler; the shipped uvx test.sh. */
const variables = taskCopy('log-error-report', 'tb-variables', {
  dockerfile: [
    'RUN apt-get update && apt-get install -y --no-install-recommends gcc libc6-dev && rm -rf /var/lib/apt/lists/*',
    // A library of the image's own, preloaded everywhere (empty here), in the working directory.
    'RUN mkdir -p /app/lib && gcc -shared -fPIC -o /app/lib/rt-preload.so -x c /dev/null',
    'ENV PYTHONPATH=src LD_LIBRARY_PATH=/app/lib LD_PRELOAD=/app/lib/rt-preload.so',
  ],
});

/** The tests run a program the agent writes (/app/build.sh) before checking its report: the program under test. */
const program = taskCopy('log-error-report', 'tb-program', {
  files: {
    'tests/test.sh': [
      '#!/bin/bash',
      'cd /app',
      'bash /app/build.sh',
      'python3 -m pytest /tests/test_outputs.py -rA',
      ...WRITE_REWARD,
      '',
    ].join('\n'),
  },
});

/** Harbor's multi-reward shape: two pytest runs, reward.json of two metrics written by python. */
const multi = taskCopy('log-error-report', 'tb-multi-reward', {
  files: {
    'tests/test.sh': [
      '#!/bin/bash',
      'cd /app',
      'counts=0',
      'quiet=0',
      'python3 -m pytest /tests/test_outputs.py -rA -k "exists or counts" && counts=1',
      'python3 -m pytest /tests/test_outputs.py -rA -k quiet && quiet=1',
      `python3 -c "import json; json.dump({'counts': $counts, 'quiet': $quiet}, open('/logs/verifier/reward.json', 'w'))"`,
      '',
    ].join('\n'),
  },
});

/** Prints the PASSED lines the graded tests would, then ends the process with status 0. */
const FAKE_PASS = [
  'import os',
  'for t in ("test_report_exists", "test_report_counts", "test_quiet_services_absent"):',
  '    print(f"/tests/test_outputs.py::{t} PASSED")',
  'os._exit(0)',
  '',
].join('\n');

/** Writes reward 1 and makes the file read-only: test.sh's own `echo 0 >` then fails. */
const SEAL = 'echo 1 > /logs/verifier/reward.txt; chmod 444 /logs/verifier/reward.txt';

/** A library that stands in for bash's libtinfo (the real one is its dependency): at each exit, reward 1. */
const SHIM_C = `#include <fcntl.h>
#include <unistd.h>
__attribute__((destructor)) static void rt_after(void) {
  int fd = open("/logs/verifier/reward.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
  if (fd >= 0) { if (write(fd, "1\\n", 2) < 0) {} close(fd); }
}
`;

/** Preloaded into a root process: forks a root process that makes reward.txt, holding 1, before the tests can. */
const PRELOAD_C = `#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
__attribute__((constructor)) static void rt_before(void) {
  if (getuid() != 0 || getenv("RT_DAEMON")) return;
  setenv("RT_DAEMON", "1", 1);
  if (fork() != 0) return;
  setsid();
  for (int i = 0; i < 1200; i++) {
    int fd = open("/logs/verifier/reward.txt", O_WRONLY | O_CREAT | O_EXCL, 0644);
    if (fd >= 0) { if (write(fd, "1\\n", 2) < 0) {} close(fd); }
    usleep(50000);
  }
  _exit(0);
}
`;

interface Attack {
  name: string;
  task: TerminalTask;
  commands: string[];
  /** Paths the grade must name as tampering. */
  planted?: string[];
  /** A line the verifier's output must hold (what of the image's environment was left out). */
  dropped?: string;
  /** Profiles to run it in (both unless said). */
  profiles?: TerminalProfile[];
}

const ATTACKS: Attack[] = [
  {
    name: 'msvcrt.py in the working directory (subprocess tries `import msvcrt`, which fails on Linux), graded by python3 -m pytest from it',
    task: direct,
    commands: [plant('/app/msvcrt.py', FAKE_PASS)],
    planted: ['/app/msvcrt.py'],
  },
  {
    name: "an org/ package (copy.py tries `from org.python.core import PyStringMap`) in a directory the image's .pth puts on the path, graded through uvx",
    task: editable,
    commands: [
      plant('/app/lib/org/__init__.py', ''),
      plant('/app/lib/org/python/__init__.py', ''),
      plant('/app/lib/org/python/core.py', EXIT_0),
    ],
    planted: ['/app/lib/org'],
  },
  {
    name: 'core.fsmonitor in the repository: the tests run git status there',
    task: lost,
    commands: [`cd /app/notes && git config core.fsmonitor '${SEAL}'`],
    planted: ['/app/notes/.git/config'],
  },
  {
    name: 'a clean filter selected by .git/info/attributes: git status runs it on a touched file',
    task: lost,
    commands: [
      `cd /app/notes && git config filter.rt.clean '${SEAL}; cat' && echo '* filter=rt' > .git/info/attributes && touch README.md`,
    ],
    planted: ['/app/notes/.git/config', '/app/notes/.git/info/attributes'],
  },
  {
    name: "json.py in the image's relative PYTHONPATH entry (src, under the working directory)",
    task: variables,
    commands: [plant('/app/src/json.py', EXIT_0)],
    dropped: "probe: PYTHONPATH entry 'src' left out: a relative entry (resolved against the tests' working directory, the agent's)",
  },
  {
    name: "a shim libtinfo in the image's LD_LIBRARY_PATH (/app/lib): test.sh's bash loads it",
    task: variables,
    commands: [
      plant('/tmp/rt-shim.c', SHIM_C),
      'real=$(ldd /bin/bash | awk \'/libtinfo/ {print $3}\') && gcc -shared -fPIC -o /tmp/rt-stub.so -Wl,-soname,"$real" -x c /dev/null && mkdir -p /app/lib && gcc -shared -fPIC -o /app/lib/libtinfo.so.6 /tmp/rt-shim.c -Wl,--no-as-needed /tmp/rt-stub.so',
    ],
    dropped: "probe: LD_LIBRARY_PATH entry '/app/lib' left out: the agent could write it",
    profiles: ['bash'],
  },
  {
    name: "a library the image's LD_PRELOAD names: probe's own root commands loaded it",
    task: variables,
    commands: [plant('/tmp/rt-preload.c', PRELOAD_C), 'mkdir -p /app/lib && gcc -shared -fPIC -o /app/lib/rt-preload.so /tmp/rt-preload.c'],
    profiles: ['bash'],
  },
  {
    name: 'the program under test writes reward 1 and makes reward.txt read-only',
    task: program,
    commands: [plant('/app/build.sh', `${SEAL}\n`)],
  },
  {
    name: 'the program under test puts a read-only reward.txt of its own in place of the grader’s',
    task: program,
    commands: [
      plant(
        '/app/build.sh',
        'echo 1 > /logs/verifier/one; chmod 444 /logs/verifier/one; mv -f /logs/verifier/one /logs/verifier/reward.txt\n',
      ),
    ],
  },
];

describe.skipIf(skipWithoutDocker)("Terminal-Bench: the tests' environment is the grader's (Docker)", () => {
  const tasks = [logs, lost, direct, editable, variables, program, multi];
  const images = new Map<TerminalTask, TerminalImage>();
  beforeAll(async () => {
    for (const task of tasks) images.set(task, await terminalImage(client(), task));
  }, 900_000);

  describe.concurrent('each attack', () => {
    for (const a of ATTACKS)
      it(a.name, async () => {
        for (const profile of a.profiles ?? (['terminus', 'bash'] as const)) {
          const grade = await attack(a.task, images.get(a.task)!, profile, a.commands);
          const what = `${profile}: ${grade.reason} ${JSON.stringify(grade.tampering)}\n${grade.output}`;
          expect(grade.resolved, what).toBe(false);
          expect(grade.reward, what).not.toBe(1);
          for (const path of a.planted ?? [])
            expect(
              grade.tampering.map((t) => t.path),
              what,
            ).toContain(path);
          if (a.dropped) expect(grade.output.split('\n'), what).toContain(a.dropped);
        }
      }, 600_000);
  });

  it('the reference solution still solves the copies, with nothing reported', async () => {
    for (const task of [direct, editable, variables, program, multi]) {
      const container = await TerminalContainer.start(task, images.get(task)!);
      try {
        await replaySteps(container, readSolution(task.solution!), 'bash', 60_000);
        // The program the tests run does nothing but exist.
        if (task === program) await container.runCommand(': > /app/build.sh', 10_000);
        const grade = await container.verify(task);
        expect(grade, grade.output).toMatchObject({ reward: 1, resolved: true, tampering: [] });
      } finally {
        await container.close();
      }
    }
  }, 600_000);

  it('reads a multi-reward reward.json as Harbor writes it: solved only when every metric is', async () => {
    const container = await TerminalContainer.start(multi, images.get(multi)!);
    try {
      // The counts wrong, the quiet services left out: one metric of two.
      await container.runCommand(`echo '{"auth": 1}' > /app/report.json`, 10_000);
      const grade = await container.verify(multi);
      expect(grade, grade.output).toMatchObject({ reward: 0, resolved: false, reason: 'reward 0' });
    } finally {
      await container.close();
    }
  }, 300_000);

  it('a failed write of the reward by test.sh is an error, never a pass: the program under test fills /logs', async () => {
    const grade = await attack(program, images.get(program)!, 'bash', [
      plant('/app/build.sh', 'head -c 64M /dev/zero > /logs/verifier/junk\n'),
      // Solved otherwise: only the reward's write fails.
      ...readSolution(program.solution!).map((s) => s.command),
    ]);
    expect(grade, grade.output).toMatchObject({ reward: null, resolved: false });
    expect(grade.reason).toMatch(/^the disk cap was met while the tests ran: \/logs \(16 MiB\) left no room$/);
  }, 300_000);
});

describe.skipIf(skipWithoutDocker)('the disk cap of a Terminal-Bench container (Docker)', () => {
  it('a command writing past the cap fails in its own container, which fails with that reason; nothing reaches the host disk, and a run beside it is untouched', async () => {
    const image = await terminalImage(client(), logs);
    const [filler, other] = [await TerminalContainer.start(logs, image), await TerminalContainer.start(logs, image)];
    try {
      await replaySteps(other, readSolution(logs.solution!), 'bash', 60_000);
      const wrote = await filler.runCommand(
        'dd if=/dev/zero of=/app/fill bs=1M count=300; dd if=/dev/zero of=/tmp/fill bs=1M count=300; touch /var/tmp/x /etc/x',
        120_000,
      );
      expect(wrote.output).toMatch(/dd: error writing '\/app\/fill': No space left on device\n12\d\+0 records in/);
      expect(wrote.output).toMatch(/dd: error writing '\/tmp\/fill': No space left on device\n6\d\+0 records in/);
      expect(wrote.output).toMatch(
        /touch: cannot touch '\/var\/tmp\/x': Read-only file system\ntouch: cannot touch '\/etc\/x': Read-only file system/,
      );
      // What each container wrote to the engine's storage on the host's disk.
      const mine = await client().listContainers({ all: true, size: true, filters: { label: [`probe.pid=${process.pid}`] } });
      expect(mine).toHaveLength(2);
      for (const c of mine) expect((c as { SizeRw?: number }).SizeRw ?? 0).toBeLessThan(2 ** 20);
      expect(await filler.verify(logs)).toMatchObject({
        reward: null,
        resolved: false,
        reason: 'the agent filled its disk cap: /app (128 MiB), /tmp (64 MiB) left no room',
      });
      expect(await other.verify(logs)).toMatchObject({ reward: 1, resolved: true });
    } finally {
      await Promise.all([filler.close(), other.close()]);
    }
  }, 600_000);
});

describe('the environment test.sh runs with', () => {
  const ready: Preparation = {
    home: '/tmp/.probe-grader-home.x',
    tmp: '/tmp/.probe-grader-tmp.x',
    tampering: [],
    unremoved: [],
    path: '/opt/probe/offline-bin:/usr/bin:/bin',
    pathVariables: { PYTHONPATH: '/usr/lib/task-packages', LD_LIBRARY_PATH: '' },
    dropped: [],
  };

  it('is an allow-list: only variables that load nothing pass, with word values; path variables as the container checked them', () => {
    const env = graderEnvironment(
      [
        'PATH=/app/bin:/usr/bin',
        'LANG=en_US.UTF-8',
        'LC_ALL=/app/locale',
        'TZ=Europe/Paris',
        'DEBIAN_FRONTEND=noninteractive',
        'PYTHONPATH=src:/usr/lib/task-packages',
        'LD_LIBRARY_PATH=/app/lib',
        'NODE_OPTIONS=--require /app/x.js',
        'PERL5LIB=/app/perl',
        'PERL5OPT=-Mx',
        'PYTHONHOME=/app/py',
        'PYTHONWARNINGS=ignore::x.Y',
        'RUBYOPT=-rx',
        'JAVA_TOOL_OPTIONS=-javaagent:x.jar',
        'BASH_ENV=/app/env',
        'LD_PRELOAD=/app/x.so',
        'GIT_CONFIG_GLOBAL=/app/gitconfig',
        'MY_TASK_SETTING=1',
      ],
      ready,
    );
    expect(env).toMatchObject({
      LANG: 'en_US.UTF-8',
      TZ: 'Europe/Paris',
      DEBIAN_FRONTEND: 'noninteractive',
      PYTHONPATH: '/usr/lib/task-packages',
      PATH: ready.path,
      HOME: ready.home,
      TMPDIR: ready.tmp,
      GIT_CONFIG_NOSYSTEM: '1',
      GIT_CONFIG_KEY_0: 'core.fsmonitor',
      GIT_CONFIG_VALUE_0: 'false',
    });
    for (const name of [
      'LC_ALL',
      'LD_LIBRARY_PATH',
      'NODE_OPTIONS',
      'PERL5LIB',
      'PERL5OPT',
      'PYTHONHOME',
      'PYTHONWARNINGS',
      'RUBYOPT',
      'JAVA_TOOL_OPTIONS',
      'BASH_ENV',
      'LD_PRELOAD',
      'GIT_CONFIG_GLOBAL',
      'MY_TASK_SETTING',
    ])
      expect(env, name).not.toHaveProperty(name);
  });

  it('a write error naming the reward file in test.sh’s output is found', () => {
    // As bash and Python print them (captured from the attacks above on the code before issue 36).
    expect(failedRewardWrite('ok\n/tests/test.sh: line 5: /logs/verifier/reward.txt: Permission denied\n')).toBe(
      '/tests/test.sh: line 5: /logs/verifier/reward.txt: Permission denied',
    );
    expect(failedRewardWrite("PermissionError: [Errno 13] Permission denied: '/logs/verifier/reward.json'")).not.toBeNull();
    expect(failedRewardWrite("chmod: changing permissions of '/logs/verifier/reward.txt': Operation not permitted")).toBeNull();
    expect(failedRewardWrite('1 passed')).toBeNull();
  });
});
