/**
 * TFRecord framing, the container of a TensorBoard events file: each record is its length
 * (uint64, little-endian), the masked CRC-32C of those 8 bytes, the data, and the masked
 * CRC-32C of the data. A reader that meets a bad checksum stops there, which is how a
 * torn last record (a killed writer) reads as no record at all.
 */
import { crc32c } from './crc32c.ts';

/** TensorFlow's mask: a CRC of data that holds CRCs is not itself a CRC of its own bytes. */
export function maskedCrc(bytes: Uint8Array): number {
  const crc = crc32c(bytes);
  return (((crc >>> 15) | (crc << 17)) + 0xa282ead8) >>> 0;
}

export function tfRecord(data: Uint8Array): Buffer {
  const record = Buffer.alloc(8 + 4 + data.length + 4);
  record.writeBigUInt64LE(BigInt(data.length), 0);
  record.writeUInt32LE(maskedCrc(record.subarray(0, 8)), 8);
  record.set(data, 12);
  record.writeUInt32LE(maskedCrc(data), 12 + data.length);
  return record;
}
