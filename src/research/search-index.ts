/**
 * The search tool's index: BM25 over a research corpus (MiniSearch, whose ranking is
 * BM25+, with its default k1 = 1.2, b = 0.7, d = 0.5), titles weighted twice the text. A hit
 * is the document id, its title and a snippet around the first query term found; opening a
 * document reads it a page at a time.
 */
import MiniSearch from 'minisearch';
import type { ResearchDoc } from './corpus.ts';

export interface SearchHit {
  docid: string;
  title: string;
  snippet: string;
  score: number;
}

export interface DocumentPage {
  docid: string;
  title: string;
  /** 1-based. */
  page: number;
  pages: number;
  text: string;
}

/** Characters of a snippet, and of an opened document's page. */
export const SNIPPET_CHARS = 240;
export const PAGE_CHARS = 4000;

/** Hits a search shows unless told otherwise (`--search-k`). */
export const SEARCH_K = 5;

const title = (doc: ResearchDoc) => doc.title ?? doc.docid;

export class ResearchIndex {
  private readonly search_ = new MiniSearch<ResearchDoc & { id: string }>({
    fields: ['title', 'text'],
    idField: 'id',
    searchOptions: { boost: { title: 2 } },
  });
  private readonly docs = new Map<string, ResearchDoc>();

  constructor(corpus: readonly ResearchDoc[]) {
    for (const doc of corpus) this.docs.set(doc.docid, doc);
    this.search_.addAll(corpus.map((doc) => ({ ...doc, id: doc.docid, title: title(doc) })));
  }

  get size(): number {
    return this.docs.size;
  }

  /** The top `k` documents for a query, best first (ties by document id, so a result never depends on insertion order). */
  search(query: string, k = SEARCH_K): SearchHit[] {
    return this.search_
      .search(query)
      .sort((a, b) => b.score - a.score || String(a.id).localeCompare(String(b.id)))
      .slice(0, k)
      .map((result) => {
        const doc = this.docs.get(String(result.id))!;
        return { docid: doc.docid, title: title(doc), snippet: snippet(doc.text, result.terms), score: result.score };
      });
  }

  /** Page `page` (1-based) of a document, or undefined when there is no such document or page. */
  open(docid: string, page = 1): DocumentPage | undefined {
    const doc = this.docs.get(docid);
    if (!doc) return undefined;
    const pages = Math.max(1, Math.ceil(doc.text.length / PAGE_CHARS));
    if (!Number.isInteger(page) || page < 1 || page > pages) return undefined;
    return { docid, title: title(doc), page, pages, text: doc.text.slice((page - 1) * PAGE_CHARS, page * PAGE_CHARS) };
  }

  has(docid: string): boolean {
    return this.docs.has(docid);
  }
}

/** About SNIPPET_CHARS of the text around the first matched term, whitespace collapsed. */
function snippet(text: string, terms: readonly string[]): string {
  const lower = text.toLowerCase();
  const at = Math.min(...terms.map((t) => lower.indexOf(t.toLowerCase())).filter((i) => i >= 0), text.length);
  const start = at >= text.length ? 0 : Math.max(0, at - SNIPPET_CHARS / 3);
  const piece = text
    .slice(start, start + SNIPPET_CHARS)
    .replace(/\s+/g, ' ')
    .trim();
  return `${start > 0 ? '…' : ''}${piece}${start + SNIPPET_CHARS < text.length ? '…' : ''}`;
}
