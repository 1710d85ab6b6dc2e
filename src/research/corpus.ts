/**
 * A deep-research set as BrowseComp-Plus publishes it: a corpus of documents
 * (`{docid, text, url?}` per JSONL line; a `title` where the set has one) and queries
 * (`{query_id, query, answer, gold_docs, evidence_docs, negative_docs}`, the decrypted
 * form of its test split; documents inside a query are read by `docid` only). A query may
 * add `answer_aliases`, other spellings of the answer that count as correct.
 */
import { z } from 'zod';
import { InputError } from '../errors.ts';
import { readJsonlRows } from '../util/jsonl-rows.ts';
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

export function loadCorpus(file: string): ResearchDoc[] {
  const seen = new Set<string>();
  return readJsonlRows(file, DocRow, 'a research set').map(({ row: { docid, text, title, url }, line }) => {
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
  return readJsonlRows(file, QueryRow, 'a research set').map(({ row, line }) => {
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
