/**
 * Grading a research answer: normalised exact match against the answer and its aliases
 * (SQuAD-style normalisation: Unicode NFKC, case folded, punctuation and the articles
 * a/an/the removed, whitespace collapsed).
 */
import type { ResearchQuery } from './corpus.ts';

export function normalizeAnswer(text: string): string {
  return text
    .normalize('NFKC')
    .toLowerCase()
    .replace(/[\p{P}\p{S}]+/gu, ' ')
    .replace(/\b(a|an|the)\b/g, ' ')
    .replace(/\s+/g, ' ')
    .trim();
}

/** Whether the answer matches, and which accepted form it matched. */
export function gradeAnswer(
  answer: string,
  query: Pick<ResearchQuery, 'answer' | 'aliases'>,
): { correct: boolean; matched: string | null } {
  const given = normalizeAnswer(answer);
  const matched = [query.answer, ...query.aliases].find((accepted) => normalizeAnswer(accepted) === given && given !== '');
  return { correct: matched !== undefined, matched: matched ?? null };
}
