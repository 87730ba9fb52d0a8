// YAML that holds secrets (bootstrap data, kubeconfigs) parsed so that no error quotes it: the
// YAML library's messages and warnings show the offending line, so only an error's kind and
// position are kept, and warnings are not printed.
import { parseDocument } from 'yaml';

/** The parsed value, or `<what> is not valid YAML: <kind> at line L, column C`. */
export function parseSecretYaml(
  text: string,
  what: string,
): { value: unknown } | { error: string } {
  // prettyErrors sets each error's linePos (its message, which quotes the line, is not used).
  const document = parseDocument(text, { prettyErrors: true, logLevel: 'silent' });
  const [first] = document.errors;
  if (first) {
    const at = first.linePos?.[0];
    const where = at ? ` at line ${at.line}, column ${at.col}` : '';
    const kind = first.code.toLowerCase().replaceAll('_', ' ');
    const more = document.errors.length > 1 ? ` (and ${document.errors.length - 1} more)` : '';
    return { error: `${what} is not valid YAML: ${kind}${where}${more}` };
  }
  try {
    return { value: document.toJS({ maxAliasCount: 100 }) };
  } catch {
    return { error: `${what} is not valid YAML: its aliases cannot be resolved` };
  }
}
