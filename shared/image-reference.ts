// Container image references, by the grammar of distribution/reference (the one registries and
// container tools use), so a reference refused here is one no node could pull either.
const ALNUM = '[a-z0-9]+';
const SEPARATOR = '(?:[._]|__|[-]+)';
const PATH_COMPONENT = `${ALNUM}(?:${SEPARATOR}${ALNUM})*`;
const DOMAIN_COMPONENT = '(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])';
const DOMAIN = `(?:${DOMAIN_COMPONENT}(?:\\.${DOMAIN_COMPONENT})*|\\[[a-fA-F0-9:]+\\])(?::[0-9]+)?`;
const TAG = '[\\w][\\w.-]{0,127}';
const DIGEST = '[A-Za-z][A-Za-z0-9]*(?:[-_+.][A-Za-z][A-Za-z0-9]*)*:[0-9a-fA-F]{32,}';
const REFERENCE = new RegExp(
  `^(?:(${DOMAIN})/)?(${PATH_COMPONENT}(?:/${PATH_COMPONENT})*)(?::(${TAG}))?(?:@(${DIGEST}))?$`,
);
const NAME_MAX = 255;

export interface ImageReference {
  /** Host (and port) of the registry; docker.io when the reference names none. */
  registry: string;
  repository: string;
  tag?: string;
  digest?: string;
}

/** The reference's parts, or why it is not one. */
export function parseImageReference(ref: string): ImageReference | { error: string } {
  const m = REFERENCE.exec(ref);
  if (!m)
    return {
      error: `"${ref}" is not an image reference (registry/repository[:tag][@sha256:digest])`,
    };
  const [, , , tag, digest] = m;
  let domain: string | undefined = m[1];
  let path = m[2]!;
  // As container tools read it: a first component that looks like no host is part of the path.
  if (domain && !/[.:]/.test(domain) && domain !== 'localhost') {
    if (domain !== domain.toLowerCase())
      return { error: `"${ref}": the repository must be lowercase` };
    path = `${domain}/${path}`;
    domain = undefined;
  }
  const name = `${domain ? `${domain}/` : ''}${path}`;
  if (name.length > NAME_MAX)
    return { error: `"${ref}": the name is longer than ${NAME_MAX} characters` };
  if (digest && !digest.startsWith('sha256:')) {
    return { error: `"${ref}": only sha256 digests are supported` };
  }
  if (digest && digest.length !== 'sha256:'.length + 64) {
    return { error: `"${ref}": a sha256 digest has 64 hex digits` };
  }
  return {
    registry: domain ?? 'docker.io',
    repository: path,
    ...(tag ? { tag } : {}),
    ...(digest ? { digest } : {}),
  };
}
