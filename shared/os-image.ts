// A pool's effective OS image, rendered as MCO renders it: the pool's base (release) image,
// overridden by the MachineConfigs selected for the pool that set osImageURL, the last by name
// winning (MCO sorts them by name).
export interface OsImageSource {
  /** `base`, or the MachineConfig that set it. */
  from: string;
  image: string;
}

export function effectiveOsImage(
  base: string | undefined,
  configs: Array<{ name: string; osImageURL?: string }>,
): OsImageSource | undefined {
  const overrides = configs
    .filter((c) => c.osImageURL?.trim())
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0));
  const last = overrides[overrides.length - 1];
  if (last) return { from: `MachineConfig ${last.name}`, image: last.osImageURL!.trim() };
  return base ? { from: 'base', image: base } : undefined;
}
