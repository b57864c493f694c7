/**
 * Photo avatars in KV under their tenant (DECISIONS 12): a manifest and its chunks
 * (lib/photo/blob.ts) written in one atomic commit with the tenant's avatar count, so a
 * tenant never passes `AVATAR_STORE_MAX_PER_TENANT` and no half-written avatar is ever
 * seen; removing deletes the manifest and every chunk in one commit. Every function takes
 * the tenant: another tenant's avatar reads as missing.
 */
import { ApiError } from "../errors.ts";
import { administers, type Administrator } from "../principal.ts";
import { TENANT_ID_PATTERN } from "../auth/api_keys.ts";
import { ulid } from "../ids.ts";
import { kvTry } from "../kv/store.ts";
import {
  type Framing,
  framingOf,
  isFraming,
  type PhotoAvatar,
} from "../render/photo/types.ts";
import { packPhoto, unpackPhoto } from "./blob.ts";
import { preparePhoto } from "./worker.ts";
import { previewCacheOf } from "./preview_cache.ts";
import { PhotoRefusal } from "./refusal.ts";

/** A photo avatar's id: `ph_` + a ULID. */
export const PHOTO_AVATAR_ID = /^ph_[0-9A-Z]{26}$/;
/** Longest name, in characters. */
export const PHOTO_NAME_MAX = 80;

/** The stored record of one avatar; its pixels are in `chunks` chunk entries. */
export interface PhotoManifest {
  avatar_id: string;
  tenant_id: string;
  name: string;
  /** Epoch ms. */
  created_at: number;
  /**
   * Its framing (absent in one stored before framings: square) and the picture's (and
   * the stream's) size.
   */
  framing?: Framing;
  width: number;
  height: number;
  chunks: number;
  /** Deflated size and SHA-256 of the chunks joined, checked on every load. */
  bytes: number;
  sha256: string;
  /** How its planes were filtered before deflating (lib/photo/blob.ts); absent: not. */
  filter?: "up";
  /** Who stated the pictured person's consent, and when (epoch ms). */
  consent: { by: string; at: number };
}

/** What a listing shows of an avatar (the CLI's `list` prints exactly this). */
export interface PhotoAvatarEntry {
  avatar_id: string;
  name: string;
  created_at: number;
  framing: Framing;
  width: number;
  height: number;
}

/** The listing's entry of a prepared avatar. */
export function photoEntryOf(a: PhotoAvatar): PhotoAvatarEntry {
  return {
    avatar_id: a.avatarId,
    name: a.name,
    created_at: a.createdAt,
    framing: framingOf(a.width, a.height) ?? "square",
    width: a.width,
    height: a.height,
  };
}

/** The listing's entry of a manifest (one stored before framings is square). */
export function photoEntry(m: PhotoManifest): PhotoAvatarEntry {
  return {
    avatar_id: m.avatar_id,
    name: m.name,
    created_at: m.created_at,
    framing: m.framing ?? framingOf(m.width, m.height) ?? "square",
    width: m.width,
    height: m.height,
  };
}

export interface PhotoStoreDeps {
  kv: Deno.Kv;
  now: () => number;
  config: { avatarStoreMaxPerTenant: number };
}

/** `["photo_avatars", tenantId, avatarId]`: the manifest. */
export function photoAvatarKey(tenantId: string, avatarId: string): Deno.KvKey {
  return ["photo_avatars", tenantId, avatarId];
}

/** `["photo_avatar_chunks", tenantId, avatarId, i]`. */
export function photoChunkKey(
  tenantId: string,
  avatarId: string,
  i: number,
): Deno.KvKey {
  return ["photo_avatar_chunks", tenantId, avatarId, i];
}

/** `["photo_avatar_count", tenantId]`: how many avatars the tenant keeps. */
export function photoCountKey(tenantId: string): Deno.KvKey {
  return ["photo_avatar_count", tenantId];
}

