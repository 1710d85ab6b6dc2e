/**
 * Text inside the md+xml transcript's action elements: what the model wrote is read with
 * its XML entities decoded, and what the harness writes back (a prefix's actions) escapes
 * the two characters that would open or break an element. One pair, so every environment's
 * actions read and write the same bytes.
 */

/** An element's text or attribute value as the model meant it. */
export function fromXmlText(text: string): string {
  return text
    .replace(/&quot;/g, '"')
    .replace(/&lt;/g, '<')
    .replace(/&gt;/g, '>')
    .replace(/&amp;/g, '&');
}

/** Text placed inside an element: `&` and `<` escaped (`>` and quotes may stand in element text). */
export function toXmlText(text: string): string {
  return text.replace(/&/g, '&amp;').replace(/</g, '&lt;');
}
