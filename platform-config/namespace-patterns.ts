// Namespace patterns, as host-config's `allowed-namespaces` and HOSTFLOW_BAREMETAL_NAMESPACES
// take them: regular expressions, each matching a whole namespace name.

/** Why `source` is not a regular expression, or undefined when it is one. */
export function patternProblem(source: string): string | undefined {
  try {
    new RegExp(source);
    return undefined;
  } catch (err) {
    return (err as Error).message;
  }
}

/** Whether a namespace matches one of the patterns, as a whole name. */
export function namespaceMatcher(sources: string[]): (namespace: string) => boolean {
  const patterns = sources.map((source) => new RegExp(`^(?:${source})$`));
  return (namespace) => patterns.some((pattern) => pattern.test(namespace));
}
