/** Why a portrait was not turned into a photo avatar (DECISIONS 12). */

/** Each refusal's cause, worded as DECISIONS 12 states it; it is the error's message. */
export type PhotoRefusalCause =
  | "not a JPEG or PNG"
  | "larger than 8 MiB"
  | "larger than 4096 px"
  | "corrupted image"
  | "no face found"
  | "more than one face"
  | "face too small"
  | "head turned too far"
  | "head tilted too far"
  | "mouth open too wide"
  | "not enough room around the face for landscape"
  | "not enough room around the face for portrait"
  | "framing must be square, landscape or portrait"
  | "photo too detailed to store in this framing"
  | "consent not given"
  | "name must be 1 to 80 printable characters"
  | "tenant id is not valid"
  | "photo avatar limit reached"
  | "busy preparing other photos, try again"
  | "photo could not be prepared";

/**
 * A portrait refused, with its cause. `retryable` only for `busy…`: the same photo may
 * pass once the process's face-model queue has room.
 */
export class PhotoRefusal extends Error {
  override readonly name = "PhotoRefusal";
  readonly retryable: boolean;

  constructor(readonly reason: PhotoRefusalCause) {
    super(reason);
    this.retryable = reason === "busy preparing other photos, try again";
  }
}
