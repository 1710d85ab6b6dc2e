/**
 * The run lock under real contention: processes that try at the same instant, on a free
 * directory and on one whose holder died. Exactly one may win each race.
 */
import { spawn, spawnSync } from 'node:child_process';
import { existsSync, mkdirSync, readdirSync, readFileSync, writeFileSync } from 'node:fs';
import { hostname } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from '../src/embedded.ts';
import { tempDir } from './helpers/paths.ts';

const RACER = join(REPO_ROOT, 'test', 'helpers', 'lock-racer.ts');
const CONTENDERS = 20;

/** Starts the contenders, lets them go at once, and returns what each said. */
async function race(dir: string): Promise<string[]> {
  const barrier = tempDir('probe-lock-barrier-');
  const children = Array.from({ length: CONTENDERS }, (_, i) => {
    const child = spawn(process.execPath, ['--import', 'tsx', RACER, dir, barrier, String(i)], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    child.stdout.on('data', (d: Buffer) => {
      out += d.toString();
    });
    return { child, said: () => out.trim(), exited: new Promise<void>((resolve) => child.on('exit', () => resolve())) };
  });
  const ready = () => readdirSync(barrier).filter((f) => f.startsWith('ready-')).length;
  for (const deadline = Date.now() + 90_000; ready() < CONTENDERS && Date.now() < deadline; ) await new Promise((r) => setTimeout(r, 20));
  expect(ready()).toBe(CONTENDERS);
  writeFileSync(join(barrier, 'go'), '');
  for (const deadline = Date.now() + 60_000; children.some((c) => c.said() === '') && Date.now() < deadline; )
    await new Promise((r) => setTimeout(r, 20));
  const said = children.map((c) => c.said());
  writeFileSync(join(barrier, 'stop'), '');
  await Promise.all(children.map((c) => c.exited));
  return said;
}

describe('run lock', () => {
  it(`lets exactly one of ${CONTENDERS} processes that start together take a free run directory`, async () => {
    const dir = join(tempDir(), 'run');
    mkdirSync(dir);
    const said = await race(dir);
    expect(said.filter((s) => s === 'won')).toHaveLength(1);
    const lost = said.filter((s) => s !== 'won');
    expect(lost).toHaveLength(CONTENDERS - 1);
    for (const s of lost) expect(s).toMatch(/^lost: .*\.lock: this run is being written by process \d+ on /);
    // Released when the winner exited, and no temporary files left behind.
    expect(readdirSync(dir)).toEqual([]);
  });

  it(`lets exactly one of ${CONTENDERS} processes take over the lock of a holder that died`, async () => {
    const dir = join(tempDir(), 'run');
    mkdirSync(dir);
    const dead = spawnSync(process.execPath, ['-e', 'process.stdout.write(String(process.pid))'], { encoding: 'utf8' });
    const stale = { pid: Number(dead.stdout), host: hostname(), since: '2020-01-01T00:00:00.000Z' };
    writeFileSync(join(dir, '.lock'), JSON.stringify(stale));
    const said = await race(dir);
    expect(said.filter((s) => s === 'won')).toHaveLength(1);
    for (const s of said.filter((x) => x !== 'won')) expect(s).toMatch(/^lost: .*this run is being written by process \d+/);
    expect(existsSync(join(dir, '.lock.break'))).toBe(false);
    expect(readdirSync(dir)).toEqual([]);
  });

  it('refuses a lock whose holder is alive, naming it, and leaves that lock alone', async () => {
    const dir = join(tempDir(), 'run');
    mkdirSync(dir);
    const holder = { pid: process.pid, host: hostname(), since: 'now' };
    writeFileSync(join(dir, '.lock'), JSON.stringify(holder));
    const run = spawnSync(
      process.execPath,
      [
        '--import',
        'tsx',
        '-e',
        `import('${join(REPO_ROOT, 'src/store/run-lock.ts')}').then((m) => { try { m.lockRunDir(${JSON.stringify(dir)}); console.log('won'); } catch (e) { console.log(e.message); } })`,
      ],
      { cwd: REPO_ROOT, encoding: 'utf8' },
    );
    expect(run.stdout).toContain(`this run is being written by process ${process.pid}`);
    expect(JSON.parse(readFileSync(join(dir, '.lock'), 'utf8'))).toEqual(holder);
  });
});
