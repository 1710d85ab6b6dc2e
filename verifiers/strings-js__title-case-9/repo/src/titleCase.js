const SMALL_WORDS = new Set(['a', 'an', 'and', 'of', 'the', 'to']);

export function titleCase(text) {
  return text
    .split(' ')
    .map((word, i) => (i > 0 && SMALL_WORDS.has(word) ? word : word[0].toUpperCase() + word.slice(1)))
    .join(' ');
}
