/**
 * Readers for the two elementary outputs of the fMP4 encoder's ffmpeg (./encoder.ts):
 * H.264 in FLV tags on stdout (length-prefixed NAL units and the AVC configuration
 * record, exactly what an MP4 track holds) and AAC in ADTS frames on a unix socket. Both
 * formats say how long each unit is in its header, so a unit is handed on the moment
 * its last byte arrives — nothing waits for the next one. Both throw on bytes that are
 * not what ffmpeg writes (the encoder treats that as a failure).
 */

/** One coded video frame from the FLV stream. */
export interface FlvVideoFrame {
  /** AVCC: NAL units with 4-byte big-endian lengths. */
  data: Uint8Array;
  key: boolean;
  /** FLV timestamp (ms). */
  timeMs: number;
}

export interface FlvEvents {
  /** The AVCDecoderConfigurationRecord (AVC sequence header). */
  onConfig(avcC: Uint8Array): void;
  onFrame(frame: FlvVideoFrame): void;
}

const FLV_HEADER = 9 + 4; // header + the first PreviousTagSize
const TAG_HEADER = 11;
const MAX_TAG_BYTES = 8 * 1024 * 1024;

/** Accumulates pushed chunks and hands out exact byte counts. */
class ByteQueue {
  #buf = new Uint8Array(0);

  push(chunk: Uint8Array): void {
    if (this.#buf.length === 0) {
      this.#buf = chunk.slice();
      return;
    }
    const next = new Uint8Array(this.#buf.length + chunk.length);
    next.set(this.#buf);
    next.set(chunk, this.#buf.length);
    this.#buf = next;
  }

  get bytes(): Uint8Array {
    return this.#buf;
  }

  /** Drops the first `n` bytes. */
  consume(n: number): void {
    this.#buf = this.#buf.subarray(n);
  }
}

/** Splits ffmpeg's FLV output (video only) into the AVC config and frames. */
export class FlvVideoReader {
  #q = new ByteQueue();
  #headerSeen = false;

  constructor(private readonly events: FlvEvents) {}

  push(chunk: Uint8Array): void {
    this.#q.push(chunk);
    let b = this.#q.bytes;
    if (!this.#headerSeen) {
      if (b.length < FLV_HEADER) return;
      if (b[0] !== 0x46 || b[1] !== 0x4c || b[2] !== 0x56) {
        throw new Error("encoder video output is not FLV");
      }
      this.#q.consume(FLV_HEADER);
      this.#headerSeen = true;
      b = this.#q.bytes;
    }
    while (b.length >= TAG_HEADER) {
      const size = (b[1] << 16) | (b[2] << 8) | b[3];
      if (size > MAX_TAG_BYTES) throw new Error("FLV tag too large");
      const total = TAG_HEADER + size + 4;
      if (b.length < total) return;
      const timeMs = ((b[7] << 24) | (b[4] << 16) | (b[5] << 8) | b[6]) >>> 0;
      const body = b.subarray(TAG_HEADER, TAG_HEADER + size);
      this.#q.consume(total);
      if (b[0] === 9) this.#video(body, timeMs);
      else if (b[0] !== 18) throw new Error(`unexpected FLV tag type ${b[0]}`);
      b = this.#q.bytes;
    }
  }

  #video(body: Uint8Array, timeMs: number): void {
    if (body.length < 5 || (body[0] & 0x0f) !== 7) {
      throw new Error("FLV video tag is not H.264");
    }
    const data = body.slice(5);
    if (body[1] === 0) this.events.onConfig(data);
    else if (body[1] === 1) {
      this.events.onFrame({ data, key: body[0] >> 4 === 1, timeMs });
    }
    // AVCPacketType 2 (end of sequence) carries nothing to play.
  }
}

/** An AAC stream's parameters, from an ADTS header. */
export interface AdtsFormat {
  /** Audio object type (2 = AAC-LC). */
  objectType: number;
  sampleRateIndex: number;
  channels: number;
}

/** The AudioSpecificConfig for `f`. */
export function audioSpecificConfig(f: AdtsFormat): Uint8Array {
  const v = (f.objectType << 11) | (f.sampleRateIndex << 7) | (f.channels << 3);
  return new Uint8Array([v >> 8, v & 0xff]);
}

/** Splits an ADTS stream into raw AAC frames (headers, and CRCs, removed). */
export class AdtsReader {
  #q = new ByteQueue();

  constructor(
    private readonly onFrame: (frame: Uint8Array, format: AdtsFormat) => void,
  ) {}

  push(chunk: Uint8Array): void {
    this.#q.push(chunk);
    let b = this.#q.bytes;
    while (b.length >= 7) {
      if (b[0] !== 0xff || (b[1] & 0xf6) !== 0xf0) {
        throw new Error("encoder audio output is not ADTS");
      }
      const length = ((b[3] & 3) << 11) | (b[4] << 3) | (b[5] >> 5);
      const header = b[1] & 1 ? 7 : 9; // protection_absent, else a 2-byte CRC
      if (length < header) {
        throw new Error("ADTS frame shorter than its header");
      }
      if (b.length < length) return;
      if ((b[6] & 3) !== 0) {
        throw new Error("ADTS frame with several raw blocks");
      }
      const format = {
        objectType: ((b[2] >> 6) & 3) + 1,
        sampleRateIndex: (b[2] >> 2) & 0xf,
        channels: ((b[2] & 1) << 2) | (b[3] >> 6),
      };
      const frame = b.slice(header, length);
      this.#q.consume(length);
      this.onFrame(frame, format);
      b = this.#q.bytes;
    }
  }
}
