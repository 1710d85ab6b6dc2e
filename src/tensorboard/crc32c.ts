/**
 * CRC-32C (Castagnoli, reflected polynomial 0x82f63b78), which TFRecord framing checks.
 *
 * `crc-32`'s `crc32c` or `@node-rs/crc32` would compute it, but this is twenty lines with
 * a check value (crc32c("123456789") = 0xe3069283, test/tensorboard.test.ts), where a
 * package is a pinned dependency to keep current, and `@node-rs/crc32` a native binary per
 * platform, for the few kilobytes of scalars a watch writes.
 */
const TABLE = (() => {
  const table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0x82f63b78 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
})();

export function crc32c(bytes: Uint8Array): number {
  let crc = 0xffffffff;
  for (const byte of bytes) crc = TABLE[(crc ^ byte) & 0xff]! ^ (crc >>> 8);
  return (crc ^ 0xffffffff) >>> 0;
}
