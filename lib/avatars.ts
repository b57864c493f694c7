/**
 * The avatar catalog: the avatars and backgrounds the built-in renderer draws. The create
 * call validates `avatar_config` against it; the renderer reads the drawing parameters.
 */

export interface AvatarDef {
  id: string;
  name: string;
  /** Skin, hair, shirt and accent colours as RGB triples, for the renderer. */
  palette: {
    skin: [number, number, number];
    hair: [number, number, number];
    shirt: [number, number, number];
    eyes: [number, number, number];
  };
  /** Face shape: width/height ratio of the head ellipse. */
  headAspect: number;
  hairStyle: "short" | "long" | "bun";
  /** Frame width and height in pixels (square): 384, or 512 for the `-hd` entries. */
  size: number;
}

export interface BackgroundDef {
  id: string;
  name: string;
  /** Top and bottom colours of the vertical gradient. */
  top: [number, number, number];
  bottom: [number, number, number];
  /**
   * No background: the video carries the avatar's alpha as a stacked frame (DECISIONS
   * 6), the colour drawn over black.
   */
  transparent?: boolean;
}

const BASE: readonly AvatarDef[] = [
  {
    id: "ava",
    name: "Ava",
    palette: {
      skin: [235, 196, 164],
      hair: [92, 58, 38],
      shirt: [46, 98, 168],
      eyes: [60, 90, 60],
    },
    headAspect: 0.78,
    hairStyle: "long",
    size: 384,
  },
  {
    id: "leo",
    name: "Leo",
    palette: {
      skin: [176, 122, 88],
      hair: [30, 24, 20],
      shirt: [180, 64, 52],
      eyes: [50, 36, 24],
    },
    headAspect: 0.84,
    hairStyle: "short",
    size: 384,
  },
  {
    id: "mira",
    name: "Mira",
    palette: {
      skin: [250, 220, 196],
      hair: [196, 150, 70],
      shirt: [60, 140, 110],
      eyes: [40, 80, 140],
    },
    headAspect: 0.76,
    hairStyle: "bun",
    size: 384,
  },
];

/**
 * The catalog: each avatar at 384×384 (`ava`, `leo`, `mira`) and at 512×512 (`ava-hd`,
 * `leo-hd`, `mira-hd`); docs/rendering.md says what each size costs.
 */
export const AVATARS: readonly AvatarDef[] = [
  ...BASE,
  ...BASE.map((a) => ({
    ...a,
    id: `${a.id}-hd`,
    name: `${a.name} HD`,
    size: 512,
  })),
];

export const BACKGROUNDS: readonly BackgroundDef[] = [
  { id: "studio", name: "Studio", top: [44, 52, 66], bottom: [18, 22, 30] },
  {
    id: "office",
    name: "Office",
    top: [206, 214, 222],
    bottom: [150, 160, 172],
  },
  {
    id: "sunset",
    name: "Sunset",
    top: [250, 170, 110],
    bottom: [120, 60, 110],
  },
  {
    id: "transparent",
    name: "Transparent",
    top: [0, 0, 0],
    bottom: [0, 0, 0],
    transparent: true,
  },
];

export const DEFAULT_AVATAR_ID = "ava";
export const DEFAULT_BG_ID = "studio";
/**
 * A session's `bg_id` when its photo avatar keeps the photo's own background (a create
 * without `bg_id`, DECISIONS 12); no catalog entry has it, so no request can name it.
 * The renderer is asked for it as an empty `bgId`.
 */
export const PHOTO_OWN_BG = "photo";

export function findAvatar(id: string): AvatarDef | undefined {
  return AVATARS.find((a) => a.id === id);
}

export function findBackground(id: string): BackgroundDef | undefined {
  return BACKGROUNDS.find((b) => b.id === id);
}

/**
 * How the video of background `bgId` carries alpha: `stacked` for the transparent
 * background (DECISIONS 6), else null.
 */
export function alphaOf(bgId: string): "stacked" | null {
  return findBackground(bgId)?.transparent ? "stacked" : null;
}
