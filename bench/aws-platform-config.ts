// host-config entries for an AWS platform on the benches' moto EC2 (whose instances boot sshd
// hosts): the same image, type and Secrets everywhere, the rest given.
export function awsPlatformConfig(
  platform: string,
  options: { keyName: string; subnetId: string; maxInstances: number },
): Record<string, string> {
  const cfg = `dynamic.${platform.replace('/', '-')}`;
  return {
    [`${cfg}.type`]: 'aws',
    [`${cfg}.region`]: 'us-east-1',
    [`${cfg}.ami`]: 'ami-760aaa0f',
    [`${cfg}.instance-type`]: 't3.micro',
    [`${cfg}.key-name`]: options.keyName,
    [`${cfg}.aws-secret`]: 'aws-creds',
    [`${cfg}.ssh-secret`]: 'vm-ssh',
    [`${cfg}.subnet-id`]: options.subnetId,
    [`${cfg}.max-instances`]: String(options.maxInstances),
    [`${cfg}.check-interval`]: '1',
  };
}
