/**
 * One conformance suite every sandbox provider runs (as inspect_ai's providers all run its
 * self_check): the local bubblewrap jail, the Docker sandbox and the Terminal-Bench
 * container, each check asserting what the real provider does. A provider joins by its
 * line in helpers/sandbox-providers.ts; a check holds for every provider, or names why one
 * is spared (`states`: only the task sandboxes record and restore patches).
 */
import { spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { LIMITS } from '../src/sandbox/types.ts';
import { sleep } from '../src/util/timeout.ts';
import { PROVIDERS, type Provider, type Subject } from './helpers/sandbox-providers.ts';

/** A `sleep` no other process on the host runs: the host's process list shows whether it is alive. */
function uniqueSleep(seconds: number): string {
  return `sleep ${seconds}.${randomBytes(4).readUInt32BE()}`;
}

/** Host processes whose command line contains `marker` (container processes included: the engine runs on this host). */
function hostProcesses(marker: string): string[] {
  const ps = spawnSync('ps', ['-eo', 'args='], { encoding: 'utf8' });
  return ps.stdout.split('\n').filter((line) => line.includes(marker));
}

/** Waits up to `ms` for `done`, polling; whether it came. */
async function eventually(done: () => boolean | Promise<boolean>, ms: number): Promise<boolean> {
  const until = performance.now() + ms;
  for (;;) {
    if (await done()) return true;
    if (performance.now() > until) return false;
    await sleep(200);
  }
}

/** What a command wrote is visible here: every path of the tree (`.git` aside) and /tmp, with sizes, modes and the files' digests. */
const SNAPSHOT = [
  "find . /tmp -mindepth 1 -path ./.git -prune -o -printf '%p %s %m\\n' | sort",
  'find . -path ./.git -prune -o -type f -print0 | sort -z | xargs -0r sha256sum',
].join('; ');

interface Check {
  name: string;
  /** Only for providers that record and restore states. */
  needsStates?: boolean;
  run(subject: Subject, provider: Provider): Promise<void>;
}

const CHECKS: Check[] = [
  {
    name: 'exec returns stdout and stderr interleaved, and the exit code, in the workdir',
    async run(s) {
      const r = await s.exec('pwd; echo out; echo err >&2; echo out2; exit 3');
      expect(r).toEqual({ output: `${s.workdir}\nout\nerr\nout2\n`, exitCode: 3, timedOut: false, truncated: false });
    },
  },
  {
    name: 'a command past its timeout is killed, with what it started, and reported',
    async run(s) {
      const marker = uniqueSleep(30);
      const started = performance.now();
      const r = await s.exec(`${marker} & ${marker}; echo never`, 2000);
      expect(performance.now() - started).toBeLessThan(25_000);
      expect(r.timedOut).toBe(true);
      expect([124, 137]).toContain(r.exitCode);
      expect(r.output).not.toContain('never');
      expect(await eventually(() => hostProcesses(marker).length === 0, 10_000), hostProcesses(marker).join('\n')).toBe(true);
      expect((await s.exec('echo still usable')).output).toBe('still usable\n');
    },
  },
  {
    name: 'output past the cap is dropped, and the result says so',
    async run(s) {
      const r = await s.exec(`head -c ${2 * s.outputCap} /dev/zero | tr '\\0' a`);
      expect(r.exitCode).toBe(0);
      expect(r.truncated).toBe(true);
      expect(r.output).toBe('a'.repeat(s.outputCap));
    },
  },
  {
    name: 'the network is off: loopback only, and a connection out fails',
    async run(s) {
      const devices = await s.exec("tail -n +3 /proc/net/dev | cut -d: -f1 | tr -d ' '");
      expect(devices.output).toBe('lo\n');
      const out = await s.exec("timeout 10 bash -c 'echo > /dev/tcp/1.1.1.1/80'");
      expect(out.exitCode).not.toBe(0);
      expect(out.output).toMatch(/Network is unreachable/);
    },
  },
  {
    name: 'commands run as an unprivileged uid with no capabilities and no new privileges',
    async run(s) {
      const r = await s.exec('id -u; id -g; grep -E "^(Cap(Inh|Prm|Eff|Bnd|Amb)|NoNewPrivs):" /proc/self/status');
      const [uid, gid, ...status] = r.output.trim().split('\n');
      expect(Number(uid)).toBeGreaterThan(0);
      expect(Number(gid)).toBeGreaterThan(0);
      expect(status.map((line) => line.replace(/\s+/, ' '))).toEqual([
        'CapInh: 0000000000000000',
        'CapPrm: 0000000000000000',
        'CapEff: 0000000000000000',
        'CapBnd: 0000000000000000',
        'CapAmb: 0000000000000000',
        'NoNewPrivs: 1',
      ]);
    },
  },
  {
    name: 'a file written is read back, byte for byte, and commands see it',
    async run(s) {
      const bytes = Buffer.concat([Buffer.from(Array.from({ length: 256 }, (_, i) => i)), Buffer.from('ünïcode ✓\n')]);
      await s.writeFile('conformance/deep/bytes.bin', bytes);
      expect((await s.readFile(`${s.workdir}/conformance/deep/bytes.bin`)).equals(bytes)).toBe(true);
      expect((await s.exec('wc -c < conformance/deep/bytes.bin')).output.trim()).toBe(String(bytes.length));
      await s.writeFile('/tmp/conformance.txt', 'in /tmp\n');
      expect((await s.readFile('/tmp/conformance.txt')).toString()).toBe('in /tmp\n');
      await s.exec('rm -r conformance /tmp/conformance.txt');
    },
  },
  {
    name: 'writes outside the workdir and /tmp fail',
    async run(s) {
      const outside = ['/conformance', '/usr/bin/conformance', '/etc/conformance', '/var/tmp/conformance', '/root/conformance'];
      const tries = ['conformance-inside', '/tmp/conformance-inside', ...outside]
        .map((p) => `(echo x > ${p}) 2>/dev/null && echo "wrote ${p}"`)
        .join('; ');
      expect((await s.exec(tries)).output).toBe('wrote conformance-inside\nwrote /tmp/conformance-inside\n');
      await expect(s.writeFile('/usr/conformance', 'x')).rejects.toThrow();
      expect((await s.exec(`ls -d ${outside.join(' ')} /usr/conformance 2>/dev/null | wc -l`)).output.trim()).toBe('0');
      await s.exec('rm conformance-inside /tmp/conformance-inside');
    },
  },
  {
    name: 'a fork bomb stops at the process cap, and nothing of it outlives the command',
    async run(s) {
      const name = `conformance-bomb-${randomBytes(4).toString('hex')}`;
      // Children rename themselves (the host's process list shows them), let go of the output and sleep; the parent counts them until fork fails.
      const bomb = `perl -e 'my $n = 0; while ($n < ${2 * LIMITS.processes}) { my $pid = fork; last unless defined $pid; if (!$pid) { $0 = "${name}"; close STDOUT; close STDERR; sleep 600; exit } $n++ } print "$n\\n"'`;
      const r = await s.exec(bomb, 120_000);
      expect(r.exitCode, r.output).toBe(0);
      const forked = Number(r.output.trim());
      expect(forked).toBeGreaterThan(10);
      expect(forked).toBeLessThan(LIMITS.processes);
      expect(await eventually(() => hostProcesses(name).length === 0, 20_000), `${hostProcesses(name).length} left`).toBe(true);
      expect((await s.exec('echo alive')).output).toBe('alive\n');
    },
  },
  {
    name: 'restore brings back the start state: what commands wrote, in the tree and /tmp, is gone',
    async run(s) {
      await s.restore();
      const start = await s.exec(SNAPSHOT);
      expect(start.exitCode, start.output).toBe(0);
      const wrote = await s.exec(
        [
          'f="$(find . -path ./.git -prune -o -type f -print | head -n 1)" && echo changed >> "$f"',
          'echo new > conformance-untracked.txt',
          'mkdir -p locked/deep && touch locked/deep/f && chmod 000 locked/deep locked',
          'echo left > /tmp/conformance-left',
        ].join(' && '),
      );
      expect(wrote.exitCode, wrote.output).toBe(0);
      expect((await s.exec(SNAPSHOT)).output).not.toBe(start.output);
      await s.restore();
      expect((await s.exec(SNAPSHOT)).output).toBe(start.output);
    },
  },
  {
    name: 'restore brings back a recorded state: the tree is the base with its patch',
    needsStates: true,
    async run(s) {
      await s.restore();
      await s.writeFile('conformance-state.txt', 'recorded\n');
      const patch = await s.diff();
      expect(patch).toContain('+++ b/conformance-state.txt');
      await s.restore();
      expect(await s.diff()).toBe('');
      await s.restore(patch);
      expect(await s.diff()).toBe(patch);
      expect((await s.readFile('conformance-state.txt')).toString()).toBe('recorded\n');
      await s.restore();
    },
  },
  {
    name: 'close ends the commands still running and leaves no process or container behind',
    async run(_, provider) {
      const s = await provider.open();
      const marker = uniqueSleep(3599);
      const running = s.exec(marker, 600_000).then(
        () => 'settled',
        () => 'settled',
      );
      expect(await eventually(() => hostProcesses(marker).length > 0, 20_000), 'the command never started').toBe(true);
      expect(await s.containers()).toHaveLength(provider.containers ? 1 : 0);
      await s.close();
      expect(await s.containers()).toEqual([]);
      expect(await eventually(() => hostProcesses(marker).length === 0, 15_000), hostProcesses(marker).join('\n')).toBe(true);
      expect(await Promise.race([running, sleep(30_000).then(() => 'still running')])).toBe('settled');
      await expect(s.exec('true')).rejects.toThrow();
    },
  },
];

for (const provider of PROVIDERS) {
  describe.skipIf(provider.skip)(`sandbox conformance: ${provider.name}`, () => {
    let subject: Subject;
    beforeAll(async () => {
      subject = await provider.open();
    }, 600_000);
    afterAll(async () => {
      await subject?.close();
    });
    for (const check of CHECKS) {
      it.skipIf(check.needsStates && !provider.states)(check.name, () => check.run(subject, provider), 300_000);
    }
  });
}
