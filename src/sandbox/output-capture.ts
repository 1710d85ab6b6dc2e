/** Keeps the first `cap` bytes of a command's output, and whether more came (both providers). */
import { Writable } from 'node:stream';

/** Stderr kept from commands whose stdout is data (readFile): enough for an error message. */
export const STDERR_KEPT = 4096;

export class OutputCapture extends Writable {
  private readonly chunks: Buffer[] = [];
  private kept = 0;
  truncated = false;

  constructor(private readonly cap: number) {
    super();
  }

  /** Takes a chunk directly (a child process's `data` events). */
  add(chunk: Buffer): void {
    const room = this.cap - this.kept;
    if (chunk.length > room) this.truncated = true;
    if (room > 0) {
      this.chunks.push(chunk.length > room ? chunk.subarray(0, room) : chunk);
      this.kept += Math.min(room, chunk.length);
    }
  }

  /** As a stream sink (Docker's demultiplexed output). */
  override _write(chunk: Buffer, _encoding: BufferEncoding, done: () => void): void {
    this.add(chunk);
    done();
  }

  bytes(): Buffer {
    return Buffer.concat(this.chunks);
  }
}
