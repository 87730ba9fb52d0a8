// Bootstrap data as a host without cloud-init can run it: a shell script runs as it is; a
// `#cloud-config` document (what kubeadm's bootstrap provider writes) becomes the script its
// `write_files` and `runcmd` describe, the two modules Cluster API bootstrap data relies on.
import { parse } from 'yaml';

interface WriteFile {
  path?: string;
  content?: string;
  permissions?: string;
  encoding?: string;
  owner?: string;
  append?: boolean;
}

const quote = (arg: string) => `'${arg.replaceAll("'", `'\\''`)}'`;

/** The script to run, or why the data cannot be run here. */
export function bootstrapScript(data: string): { script: string } | { error: string } {
  if (data.startsWith('#!')) return { script: data };
  if (!data.startsWith('#cloud-config')) {
    return {
      error:
        'the bootstrap data is neither a shell script (#!) nor #cloud-config; ' +
        'hosts without cloud-init run only those',
    };
  }
  let doc: { write_files?: WriteFile[]; runcmd?: Array<string | string[]> } | null;
  try {
    doc = parse(data) as typeof doc;
  } catch (err) {
    return { error: `the #cloud-config bootstrap data is not YAML: ${(err as Error).message}` };
  }
  const lines = ['#!/bin/sh', 'set -eu'];
  for (const file of doc?.write_files ?? []) {
    if (!file.path?.startsWith('/')) return { error: 'a write_files entry has no absolute path' };
    const content =
      file.encoding === 'b64' || file.encoding === 'base64'
        ? Buffer.from(file.content ?? '', 'base64').toString('utf8')
        : (file.content ?? '');
    const path = quote(file.path);
    lines.push(`mkdir -p "$(dirname ${path})"`);
    // The content goes through printf's argument, never through the shell's parser.
    lines.push(`printf '%s' ${quote(content)} ${file.append ? '>>' : '>'} ${path}`);
    if (file.permissions) {
      if (!/^0?[0-7]{3,4}$/.test(file.permissions))
        return {
          error: `write_files ${file.path}: permissions "${file.permissions}" is not octal`,
        };
      lines.push(`chmod ${file.permissions} ${path}`);
    }
    if (file.owner) {
      if (!/^[a-z_][a-z0-9_.-]*(:[a-z_][a-z0-9_.-]*)?$/i.test(file.owner))
        return { error: `write_files ${file.path}: owner "${file.owner}" is not user[:group]` };
      lines.push(`chown ${file.owner} ${path}`);
    }
  }
  // As cloud-init: a string runs through sh, a list runs as an argv.
  for (const command of doc?.runcmd ?? []) {
    lines.push(typeof command === 'string' ? command : command.map(String).map(quote).join(' '));
  }
  return { script: `${lines.join('\n')}\n` };
}
