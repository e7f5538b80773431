// Who may enrol (design §8): the relay asks an EnrolmentAuthority, and stores its answer with the
// enrolment. Self-hosted relays use the host-key challenge; a hosted relay plugs in account tokens.

export interface EnrolmentRequest {
  host_name: string;
  host_pubkey: string;
  owner_fp: string;
  /** the enrol body's `proof`, whatever the authority needs (absent for the host-key challenge) */
  proof: unknown;
  /** the challenge this enrolment answers (an authority may bind a proof to it) */
  challenge: string;
}

/** A hosted relay's binding of the enrolling host key to its certified cloud key (design §8). */
export interface CloudKeyBinding {
  /** RFC 7638 thumbprint of the cloud key */
  jkt: string;
  /** the token's client_id, checked against the deny-list */
  clientId: string;
}

export type EnrolmentDecision =
  | { ok: true; account: string | null; org: string | null /** stored with the enrolment, in its transaction */; binding?: CloudKeyBinding }
  | { ok: false; reason: string /** 503 instead of 403: the authority cannot decide right now */; unavailable?: boolean };

export interface EnrolmentAuthority {
  /** stored as `authorized_by` */
  readonly name: string;
  /**
   * Rank of the proof: an enrolment admitted by a stronger authority keeps its account when a
   * weaker one re-enrols the key (design §2).
   */
  readonly strength: number;
  authorize(request: EnrolmentRequest): Promise<EnrolmentDecision>;
}
