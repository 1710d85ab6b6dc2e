/** Dataset rows from JSONL, JSON and Parquet files, streamed in order with their positions. */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parquetWriteFile } from 'hyparquet-writer';
import { describe, expect, it } from 'vitest';
import { readAllRows, readRows } from '../src/datasets/rows.ts';
import { InputError } from '../src/errors.ts';
import { tempDir } from './helpers/paths.ts';

const ROWS = Array.from({ length: 7 }, (_, i) => ({ instance_id: `repo__pkg-${i}`, resolved: i % 2 === 0, steps: 10_000_000_000 + i }));

describe('dataset rows', () => {
  it('Parquet: every row group in order, 64-bit integers as numbers, only the columns asked for', async () => {
    const file = join(tempDir(), 'rows.parquet');
    parquetWriteFile({
      filename: file,
      rowGroupSize: 3,
      columnData: [
        { name: 'instance_id', data: ROWS.map((r) => r.instance_id), type: 'STRING' },
        { name: 'resolved', data: ROWS.map((r) => r.resolved), type: 'BOOLEAN' },
        { name: 'steps', data: ROWS.map((r) => BigInt(r.steps)), type: 'INT64' },
      ],
    });
    const rows = await readAllRows(file);
    expect(rows.map((r) => r.row)).toEqual(ROWS);
    expect(rows.map((r) => r.index)).toEqual([0, 1, 2, 3, 4, 5, 6]);
    const narrow = [];
    for await (const r of readRows(file, { columns: ['instance_id', 'not-a-column'] })) narrow.push(r.row);
    expect(narrow).toEqual(ROWS.map((r) => ({ instance_id: r.instance_id })));
  });

  it('JSONL: blank lines skipped, a bad line named by its number', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'ok.jsonl'), `${JSON.stringify(ROWS[0])}\n\n${JSON.stringify(ROWS[1])}\n`);
    expect((await readAllRows(join(dir, 'ok.jsonl'))).map((r) => [r.index, r.line])).toEqual([
      [0, 1],
      [1, 3],
    ]);
    writeFileSync(join(dir, 'bad.jsonl'), `${JSON.stringify(ROWS[0])}\n{"instance_id": \n`);
    await expect(readAllRows(join(dir, 'bad.jsonl'))).rejects.toThrow(/bad\.jsonl:2: not valid JSON/);
    writeFileSync(join(dir, 'list.jsonl'), '[1, 2]\n');
    await expect(readAllRows(join(dir, 'list.jsonl'))).rejects.toThrow(InputError);
  });

  it('JSON: a list of rows, or an object holding one', async () => {
    const dir = tempDir();
    writeFileSync(join(dir, 'list.json'), JSON.stringify(ROWS));
    writeFileSync(join(dir, 'wrapped.json'), JSON.stringify({ rows: ROWS }));
    writeFileSync(join(dir, 'one.json'), JSON.stringify(ROWS[2]));
    expect((await readAllRows(join(dir, 'list.json'))).map((r) => r.row)).toEqual(ROWS);
    expect((await readAllRows(join(dir, 'wrapped.json'))).map((r) => r.row)).toEqual(ROWS);
    expect((await readAllRows(join(dir, 'one.json'))).map((r) => r.row)).toEqual([ROWS[2]]);
  });

  it('a file that is not Parquet, or not there, is an input error naming it', async () => {
    const file = join(tempDir(), 'fake.parquet');
    writeFileSync(file, 'PAR1 not really');
    await expect(readAllRows(file)).rejects.toThrow(/fake\.parquet: not a readable Parquet file/);
    expect(() => readRows(join(tempDir(), 'absent.jsonl'))).toThrow(/no such dataset file/);
  });
});
