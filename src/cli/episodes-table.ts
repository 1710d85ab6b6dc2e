/** The table `probe asap` prints for any environment: checkpoint, pass@k and ∩@n, then the environment's declared columns. */
import { type EnvironmentDeclaration, type EnvironmentResult, showValue } from '../asap/environment.ts';
import { formatTable, passColumns, TABLE_VALUES } from '../report/table.ts';
import { tableName } from '../report/checkpoint-name.ts';

export function printEpisodesTable<R extends EnvironmentResult>(
  env: EnvironmentDeclaration<R>,
  results: readonly R[],
  runs: number,
  title: string,
): void {
  const pass = passColumns(runs);
  const columns = env.columns.table;
  const headers = ['checkpoint', ...pass.headers, ...columns.map((c) => c.header)];
  process.stderr.write(`\n${title}\n\n`);
  process.stderr.write(
    `${formatTable(
      headers,
      results.map((r) => [tableName(r.checkpoint), ...pass.cells(r), ...columns.map((c) => showValue(c.value(r), c.as, TABLE_VALUES))]),
      headers.map((_, i) => i).slice(1),
    )}\n`,
  );
}