export interface AddPhotoInput {
  tenantId: string;
  name: string;
  bytes: Uint8Array;
  /** Who states that the pictured person consented; null: nothing is stored. */
  consentBy: string | null;
  /** The picture's framing, as asked (checked here); `square` when absent. */
  framing?: string;
}

/**
 * Checks, prepares and stores a portrait as `input.tenantId`'s new photo avatar on
 * behalf of `by`. Rejects with `PhotoRefusal` (its cause) and stores nothing when the
 * consent is missing, the name, framing or tenant is invalid, the tenant is at its
 * limit, or the photo is refused (for its framing too: not enough room around the face); 403 `AVTR_AUTH_FORBIDDEN` when `by` does not administer the tenant.
 */
export async function addPhotoAvatar(
  deps: PhotoStoreDeps,
  by: Administrator,
  input: AddPhotoInput,
): Promise<PhotoAvatar> {
  const { tenantId } = input;
  if (!TENANT_ID_PATTERN.test(tenantId)) {
    throw new PhotoRefusal("tenant id is not valid");
  }
  if (!administers(by, tenantId)) {
    throw new ApiError(
      "AVTR_AUTH_FORBIDDEN",
      "Photo avatars of another tenant cannot be added",
    );
  }
  if (!input.consentBy) throw new PhotoRefusal("consent not given");
  const name = input.name.trim();
  if (name.length < 1 || name.length > PHOTO_NAME_MAX || /\p{Cc}/u.test(name)) {
    throw new PhotoRefusal("name must be 1 to 80 printable characters");
  }
  const framing = input.framing ?? "square";
  if (!isFraming(framing)) {
    throw new PhotoRefusal("framing must be square, landscape or portrait");
  }
  const max = deps.config.avatarStoreMaxPerTenant;
  // Checked before the costly preparation, and again in the commit.
  if (await countOf(deps.kv, tenantId).then((c) => c.count >= max)) {
    throw new PhotoRefusal("photo avatar limit reached");
  }
  const createdAt = deps.now();
  const avatarId = `ph_${ulid(createdAt)}`;
  const avatar = await preparePhoto(input.bytes, {
    avatarId,
    tenantId,
    name,
    createdAt,
    framing,
  });
  const { chunks, bytes, sha256, filter } = await packPhoto(avatar);
  const manifest: PhotoManifest = {
    avatar_id: avatarId,
    tenant_id: tenantId,
    name,
    created_at: createdAt,
    framing,
    width: avatar.width,
    height: avatar.height,
    chunks: chunks.length,
    bytes,
    sha256,
    filter,
    consent: { by: input.consentBy, at: createdAt },
  };
  // A concurrent add or remove changes the count: re-read it and try again.
  for (let attempt = 0; attempt < 10; attempt++) {
    const count = await countOf(deps.kv, tenantId);
    if (count.count >= max) {
      throw new PhotoRefusal("photo avatar limit reached");
    }
    const op = deps.kv.atomic()
      .check({ key: photoAvatarKey(tenantId, avatarId), versionstamp: null })
      .check(count.entry)
      .set(photoCountKey(tenantId), count.count + 1)
      .set(photoAvatarKey(tenantId, avatarId), manifest);
    chunks.forEach((c, i) => op.set(photoChunkKey(tenantId, avatarId, i), c));
    const res = await kvTry(op.commit());
    if (res.ok) return avatar;
  }
  throw new ApiError(
    "AVTR_SESSION_STATE_UNAVAILABLE",
    "The photo avatar could not be stored right now",
  );
}

async function countOf(kv: Deno.Kv, tenantId: string) {
  const entry = await kvTry(kv.get<number>(photoCountKey(tenantId)));
  return { entry, count: entry.value ?? 0 };
}

/**
 * `tenantId`'s photo avatars in creation order, as `by` may see them (none of another
 * tenant's for a tenant administrator).
 */
export async function listPhotoAvatars(
  kv: Deno.Kv,
  by: Administrator,
  tenantId: string,
): Promise<PhotoAvatarEntry[]> {
  if (!administers(by, tenantId)) return [];
  return await kvTry(async () => {
    const out: PhotoAvatarEntry[] = [];
    for await (
      const e of kv.list<PhotoManifest>({ prefix: ["photo_avatars", tenantId] })
    ) {
      out.push(photoEntry(e.value));
    }
    return out;
  });
}

