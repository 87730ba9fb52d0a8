// Node IPs from an ISC dhcpd leases file (pure parsing), with the original's own fixture.
import { describe, expect, it } from '@jest/globals';
import { leasedIp } from '../activities/dhcp/leases.js';

/** The fixture of the original's unit and e2e tests (provisioning_controller_test.go). */
const SEED_FIXTURE = `lease 192.168.50.63 {
  starts 4 2019/08/08 22:32:49;
  ends 4 2019/08/08 23:52:49;
  cltt 4 2019/08/08 22:32:49;
  binding state active;
  next binding state free;
  rewind binding state free;
  hardware ethernet 08:00:27:00:ab:2c;
  client-hostname "fake-test-bmh";
}
`;

describe('a dhcpd leases file', () => {
  it("gives the IP of the original's fixture, whatever the MAC's case", () => {
    expect(leasedIp(SEED_FIXTURE, '08:00:27:00:AB:2C')).toEqual({ ip: '192.168.50.63' });
  });

  it('takes the newest lease of a MAC, and only while it is active', () => {
    const renewed = `# dhcpd appends each new state of a lease
lease 10.0.0.5 {
  binding state active;
  hardware ethernet 08:00:27:00:ab:2c;
}
lease 10.0.0.9 {
  binding state active;
  next binding state free;
  hardware ethernet 08:00:27:00:ab:2c;
}
`;
    expect(leasedIp(renewed, '08:00:27:00:ab:2c')).toEqual({ ip: '10.0.0.9' });
    const expired = `${renewed}lease 10.0.0.9 {
  binding state free;
  hardware ethernet 08:00:27:00:ab:2c;
}
`;
    expect(leasedIp(expired, '08:00:27:00:ab:2c')).toEqual({
      missing: 'the latest DHCP lease for MAC 08:00:27:00:ab:2c (10.0.0.9) is free, not active',
    });
    expect(leasedIp(renewed, '08:00:27:00:ab:2d')).toEqual({
      missing: 'no DHCP lease for MAC 08:00:27:00:ab:2d',
    });
  });
});
