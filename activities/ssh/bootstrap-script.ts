// Bootstrap data as a host without cloud-init can run it: a shell script runs as it is; a
// `#cloud-config` document (what kubeadm's bootstrap provider writes) becomes the script its
// `write_files` and `runcmd` describe, the two modules Cluster API bootstrap data relies on.
// The data holds join tokens and keys, so no error here quotes any of it: a problem is named by
// its position (line, column, entry index) and kind only.
import { parseSecretYaml } from '../../shared/secret-yaml.js';

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
  const parsed = parseCloudConfig(data);
  if ('error' in parsed) return parsed;
  const doc = parsed.doc;
  const lines = ['#!/bin/sh', 'set -eu'];
  for (const [index, file] of (doc.write_files ?? []).entries()) {
    const entry = `write_files[${index}]`;
    if (typeof file !== 'object' || file === null)
      return { error: `${entry} is not a mapping (path, content, ...)` };
    if (typeof file.path !== 'string' || !file.path.startsWith('/'))
      return { error: `${entry} has no absolute path` };
    if (file.content !== undefined && typeof file.content !== 'string')
      return { error: `${entry}: content is not a string` };
    const content =
      file.encoding === 'b64' || file.encoding === 'base64'
        ? Buffer.from(file.content ?? '', 'base64').toString('utf8')
        : (file.content ?? '');
    const path = quote(file.path);
    lines.push(`mkdir -p "$(dirname ${path})"`);
    // The content goes through printf's argument, never through the shell's parser.
    lines.push(`printf '%s' ${quote(content)} ${file.append ? '>>' : '>'} ${path}`);
    if (file.permissions) {
      if (!/^0?[0-7]{3,4}$/.test(String(file.permissions)))
        return { error: `${entry}: permissions is not octal (e.g. "0600")` };
      lines.push(`chmod ${file.permissions} ${path}`);
    }
    if (file.owner) {
      if (!/^[a-z_][a-z0-9_.-]*(:[a-z_][a-z0-9_.-]*)?$/i.test(String(file.owner)))
        return { error: `${entry}: owner is not user[:group]` };
      lines.push(`chown ${file.owner} ${path}`);
    }
  }
  // As cloud-init: a string runs through sh, a list runs as an argv.
  for (const [index, command] of (doc.runcmd ?? []).entries()) {
    if (typeof command === 'string') lines.push(command);
    else if (Array.isArray(command)) lines.push(command.map(String).map(quote).join(' '));
    else return { error: `runcmd[${index}] is neither a string nor a list` };
  }
  return { script: `${lines.join('\n')}\n` };
}

interface CloudConfig {
  write_files?: WriteFile[];
  runcmd?: unknown[];
}

/** The document, or what is wrong with it (never quoting it). */
function parseCloudConfig(data: string): { doc: CloudConfig } | { error: string } {
  const parsed = parseSecretYaml(data, 'the #cloud-config bootstrap data');
  if ('error' in parsed) return parsed;
  const doc = parsed.value;
  if (doc === null || doc === undefined) return { doc: {} };
  if (typeof doc !== 'object' || Array.isArray(doc))
    return { error: 'the #cloud-config bootstrap data is not a YAML mapping' };
  const config = doc as Record<string, unknown>;
  for (const key of ['write_files', 'runcmd'] as const)
    if (config[key] !== undefined && config[key] !== null && !Array.isArray(config[key]))
      return { error: `the #cloud-config key ${key} is not a list` };
  return {
    doc: {
      write_files: (config.write_files ?? undefined) as WriteFile[] | undefined,
      runcmd: (config.runcmd ?? undefined) as unknown[] | undefined,
    },
  };
}
