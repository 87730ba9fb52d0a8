// Literals of Temporal's visibility query language.

/** A string literal, quoted and escaped. */
export function quoted(value: string): string {
  return `'${value.replace(/\\/g, '\\\\').replace(/'/g, "\\'")}'`;
}
