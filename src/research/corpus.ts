/**
 * A deep-research set as BrowseComp-Plus publishes it: a corpus of documents
 * (`{docid, text, url?}` per JSONL line; a `title` where the set has one) and queries
 * (`{query_id, query, answer, gold_docs, evidence_docs, negative_docs}`, the decrypted
 * form of its test split; documents inside a query are read by `docid` only). A query may
 * add `answer_aliases`, other spellings of the answer that count as correct.
 */
import { z } from 'zod';
import { describeCause, InputError } from '../errors.ts';
import { MAX_STRING_BYTES, readTextFile } from '../util/safe-tree.ts';
import { UniqueIds } from '../util/unique-ids.ts';

export interface ResearchDoc {
  docid: string;
  text: string;
  title?: string;
  url?: string;
}

export interface ResearchQuery {
  query_id: string;
  query: string;
  answer: string;
  /** Other spellings of the answer that count as correct. */
  aliases: string[];
  /** Documents that hold the answer (BrowseComp-Plus `gold_docs`). */
  gold_docs: string[];
  /** Documents sufficient to reach it (BrowseComp-Plus `evidence_docs`; the gold documents where absent). */
  evidence_docs: string[];
}

const DocRow = z.looseObject({
  docid: z.union([z.string().min(1), z.number()]).transform(String),
  text: z.string(),
  title: z.string().optional(),
  url: z.string().optional(),
});

const DocRef = z.looseObject({ docid: z.union([z.string().min(1), z.number()]).transform(String) });

const QueryRow = z.looseObject({
  query_id: z.union([z.string().min(1), z.number()]).transform(String),
  query: z.string().min(1),
  answer: z.string().min(1),
  answer_aliases: z.array(z.string().min(1)).optional(),
  gold_docs: z.array(DocRef).optional(),
  evidence_docs: z.array(DocRef).optional(),
});

/** The JSON rows of a JSONL file, each checked with `schema`, naming file, line and field on bad input. */
function readRows<T>(file: string, schema: z.ZodType<T>): Array<{ row: T; line: number }> {
  let text: string;
  try {
    // A regular file only (a FIFO would block, a device never end), at most one string's worth.
    text = readTextFile(file, { maxBytes: MAX_STRING_BYTES, what: 'a research set' });
  } catch (error) {
    if (error instanceof InputError) throw error;
    throw new InputError({ file }, `cannot read: ${describeCause(error)}`, { cause: error });
  }
  const rows: Array<{ row: T; line: number }> = [];
  text.split('\n').forEach((raw, index) => {
    if (raw.trim() === '') return;
    const line = index + 1;
    let value: unknown;
    try {
      value = JSON.parse(raw);
    } catch (error) {
      throw new InputError({ file, line }, `not valid JSON: ${describeCause(error)}`, { cause: error });
    }
    const parsed = schema.safeParse(value);
    if (!parsed.success) {
      const issue = parsed.error.issues[0]!;
      throw new InputError({ file, line, field: issue.path.join('.') || undefined }, issue.message);
    }
    rows.push({ row: parsed.data, line });
  });
  if (rows.length === 0) throw new InputError({ file }, 'holds no rows');
  return rows;
}

export function loadCorpus(file: string): ResearchDoc[] {
  const seen = new Set<string>();
  return readRows(file, DocRow).map(({ row: { docid, text, title, url }, line }) => {
    if (seen.has(docid)) throw new InputError({ file, line, field: 'docid' }, `"${docid}" appears twice`);
    seen.add(docid);
    return { docid, text, ...(title ? { title } : {}), ...(url ? { url } : {}) };
  });
}

/** The queries; each document they name must be in the corpus (a gold document missing from it would make a query unanswerable). */
export function loadQueries(file: string, corpus: readonly ResearchDoc[]): ResearchQuery[] {
  const known = new Set(corpus.map((d) => d.docid));
  // Episodes are memoised by query id: a repeated one would be run once and counted twice.
  const queryIds = new UniqueIds('query_id');
  return readRows(file, QueryRow).map(({ row, line }) => {
    queryIds.add(row.query_id, { file, line });
    const gold = (row.gold_docs ?? []).map((d) => d.docid);
    const evidence = (row.evidence_docs ?? row.gold_docs ?? []).map((d) => d.docid);
    for (const [field, ids] of [
      ['gold_docs', gold],
      ['evidence_docs', evidence],
    ] as const) {
      const missing = ids.find((id) => !known.has(id));
      if (missing !== undefined)
        throw new InputError({ file, line, field }, `document "${missing}" is not in the corpus (query ${row.query_id})`);
    }
    return {
      query_id: row.query_id,
      query: row.query,
      answer: row.answer,
      aliases: row.answer_aliases ?? [],
      gold_docs: gold,
      evidence_docs: evidence,
    };
  });
}
