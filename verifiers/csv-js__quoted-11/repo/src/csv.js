export function parseLine(line) {
  return line.split(',');
}

export function parseCsv(text) {
  return text.trim().split('\n').map(parseLine);
}
