// The OTP token's shape, which both sides of the OTP service check: the service (otp-server/)
// when it issues and redeems one, the worker's client (activities/otp-client.ts) when it reads
// the service's answer.

/** 32 random bytes, base64url: safe as-is in a form body, a URL and a file. */
export const TOKEN_PATTERN = /^[A-Za-z0-9_-]{43}$/;
