// The host's cloud key (design §8, docs/hosted-relay.md): an Ed25519 key whose public JWK the
// accounts issuer binds into access tokens as `cnf.jkt` (its RFC 7638 thumbprint). At enrolment the
// host key certifies the cloud key (cloud-key-cert) and the cloud key proves it is held by signing
// the enrolment challenge (cloud-key-pop), so a token seen in transit is useless without the cloud
// key's private half.
import { fromBase64Url, toBase64, toBase64Url } from '../base64.ts';
import { canonicalJson } from '../canonical.ts';
import { isPublicKey, KEY_BYTES, verifySignature, type SigningKey } from '../keys.ts';

/** A public Ed25519 key as a JWK, exactly these three members. */
export interface CloudKeyJwk {
  kty: 'OKP';
  crv: 'Ed25519';
  /** base64url (no padding) of the raw 32-byte public key */
  x: string;
}

/** The public JWK of an Ed25519 key given as base64 raw bytes (the host side builds its proof with it). */
export function cloudKeyJwk(publicKey: string): CloudKeyJwk {
  return { kty: 'OKP', crv: 'Ed25519', x: toBase64Url(Buffer.from(publicKey, 'base64')) };
}

/**
 * The cloud key of an enrol proof, or null unless it is exactly `{kty:"OKP", crv:"Ed25519", x}`
 * with `x` a valid Ed25519 public key. Extra members (a private `d` above all) are refused.
 */
export function parseCloudKey(value: unknown): CloudKeyJwk | null {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return null;
  const record = value as Record<string, unknown>;
  if (Object.keys(record).length !== 3 || record['kty'] !== 'OKP' || record['crv'] !== 'Ed25519') return null;
  const raw = fromBase64Url(record['x']);
  if (raw === null || raw.length !== KEY_BYTES || !isPublicKey(toBase64(raw))) return null;
  return { kty: 'OKP', crv: 'Ed25519', x: record['x'] as string };
}

/** RFC 7638 thumbprint (base64url SHA-256), the value tokens carry as `cnf.jkt`; jose loads on first use (only token relays need it). */
export async function cloudKeyThumbprint(jwk: CloudKeyJwk): Promise<string> {
  const { calculateJwkThumbprint } = await import('jose');
  return calculateJwkThumbprint(jwk, 'sha256');
}

/** What the host key signs to certify a cloud key: canonical `{v:1, type:"cloud-key-cert", host_pubkey, jkt}`. */
export function cloudKeyCertText(hostPubkey: string, jkt: string): string {
  return canonicalJson({ v: 1, type: 'cloud-key-cert', host_pubkey: hostPubkey, jkt });
}

/** What the cloud key signs to prove it is held: canonical `{v:1, type:"cloud-key-pop", challenge, host_pubkey}`. */
export function cloudKeyPopText(challenge: string, hostPubkey: string): string {
  return canonicalJson({ v: 1, type: 'cloud-key-pop', challenge, host_pubkey: hostPubkey });
}

export function signCloudKeyCert(hostKey: SigningKey, jkt: string): string {
  return hostKey.sign(cloudKeyCertText(hostKey.publicKey, jkt));
}

export function signCloudKeyPop(cloudKey: SigningKey, challenge: string, hostPubkey: string): string {
  return cloudKey.sign(cloudKeyPopText(challenge, hostPubkey));
}

export function verifyCloudKeyCert(hostPubkey: string, jkt: string, sig: unknown): boolean {
  return verifySignature(hostPubkey, cloudKeyCertText(hostPubkey, jkt), sig);
}

export function verifyCloudKeyPop(jwk: CloudKeyJwk, challenge: string, hostPubkey: string, sig: unknown): boolean {
  const raw = fromBase64Url(jwk.x);
  return raw !== null && verifySignature(toBase64(raw), cloudKeyPopText(challenge, hostPubkey), sig);
}
