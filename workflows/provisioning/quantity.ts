// Kubernetes memory quantities (`4Gi`, `8G`, `512Mi`, `1e9`) in mebibytes, for comparing a node's
// requirement with the `ramMebibytes` a BareMetalHost reports. Pure.
const BINARY: Record<string, number> = {
  Ki: 2 ** 10,
  Mi: 2 ** 20,
  Gi: 2 ** 30,
  Ti: 2 ** 40,
  Pi: 2 ** 50,
};
const DECIMAL: Record<string, number> = { k: 1e3, M: 1e6, G: 1e9, T: 1e12, P: 1e15, '': 1 };
const QUANTITY = /^([0-9]+(?:\.[0-9]+)?)(?:([eE][0-9]+)|(Ki|Mi|Gi|Ti|Pi|k|M|G|T|P))?$/;

/** Mebibytes in `quantity`; undefined when it is not a quantity. */
export function mebibytes(quantity: string): number | undefined {
  const match = QUANTITY.exec(quantity.trim());
  if (!match) return undefined;
  const [, number, exponent, suffix = ''] = match;
  const bytes = exponent
    ? Number(`${number}${exponent}`)
    : Number(number) * (BINARY[suffix] ?? DECIMAL[suffix]!);
  return bytes / 2 ** 20;
}
