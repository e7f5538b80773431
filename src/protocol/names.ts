// Name rules shared by the relay and the hosts (protocol.md §3.2, §4.1).

/** A host name as the relay accepts it at enrolment (a label; keys identify hosts). */
export const RELAY_HOST_RE = /^[A-Za-z0-9][A-Za-z0-9._-]{0,62}$/;
/** An owner fingerprint claim at enrolment: unproven, at most 64 safe characters. */
export const OWNER_FP_RE = /^[A-Za-z0-9._-]{0,64}$/;
/** Agent names and the host part of mail addresses. */
export const NAME_RE = /^[a-z0-9][a-z0-9-]{1,39}$/;
