/**
 * One contender of the lock race (test/run-lock.test.ts): says it is ready, waits for the
 * start signal, tries to take the run lock once, prints `won` or `lost: <why>`, then holds
 * on (a winner keeps the lock) until told to stop.
 *
 *   node --import tsx test/helpers/lock-racer.ts <run dir> <barrier dir> <index>
 */
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { lockRunDir } from '../../src/store/run-lock.ts';

const [dir, barrier, index] = process.argv.slice(2) as [string, string, string];
const sleep = (ms: number) => Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
writeFileSync(join(barrier, `ready-${index}`), '');
const deadline = Date.now() + 60_000;
while (!existsSync(join(barrier, 'go')) && Date.now() < deadline) sleep(1);
try {
  lockRunDir(dir);
  process.stdout.write('won\n');
} catch (error) {
  process.stdout.write(`lost: ${(error as Error).message}\n`);
}
while (!existsSync(join(barrier, 'stop')) && Date.now() < deadline) sleep(5);