/** The manifest of `tenantId`'s avatar `avatarId`, or null (unknown, malformed id). */
export async function getPhotoManifest(
  kv: Deno.Kv,
  tenantId: string,
  avatarId: string,
): Promise<PhotoManifest | null> {
  if (!PHOTO_AVATAR_ID.test(avatarId) || !TENANT_ID_PATTERN.test(tenantId)) {
    return null;
  }
  return (await kvTry(
    kv.get<PhotoManifest>(photoAvatarKey(tenantId, avatarId)),
  )).value;
}

/** The manifest as `by` may see it: null for another tenant's, for a tenant administrator. */
export async function administeredPhotoManifest(
  kv: Deno.Kv,
  by: Administrator,
  tenantId: string,
  avatarId: string,
): Promise<PhotoManifest | null> {
  return administers(by, tenantId)
    ? await getPhotoManifest(kv, tenantId, avatarId)
    : null;
}

/**
 * Removes `tenantId`'s avatar `avatarId` on behalf of `by`: the manifest, every chunk and
 * one from the count, in one commit. False when there is none (or it is another
 * tenant's, for a tenant administrator). Sessions already holding it keep rendering it;
 * this instance's preview of it is forgotten (others find its manifest gone).
 */
export async function removePhotoAvatar(
  kv: Deno.Kv,
  by: Administrator,
  tenantId: string,
  avatarId: string,
): Promise<boolean> {
  if (!administers(by, tenantId)) return false;
  for (let attempt = 0; attempt < 10; attempt++) {
    if (!PHOTO_AVATAR_ID.test(avatarId) || !TENANT_ID_PATTERN.test(tenantId)) {
      return false;
    }
    const [manifest, count] = await kvTry(
      kv.getMany<[PhotoManifest, number]>([
        photoAvatarKey(tenantId, avatarId),
        photoCountKey(tenantId),
      ]),
    );
    if (manifest.value === null) return false;
    const op = kv.atomic().check(manifest).check(count)
      .delete(manifest.key)
      .set(count.key, Math.max(0, (count.value ?? 1) - 1));
    for (let i = 0; i < manifest.value.chunks; i++) {
      op.delete(photoChunkKey(tenantId, avatarId, i));
    }
    if ((await kvTry(op.commit())).ok) {
      previewCacheOf(kv).forget(tenantId, avatarId);
      return true;
    }
  }
  throw new ApiError(
    "AVTR_SESSION_STATE_UNAVAILABLE",
    "The photo avatar could not be removed right now",
  );
}

/** KV's `getMany` reads at most this many keys. */
const GET_MANY_MAX = 10;

/**
 * Reads `tenantId`'s avatar `avatarId` whole from KV: null when there is none, or when
 * it was removed while being read. Throws when the stored bytes fail their checksum.
 */
export async function readPhotoAvatar(
  kv: Deno.Kv,
  tenantId: string,
  avatarId: string,
): Promise<PhotoAvatar | null> {
  const manifest = await getPhotoManifest(kv, tenantId, avatarId);
  if (!manifest) return null;
  const chunks: Uint8Array[] = [];
  for (let i = 0; i < manifest.chunks; i += GET_MANY_MAX) {
    const keys = [];
    for (let k = i; k < Math.min(manifest.chunks, i + GET_MANY_MAX); k++) {
      keys.push(photoChunkKey(tenantId, avatarId, k));
    }
    for (const e of await kvTry(kv.getMany<Uint8Array[]>(keys))) {
      if (e.value === null) return null; // removed meanwhile
      chunks.push(e.value);
    }
  }
  const pixels = await unpackPhoto(chunks, manifest);
  return {
    avatarId,
    tenantId,
    name: manifest.name,
    createdAt: manifest.created_at,
    width: manifest.width,
    height: manifest.height,
    ...pixels,
  };
}
