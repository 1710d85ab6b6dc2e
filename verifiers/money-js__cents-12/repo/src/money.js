export function formatCents(cents) {
  const sign = cents < 0 ? '-' : '';
  const abs = Math.abs(cents);
  const dollars = Math.floor(abs / 100);
  const rest = abs % 100;
  return `${sign}$${dollars}.${rest}`;
}

export function sumCents(amounts) {
  return amounts.reduce((a, b) => a + b, 0);
}
