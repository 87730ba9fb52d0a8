// What the engine knows of a cloud provider without calling its API (docs/extending.md, "How to
// add a cloud provider"): how its `dynamic.<cfg>.*` keys parse, which user its images admit,
// where its credentials and user data are, and how a Machine's providerID is written. Pure, so
// the workflows read it too; the adapter that calls the cloud is in activities/cloud/. Each
// provider's spec sits beside its parser and is listed once, in cloud-providers.ts.
import type { ProviderParser } from './config-fields.js';

export interface CloudProviderSpec<Config> {
  /** The cloud's name in messages: "AWS", "IBM Cloud VPC". */
  readonly cloudName: string;
  /** Reads the provider's own `dynamic.<cfg>.*` keys. */
  readonly parse: ProviderParser<Config>;
  /** The admin user of the provider's images, as the original used them: it adds build users. */
  readonly adminUser: string;
  /** The Secret in the engine namespace with the platform's cloud credentials. */
  credentialsSecret(config: Config): string;
  /** The platform's own user data (host-config `user-data`), where the provider takes one. */
  userData(config: Config): string | undefined;
  /** The most bytes of user data the cloud accepts, where it says. */
  readonly maxUserDataBytes?: number;
  /** A Machine's providerID: `<this><zone>/<id>`, as the cloud's Cluster API provider writes it. */
  readonly providerIdPrefix: string;
}
